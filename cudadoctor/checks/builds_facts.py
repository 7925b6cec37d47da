"""What the build checks (builds.py, builds_arch.py, builds_variant.py) share: reading a framework build's facts out of
the Snapshot, the GPUs with their compute capability, arch lists, and the torch fix the planner
gives."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Dict, List, Optional, Sequence, Tuple
from cudadoctor.record import frozen

from cudadoctor.matrix.archs import parse_arch, parse_compute_capability, support_of
from cudadoctor.matrix.versions import major, vkey
from cudadoctor.model import Category, Finding, FrameworkBuild, Gpu, Severity, Snapshot
from cudadoctor.checks.base import driver_version, gpus, os_of, ref
from cudadoctor.checks.base import finding as base_finding

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix
    from cudadoctor.planner.torch import NoPlan, TorchPlan

# The frameworks whose builds carry their own CUDA runtime; torchvision and torchaudio follow torch.
RUNTIME_FRAMEWORKS = ("torch", "tensorflow", "jax", "cupy", "onnxruntime", "tensorrt")
TORCH_FAMILY = ("torch", "torchvision", "torchaudio")


@frozen
class GpuFact:
    gpu: Gpu
    name: str
    cc: str  # "8.6"
    cc_tuple: Tuple[int, int]

    @property
    def sm(self) -> str:
        return f"sm_{self.cc_tuple[0]}{self.cc_tuple[1]}"

    @property
    def label(self) -> str:
        """'GPU 0 (NVIDIA GeForce RTX 5090, sm_120)'."""
        return f"GPU {self.gpu.index} ({self.name}, {self.sm})"


@frozen
class ArchLists:
    archs: Tuple[str, ...]  # SASS targets, sm_XY
    ptx: Tuple[str, ...]  # targets shipped as PTX, as sm_XY
    origin: str  # where the lists come from, in words
    source: Tuple[str, ...]

    def describe(self) -> str:
        """'SASS for sm_50, sm_60 and PTX for none'."""
        sass = ", ".join(self.archs) or "no architecture"
        ptx = ", ".join("compute_" + p[len("sm_"):] for p in self.ptx) or "none"
        return f"SASS for {sass} and PTX for {ptx}"


def finding(code: str, severity: Severity, category: Category, title: str, why: str = "",
            fix: Optional[str] = None, commands: Sequence[str] = (), evidence: Sequence[str] = (),
            source: Sequence[str] = ()) -> Finding:
    """base.finding, with each source record named once."""
    return base_finding(code, severity, category, title, why=why, fix=fix, commands=commands, evidence=evidence,
                        source=list(dict.fromkeys(s for s in source if s)))


# ---------------------------------------------------------------------------- the machine


def usable_gpus(snap: Snapshot) -> bool:
    """An NVIDIA GPU is present and the driver is loaded: a CUDA build could use it."""
    return bool(gpus(snap)) and bool(snap.driver and snap.driver.loaded)


def gpu_facts(snap: Snapshot, matrix: Matrix) -> List[GpuFact]:
    """Every GPU whose compute capability is known (reported, or from its PCI id or name)."""
    out = []
    for g in gpus(snap):
        model = matrix.gpus.identify(name=g.name, pci_device_id=g.pci_device_id) if (g.name or g.pci_device_id) else None
        cc = g.compute_capability or (model.compute_capability if model else None)
        parsed = parse_compute_capability(cc) if cc else None
        if parsed is None:
            continue
        # a GPU named in facts by a short name ('5090') is shown by the name the data knows
        name = (model.name if model and g.source == "facts" else None) or g.name or (model.name if model else f"GPU {g.index}")
        out.append(GpuFact(g, name, f"{parsed[0]}.{parsed[1]}", parsed))
    return out


def driver_cuda(snap: Snapshot, matrix: Matrix) -> Optional[str]:
    """The newest CUDA the driver supports: what nvidia-smi prints, else from the driver branch."""
    d = snap.driver
    if d and d.cuda_driver_version:
        return d.cuda_driver_version
    version = driver_version(snap)
    return matrix.cuda.newest_cuda_for_driver(version) if version else None


def python_mm(snap: Snapshot) -> Optional[str]:
    from cudadoctor.planner.target import python_mm as planner_python_mm  # the planner loads when a check needs it

    return planner_python_mm(snap.python.version if snap.python else None)


def wheel_platform(snap: Snapshot) -> str:
    """The planner's wheel platform of this machine, for the checks."""
    from cudadoctor.planner.target import wheel_platform as planner_wheel_platform

    return planner_wheel_platform(snap)


