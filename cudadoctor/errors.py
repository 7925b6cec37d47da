"""One error type for expected failures, and the documented exit codes (docs/exit-codes.md)."""

from __future__ import annotations

import enum
from typing import Optional


class ExitCode(enum.IntEnum):
    OK = 0  # healthy: no finding at or above --fail-on
    FINDINGS = 1  # error findings (or warnings with --fail-on warning)
    USAGE = 2  # bad command line or unreadable input
    INTERNAL = 3  # a bug in cudadoctor
    INTERRUPTED = 130  # Ctrl-C


class CudadoctorError(Exception):
    """An expected failure: printed as one line (plus a hint), never as a traceback."""

    def __init__(self, message: str, hint: Optional[str] = None, exit_code: ExitCode = ExitCode.USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code
