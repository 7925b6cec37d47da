"""``cudadoctor check``: probe this machine, diagnose it, show the verdict, the fixes and the facts."""

from __future__ import annotations

from typing import Optional, Tuple

import click

from cudadoctor.errors import CudadoctorError, ExitCode
from cudadoctor.host import DEFAULT_TIMEOUT_S
from cudadoctor.cli.output import emit, exit_code, format_options


@click.command()
@click.argument("checks", nargs=-1, metavar="[CHECK|CODE]...")
@click.option("--list", "list_checks", is_flag=True, help="List the checks and the finding codes each can produce.")
@click.option("--python", "python", metavar="PATH",
              help="Inspect the environment of this interpreter (default: the active venv or conda env).")
@click.option("--timeout", type=click.FloatRange(min=0.1, max=600), default=DEFAULT_TIMEOUT_S, show_default=True,
              metavar="SECONDS", help="Time limit for each external command (nvidia-smi, nvcc, ...).")
@click.option("--no-checks", is_flag=True, help="Only gather and show the facts.")
@click.option("--no-smoke", is_flag=True, help="Skip the quick smoke tests (they run when a GPU is present).")
@click.option("--machine", type=click.Path(file_okay=False), hidden=True, help="Replay a recorded machine folder.")
@format_options
def check(checks: Tuple[str, ...], list_checks: bool, python: Optional[str], timeout: float, no_checks: bool,
          no_smoke: bool, machine: Optional[str], as_json: bool, fmt: Optional[str], verbose: bool, color: Optional[bool],
          fail_on: str) -> int:
    """Probe the driver, GPUs, toolkits, libraries and framework builds, and say what is wrong."""
    from cudadoctor.api import checked_report

    if list_checks:
        return _list()
    _known(checks)
    from cudadoctor.host.recorded import replay

    report = checked_report(python=python, timeout=timeout, host=replay(machine), only=checks or None,
                            checks=not no_checks, smoke=not (no_smoke or no_checks or checks or machine),
                            option="--python ", strict_python=True)
    emit(report, fmt, as_json, verbose, color)
    return exit_code(report.findings, fail_on)


def _list() -> int:
    from cudadoctor.checks import CHECKS

    for c in CHECKS:
        click.echo(f"{c.name:<26} {c.summary}")
        click.echo(f"{'':<26} codes: {', '.join(c.codes)}")
    return ExitCode.OK


def _known(names: Tuple[str, ...]) -> None:
    if not names:
        return
    from cudadoctor.checks import CHECKS, all_codes

    known = set(all_codes()) | {c.name for c in CHECKS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise CudadoctorError(f"no check or finding code {unknown[0]!r}", hint="cudadoctor check --list")

