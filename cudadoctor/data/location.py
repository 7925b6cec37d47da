"""Where the compatibility data lives and which version it is.

The wheel ships ``compat_data/`` inside the package (``cudadoctor/compat_data``); a source
checkout has it at the top level beside the package. A newer installed bundle (``cudadoctor data update``) or an explicit
folder may be used instead: see :mod:`cudadoctor.data.store` and :mod:`cudadoctor.data.source`. Nothing is read here, so
``cudadoctor --version`` stays cheap.
"""

from __future__ import annotations

import os
from typing import Optional
from cudadoctor.record import frozen

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # cudadoctor/


@frozen
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
