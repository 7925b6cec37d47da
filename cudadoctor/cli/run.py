"""``cudadoctor run -- COMMAND``: the click face of :mod:`cudadoctor.oncall.run`.

A plain ``cudadoctor run ...`` never comes here: ``cudadoctor.cli.main`` parses it without click.
This command answers ``--help``, lists ``run`` in ``cudadoctor --help``, words the usage errors,
and runs the command when global options come first (``cudadoctor --debug run -- ...``), with
the same behaviour as the fast path.
"""

from __future__ import annotations

from typing import Optional, Tuple

import click

from cudadoctor.errors import CudadoctorError
from cudadoctor.host import DEFAULT_TIMEOUT_S


@click.command(context_settings={"allow_interspersed_args": False, "help_option_names": ["-h", "--help"]})
@click.option("--no-check", is_flag=True, help="Explain a known error without looking at this machine.")
@click.option("--report", "report_file", metavar="FILE",
              help="On a known GPU error, also write a redacted JSON report of this machine to FILE.")
@click.option("--timeout", type=click.FloatRange(min=0.1, max=600), default=DEFAULT_TIMEOUT_S, show_default=True,
              metavar="SECONDS", help="Time limit for each external command of the diagnosis (nvidia-smi, ...).")
@click.option("-q", "--quiet", is_flag=True, help="Never print a diagnosis (the exit status is still the command's).")
@click.option("-v", "--verbose", is_flag=True, help="Also say when a failure shows no known GPU error.")
@click.option("--machine", type=click.Path(file_okay=False), hidden=True, help="Replay a recorded machine folder.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- COMMAND [ARGS]...")
def run(no_check: bool, report_file: Optional[str], timeout: float, quiet: bool, verbose: bool,
        machine: Optional[str], command: Tuple[str, ...]) -> int:
    """Run COMMAND unchanged (its input, output, exit status and signals pass through); if it fails
    with a known GPU error, say why on this machine.

    \b
      cudadoctor run -- python train.py --epochs 3
      cudadoctor run --report gpu-error.json -- torchrun --nproc-per-node 8 train.py
    """
    from cudadoctor.oncall import run as oncall

    if no_check and report_file is not None:
        raise CudadoctorError("--report needs this machine's facts: it does not go with --no-check")
    options = oncall.Options(command, no_check=no_check, report=report_file, timeout=timeout, quiet=quiet,
                             verbose=verbose, machine=machine)
    return oncall.exit_code(oncall.execute(options))
