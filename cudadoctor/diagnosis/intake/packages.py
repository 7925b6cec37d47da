"""Package lists: ``pip list``, ``uv pip list``, ``pip freeze``, ``conda list``, and pip's
"Successfully installed ..." line."""

from __future__ import annotations

import re

from cudadoctor.diagnosis.intake.model import Found
from cudadoctor.diagnosis.intake.common import package_fact

_PIP_HEADER = re.compile(r"^\s*Package\s+Version\b")
_RULE = re.compile(r"^\s*-{3,}\s+-{3,}")
_ROW = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s+(\d[\w.+!-]*)(?:\s+(\S.*))?$")
_FREEZE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[\w,.-]*\])?\s*==\s*(\d[\w.+!-]*)\s*$")
_BRACKETED = re.compile(r"^\s*\[(pip3?|conda|uv)\]\s+(\S+)(?:\s+(\S+))?(?:\s+(\S+))?")
_CONDA_HEADER = re.compile(r"^#\s*(?:packages in environment at|Name\s+Version\s+Build)")
_INSTALLED = re.compile(r"Successfully installed\s+(.+)$")
_DIST = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._]*(?:-[A-Za-z][A-Za-z0-9._]*|-\d+[a-zA-Z][A-Za-z0-9._]*)*)-(\d[\w.+!]*)$")


def read(found: Found) -> None:
    lines = found.lines
    i = 0
    while i < len(lines):
        line = lines[i]
        if "Package" in line and _PIP_HEADER.match(line) and i + 1 < len(lines) and _RULE.match(lines[i + 1]):
            i = _rows(found, i, i + 2, "pip_list")
        elif line.startswith("#") and _CONDA_HEADER.match(line):
            i = _rows(found, i, i + 1, "conda_list")
        elif "[" in line and _BRACKETED.match(line):
            _bracketed(found, i, line)
            i += 1
        elif "==" in line and _FREEZE.match(line) and "[pip" not in line:
            m = _FREEZE.match(line)
            assert m is not None
            package_fact(found, i, m.group(1), m.group(2), "pip_freeze")
            found.block("pip_freeze", i, i)
            i += 1
        else:
            installed = _INSTALLED.search(line) if "Successfully installed" in line else None
            if installed:
                for dist in installed.group(1).split():
                    m = _DIST.match(dist)
                    if m:
                        package_fact(found, i, m.group(1), m.group(2), "pip_list")
                found.block("pip_list", i, i)
            i += 1


def _bracketed(found: Found, i: int, line: str) -> None:
    """collect_env's '[pip3] torch==2.5.1' and '[conda] pytorch 2.5.1 py3.11_cuda12.4...' lines pasted
    on their own (the collect_env reader takes those inside its block)."""
    if any(f.line == i + 1 for f in found.facts[-4:]):
        return
    m = _BRACKETED.match(line)
    assert m is not None
    if m.group(1) == "conda" and m.group(3):
        package_fact(found, i, m.group(2), m.group(3), "conda_list", build=m.group(4))
    elif "==" in m.group(2):
        name, _, version = m.group(2).partition("==")
        package_fact(found, i, name, version, "pip_freeze")
    else:
        return
    found.block("pip_freeze" if m.group(1) != "conda" else "conda_list", i, i)


def _rows(found: Found, header: int, first: int, kind: str) -> int:
    lines = found.lines
    i = first
    last = header
    while i < len(lines):
        line = lines[i]
        if kind == "conda_list" and line.startswith("#"):
            i += 1
            continue
        m = _ROW.match(line)
        if not m:
            if not line.strip() and i + 1 < len(lines) and _ROW.match(lines[i + 1]):
                i += 1
                continue
            break
        rest = (m.group(3) or "").split()
        build = rest[0] if kind == "conda_list" and rest else None
        package_fact(found, i, m.group(1), m.group(2), kind, build=build)
        last = i
        i += 1
    found.block(kind, header, last)
    return max(i, header + 1)
