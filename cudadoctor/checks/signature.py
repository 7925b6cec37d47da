"""What only an error message tells: the text a user saw (``Snapshot.error_message``, from
``diagnose --facts`` or ``explain``) matched against the known error signatures of the matrix.

A signature names likely root causes, not facts of this machine, so its finding has low
confidence and severity warning; when a check found a real error, the runner marks the signature
finding as following from it (``consequence_of`` lists every category). :func:`causes` compares
a signature's categories with the findings of the other checks, for ``cudadoctor explain``:
which of the possible causes holds here, which the facts rule out, and which cannot be told.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from cudadoctor.model import GPU_SOURCES_DRIVER, Category, Finding, Severity, Snapshot
from cudadoctor.checks.base import Check, finding, ref

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

C = Category

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
    C.SMOKE_FAILED: "GPU code that fails when it runs",
    C.OTHER: "a cause outside the GPU stack (often the program or its data)",
}

SNIPPET = 100  # characters of the message quoted in a title
SHORT = 32  # a match shorter than this is quoted with the rest of its line


def label(category: Category) -> str:
    return LABELS.get(category, category.value)


def snippet(match: Any) -> str:
    """The part of the message a title quotes: what the pattern matched, or, when that alone is
    too short to recognise ('Error 804'), its line from the match on (or up to it, at its end)."""
    text = " ".join(str(match.text).split())
    if len(text) < SHORT:
        line = " ".join(str(match.line).split())
        at = max(line.find(text), 0)
        text = line[at:] if len(line) - at >= SHORT else line[max(0, at + len(text) - SNIPPET):]
    return text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…"


# ---------------------------------------------------------------------------- the checks


def check_error_message(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """Each known signature in the error message: its most likely cause, what to verify."""
    text = snap.error_message
    if not text or not text.strip():
        return []
    out: List[Finding] = []
    for m in matrix.signatures.match(text):
        sig = m.signature
        others = [label(c) for c in sig.categories[1:]]
        also = f" Less likely: {'; '.join(others)}." if others else ""
        out.append(finding(
            "error-message-match", Severity.WARNING, sig.category,
            f'the error "{snippet(m)}" points to {label(sig.category)}',
            why=f"{sig.explanation}{also} (Matched on line {m.line_number} of the message.)",
            fix="; ".join(f"check: {v}" for v in sig.verify),
            evidence=["error_message"],
            source=[ref("errors.json", sig.id)],
            confidence="low",
        ))
    return out


def check_error_message_unmatched(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """An error message was given, and no known signature is in it: say so, so that nobody
    takes the silence for 'this message is harmless'."""
    text = snap.error_message
    if not text or not text.strip() or matrix.signatures.match(text):
        return []
    first = next(line.strip() for line in text.splitlines() if line.strip())
    quoted = first if len(first) <= SNIPPET else first[: SNIPPET - 1] + "…"
    return [finding(
        "error-message-unmatched", Severity.INFO, Category.OTHER,
        "the error message matches none of the known error signatures",
        why=f"None of the {len(matrix.signatures.signatures)} error signatures of the compatibility data is in "
            f"the message (it begins: {quoted}). The other findings come from the machine's facts alone.",
        fix="Give the complete output, from the first error line on: the line naming the CUDA error is "
            "often not the last one.",
        evidence=["error_message"],
    )]


CHECKS = (
    Check("error-message", check_error_message, ("error-message-match",), 7,
          "the error message a user saw, matched against known error signatures", tuple(Category)),
    Check("error-message-unmatched", check_error_message_unmatched, ("error-message-unmatched",), 7,
          "an error message that matches no known signature"),
)

CODES = frozenset(code for check in CHECKS for code in check.codes)


# ---------------------------------------------------------------------------- explain: which cause holds

def _driver_probed(s: Snapshot) -> bool:
    """The driver's state is known: probed, or facts that say more than a version."""
    d = s.driver
    return d is not None and (d.source in ("nvml", "nvidia-smi", "proc") or d.nvml_error is not None
                              or d.kernel_module_version is not None or d.loaded is False)


_Fact = Tuple[str, Callable[[Snapshot], bool]]
FACTS: Dict[str, _Fact] = {
    "gpus": ("the GPUs", lambda s: s.gpus is not None),
    "gpu_models": ("the GPU models", lambda s: any(g.compute_capability or g.name or g.pci_device_id for g in s.gpus or ())),
    "gpu_health": ("the GPUs' health counters (NVML)",
                   lambda s: any(g.source in GPU_SOURCES_DRIVER for g in s.gpus or ())),
    "driver": ("the driver's state (NVML, kernel module)", lambda s: _driver_probed(s)),
    "driver_version": ("the driver version", lambda s: bool(s.driver and s.driver.driver_version)),
    "container": ("whether this is a container", lambda s: bool(s.host and s.host.container is not None)),
    "platform": ("the OS", lambda s: bool(s.host and s.host.os)),
    "env": ("the environment variables", lambda s: s.env is not None),
    "python": ("the Python version", lambda s: bool(s.python and s.python.version)),
    "frameworks": ("the framework builds", lambda s: s.frameworks is not None),
    "packages": ("the installed packages", lambda s: s.packages is not None),
    "libraries": ("the CUDA libraries", lambda s: s.libraries is not None),
    "toolkits": ("the CUDA toolkits", lambda s: s.toolkits is not None),
    "compilers": ("the host compilers", lambda s: s.compilers is not None),
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


@dataclass(frozen=True)
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
           snapshot: Optional[Snapshot], checks: Sequence[Check]) -> List[Cause]:
    """The verdict on each category, most likely first. ``findings`` None: the machine was not
    checked. Only warnings and errors of the other checks show a cause. ``checks``: those that
    ran (a cause no check that ran can see is never ruled out)."""
    layers = {c.layer for c in checks if c.codes and not CODES & set(c.codes)}
    return [_cause(c, findings, snapshot, layers) for c in categories]


def _cause(category: Category, findings: Optional[Sequence[Finding]], snapshot: Optional[Snapshot],
           layers: Set[int]) -> Cause:
    name = label(category)
    if findings is None or snapshot is None:
        return Cause(category, name, NOT_CHECKED, "not checked against a machine")
    shown = [f for f in findings if f.category is category and f.code not in CODES
             and f.severity in (Severity.ERROR, Severity.WARNING)]
    if shown:
        more = f" (+{len(shown) - 1} more)" if len(shown) > 1 else ""
        return Cause(category, name, HOLDS, f"{shown[0].title} [{shown[0].code}]{more}", tuple(f.code for f in shown))
    need = NEEDS.get(category)
    if need is None:
        return Cause(category, name, CANNOT_TELL, "no check can see this in the machine's facts")
    layer, facts = need
    if layer not in layers:
        return Cause(category, name, CANNOT_TELL, "this version of cudadoctor has no check for it")
    unknown = [k for k in facts if not FACTS[k][1](snapshot)]
    if unknown:
        return Cause(category, name, CANNOT_TELL, f"{_names(unknown)}: unknown")
    if category in INTERMITTENT:
        return Cause(category, name, CANNOT_TELL, f"the checks read {_names(facts)} and found no problem now, "
                                                  "which does not rule out a fault that comes and goes")
    return Cause(category, name, RULED_OUT, f"the checks read {_names(facts)} and found no such problem")
