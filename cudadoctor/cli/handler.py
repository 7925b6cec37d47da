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
    except OSError as exc:  # the machine's, not ours: a full disk, a closed or unwritable output
        _quiet_stdout()
        sys.stderr.write(f"cudadoctor: error: {exc.strerror or exc}"
                         + (f": {exc.filename}" if exc.filename else " (writing the output)") + "\n")
        return ExitCode.USAGE
    except RecursionError:
        sys.stderr.write("cudadoctor: error: the input is nested too deep to read\n")
        return ExitCode.USAGE
    except Exception as exc:  # a bug: say so in one line, traceback only with --debug
        data_error = _data_error(exc)
        if data_error:
            sys.stderr.write(f"cudadoctor: error: the compatibility data cannot be read: {data_error}\n"
                             "  hint: check CUDADOCTOR_DATA_DIR or --data (or leave them out to use the data shipped "
                             "with cudadoctor)\n")
            return ExitCode.USAGE
        if "--debug" in args:
            import traceback

            traceback.print_exc()
        sys.stderr.write(
            f"cudadoctor: internal error: {type(exc).__name__}: {exc}\n"
            "  please report it with the output of: cudadoctor --debug " + " ".join(a for a in args if a != "--debug") + "\n"
        )
        return ExitCode.INTERNAL


def _data_error(exc: BaseException) -> str:
    """The one line of a broken or missing data folder (a DataError), or ""."""
    from cudadoctor.matrix.load import DataError
    from cudadoctor.model.printable import printable

    return printable(" ".join(str(exc).split()))[:300] if isinstance(exc, DataError) else ""


def _quiet_stdout() -> None:
    """After a failed write: nothing more goes to that stream (the exit's flush would fail again)."""
    import os

    try:
        sys.stdout = open(os.devnull, "w")
    except OSError:
        pass
