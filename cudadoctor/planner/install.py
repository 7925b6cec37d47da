"""``cudadoctor install``'s planning: the plans of the packages asked for, on one target, with one
manager, and what is uninstalled first.

Pure: the matrix, the :class:`Target` and the request decide everything. torch is planned with
:func:`cudadoctor.planner.torch.plan_torch` (the function the findings' fixes use), the others with
:func:`cudadoctor.planner.frameworks.plan_framework`; when a torch CUDA build is planned, or one
is installed, the other frameworks prefer builds for its CUDA major. A CPU plan comes with the
GPU build that the same release would be, and what that build needs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple
from cudadoctor.record import frozen

from cudadoctor.errors import CudadoctorError
from cudadoctor.matrix.versions import major
from cudadoctor.planner.torch import COMPANIONS, Reason, TorchPlan, plan_torch
from cudadoctor.planner.addons import ADDONS, plan_addon
from cudadoctor.planner.frameworks import FRAMEWORKS, known_version, plan_framework
from cudadoctor.planner.jetson import jetson_cuda, jetson_other, jetson_target, jetson_torch, jetson_unknown
from cudadoctor.planner.managers import MANAGERS, Steps, combine, for_interpreter, render
from cudadoctor.planner.plan import NoFit, PackagePlan, Result, from_no_plan, from_torch, with_reason
from cudadoctor.planner.target import Installed, Target, with_gpu_build

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

TORCH_FAMILY = ("torch",) + COMPANIONS
PACKAGES = TORCH_FAMILY + FRAMEWORKS + ADDONS
_TABLES = {"torch": "pytorch", "tensorflow": "tensorflow", "jax": "jax", "cupy": "cupy", "onnxruntime-gpu": "onnxruntime"}
ALIASES = {"pytorch": "torch", "onnxruntime": "onnxruntime-gpu", "jaxlib": "jax", "tensorflow-gpu": "tensorflow",
           "flash_attn": "flash-attn", "flash-attention": "flash-attn", "pytorch-triton": "triton"}


@frozen
class PackageResult:
    name: str  # torch | tensorflow | jax | cupy | onnxruntime-gpu
    packages: Tuple[str, ...]  # what is installed: torch torchvision torchaudio
    plan: Optional[PackagePlan]
    nofit: Optional[NoFit]
    gpu_build: Optional[Result] = None  # with a CPU plan: the GPU build of that release, and its needs
    uninstall: Tuple[Installed, ...] = ()
    steps: Optional[Steps] = None
    kept: Optional[str] = None  # the installed build works here: why, and nothing is planned


@frozen
class InstallResult:
    target: Target
    manager: str
    results: Tuple[PackageResult, ...]
    index_url: Optional[str] = None
    together: Optional[Steps] = None  # several plans as one solve (managers.combine)

    @property
    def ok(self) -> bool:
        return all(r.plan is not None or r.kept is not None for r in self.results)

    @property
    def commands(self) -> List[str]:
        if self.together is not None:
            return list(self.together.commands)
        return [c for r in self.results if r.steps for c in r.steps.commands]


def normalize_packages(names: Sequence[str]) -> List[Tuple[str, Tuple[str, ...]]]:
    """[('torch', ('torch', 'torchvision', 'torchaudio')), ('cupy', ('cupy',))]: the torch family
    becomes one request (torch alone brings both companions; torchvision alone brings torch)."""
    wanted = []
    for raw in names:
        name = ALIASES.get(raw.strip().lower(), raw.strip().lower())
        if name not in PACKAGES:
            raise CudadoctorError(f"cannot plan {raw!r}", hint=f"packages: {', '.join(PACKAGES)}")
        if name not in wanted:
            wanted.append(name)
    out: List[Tuple[str, Tuple[str, ...]]] = []
    family = [n for n in TORCH_FAMILY if n in wanted]
    if family:
        out.append(("torch", TORCH_FAMILY if family == ["torch"] else tuple(dict.fromkeys(["torch"] + family))))
    out += [(n, (n,)) for n in wanted if n not in TORCH_FAMILY]
    return out


@dataclass
class _Stack:
    """What the plans made so far in one request decide for the next ones."""

    major: Optional[int] = None  # the CUDA major of the first CUDA plan
    torch: Optional[PackagePlan] = None


def plan_install(matrix: Matrix, target: Target, packages: Sequence[str], manager: Optional[str] = None,
                 version: Optional[str] = None, cuda: Optional[str] = None,
                 index_url: Optional[str] = None, upgrade: bool = False) -> InstallResult:
    """Plan ``packages`` for ``target``. ``version`` keeps the one framework asked for to that
    release or series; ``cuda`` ('12.6', '12') keeps every plan to builds of that CUDA. A package
    whose installed build works here (``target.working``) is kept, and nothing is planned for it,
    unless ``upgrade`` (or a version, or a CUDA) asks for another build."""
    requests = normalize_packages(packages)
    _check_version(matrix, requests, version)
    manager = manager or ("conda" if target.conda else "pip")
    if manager not in MANAGERS:
        raise CudadoctorError(f"--manager {manager}: not one of {', '.join(MANAGERS)}")
    cuda = cuda if cuda is not None else jetson_cuda(matrix, target)
    if cuda is not None:
        cuda = _check_cuda(matrix, cuda)
        target = with_gpu_build(target)
    target = jetson_target(matrix, target)
    blocked = _driver_blocks_gpus(matrix, target)
    stack = _Stack()
    results = []
    working = dict(target.working)
    for name, members in requests:
        if name in working and not (upgrade or version or cuda):
            results.append(PackageResult(name, members, None, None, kept=working[name]))
            continue
        if blocked is not None:
            nofit = _blocked(matrix, target, name, members, version, cuda, blocked)
            results.append(PackageResult(name, members, None, nofit))
        else:
            results.append(_plan_one(matrix, target, name, members, version, cuda, manager, index_url, stack))
    planned = [(r.plan, r.uninstall) for r in results if r.plan is not None and r.steps is not None]
    together = combine(matrix, planned, manager, index_url) if len(planned) == len(results) else None
    if target.interpreter and manager in ("pip", "uv"):
        results = [replace(r, steps=for_interpreter(r.steps, target.interpreter)) if r.steps else r for r in results]
        together = for_interpreter(together, target.interpreter) if together else None
    if target.externally_managed and manager in ("pip", "uv"):
        target = replace(target, notes=target.notes + (
            f"{target.interpreter or 'this Python'} is managed by the distribution (PEP 668: EXTERNALLY-MANAGED): pip "
            "refuses to install into it. Create a virtual environment (python3 -m venv .venv), then plan for it with "
            "--python .venv/bin/python",))
    return InstallResult(target, manager, tuple(results), index_url, together)


def _plan_one(matrix: Matrix, target: Target, name: str, members: Tuple[str, ...], version: Optional[str],
              cuda: Optional[str], manager: str, index_url: Optional[str], stack: _Stack) -> PackageResult:
    prefer = stack.major if stack.major is not None else _stack_major(target, name)
    jetson = jetson_unknown(matrix, target, name) or (
        jetson_torch(matrix, target, members) if name == "torch" else jetson_other(matrix, target, name))
    if isinstance(jetson, NoFit):
        return PackageResult(name, members, None, jetson)
    if jetson is not None:
        if manager not in ("pip", "uv"):
            return PackageResult(name, members, None, NoFit(name, jetson.reasons + (Reason(
                f"conda-forge's aarch64 CUDA builds are for SBSA servers: on this Jetson install with pip or uv "
                f"(--manager pip: {render(matrix, jetson, 'pip').commands[-1]})"),)))
        return PackageResult(name, members, jetson, None, None, (), render(matrix, jetson, manager, (), index_url))
    if name in ADDONS:
        result, gpu = plan_addon(matrix, name, target, version), None
        if isinstance(result, PackagePlan) and manager not in ("pip", "uv"):
            result = NoFit(name, result.reasons + (Reason(f"the plan installs from PyPI: use --manager pip or uv "
                                                          f"(cudadoctor plans {name} with {manager} only through pip)"),))
    elif name == "torch":
        result, gpu = _torch(matrix, target, members, _torch_version(matrix, members, version), cuda)
    else:
        result = plan_framework(matrix, name, target, version, cuda, prefer)
        gpu = _gpu_build(matrix, target, name, result, version, cuda, prefer)
    if not isinstance(result, PackagePlan):
        return PackageResult(name, members, None, result, gpu)
    if target.jetson_l4t:
        result = _jetson_driver(matrix, target, result)
    if name == "torch":
        stack.torch = result
    elif stack.torch is not None:
        result = _cudnn_note(matrix, stack.torch, result)
    if result.gpu and name != "torch" and prefer is not None and major(result.cuda or "") == prefer:
        result = with_reason(result, Reason(f"CUDA {prefer}, like the CUDA builds of the rest of the stack"))
    if result.gpu and stack.major is None:
        stack.major = major(result.cuda or "")
    removal = _uninstall(matrix, target, result, manager)
    if removal:
        why = "; ".join(f"{i.label}{' (conda)' if i.installer == 'conda' else ''}: {w}" for i, w in removal)
        result = with_reason(result, Reason(f"uninstalled first: {why}"))
    remove = tuple(i for i, _ in removal)
    return PackageResult(name, members, result, None, gpu, remove, render(matrix, result, manager, remove, index_url))


def installed_build_fits(matrix: Matrix, t: Target, name: str) -> Optional[str]:
    """The label of the installed build of ``name`` ('torch 2.11.0+cu130') when the planner, kept
    to that release and build, would choose it again for ``t``; else None (not installed, a CPU
    build, a build that does not fit, or one that cannot be told)."""
    if name == "torch":
        installed = [i for i in t.of("torch") if i.installer == "pip"]
        if len(installed) != 1 or not installed[0].version:
            return None
        variant = _torch_variant(matrix, installed[0], t.platform)
        version = installed[0].version.split("+")[0]
        var = matrix.pytorch.variant(version, variant) if variant else None
        if var is None or not var.cuda:
            return None
        found = plan_torch(matrix, t.driver, t.driver_os, t.python, t.compute_capabilities, t.platform,
                           version=version, cuda=var.cuda, gpu=True)
        if isinstance(found, TorchPlan) and found.variant == variant and found.version == version:
            return f"torch {found.label}"
        return None
    family = "onnxruntime" if name == "onnxruntime-gpu" else name
    builds = [i for i in t.of(family) if i.variant == "cuda" and i.version and i.cuda]
    if len(builds) != 1:
        return None
    i = builds[0]
    version = ".".join(i.version.split("+")[0].split(".")[:3]) if i.version else ""
    fits = plan_framework(matrix, name, t, version, str(major(i.cuda or "")), None)
    return f"{name} {i.version} (CUDA {i.cuda})" if isinstance(fits, PackagePlan) else None


def _jetson_driver(matrix: Matrix, target: Target, plan: PackagePlan) -> PackagePlan:
    """On a Jetson the driver is Jetson Linux's: its CUDA, not a desktop driver minimum."""
    match = matrix.jetson.match(target.jetson_l4t or "")
    if match is None:
        return plan
    text = (f"the driver is part of Jetson Linux {match.l4t} (JetPack {match.jetpack}) and runs CUDA up to "
            f"{match.release.driver_cuda}; desktop driver minimums do not apply")
    reasons = tuple(Reason(text, (f"jetson.json#{match.l4t}", "jetson.json#driver_in_bsp"))
                    if r.text.startswith("the driver is unknown") else r for r in plan.reasons)
    return replace(plan, reasons=reasons)