# ---------------------------------------------------------------------------- builds


def dist_name(build: FrameworkBuild) -> Optional[str]:
    """'cupy-cuda12x' from 'cupy-cuda12x==13.3.0'."""
    return build.distribution.split("==")[0].strip().lower() if build.distribution else None


def build_version(build: FrameworkBuild) -> Optional[str]:
    if build.version:
        return build.version
    if build.distribution and "==" in build.distribution:
        return build.distribution.split("==", 1)[1].strip()
    return None


def label(build: FrameworkBuild) -> str:
    """'torch 2.5.1+cu124', 'cupy-cuda11x 13.3.0', 'jax 0.4.30 (jax-cuda12-plugin)'."""
    version = build_version(build) or "(version unknown)"
    name = dist_name(build) if build.name in ("cupy", "onnxruntime", "tensorrt") and build.distribution else build.name
    plugin = build.details.get("plugin", "").split("==")[0]
    return f"{name} {version}" + (f" ({plugin})" if plugin else "")


def normalized(snap: Snapshot, matrix: Matrix) -> List[FrameworkBuild]:
    """The Snapshot's builds with what their names and tags say filled in (hand-written facts
    often give only 'torch_version': '2.5.1+cu124' or 'cupy_package': 'cupy-cuda11x')."""
    out = []
    for b in snap.frameworks or ():
        version = build_version(b)
        if b.name == "torch" and b.version and b.variant is None and "+" in b.version:
            tagged = matrix.pytorch.variant(b.version)
            if tagged is not None:
                b = replace(b, variant=tagged.kind, cuda=b.cuda or tagged.cuda)
        elif b.name == "cupy" and b.variant is None and dist_name(b):
            dist = matrix.ecosystem.cupy_cuda_for(dist_name(b) or "")
            if dist is not None and dist.kind in ("cuda", "rocm"):
                exact = dist.cuda_min if dist.cuda_min and dist.cuda_min == dist.cuda_max else None
                cuda = exact or (str(major(dist.cuda_min)) if dist.cuda_min else None)
                b = replace(b, variant=dist.kind, cuda=b.cuda or cuda)
        elif b.name in ("torchvision", "torchaudio") and b.variant is None and b.version and "+" in b.version:
            found = _variant_named(matrix, b.version.split("+", 1)[1])
            if found is not None:
                b = replace(b, variant=found.kind, cuda=b.cuda or found.cuda)
        if version and not b.version:
            b = replace(b, version=version)
        out.append(b)
    return out


def _variant_named(matrix: Matrix, name: str) -> Any:
    """A wheel variant by its name ('cu121', 'cpu') in any release: the name fixes the CUDA version."""
    for rel in reversed(matrix.pytorch.releases):
        found = rel.variant(name)
        if found is not None:
            return found
    return None


def uses(names: str) -> str:
    """'torch uses' / 'torch, jax use'."""
    return f"{names} {'use' if ',' in names else 'uses'}"


def cuda_range(low: Optional[str], high: Optional[str]) -> str:
    """'11.2–11.8', '12.0–12.x'."""
    def show(v: Optional[str]) -> str:
        return f"{v}.x" if v and len(vkey(v)) == 1 else (v or "?")
    return show(low) if low == high else f"{show(low)}–{show(high)}"


def is_conda(build: FrameworkBuild) -> bool:
    return "conda_build" in build.details


def installed(snap: Snapshot, name: str) -> bool:
    return snap.framework(name) is not None or any(p.name == name for p in snap.packages or ())


