"""What an error message means: the known error signatures in it, each one's possible causes most
likely first, and which of them holds on the machine checked (``cudadoctor explain``,
``cudadoctor.explain()``, the excepthook).

Pure once the machine's facts are in hand: :func:`explain_message` takes the message and an
optional :class:`Checked` (a snapshot, its findings and the checks that ran) and returns an
:class:`Explanation`, whose ``text()`` is what ``cudadoctor explain`` prints and whose
``to_dict()`` is its ``--json`` (both drawn by :mod:`cudadoctor.diagnosis.explanation_text`).
Probing and running the checks (to build a :class:`Checked`) is :func:`cudadoctor.api.judge`'s job.

The module is not named ``explain``: ``import cudadoctor.explain`` would replace the function
``cudadoctor.explain`` with the module.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union
from cudadoctor.record import frozen

from cudadoctor.model import Category, Finding, Severity, Snapshot

if TYPE_CHECKING:  # the matrix loads when something is explained, not at import
    from cudadoctor.matrix import Matrix
    from cudadoctor.diagnosis.causes import Cause, Check
    from cudadoctor.matrix.signatures import SignatureMatch



# What a Checked of these kinds holds is some of a machine's facts, not all of them.
PARTIAL = frozenset({"facts", "paste"})


@frozen
class Checked:
    """What the causes were judged against."""

    kind: str  # machine | recorded | facts | snapshot | given | host | paste (see WHERE)
    what: str  # the target interpreter, the file or folder replayed, or what was given
    snapshot: Snapshot
    findings: Tuple[Finding, ...]
    checks: Tuple["Check", ...] = ()  # the checks that ran (a cause none of them can see is never ruled out)


@frozen
class ExplainedMatch:
    """One known error signature found in the message, and the verdict on each of its causes."""

    match: SignatureMatch
    causes: Tuple[Cause, ...]  # most likely first
    notes: Tuple[str, ...] = ()  # what the text and the facts add: who holds the memory, the package of a library

    @property
    def signature(self) -> str:
        """The signature's stable id, e.g. ``cuda-no-kernel-image``."""
        return self.match.signature.id

    @property
    def title(self) -> str:
        """'the error "no kernel image is available ..." points to a build without code for ...'."""
        from cudadoctor.diagnosis.causes import label
        from cudadoctor.diagnosis.matching import snippet

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


@frozen
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

    @property
    def other_findings(self) -> Tuple[Finding, ...]:
        """The findings of the machine checked, less those of the message itself."""
        from cudadoctor.diagnosis.causes import MESSAGE_CODES

        return tuple(f for f in self.checked.findings if f.code not in MESSAGE_CODES) if self.checked else ()

    def text(self, color: bool = False, verbose: bool = False) -> str:
        """The human text of ``cudadoctor explain`` (``verbose``: also where each signature was seen)."""
        from cudadoctor.diagnosis.explanation_text import explanation_text

        return explanation_text(self, color, verbose)

    def __str__(self) -> str:
        return self.text()

    def to_dict(self) -> Dict[str, Any]:
        """The document ``cudadoctor explain --json`` prints (format ``cudadoctor.explain``, version 1)."""
        from cudadoctor.diagnosis.explanation_text import explanation_document

        return explanation_document(self)

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


def explain_message(message: str, checked: Optional[Checked], matrix: Matrix) -> Explanation:
    """The explanation of ``message``; its causes judged on ``checked`` when given."""
    from cudadoctor.diagnosis.causes import causes
    from cudadoctor.diagnosis.matching import match, notes

    found = []
    for m in match(message, matrix):
        judged = causes(m.signature.categories, checked.findings if checked else None,
                        checked.snapshot if checked else None, checked.checks if checked else (),
                        partial=checked is not None and checked.kind in PARTIAL, other=m.signature.other,
                        container_first=m.signature.container_first)
        said = notes(m, message, matrix, checked.snapshot if checked else None)
        found.append(ExplainedMatch(m, tuple(judged), said))
    return Explanation(message, tuple(found), checked, matrix.data_version, len(matrix.signatures.signatures))
