"""The fleet summary as text (terminals), Markdown (tickets) or a versioned JSON document
(docs/fleet.md). Renderers lay out a :class:`~cudadoctor.fleet.summary.FleetSummary`; they decide
nothing but how many names a line shows."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple

from cudadoctor.version import __version__
from cudadoctor.model.printable import json_printable, printable_tree
from cudadoctor.render import md
from cudadoctor.render.text import BOLD, DIM, RED, YELLOW, Style
from cudadoctor.fleet.fingerprint import describe
from cudadoctor.fleet.fingerprint import Change
from cudadoctor.fleet.summary import SIGNAL_ORDER, Configuration, FleetSummary, Outlier

FORMAT = "cudadoctor.fleet"
FORMAT_VERSION = 1
NAMES = 5  # node names a line shows before "+K more" (all with --verbose)
LINES = 20  # hardware, outlier and unreadable lines shown before "+K more" (all with --verbose)
PHRASE = 100  # characters of one change shown (all with --verbose)
CHANGES = 3  # changes a configuration's line shows (the ones that follow from another are folded)
MARK = {"crashed": "✗", "error": "✗", "warning": "!", "info": "·", "ok": "✓"}
COLOR = {"crashed": RED, "error": RED, "warning": YELLOW}


def _plural(n: int, word: str, plural: str = "") -> str:
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"


def names(nodes: Sequence[str], verbose: bool = False, limit: int = NAMES) -> str:
    """``a, b, c, +7 more``."""
    if verbose or len(nodes) <= limit:
        return ", ".join(nodes)
    return ", ".join(nodes[:limit]) + f", +{len(nodes) - limit:,} more"


def headline(s: FleetSummary) -> str:
    """``Fleet: 128 nodes reported, 2 unreadable, 1 missing · 3 configurations · 5 nodes with errors``."""
    parts = [f"{_plural(s.reported, 'node')} reported"]
    if s.expected is not None:
        parts[0] += f" of {s.expected:,} expected"
    if s.unreadable:
        parts.append(f"{len(s.unreadable):,} unreadable")
    if s.missing_count:
        parts.append(f"{s.missing_count:,} missing")
    if s.unexpected:
        parts.append(f"{len(s.unexpected):,} not in --nodes")
    health = []
    if s.nodes_with_errors:
        health.append(f"{_plural(s.nodes_with_errors, 'node')} with errors")
    if s.nodes_with_warnings:
        health.append(f"{_plural(s.nodes_with_warnings, 'node')} with warnings only" if health
                      else f"{_plural(s.nodes_with_warnings, 'node')} with warnings")
    if not health and s.reported:
        health.append("no errors or warnings")
    return "Fleet: " + ", ".join(parts) + f" · {_plural(len(s.configurations), 'configuration')}" + \
        (f" · {', '.join(health)}" if health else "")


def majority_label(s: FleetSummary) -> str:
    count = len(s.configurations[0].nodes)
    word = "Majority" if 2 * count > s.reported else "Most common"
    return f"{word} ({_plural(count, 'node')}{'' if count == s.reported else f' of {s.reported:,}'})"


def change_text(c: Configuration, verbose: bool) -> str:
    """What the configuration changes, most important first: ``driver 570.124.06 → 550.54.15; ...``."""
    if c.changes is None:
        return "not compared"
    shown: List[Change] = list(c.changes) if verbose else [x for x in c.changes if not x.follows][:CHANGES]
    more = len(c.changes) - len(shown)
    text = "; ".join(_short(x.phrase) if not verbose else x.phrase for x in shown) or "the same stack (only facts outside the fingerprint differ)"
    return text + (f" (+{more} more)" if more else "")


def hardware_lines(s: FleetSummary, verbose: bool) -> List[str]:
    """One line per hardware signal; the same signal on several nodes (2 uncorrected ECC errors, a
    PCIe link at x8) in one line naming them, so that a fleet-wide pattern reads as one."""
    groups: Dict[Tuple[str, str], List[str]] = {}
    for h in s.hardware:
        groups.setdefault((h.kind, h.detail), []).append(f"{h.node}{_gpu(h.gpu)}")
    lines = []
    for (_, detail), where in sorted(groups.items(), key=lambda g: (SIGNAL_ORDER.get(g[0][0], 9), -len(g[1]))):
        if len(where) == 1:
            lines.append(f"{where[0]}: {detail}")
        else:
            nodes = len({w.split(" GPU ")[0] for w in where})
            lines.append(f"{detail}: {_plural(len(where), 'GPU')} on {_plural(nodes, 'node')}: {names(where, verbose)}")
    return lines + [f"{o.node} GPU {o.gpu}: {outlier_text(o)}" for o in s.outliers]


def _short(phrase: str, width: int = PHRASE) -> str:
    """A change cut to ``width`` characters (a list of device nodes can fill a screen)."""
    return phrase if len(phrase) <= width else phrase[: width - 1] + "…"


def outlier_text(o: Outlier) -> str:
    return (f"{o.metric} {o.gbs:,.0f} GB/s, fleet median {o.median_gbs:,.0f} GB/s ({o.gbs / o.median_gbs:.2f}×) "
            f"on {o.model}")


def _cap(lines: List[str], verbose: bool, indent: str = "  ") -> List[str]:
    if verbose or len(lines) <= LINES:
        return lines
    return lines[:LINES] + [f"{indent}+{len(lines) - LINES:,} more (--verbose lists them all)"]


def _gpu(gpu: Optional[int]) -> str:
    return f" GPU {gpu}" if gpu is not None else ""


def render_text(s: FleetSummary, stream: TextIO, color: bool = False, verbose: bool = False) -> None:
    """The terminal view: one headline, then configurations, findings, hardware and problems."""
    s = printable_tree(s)  # control characters from the nodes' reports escaped (strangers' reports)
    style = Style(color)
    out = [style(headline(s), BOLD)]
    if s.configurations:
        first = s.configurations[0]
        out.append(f"{majority_label(s)}: {describe(first.fingerprint)}")
        if verbose:
            out.append(style(f"  {names(first.nodes, True)}", DIM))
    others = [c for c in s.configurations[1:] if c.changes is not None]
    if others:
        out.append("Other configurations:")
        for c in others:
            out.append(f"  {_plural(len(c.nodes), 'node')} ({names(c.nodes, verbose)}): {change_text(c, verbose)}")
            if c.note:
                out.append(style(f"    {c.note}", DIM))
    if s.not_compared:
        rest = sum(len(c.nodes) for c in s.configurations if c.changes is None) - len(s.configurations[0].nodes)
        out.append(f"  +{_plural(s.not_compared, 'more configuration')} ({_plural(rest, 'node')}) not compared "
                   "(--compare N compares more)")
    if s.findings:
        out.append("Findings (most common first):")
        for f in s.findings:
            mark = style(MARK.get(f.severity, "?"), *([COLOR[f.severity]] if f.severity in COLOR else []))
            out.append(f"  {mark} {f.code}  {_plural(len(f.nodes), 'node')}: {f.title}")
            out.append(style(f"      {names(f.nodes, verbose)}", DIM))
    hardware = [f"  {line}" for line in hardware_lines(s, verbose)]
    if hardware:
        out.append("Hardware:")
        out.extend(_cap(hardware, verbose))
    problems = [f"  {p.path}: {p.reason}" for p in s.problems]
    if problems:
        out.append("Unreadable:" if all(p.kind != "duplicate" for p in s.problems) else "Unreadable or duplicate:")
        out.extend(_cap(problems, verbose))
    if s.missing:
        out.append(f"Missing (no report): {names(s.missing, verbose, LINES)}")
    elif s.missing_count:
        out.append(f"Missing: {_plural(s.missing_count, 'node')} of the {s.expected:,} expected sent no report "
                   "(--nodes names them)")
    if s.unexpected:
        out.append(f"Not in --nodes: {names(s.unexpected, verbose, LINES)}")
    stream.write("\n".join(out) + "\n")


def _md(text: str) -> str:
    return md.text(text)


def render_markdown(s: FleetSummary, stream: TextIO, verbose: bool = False) -> None:
    """For a ticket: the headline, a table of configurations and of findings, then lists."""
    s = printable_tree(s)  # control characters from the nodes' reports escaped
    out = ["## Fleet summary", "", f"**{headline(s)[len('Fleet: '):]}**", ""]
    if s.configurations:
        out += ["### Configurations", "", "| Nodes | Configuration |", "|---|---|"]
        first = s.configurations[0]
        out.append(f"| {majority_label(s)} | {_md(describe(first.fingerprint))} |")
        for c in s.configurations[1:]:
            if c.changes is not None:
                out.append(f"| {_plural(len(c.nodes), 'node')}: {_md(names(c.nodes, verbose))} | {_md(change_text(c, verbose))} |")
        if s.not_compared:
            out.append(f"| +{_plural(s.not_compared, 'configuration')} | not compared |")
        out.append("")
    if s.findings:
        out += ["### Findings", "", "| | Finding | Nodes |", "|---|---|---|"]
        for f in s.findings:
            out.append(f"| {MARK.get(f.severity, '?')} {f.severity} | `{f.code}` {_md(f.title)} | "
                       f"{len(f.nodes):,}: {_md(names(f.nodes, verbose))} |")
        out.append("")
    hardware = [f"- {_md(line)}" for line in hardware_lines(s, verbose)]
    if hardware:
        out += ["### Hardware", ""] + _cap(hardware, verbose, "- ") + [""]
    if s.problems:
        out += ["### Unreadable reports", ""] + _cap([f"- {md.code(p.path)}: {_md(p.reason)}" for p in s.problems], verbose, "- ") + [""]
    if s.missing or s.missing_count:
        out += ["### Missing reports", "", (_md(names(s.missing, verbose, LINES)) if s.missing
                                            else f"{s.missing_count:,} of the {s.expected:,} expected nodes"), ""]
    if s.unexpected:
        out += ["### Not in --nodes", "", _md(names(s.unexpected, verbose, LINES)), ""]
    stream.write("\n".join(out))


def document(s: FleetSummary, fail_on: str, exit_code: int) -> Dict[str, Any]:
    """The JSON document (``format`` cudadoctor.fleet, ``format_version`` 1; keys in docs/fleet.md)."""
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "tool_version": __version__,
        "nodes": {"reported": s.reported, "unreadable": len(s.unreadable), "missing": s.missing_count,
                  "expected": s.expected, "with_errors": s.nodes_with_errors,
                  "with_warnings": s.nodes_with_warnings, "not_checked": s.not_checked},
        "configurations": [_configuration(c, i == 0) for i, c in enumerate(s.configurations)],
        "configurations_not_compared": s.not_compared,
        "findings": [{"code": f.code, "severity": f.severity, "title": f.title, "count": len(f.nodes),
                      "nodes": list(f.nodes)} for f in s.findings],
        "hardware": [{"node": h.node, "gpu": h.gpu, "kind": h.kind, "detail": h.detail} for h in s.hardware],
        "bandwidth_outliers": [{"node": o.node, "gpu": o.gpu, "gpu_model": o.model, "metric": o.metric,
                                "gbs": o.gbs, "fleet_median_gbs": o.median_gbs, "ratio": o.gbs / o.median_gbs,
                                "samples": o.samples} for o in s.outliers],
        "unreadable": [{"node": p.node, "file": p.path, "kind": p.kind, "reason": p.reason} for p in s.problems],
        "missing": list(s.missing),
        "unexpected": list(s.unexpected),
        "fail_on": fail_on,
        "exit_code": exit_code,
    }


def _configuration(c: Configuration, majority: bool) -> Dict[str, Any]:
    return {
        "majority": majority,
        "count": len(c.nodes),
        "nodes": list(c.nodes),
        "fingerprint": dict(c.fingerprint),
        "summary": describe(c.fingerprint),
        "representative": c.representative,
        "changes": None if c.changes is None else [
            {"section": x.section, "key": x.key, "majority": x.a, "this": x.b, "phrase": x.phrase, "follows": x.follows}
            for x in c.changes],
        "other_differences": c.other_differences,
        "note": c.note or None,
    }


def render_json(s: FleetSummary, stream: TextIO, fail_on: str, exit_code: int) -> None:
    stream.write(json_printable(json.dumps(document(s, fail_on, exit_code), indent=2, ensure_ascii=False)) + "\n")
