"""The views of a ``cudadoctor docker`` result: text (per file, each finding at its line with its
why and fix, then what each image carries) and a versioned JSON envelope."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, List, TextIO

from cudadoctor.model import Severity
from cudadoctor.render.findings import MARK, fix_lines
from cudadoctor.render.text import BOLD, COLOR, DIM, Style, summary_line, wrapped

if TYPE_CHECKING:
    from cudadoctor.containers.model import DockerResult

SCHEMA_VERSION = 1


def _host(result: "DockerResult") -> str:
    gpus = ", ".join(result.gpus) if result.gpus else "no GPU known"
    return f"against {result.where}: driver {result.driver or 'unknown'}, {gpus}"


def render_docker_text(result: "DockerResult", stream: TextIO, color: bool = False, verbose: bool = False) -> None:
    style = Style(color)
    out: List[str] = [style(f"cudadoctor {result.tool_version} · data {result.data_version} · {_host(result)}", DIM), ""]
    for spec in result.specs:
        out.append(style(f"{spec.path} ({spec.kind}, {len(spec.units)} "
                         f"{'stage' if spec.kind == 'dockerfile' else 'service' if spec.kind == 'compose' else 'run line'}"
                         f"{'s' if len(spec.units) != 1 else ''})", BOLD))
        for loc in (f for f in result.findings if f.path == spec.path):
            f = loc.finding
            if f.severity is Severity.INFO and not verbose:
                out.append(style(f"  · {loc.line}: {f.title}", DIM))
                continue
            out.append("  " + style(f"{MARK[f.severity]} {loc.line}: {f.title}", COLOR[f.severity], BOLD)
                       + style(f"  [{f.code}]", DIM))
            out.extend("  " + line for line in wrapped("why", f.why))
            fixes = fix_lines(f)
            if fixes:
                out.extend("  " + line for line in wrapped("fix", fixes[0]))
                out.extend("         " + c for c in fixes[1:])
        for line, note in spec.notes:
            out.append(style(f"  · {line}: {note}", DIM))
        for path, line, what in result.images:
            if path == spec.path:
                out.append(style(f"  {line}: {what}", DIM))
        out.append("")
    for note in result.unjudged:
        out.append(style(f"· not judged: {note}", DIM))
    findings = [loc.finding for loc in result.findings]
    out.append(summary_line(findings).replace(".", f" in {len(result.specs)} file{'s' if len(result.specs) != 1 else ''}.", 1)
               if findings else f"No problems found in {len(result.specs)} file{'s' if len(result.specs) != 1 else ''}.")
    stream.write("\n".join(out) + "\n")


def docker_envelope(result: "DockerResult") -> Dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "docker",
        "tool_version": result.tool_version,
        "data_version": result.data_version,
        "host": {"where": result.where, "driver": result.driver, "gpus": list(result.gpus)},
        "files": [{"path": s.path, "kind": s.kind, "lines": s.lines, "units": [u.name for u in s.units],
                   "notes": [{"line": line, "text": text} for line, text in s.notes]} for s in result.specs],
        "images": [{"path": p, "line": line, "text": text} for p, line, text in result.images],
        "findings": [{
            "path": loc.path, "line": loc.line, "unit": loc.unit, "code": loc.finding.code,
            "severity": loc.finding.severity.value, "category": loc.finding.category.value, "title": loc.finding.title,
            "why": loc.finding.why,
            "fix": None if loc.finding.fix is None else {
                "text": loc.finding.fix.text, "lines": [c.run for c in loc.finding.fix.commands]},
            "source": list(loc.finding.source),
        } for loc in result.findings],
        "not_judged": list(result.unjudged),
    }


def render_docker_json(result: "DockerResult", stream: TextIO) -> None:
    json.dump(docker_envelope(result), stream, indent=2)
    stream.write("\n")