def _check_version(matrix: Matrix, requests: Sequence[Tuple[str, Tuple[str, ...]]], version: Optional[str]) -> None:
    if not version:
        return
    if len(requests) > 1:
        raise CudadoctorError("--version names the release of one framework", hint="plan them one at a time")
    name, members = requests[0]
    if name in ADDONS:
        return
    named = (_torch_version(matrix, members, version) or version) if name == "torch" else version
    if not known_version(matrix, name, named):
        raise CudadoctorError(f"--version {version}: compat_data knows no such release of {name}",
                              hint=f"cudadoctor data show {_TABLES[name]} lists the releases it knows")


def _cudnn_note(matrix: Matrix, torch: PackagePlan, plan: PackagePlan) -> PackagePlan:
    """torch's wheels bring their cuDNN; a framework built for another cuDNN major cannot share it."""
    if not (torch.gpu and plan.gpu and torch.cudnn and plan.cudnn) or major(torch.cudnn) == major(plan.cudnn):
        return plan
    fact = matrix.ecosystem.onnxruntime.fact("cudnn_major_must_match") if plan.framework == "onnxruntime-gpu" else None
    note = (f"{torch.label} brings cuDNN {major(torch.cudnn)}.x and {plan.label} needs cuDNN {major(plan.cudnn)}.x: "
            "one process loads one cuDNN" + (f" ({fact.value})" if fact is not None else ""))
    return replace(plan, notes=plan.notes + (note,))


