"""Where the compatibility data lives and which version it is.

The wheel ships ``compat_data/`` inside the package (``cudadoctor/compat_data``); a source
checkout has it at the top level beside the package. A newer installed bundle (``cudadoctor data update``) or an explicit
folder may be used instead: see :mod:`cudadoctor.data.store`. Only the manifest is read here, so
``cudadoctor --version`` stays cheap.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # cudadoctor/


@dataclass(frozen=True)
class DataInfo:
    directory: str
    data_version: str
    schema_version: int
    origin: str  # "shipped" (inside the package), "source" (a checkout), "installed", "env", "option"
    warning: Optional[str] = None  # an installed bundle that was skipped, and why


def shipped_data_dir() -> Optional[str]:
    for candidate, _ in _candidates():
        if os.path.isfile(os.path.join(candidate, "manifest.json")):
            return candidate
    return None


def shipped_origin(directory: str) -> str:
    """"shipped" or "source" for a directory returned by :func:`shipped_data_dir`."""
    for candidate, origin in _candidates():
        if os.path.abspath(directory) == candidate:
            return origin
    return "shipped"


def _candidates() -> list[tuple[str, str]]:
    return [
        (os.path.join(_PACKAGE_DIR, "compat_data"), "shipped"),
        (os.path.join(os.path.dirname(_PACKAGE_DIR), "compat_data"), "source"),
    ]


@lru_cache(maxsize=None)
def data_info() -> Optional[DataInfo]:
    """The manifest of the data in use (see :func:`cudadoctor.data.store.choose_data_dir`), or
    ``None`` when no data can be found or read."""
    from cudadoctor.data.store import choose_data_dir
    from cudadoctor.matrix.load import DataError

    try:
        choice = choose_data_dir()
    except DataError:
        return None
    path = os.path.join(choice.directory, "manifest.json")
    try:
        with open(path, encoding="utf-8") as fh:
            manifest = json.load(fh)
    except (OSError, ValueError):
        return None
    if isinstance(manifest, dict) and isinstance(manifest.get("data_version"), str):
        schema = manifest.get("schema_version")
        return DataInfo(
            choice.directory, manifest["data_version"], schema if isinstance(schema, int) else 0,
            choice.origin, choice.warning,
        )
    return None


def data_version() -> str:
    info = data_info()
    return info.data_version if info else "unknown"
