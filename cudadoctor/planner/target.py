"""The machine a plan is for: this machine (its Snapshot), or a machine described with flags.

A :class:`Target` holds what the choice depends on: the driver (and whether one is loaded), the
OS whose wheels apply and the OS whose driver table applies (Windows under WSL2), the wheel
platform, the Python version, the compute capability of every GPU, whether the environment is a
conda env, and what is installed in it.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple
from cudadoctor.record import frozen

from cudadoctor.errors import CudadoctorError
from cudadoctor.matrix.archs import parse_compute_capability
from cudadoctor.matrix.versions import major, major_minor
from cudadoctor.model import FrameworkBuild, Snapshot

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

PLATFORMS = ("linux-x86_64", "linux-aarch64", "windows-x86_64")
OSES = ("linux", "windows", "wsl2")
_DRIVER = re.compile(r"^\d{3,4}(\.\d{1,3}){1,2}$")
_PYTHON = re.compile(r"^3\.\d{1,2}(\.\d+)?t?$")

# Which framework a distribution belongs to (conda's names included). torch's are exact names: a
# distribution merely named torch-something (torch-geometric) is pure Python and no build of torch.
_FAMILIES = (("torchvision", "torchvision"), ("torchaudio", "torchaudio"),
             ("tensorflow", "tensorflow"), ("jax", "jax"), ("cupy", "cupy"), ("onnxruntime", "onnxruntime"))
_EXACT = {"torch": "torch", "pytorch": "torch", "pytorch-gpu": "torch", "pytorch-cpu": "torch"}
# Compiled extensions built against one torch's C++ ABI (their wheels name it: xformers pins torch,
# flash-attn's local version says torch2.8, PyG's extensions come per torch release): they do not
# load with another torch, so a torch upgrade takes them out. (xformers.json, flash_attn.json)
TORCH_EXTENSIONS = ("xformers", "flash-attn", "flash-attn-3", "torch-scatter", "torch-sparse", "torch-cluster",
                    "torch-spline-conv", "pyg-lib", "torchao", "apex")


@frozen
class Installed:
    """A distribution of a framework in the target environment."""

    name: str  # torch, cupy-cuda11x, onnxruntime, jax-cuda12-plugin, pytorch (conda)
    version: Optional[str]
    framework: str  # torch | torchvision | torchaudio | tensorflow | jax | cupy | onnxruntime
    variant: Optional[str] = None  # cpu | cuda | rocm; None: unknown
    cuda: Optional[str] = None  # "12.4", or a major "12"
    installer: str = "pip"  # pip | conda

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}" if self.version else self.name


@frozen
class Target:
    described: bool  # from flags, not from this machine's probes
    os: str  # linux | windows | macos: whose wheels apply
    platform: str  # linux-x86_64, linux-aarch64, windows-x86_64
    wsl: bool
    driver: Optional[str]  # a loaded (or described) NVIDIA driver
    python: Optional[str]  # "3.11"; None: unknown
    compute_capabilities: Tuple[str, ...]  # one per GPU whose capability is known
    gpu_names: Tuple[str, ...] = ()
    gpu_build: bool = False  # plan a CUDA build (else a CPU build and what a GPU build would need)
    cpu_because: str = ""  # why a CPU build, in words
    conda: bool = False
    installed: Tuple[Installed, ...] = ()
    notes: Tuple[str, ...] = ()  # what the plan assumes about the machine
    jetson_l4t: Optional[str] = None  # a Jetson's Jetson Linux release (planner/jetson.py)
    jetson_family: Optional[str] = None  # a described Jetson GPU ("Jetson Orin"), its JetPack given or not
    interpreter: Optional[str] = None  # --python PATH: the commands run its pip (PATH -m pip)
    externally_managed: Optional[bool] = None  # PEP 668: pip refuses to install into that interpreter
    working: Tuple[Tuple[str, str], ...] = ()  # (framework, why) of installed builds known to work here

    @property
    def driver_os(self) -> str:
        """The OS whose driver table applies: WSL2 runs on the Windows driver."""
        return "windows" if self.os == "windows" or self.wsl else "linux"

    @property
    def gpus_text(self) -> str:
        """'sm_61, sm_89', or '' when no GPU's capability is known."""
        return ", ".join(f"sm_{cc.replace('.', '')}" for cc in self.compute_capabilities)

    def of(self, framework: str) -> List[Installed]:
        return [i for i in self.installed if i.framework == framework]

    def describe(self) -> str:
        """'linux-x86_64 (WSL2) · Python 3.11 · driver 566.36 · GPUs sm_89 · conda env'."""
        parts = [self.platform + (" (WSL2)" if self.wsl else "")]
        parts.append(f"Python {self.python}" if self.python else "Python unknown")
        parts.append(f"driver {self.driver}" if self.driver else f"the driver of Jetson Linux {self.jetson_l4t}"
                     if self.jetson_l4t else "driver unknown" if self.described else "no NVIDIA driver")
        if self.compute_capabilities:
            parts.append(f"GPU{'s' if len(self.compute_capabilities) > 1 else ''} {self.gpus_text}")
        elif self.gpu_names:
            parts.append("GPU compute capability unknown")
        elif self.described and self.gpu_build:
            parts.append("GPUs not given")
        elif not self.described:
            parts.append("no NVIDIA GPU")
        if self.conda:
            parts.append("conda env")
        return " · ".join(parts)


