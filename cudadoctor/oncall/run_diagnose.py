"""What ``cudadoctor run`` prints after the command failed (docs/run.md): when its stderr holds a
known GPU error, one header line and the diagnosis of this machine for that error, as
``cudadoctor explain`` words it. Imported only after a failure, so the run itself stays light.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, List, Optional, Sequence, Set, Tuple

from cudadoctor.errors import CudadoctorError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudadoctor.oncall.run import Options

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")  # colours and cursor moves would split a message
CONTEXT_LINES = 3  # kept either side of a match: the signatures' multi-line messages fit
MAX_COMMAND = 80  # characters of the command shown in the header
PYTHON = re.compile(r"python(\d+(\.\d+)*)?$")
SAFE = re.compile(r"[\w@%+=:,./-]+$")  # arguments shown without quotes (as shlex.quote decides)


def diagnose(options: Options, status: int, captured: bytes) -> None:
    """Print the diagnosis for a failed command (wait status ``status``) whose stderr was
    ``captured``; write the --report file. Prints nothing when no known GPU error was seen,
    except one line with --verbose."""
    text = ANSI.sub("", captured.decode("utf-8", "replace")).replace("\r\n", "\n")
    matches = _matches(text) if text.strip() else []
    head = f"{_shown(options.command)} {_how(status)}"
    lead = "" if not captured or captured.endswith(b"\n") else "\n"  # start on a line of our own
    if not matches:
        if options.verbose and not options.quiet:
            _write(f"{lead}cudadoctor: {head}; no known GPU error in its error output\n")
        return
    excerpt = _excerpt(text, [m.line_number for m in matches], [m.line.count("\n") for m in matches])
    python = _target_python(options.command) if options.machine is None else None
    color = sys.stderr.isatty() and "NO_COLOR" not in os.environ
    try:
        lines, checked = explanation(excerpt, options, python, color)
    except CudadoctorError as exc:  # e.g. a --machine folder without machine.json
        _write(f"{lead}cudadoctor: {head} with a known GPU error: {matches[0].signature.id}\n"
               f"cudadoctor: error: {exc.message}\n" + (f"  hint: {exc.hint}\n" if exc.hint else ""))
        return
    if not options.quiet:
        _write(f"{lead}cudadoctor: {head} with a known GPU error: {matches[0].signature.id}\n"
               + "\n".join(lines) + "\n")
    if options.report is not None and checked is not None:
        _write_report(options.report, checked, options.quiet)


def _matches(text: str) -> List[Any]:
    from cudadoctor.data.source import default_matrix
    from cudadoctor.diagnosis.matching import match

    return match(text, default_matrix())


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        import signal

        sig = os.WTERMSIG(status)
        try:
            name = f" ({signal.Signals(sig).name})"
        except ValueError:
            name = ""
        return f"was killed by signal {sig}{name}"
    return f"failed (exit {os.waitstatus_to_exitcode(status)})"


def _shown(command: Sequence[str]) -> str:
    """The command for the header, on one line: for reading, not for pasting into a shell."""
    text = " ".join(a if a and SAFE.match(a) else '"' + a.replace("\\", "\\\\").replace('"', '\\"') + '"'
                    for a in command)
    text = " ".join(text.split())
    if len(text) > MAX_COMMAND:
        text = text[:MAX_COMMAND - 1] + "…"
    return f"'{text}'"


def _excerpt(text: str, line_numbers: Sequence[int], extra_lines: Sequence[int]) -> str:
    """The lines around each match, in order: what is explained, and what a --report keeps of
    the output (not megabytes of log)."""
    lines = text.split("\n")
    wanted: Set[int] = set()
    for number, extra in zip(line_numbers, extra_lines):
        first = max(0, number - 1 - CONTEXT_LINES)
        wanted.update(range(first, min(len(lines), number + extra + CONTEXT_LINES)))
    return "\n".join(lines[i] for i in sorted(wanted))


def _target_python(command: Sequence[str]) -> Optional[str]:
    """The interpreter the command ran (`python train.py`), so that the diagnosis inspects its
    environment; None for any other command (then the active venv or conda env is inspected)."""
    import shutil

    if not PYTHON.match(os.path.basename(command[0])):
        return None
    return shutil.which(command[0])


def explanation(message: str, options: Options, python: Optional[str], color: bool) -> Tuple[List[str], Any]:
    """The text ``cudadoctor explain`` prints for ``message`` (less its title line) and what the
    causes were checked against (None with --no-check): the one place that calls the explain logic."""
    from cudadoctor.api import explain
    from cudadoctor.host import DEFAULT_TIMEOUT_S
    from cudadoctor.host.recorded import replay

    timeout = options.timeout if options.timeout is not None else DEFAULT_TIMEOUT_S
    result = explain(message, check=not options.no_check, python=python, timeout=timeout,
                     host=replay(options.machine))
    lines = result.text(color, options.verbose).rstrip("\n").split("\n")
    if lines and ANSI.sub("", lines[0]).startswith("cudadoctor "):
        lines = lines[1:]  # the title: our header line replaces it
    return lines, result.checked



def _write_report(path: str, checked: Any, quiet: bool) -> None:
    """A redacted JSON report of the machine, with the error lines in it (`error_message`)."""
    from cudadoctor.api import make_report
    from cudadoctor.reports.node import node_name
    from cudadoctor.reports.build import finish_report
    from cudadoctor.render import render_report

    result = finish_report(make_report(checked.snapshot, checked.findings), node=node_name(checked.snapshot))
    text = render_report(result, "json")
    try:
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
    except OSError as exc:
        _write(f"cudadoctor: error: --report {path}: {exc.strerror or exc}\n")
        return
    if not quiet:
        _write(f"cudadoctor: wrote a redacted report to {path}\n")


def _write(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()
