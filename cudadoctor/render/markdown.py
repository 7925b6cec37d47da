"""Markdown for GitHub, GitLab and Discourse: the verdict and the findings with their fixes on top,
the key versions in one table, then every fact in a collapsed section."""

from __future__ import annotations

from typing import List, Optional, TextIO

from cudadoctor.model import Finding, Report, Severity
from cudadoctor.model.printable import printable_tree
from cudadoctor.render import md
from cudadoctor.render.findings import MARK, fix_lines, problems, verdict
from cudadoctor.render.text import data_label, framework_line, sections


def render_markdown(report: Report, stream: TextIO) -> None:
    stream.write("\n".join(markdown_lines(report)) + "\n")


def markdown_lines(report: Report) -> List[str]:
    report = printable_tree(report)  # control characters from the data escaped (it may be a stranger's report)
    snap = report.snapshot
    out = [f"### cudadoctor {report.tool_version} · data {data_label(report)}", ""]
    if report.redaction:
        out += [f"_{_escape(report.redaction)}_", ""]
    if report.checked:
        severity, line = verdict(report.findings)
        out += [f"**{MARK[severity]} {_escape(line)}**", ""]
        for f in problems(report.findings):
            out += _finding(f) + [""]
        notes = [f for f in report.findings if f.severity is Severity.INFO]
        if notes:
            out += ["Notes:", ""] + [f"- {_escape(f.title)} (`{f.code}`)" for f in notes] + [""]
    out += _key_table(report) + [""]
    facts: List[str] = []
    for label, lines in sections(snap, verbose=True):
        for i, text in enumerate(lines):
            facts.append(f"{label if i == 0 else '':<11}{text}")
    if snap.errors:
        facts += ["", "Could not read:"] + [f"  {e.probe}: {e.detail} [{e.kind.value}]" for e in snap.errors]
    out += ["<details><summary>Every fact</summary>", "", *md.fence(facts), "", "</details>"]
    return out


def _finding(f: Finding) -> List[str]:
    lines = [f"#### {MARK[f.severity]} {_escape(f.title)} (`{f.code}`)", ""]
    if f.caused_by:
        lines += [f"_Follows from `{f.caused_by}`._", ""]
    if f.confidence == "low":
        lines += ["_Matched from the error message alone; verify the facts below._", ""]
    if f.why:
        lines += [_escape(f.why), ""]
    fixes = fix_lines(f)
    if fixes:
        text, commands = (fixes[0], fixes[1:]) if f.fix and f.fix.text else ("", fixes)
        if text:
            lines += [f"**Fix:** {_escape(text)}", ""]
        if commands:
            lines += md.fence(commands, "sh")
    return lines


def _key_table(report: Report) -> List[str]:
    snap = report.snapshot
    rows = []
    d = snap.driver
    if d is not None:
        module = f"kernel module {d.kernel_module_version}, user space unreadable" if d.kernel_module_version else None
        rows.append(("Driver", d.driver_version or module or ("not loaded" if d.loaded is False else "unknown")))
        rows.append(("Newest CUDA the driver supports", d.cuda_driver_version or "unknown"))
    if snap.gpus is not None:
        gpus = [f"{g.name or g.pci_device_id or 'GPU'}" + (f" (CC {g.compute_capability})" if g.compute_capability else "")
                for g in snap.gpus]
        rows.append(("GPUs", ", ".join(gpus) or "none"))
    active = snap.active_toolkit
    if snap.toolkits is not None:
        rows.append(("CUDA toolkit", f"{active.version} at {active.root}" if active else "none"))
    for build in snap.frameworks or ():
        rows.append((build.name, framework_line(build)[len(build.name) + 1:]))
    if snap.python is not None:
        rows.append(("Python", f"{snap.python.version} ({snap.python.env_kind or '?'})"))
    if snap.host is not None:
        rows.append(("OS", snap.host.distribution or snap.host.os or "unknown"))
    if not rows:
        return []
    return ["| | |", "|---|---|"] + [f"| {_escape(k)} | {_escape(v)} |" for k, v in rows]


def _escape(text: Optional[str]) -> str:
    """A value or a sentence that quotes values, inert in Markdown (:func:`cudadoctor.render.md.text`)."""
    return md.text(text)
