"""``cudadoctor explain``'s text and its ``--json`` document, drawn from an
:class:`~cudadoctor.diagnosis.explanation.Explanation`; they decide nothing."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any, Dict, List

from cudadoctor.model.printable import printable, printable_tree
from cudadoctor.render.wrap import wrap

if TYPE_CHECKING:
    from cudadoctor.diagnosis.explanation import Explanation

FORMAT = "cudadoctor.explain"
FORMAT_VERSION = 1
WRAP = 100
VERDICT_WORDS = {"holds": "holds here", "ruled_out": "not the cause here", "cannot_tell": "cannot tell"}
# How the "Checked against ..." line names each kind of machine.
WHERE = {"machine": "this machine (target {})", "recorded": "the recorded machine {}", "facts": "the facts in {}",
         "snapshot": "the snapshot in {}", "given": "the {} given", "host": "the host given (target {})",
         "paste": "the machine described in {} (its pasted output, not this machine)"}


# ---------------------------------------------------------------------------- JSON


def explanation_document(e: Explanation) -> Dict[str, Any]:
    from cudadoctor.version import __version__
    from cudadoctor.model.serialize import to_jsonable

    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "tool_version": __version__,
        "data_version": e.data_version,
        "signatures_known": e.signatures_known,
        "matched": e.matched,
        "matches": [{
            "signature": x.match.signature.id,
            "line_number": x.match.line_number,
            "line": x.match.line,
            "text": x.match.text,
            "groups": dict(x.match.groups),
            "specificity": x.match.signature.specificity,
            "explanation": x.match.signature.explanation,
            "verify": list(x.match.signature.verify),
            "frameworks": list(x.match.signature.frameworks),
            "seen_in": list(x.match.signature.seen_in),
            "source": x.match.signature.source,
            "causes": to_jsonable(list(x.causes)),
            "notes": list(x.notes),
        } for x in e.matches],
        "checked": {"kind": e.checked.kind, "what": e.checked.what} if e.checked else None,
        "findings": to_jsonable(list(e.checked.findings)) if e.checked else None,
    }


# ---------------------------------------------------------------------------- text


def explanation_text(e: Explanation, color: bool = False, verbose: bool = False) -> str:
    """The human text of ``cudadoctor explain`` (``verbose``: also where each signature was seen)."""
    return "\n".join(_lines(e, color, verbose)) + "\n"


def _lines(e: Explanation, color: bool, verbose: bool) -> List[str]:
    from cudadoctor.version import __version__
    from cudadoctor.render.text import BOLD, Style

    style = Style(color)
    out = [style(f"cudadoctor {__version__}", BOLD) + f" · data {e.data_version} · explain", ""]
    if not e.matches:
        first = next((line.strip() for line in e.message.splitlines() if line.strip()), "")
        out.append(style(f"No known error signature matches this text ({e.signatures_known} signatures known).", BOLD))
        out.extend(_wrap("", f"It begins: {printable(first[:200])}"))  # pasted text: escape sequences shown escaped
        out.extend(_wrap("", "Give the complete output, from the first error line on: the line naming the CUDA "
                             "error is often not the last one."))
        out.append("")
    out.extend(match_lines(e, style, verbose))
    out.extend(checked_lines(e, style, verbose))
    return out


def match_lines(e: Explanation, style: Any, verbose: bool) -> List[str]:
    """Each known error found, its meaning, its causes with their verdicts, and how to verify."""
    from cudadoctor.render.text import BOLD, DIM, GREEN, RED

    verdict_color = {"holds": RED, "ruled_out": GREEN, "cannot_tell": DIM}
    out: List[str] = []
    for n, x in enumerate(e.matches, 1):
        m, sig = x.match, x.match.signature
        count = f" {n} of {len(e.matches)}" if len(e.matches) > 1 else ""
        out.append(style(f"Known error{count}: {sig.id}", BOLD) + style(f"  (line {m.line_number})", DIM))
        out.extend(_wrap("", printable(" ".join(m.line.split())[:300])))  # a pasted log may carry escape sequences
        out.extend(_wrap("what", sig.explanation))
        for note in x.notes:  # they quote the message and the facts judged
            out.extend(_wrap("here", printable(note)))
        out.append("  possible causes, most likely first:")
        for i, cause in enumerate(x.causes, 1):
            out.append(f"    {i}. {cause.label}")
            if cause.verdict != "not_checked":
                words = style(VERDICT_WORDS[cause.verdict], verdict_color[cause.verdict], BOLD)
                out.extend(_wrap("", f"{words}: {printable(cause.reason)}", indent=7))  # it quotes the facts
        out.append("  verify:")
        out.extend(line for v in sig.verify for line in _wrap("", f"- {v}", indent=4, commands=True))
        if verbose:
            out.extend(_wrap("seen", ", ".join(sig.seen_in)))
        out.append("")
    return out


def checked_lines(e: Explanation, style: Any, verbose: bool) -> List[str]:
    """Which machine the causes were judged on, and its other findings."""
    from cudadoctor.render.text import BOLD, DIM, findings_block

    if e.checked is None:
        return [style("Not checked against this machine (--no-check).", DIM)]
    where = WHERE.get(e.checked.kind, "{}").format(printable(e.checked.what))
    out = [style(f"Checked against {where}:", BOLD)]
    # the findings quote the facts judged, which may be a stranger's (explain --facts, --snapshot)
    out.extend(findings_block(printable_tree(list(e.other_findings)), style, verbose))
    return out


def _wrap(label: str, text: str, indent: int = 2, commands: bool = False) -> List[str]:
    """``text`` wrapped under ``label``; with ``commands``, a quoted command (python -c '...') stays
    on one line, to paste."""
    head = " " * indent + (f"{label:<5} " if label else "")
    if commands:
        lines = wrap(text, WRAP - len(head)) or [""]
    else:
        lines = textwrap.wrap(text, WRAP - len(head), break_long_words=False, break_on_hyphens=False) or [""]
    return [head + lines[0]] + [" " * len(head) + line for line in lines[1:]]

