"""How ``cudadoctor diff`` reads: text (``-``/``+`` lines and ``A → B``), Markdown tables for a bug
tracker, and a JSON list. Like the report renderers, these only lay out a Comparison."""

from __future__ import annotations

import json
import re
from typing import Dict, List, Optional, Sequence, TextIO

from cudadoctor.model.printable import json_printable, printable_tree
from cudadoctor.reports.diff import SECTIONS, Comparison, Difference, Side, summary
from cudadoctor.render import md
from cudadoctor.render.findings import MARK, verdict
from cudadoctor.render.text import BOLD, DIM, GREEN, RED, Style

SECTION_TITLES: Dict[str, str] = dict(SECTIONS)
ITEM_WIDTH, FIELD_WIDTH = 30, 34  # column widths at most: longer names push their value along
LINE = 120  # a change longer than this is shown on two lines, - and +


def grouped(differences: Sequence[Difference]) -> Dict[str, List[Difference]]:
    out: Dict[str, List[Difference]] = {}
    for d in differences:
        out.setdefault(d.section, []).append(d)
    return out


def side_verdict(side: Side) -> str:
    severity, line = verdict(side.report.findings)
    return f"{MARK[severity]} {line}"


# --------------------------------------------------------------------------- text


def render_diff_text(comparison: Comparison, stream: TextIO, color: bool = False) -> None:
    comparison = printable_tree(comparison)  # control characters from the reports escaped (strangers' reports)
    style = Style(color)
    out = [style(summary(comparison), BOLD)]
    width = max(len(comparison.a.name), len(comparison.b.name))
    for label, side in (("A", comparison.a), ("B", comparison.b)):
        out.append(f"{label}  {side.name.ljust(width)}  {side_verdict(side)}")
    out.extend(style(f"· {note}", DIM) for note in comparison.notes)
    for section, diffs in grouped(comparison.differences).items():
        out.append("")
        out.append(style(SECTION_TITLES[section], BOLD))
        out.extend(section_lines(diffs, style))
    stream.write("\n".join(out) + "\n")


def section_lines(diffs: Sequence[Difference], style: Style) -> List[str]:
    """Three columns: the item (once for its fields), the field, the change. An item only on one
    side gets a ``+`` or ``-`` in the margin and its summary as the value."""
    item_width = min(ITEM_WIDTH, max(len(d.item) for d in diffs))
    fields = [d.field for d in diffs if d.field]
    field_width = min(FIELD_WIDTH, max(map(len, fields))) if fields else 0
    out: List[str] = []
    previous = None
    for d in diffs:
        item = d.item if d.item != previous else ""
        previous = d.item
        key = "  ".join(x for x in ((item.ljust(item_width) if item_width else ""),
                                    (d.field.ljust(field_width) if field_width else "")) if x)
        out.extend(_text_lines(d, key, style))
    return out


def _text_lines(d: Difference, key: str, style: Style) -> List[str]:
    tag = style("  (noise)", DIM) if d.noise else ""
    if d.kind == "added":
        return [style(f"  + {key}  {d.b}", GREEN) + tag]
    if d.kind == "removed":
        return [style(f"  - {key}  {d.a}", RED) + tag]
    assert d.a is not None and d.b is not None
    indent = " " * (4 + len(key) - len(key.lstrip()))
    entries = _path_change(d)
    if entries is not None:
        return [f"    {key.rstrip()}{tag}"] + [style(f"{indent}  {line}", RED if line[0] == "-" else GREEN if line[0] == "+" else DIM)
                                               for line in entries]
    line = f"    {key}  {d.a} → {d.b}"
    if len(line) <= LINE:
        return [line + tag]
    return [f"    {key.rstrip()}{tag}", style(f"{indent}  - {d.a}", RED), style(f"{indent}  + {d.b}", GREEN)]


PATH_LIKE = re.compile(r"(^|_)PATH$")


def _path_change(d: Difference) -> Optional[List[str]]:
    """For lists (PATH-like variables, device nodes): the entries only in A (-) and only in B (+),
    and whether the shared ones are in another order (for LD_LIBRARY_PATH the order decides which
    copy loads)."""
    if d.a is None or d.b is None:
        return None
    if d.section == "env" and PATH_LIKE.search(d.item):
        sep = ":"
    elif (d.section, d.field) == ("driver", "device nodes"):
        sep = ", "
    else:
        return None
    a, b = [e for e in d.a.split(sep) if e], [e for e in d.b.split(sep) if e]
    lines = [f"- {e}" for e in a if e not in b] + [f"+ {e}" for e in b if e not in a]
    if [e for e in a if e in b] != [e for e in b if e in a]:
        lines.append("· the entries both have are in another order:")
        lines.append(f"  A {d.a}")
        lines.append(f"  B {d.b}")
    return lines or None


# --------------------------------------------------------------------------- markdown


def render_diff_markdown(comparison: Comparison, stream: TextIO) -> None:
    comparison = printable_tree(comparison)  # control characters from the reports escaped
    out = [f"**{_escape(summary(comparison))}**", "", "| | Report | Verdict |", "|---|---|---|"]
    for label, side in (("A", comparison.a), ("B", comparison.b)):
        out.append(f"| {label} | {_code(side.name)} | {_escape(side_verdict(side))} |")
    if comparison.notes:
        out.append("")
        out.extend(f"- {note.replace('<', '&lt;')}" for note in comparison.notes)  # their `code` stays code
    for section, diffs in grouped(comparison.differences).items():
        out.extend(["", f"### {SECTION_TITLES[section]}", "", "| | A | B |", "|---|---|---|"])
        for d in diffs:
            key = _escape(d.key or section) + (" *(noise)*" if d.noise else "")
            out.append(f"| {key} | {_code(d.a)} | {_code(d.b)} |")
    out.append("")
    out.append("<sub>— : not present on that side. Made with `cudadoctor diff`.</sub>")
    stream.write("\n".join(out) + "\n")


def _escape(text: str) -> str:
    return md.text(text)


def _code(value: Optional[str]) -> str:
    """A value in a code span (paths and versions stay literal) that it cannot close, safe inside a table cell."""
    return "—" if value is None else md.code(value, cell=True)


# --------------------------------------------------------------------------- json


def render_diff_json(comparison: Comparison, stream: TextIO) -> None:
    """A list of ``{section, key, a, b}`` (``null``: not present on that side)."""
    rows = [{"section": d.section, "key": d.key, "a": d.a, "b": d.b} for d in comparison.differences]
    stream.write(json_printable(json.dumps(rows, indent=2, ensure_ascii=False)) + "\n")
