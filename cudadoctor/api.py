"""The library surface the CLI calls: plain functions over typed values."""

from __future__ import annotations

from typing import Optional, Sequence

from . import __version__
from .datadir import data_version
from .host import DEFAULT_TIMEOUT_S, Host, RealHost
from .model import Report, Snapshot


def collect(
    python: Optional[str] = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    host: Optional[Host] = None,
    only: Optional[Sequence[str]] = None,
) -> Snapshot:
    """Probe this machine (or ``host``) for the stack of the interpreter ``python``."""
    from .probes import collect as run_probes

    return run_probes(host or RealHost(), python=python, timeout=timeout, only=only)


def make_report(snapshot: Snapshot) -> Report:
    return Report(snapshot=snapshot, tool_version=__version__, data_version=data_version())
