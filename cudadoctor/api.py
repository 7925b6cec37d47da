"""The library surface the CLI calls: plain functions over typed values."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

from . import __version__
from .datadir import data_info
from .host import DEFAULT_TIMEOUT_S, Host, RealHost
from .model import Finding, Report, Snapshot


def collect(
    python: Optional[str] = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    host: Optional[Host] = None,
    only: Optional[Sequence[str]] = None,
) -> Snapshot:
    """Probe this machine (or ``host``) for the stack of the interpreter ``python``."""
    from .probes import collect as run_probes

    return run_probes(host or RealHost(), python=python, timeout=timeout, only=only)


def diagnose(snapshot: Snapshot, only: Optional[Sequence[str]] = None, matrix: Any = None) -> Tuple[Finding, ...]:
    """Run the checks (all, or those producing the codes or named in ``only``) on a snapshot.
    Pure: the same snapshot and data give the same findings."""
    from .checks import run_checks, select
    from .matrix import default_matrix

    return run_checks(snapshot, matrix or default_matrix(), select(only))


def make_report(snapshot: Snapshot, findings: Optional[Sequence[Finding]] = None) -> Report:
    """A report; ``findings=None`` means the checks did not run (probe facts only)."""
    info = data_info()
    return Report(snapshot=snapshot, tool_version=__version__, data_version=info.data_version if info else "unknown",
                  data_origin=info.origin if info else None,
                  findings=tuple(findings or ()), checked=findings is not None)
