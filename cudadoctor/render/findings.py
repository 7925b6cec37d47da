"""How findings read: the verdict line, and each problem with its why and its fix. Shared by the
text and markdown renderers, which only lay the same words out differently."""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

from cudadoctor.model import Finding, Severity

MARK = {Severity.ERROR: "✗", Severity.CRASHED: "✗", Severity.WARNING: "!", Severity.INFO: "·", Severity.OK: "✓"}
PROBLEMS = (Severity.CRASHED, Severity.ERROR, Severity.WARNING)
# a fact past what the data reaches (checks/horizon.py, and a GPU it does not know): judged by assumption
HORIZON = ("newer-than-data", "gpu-not-in-data")


def problems(findings: Sequence[Finding]) -> List[Finding]:
    return [f for f in findings if f.severity in PROBLEMS]


def counts(findings: Sequence[Finding]) -> Dict[Severity, int]:
    out: Dict[Severity, int] = {}
    for f in findings:
        out[f.severity] = out.get(f.severity, 0) + 1
    return out


def verdict(findings: Sequence[Finding]) -> Tuple[Severity, str]:
    """The one line a user reads first."""
    found = problems(findings)
    if not found:
        return Severity.OK, "No problems found." + beyond(findings)
    c = counts(found)
    parts = []
    for severity, word in ((Severity.ERROR, "error"), (Severity.WARNING, "warning"), (Severity.CRASHED, "crashed check")):
        if c.get(severity):
            parts.append(f"{c[severity]} {word}{'s' if c[severity] != 1 else ''}")
    first = lead(found)
    if len(found) == 1:
        return found[0].severity, f"1 problem: {first.title}"
    return found[0].severity, f"{len(found)} problems ({', '.join(parts)}); the root cause: {first.title}"


def beyond(findings: Sequence[Finding]) -> str:
    """' N facts are beyond the compatibility data: ...' when a fact was past the data's horizon, so
    a clean verdict is never read as a check of what the data does not know."""
    n = sum(1 for f in findings if f.code in HORIZON)
    if not n:
        return ""
    return f" {n} fact{'s are' if n != 1 else ' is'} beyond the compatibility data: judged by assumption (see below)."


def lead(found: Sequence[Finding]) -> Finding:
    """The problem a user should read first: the first one that follows from no other.
    ``found`` is non-empty and ordered as the checks return it (most severe first)."""
    roots = [f for f in found if f.caused_by is None]
    return roots[0] if roots else found[0]


def fix_lines(f: Finding) -> List[str]:
    """The fix's sentence, then every command. Show them all or none: the commands go together
    (an uninstall without the install after it leaves the environment worse than before)."""
    if f.fix is None:
        return []
    lines = [f.fix.text] if f.fix.text else []
    lines.extend(c.run for c in f.fix.commands)
    return lines
