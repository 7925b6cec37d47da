"""``cudadoctor smoke``: run real workloads on the GPUs in child processes, then diagnose with their outcome."""

from __future__ import annotations

import dataclasses
import re
import sys
from typing import Dict, Optional, Sequence, Tuple

import click

from cudadoctor.errors import CudadoctorError
from cudadoctor.reports.build import default_suites as default_suites  # re-exported: the command's choice
from cudadoctor.cli.output import emit, exit_code, format_options

TIER_CHOICES = ("quick", "standard", "stress")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*$", re.IGNORECASE)
_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """'90', '90s', '5m', '1.5h' -> seconds; CudadoctorError otherwise."""
    m = _DURATION.match(text)
    if not m or float(m.group(1)) <= 0:
        raise CudadoctorError(f"--duration {text!r}: give a positive number with s, m or h (e.g. 5m)")
    return float(m.group(1)) * _UNIT[m.group(2).lower()]


def parse_gpu_list(text: str) -> Tuple[int, ...]:
    """'0,2' -> (0, 2): indexes among the GPUs the process sees (CUDA_VISIBLE_DEVICES applies)."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or not all(p.isdigit() for p in parts):
        raise CudadoctorError(f"--gpu {text!r}: give GPU indexes separated by commas (e.g. 0,2)")
    return tuple(dict.fromkeys(int(p) for p in parts))


def _suite_paths(items: Sequence[str]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise CudadoctorError(f"--suite-path {item!r}: give SUITE=PATH")
        out[name] = path
    return out




@click.command()
@click.option("--suite", "suites", multiple=True, metavar="NAME",
              help="Run this suite (repeatable): driver, torch, jax, cupy, tensorflow, julia. "
                   "Default: driver plus every installed framework's suite.")
@click.option("--tier", type=click.Choice(TIER_CHOICES), default="quick", show_default=True,
              help="quick: seconds; standard: about a minute (memory pattern, bandwidths, P2P); "
                   "stress: sustained load for --duration.")
@click.option("--gpu", "gpu", metavar="LIST", help="Only these GPUs, e.g. 0,2 (indexes as the process sees them).")
@click.option("--duration", metavar="TIME", help="Stress tier length: 90s, 5m, 1h (default 60s).")
@click.option("--timeout", type=click.FloatRange(min=1, max=86400), default=None, metavar="SECONDS",
              help="Time limit of each suite (default: quick 60, standard 300, stress duration + 120).")
@click.option("--python", "python", metavar="PATH",
              help="Run the suites with this interpreter and inspect its environment (default: the active env).")
@click.option("--suite-path", "suite_paths", multiple=True, hidden=True, metavar="SUITE=PATH",
              help="Run PATH as the file of SUITE (testing).")
@format_options
def smoke(suites: Tuple[str, ...], tier: str, gpu: Optional[str], duration: Optional[str], timeout: Optional[float],
          python: Optional[str], suite_paths: Tuple[str, ...], as_json: bool, fmt: Optional[str], verbose: bool,
          color: Optional[bool], fail_on: str) -> int:
    """Run small real workloads on the GPUs (each suite in its own process) and diagnose with the outcome."""
    from cudadoctor.api import answered, checked_interpreter, collect, diagnose, make_report
    from cudadoctor.smoke import SUITES
    from cudadoctor.smoke.runner import expectations, run_suite

    paths = _suite_paths(suite_paths)
    unknown = [s for s in suites if s not in SUITES and s not in paths]
    if unknown:
        raise CudadoctorError(f"no smoke suite named {unknown[0]!r}", hint=f"suites: {', '.join(SUITES)}")
    gpus = parse_gpu_list(gpu) if gpu is not None else None
    seconds = parse_duration(duration) if duration is not None else None
    if seconds is not None and tier != "stress":
        raise CudadoctorError("--duration applies to the stress tier", hint="add --tier stress")
    python = checked_interpreter(python, None, "--python ")  # a bare name resolved on PATH
    snapshot = collect(python=python)
    # As `check` does: an interpreter that hangs or is not Python is said in seconds, not after
    # every suite ran into it and the driver got the blame (issue 16).
    answered(snapshot, python, "--python ")
    target = python or (snapshot.python.executable if snapshot.python and snapshot.python.executable else None)
    chosen = list(dict.fromkeys(suites)) or default_suites(snapshot)
    results = []
    for name in chosen:
        _progress(f"smoke: {name} ({tier})…")
        results.append(run_suite(name, python=target, tier=tier, gpus=gpus, duration=seconds, timeout=timeout,
                                 path=paths.get(name), extra_args=expectations(name, snapshot)))
    snapshot = dataclasses.replace(snapshot, smoke=tuple(results))
    findings = diagnose(snapshot)
    emit(make_report(snapshot, findings), fmt, as_json, verbose, color)
    return exit_code(findings, fail_on)


def _progress(text: str) -> None:
    """A progress note on stderr, only when a person watches it."""
    try:
        if sys.stderr.isatty():
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
