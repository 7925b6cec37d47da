"""``cudadoctor diagnose FILE`` on a pasted text: what was read (each fact with its line), what was
ambiguous, the causes ranked, what to paste next, and the explanation of each error; and its
``--json`` document (format ``cudadoctor.paste``). They decide nothing."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any, Dict, List

from cudadoctor.model.printable import printable

if TYPE_CHECKING:
    from cudadoctor.diagnosis.paste import PasteDiagnosis

WRAP = 100
FORMAT = "cudadoctor.paste"
FORMAT_VERSION = 1
VERDICTS = {"holds": "holds", "likely": "likely", "possible": "possible"}


def paste_document(d: PasteDiagnosis) -> Dict[str, Any]:
    from cudadoctor.model.serialize import to_jsonable
    from cudadoctor.version import __version__

    intake = d.intake
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "tool_version": __version__,
        "data_version": d.explanation.data_version,
        "source": d.name,
        "read": {
            "blocks": [{"kind": b.kind, "name": _block_name(b.kind), "start": b.start, "end": b.end}
                       for b in intake.blocks],
            "facts": [{"key": f.key, "value": f.value, "line": f.line, "text": f.text, "block": f.block}
                      for f in intake.facts],
            "used": intake.facts_document(),
            "ambiguous": list(intake.notes),
        },
        "causes": [{"category": c.category.value, "label": c.label, "verdict": c.verdict, "why": c.why, "line": c.line,
                    "source": c.source} for c in d.ranked],
        "ask": list(d.asks),
        "explanation": d.explanation.to_dict(),
        "findings": to_jsonable(list(d.findings)),
    }


def _block_name(kind: str) -> str:
    from cudadoctor.diagnosis.intake import BLOCK_NAMES

    return BLOCK_NAMES.get(kind, kind)


def paste_text(d: PasteDiagnosis, color: bool = False, verbose: bool = False) -> str:
    from cudadoctor.diagnosis.explanation_text import checked_lines, match_lines
    from cudadoctor.render.text import BOLD, DIM, RED, YELLOW, Style
    from cudadoctor.version import __version__

    style = Style(color)
    e = d.explanation
    out = [style(f"cudadoctor {__version__}", BOLD) + f" · data {e.data_version} · diagnose {printable(d.name)}", ""]
    intake = d.intake
    spans: Dict[str, List[str]] = {}
    for b in intake.blocks:
        spans.setdefault(b.kind, []).append(str(b.start) if b.start == b.end else f"{b.start}-{b.end}")
    read = "; ".join(f"{_block_name(k)} (line{'s' if len(v) > 1 or '-' in v[0] else ''} {', '.join(v[:6])}"
                     f"{', ...' if len(v) > 6 else ''})" for k, v in spans.items())
    out.extend(_wrap(style("Read: ", BOLD) + (read or "nothing cudadoctor knows")))
    chosen = intake.chosen()
    for key, fact in chosen.items():
        value = "null" if fact.value is None else fact.value
        out.append(f"  {key:<22} {printable(str(value))[:48]:<48} " + style(f"line {fact.line}", DIM))
    packages = [f for f in intake.facts if f.key == "pip_packages"]
    if packages:
        out.append(f"  {'packages':<22} {len({p.value for p in packages})} read " + style(
            f"(lines {packages[0].line}-{packages[-1].line})", DIM))
    for note in intake.notes:
        out.extend(_wrap(style("Ambiguous: ", YELLOW) + printable(note), indent=2))
    out.append("")
    if d.ranked:
        out.append(style("Likely causes, root first:", BOLD))
        for n, c in enumerate(d.ranked[:5], 1):
            where = f" (line {c.line})" if c.line else ""
            words = style(VERDICTS[c.verdict], RED if c.verdict == "holds" else DIM, BOLD)
            out.extend(_wrap(f"{n}. {c.label}: {words}{where}: {printable(c.why)}", indent=2, hang=5))
    else:
        out.append(style("No cause found in what was read.", BOLD))
    if d.asks:
        out.append("")
        out.append(style("To tell, paste also:", BOLD))
        out.extend(line for a in d.asks for line in _wrap(f"- {a}", indent=2, hang=4))
    out.append("")
    out.extend(match_lines(e, style, verbose))
    out.extend(checked_lines(e, style, verbose))
    return "\n".join(out) + "\n"


def _wrap(text: str, indent: int = 0, hang: int = 0) -> List[str]:
    lines = textwrap.wrap(text, WRAP - indent, break_long_words=False, break_on_hyphens=False) or [""]
    return [" " * indent + lines[0]] + [" " * (indent + hang) + line for line in lines[1:]]
