"""What an error message means: the known error signatures in it, each one's possible causes most
likely first, and which of them holds on the machine checked (``cudadoctor explain``,
``cudadoctor.explain()``, the excepthook).

Pure once the machine's facts are in hand: :func:`explain_message` takes the message and an
optional :class:`Checked` (a snapshot and its findings) and returns an :class:`Explanation`, whose
``text()`` is what ``cudadoctor explain`` prints and whose ``to_dict()`` is its ``--json``.
Probing (to build a :class:`Checked`) is :func:`cudadoctor.api.explain`'s job, or the CLI's.

The module is not named ``explain``: ``import cudadoctor.explain`` would replace the function
``cudadoctor.explain`` with the module.
"""

from __future__ import annotations

import textwrap
import traceback
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from cudadoctor.model import Category, Finding, Severity, Snapshot
from cudadoctor.model.printable import printable
from cudadoctor.render.wrap import wrap

if TYPE_CHECKING:  # the checks and the matrix load when something is explained, not at import
    from cudadoctor.matrix import Matrix
    from cudadoctor.checks.signature import Cause
    from cudadoctor.matrix.signatures import SignatureMatch

FORMAT = "cudadoctor.explain"
FORMAT_VERSION = 1
WRAP = 100
VERDICT_WORDS = {"holds": "holds here", "ruled_out": "not the cause here", "cannot_tell": "cannot tell"}
# How the "Checked against ..." line names each kind of machine.
WHERE = {"machine": "this machine (target {})", "recorded": "the recorded machine {}", "facts": "the facts in {}",
         "snapshot": "the snapshot in {}", "given": "the {} given", "host": "the host given (target {})"}


@dataclass(frozen=True)
class Checked:
    """What the causes were judged against."""

    kind: str  # machine | recorded | facts | snapshot | given | host (see WHERE)
    what: str  # the target interpreter, the file or folder replayed, or what was given
    snapshot: Snapshot
    findings: Tuple[Finding, ...]


@dataclass(frozen=True)
class ExplainedMatch:
    """One known error signature found in the message, and the verdict on each of its causes."""

    match: SignatureMatch
    causes: Tuple[Cause, ...]  # most likely first

    @property
    def signature(self) -> str:
        """The signature's stable id, e.g. ``cuda-no-kernel-image``."""
        return self.match.signature.id

    @property
    def title(self) -> str:
        """'the error "no kernel image is available ..." points to a build without code for ...'."""
        from cudadoctor.checks.signature import label, snippet

        return f'the error "{snippet(self.match)}" points to {label(self.match.signature.categories[0])}'

    @property
    def categories(self) -> Tuple[Category, ...]:
        """The possible root causes, most likely first."""
        return self.match.signature.categories

    @property
    def meaning(self) -> str:
        """What the message means, in a few sentences."""
        return self.match.signature.explanation

    @property
    def verify(self) -> Tuple[str, ...]:
        """Commands or checks that tell the causes apart."""
        return self.match.signature.verify

    @property
    def line(self) -> str:
        """The line of the message holding the error."""
        return self.match.line

    @property
    def line_number(self) -> int:
        """The 1-based line of the message where the signature was found."""
        return self.match.line_number

    @property
    def holding(self) -> Tuple[Cause, ...]:
        """The causes that hold on the machine checked."""
        return tuple(c for c in self.causes if c.verdict == "holds")


@dataclass(frozen=True)
class Explanation:
    """The explanation of one error message. ``str()`` gives the text ``cudadoctor explain`` prints."""

    message: str
    matches: Tuple[ExplainedMatch, ...]  # most specific signature first
    checked: Optional[Checked]  # None: not judged against a machine
    data_version: str
    signatures_known: int

    @property
    def matched(self) -> bool:
        """Whether any known error signature is in the message."""
        return bool(self.matches)

    @property
    def findings(self) -> Optional[Tuple[Finding, ...]]:
        """The findings of the machine checked (None when not checked)."""
        return self.checked.findings if self.checked else None

    @property
    def crashed(self) -> bool:
        """A check crashed while judging: ``cudadoctor explain`` then exits 3."""
        return self.checked is not None and any(f.severity is Severity.CRASHED for f in self.checked.findings)

    def text(self, color: bool = False, verbose: bool = False) -> str:
        """The human text of ``cudadoctor explain`` (``verbose``: also where each signature was seen)."""
        return "\n".join(_text(self, color, verbose)) + "\n"

    def __str__(self) -> str:
        return self.text()

    def to_dict(self) -> Dict[str, Any]:
        """The document ``cudadoctor explain --json`` prints (format ``cudadoctor.explain``, version 1)."""
        return _document(self)

    def headline(self) -> Optional[str]:
        """'cudadoctor: this looks like "cuda-no-kernel-image" (...)': one line, or None without a match."""
        if not self.matches:
            return None
        first = self.matches[0]
        holds = first.holding
        why = f"here: {holds[0].label}" if holds else f"most likely {first.causes[0].label}" if first.causes else ""
        return f'cudadoctor: this looks like "{first.signature}"' + (f" ({why})" if why else "")


