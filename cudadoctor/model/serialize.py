"""JSON in and out for the frozen dataclasses of :mod:`cudadoctor.model`.

Loading is forgiving about what is *missing* (every field has a default, so a hand-written
snapshot with five facts loads) and strict about what is *wrong*: an unknown key or a value of
the wrong type raises :class:`SnapshotError` naming the path, e.g. ``gpus[0].memory_total_mib``.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import sys
import typing
from typing import Any, Dict, Mapping, Optional, Type, TypeVar

from cudadoctor.model import SCHEMA_VERSION, Snapshot

T = TypeVar("T")

_NONE = type(None)


class SnapshotError(ValueError):
    """A snapshot document that cannot be loaded; the message names the offending path."""


def to_jsonable(value: Any) -> Any:
    """Dataclasses, enums, tuples and dicts as plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    return value


def snapshot_to_dict(snapshot: Snapshot) -> Dict[str, Any]:
    result: Dict[str, Any] = to_jsonable(snapshot)
    return result


def snapshot_to_json(snapshot: Snapshot, indent: int | None = 2) -> str:
    return json.dumps(snapshot_to_dict(snapshot), indent=indent, ensure_ascii=False)


ENVELOPE_FORMAT = "cudadoctor.report"
ENVELOPE_VERSION = 1  # the report envelope's format_version this cudadoctor writes and reads


def newer_format(data: Any) -> Optional[str]:
    """Why a report envelope cannot be read when a newer cudadoctor wrote it, else None: its
    meaning may have changed, and reading it as today's would say "no problems" about facts this
    one does not understand (``fleet summarize`` says the same)."""
    if not isinstance(data, Mapping) or data.get("format") != ENVELOPE_FORMAT:
        return None
    version = data.get("format_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > ENVELOPE_VERSION:
        return (f"written by a newer cudadoctor (format_version {version}; this one reads {ENVELOPE_VERSION}): "
                "upgrade cudadoctor")
    return None


def snapshot_from_dict(data: Any) -> Snapshot:
    """Load a (possibly partial) snapshot dict, or the snapshot inside a report envelope."""
    if not isinstance(data, Mapping):
        raise SnapshotError("a snapshot must be a JSON object")
    newer = newer_format(data)
    if newer is not None:
        raise SnapshotError(newer)
    if data.get("format") == ENVELOPE_FORMAT and "snapshot" in data:
        return snapshot_from_dict(data["snapshot"])
    version = data.get("schema_version", SCHEMA_VERSION)
    if not isinstance(version, int) or isinstance(version, bool):
        raise SnapshotError("schema_version: expected an integer")
    if version > SCHEMA_VERSION:
        raise SnapshotError(
            f"schema_version {version} is newer than this cudadoctor understands "
            f"({SCHEMA_VERSION}); upgrade cudadoctor"
        )
    snapshot: Snapshot = from_jsonable(Snapshot, data, "")
    return snapshot


def snapshot_from_json(text: str) -> Snapshot:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SnapshotError(f"not valid JSON: {exc}") from None
    except (RecursionError, ValueError) as exc:  # nesting too deep, an integer too long
        raise SnapshotError(f"not usable JSON: {type(exc).__name__}: {str(exc)[:100]}") from None
    try:
        return snapshot_from_dict(data)
    except RecursionError:
        raise SnapshotError("not usable JSON: nested too deeply") from None


def _hints(cls: type) -> Dict[str, Any]:
    cached = _HINTS.get(cls)
    if cached is None:
        module = sys.modules[cls.__module__]
        cached = typing.get_type_hints(cls, vars(module))
        _HINTS[cls] = cached
    return cached


_HINTS: Dict[type, Dict[str, Any]] = {}


def from_jsonable(tp: Type[T] | Any, value: Any, path: str) -> Any:
    """Convert ``value`` to type ``tp``; raise :class:`SnapshotError` naming ``path``."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    where = path or "snapshot"
    if tp is Any:
        return value
    if origin is typing.Union:
        if value is None and _NONE in args:
            return None
        inner = [a for a in args if a is not _NONE]
        errors = []
        for option in inner:
            try:
                return from_jsonable(option, value, path)
            except SnapshotError as exc:
                errors.append(str(exc))
        raise SnapshotError(errors[0] if len(errors) == 1 else f"{where}: unexpected value {value!r}")
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise SnapshotError(f"{where}: expected an object, got {_kind(value)}")
        hints = _hints(tp)
        names = {f.name for f in dataclasses.fields(tp)}
        for key in value:
            if key not in names:
                raise SnapshotError(f"{_join(path, str(key))}: unknown field")
        kwargs = {k: from_jsonable(hints[k], v, _join(path, k)) for k, v in value.items()}
        try:
            return tp(**kwargs)
        except TypeError as exc:  # a required field is missing
            raise SnapshotError(f"{where}: {exc}") from None
    if origin in (tuple, typing.Tuple):
        if not isinstance(value, (list, tuple)):
            raise SnapshotError(f"{where}: expected a list, got {_kind(value)}")
        item = args[0] if args else Any
        return tuple(from_jsonable(item, v, f"{path}[{i}]") for i, v in enumerate(value))
    if origin in (dict, typing.Dict):
        if not isinstance(value, Mapping):
            raise SnapshotError(f"{where}: expected an object, got {_kind(value)}")
        vtype = args[1] if len(args) == 2 else Any
        return {str(k): from_jsonable(vtype, v, _join(path, str(k))) for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            allowed = ", ".join(str(m.value) for m in tp)
            raise SnapshotError(f"{where}: {value!r} is not one of {allowed}") from None
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise SnapshotError(f"{where}: expected true or false, got {_kind(value)}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise SnapshotError(f"{where}: expected an integer, got {_kind(value)}")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise SnapshotError(f"{where}: expected a number, got {_kind(value)}")
    if tp is str:
        if isinstance(value, str):
            return value
        raise SnapshotError(f"{where}: expected a string, got {_kind(value)}")
    raise SnapshotError(f"{where}: cannot load values of type {tp!r}")  # pragma: no cover


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int) and value.bit_length() > 64:
        return "a very large number"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"[:80]
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__
