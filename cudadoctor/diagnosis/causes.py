"""Which of a matched error message's possible causes holds on the machine checked, for
``cudadoctor explain``, ``run``, the excepthook and the API.

Every cause gets one of three verdicts, never a guess (docs/findings/README.md, "Unknown is not
absent"): it **holds** (a finding shows it, or a fact does on its own), it is **ruled out** by a
positive fact (the driver answers, the build is a CUDA build, the checks that read its facts ran
and found nothing), or one **cannot tell** (a fact is unknown: the command that would tell is
named; or the checks of its layer did not judge it because a cause below it holds). A check that
was left out or stayed silent never reads as "ruled out".
"""

from __future__ import annotations

from typing import Callable, Dict, List, Mapping, Optional, Protocol, Sequence, Set, Tuple
from cudadoctor.record import frozen

from cudadoctor.model import GPU_SOURCES_DRIVER, Category, Finding, Severity, Snapshot

C = Category

# Values of CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES that hide every GPU (CUDA's
# programming guide, "CUDA Environment Variables"; the container toolkit's "void" and "none").
HIDE_ALL = frozenset({"", "-1", "none", "void", "nodevfiles"})


class Check(Protocol):
    """What :func:`causes` reads of a check that ran: its layer and the codes it can produce."""

    @property
    def layer(self) -> int: ...

    @property
    def codes(self) -> Tuple[str, ...]: ...

# The findings of the error message itself (checks/signature.py): they never show its cause.
MESSAGE_CODES = frozenset({"error-message-match", "error-message-unmatched"})

# How each root cause reads in a sentence ("points to ...").
LABELS: Dict[Category, str] = {
    C.NO_GPU: "no NVIDIA GPU on the machine",
    C.NO_DRIVER: "no NVIDIA driver loaded",
    C.KERNEL_MODULE_BLOCKED: "a kernel module that cannot load (nouveau, Secure Boot)",
    C.DRIVER_LIBRARY_MISMATCH: "a kernel module and driver libraries of different versions",
    C.NVML_UNAVAILABLE: "a driver management library (NVML) that does not answer",
    C.CONTAINER_NO_GPU: "a container started without GPU access",
    C.VISIBLE_DEVICES_HIDDEN: "GPUs hidden by CUDA_VISIBLE_DEVICES or NVIDIA_VISIBLE_DEVICES",
    C.DRIVER_TOO_OLD: "a driver too old for the CUDA version in use",
    C.CPU_ONLY_BUILD: "a CPU-only build of the framework",
    C.ARCH_UNSUPPORTED: "a build without code for the GPU's architecture",
    C.PYTHON_UNSUPPORTED: "a Python version the package has no build for",
    C.PLATFORM_UNSUPPORTED: "an OS or platform the package has no GPU build for",
    C.COMPANION_VERSION_MISMATCH: "packages whose versions must match each other and do not",
    C.WRONG_PACKAGE_VARIANT: "the wrong variant of a package (CUDA version, CPU or GPU flavour)",
    C.MISSING_LIBRARY: "a CUDA library that cannot be found",
    C.LIBRARY_VERSION_CONFLICT: "another copy of a CUDA library loaded instead of the right one",
    C.CUDNN_MISMATCH: "a cuDNN version the framework was not built for",
    C.NVCC_FRAMEWORK_MISMATCH: "a CUDA toolkit (nvcc) that differs from the framework's CUDA",
    C.HOST_COMPILER_UNSUPPORTED: "a host compiler the CUDA toolkit does not support",
    C.HARDWARE_FAULT: "a hardware fault of the GPU",
    C.OUT_OF_MEMORY: "GPU memory that is full (the workload, other processes, a MIG slice)",
    C.SMOKE_FAILED: "GPU code that fails when it runs",
    C.OTHER: "a cause outside the GPU stack (often the program or its data)",
}

def label(category: Category) -> str:
    return LABELS.get(category, category.value)


def _driver_probed(s: Snapshot) -> bool:
    """The driver's state is known: probed, or facts that say more than a version."""
    d = s.driver
    return d is not None and (d.source in ("nvml", "nvidia-smi", "proc") or d.nvml_error is not None
                              or d.kernel_module_version is not None or d.loaded is False)


