"""The ``cudadoctor`` command: a small click group, one module per command, one error handler."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~3 ms to import, a sixth of `cudadoctor run`'s budget
    from typing import List, NoReturn, Optional


def version_line() -> str:
    from cudadoctor.cli import _version

    return _version.line()


def main(argv: Optional[List[str]] = None) -> NoReturn:
    args = sys.argv[1:] if argv is None else list(argv)
    if args == ["--version"]:  # answered without importing click: it is on every bug report
        sys.stdout.write(version_line() + "\n")
        sys.exit(0)
    if args[:1] == ["run"]:
        # `cudadoctor run -- CMD` wraps every run of a job: start CMD without importing click.
        # Anything its small parser does not take (--help, a bad value) goes to click below.
        from cudadoctor.oncall import run as oncall

        options = oncall.parse(args[1:])
        if options is not None:
            oncall.main(options)
    if args[:1] == ["check"]:
        # the command people run most: the common command lines are parsed without click
        from cudadoctor.cli.check_run import fast_check

        code = fast_check(args[1:])
        if code is not None:
            sys.exit(code)
    from cudadoctor.cli.app import run

    sys.exit(run(args))
