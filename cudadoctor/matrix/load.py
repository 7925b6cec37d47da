"""Reading compat_data: the manifest, each table file, and its JSON Schema.

Every failure is a :class:`DataError` naming the file and the record, e.g.
``gpus.json: records[41] (NVIDIA H100 80GB HBM3): compute_capability: '9' does not match ...``.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple
from cudadoctor.record import frozen

from cudadoctor.matrix.schema_check import validate

SCHEMA_VERSION = 1
ID_KEYS = ("id", "name", "version", "cuda", "branch", "sm", "cuda_major", "package", "distribution")


class DataError(Exception):
    """Compatibility data that cannot be used; the message names the file and the record."""

    def __init__(self, file: str, problems: List[str]) -> None:
        self.file = file
        self.problems = problems
        shown = "; ".join(problems[:3]) + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else "")
        super().__init__(f"{file}: {shown}")


@frozen
class Manifest:
    data_version: str
    schema_version: int
    files: Tuple[str, ...]


def read_json(directory: str, name: str) -> Any:
    # Through the documents' reader: a data folder may come from anyone (`data validate DIR`,
    # --data DIR), and a manifest.json that is /dev/zero or a named pipe must neither exhaust the
    # memory nor block (issue 16).
    from cudadoctor.model.reader import ReadError, read_document

    path = os.path.join(directory, name)
    try:
        raw = read_document(path)
    except ReadError as exc:
        if exc.kind == "os" and not os.path.lexists(path):
            raise DataError(name, ["file is missing"]) from None
        raise DataError(name, [f"cannot be read: {exc.describe()}"]) from None
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DataError(name, [f"cannot be read: {exc}"]) from None
    except json.JSONDecodeError as exc:
        raise DataError(name, [f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"]) from None
    except (RecursionError, ValueError) as exc:
        raise DataError(name, [f"not usable JSON: {type(exc).__name__}"]) from None


def read_manifest(directory: str) -> Manifest:
    data = read_json(directory, "manifest.json")
    problems = validate(data, MANIFEST_SCHEMA)
    if problems:
        raise DataError("manifest.json", problems)
    if data["schema_version"] != SCHEMA_VERSION:
        raise DataError(
            "manifest.json",
            [f"schema_version {data['schema_version']} is not the {SCHEMA_VERSION} this cudadoctor reads"],
        )
    return Manifest(data["data_version"], data["schema_version"], tuple(data["files"]))


MANIFEST_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "required": ["data_version", "schema_version", "files"],
    "properties": {
        "data_version": {"type": "string", "pattern": r"^\d{4}\.\d{1,2}\.\d+$"},
        "schema_version": {"type": "integer"},
        "files": {"type": "array", "items": {"type": "string", "pattern": r"^[a-z0-9_]+\.json$"}, "uniqueItems": True},
        "description": {"type": "string"},
    },
    "additionalProperties": False,
}


def read_table(directory: str, name: str, check_schema: bool = True) -> Dict[str, Any]:
    """A table file, checked against ``schemas/<table>.schema.json`` unless told not to."""
    data = read_json(directory, name)
    if not check_schema:
        if not isinstance(data, dict) or not isinstance(data.get("records"), list):
            raise DataError(name, ["not a table: expected an object with a records list"])
        return data
    schema = read_json(os.path.join(directory, "schemas"), name.replace(".json", ".schema.json"))
    problems = [_label(data, p) for p in validate(data, schema)]
    if problems:
        raise DataError(name, problems)
    return data  # type: ignore[no-any-return]


def _label(data: Any, problem: str) -> str:
    """'records[12].cuda: ...' -> 'records[12] (12.4.0): cuda: ...' so a person finds it."""
    m = re.match(r"^(\w+)\[(\d+)\](?:\.(.*))?$", problem.split(": ", 1)[0])
    if not m or not isinstance(data, dict):
        return problem
    items = data.get(m.group(1))
    index = int(m.group(2))
    if not isinstance(items, list) or index >= len(items) or not isinstance(items[index], dict):
        return problem
    ident = record_id(items[index])
    rest = problem.split(": ", 1)[1] if ": " in problem else ""
    field = f"{m.group(3)}: " if m.group(3) else ""
    return f"{m.group(1)}[{index}]{f' ({ident})' if ident else ''}: {field}{rest}"


def provenance(rec: Mapping[str, Any]) -> Dict[str, Any]:
    """The fields every record carries, as keyword arguments for its row: source, confidence, note."""
    return {"source": rec["source"], "confidence": rec["confidence"], "note": rec.get("note")}


def record_id(record: Mapping[str, Any]) -> Optional[str]:
    for key in ID_KEYS:
        value = record.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return str(value)
    return None
