"""``cudadoctor data``: what compatibility data is in use, whether it is sound, and its tables."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, List, Optional

import click

from ..errors import CudadoctorError, ExitCode


@click.group()
def data() -> None:
    """The compatibility data: info, validate, show."""


def _matrix(path: Optional[str] = None) -> Any:
    from ..matrix import DataError, Matrix, default_matrix

    try:
        return Matrix(path) if path else default_matrix()
    except DataError as exc:
        raise CudadoctorError(str(exc), exit_code=ExitCode.FINDINGS) from None


@data.command()
def info() -> int:
    """Data version, schema version, where it is, and the records per table."""
    from ..matrix import DataError

    matrix = _matrix()
    out = [
        f"data version    {matrix.data_version}",
        f"schema version  {matrix.manifest.schema_version}",
        f"directory       {matrix.directory}",
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
    from ..matrix import DataError

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
        json.dump(doc, sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
        return ExitCode.OK
    click.echo(doc.get("description", name))
    for record in doc["records"]:
        fields = [f"{k}={_short(v)}" for k, v in record.items() if k not in ("source", "note", "confidence") and v is not None]
        flag = "" if record.get("confidence") == "primary" else f"  [{record.get('confidence')}]"
        click.echo("  " + "  ".join(fields) + flag)
    return ExitCode.OK


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."
