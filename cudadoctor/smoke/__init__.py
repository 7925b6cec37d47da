"""Smoke suites: small real workloads on every visible GPU, each run in its own child process.

A suite is a file in ``suites/`` that runs as a plain script under the target interpreter (which
need not have cudadoctor installed) and prints exactly one JSON line (``_protocol`` holds the
format and the shared helpers). :mod:`.runner` spawns the suites, bounds them with a timeout and
turns whatever happened (a clean line, an exception, a signal, a hang, garbage) into a
:class:`~cudadoctor.model.SmokeResult`. docs/smoke.md describes each suite and the tiers.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing: importing it costs ~4 ms on `cudadoctor run`'s fast path
if TYPE_CHECKING:
    from typing import Dict, Tuple

SUITES: Tuple[str, ...] = ("driver", "torch", "jax", "cupy", "tensorflow", "julia")
"""Every suite, in the order they run (the driver first: it needs no framework)."""

SUITE_FILES: Dict[str, str] = {name: f"{name}_suite.py" for name in SUITES}
"""Suite name -> its file name in this folder."""

TIERS: Tuple[str, ...] = ("quick", "standard", "stress")

FRAMEWORK_OF: Dict[str, str] = {"torch": "torch", "jax": "jax", "cupy": "cupy", "tensorflow": "tensorflow",
                                "julia": "julia"}
"""Suite -> the Snapshot framework name whose presence makes the suite worth running by default."""


def suite_path(name: str) -> str:
    """The absolute path of suite ``name``'s file (KeyError for an unknown suite)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "suites", SUITE_FILES[name])