# ---------------------------------------------------------------------- this machine


def wheel_platform(snap: Snapshot) -> str:
    """The wheel platform of the target: linux-x86_64, linux-aarch64, windows-x86_64, macos-arm64."""
    tag = (snap.python.platform_tag or "") if snap.python else ""
    host_os = snap.host.os if snap.host else None
    arch = (snap.host.architecture or "") if snap.host else ""
    if tag.startswith("win") or host_os == "windows":
        system = "windows"
    elif tag.startswith("macosx") or host_os == "macos":
        system = "macos"
    else:
        system = "linux"
    text = (tag or arch).lower()
    if "aarch64" in text or "arm64" in text:
        cpu = "arm64" if system == "macos" else "aarch64"
    else:
        cpu = "x86_64"
    return f"{system}-{cpu}"


def python_mm(version: Optional[str]) -> Optional[str]:
    key = major_minor(version) if version else ()
    return ".".join(str(x) for x in key) if len(key) == 2 else None


def from_snapshot(snap: Snapshot, matrix: Matrix, interpreter: Optional[str] = None) -> Target:
    """The target of this machine's probes (or of a recorded or hand-written Snapshot);
    ``interpreter``: the --python PATH the commands are for."""
    platform = wheel_platform(snap)
    d = snap.driver
    # a kernel module whose library does not answer (a version mismatch after an upgrade, a
    # container without the GPU passed in) is still the driver the GPU build will run on
    driver = (d.driver_version or d.kernel_module_version) if d is not None and d.loaded else None
    loaded = driver is not None
    notes: Tuple[str, ...] = ()
    if d is not None and driver and not d.driver_version:
        notes = (f"the driver library does not answer ({d.nvml_error or 'no NVML'}); the plan is for kernel module "
                 f"{driver}: cudadoctor check says what to fix",)
    names, ccs = [], []
    for g in snap.gpus or ():
        model = matrix.gpus.identify(name=g.name, pci_device_id=g.pci_device_id) if (g.name or g.pci_device_id) else None
        cc = parse_compute_capability(g.compute_capability or (model.compute_capability if model else "") or "")
        names.append(g.name or (model.name if model else f"GPU {g.index}"))
        if cc is not None:
            ccs.append(f"{cc[0]}.{cc[1]}")
    because = "" if (names and loaded) else ("no NVIDIA driver is loaded" if names else "no NVIDIA GPU")
    return Target(
        described=False, os=platform.split("-")[0], platform=platform, wsl=bool(snap.host and snap.host.wsl),
        driver=driver, python=python_mm(snap.python.version if snap.python else None),
        compute_capabilities=tuple(ccs), gpu_names=tuple(names), gpu_build=bool(names and loaded),
        cpu_because=because, conda=bool(snap.python and snap.python.env_kind == "conda"),
        installed=installed_of(snap, matrix), notes=notes if names else (),
        jetson_l4t=snap.jetson.l4t if snap.jetson else None, interpreter=interpreter,
        externally_managed=snap.python.externally_managed if snap.python else None,
    )


