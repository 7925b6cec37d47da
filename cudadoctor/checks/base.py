"""What every check module uses: the Check record and small helpers over the Snapshot."""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple
from cudadoctor.record import frozen

from cudadoctor.model import Category, Finding, Fix, FixCommand, FrameworkBuild, Gpu, Severity, Snapshot

CheckFn = Callable[[Snapshot, Any], List[Finding]]


@frozen
class Check:
    name: str  # kebab-case, for `check NAME` and `check --list`
    fn: CheckFn
    codes: Tuple[str, ...]  # every finding code it may produce
    layer: int
    summary: str
    consequence_of: Tuple[Category, ...] = ()  # an error of these categories explains its findings


def finding(
    code: str,
    severity: Severity,
    category: Category,
    title: str,
    why: str = "",
    fix: Optional[str] = None,
    commands: Sequence[str] = (),
    evidence: Sequence[str] = (),
    source: Sequence[str] = (),
    confidence: str = "high",
) -> Finding:
    return Finding(
        code=code,
        severity=severity,
        category=category,
        title=title,
        why=why,
        fix=Fix(fix or "", tuple(FixCommand(c) for c in commands)) if fix or commands else None,
        evidence=tuple(evidence),
        source=tuple(source),
        confidence=confidence,
    )


def os_of(snap: Snapshot) -> str:
    """linux or windows: the OS whose driver tables apply (WSL2 uses the Windows driver)."""
    host = snap.host
    if host is None:
        return "linux"
    if host.os == "windows" or host.wsl:
        return "windows"
    return "linux"


def gpus(snap: Snapshot) -> Tuple[Gpu, ...]:
    return snap.gpus or ()


def cuda_builds(snap: Snapshot) -> List[FrameworkBuild]:
    return [b for b in snap.frameworks or () if b.variant == "cuda"]


def driver_version(snap: Snapshot) -> Optional[str]:
    return snap.driver.driver_version if snap.driver else None


def ref(table: str, key: object) -> str:
    """A compat_data record reference for Finding.source: 'cuda_toolkits.json#12.4.0'."""
    return f"{table}#{key}"
