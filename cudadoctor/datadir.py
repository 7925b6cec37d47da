"""Where the compatibility data lives and which version it is.

The wheel ships ``compat_data/`` inside the package (``cudadoctor/compat_data``); a source
checkout has it at the top level beside the package. Only the manifest is read here, so
``cudadoctor --version`` stays cheap.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class DataInfo:
    directory: str
    data_version: str
    schema_version: int
    origin: str  # "shipped" (inside the installed package) or "source" (a checkout)


def shipped_data_dir() -> Optional[str]:
    for candidate, _ in _candidates():
        if os.path.isfile(os.path.join(candidate, "manifest.json")):
            return candidate
    return None


def _candidates() -> list[tuple[str, str]]:
    return [
        (os.path.join(_PACKAGE_DIR, "compat_data"), "shipped"),
        (os.path.join(os.path.dirname(_PACKAGE_DIR), "compat_data"), "source"),
    ]


@lru_cache(maxsize=None)
def data_info() -> Optional[DataInfo]:
    """The manifest of the data in use, or ``None`` when no data can be found or read."""
    for directory, origin in _candidates():
        path = os.path.join(directory, "manifest.json")
        try:
            with open(path, encoding="utf-8") as fh:
                manifest = json.load(fh)
        except (OSError, ValueError):
            continue
        if isinstance(manifest, dict) and isinstance(manifest.get("data_version"), str):
            schema = manifest.get("schema_version")
            return DataInfo(directory, manifest["data_version"], schema if isinstance(schema, int) else 0, origin)
    return None


def data_version() -> str:
    info = data_info()
    return info.data_version if info else "unknown"
