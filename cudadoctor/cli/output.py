"""What `check` and `diagnose` share: rendering a report and turning findings into an exit code
(click only for the options, so that `check`'s fast path renders without it)."""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Optional, Sequence, TypeVar

from cudadoctor.errors import ExitCode
from cudadoctor.model import Finding, Report, Severity

FORMATS = ("text", "json", "markdown", "line")  # line: the environment and the verdict in one line
FAIL_ON = ("error", "warning", "never")


F = TypeVar("F", bound=Callable[..., Any])


def format_options(fn: F) -> F:
    """--json, --format, -v, --color and --fail-on, shared by check, diagnose and explain."""
    import click  # here, not at the top: `check`'s fast path renders without click

    fn = click.option("--fail-on", type=click.Choice(FAIL_ON), default="error", show_default=True,
                      help="Exit 1 when a finding is at least this severe (for CI).")(fn)
    fn = click.option("--color/--no-color", default=None, help="Colour the text output (default: when a terminal).")(fn)
    fn = click.option("-v", "--verbose", is_flag=True, help="Show every copy, package, variable and note.")(fn)
    fn = click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help="Output format (default text).")(fn)
    fn = click.option("--json", "as_json", is_flag=True, help="Same as --format json.")(fn)
    return fn


def terminal_color(color: Optional[bool]) -> bool:
    """--color/--no-color as given, else colour when stdout is a terminal and NO_COLOR is unset."""
    return color if color is not None else (sys.stdout.isatty() and "NO_COLOR" not in os.environ)


def emit(report: Report, fmt: Optional[str], as_json: bool, verbose: bool, color: Optional[bool]) -> None:
    from cudadoctor.render import RENDERERS

    name = "json" if as_json else (fmt or "text")
    use_color = color if color is not None else (name == "text" and terminal_color(None))
    RENDERERS[name](report, sys.stdout, use_color, verbose)


def exit_code(findings: Sequence[Finding], fail_on: str) -> int:
    """3 when a check crashed, 1 when a finding reaches --fail-on, else 0 (docs/exit-codes.md)."""
    if any(f.severity is Severity.CRASHED for f in findings):
        return ExitCode.INTERNAL
    threshold = {"error": (Severity.ERROR,), "warning": (Severity.ERROR, Severity.WARNING), "never": ()}[fail_on]
    return ExitCode.FINDINGS if any(f.severity in threshold for f in findings) else ExitCode.OK
