"""The one top-level handler: every failure becomes an exit code and at most a few lines on stderr
(a traceback only with ``--debug``). Free of click, so that the fast paths use it too."""

from __future__ import annotations

import sys

from cudadoctor.errors import CudadoctorError, ExitCode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, List


def guarded(call: "Callable[[], int]", args: "List[str]") -> int:
    """``call()``'s exit code; a CudadoctorError, an interruption, a closed pipe or a bug become one."""
    try:
        return call()
    except CudadoctorError as exc:
        # the message may quote outside text (an interpreter's stderr, a file's content): escaped
        from cudadoctor.model.printable import printable

        sys.stderr.write(f"cudadoctor: error: {printable(exc.message)}\n")
        if exc.hint:
            sys.stderr.write(f"  hint: {printable(exc.hint)}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("cudadoctor: interrupted\n")
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        return ExitCode.OK
    except Exception as exc:  # a bug: say so in one line, traceback only with --debug
        if "--debug" in args:
            import traceback

            traceback.print_exc()
        sys.stderr.write(
            f"cudadoctor: internal error: {type(exc).__name__}: {exc}\n"
            "  please report it with the output of: cudadoctor --debug " + " ".join(a for a in args if a != "--debug") + "\n"
        )
        return ExitCode.INTERNAL
