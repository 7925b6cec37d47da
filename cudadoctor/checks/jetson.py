"""NVIDIA Jetson: the GPU's driver is part of Jetson Linux (L4T), so the desktop driver-branch
rules (minimum drivers, branch support of a GPU, kernel-module checks) do not apply, and torch's
CUDA wheels for JetPack 4-6 come from NVIDIA's Jetson indexes, not from PyPI or PyTorch's desktop
index. Every fact comes from ``jetson.json`` (matrix.jetson).

:func:`not_applicable` names the checks whose desktop rules do not hold on this Jetson; the
check runner leaves them out. The checks here say what holds instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, FrozenSet, List, Optional

from cudadoctor.checks.base import Check, finding, ref
from cudadoctor.matrix.versions import at_least, vkey
from cudadoctor.model import Category, Finding, FrameworkBuild, Severity, Snapshot

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix
    from cudadoctor.matrix.jetson import JetsonMatch, JetsonSoc

TABLE = "jetson.json"
UPDATE = "cudadoctor data update"

# Checks whose rules are the desktop driver's: the kernel module, its branch, its minimum per CUDA
# release, and the GPU table of desktop GPUs.
DESKTOP_DRIVER_CHECKS = frozenset({
    "driver-loaded", "nouveau", "secure-boot", "driver-library-mismatch", "driver-for-gpu", "driver-for-build",
    "gpu-known",
})
# Checks that judge torch by PyTorch's desktop wheels (their arch lists, Python tags, the CUDA
# libraries they pin, the CPU build's desktop fix): wrong for the Jetson builds of JetPack 4-6,
# right on a JetPack that follows SBSA (JetPack 7 takes the desktop aarch64 wheels).
DESKTOP_WHEEL_CHECKS = frozenset({"build-arch", "python-wheels", "cuda-libraries-present", "cudnn-version", "cpu-only-build"})


def not_applicable(snap: Snapshot, matrix: "Matrix") -> FrozenSet[str]:
    """The names of the checks that do not apply to this machine (none unless it is a Jetson)."""
    if snap.jetson is None:
        return frozenset()
    match = matrix.jetson.match(snap.jetson.l4t) if snap.jetson.l4t else None
    if match is not None and match.release.sbsa is True:
        return DESKTOP_DRIVER_CHECKS
    return DESKTOP_DRIVER_CHECKS | DESKTOP_WHEEL_CHECKS


def _soc(snap: Snapshot, matrix: "Matrix") -> Optional["JetsonSoc"]:
    soc = matrix.jetson.soc(snap.jetson.soc if snap.jetson else None)
    for gpu in snap.gpus or ():
        soc = soc or matrix.jetson.soc_of_gpu(gpu.name)
    return soc


def _label(snap: Snapshot, match: Optional["JetsonMatch"], soc: Optional["JetsonSoc"]) -> str:
    j = snap.jetson
    name = (j.model if j and j.model else None) or (soc.family if soc else "Jetson")
    if match is None:
        return f"{name}, Jetson Linux {j.l4t if j and j.l4t else '(release unknown)'}"
    return f"{name}, JetPack {match.jetpack} (Jetson Linux {match.l4t})"


def check_platform(snap: Snapshot, matrix: "Matrix") -> List[Finding]:
    """What this Jetson's JetPack brings, and that its driver is judged by it; or that the data
    does not know its L4T release or SoC."""
    j = snap.jetson
    if j is None:
        return []
    match = matrix.jetson.match(j.l4t) if j.l4t else None
    soc = _soc(snap, matrix)
    out: List[Finding] = []
    fact = matrix.jetson.fact("driver_in_bsp")
    if match is not None:
        r = match.release
        parts = [f"CUDA {r.cuda}" if r.cuda else None, f"cuDNN {r.cudnn}" if r.cudnn else None,
                 f"TensorRT {r.tensorrt}" if r.tensorrt else None]
        brings = ", ".join(p for p in parts if p) or "components the data does not record"
        gpu = f"; its GPU is {soc.family}'s (compute capability {soc.compute_capability})" if soc else ""
        assumed = (f" Jetson Linux {match.l4t} is not in the data: the record of {match.assumed_from} was used."
                   if match.assumed_from else "")
        out.append(finding(
            "jetson-platform", Severity.INFO, Category.OTHER,
            f"{_label(snap, match, soc)}: the GPU driver is part of Jetson Linux",
            why=(f"JetPack {match.jetpack} brings {brings}; its driver runs CUDA up to {r.driver_cuda}{gpu}. "
                 f"{fact.value if fact else ''} Desktop driver-branch checks were not run.{assumed}").replace("  ", " "),
            evidence=["jetson.l4t", "jetson.soc", "driver.driver_version"],
            source=[ref(TABLE, match.l4t if not match.assumed_from else match.assumed_from)],
        ))
    else:
        newest = matrix.jetson.newest_l4t or "none"
        newer = bool(j.l4t and newest != "none" and vkey(j.l4t) > vkey(newest))
        out.append(finding(
            "jetson-not-in-data", Severity.INFO, Category.OTHER,
            f"Jetson Linux {j.l4t or '(unknown release)'} is {'newer than' if newer else 'not in'} the compatibility data",
            why=(f"The data knows Jetson Linux releases up to {newest}. Its CUDA, cuDNN, TensorRT and the CUDA its "
                 "driver runs are not known, so the framework builds were not judged against them; desktop "
                 f"driver-branch checks were not run either. {fact.value if fact else ''}").strip(),
            fix="Get newer compatibility data; JetPack's own components are listed by 'apt show nvidia-jetpack'.",
            commands=[UPDATE],
            evidence=["jetson.l4t"],
        ))
    if soc is None and (j.soc or snap.gpus):
        out.append(finding(
            "jetson-not-in-data", Severity.INFO, Category.OTHER,
            f"the Jetson SoC {j.soc or '(unknown)'} is not in the compatibility data",
            why="Its GPU's compute capability comes only from what NVML reports, if anything.",
            commands=[UPDATE], evidence=["jetson.soc", "gpus"],
        ))
    return out


def _desktop_wheel(snap: Snapshot, torch: FrameworkBuild) -> Optional[str]:
    """Why this torch is a desktop build, or None: a '+cuNNN'/'+cpu' local tag (PyTorch's desktop
    index), a CPU build, or the pip CUDA runtime wheels that PyPI's aarch64 CUDA builds pull in."""
    version = torch.version or ""
    local = version.split("+", 1)[1] if "+" in version else ""
    if torch.variant == "cpu":
        return f"torch {version} is a CPU-only build (torch.version.cuda is None)"
    if local.startswith("cu") and local[2:].isdigit():
        return f"torch {version} is a desktop build from PyTorch's index (+{local})"
    wheels = sorted(p.name for p in snap.packages or () if p.name.startswith(("nvidia-cuda-runtime", "nvidia-cublas")))
    if torch.variant == "cuda" and wheels:
        return (f"torch {version} is PyPI's Linux aarch64 CUDA build: it loads CUDA from pip wheels "
                f"({', '.join(wheels)}) built for SBSA servers")
    return None


