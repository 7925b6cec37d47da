"""``cudadoctor data``: what compatibility data is in use, whether it is sound, and its tables."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, List, Optional

import click

from cudadoctor.model.printable import json_printable, printable
from cudadoctor.errors import CudadoctorError, ExitCode


@click.group()
def data() -> None:
    """The compatibility data: info, validate, show, update, rollback."""


def _matrix(path: Optional[str] = None) -> Any:
    from cudadoctor.matrix import DataError, Matrix
    from cudadoctor.data.source import default_matrix

    try:
        return Matrix(path) if path else default_matrix()
    except DataError as exc:
        raise CudadoctorError(str(exc), exit_code=ExitCode.FINDINGS) from None


@data.command()
def info() -> int:
    """Data version, schema version, where it is, and the records per table."""
    from cudadoctor.matrix import DataError

    matrix = _matrix()
    out = [
        f"data version    {matrix.data_version}",
        f"schema version  {matrix.manifest.schema_version}",
        f"directory       {matrix.directory}",
        f"origin          {getattr(matrix, 'origin', 'folder')}",
        "",
        f"{'table':<28} {'records':>7}  {'secondary/unverified':>20}  sources",
    ]
    try:
        for name, count, weak in matrix.counts():
            sources = {str(r.get("source", "")).split(" ;")[0].split("#")[0] for r in matrix.doc(name)["records"]}
            out.append(f"{name:<28} {count:>7}  {weak:>20}  {len(sources)} distinct")
    except DataError as exc:
        raise CudadoctorError(str(exc), hint="cudadoctor data validate", exit_code=ExitCode.FINDINGS) from None
    click.echo("\n".join(out))
    return ExitCode.OK


@data.command()
@click.argument("path", required=False, type=click.Path(file_okay=False))
def validate(path: Optional[str]) -> int:
    """Check the data (or the compat_data folder at PATH) against its schemas and invariants."""
    if path is not None and not os.path.isdir(path):
        raise CudadoctorError(f"{path}: no such directory")
    matrix = _matrix(path)
    problems: List[str] = matrix.validate()
    if problems:
        for problem in problems:
            click.echo(problem, err=True)
        click.echo(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} in {matrix.directory}", err=True)
        return ExitCode.FINDINGS
    total = sum(count for _, count, _ in matrix.counts())
    click.echo(f"ok: {len(matrix.manifest.files)} tables, {total} records, data {matrix.data_version}")
    return ExitCode.OK


@data.command()
@click.argument("table")
@click.option("--json", "as_json", is_flag=True, help="Print the table's JSON document.")
def show(table: str, as_json: bool) -> int:
    """Print one table (name with or without .json)."""
    from cudadoctor.matrix import DataError

    matrix = _matrix()
    name = table if table.endswith(".json") else f"{table}.json"
    if name not in matrix.manifest.files:
        names = ", ".join(f.replace(".json", "") for f in matrix.manifest.files)
        raise CudadoctorError(f"no table {table!r}", hint=f"tables: {names}")
    try:
        doc = matrix.doc(name)
    except DataError as exc:
        raise CudadoctorError(str(exc), exit_code=ExitCode.FINDINGS) from None
    if as_json:
        sys.stdout.write(json_printable(json.dumps(doc, indent=1, ensure_ascii=False)) + "\n")  # C1 escaped too
        return ExitCode.OK
    click.echo(doc.get("description", name))
    for record in doc["records"]:
        fields = [f"{k}={_short(v)}" for k, v in record.items() if k not in ("source", "note", "confidence") and v is not None]
        flag = "" if record.get("confidence") == "primary" else f"  [{record.get('confidence')}]"
        click.echo("  " + "  ".join(fields) + flag)
    return ExitCode.OK


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    text = printable(text)  # a bundle's records are outside text: shown with control characters escaped
    return text if len(text) <= 60 else text[:57] + "..."


@data.command()
@click.option("--url", default=None, help="Bundle manifest URL (else CUDADOCTOR_DATA_URL, else data_url in the config file).")
@click.option("--allow-downgrade", is_flag=True, help="Install the bundle even if its data is older than the data in use.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=30.0, show_default=True, help="Time limit in seconds for the whole download.")
def update(url: Optional[str], allow_downgrade: bool, timeout: float) -> int:
    """Download, verify and install newer compatibility data."""
    from cudadoctor.data.update import UpdateError
    from cudadoctor.data.update import update as run_update

    try:
        result = run_update(url, allow_downgrade=allow_downgrade, timeout=timeout, on_wait=_say_waiting)
    except UpdateError as exc:
        raise CudadoctorError(f"data update failed: {exc}; nothing was changed", exit_code=ExitCode.FINDINGS) from None
    except OSError as exc:
        raise CudadoctorError(f"data update failed: {exc}; nothing was changed", exit_code=ExitCode.FINDINGS) from None
    if not result.installed:
        click.echo(f"data {result.data_version} is already in use; nothing to do")
    else:
        from cudadoctor.model.printable import printable

        click.echo(f"installed data {result.data_version} (was {result.previous or 'none'}) from {printable(result.url)}")
    return ExitCode.OK


def _say_waiting(line: str) -> None:
    """One line on stderr while an update or rollback waits for another one's lock."""
    click.echo(f"cudadoctor: {line}", err=True)


@data.command()
def rollback() -> int:
    """Go back to the previously installed data bundle."""
    from cudadoctor.data.store import StoreError
    from cudadoctor.data.store import rollback as store_rollback

    try:
        version = store_rollback(on_wait=_say_waiting)
    except StoreError as exc:
        raise CudadoctorError(str(exc), hint="cudadoctor data info") from None
    click.echo("the shipped data is in use again" if version == "shipped" else f"data {version} is current again")
    return ExitCode.OK
