"""The environment and the verdict in one line: for the pytest header, ``check --format line`` and
a batch scheduler's drain reason (docs/pytest.md). Decides nothing: the verdict is the one the
text view leads with (:func:`cudadoctor.render.findings.verdict`), the facts are the snapshot's."""

from __future__ import annotations

from typing import Dict, List, Sequence, TextIO, Tuple

from cudadoctor.model import FrameworkBuild, Gpu, Report, Snapshot
from cudadoctor.model.printable import printable_tree
from cudadoctor.render.findings import MARK, lead, problems, verdict

LIMIT = 200  # fits a terminal line or two, a Slurm reason, a CI annotation
SEP = " · "
MIN_TITLE = 40  # a verdict title is never cut shorter than this: the code alone rarely says enough

# The frameworks people run GPU tests with; companions (torchvision, ...) follow torch and would
# only lengthen the line.
FRAMEWORKS = ("torch", "tensorflow", "jax", "cupy")

# For consumers that cannot take UTF-8 (some log pipelines, old scheduler front ends).
_ASCII = {"·": "|", "×": "x", "✓": "OK", "✗": "ERROR", "≤": "<=", "≥": ">=", "…": "...", "—": "-", "–": "-",
          "→": "->", "°": " deg"}
_ASCII_MARK = {"!": "WARNING"}


def one_line(report: Report, ascii: bool = False, limit: int = LIMIT) -> str:
    """``driver 580.95.05 (CUDA 13.0) · 1× NVIDIA H200 (sm_90, 140 GiB) · torch 2.11.0+cu130 · ✓ no
    problems found``. At most ``limit`` characters: extra frameworks collapse first, then the
    verdict's title is cut, then the facts. ``ascii=True`` spells the marks out (``ERROR``)."""
    snap = report.snapshot
    facts = [driver_part(snap), gpus_part(snap)]
    builds = framework_parts(snap)
    mark, text, more = verdict_parts(report)
    ellipsis = "…"
    if ascii:
        mark = _ASCII_MARK.get(mark, _ASCII.get(mark, mark))
        facts, builds = [_to_ascii(p) for p in facts], [_to_ascii(p) for p in builds]
        text, ellipsis = _to_ascii(text), "..."
    head = f"{mark} " if mark else ""
    line = _fit(facts, builds, head, text, more, limit, ellipsis)
    return line.replace(SEP, " | ") if ascii else line


def render_line(report: Report, stream: TextIO) -> None:
    stream.write(one_line(printable_tree(report)) + "\n")  # control characters from the data escaped


def driver_part(snap: Snapshot) -> str:
    d = snap.driver
    if d is None:
        return "driver unknown"
    if d.driver_version:
        return f"driver {d.driver_version}" + (f" (CUDA {d.cuda_driver_version})" if d.cuda_driver_version else "")
    if d.loaded is False:
        return "no NVIDIA driver"
    if d.kernel_module_version:
        return f"driver unreadable (kernel module {d.kernel_module_version})"
    return "driver unreadable"


def gpus_part(snap: Snapshot) -> str:
    """``8× NVIDIA H100 80GB HBM3 (sm_90, 80 GiB)``; different models joined with ``+``."""
    if snap.gpus is None:
        return "GPUs unknown"
    if not snap.gpus:
        return "no GPU"
    groups: Dict[Tuple[str, str], int] = {}
    for g in snap.gpus:
        key = (_gpu_name(g), _gpu_detail(g))
        groups[key] = groups.get(key, 0) + 1
    text = " + ".join(f"{n}× {name}" + (f" ({detail})" if detail else "") for (name, detail), n in groups.items())
    if all(g.source == "pci" for g in snap.gpus):
        text += " (PCI only)"  # seen on the bus; no driver answered for it
    return text


def _gpu_name(g: Gpu) -> str:
    if g.name:
        return g.name
    return f"NVIDIA GPU {g.pci_device_id}" if g.pci_device_id else "NVIDIA GPU"


def _gpu_detail(g: Gpu) -> str:
    bits = []
    if g.compute_capability:
        bits.append(f"sm_{g.compute_capability.replace('.', '')}")
    if g.memory_total_mib is not None:
        bits.append(f"{g.memory_total_mib / 1024:.0f} GiB")  # as the text view's GPUs line
    return ", ".join(bits)


def framework_parts(snap: Snapshot) -> List[str]:
    """One label per GPU framework found, in :data:`FRAMEWORKS` order."""
    if snap.frameworks is None:
        return ["frameworks unknown"]
    out = []
    for name in FRAMEWORKS:
        build = snap.framework(name)
        if build is not None:
            out.append(framework_label(build))
    return out


def framework_label(b: FrameworkBuild) -> str:
    """``torch 2.11.0+cu130``, ``torch 2.5.1 (CUDA 12.6)``, ``torch 2.13.0+cpu (CPU-only)``."""
    head = f"{b.name} {b.version or '(version unknown)'}"
    if b.variant == "cpu":
        return f"{head} (CPU-only)"
    if b.variant == "cuda":
        if "+cu" in (b.version or ""):  # the local version already names the CUDA build
            return head
        return f"{head} (CUDA {b.cuda})" if b.cuda else f"{head} (CUDA build)"
    return f"{head} ({b.variant})" if b.variant else head


def verdict_parts(report: Report) -> Tuple[str, str, str]:
    """The mark, the words and the count of the others:
    ``('✗', 'no-nvidia-gpu: this machine has no NVIDIA GPU', ' (+1 more)')``; empty when the
    checks did not run."""
    if not report.checked:
        return "", "", ""
    found = problems(report.findings)
    severity, _ = verdict(report.findings)
    if not found:
        return MARK[severity], "no problems found", ""
    first = lead(found)
    more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
    return MARK[severity], f"{first.code}: {first.title}", more


def _fit(facts: Sequence[str], builds: Sequence[str], head: str, text: str, more: str, limit: int,
         ellipsis: str) -> str:
    def join(parts: Sequence[str], verdict_text: str) -> str:
        tail = [head + verdict_text + more] if verdict_text else []
        return SEP.join(list(parts) + tail)

    line = join([*facts, *builds], text)
    if len(line) <= limit:
        return line
    if len(builds) > 1:
        builds = [f"{builds[0]} (+{len(builds) - 1} more)"]
        line = join([*facts, *builds], text)
        if len(line) <= limit:
            return line
    parts = [*facts, *builds]
    if text:
        room = limit - len(join(parts, "")) - len(SEP) - len(head) - len(more)
        text = _cut(text, max(room, MIN_TITLE), ellipsis)
        line = join(parts, text)
    if len(line) <= limit:
        return line
    # the facts themselves are too long (many GPU models): keep the verdict whole, cut the facts
    tail = SEP + head + text + more if text else ""
    return _cut(SEP.join(parts), max(limit - len(tail), 1), ellipsis) + tail


def _cut(text: str, width: int, ellipsis: str) -> str:
    return text if len(text) <= width else text[: max(width - len(ellipsis), 0)].rstrip() + ellipsis


def _to_ascii(text: str) -> str:
    for char, plain in _ASCII.items():
        text = text.replace(char, plain)
    return text.encode("ascii", "replace").decode("ascii")