_Fact = Tuple[str, Callable[[Snapshot], bool], str]
# fact -> (how it reads, whether the snapshot knows it, the command that would tell)
FACTS: Dict[str, _Fact] = {
    "gpus": ("the GPUs", lambda s: s.gpus is not None, "nvidia-smi -L; lspci | grep -i nvidia"),
    "gpu_models": ("the GPU models", lambda s: any(g.compute_capability or g.name or g.pci_device_id for g in s.gpus or ()),
                   "nvidia-smi -L"),
    "gpu_health": ("the GPUs' health counters (NVML)",
                   lambda s: any(g.source in GPU_SOURCES_DRIVER for g in s.gpus or ()),
                   "nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT"),
    "driver": ("the driver's state (NVML, kernel module)", lambda s: _driver_probed(s),
               "nvidia-smi; cat /proc/driver/nvidia/version"),
    "driver_version": ("the driver version", lambda s: bool(s.driver and s.driver.driver_version), "nvidia-smi"),
    "container": ("whether this is a container", lambda s: bool(s.host and s.host.container is not None),
                  "cudadoctor report"),
    "platform": ("the OS", lambda s: bool(s.host and s.host.os), "uname -a"),
    "env": ("the environment variables", lambda s: s.env is not None, "env | grep -E 'CUDA|NVIDIA|LD_LIBRARY'"),
    "python": ("the Python version", lambda s: bool(s.python and s.python.version), "python --version"),
    "frameworks": ("the framework builds", lambda s: s.frameworks is not None, "python -m torch.utils.collect_env"),
    "packages": ("the installed packages", lambda s: s.packages is not None, "pip list"),
    "libraries": ("the CUDA libraries", lambda s: s.libraries is not None, "ldconfig -p | grep -E 'libcu|libnv'"),
    "toolkits": ("the CUDA toolkits", lambda s: s.toolkits is not None, "nvcc --version"),
    "compilers": ("the host compilers", lambda s: s.compilers is not None, "gcc --version"),
}

# Which checks judge each category (their layer in the registry) and the facts they read. When
# such a check ran, the facts were known and it found nothing, the category is ruled out on this
# machine. A category absent here (smoke_failed, other) cannot be told from the facts.
NEEDS: Dict[Category, Tuple[int, Tuple[str, ...]]] = {
    C.NO_GPU: (0, ("gpus",)),
    C.NO_DRIVER: (1, ("driver", "gpus")),
    C.KERNEL_MODULE_BLOCKED: (1, ("driver",)),
    C.DRIVER_LIBRARY_MISMATCH: (1, ("driver",)),
    C.NVML_UNAVAILABLE: (1, ("driver",)),
    C.CONTAINER_NO_GPU: (2, ("container", "driver")),
    C.VISIBLE_DEVICES_HIDDEN: (2, ("env", "gpus")),
    C.DRIVER_TOO_OLD: (3, ("driver_version", "frameworks")),
    C.CPU_ONLY_BUILD: (3, ("frameworks",)),
    C.ARCH_UNSUPPORTED: (3, ("gpu_models", "frameworks")),
    C.PYTHON_UNSUPPORTED: (3, ("python", "frameworks")),
    C.PLATFORM_UNSUPPORTED: (3, ("platform", "frameworks")),
    C.COMPANION_VERSION_MISMATCH: (3, ("frameworks", "packages")),
    C.WRONG_PACKAGE_VARIANT: (3, ("frameworks", "packages")),
    C.MISSING_LIBRARY: (4, ("libraries", "frameworks")),
    C.LIBRARY_VERSION_CONFLICT: (4, ("libraries", "env")),
    C.CUDNN_MISMATCH: (4, ("libraries", "frameworks")),
    C.NVCC_FRAMEWORK_MISMATCH: (5, ("toolkits", "frameworks")),
    C.HOST_COMPILER_UNSUPPORTED: (5, ("compilers", "toolkits")),
    C.HARDWARE_FAULT: (6, ("gpu_health",)),
}

# Faults the facts can show but not rule out: a GPU that fell off the bus is back after a reboot.
INTERMITTENT = frozenset({C.HARDWARE_FAULT})

HOLDS, RULED_OUT, CANNOT_TELL, NOT_CHECKED = "holds", "ruled_out", "cannot_tell", "not_checked"


@frozen
class Cause:
    """One possible cause of a matched message, and whether it holds on the machine checked."""

    category: Category
    label: str
    verdict: str  # holds | ruled_out | cannot_tell | not_checked
    reason: str
    findings: Tuple[str, ...] = ()  # codes of the findings that show it


def _names(keys: Sequence[str]) -> str:
    names = [FACTS[k][0] for k in keys]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def causes(categories: Sequence[Category], findings: Optional[Sequence[Finding]],
           snapshot: Optional[Snapshot], checks: Sequence[Check], partial: bool = False,
           other: Optional[str] = None, container_first: Optional[Category] = None) -> List[Cause]:
    """The verdict on each category, most likely first. ``findings`` None: the machine was not
    checked. Only warnings and errors of the other checks show a cause. ``checks``: those that
    ran (a cause no check that ran can see is never ruled out). ``partial``: the facts are some
    of a machine's (a facts file, a pasted report), so that the checks found nothing rules out
    nothing: only a positive fact does. ``other``: what the category 'other' stands for with the
    message (its label instead of the general words)."""
    layers = {c.layer for c in checks if c.codes and not MESSAGE_CODES & set(c.codes)}
    layer_of = {code: c.layer for c in checks for code in c.codes}
    return [_cause(c, findings, snapshot, layers, layer_of, partial, other)
            for c in in_context(categories, snapshot, container_first)]


