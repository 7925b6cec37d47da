"""``cudadoctor diagnose``: replay a saved snapshot or report, or a user's facts, with today's data."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import click

from cudadoctor.errors import CudadoctorError
from cudadoctor.cli.output import emit, exit_code, format_options


@click.command()
@click.argument("file", required=False, metavar="FILE")
@click.option("--facts", "facts_file", metavar="FILE",
              help="A flat JSON of facts from a bug report (keys: docs/facts.md) instead of a snapshot.")
@click.argument("checks", nargs=-1, metavar="[CHECK|CODE]...")
@format_options
def diagnose(file: Optional[str], facts_file: Optional[str], checks: Tuple[str, ...], as_json: bool,
             fmt: Optional[str], verbose: bool, color: Optional[bool], fail_on: str) -> int:
    """Diagnose a saved snapshot or report (FILE, '-' for stdin), or --facts FILE.

    FILE may also be the Markdown of `cudadoctor report`: its JSON block is read."""
    from cudadoctor.api import diagnose as run_diagnosis, make_report
    from cudadoctor.model.facts import snapshot_from_facts, usable
    from cudadoctor.model.serialize import SnapshotError, snapshot_from_dict

    if (file is None) == (facts_file is None):
        raise CudadoctorError("give a snapshot or report FILE, or --facts FILE (one of them)")
    path = facts_file or file
    assert path is not None
    data = _read_json(path)
    try:
        snapshot = snapshot_from_facts(data) if facts_file else snapshot_from_dict(data)
    except SnapshotError as exc:
        raise CudadoctorError(f"{path}: {exc}") from None
    if facts_file and not usable(snapshot):
        raise CudadoctorError(f"{path}: no fact cudadoctor can judge (a driver, GPU, framework build, toolkit, "
                              "library or error message)", hint="see docs/facts.md, or run `cudadoctor report` "
                              "on the machine and diagnose that")
    from cudadoctor.cli.check_run import known_checks

    known_checks(checks)
    findings = run_diagnosis(snapshot, only=checks or None)
    emit(make_report(snapshot, findings), fmt, as_json, verbose, color)
    return exit_code(findings, fail_on)


def _read_json(path: str) -> Any:
    """A JSON file, stdin for '-', or the JSON block of a Markdown report of `cudadoctor report`:
    through the one reader (size cap, encodings, newer formats refused)."""
    from cudadoctor.api import read_json

    return read_json(path, markdown=True)
