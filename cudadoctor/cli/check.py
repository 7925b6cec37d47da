"""``cudadoctor check``: probe this machine, diagnose it, show the verdict, the fixes and the facts.
The options are here; the body is :func:`cudadoctor.cli.check_run.run_check`, which the fast path
runs too."""

from __future__ import annotations

from typing import Optional, Tuple

import click

from cudadoctor.host import DEFAULT_TIMEOUT_S
from cudadoctor.cli.check_run import TIMEOUT_RANGE, run_check
from cudadoctor.cli.output import format_options


@click.command()
@click.argument("checks", nargs=-1, metavar="[CHECK|CODE]...")
@click.option("--list", "list_checks", is_flag=True, help="List the checks and the finding codes each can produce.")
@click.option("--python", "python", metavar="PATH",
              help="Inspect the environment of this interpreter (default: the active venv or conda env).")
@click.option("--timeout", type=click.FloatRange(*TIMEOUT_RANGE), default=DEFAULT_TIMEOUT_S, show_default=True,
              metavar="SECONDS", help="Time limit for each external command (nvidia-smi, nvcc, ...).")
@click.option("--no-checks", is_flag=True, help="Only gather and show the facts.")
@click.option("--no-smoke", is_flag=True, help="Skip the quick smoke tests (they run when a GPU is present).")
@click.option("--machine", type=click.Path(file_okay=False), hidden=True, help="Replay a recorded machine folder.")
@format_options
def check(checks: Tuple[str, ...], list_checks: bool, python: Optional[str], timeout: float, no_checks: bool,
          no_smoke: bool, machine: Optional[str], as_json: bool, fmt: Optional[str], verbose: bool, color: Optional[bool],
          fail_on: str) -> int:
    """Probe the driver, GPUs, toolkits, libraries and framework builds, and say what is wrong."""
    return run_check(checks, list_checks, python, timeout, no_checks, no_smoke, machine, as_json, fmt, verbose, color,
                     fail_on)
