"""Which reader a file gets: compose by name (``compose.yaml``, ``docker-compose.yml``, any
``.yml``/``.yaml`` with a ``services:`` key), Dockerfile by name (``Dockerfile``,
``*.Dockerfile``, ``Containerfile``) or by its first instruction, else ``docker run`` lines."""

from __future__ import annotations

import os
import re
from typing import List

from cudadoctor.containers.compose import read_compose
from cudadoctor.containers.dockerfile import read_dockerfile
from cudadoctor.containers.model import MAX_BYTES, Spec
from cudadoctor.containers.runline import read_runs

_FIRST = re.compile(r"^\s*(?:FROM|ARG)\s+\S", re.I)
_SERVICES = re.compile(r"^services\s*:", re.M)


def kind_of(path: str, text: str) -> str:
    name = os.path.basename(path).lower()
    if name.endswith((".yml", ".yaml")) and ("compose" in name or _SERVICES.search(text)):
        return "compose"
    if name in ("dockerfile", "containerfile") or name.startswith(("dockerfile.", "containerfile.")) or \
            name.endswith((".dockerfile", ".containerfile")):
        return "dockerfile"
    for line in lines_of(text[:20000])[:200]:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        return "dockerfile" if _FIRST.match(stripped) else "run"
    return "run"


def lines_of(text: str) -> List[str]:
    """The lines as an editor numbers them: split at \\n only (a lone \\r, \\f or U+2028 is no
    line break for Docker or compose, though str.splitlines() makes it one), \\r\\n ends kept out."""
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def read_spec(path: str, text: str) -> Spec:
    """The :class:`Spec` of a file's text (at most :data:`MAX_BYTES` of it is read)."""
    truncated = len(text) > MAX_BYTES
    text = text[:MAX_BYTES]
    kind = kind_of(path, text)
    if kind == "compose":
        spec = read_compose(path, text)
    elif kind == "dockerfile":
        spec = read_dockerfile(path, lines_of(text))
    else:
        spec = read_runs(path, lines_of(text))
    if truncated:
        from dataclasses import replace

        spec = replace(spec, truncated=True, notes=spec.notes + ((spec.lines, f"only the first {MAX_BYTES} "
                                                                               "characters were read"),))
    return spec
