"""What the pytest plugin's ``gpu`` marker asks for, and why this machine does or does not give it
(docs/pytest.md). Pure: a requirement and a Report in, a skip reason (or None) out.

The rule throughout: a test is skipped only for what is *known* to be missing. A fact the snapshot
does not have (a GPU's compute capability, the list of GPUs) never skips a test.
"""

from __future__ import annotations

import re
from typing import Any, List, Mapping, Optional, Sequence, Set, Tuple
from cudadoctor.record import frozen

from cudadoctor.diagnosis.causes import HIDE_ALL
from cudadoctor.model import Category, Finding, Gpu, Report, Severity, Snapshot

# The names cudadoctor.probes.frameworks gives the builds it reads; ``framework=`` must be one.
FRAMEWORK_NAMES = ("torch", "tensorflow", "jax", "cupy", "onnxruntime", "tensorrt", "numba", "julia")
ARGUMENTS = ("min_cc", "min_memory_gb", "count", "framework")

# Errors that break building CUDA code (extensions, nvcc), not running it: a GPU test still runs.
NOT_BLOCKING = (Category.NVCC_FRAMEWORK_MISMATCH, Category.HOST_COMPILER_UNSUPPORTED)

_CC = re.compile(r"^\s*(\d+)(?:\.(\d+))?\s*$")
_FRAMEWORK_REF = re.compile(r"frameworks(?:\.([\w-]+)|\[([\w-]+)\])")
MAX_FIX = 100  # a longer fix stays in `cudadoctor check`, out of the skip reason


class RequirementError(ValueError):
    """A ``gpu`` marker with arguments the plugin cannot understand."""


@frozen
class GpuRequirement:
    """What a ``@pytest.mark.gpu(...)`` test needs; the defaults ask for one usable GPU."""

    count: int = 1
    min_cc: Optional[Tuple[int, int]] = None
    min_memory_gb: Optional[float] = None  # decimal GB, as GPUs are sold ("H100 80GB" has 85.5 GB)
    framework: Optional[str] = None


def parse_requirement(markers: Sequence[Tuple[Sequence[Any], Mapping[str, Any]]]) -> GpuRequirement:
    """The requirement of a test from its ``gpu`` markers' ``(args, kwargs)``, closest first (a
    function's own marker overrides its class's, argument by argument)."""
    merged: dict[str, Any] = {}
    for args, kwargs in reversed(list(markers)):
        if args:
            raise RequirementError(f"gpu marker: takes keyword arguments only ({', '.join(ARGUMENTS)}), got {args!r}")
        unknown = sorted(set(kwargs) - set(ARGUMENTS))
        if unknown:
            raise RequirementError(f"gpu marker: unknown argument {unknown[0]!r} (known: {', '.join(ARGUMENTS)})")
        merged.update(kwargs)
    return GpuRequirement(
        count=_count(merged.get("count", 1)),
        min_cc=_cc(merged.get("min_cc")),
        min_memory_gb=_memory(merged.get("min_memory_gb")),
        framework=_framework(merged.get("framework")),
    )


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RequirementError(f"gpu marker: count={value!r}: give a whole number of GPUs, 1 or more")
    return value


def _cc(value: Any) -> Optional[Tuple[int, int]]:
    if value is None:
        return None
    m = _CC.match(str(value)) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
    if not m:
        raise RequirementError(f"gpu marker: min_cc={value!r}: give a compute capability such as \"8.0\" or \"9.0\"")
    return int(m.group(1)), int(m.group(2) or 0)


def _memory(value: Any) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise RequirementError(f"gpu marker: min_memory_gb={value!r}: give a positive number of GB (e.g. 16)")
    return float(value)


def _framework(value: Any) -> Optional[str]:
    if value is None:
        return None
    if value not in FRAMEWORK_NAMES:
        raise RequirementError(f"gpu marker: framework={value!r}: give one of {', '.join(FRAMEWORK_NAMES)}")
    return str(value)


# --------------------------------------------------------------------------- the decision


def unmet(req: GpuRequirement, report: Report) -> Optional[str]:
    """Why this machine cannot run a test needing ``req`` (the skip reason), or None."""
    snap = report.snapshot
    broken = blocking(report.findings, req.framework, gpu_only=req.framework is None)
    if broken:
        return stack_reason(broken)
    return _framework_reason(req, snap) or _gpus_reason(req, snap)


def blocking(findings: Sequence[Finding], framework: Optional[str] = None, gpu_only: bool = False) -> List[Finding]:
    """The error findings that make GPU code fail here, root causes first. With ``framework``,
    errors that name only other frameworks' builds (a CPU-only TensorFlow for a torch test) do
    not count; with ``gpu_only`` (a plain ``gpu`` test), only errors about the GPU itself count
    (the driver, the GPUs, what the process can see), never one about a framework's build."""
    out = [f for f in findings if f.severity is Severity.ERROR and f.category not in NOT_BLOCKING]
    if framework is not None:
        out = [f for f in out if _concerns(f, framework)]
    elif gpu_only:
        out = [f for f in out if not _named(f)]
    return sorted(out, key=lambda f: f.caused_by is not None)


def _named(f: Finding) -> Set[str]:
    """The frameworks a finding's evidence names ('frameworks.onnxruntime.variant' -> onnxruntime)."""
    named = {a or b for ref in f.evidence for a, b in _FRAMEWORK_REF.findall(ref)}
    named.discard("")
    return named


def _concerns(f: Finding, framework: str) -> bool:
    named = _named(f)
    family = {framework, "torchvision", "torchaudio"} if framework == "torch" else {framework, "jaxlib"}
    return not named or bool(named & family)