def check_wheels(snap: Snapshot, matrix: "Matrix") -> List[Finding]:
    """On a JetPack that does not follow SBSA (4-6), torch must be a Jetson build; and a torch
    CUDA build must not need a newer CUDA than this JetPack's driver runs."""
    j = snap.jetson
    torch = snap.framework("torch")
    if j is None or torch is None or not j.l4t:
        return []
    match = matrix.jetson.match(j.l4t)
    if match is None:
        return []
    r = match.release
    out: List[Finding] = []
    where = _where(r.wheel_index, r.wheels)
    desktop = _desktop_wheel(snap, torch) if r.sbsa is False else None
    if desktop:
        cmds = ["pip uninstall -y torch torchvision torchaudio"]
        if r.wheel_index:
            cmds.append(f"pip install torch torchvision --index-url {r.wheel_index}")
        out.append(finding(
            "jetson-wrong-wheel", Severity.ERROR, Category.WRONG_PACKAGE_VARIANT,
            f"torch {torch.version} is not a Jetson build: it cannot use this {_label(snap, match, _soc(snap, matrix))}'s GPU",
            why=(f"{desktop}. JetPack {match.jetpack} does not follow SBSA: its integrated GPU runs only torch built "
                 f"for Jetson against JetPack's CUDA {r.cuda or r.driver_cuda}, which {where}. "
                 "torch.cuda.is_available() is False, or CUDA fails to initialise."),
            fix=f"Install torch for JetPack {match.jetpack}: it {where}.", commands=cmds,
            evidence=["jetson.l4t", "frameworks.torch.version", "frameworks.torch.variant"],
            source=[ref(TABLE, match.l4t)],
        ))
    elif torch.variant == "cuda" and torch.cuda and not at_least(r.driver_cuda, ".".join(map(str, vkey(torch.cuda)[:2]))):
        upgrade = matrix.jetson.fact("cuda_upgrade_from_jetpack")
        compat = ""
        if upgrade and at_least(match.jetpack or "0", upgrade.value):
            compat = (f" From JetPack {upgrade.value} on, NVIDIA's CUDA upgrade package (cuda-compat) for CUDA "
                      f"{torch.cuda} lets this BSP run it.")
        out.append(finding(
            "jetson-cuda-newer-than-jetpack", Severity.ERROR, Category.DRIVER_TOO_OLD,
            f"torch {torch.version} needs CUDA {torch.cuda}; JetPack {match.jetpack}'s driver runs CUDA up to {r.driver_cuda}",
            why=(f"On a Jetson the CUDA driver is part of Jetson Linux {match.l4t}, which runs CUDA up to "
                 f"{r.driver_cuda}; torch was built with CUDA {torch.cuda}. CUDA initialisation fails "
                 f"('CUDA driver version is insufficient for CUDA runtime version').{compat}"),
            fix=(f"Install a torch built for CUDA {r.driver_cuda} (for JetPack {match.jetpack} it {where}), "
                 "or flash a newer JetPack."),
            commands=[f"pip install torch torchvision --index-url {r.wheel_index}"] if r.wheel_index else [],
            evidence=["jetson.l4t", "frameworks.torch.cuda"],
            source=[ref(TABLE, match.l4t)],
        ))
    return out


def _where(index: Optional[str], words: str) -> str:
    return f"comes from {index} ({words})" if index else f"comes from {words}"


CHECKS = (
    Check("jetson-platform", check_platform, ("jetson-platform", "jetson-not-in-data"), 1,
          "on a Jetson, JetPack's components and driver are judged, not desktop driver branches"),
    Check("jetson-wheels", check_wheels, ("jetson-wrong-wheel", "jetson-cuda-newer-than-jetpack"), 3,
          "on a Jetson, torch is a build for this JetPack and its CUDA"),
)
