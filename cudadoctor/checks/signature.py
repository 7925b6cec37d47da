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
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..model import Category, Finding, Severity, Snapshot
from .base import Check, finding, ref

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


def label(category: Category) -> str:
    return LABELS.get(category, category.value)


def snippet(match: Any) -> str:
    """The part of the message a title quotes: what the pattern matched, or its line when the
    match alone is too short to recognise ('Error 804')."""
    text = " ".join(str(match.text).split())
    if len(text) < 24:
        text = " ".join(str(match.line).split())
    return text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…"


# ---------------------------------------------------------------------------- the checks


def check_error_message(snap: Snapshot, matrix: Any) -> List[Finding]:
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
            why=f"{sig.explanation}{also} (Line {m.line_number} of the message: {' '.join(m.line.split())[:300]})",
            fix="; ".join(f"check: {v}" for v in sig.verify),
            evidence=["error_message"],
            source=[ref("errors.json", sig.id)],
            confidence="low",
        ))
    return out


def check_error_message_unmatched(snap: Snapshot, matrix: Any) -> List[Finding]:
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
            f"the message (it begins: {quoted}). The findings above come from the machine's facts alone.",
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

_Fact = Tuple[str, Callable[[Snapshot], bool]]
FACTS: Dict[str, _Fact] = {
    "gpus": ("the GPUs", lambda s: s.gpus is not None),
    "gpu_models": ("the GPU models", lambda s: any(g.compute_capability or g.name or g.pci_device_id for g in s.gpus or ())),
    "gpu_health": ("the GPUs' health counters (NVML)",
                   lambda s: any(g.source in ("nvml", "nvidia-smi") for g in s.gpus or ())),
    "driver": ("the driver", lambda s: s.driver is not None),
    "driver_version": ("the driver version", lambda s: bool(s.driver and s.driver.driver_version)),
    "host": ("the host (container, WSL2)", lambda s: s.host is not None),
    "env": ("the environment variables", lambda s: s.env is not None),
    "python": ("the Python version", lambda s: bool(s.python and s.python.version)),
    "frameworks": ("the framework builds", lambda s: s.frameworks is not None),
    "packages": ("the installed packages", lambda s: s.packages is not None),
    "libraries": ("the CUDA libraries", lambda s: s.libraries is not None),
    "toolkits": ("the CUDA toolkits", lambda s: s.toolkits is not None),
    "compilers": ("the host compilers", lambda s: s.compilers is not None),
}

# The facts the checks of each category judge; when all are known and no check found a problem of
# that category, the category is ruled out on this machine. Absent: no check can tell from facts.
NEEDS: Dict[Category, Tuple[str, ...]] = {
    C.NO_GPU: ("gpus",),
    C.NO_DRIVER: ("driver", "gpus"),
    C.KERNEL_MODULE_BLOCKED: ("driver",),
    C.DRIVER_LIBRARY_MISMATCH: ("driver",),
    C.NVML_UNAVAILABLE: ("driver",),
    C.CONTAINER_NO_GPU: ("host", "driver"),
    C.VISIBLE_DEVICES_HIDDEN: ("env", "gpus"),
    C.DRIVER_TOO_OLD: ("driver_version", "frameworks"),
    C.CPU_ONLY_BUILD: ("frameworks",),
    C.ARCH_UNSUPPORTED: ("gpu_models", "frameworks"),
    C.PYTHON_UNSUPPORTED: ("python", "frameworks"),
    C.PLATFORM_UNSUPPORTED: ("host", "frameworks"),
    C.COMPANION_VERSION_MISMATCH: ("frameworks", "packages"),
    C.WRONG_PACKAGE_VARIANT: ("frameworks", "packages"),
    C.MISSING_LIBRARY: ("libraries", "frameworks"),
    C.LIBRARY_VERSION_CONFLICT: ("libraries", "env"),
    C.CUDNN_MISMATCH: ("libraries", "frameworks"),
    C.NVCC_FRAMEWORK_MISMATCH: ("toolkits", "frameworks"),
    C.HOST_COMPILER_UNSUPPORTED: ("compilers", "toolkits"),
    C.HARDWARE_FAULT: ("gpu_health",),
}

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
           snapshot: Optional[Snapshot]) -> List[Cause]:
    """The verdict on each category, most likely first. ``findings`` None: the machine was not
    checked. Only warnings and errors of the other checks count as showing a cause."""
    out: List[Cause] = []
    for category in categories:
        if findings is None or snapshot is None:
            out.append(Cause(category, label(category), NOT_CHECKED, "not checked against a machine"))
            continue
        shown = [f for f in findings if f.category is category and f.code not in CODES
                 and f.severity in (Severity.ERROR, Severity.WARNING)]
        if shown:
            more = f" (+{len(shown) - 1} more)" if len(shown) > 1 else ""
            out.append(Cause(category, label(category), HOLDS, f"{shown[0].title} [{shown[0].code}]{more}",
                             tuple(f.code for f in shown)))
            continue
        needs = NEEDS.get(category)
        if needs is None:
            out.append(Cause(category, label(category), CANNOT_TELL, "no check can see this in the machine's facts"))
            continue
        unknown = [k for k in needs if not FACTS[k][1](snapshot)]
        if unknown:
            out.append(Cause(category, label(category), CANNOT_TELL, f"{_names(unknown)}: unknown"))
        else:
            out.append(Cause(category, label(category), RULED_OUT,
                             f"the checks read {_names(list(needs))} and found no such problem"))
    return out
