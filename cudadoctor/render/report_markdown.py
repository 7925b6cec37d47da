"""The Markdown of ``cudadoctor report``, for GitHub, GitLab and Discourse issues.

On top, what a maintainer reads first: the verdict and the key versions in one table; then the
findings with their fixes; then every fact in collapsed ``<details>`` sections (grouped like the
text view); last, the JSON envelope in a collapsed ```json block that ``cudadoctor diagnose`` and
``cudadoctor diff`` read back. :mod:`cudadoctor.render.report_fit` shortens it to fit an issue body;
:class:`Layout` is how it tells this module what to leave out.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar
from cudadoctor.record import frozen

from cudadoctor.model import Report, Severity, Snapshot
from cudadoctor.render.findings import MARK, problems, verdict
from cudadoctor.model.reader import extract_json
from cudadoctor.model.printable import json_printable, printable_tree
from cudadoctor.model.serialize import to_jsonable

__all__ = ["extract_json", "report_markdown"]
from cudadoctor.render import md
from cudadoctor.render.jsonout import envelope
from cudadoctor.render.markdown import _escape, _finding
from cudadoctor.render.text import data_label, framework_line, sections

GITHUB_LIMIT = 65_536  # characters in an issue or comment body

T = TypeVar("T")
Memo = Dict[Tuple[Any, ...], Tuple[Report, Any]]


@frozen
class Layout:
    """What the report shows; the fitting loop turns parts off until it fits."""

    json_indent: Optional[int] = 1  # None: compact JSON
    json_defaults: bool = True  # False: leave out fields at their default (null, [], ...): loads the same
    facts_lines: Optional[int] = None  # at most this many lines per facts section
    facts: bool = True  # the collapsed facts sections
    json_block: bool = True  # the collapsed JSON envelope
    cuts: Tuple[str, ...] = ()  # what was cut, said on top
    limit: int = GITHUB_LIMIT  # the size it must fit in, said when something was cut


def report_markdown(report: Report, layout: Layout = Layout(), memo: Optional[Memo] = None) -> str:
    """The Markdown of ``report`` as ``layout`` shows it. ``memo`` (a dict the caller keeps between
    calls on the same reports, as the fitting loop does) keeps the escaped report and the JSON block,
    the costly parts, so that a layout change renders only what it changes."""
    original = report
    # shown: control characters escaped (a stranger's report)
    report = _memoized(memo, ("printable",), original, lambda: printable_tree(original))
    out = ["### cudadoctor report", ""]
    if report.checked:
        severity, line = verdict(report.findings)
        out += [f"**{MARK[severity]} {_escape(line)}**", ""]
    out += key_table(report.snapshot) + [""]
    created = f" · collected {_escape(report.snapshot.created_at)}" if report.snapshot.created_at else ""
    out += [f"<sub>cudadoctor {_escape(report.tool_version)} · data {_escape(data_label(report))}{created}"
            "</sub>", ""]
    out += _notes(report, layout)
    for f in problems(report.findings):
        lines = _finding(f)
        while lines and not lines[-1]:
            lines.pop()
        out += lines + [""]
    infos = [f for f in report.findings if f.severity is Severity.INFO]
    if infos:
        out += ["Notes:", ""] + [f"- {_escape(f.title)} (`{f.code}`)" for f in infos] + [""]
    if layout.facts:
        out += _facts(report.snapshot, layout)
    if layout.json_block:
        out += _memoized(memo, ("json", layout.json_indent, layout.json_defaults), original,
                         lambda: _json_block(original, layout))
    return "\n".join(out).rstrip("\n") + "\n"


def _memoized(memo: Optional[Memo], key: Tuple[Any, ...], report: Report, make: Callable[[], T]) -> T:
    """``make()``, kept in ``memo`` for this very report object (the entry holds the report, so its
    id cannot be reused by another one while the entry lives)."""
    if memo is None:
        return make()
    full = key + (id(report),)
    kept = memo.get(full)
    if kept is not None and kept[0] is report:
        value: T = kept[1]
        return value
    value = make()
    memo[full] = (report, value)
    return value


def _notes(report: Report, layout: Layout) -> List[str]:
    out = []
    if report.redaction:
        out.append("> " + re.sub(r"<[a-z0-9-]+>|\bGPU-a\b", lambda m: f"`{m.group(0)}`", report.redaction.replace("|", "\\|")))
    else:
        out.append("> **Not redacted:** this report shows usernames, hostnames, paths and environment values as they "
                   "are. Leave out `--no-redact` before posting it publicly.")
    if layout.cuts:
        out.append(">")
        out.append(f"> **Shortened** to fit in {layout.limit:,} characters: "
                   f"{_escape('; '.join(layout.cuts))}. The full report: `cudadoctor report --format json -o "
                   "report.json`, attached as a file.")
    return out + [""]


# ------------------------------------------------------------------------------ summary


def key_table(snap: Snapshot) -> List[str]:
    """The versions a maintainer asks for first, one row each."""
    d = snap.driver
    if d is None:
        driver, newest = "unknown (not probed)", "unknown"
    else:
        module = f"kernel module {d.kernel_module_version}; user space unreadable" if d.kernel_module_version else None
        driver = d.driver_version or module or ("not loaded" if d.loaded is False else "unknown")
        newest = d.cuda_driver_version or "unknown"
    rows = [("Driver", driver), ("Newest CUDA the driver supports", newest), ("GPUs", _gpus(snap))]
    active = snap.active_toolkit
    if snap.toolkits is None:
        rows.append(("CUDA toolkit", "unknown"))
    elif active:
        rows.append(("CUDA toolkit", f"{active.version or 'version unknown'} at {active.root}"))
    else:
        rows.append(("CUDA toolkit", f"none active ({len(snap.toolkits)} found)" if snap.toolkits else "none"))
    for build in snap.frameworks or ():
        rows.append((build.name, framework_line(build)[len(build.name) + 1:].replace("  ", " · ", 1)))
    if snap.frameworks is not None and not snap.frameworks:
        rows.append(("Frameworks", "none found"))
    p = snap.python
    rows.append(("Python", f"{p.version or '?'} ({', '.join(x for x in (p.implementation, p.env_kind) if x) or '?'})"
                 if p else "unknown"))
    rows.append(("OS", _os(snap)))
    if snap.smoke:
        rows.append(("Smoke tests", " · ".join(f"{'✓' if r.status == 'passed' else '·' if r.status == 'skipped' else '✗'}"
                                               f" {r.suite}" for r in snap.smoke)))
    return ["| | |", "|---|---|"] + [f"| {_escape(k)} | {_escape(v)} |" for k, v in rows]


def _gpus(snap: Snapshot) -> str:
    if snap.gpus is None:
        return "unknown"
    if not snap.gpus:
        return "none" + (" on the PCI bus" if snap.gpus_source == "pci" else "")
    names = Counter(f"{g.name or 'NVIDIA GPU ' + (g.pci_device_id or '?')}"
                    + (f" (CC {g.compute_capability})" if g.compute_capability else "") for g in snap.gpus)
    return ", ".join(f"{n} × {name}" for name, n in names.items())


def _os(snap: Snapshot) -> str:
    h = snap.host
    if h is None:
        return "unknown"
    bits = [h.distribution or h.os or "unknown", h.architecture or "", f"kernel {h.kernel}" if h.kernel else "",
            "WSL2" if h.wsl else "", f"{h.container} container" if h.container and h.container != "none" else ""]
    return " · ".join(b for b in bits if b)


# ------------------------------------------------------------------------------ facts and JSON


def _facts(snap: Snapshot, layout: Layout) -> List[str]:
    out: List[str] = []
    groups = [(label, lines) for label, lines in sections(snap, verbose=True) if lines]
    if snap.errors:
        groups.append((f"Could not read ({len(snap.errors)})",
                       [f"{e.probe}: {e.detail} [{e.kind.value}]" for e in snap.errors]))
    for label, lines in groups:
        shown = lines
        if layout.facts_lines is not None and len(lines) > layout.facts_lines:
            where = "in the JSON below" if layout.json_block else "in the full report"
            shown = lines[: layout.facts_lines] + [f"… {len(lines) - layout.facts_lines} more lines cut (all {where})"]
        count = f" ({len(lines)})" if len(lines) > 1 and not label.endswith(")") else ""
        out += [f"<details><summary>{_escape(label)}{count}</summary>", ""] + _fenced(shown, "") + ["", "</details>", ""]
    return out


def _json_block(report: Report, layout: Layout) -> List[str]:
    separators = (",", ": ") if layout.json_indent is not None else (",", ":")
    doc = envelope(report)
    if not layout.json_defaults:
        doc["snapshot"] = without_defaults(report.snapshot)
        doc["findings"] = [without_defaults(f) for f in report.findings] if report.checked else None
    text = json_printable(json.dumps(doc, indent=layout.json_indent, ensure_ascii=False, separators=separators))
    summary = "JSON (replay it with <code>cudadoctor diagnose</code>, compare with <code>cudadoctor diff</code>)"
    return [f"<details><summary>{summary}</summary>", ""] + _fenced(text.split("\n"), "json") + ["", "</details>"]


def without_defaults(value: Any) -> Any:
    """Like :func:`~cudadoctor.model.serialize.to_jsonable`, leaving out every dataclass field whose value
    is its default: the loader fills those back in, so the document loads to the same value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING)
            if f.name == "schema_version" or default is dataclasses.MISSING or v != default:
                out[f.name] = without_defaults(v)
        return out
    if isinstance(value, (list, tuple)):
        return [without_defaults(v) for v in value]
    if isinstance(value, dict):
        return {str(k): without_defaults(v) for k, v in value.items()}
    return to_jsonable(value)


def _fenced(lines: Sequence[str], info: str) -> List[str]:
    """A code block whose fence is longer than any run of backticks inside it."""
    return md.fence(lines, info)