# ---------------------------------------------------------------------------- building


def message_of(error: Union[str, BaseException]) -> str:
    """The text to match: a string as it is; an exception as Python prints it uncaught (type, message,
    its chained causes and contexts, and the traceback), since the CUDA error often sits in a cause."""
    if not isinstance(error, BaseException):
        return error
    # The exception lines of the chain come first, so that a signature is quoted from
    # "RuntimeError: CUDA error: ..." rather than from the source line that raised it.
    heads: List[str] = []
    seen = set()
    current: Optional[BaseException] = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        heads.extend(traceback.format_exception_only(type(current), current))
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return "".join(heads) + "\n" + "".join(traceback.format_exception(type(error), error, error.__traceback__))


def judge(message: str, snapshot: Snapshot, kind: str, what: str, matrix: Optional[Matrix] = None) -> Checked:
    """Run every check on ``snapshot`` with the message as its ``error_message``."""
    from cudadoctor.checks import run_checks
    from cudadoctor.data.source import default_matrix

    snapshot = replace(snapshot, error_message=message)
    return Checked(kind, what, snapshot, tuple(run_checks(snapshot, matrix or default_matrix())))


def explain_message(message: str, checked: Optional[Checked] = None, matrix: Optional[Matrix] = None) -> Explanation:
    """The explanation of ``message``; its causes judged on ``checked`` when given."""
    from cudadoctor.checks import CHECKS
    from cudadoctor.checks.signature import causes
    from cudadoctor.data.source import default_matrix

    matrix = matrix or default_matrix()
    found = []
    for m in matrix.signatures.match(message):
        judged = causes(m.signature.categories, checked.findings if checked else None,
                        checked.snapshot if checked else None, CHECKS)
        found.append(ExplainedMatch(m, tuple(judged)))
    return Explanation(message, tuple(found), checked, matrix.data_version, len(matrix.signatures.signatures))


# ---------------------------------------------------------------------------- JSON


def _document(e: Explanation) -> Dict[str, Any]:
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
        } for x in e.matches],
        "checked": {"kind": e.checked.kind, "what": e.checked.what} if e.checked else None,
        "findings": to_jsonable(list(e.checked.findings)) if e.checked else None,
    }


# ---------------------------------------------------------------------------- text


def _text(e: Explanation, color: bool, verbose: bool) -> List[str]:
    from cudadoctor.version import __version__
    from cudadoctor.checks.signature import CODES
    from cudadoctor.render.text import BOLD, DIM, GREEN, RED, Style, findings_block

    style = Style(color)
    verdict_color = {"holds": RED, "ruled_out": GREEN, "cannot_tell": DIM}
    out = [style(f"cudadoctor {__version__}", BOLD) + f" · data {e.data_version} · explain", ""]
    if not e.matches:
        first = next((line.strip() for line in e.message.splitlines() if line.strip()), "")
        out.append(style(f"No known error signature matches this text ({e.signatures_known} signatures known).", BOLD))
        out.extend(_wrap("", f"It begins: {printable(first[:200])}"))  # pasted text: escape sequences shown escaped
        out.extend(_wrap("", "Give the complete output, from the first error line on: the line naming the CUDA "
                             "error is often not the last one."))
        out.append("")
    for n, x in enumerate(e.matches, 1):
        m, sig = x.match, x.match.signature
        count = f" {n} of {len(e.matches)}" if len(e.matches) > 1 else ""
        out.append(style(f"Known error{count}: {sig.id}", BOLD) + style(f"  (line {m.line_number})", DIM))
        out.extend(_wrap("", printable(" ".join(m.line.split())[:300])))  # a pasted log may carry escape sequences
        out.extend(_wrap("what", sig.explanation))
        out.append("  possible causes, most likely first:")
        for i, cause in enumerate(x.causes, 1):
            out.append(f"    {i}. {cause.label}")
            if cause.verdict != "not_checked":
                words = style(VERDICT_WORDS[cause.verdict], verdict_color[cause.verdict], BOLD)
                out.extend(_wrap("", f"{words}: {cause.reason}", indent=7))
        out.append("  verify:")
        out.extend(line for v in sig.verify for line in _wrap("", f"- {v}", indent=4, commands=True))
        if verbose:
            out.extend(_wrap("seen", ", ".join(sig.seen_in)))
        out.append("")
    if e.checked is None:
        out.append(style("Not checked against this machine (--no-check).", DIM))
        return out
    where = WHERE.get(e.checked.kind, "{}").format(e.checked.what)
    out.append(style(f"Checked against {where}:", BOLD))
    others = [f for f in e.checked.findings if f.code not in CODES]
    out.extend(findings_block(others, style, verbose))
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

