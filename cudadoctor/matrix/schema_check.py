"""A small JSON Schema validator (the subset compat_data's schemas use), so that
`cudadoctor data validate` needs no third-party package.

Supported: type (incl. lists of types), enum, const, pattern, minLength, minimum, minItems,
uniqueItems, required, properties, additionalProperties (bool or schema), items, $ref to
``#/$defs/...``, anyOf.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterator, List, Mapping

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def validate(instance: Any, schema: Mapping[str, Any]) -> List[str]:
    """Every violation as 'path: message', path like ``records[12].cuda``; [] when valid."""
    return list(_check(instance, schema, schema, ""))


def _check(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any], path: str) -> Iterator[str]:
    where = path or "(top level)"
    if "$ref" in schema:
        ref = str(schema["$ref"])
        if not ref.startswith("#/$defs/"):
            yield f"{where}: unsupported $ref {ref}"
            return
        target = root.get("$defs", {}).get(ref[len("#/$defs/"):])
        if target is None:
            yield f"{where}: $ref {ref} does not resolve"
            return
        yield from _check(value, target, root, path)
        return
    if "anyOf" in schema:
        options = [list(_check(value, s, root, path)) for s in schema["anyOf"]]
        if all(options):
            yield min(options, key=len)[0]
        return
    types = schema.get("type")
    if types is not None:
        allowed = types if isinstance(types, list) else [types]
        if not any(_TYPES[t](value) for t in allowed):
            yield f"{where}: expected {' or '.join(allowed)}, got {_show(value)}"
            return
    if "enum" in schema and value not in schema["enum"]:
        yield f"{where}: {_show(value)} is not one of {', '.join(map(str, schema['enum']))}"
    if "const" in schema and value != schema["const"]:
        yield f"{where}: must be {schema['const']!r}"
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            yield f"{where}: must not be empty" if schema.get("minLength") == 1 else f"{where}: too short"
        pattern = schema.get("pattern")
        if pattern and not re.search(pattern, value):
            yield f"{where}: {_show(value)} does not match {pattern}"
    if isinstance(value, (int, float)) and not isinstance(value, bool) and "minimum" in schema:
        if value < schema["minimum"]:
            yield f"{where}: {value} is below {schema['minimum']}"
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            yield f"{where}: needs at least {schema['minItems']} item(s)"
        if schema.get("uniqueItems") and len({repr(v) for v in value}) != len(value):
            yield f"{where}: items must be unique"
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                yield from _check(item, items, root, f"{path}[{i}]")
    if isinstance(value, dict):
        yield from _check_object(value, schema, root, path)


def _check_object(value: Dict[str, Any], schema: Mapping[str, Any], root: Mapping[str, Any], path: str) -> Iterator[str]:
    for key in schema.get("required", []):
        if key not in value:
            yield f"{_join(path, key)}: required"
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in properties:
            yield from _check(item, properties[key], root, _join(path, key))
        elif extra is False:
            yield f"{_join(path, key)}: unknown field"
        elif isinstance(extra, dict):
            yield from _check(item, extra, root, _join(path, key))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
