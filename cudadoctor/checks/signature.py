"""What only an error message tells: the text a user saw (``Snapshot.error_message``, from
``diagnose --facts`` or ``explain``) matched against the known error signatures of the matrix.

A signature names likely root causes, not facts of this machine, so its finding has low
confidence and severity warning; when a check found a real error, the runner marks the signature
finding as following from it (``consequence_of`` lists every category). :func:`causes` compares
a signature's categories with the findings of the other checks, for ``cudadoctor explain``:
which of the possible causes holds here, which the facts rule out, and which cannot be told
(:mod:`cudadoctor.diagnosis.causes`, re-exported here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List

from cudadoctor.model import Category, Finding, Severity, Snapshot
from cudadoctor.checks.base import Check, finding, ref
from cudadoctor.diagnosis.matching import match as match_text
from cudadoctor.diagnosis.matching import notes as notes
from cudadoctor.diagnosis.matching import SNIPPET
from cudadoctor.diagnosis.matching import snippet as snippet
from cudadoctor.diagnosis.causes import (
    CANNOT_TELL,
    HOLDS,
    MESSAGE_CODES,
    NOT_CHECKED,
    RULED_OUT,
    Cause,
    causes,
    label,
)

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

C = Category

# ---------------------------------------------------------------------------- the checks


def check_error_message(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """Each known signature in the error message: its most likely cause, what to verify."""
    text = snap.error_message
    if not text or not text.strip():
        return []
    out: List[Finding] = []
    for m in match_text(text, matrix):
        sig = m.signature
        others = [label(c) for c in sig.categories[1:]]
        also = f" Less likely: {'; '.join(others)}." if others else ""
        out.append(finding(
            "error-message-match", Severity.WARNING, sig.category,
            f'the error "{snippet(m)}" points to {label(sig.category)}',
            why=f"{sig.explanation}{also} (Matched on line {m.line_number} of the message.)",
            fix="; ".join(f"check: {v}" for v in sig.verify),
            evidence=["error_message"],
            source=[ref("errors.json", sig.id)],
            confidence="low",
        ))
    return out


def check_error_message_unmatched(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """An error message was given, and no known signature is in it: say so, so that nobody
    takes the silence for 'this message is harmless'."""
    text = snap.error_message
    if not text or not text.strip() or match_text(text, matrix):
        return []
    first = next(line.strip() for line in text.splitlines() if line.strip())
    quoted = first if len(first) <= SNIPPET else first[: SNIPPET - 1] + "…"
    return [finding(
        "error-message-unmatched", Severity.INFO, Category.OTHER,
        "the error message matches none of the known error signatures",
        why=f"None of the {len(matrix.signatures.signatures)} error signatures of the compatibility data is in "
            f"the message (it begins: {quoted}). The other findings come from the machine's facts alone.",
        fix="Give the complete output, from the first error line on: the line naming the CUDA error is "
            "often not the last one.",
        evidence=["error_message"],
    )]


CHECKS = (
    Check("error-message", check_error_message, ("error-message-match",), 7,
          "the error message a user saw, matched against known error signatures", tuple(Category)),
    Check("error-message-unmatched", check_error_message_unmatched, ("error-message-unmatched",), 7,
          "an error message that matches no known signature"),
)

CODES = MESSAGE_CODES  # the codes of CHECKS (a test keeps them equal)

__all__ = ["CANNOT_TELL", "CHECKS", "CODES", "HOLDS", "NOT_CHECKED", "RULED_OUT", "Cause", "causes", "label", "notes",
           "snippet"]
