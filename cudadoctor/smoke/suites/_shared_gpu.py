"""What suites that run at once on the same GPUs share: the timed sections, one at a time.

The quick tier runs its suites concurrently, one child each, so that their imports and CUDA start
overlap (issue 26). Correctness tests may share a GPU; a bandwidth measured while another suite
copies memory would not be the GPU's. So every timed section holds an exclusive ``flock`` on the
file the parent names in ``CUDADOCTOR_SMOKE_LOCK``: timed sections never overlap, the rest does.
Without the variable (a suite run alone, or by hand) the sections run as they are. A section waits
at most ``WAIT_S`` for the lock (a suite hung inside its own section must not hang the others)
and then runs unlocked, and says so (``shared_gpu`` in its metrics).

Standard library only: the suites run under any interpreter.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Dict, Iterator, Optional

LOCK_ENV = "CUDADOCTOR_SMOKE_LOCK"
WAIT_S = 30.0
POLL_S = 0.005


@contextlib.contextmanager
def timed_alone(metrics: Optional[Dict[str, float]] = None) -> Iterator[None]:
    """Hold the run's GPU timing lock (when there is one) for the body of the ``with``."""
    path = os.environ.get(LOCK_ENV)
    try:
        import fcntl
    except ImportError:  # not POSIX: no concurrent runs either
        path = None
    handle = None
    if path:
        try:
            handle = open(path, "a")
        except OSError:
            handle = None
    if handle is None:
        yield
        return
    with handle:
        held = _acquire(handle.fileno())
        if not held and metrics is not None:
            metrics["shared_gpu"] = 1.0
        try:
            yield
        finally:
            if held:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _acquire(fd: int) -> bool:
    import fcntl

    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)
