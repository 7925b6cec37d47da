"""The one ordered table of checks. ``layer`` orders root causes: the machine and its GPU (0),
the driver (1), what the process can see (2), the framework builds against driver and GPU (3),
libraries (4), the toolchain for building extensions (5), hardware health (6), and what only an
error message tells (7)."""

from __future__ import annotations

from typing import List, Tuple

from cudadoctor.checks.base import Check

def _table() -> Tuple[Check, ...]:
    checks: List[Check] = []
    from cudadoctor.checks import access, addons, builds, hardware, horizon, jetson, libraries, signature, smoke, smoke_figures, toolchain

    for module in (access, jetson, builds, addons, horizon, libraries, toolchain, hardware, smoke, smoke_figures, signature):
        checks.extend(module.CHECKS)
    return tuple(checks)


CHECKS: Tuple[Check, ...] = _table()