def stack_majors(snap: Snapshot, exclude: str) -> Dict[str, int]:
    """The CUDA major each other framework with its own runtime is built for."""
    out = {}
    for b in snap.frameworks or ():
        if b.name != exclude and b.name in RUNTIME_FRAMEWORKS and b.variant == "cuda" and b.cuda:
            number = major(b.cuda)
            if number is not None:
                out[b.name] = number
    return out


# ---------------------------------------------------------------------------- arch lists


_TARGET = re.compile(r"^(sm|compute)_(\d+[af]?)(\+ptx)?$")


def parse_arch_list(text: str) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """torch.cuda.get_arch_list() or TensorFlow's cuda_compute_capabilities, as (SASS, PTX):
    'sm_80 sm_90 compute_90' -> (('sm_80', 'sm_90'), ('sm_90',)); '8.0 9.0+PTX' works too."""
    archs: List[str] = []
    ptx: List[str] = []
    for token in re.split(r"[\s,;]+", text.strip().lower()):
        m = _TARGET.match(token)
        dotted = re.match(r"^(\d+)\.(\d)([af]?)(\+ptx)?$", token)
        if m:
            kind, digits, plus = m.group(1), m.group(2), m.group(3)
        elif dotted:
            kind, digits, plus = "sm", dotted.group(1) + dotted.group(2) + dotted.group(3), dotted.group(4)
        else:
            continue
        target = "sm_" + digits
        if parse_arch(target) is None:
            continue
        if kind == "sm" and target not in archs:
            archs.append(target)
        if (kind == "compute" or plus) and target not in ptx:
            ptx.append(target)
    return tuple(archs), tuple(ptx)


def torch_arch_lists(snap: Snapshot, matrix: Matrix, build: FrameworkBuild) -> Optional[ArchLists]:
    """The build's own list (the Snapshot's arch_list) when known, else the matrix's for an
    official pip variant; None for conda or custom builds without one."""
    own = build.details.get("arch_list")
    if own:
        archs, ptx = parse_arch_list(own)
        if archs or ptx:
            return ArchLists(archs, ptx, "torch.cuda.get_arch_list() of this build", ())
    if not build.version or is_conda(build) or build.variant != "cuda":
        return None
    variant = matrix.pytorch.variant_for_build(build.version, build.cuda)
    if variant is None:
        return None
    archs, ptx, confidence, _ = variant.arch_lists(wheel_platform(snap))
    release = matrix.pytorch.release(build.version)
    if release is None:
        return None
    return ArchLists(archs, ptx, f"pytorch.json for {release.version}+{variant.name}",
                     (ref("pytorch.json", release.version),))


def tf_arch_lists(build: FrameworkBuild) -> Optional[ArchLists]:
    own = build.details.get("cuda_compute_capabilities")
    if not own:
        return None
    archs, ptx = parse_arch_list(own)
    # TensorFlow's flags (unlike torch's get_arch_list): compute_XY builds SASS and PTX for XY
    # (cuobjdump of tensorflow-2.21.0: sm_90 cubins beside compute_90 PTX; framework_archs.json)
    archs = tuple(dict.fromkeys(archs + ptx))
    return ArchLists(archs, ptx, "cuda_compute_capabilities in tensorflow's build_info.py",
                     ("framework_archs.json",)) if archs or ptx else None


def support(lists: ArchLists, gpu: GpuFact) -> Tuple[str, Optional[str]]:
    """(sass | ptx_jit | unsupported, target) for one GPU."""
    return support_of(lists.archs, lists.ptx, gpu.cc_tuple)


def below(cc: str, minimum: str) -> bool:
    return vkey(cc) < vkey(minimum)


# ---------------------------------------------------------------------------- the torch fix


def torch_packages(snap: Snapshot) -> List[str]:
    """torch and the companions installed next to it, in that order."""
    return [n for n in TORCH_FAMILY if n == "torch" or installed(snap, n)]


