"""``cudadoctor docker FILE...``: check Dockerfiles, compose files and ``docker run`` lines
against this machine's driver and GPUs, a described machine (--driver, --gpu) or a saved report
(docs/docker.md). Exit codes as ``check``: 1 when a finding reaches --fail-on."""

from __future__ import annotations

import sys
from typing import Any, Dict, Optional, Tuple

import click

from cudadoctor.cli.output import FAIL_ON, exit_code, terminal_color
from cudadoctor.host import DEFAULT_TIMEOUT_S


@click.command()
@click.argument("files", nargs=-1, required=True, metavar="FILE...", type=click.Path(dir_okay=False))
@click.option("--driver", metavar="VERSION", help="Judge against a host with this NVIDIA driver (e.g. 535.104.05).")
@click.option("--gpu", "gpus", multiple=True, metavar="NAME", help="...with this GPU (repeatable): 'A100', 'RTX 4090'.")
@click.option("--report", "report_path", metavar="FILE", type=click.Path(dir_okay=False),
              help="Judge against the machine of a saved report (cudadoctor report --format json).")
@click.option("--machine", type=click.Path(file_okay=False), hidden=True, help="Replay a recorded machine folder.")
@click.option("--timeout", type=click.FloatRange(min=0.1, max=600), default=DEFAULT_TIMEOUT_S, show_default=True,
              metavar="SECONDS", help="Time limit for each probe command (this machine only).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("-v", "--verbose", is_flag=True, help="Show the why of notes too.")
@click.option("--color/--no-color", default=None, help="Colour the text output (default: when a terminal).")
@click.option("--fail-on", type=click.Choice(FAIL_ON), default="error", show_default=True,
              help="Exit 1 when a finding is at least this severe (for CI).")
def docker(files: Tuple[str, ...], driver: Optional[str], gpus: Tuple[str, ...], report_path: Optional[str],
           machine: Optional[str], timeout: float, as_json: bool, verbose: bool, color: Optional[bool],
           fail_on: str) -> int:
    """Check Dockerfiles, compose files and docker run lines: base image CUDA vs the host driver,
    pip torch builds, GPU requests, /dev/shm, visible devices. Each finding has its line."""
    from cudadoctor import api
    from cudadoctor.host.recorded import replay
    from cudadoctor.render.docker import render_docker_json, render_docker_text

    described = driver is not None or bool(gpus)  # a report wins over a described machine, which wins over this one
    target: Optional[Dict[str, Any]] = {"driver": driver, "gpus": list(gpus), "gpu": True} if described else None
    host = replay(machine) if not (described or report_path) else None
    result = api.docker(list(files), target, report=report_path, timeout=timeout, host=host)
    if as_json:
        render_docker_json(result, sys.stdout)
    else:
        render_docker_text(result, sys.stdout, terminal_color(color), verbose)
    return exit_code([loc.finding for loc in result.findings], fail_on)