def _check_cuda(matrix: Matrix, cuda: str) -> str:
    text = cuda.strip()
    known = {".".join(t.cuda.split(".")[:2]) for t in matrix.cuda.toolkits} | {t.cuda.split(".")[0] for t in matrix.cuda.toolkits}
    if text not in known:
        raise CudadoctorError(f"--cuda {cuda}: not a CUDA release in compat_data", hint="e.g. --cuda 12.6 or --cuda 12")
    return text


def _torch_version(matrix: Matrix, members: Sequence[str], version: Optional[str]) -> Optional[str]:
    """--version with torchvision alone may name torchvision's version: the torch it was made for."""
    if not version or matrix.pytorch.release(version) is not None:
        return version
    if "torchvision" in members:
        rel = matrix.pytorch.torch_for_torchvision(version)
        if rel is not None:
            return str(rel.version)
    return version


def _stack_major(target: Target, exclude: str) -> Optional[int]:
    """The CUDA major of the other frameworks' CUDA builds already installed (torch's first,
    else the commonest)."""
    majors = [major(i.cuda) for i in target.installed if i.variant == "cuda" and i.cuda and major(i.cuda)
              and i.framework != exclude]
    torch = [major(i.cuda) for i in target.of("torch") if i.variant == "cuda" and i.cuda and exclude != "torch"]
    if torch and torch[0]:
        return torch[0]
    return Counter(majors).most_common(1)[0][0] if majors else None


