"""Data and tool version strings: which text is one, and their order."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from cudadoctor.version import __version__

# Data versions are calendar versions, YYYY.M.N. Every part is bounded: a version comes from a
# server or a file on disk, and int() of a string over 4300 digits raises ValueError (issue 16).
# ASCII digits only, and fullmatch, not "$", which also matches before a trailing newline
# ("2026.12.0\n" would name a folder).
_VERSION_RE = re.compile(r"[0-9]{4}\.[0-9]{1,2}\.[0-9]{1,6}")
# Tool versions as they are published: 0.1.0, 1.2, 0.2.0.dev1, 1.0rc2.
_TOOL_VERSION_RE = re.compile(r"[0-9]{1,6}(?:\.[0-9]{1,6}){0,3}(?:\.?(?:dev|a|b|rc|post)[0-9]{0,6})?")


def is_data_version(text: object) -> bool:
    """Whether ``text`` is a data version (``YYYY.M.N``, each part of bounded length)."""
    return isinstance(text, str) and _VERSION_RE.fullmatch(text) is not None


def is_tool_version(text: object) -> bool:
    """Whether ``text`` is a cudadoctor version (``0.1.0``, ``0.2.0.dev1``), each part bounded."""
    return isinstance(text, str) and _TOOL_VERSION_RE.fullmatch(text) is not None


def version_key(version: str) -> Tuple[int, ...]:
    """``2026.11.0`` -> (2026, 11, 0); also tool versions (``0.1.0``, ``0.2.0.dev1`` -> (0, 2, 0, 1)).
    Give it only versions checked by :func:`is_data_version` or :func:`is_tool_version`."""
    parts: List[int] = []
    for piece in version.split("."):
        digits = re.match(r"\d*", piece)
        parts.append(int(digits.group(0)) if digits and digits.group(0) else 0)
    return tuple(parts)


def tool_is_new_enough(min_tool_version: Optional[str]) -> bool:
    return min_tool_version is None or version_key(__version__) >= version_key(min_tool_version)


def shown(value: object, limit: int = 60) -> str:
    """``value`` for a one-line message: repr (control characters escaped), cut to ``limit``."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
