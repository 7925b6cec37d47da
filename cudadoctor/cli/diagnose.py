"""``cudadoctor diagnose``: replay a saved snapshot or report, a user's facts, or read what a person
pasted (a GitHub issue's body, a log, collect_env, nvidia-smi, pip list ...), with today's data."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Optional, Tuple

import click

from cudadoctor.errors import CudadoctorError, ExitCode
from cudadoctor.cli.output import emit, exit_code, format_options, terminal_color


@click.command()
@click.argument("file", required=False, metavar="FILE")
@click.option("--facts", "facts_file", metavar="FILE",
              help="A flat JSON of facts from a bug report (keys: docs/facts.md) instead of a snapshot.")
@click.argument("checks", nargs=-1, metavar="[CHECK|CODE]...")
@format_options
def diagnose(file: Optional[str], facts_file: Optional[str], checks: Tuple[str, ...], as_json: bool,
             fmt: Optional[str], verbose: bool, color: Optional[bool], fail_on: str) -> int:
    """Diagnose a saved snapshot or report (FILE, '-' for stdin), --facts FILE, or pasted text.

    FILE may be the Markdown of `cudadoctor report` (its JSON block is read), or any text a person
    would paste: a bug report's body, collect_env, nvidia-smi, pip list, a log or a traceback
    (docs/pasted-reports.md)."""
    from cudadoctor.api import diagnose as run_diagnosis, make_report
    from cudadoctor.model.facts import snapshot_from_facts, usable
    from cudadoctor.model.serialize import SnapshotError, snapshot_from_dict

    if (file is None) == (facts_file is None):
        raise CudadoctorError("give a snapshot or report FILE, or --facts FILE (one of them)")
    path = facts_file or file
    assert path is not None
    if facts_file:
        data = _read_json(path)
    else:
        data = _read_any(path)
        if isinstance(data, str):
            return _paste(data, path, checks, as_json, fmt, verbose, color, fail_on)
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


def _read_any(path: str) -> Any:
    """A snapshot or report document (JSON, or a Markdown report's JSON block), or else the text
    itself (a paste, read in bounded memory from both ends)."""
    from cudadoctor.model.reader import LOG_HEAD, LOG_TAIL, ReadError, parse, read_text_file
    from cudadoctor.model.serialize import newer_format

    if path == "-" and _a_terminal(sys.stdin):
        sys.stderr.write("cudadoctor: reading a report, facts or pasted text from standard input (end with Ctrl-D)\n")
    try:
        text, left_out = read_text_file(path)
    except ReadError as exc:
        raise CudadoctorError(f"{path}: {exc.describe()}") from None
    if not text.strip():
        raise CudadoctorError(f"{path}: it is empty")
    if "\x00" in text[:65536] or "\x00" in text[-65536:]:
        raise CudadoctorError(f"{path}: binary data (NUL bytes), not a report or pasted text")
    if left_out:
        sys.stderr.write(f"cudadoctor: a long text: read its first {LOG_HEAD >> 20} MiB and its last "
                         f"{LOG_TAIL >> 20} MiB ({left_out:,} bytes in between left out)\n")
    stripped = text.lstrip("\ufeff \t\r\n")
    json_like = stripped.startswith("{") or "cudadoctor" in text and "```json" in text
    if not json_like:
        return text
    try:
        value = parse(text, markdown=True)
    except ReadError as exc:
        if stripped.startswith("{") and not left_out:
            raise CudadoctorError(f"{path}: {exc.describe()}") from None
        return text
    newer = newer_format(value)
    if newer is not None:
        raise CudadoctorError(f"{path}: {ReadError('newer', newer).describe()}")
    return value if isinstance(value, dict) else text


def _a_terminal(stream: Any) -> bool:
    try:
        return stream is not None and bool(stream.isatty())
    except (ValueError, OSError, AttributeError):  # closed, or no such method
        return False


def _paste(text: str, path: str, checks: Tuple[str, ...], as_json: bool, fmt: Optional[str], verbose: bool,
           color: Optional[bool], fail_on: str) -> int:
    from cudadoctor.api import diagnose_text
    from cudadoctor.model.printable import json_printable

    if checks:
        raise CudadoctorError("CHECK|CODE arguments go with a snapshot or report, not with pasted text")
    if fmt not in (None, "text", "json"):
        raise CudadoctorError(f"--format {fmt}: pasted text is shown as text or json")
    name = "standard input" if path == "-" else os.path.basename(path)
    result = diagnose_text(text, name=name)
    if not result.intake.usable:
        raise CudadoctorError(f"{path}: nothing cudadoctor can read (no known output, fact or error line)",
                              hint="paste the output of `python -m torch.utils.collect_env`, `nvidia-smi` and the "
                                   "complete error (docs/pasted-reports.md)")
    if as_json or fmt == "json":
        sys.stdout.write(json_printable(json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str))
                         + "\n")
    else:
        use_color = terminal_color(color)
        sys.stdout.write(result.text(use_color, verbose))
    if result.explanation.crashed:
        return ExitCode.INTERNAL
    code = exit_code(result.findings, fail_on)
    if code == ExitCode.OK and fail_on != "never" and result.ranked and result.ranked[0].verdict in ("holds",
                                                                                                     "likely"):
        return ExitCode.FINDINGS
    return code