def _driver_blocks_gpus(matrix: Matrix, t: Target) -> Optional[Tuple[Reason, Optional[str]]]:
    """The driver's branch does not support a GPU at all (too new for Kepler, too old for
    Blackwell): (why, the first branch that does, when a newer driver is the fix)."""
    if not (t.gpu_build and t.driver):
        return None
    for cc in t.compute_capabilities:
        s = matrix.gpus.driver_support(cc, t.driver)
        arch = s.architecture.name if s.architecture is not None else "its architecture"
        source = (f"architectures.json#{arch}",)
        if s.kind == "driver_too_old_for_gpu":
            return Reason(f"driver {t.driver} ({s.driver_branch}) predates {arch} GPUs (compute capability {cc}): "
                          f"they need driver branch {s.first_branch} or newer", source), s.first_branch
        if s.kind == "driver_dropped_gpu":
            return Reason(f"driver {t.driver} ({s.driver_branch}) no longer supports {arch} GPUs (compute capability "
                          f"{cc}): {s.last_branch} is the last branch for them; install a driver of that branch, "
                          "then plan again with --driver", source), None
    return None


def _blocked(matrix: Matrix, t: Target, name: str, members: Sequence[str], version: Optional[str], cuda: Optional[str],
             blocked: Tuple[Reason, Optional[str]]) -> NoFit:
    reason, first = blocked
    if first is None:
        return NoFit(name, (reason,))
    free = replace(t, driver=None)
    if name == "torch":
        found: Result = _torch(matrix, free, members, _torch_version(matrix, members, version), cuda)[0]
    else:
        found = plan_framework(matrix, name, free, version, cuda, None)
    if not isinstance(found, PackagePlan):
        return NoFit(name, (reason,) + found.reasons)
    need = found.driver.need if found.driver is not None else None  # its CUDA's own minimum
    if need is None or (major(need) or 0) < int(first[1:]):
        need = f"branch {first}"
    return NoFit(name, (reason,), driver=need, with_driver=found.label)


