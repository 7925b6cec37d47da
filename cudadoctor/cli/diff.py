"""``cudadoctor diff A B``: the differences that matter between two reports or snapshots.

It is a report, not a test: it exits 0 whether or not the two differ; 2 when a file is missing, is
not JSON, or is not a cudadoctor snapshot or report (docs/exit-codes.md).
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, Optional

import click

from cudadoctor.reports.diff import Side, compare
from cudadoctor.errors import CudadoctorError, ExitCode
from cudadoctor.render import diff as render
from cudadoctor.model.serialize import ENVELOPE_FORMAT
from cudadoctor.cli.diagnose import _read_json
from cudadoctor.cli.output import terminal_color

FORMATS = ("text", "markdown", "json")


@click.command()
@click.argument("file_a", metavar="A")
@click.argument("file_b", metavar="B")
@click.option("--all", "include_noise", is_flag=True,
              help="Also show noise: timestamps, durations, memory used, temperatures, UUIDs, paths, versions of cudadoctor.")
@click.option("--rediagnose", is_flag=True,
              help="Diagnose both with today's checks instead of using the findings the files carry.")
@click.option("--no-redact", is_flag=True,
              help="Compare and show the values as they are (default: both reports are redacted as `cudadoctor report` does).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help="Output format (default text).")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json: a list of {section, key, a, b}.")
@click.option("--color/--no-color", default=None, help="Colour the text output (default: when a terminal).")
def diff(file_a: str, file_b: str, include_noise: bool, rediagnose: bool, no_redact: bool, fmt: Optional[str],
         as_json: bool, color: Optional[bool]) -> int:
    """Compare two reports or snapshots (A: where it works, B: where it fails; '-' for stdin).

    A and B are `cudadoctor check --json` or `report --format json` output, or bare snapshots. A
    file without findings is diagnosed with today's checks. Exits 0 whether or not they differ."""
    if file_a == "-" and file_b == "-":
        raise CudadoctorError("only one of A and B can be '-' (stdin)")
    sides = [load_side(path, rediagnose) for path in (file_a, file_b)]
    if not no_redact:
        sides = [redacted(side) for side in sides]
    comparison = compare(sides[0], sides[1], include_noise)
    name = "json" if as_json else (fmt or "text")
    if name == "json":
        render.render_diff_json(comparison, sys.stdout)
    elif name == "markdown":
        render.render_diff_markdown(comparison, sys.stdout)
    else:
        use_color = terminal_color(color)
        render.render_diff_text(comparison, sys.stdout, use_color)
    return ExitCode.OK


def load_side(path: str, rediagnose: bool = False) -> Side:
    """One side of the comparison from a file: its snapshot, and its findings when it carries them
    (else today's). One-line usage errors for anything that is not a snapshot or report."""
    from cudadoctor.api import diagnose, make_report
    from cudadoctor.model.reader import report_parts
    from cudadoctor.reports.build import with_versions
    from cudadoctor.model.serialize import SnapshotError

    data = _read_json(path)  # JSON, or the Markdown of `cudadoctor report` (its JSON block)
    if not isinstance(data, dict):
        raise CudadoctorError(f"{path}: not a cudadoctor snapshot or report (a JSON {_kind(data)}, not an object)")
    fmt = data.get("format")
    if fmt is not None and fmt != ENVELOPE_FORMAT:
        raise CudadoctorError(f"{path}: not a cudadoctor snapshot or report (format {str(fmt)[:40]!r})")
    envelope = fmt == ENVELOPE_FORMAT
    facts = data.get("snapshot") if envelope else data
    if not isinstance(facts, dict) or not set(facts) - {"schema_version"}:
        raise CudadoctorError(f"{path}: not a cudadoctor snapshot or report (no snapshot facts in it)")
    try:
        snapshot, findings, versions = report_parts(data, keep_findings=envelope and not rediagnose)
    except SnapshotError as exc:
        raise CudadoctorError(f"{path}: not a cudadoctor snapshot or report: {exc}") from None
    if findings is None:
        why = "--rediagnose" if rediagnose else "the file has no findings"
        return Side(path, make_report(snapshot, diagnose(snapshot)), diagnosed_now=why)
    report = make_report(snapshot, findings)
    if len(versions) == 2:  # both the tool and the data version of the file
        report = with_versions(report, versions)
    return Side(path, report)


def redacted(side: Side) -> Side:
    """The side with usernames, hostnames, home directories, GPU UUIDs and secrets replaced, as in
    `cudadoctor report`: the output is safe to paste, and a report redacted when it was saved
    compares with one that was not."""
    from cudadoctor.reports.redact import redact

    report, summary = redact(side.report)
    return dataclasses.replace(side, report=report, redacted=summary.describe() if summary.total else "")


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    return "boolean" if isinstance(value, bool) else "number"
