"""Checks: small pure functions ``(snapshot, matrix) -> [Finding]`` in one ordered table.

A check returns nothing when its facts are healthy or unknown (it never guesses), and findings
otherwise. :func:`run_checks` runs the table, turns a check that raises into a ``crashed``
finding instead of aborting, orders the findings so the blocking root cause comes first, reconciles the other findings' fixes
with the root fix (:mod:`.reconcile`), and marks the findings that follow from another one
(``caused_by``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from cudadoctor.model import Category, Finding, Severity, Snapshot
from cudadoctor.checks.base import Check
from cudadoctor.checks.registry import CHECKS
from cudadoctor.checks.reconcile import reconcile

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

__all__ = ["CHECKS", "Check", "run_checks", "all_codes"]

SEVERITY_RANK = {Severity.CRASHED: 0, Severity.ERROR: 1, Severity.WARNING: 2, Severity.INFO: 3, Severity.OK: 4}


def all_codes() -> List[str]:
    """Every finding code any check can produce, in table order."""
    seen: List[str] = []
    for check in CHECKS:
        for code in check.codes:
            if code not in seen:
                seen.append(code)
    return seen


def select(codes: Optional[Sequence[str]]) -> Tuple[Check, ...]:
    """The checks that can produce any of ``codes`` (all when None)."""
    if not codes:
        return CHECKS
    wanted = set(codes)
    return tuple(c for c in CHECKS if wanted & set(c.codes) or c.name in wanted)


def run_checks(snapshot: Snapshot, matrix: Matrix, checks: Iterable[Check] = CHECKS) -> Tuple[Finding, ...]:
    found: List[Tuple[int, int, Finding]] = []
    skip = _not_applicable(snapshot, matrix)
    for position, check in enumerate(checks):
        if check.name in skip:
            continue
        try:
            results = check.fn(snapshot, matrix)
        except Exception as exc:  # a bug in a check must not hide the others
            results = [
                Finding(
                    code=f"{check.name}-crashed",
                    severity=Severity.CRASHED,
                    category=Category.OTHER,
                    title=f"the check {check.name} crashed: {type(exc).__name__}: {exc}",
                    why="This is a bug in cudadoctor, not a problem of this machine. The other checks ran.",
                )
            ]
        found.extend((check.layer, position, f) for f in results)
    ordered = [f for _, _, f in sorted(found, key=lambda t: (SEVERITY_RANK[t[2].severity], t[0], t[1]))]
    return tuple(_mark_consequences(reconcile(ordered, snapshot)))


def _not_applicable(snapshot: Snapshot, matrix: Matrix) -> FrozenSet[str]:
    """The checks whose rules do not hold on this machine (a Jetson's driver is not a desktop
    driver branch: checks/jetson.py). When that cannot be told, every check runs."""
    from cudadoctor.checks.jetson import not_applicable

    try:
        return not_applicable(snapshot, matrix)
    except Exception:  # the data of one table must not stop the diagnosis
        return frozenset()


def _mark_consequences(findings: List[Finding]) -> List[Finding]:
    """A finding whose check lists the category of an earlier error as its cause gets that
    error's code in ``caused_by`` (e.g. a failed torch smoke test after 'no kernel image')."""
    from dataclasses import replace

    by_category: Dict[Category, str] = {}
    for f in findings:
        if f.severity is Severity.ERROR and f.category not in by_category:
            by_category[f.category] = f.code
    out = []
    for f in findings:
        # the finding's own category first: a signature match follows from the real finding it echoes
        causes = sorted(CONSEQUENCES.get(f.code, ()), key=lambda c: c != f.category)
        cause = next((by_category[c] for c in causes if c in by_category and by_category[c] != f.code), None)
        out.append(replace(f, caused_by=cause) if cause and f.caused_by is None else f)
    return out


def _consequences() -> Dict[str, Tuple[Category, ...]]:
    table: Dict[str, Tuple[Category, ...]] = {}
    for check in CHECKS:
        for code in check.codes:
            table[code] = check.consequence_of
    return table


CONSEQUENCES = _consequences()