def in_context(categories: Sequence[Category], snapshot: Optional[Snapshot],
               container_first: Optional[Category] = None) -> List[Category]:
    """The categories in the order the machine makes likely: inside a container, the cause a
    signature names for containers comes first (``container_first``: the image's own forward-
    compatibility libcuda for errors 803 and 804), and a container started without GPUs comes
    before "no driver" (the host's driver is only seen through the container runtime, so a missing
    driver there usually means no GPUs were passed in)."""
    order = list(categories)
    host = snapshot.host if snapshot is not None else None
    inside = host is not None and host.container not in (None, "none")
    if inside and container_first is not None and container_first in order:
        order.remove(container_first)
        order.insert(0, container_first)
    if inside and C.CONTAINER_NO_GPU in order and C.NO_DRIVER in order \
            and order.index(C.NO_DRIVER) < order.index(C.CONTAINER_NO_GPU):
        order.remove(C.CONTAINER_NO_GPU)
        order.insert(order.index(C.NO_DRIVER), C.CONTAINER_NO_GPU)
    return order


def _cause(category: Category, findings: Optional[Sequence[Finding]], snapshot: Optional[Snapshot],
           layers: Set[int], layer_of: Mapping[str, int], partial: bool = False, other: Optional[str] = None) -> Cause:
    name = other if other and category is C.OTHER else label(category)
    if findings is None or snapshot is None:
        return Cause(category, name, NOT_CHECKED, "not checked against a machine")
    shown = [f for f in findings if f.category is category and f.code not in MESSAGE_CODES
             and f.severity in (Severity.ERROR, Severity.WARNING)]
    if shown:
        more = f" (+{len(shown) - 1} more)" if len(shown) > 1 else ""
        return Cause(category, name, HOLDS, f"{shown[0].title} [{shown[0].code}]{more}", tuple(f.code for f in shown))
    seen = _fact_of(SHOWN, category, snapshot)
    if seen:  # no finding says so (a check may wait for a cause below it), but the facts do
        return Cause(category, name, HOLDS, seen)
    excluded = _fact_of(EXCLUDED, category, snapshot)
    if excluded:
        return Cause(category, name, RULED_OUT, excluded)
    need = NEEDS.get(category)
    if need is None:
        return Cause(category, name, CANNOT_TELL, "no check can see this in the machine's facts")
    layer, facts = need
    if layer not in layers:
        return Cause(category, name, CANNOT_TELL, "this version of cudadoctor has no check for it")
    unknown = [k for k in facts if not FACTS[k][1](snapshot)]
    if unknown:
        return Cause(category, name, CANNOT_TELL, f"{_names(unknown)}: unknown (run: {FACTS[unknown[0]][2]})")
    first = _first_error_below(findings, layer, layer_of)
    if first is not None:  # the checks of this layer wait for that one: their silence rules out nothing
        return Cause(category, name, CANNOT_TELL,
                     f"not judged: a cause before it holds ({first.title} [{first.code}])")
    if category in INTERMITTENT:
        return Cause(category, name, CANNOT_TELL, f"the checks read {_names(facts)} and found no problem now, "
                                                  "which does not rule out a fault that comes and goes")
    if partial:
        return Cause(category, name, CANNOT_TELL, f"the facts given show no such problem, but they are not all of "
                                                  f"the machine's (run: {FACTS[facts[-1]][2]})")
    return Cause(category, name, RULED_OUT, f"the checks read {_names(facts)} and found no such problem")


def _fact_of(table: Mapping[Category, Callable[[Snapshot], Optional[str]]], category: Category,
             snapshot: Snapshot) -> Optional[str]:
    rule = table.get(category)
    return rule(snapshot) if rule is not None else None


def _first_error_below(findings: Sequence[Finding], layer: int, layer_of: Mapping[str, int]) -> Optional[Finding]:
    below = [f for f in findings if f.severity is Severity.ERROR and f.code not in MESSAGE_CODES
             and layer_of.get(f.code, layer) < layer]
    return min(below, key=lambda f: layer_of[f.code]) if below else None


# ---------------------------------------------------------------------------- facts that decide alone
# A verdict of "holds" or "ruled out" needs a positive fact. These are the facts that decide a
# category by themselves, whatever the checks said (a check stays silent when a cause below it
# holds: with no GPU, no build check runs).