def installed_of(snap: Snapshot, matrix: Matrix) -> Tuple[Installed, ...]:
    """The framework distributions in the environment, with what their builds say of CUDA."""
    builds: Dict[str, FrameworkBuild] = {b.name: b for b in snap.frameworks or ()}
    out: List[Installed] = []
    seen = set()
    for p in snap.packages or ():
        framework = _family(p.name)
        if framework is None or (p.name, p.installer) in seen:
            continue
        seen.add((p.name, p.installer))
        out.append(_installed(p.name, p.version, framework, builds.get(framework), p.installer, matrix))
    for b in snap.frameworks or ():  # hand-written snapshots may list builds without packages
        name = (b.distribution or b.name).split("==")[0].strip().lower()
        if not any(i.framework == b.name for i in out):
            out.append(_installed(name, b.version, b.name, b, "conda" if "conda_build" in b.details else "pip", matrix))
    # a conda package also shows up as a dist-info: it is one install, removed by conda
    conda = {(i.framework, i.version) for i in out if i.installer == "conda"}
    return tuple(i for i in out if i.installer == "conda" or (i.framework, i.version) not in conda)


def _family(name: str) -> Optional[str]:
    if name in _EXACT:
        return _EXACT[name]
    if name in TORCH_EXTENSIONS or name.replace("_", "-") in TORCH_EXTENSIONS:
        return "torch-extension"
    for prefix, framework in _FAMILIES:
        if name == prefix or name.startswith(prefix + "-") or (prefix == "jax" and name == "jaxlib"):
            return framework
    return None


def _installed(name: str, version: Optional[str], framework: str, build: Optional[FrameworkBuild],
               installer: str, matrix: Matrix) -> Installed:
    variant = build.variant if build is not None else None
    cuda = build.cuda if build is not None else None
    if framework == "cupy" and name.startswith("cupy-"):
        dist = matrix.ecosystem.cupy_cuda_for(name)
        if dist is not None:
            variant, cuda = dist.kind, str(major(dist.cuda_min)) if dist.cuda_min else None
    elif name.startswith("jax-cuda"):
        number = matrix.ecosystem.jax_plugin_cuda_major(name)
        variant, cuda = "cuda", str(number) if number else None
    elif name in ("onnxruntime", "tensorflow-cpu"):
        variant, cuda = "cpu", None
    if variant is None and version and "+" in version and framework in ("torch", "torchvision", "torchaudio"):
        tag = version.split("+", 1)[1]
        variant = "cpu" if tag == "cpu" else "cuda" if tag.startswith("cu") else None
    return Installed(name, version, framework, variant, cuda, installer)


# ---------------------------------------------------------------------- a described machine


def described(matrix: Matrix, driver: Optional[str] = None, gpus: Sequence[str] = (), ccs: Sequence[str] = (),
              python: Optional[str] = None, os: Optional[str] = None, platform: Optional[str] = None,
              gpu: bool = False, jetpack: Optional[str] = None, l4t: Optional[str] = None) -> Target:
    """A machine given by flags. Facts not given stay unknown; a CUDA build is planned when a
    driver or a GPU is given (or ``gpu``), a CPU build otherwise. A Jetson is described by its
    JetPack (``jetpack`` '6.2') or Jetson Linux release (``l4t`` '36.4.3'): its platform, Python
    and GPU follow from the release. Bad input raises CudadoctorError."""
    if driver is not None and not _DRIVER.match(driver.strip()):
        raise CudadoctorError(f"--driver {driver}: not an NVIDIA driver version", hint="e.g. --driver 535.104.05")
    names, caps, family = [], [], None
    for name in gpus:
        model = resolve_gpu(matrix, name)
        names.append(model.name)
        caps.append(model.compute_capability)
        if getattr(model, "segment", None) == "embedded":
            soc = next((s for s in matrix.jetson.socs if s.compute_capability == model.compute_capability), None)
            family = soc.family if soc is not None else (model.product or model.name)
    for value in ccs:
        cc = parse_compute_capability(value)
        if cc is None:
            raise CudadoctorError(f"--cc {value}: not a compute capability", hint="e.g. --cc 8.9 or --cc 12.0")
        caps.append(f"{cc[0]}.{cc[1]}")
        names.append(f"compute capability {cc[0]}.{cc[1]}")
    if jetpack or l4t:
        return _jetson(matrix, jetpack, l4t, driver, names, caps, python, os, platform)
    wsl = os == "wsl2"
    system = "linux" if wsl else (os or (platform.split("-")[0] if platform else "linux"))
    plat = platform or ("windows-x86_64" if system == "windows" else "linux-aarch64" if family else "linux-x86_64")
    if plat not in PLATFORMS or plat.split("-")[0] != system:
        raise CudadoctorError(f"--platform {plat} does not go with --os {os or system}",
                              hint=f"platforms: {', '.join(PLATFORMS)}")
    wanted = bool(driver or caps or gpu)
    return Target(
        described=True, os=system, platform=plat, wsl=wsl, driver=driver.strip() if driver else None,
        python=check_python(python), compute_capabilities=tuple(dict.fromkeys(caps)), gpu_names=tuple(names),
        gpu_build=wanted, cpu_because="" if wanted else "no GPU or driver was described", jetson_family=family,
    )


