"""``cudadoctor check``: probe this machine and show its GPU stack."""

from __future__ import annotations

import os
import sys
from typing import Optional

import click

from ..errors import CudadoctorError, ExitCode
from ..host import DEFAULT_TIMEOUT_S, Host


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the full JSON envelope instead of text.")
@click.option(
    "--python",
    "python",
    metavar="PATH",
    help="Inspect the environment of this interpreter (default: the one running cudadoctor).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1, max=600),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    metavar="SECONDS",
    help="Time limit for each external command (nvidia-smi, nvcc, ...).",
)
@click.option("-v", "--verbose", is_flag=True, help="Show every copy, package and variable found.")
@click.option("--color/--no-color", default=None, help="Colour the text output (default: when a terminal).")
@click.option("--machine", type=click.Path(file_okay=False), hidden=True, help="Replay a recorded machine folder.")
def check(
    as_json: bool,
    python: Optional[str],
    timeout: float,
    verbose: bool,
    color: Optional[bool],
    machine: Optional[str],
) -> int:
    """Probe the driver, GPUs, toolkits, libraries and framework builds of this machine."""
    from ..api import collect, make_report
    from ..render import RENDERERS

    host = _host(machine)
    if python is not None and machine is None and not os.path.exists(python):
        raise CudadoctorError(f"--python {python}: no such file", hint="give the path of a Python interpreter")
    snapshot = collect(python=python, timeout=timeout, host=host)
    if python is not None and snapshot.python is None:
        reason = snapshot.errors_of("python")
        raise CudadoctorError(
            f"--python {python} did not answer as a Python interpreter"
            + (f": {reason[0].detail}" if reason else ""),
        )
    report = make_report(snapshot)
    use_color = color if color is not None else (sys.stdout.isatty() and "NO_COLOR" not in os.environ)
    RENDERERS["json" if as_json else "text"](report, sys.stdout, use_color, verbose)
    return ExitCode.OK


def _host(machine: Optional[str]) -> Optional[Host]:
    if machine is None:
        return None
    from ..recorded import RecordedHost

    if not os.path.isfile(os.path.join(machine, "machine.json")):
        raise CudadoctorError(f"--machine {machine}: no machine.json in that folder")
    return RecordedHost.load(machine)