def _driver_missing(s: Snapshot) -> Optional[str]:
    d = s.driver
    if d is None or d.driver_version:
        return None
    if d.loaded is False:
        return "no NVIDIA kernel module is loaded and no driver answers"
    if d.nvml_error in ("NVML_ERROR_LIBRARY_NOT_FOUND", "NVML_ERROR_DRIVER_NOT_LOADED"):
        return f"NVML says {d.nvml_error}"
    return None


def _driver_answers(s: Snapshot) -> Optional[str]:
    d = s.driver
    if d is not None and d.driver_version and d.loaded is not False and d.source in ("nvml", "nvidia-smi"):
        return f"driver {d.driver_version} answers ({d.source})"
    return None


def _nvml_answers(s: Snapshot) -> Optional[str]:
    d = s.driver
    if d is not None and d.source == "nvml" and d.driver_version and not d.nvml_error:
        return f"NVML answers (driver {d.driver_version}): its libraries and the kernel module agree"
    return None


def _gpus_listed(s: Snapshot) -> Optional[str]:
    return f"the machine lists {len(s.gpus)} NVIDIA GPU(s)" if s.gpus else None


def _no_gpu_listed(s: Snapshot) -> Optional[str]:
    # only when something that would list a GPU was read: the driver, or the PCI bus (an empty tuple)
    return "no NVIDIA GPU is listed (driver, PCI bus)" if s.gpus == () else None


def _module_loaded(s: Snapshot) -> Optional[str]:
    d = s.driver
    if d and d.kernel_module_version:
        return f"the kernel module {d.kernel_module_version} is loaded"
    answers = _driver_answers(s)
    in_wsl = bool(s.host and s.host.wsl)
    return f"{answers}: its kernel module is loaded" if answers and not in_wsl else None


def _nouveau(s: Snapshot) -> Optional[str]:
    return "nouveau (the open-source driver) is loaded" if s.driver and s.driver.nouveau_loaded else None


def _mismatch(s: Snapshot) -> Optional[str]:
    d = s.driver
    return f"NVML says {d.nvml_error}" if d and d.nvml_error == "NVML_ERROR_LIB_RM_VERSION_MISMATCH" else None


def _not_a_container(s: Snapshot) -> Optional[str]:
    if s.host is not None and s.host.container == "none":
        return "this is not a container"
    if s.gpus and s.gpus_from_driver:
        return "the driver lists the GPUs here"
    return None


def _hidden(s: Snapshot) -> Optional[str]:
    for name in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
        value = (s.env or {}).get(name)
        if value is not None and value.strip().lower() in HIDE_ALL:
            return f"{name}={value!r} hides every GPU"
    return None


def _not_hidden(s: Snapshot) -> Optional[str]:
    if s.env is None:
        return None
    if all(name not in s.env for name in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")):
        return "neither CUDA_VISIBLE_DEVICES nor NVIDIA_VISIBLE_DEVICES is set"
    return None


def _cpu_build(s: Snapshot) -> Optional[str]:
    cpu = [b for b in s.frameworks or () if b.variant == "cpu"]
    return ", ".join(f"{b.name} {b.version or ''}".strip() for b in cpu) + " is a CPU-only build" if cpu else None


def _cuda_builds(s: Snapshot) -> Optional[str]:
    from cudadoctor.matrix.addons import NAMES as EXTENSIONS  # built against torch: no CPU build of their own

    builds = [b for b in s.frameworks or () if b.variant == "cuda"]
    if builds and not any(b.variant in (None, "cpu") for b in s.frameworks or () if b.name not in EXTENSIONS):
        return ", ".join(f"{b.name} {b.version or ''}".strip() for b in builds) + " built for CUDA"
    return None


SHOWN: Dict[Category, Callable[[Snapshot], Optional[str]]] = {
    C.NO_GPU: _no_gpu_listed,
    C.NO_DRIVER: _driver_missing,
    C.KERNEL_MODULE_BLOCKED: _nouveau,
    C.DRIVER_LIBRARY_MISMATCH: _mismatch,
    C.VISIBLE_DEVICES_HIDDEN: _hidden,
    C.CPU_ONLY_BUILD: _cpu_build,
}
EXCLUDED: Dict[Category, Callable[[Snapshot], Optional[str]]] = {
    C.NO_GPU: _gpus_listed,
    C.NO_DRIVER: _driver_answers,
    C.KERNEL_MODULE_BLOCKED: _module_loaded,
    C.DRIVER_LIBRARY_MISMATCH: _nvml_answers,
    C.NVML_UNAVAILABLE: _nvml_answers,
    C.CONTAINER_NO_GPU: _not_a_container,
    C.VISIBLE_DEVICES_HIDDEN: _not_hidden,
    C.CPU_ONLY_BUILD: _cuda_builds,
}