# ---------------------------------------------------------------------- torch


def _torch(matrix: Matrix, t: Target, members: Sequence[str], version: Optional[str],
           cuda: Optional[str]) -> Tuple[Result, Optional[Result]]:
    found = plan_torch(matrix, t.driver, t.driver_os, t.python, t.compute_capabilities if t.gpu_build else [],
                       t.platform, version=version, cuda=cuda, gpu=t.gpu_build)
    if not isinstance(found, TorchPlan):
        return from_no_plan(found), None
    variant = matrix.pytorch.variant(found.version, found.variant)
    plan = from_torch(found, members, t.driver, variant.cudnn if variant is not None else None)
    if plan.gpu:
        return replace(plan, notes=plan.notes + _compile_notes(matrix, t, found)), None
    plan = _cpu_because(plan, t)
    gpu = plan_torch(matrix, None, t.driver_os, t.python, t.compute_capabilities, t.platform,
                     version=found.version, gpu=True)
    if not isinstance(gpu, TorchPlan):  # no CUDA build of that release fits the GPUs: any release
        gpu = plan_torch(matrix, None, t.driver_os, t.python, t.compute_capabilities, t.platform, gpu=True)
    return plan, from_torch(gpu, members, None) if isinstance(gpu, TorchPlan) else from_no_plan(gpu)


def _compile_notes(matrix: Matrix, t: Target, plan: TorchPlan) -> Tuple[str, ...]:
    """What the plan means for torch.compile: Triton's compute-capability floor, and the kernels
    Triton generates at run time, which minor-version compatibility does not cover."""
    notes: Tuple[str, ...] = ()
    pin = matrix.addons.triton_pin(plan.version) if t.platform.startswith("linux") else None
    release = matrix.addons.triton_release(pin.triton) if pin is not None else None
    if pin is not None and release is not None:
        low = [cc for cc in t.compute_capabilities
               if tuple(map(int, cc.split("."))) < tuple(map(int, release.min_compute_capability.split(".")))]
        if low:
            notes += (f"torch.compile: torch {plan.version} brings triton {pin.triton}, which needs compute capability "
                      f">= {release.min_compute_capability} (not {', '.join(low)}); eager mode is unaffected "
                      "(triton.json)",)
    if plan.driver_rule == "minor_compat" and pin is not None:
        notes += ("torch.compile: Triton compiles kernels at run time, which this build's SASS does not cover; under "
                  "minor-version compatibility whether this driver loads them is not known from the data (a driver "
                  f"of CUDA {plan.cuda}, {plan.min_driver} or newer, removes the question)",)
    return notes


def _cpu_because(plan: PackagePlan, t: Target) -> PackagePlan:
    if not t.cpu_because or not plan.reasons:
        return plan
    first = plan.reasons[0]
    return replace(plan, reasons=(Reason(f"{t.cpu_because}: the CPU build", first.source),) + plan.reasons[1:])


def _gpu_build(matrix: Matrix, t: Target, name: str, result: Result, version: Optional[str], cuda: Optional[str],
               prefer: Optional[int]) -> Optional[Result]:
    if t.gpu_build or not isinstance(result, PackagePlan) and name != "cupy":
        return None
    gpu_target = replace(t, driver=None, gpu_build=True, cpu_because="")
    return plan_framework(matrix, name, gpu_target, version, cuda, prefer)


# ---------------------------------------------------------------------- what goes first