def torch_plan(snap: Snapshot, matrix: Matrix, ccs: Sequence[str], keep: Optional[str] = None,
               use_driver: bool = True, avoid: Optional[str] = None,
               upgraded: Optional[str] = None) -> Tuple[Optional[TorchPlan], Optional[NoPlan]]:
    """A plan for this machine: first within release ``keep`` (another variant of the installed
    version), then any release. (plan, None), or (None, why nothing fits). ``avoid``: the label of
    a build known not to work here ('2.6.0+cu126', the installed one), never planned again."""
    from cudadoctor.planner.torch import TorchPlan, plan_torch

    driver = driver_version(snap) if use_driver else None
    if driver:  # a driver that predates a GPU: the plan is for the driver the GPU needs
        driver = upgraded or upgraded_driver(snap, matrix, ccs) or driver
    args = (matrix, driver, os_of(snap), python_mm(snap), list(ccs), wheel_platform(snap))
    kept = matrix.pytorch.release(keep) if keep else None
    if kept is not None:
        found = plan_torch(*args, version=kept.version)
        if isinstance(found, TorchPlan) and found.label != avoid:
            return found, None
    found = plan_torch(*args)
    return (found, None) if isinstance(found, TorchPlan) else (None, found)


def upgraded_driver(snap: Snapshot, matrix: Matrix, ccs: Sequence[str]) -> Optional[str]:
    """When this driver's branch predates a GPU (Blackwell on R550), the driver its fix installs
    (checks/driver_fix.py): the first version of that branch's CUDA ('580.65.06' for R580), so a
    framework fix beside it is planned for the driver the machine will have, not for one that cannot
    drive the GPU. None when the driver supports every GPU."""
    from cudadoctor.checks.driver_fix import upgrade_advice

    driver = driver_version(snap)
    if not driver:
        return None
    first = [s.first_branch for s in (matrix.gpus.driver_support(cc, driver) for cc in ccs)
             if s.kind == "driver_too_old_for_gpu" and s.first_branch]
    if not first:
        return None
    advice = upgrade_advice(snap, matrix, max(first, key=lambda b: int(b[1:])), list(ccs))
    branch = next((b for b in matrix.cuda.branches if b.branch == advice.branch), None)
    if branch is None:
        return None
    toolkit = next((t for t in matrix.cuda.toolkits if t.cuda.startswith(branch.max_cuda + ".")
                    or t.cuda == branch.max_cuda), None)
    return toolkit.linux_min_driver if toolkit is not None else None


def torch_fix(snap: Snapshot, matrix: Matrix, ccs: Sequence[str], keep: Optional[str] = None,
              lead: str = "Install", avoid: Optional[str] = None) -> Tuple[str, List[str], Tuple[str, ...]]:
    """(fix text, commands, sources) installing the planned torch build in place of this one."""
    after = upgraded_driver(snap, matrix, ccs)
    plan, none = torch_plan(snap, matrix, ccs, keep, avoid=avoid, upgraded=after)
    packages = torch_packages(snap)
    if plan is not None:
        caveat = ""
        if after:
            caveat = f" (for the driver upgrade the GPU needs, to {after} or newer)"
        elif plan.driver_rule == "minor_compat":
            caveat = f" (it runs on this driver through minor-version compatibility; {plan.min_driver}+ removes that caveat)"
        if plan.ptx_jit:
            caveat += f" (compute capability {', '.join(plan.ptx_jit)} only through PTX JIT: a slow first start)"
        uninstall = [p for p in packages if installed(snap, p)]
        return (f"{lead} torch {plan.label}{caveat}:", plan.commands(packages, uninstall), plan.sources)
    assert none is not None
    return (none.summary() or "No torch build fits this machine.", [], none.sources)


def torch_variant_name(matrix: Matrix, build: FrameworkBuild) -> Optional[str]:
    """'cu124' for an official build (from its tag or its CUDA), else None."""
    if not build.version:
        return None
    variant = matrix.pytorch.variant_for_build(build.version, build.cuda if build.variant == "cuda" else None)
    return str(variant.name) if variant is not None else None