def stack_reason(broken: Sequence[Finding]) -> str:
    """``no usable GPU stack: <title> [<code>]; fix: <command>`` for the first blocking finding."""
    f = broken[0]
    reason = f"no usable GPU stack: {f.title} [{f.code}]"
    fix = _short_fix(f)
    if fix:
        reason += f"; fix: {fix}"
    more = len(broken) - 1
    return reason + (f" (+{more} more: cudadoctor check)" if more else "")


def _short_fix(f: Finding) -> Optional[str]:
    """The fix's sentence, or its only command, when short; else None (`cudadoctor check` has it).
    A first command alone can mislead (``pip uninstall -y torch`` without the install after it)."""
    if f.fix is None:
        return None
    text = f.fix.text.strip().rstrip(":")
    if text and len(text) <= MAX_FIX and "\n" not in text:
        return text
    if len(f.fix.commands) == 1 and len(f.fix.commands[0].run) <= MAX_FIX:
        return f.fix.commands[0].run
    return None


def _framework_reason(req: GpuRequirement, snap: Snapshot) -> Optional[str]:
    if req.framework is None or snap.frameworks is None:
        return None
    build = snap.framework(req.framework)
    if build is None:
        return f"needs {req.framework}; it is not installed in this environment"
    name = f"{build.name} {build.version or ''}".rstrip()
    if build.variant == "cpu":
        return f"needs a CUDA build of {req.framework}; {name} is a CPU-only build"
    if build.variant not in (None, "cuda"):
        return f"needs a CUDA build of {req.framework}; {name} is a {build.variant} build"
    return None


def visible_gpus(snap: Snapshot) -> Optional[List[Gpu]]:
    """The GPUs a CUDA program here can use, after CUDA_VISIBLE_DEVICES; None when unknown.
    GPUs seen only on the PCI bus do not count: no driver answers for them."""
    if snap.gpus is None:
        return None
    if not snap.gpus_from_driver:
        return []
    value = (snap.env or {}).get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return list(snap.gpus)
    if value.strip().lower() in HIDE_ALL:
        return []
    out: List[Gpu] = []
    for entry in (e.strip() for e in value.split(",")):
        if entry.startswith("MIG-"):
            return None  # a MIG instance's size is not in the snapshot
        match = [g for g in snap.gpus if (entry.isdigit() and g.index == int(entry))
                 or (entry.startswith("GPU-") and g.uuid and g.uuid.startswith(entry))]
        if not match or match[0] in out:
            break  # CUDA stops at the first entry that names no (new) device
        out.append(match[0])
    return out


def _gpus_reason(req: GpuRequirement, snap: Snapshot) -> Optional[str]:
    visible = visible_gpus(snap)
    if visible is None:
        return None
    value = (snap.env or {}).get("CUDA_VISIBLE_DEVICES")
    hidden = f" (CUDA_VISIBLE_DEVICES={value!r})" if value is not None else ""
    if len(visible) < req.count:
        seen = f"{len(visible)} visible" if visible else "none visible"
        return f"needs {_gpus(req.count)}; {seen}{hidden}"
    wants: List[str] = []
    if req.min_cc is not None:
        wants.append(f"compute capability ≥ {req.min_cc[0]}.{req.min_cc[1]}")
        short = [g for g in visible if not _cc_ok(g, req.min_cc)]
        if len(visible) - len(short) < req.count:
            return _short_reason(req, f"compute capability ≥ {req.min_cc[0]}.{req.min_cc[1]}", visible, short,
                                 lambda g: f"is {g.compute_capability}")
    if req.min_memory_gb is not None:
        wants.append(f"{req.min_memory_gb:g} GB of memory")
        short = [g for g in visible if not _memory_ok(g, req.min_memory_gb)]
        if len(visible) - len(short) < req.count:
            return _short_reason(req, f"{req.min_memory_gb:g} GB of GPU memory", visible, short,
                                 lambda g: f"has {_gb(g):.1f} GB")
    both = [g for g in visible if (req.min_cc is None or _cc_ok(g, req.min_cc))
            and (req.min_memory_gb is None or _memory_ok(g, req.min_memory_gb))]
    if len(both) < req.count:  # enough of each kind, but not enough GPUs with both
        return f"needs {_gpus(req.count)} with {' and '.join(wants)}; {len(both)} of {len(visible)} visible"
    return None


def _short_reason(req: GpuRequirement, want: str, visible: Sequence[Gpu], short: Sequence[Gpu],
                  says: Any) -> str:
    examples = ", ".join(f"GPU {g.index} {g.name or 'NVIDIA GPU'} {says(g)}" for g in short[:2])
    more = f" (+{len(short) - 2} more)" if len(short) > 2 else ""
    if req.count == 1 and len(visible) == 1:
        return f"needs {want}; {examples}"
    ok = len(visible) - len(short)
    return f"needs {_gpus(req.count)} with {want}; {ok} of {len(visible)} visible ({examples}{more})"


def _gpus(n: int) -> str:
    return "a GPU" if n == 1 else f"{n} GPUs"


def _cc_ok(g: Gpu, floor: Tuple[int, int]) -> bool:
    have = _cc(g.compute_capability) if g.compute_capability and _CC.match(g.compute_capability) else None
    return have is None or have >= floor  # unknown: given the benefit of the doubt


def _memory_ok(g: Gpu, floor_gb: float) -> bool:
    return g.memory_total_mib is None or _gb(g) >= floor_gb


def _gb(g: Gpu) -> float:
    return (g.memory_total_mib or 0) * 1024 * 1024 / 1e9
