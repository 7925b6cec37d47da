"""Defensive reading of a report's raw JSON: typed accessors that raise :class:`BadField` naming
the path of a value of the wrong type, so one malformed report becomes one "unreadable" line.

The fleet summary works on the dicts ``json.loads`` returns, not on Snapshot dataclasses: building
those (:func:`cudadoctor.model.serialize.snapshot_from_dict`) for 10,000 reports would cost more than
reading them.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional


class BadField(ValueError):
    """A value of the wrong type in a report; the message names where, e.g. ``snapshot.gpus[2].name``."""


def kind(value: Any) -> str:
    """What a JSON value is, in words, for a reason line."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def obj(parent: Mapping[str, Any], key: str, path: str) -> Optional[Dict[str, Any]]:
    """``parent[key]`` as an object; None when absent or null."""
    value = parent.get(key)
    if value is None or isinstance(value, dict):
        return value
    raise BadField(f"{path}.{key}: expected an object, got {kind(value)}")


# Sets of types for checking many values at once in C (``allowed.issuperset(map(type, values))``):
# the summary reads 10,000 reports, and a Python-level check per value would cost more than parsing.
DICT = frozenset({dict})
STR = frozenset({str})
INT_OR_NONE = frozenset({int, type(None)})
BOOL_OR_NONE = frozenset({bool, type(None)})


def items(parent: Mapping[str, Any], key: str, path: str) -> Optional[List[Dict[str, Any]]]:
    """``parent[key]`` as a list of objects; None when absent or null (unknown)."""
    value = parent.get(key)
    if value is None:
        return None
    if type(value) is not list:
        raise BadField(f"{path}.{key}: expected a list, got {kind(value)}")
    if not DICT.issuperset(map(type, value)):
        for i, item in enumerate(value):
            if type(item) is not dict:
                raise BadField(f"{path}.{key}[{i}]: expected an object, got {kind(item)}")
    return value


def text(parent: Mapping[str, Any], key: str, path: str) -> Optional[str]:
    value = parent.get(key)
    if value is None or isinstance(value, str):
        return value
    raise BadField(f"{path}.{key}: expected a string, got {kind(value)}")


def integer(parent: Mapping[str, Any], key: str, path: str) -> Optional[int]:
    value = parent.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise BadField(f"{path}.{key}: expected an integer, got {kind(value)}")


def flag(parent: Mapping[str, Any], key: str, path: str) -> Optional[bool]:
    value = parent.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise BadField(f"{path}.{key}: expected true or false, got {kind(value)}")


def strings(parent: Mapping[str, Any], key: str, path: str) -> Optional[List[str]]:
    value = parent.get(key)
    if value is None:
        return None
    if type(value) is not list or not STR.issuperset(map(type, value)):
        raise BadField(f"{path}.{key}: expected a list of strings, got {kind(value)}")
    return value


def number(value: Any) -> Optional[float]:
    """A finite number (not a boolean), else None: a metric that cannot be compared is left out."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        result = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return result if math.isfinite(result) else None