def _uninstall(matrix: Matrix, t: Target, plan: PackagePlan, manager: str) -> List[Tuple[Installed, str]]:
    """What must go before the plan installs, each with why: a build pip would keep (same
    version, other variant), a copy the other installer owns, a companion the plan has no version
    for, another CUDA major, or a distribution that conflicts with the planned one."""
    planned = {p.name for p in plan.pins}
    if plan.framework == "torch":
        return _uninstall_torch(matrix, t, plan, manager, planned)
    out: List[Tuple[Installed, str]] = []
    if plan.framework == "cupy":
        fact = matrix.ecosystem.cupy.fact("duplicate_packages_conflict")
        why = fact.value if fact is not None else "another CuPy distribution"
        out = [(i, why) for i in t.of("cupy") if i.name not in planned]
    elif plan.framework == "onnxruntime-gpu":
        out = [(i, "the CPU package shadows onnxruntime-gpu" if i.variant == "cpu" and plan.gpu
                else "another onnxruntime distribution") for i in t.of("onnxruntime") if i.name not in planned]
        out += [(i, f"built for CUDA {i.cuda}") for i in t.of("onnxruntime") if i.name in planned and plan.gpu
                and i.variant == "cuda" and i.cuda and major(i.cuda) != major(plan.cuda or "")]
    elif plan.framework == "jax":
        want = major(plan.cuda or "") if plan.gpu else None
        out = [(i, f"the CUDA {i.cuda} plugin") for i in t.of("jax")
               if i.name.startswith("jax-cuda") and major(i.cuda or "") != want]
        out += [(i, "a monolithic CUDA jaxlib") for i in t.of("jax")
                if i.name == "jaxlib" and "+cuda" in (i.version or "") and not plan.index_url]
    elif plan.framework == "tensorflow":
        out = [(i, "another TensorFlow distribution") for i in t.of("tensorflow")
               if i.name != "tensorflow" and i.name not in planned]
    return out


def _uninstall_torch(matrix: Matrix, t: Target, plan: PackagePlan, manager: str,
                     planned: Any) -> List[Tuple[Installed, str]]:
    conda = manager in ("conda", "pixi")
    out: List[Tuple[Installed, str]] = []
    replaced = False  # the installed torch is replaced by another version or build
    for i in t.of("torch"):
        same_version = (i.version or "").split("+")[0] == plan.version
        variant = _torch_variant(matrix, i, t.platform)
        replaced = replaced or not same_version or variant != plan.build
        if (i.installer == "conda") != conda:
            out.append((i, f"installed by {i.installer}, while {manager} installs the plan"))
        elif not conda and same_version and variant != plan.build:
            out.append((i, f"build {variant or 'unknown'}, not {plan.build} (pip keeps an installed torch whose "
                           "version matches the pin, whatever its build)"))
    for c in COMPANIONS:
        for i in t.of(c):
            if c not in planned:
                out.append((i, f"no {c} release pairs with {plan.label}"))
            elif out and (i.version or "").split("+")[0] == (getattr(plan.torch, c, None) or ""):
                out.append((i, "built for the torch that goes"))
    if replaced:  # compiled against the torch that goes: they would not load with the new one
        out += [(i, f"a compiled extension built against the installed torch: it does not load with torch "
                    f"{plan.label.split()[-1]}; reinstall it for that build (cudadoctor install {i.name})")
                for i in t.of("torch-extension")]
    return out


def _torch_variant(matrix: Matrix, i: Installed, platform: str = "linux-x86_64") -> Optional[str]:
    """'cu124' or 'cpu' for an installed torch; None when it cannot be told (a conda build). A pip
    torch without a local version ('2.11.0', not '2.11.0+cu130') is PyPI's build of that release:
    PyTorch's own indexes name every build."""
    if i.installer == "conda" or not i.version:
        return "conda"
    if "+" in i.version:
        return i.version.split("+", 1)[1]
    if i.variant is None:
        pypi = matrix.pytorch.pypi_variant(i.version, platform)
        return str(pypi.name) if pypi is not None else None
    found = matrix.pytorch.variant_for_build(i.version, i.cuda if i.variant == "cuda" else None)
    return str(found.name) if found is not None else None
