"""The nodes that should have reported (``--nodes``): a file with one name per line, or a list
``gpu-01,gpu-02`` with Slurm-style ranges ``gpu-[001-128,200]``, as ``scontrol show hostnames``
would expand them."""

from __future__ import annotations

import os
import re
from typing import List

from cudadoctor.errors import CudadoctorError

MAX_NODES = 1_000_000  # a range larger than any fleet is a typo, not a request for memory
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def expected_nodes(value: str) -> List[str]:
    """The node names of ``--nodes``: read from the file ``value`` when it exists (names separated
    by lines, spaces or commas; ``#`` starts a comment), else ``value`` itself as a list."""
    if os.path.isfile(value):
        try:
            with open(value, encoding="utf-8") as fh:
                lines = [line.split("#", 1)[0] for line in fh]
        except (OSError, UnicodeDecodeError) as exc:
            raise CudadoctorError(f"--nodes {value}: {getattr(exc, 'strerror', None) or exc}") from None
        words = " ".join(lines).replace(",", " ").split()
        names = [n for word in words for n in expand(word)]
        if not names:
            raise CudadoctorError(f"--nodes {value}: the file names no node")
        return list(dict.fromkeys(names))
    if os.sep in value and not any(c in value for c in ",[]"):
        raise CudadoctorError(f"--nodes {value}: no such file", hint="give a file of node names, or a list such as gpu-[01-16]")
    names = expand(value)
    if not names:
        raise CudadoctorError("--nodes: no node names given", hint="e.g. --nodes gpu-[001-128] or --nodes nodes.txt")
    return list(dict.fromkeys(names))


def expand(text: str) -> List[str]:
    """``a,b[1-3]`` → ``a, b1, b2, b3``; zero padding is kept (``[08-10]`` → 08, 09, 10)."""
    out: List[str] = []
    for part in _split(text.strip()):
        if part:
            out.extend(_expand_one(part, text))
            if len(out) > MAX_NODES:
                raise CudadoctorError(f"--nodes {text[:60]}: more than {MAX_NODES:,} names")
    return out


def _split(text: str) -> List[str]:
    """Split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
        if depth < 0 or depth > 1:
            raise CudadoctorError(f"--nodes {text[:60]}: unbalanced or nested brackets")
    if depth:
        raise CudadoctorError(f"--nodes {text[:60]}: a bracket is not closed")
    parts.append(text[start:].strip())
    return parts


def _expand_one(part: str, whole: str) -> List[str]:
    open_at = part.find("[")
    if open_at < 0:
        return [part]
    close_at = part.index("]", open_at)
    head, body, tail = part[:open_at], part[open_at + 1:close_at], part[close_at + 1:]
    values: List[str] = []
    for item in body.split(","):
        m = _RANGE.match(item.strip())
        if not m:
            raise CudadoctorError(f"--nodes {whole[:60]}: [{body}] is not a list of numbers and ranges such as [01-16,20]")
        first, last = m.group(1), m.group(2) or m.group(1)
        if int(last) < int(first) or int(last) - int(first) > MAX_NODES:
            raise CudadoctorError(f"--nodes {whole[:60]}: the range {item.strip()} is empty or too large")
        width = len(first) if first.startswith("0") else 0
        values.extend(str(n).zfill(width) for n in range(int(first), int(last) + 1))
    return [f"{head}{v}{rest}" for v in values for rest in _expand_one(tail, whole)]