def _jetson(matrix: Matrix, jetpack: Optional[str], l4t: Optional[str], driver: Optional[str], names: List[str],
            caps: List[str], python: Optional[str], os: Optional[str], platform: Optional[str]) -> Target:
    """A Jetson given by its JetPack or Jetson Linux release."""
    known = ", ".join(dict.fromkeys(jp for r in matrix.jetson.releases for _, jp in r.releases))
    by_jp = matrix.jetson.by_jetpack(jetpack.strip()) if jetpack else None
    if jetpack and by_jp is None:
        raise CudadoctorError(f"--jetpack {jetpack}: not a JetPack release in compat_data", hint=f"known: {known}")
    by_l4t = matrix.jetson.match(l4t.strip()) if l4t else None
    if l4t and by_l4t is None:
        raise CudadoctorError(f"--l4t {l4t}: not a Jetson Linux release in compat_data",
                              hint=f"known: {', '.join(matrix.jetson.l4t_releases())}")
    if by_jp is not None and by_l4t is not None and by_l4t.jetpack != by_jp.jetpack \
            and not (by_l4t.jetpack or "").startswith(jetpack.strip() + "." if jetpack else "-"):
        raise CudadoctorError(f"--l4t {l4t} is JetPack {by_l4t.jetpack}, not {jetpack}", hint="give one of them")
    match = by_l4t or by_jp
    assert match is not None
    if driver:
        raise CudadoctorError("--driver does not describe a Jetson: its driver is part of Jetson Linux",
                              hint="give --jetpack or --l4t alone")
    if (os and os != "linux") or (platform and platform != "linux-aarch64"):
        raise CudadoctorError(f"a Jetson runs Linux on aarch64, not {platform or os}", hint="leave out --os/--platform")
    r = match.release
    socs = [s for s in matrix.jetson.socs if s.soc in r.socs]
    if not caps and len(socs) == 1:
        caps, names = [socs[0].compute_capability], [socs[0].family]
    family = socs[0].family if len(socs) == 1 else " or ".join(s.family for s in socs)
    note = f"Jetson: JetPack {match.jetpack} (Jetson Linux {match.l4t}), Ubuntu {r.ubuntu}, driver CUDA {r.driver_cuda}"
    return Target(
        described=True, os="linux", platform="linux-aarch64", wsl=False, driver=None,
        python=check_python(python) or r.python, compute_capabilities=tuple(dict.fromkeys(caps)),
        gpu_names=tuple(names), gpu_build=True, notes=(note,), jetson_l4t=match.l4t, jetson_family=family,
    )


def resolve_gpu(matrix: Matrix, name: str) -> Any:
    """The GPU a user names, through the one resolver of GPU names (``GpuData.resolve``): as NVML
    names it, without the brand, short ('5090'), or by a run of words of its name ('A100'), when
    every match has the same compute capability. Unknown or ambiguous: CudadoctorError."""
    found, hits = matrix.gpus.resolve(name)
    if found is not None:
        return found
    if hits:
        listed = ", ".join(f"{g.name} ({g.compute_capability})" for g in hits[:4])
        raise CudadoctorError(f"--gpu {name!r} matches GPUs of different compute capability: {listed}",
                              hint="give the full name, or --cc X.Y")
    raise CudadoctorError(f"--gpu {name!r}: no GPU of that name in compat_data",
                          hint="give its compute capability instead, e.g. --cc 8.9")


def check_python(python: Optional[str]) -> Optional[str]:
    if python is None:
        return None
    if not _PYTHON.match(python.strip()):
        raise CudadoctorError(f"--python {python}: not a Python version", hint="e.g. --python 3.11")
    text = python.strip()
    mm = python_mm(text.rstrip("t"))
    return (mm + ("t" if text.endswith("t") else "")) if mm else None


def with_python(target: Target, python: Optional[str]) -> Target:
    return replace(target, python=check_python(python)) if python else target


def with_gpu_build(target: Target) -> Target:
    """Plan a CUDA build although the target would get a CPU one (``--cuda`` given)."""
    return replace(target, gpu_build=True, cpu_because="")
