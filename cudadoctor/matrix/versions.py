"""Version strings as sortable keys, without importing packaging (the parent process of
`check` stays light): '525.60.13' -> (525, 60, 13), '2.5.1+cu124' -> (2, 5, 1)."""

from __future__ import annotations

import re
from typing import Optional, Tuple

_NUM = re.compile(r"\d+")

VersionKey = Tuple[int, ...]


def vkey(version: str) -> VersionKey:
    """The leading dotted numbers of ``version``; anything after them (+local, rc1, a0) is
    ignored. '' or garbage gives ()."""
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", version or "")
    if not m:
        return ()
    return tuple(int(part[:12]) for part in m.group(1).split("."))


def major(version: str) -> Optional[int]:
    key = vkey(version)
    return key[0] if key else None


def major_minor(version: str) -> VersionKey:
    return vkey(version)[:2]


def matches(version: str, prefix: str) -> bool:
    """'12.4.1' matches the partial version '12.4' and '12'; '12.40' does not match '12.4'."""
    have, want = vkey(version), vkey(prefix)
    return bool(want) and have[: len(want)] == want


def at_least(version: str, minimum: str) -> bool:
    """``version >= minimum``, comparing as many parts as ``minimum`` has, zero-padded."""
    a, b = vkey(version), vkey(minimum)
    width = max(len(a), len(b))
    return a + (0,) * (width - len(a)) >= b + (0,) * (width - len(b))
