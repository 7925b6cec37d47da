"""Parsers of the outside text behind the Jetson and torch-extension facts: /etc/nv_tegra_release,
``dpkg-query -W``, /proc/device-tree strings, flash-attn's local version.

Like :mod:`cudadoctor.model.parsers`, every function is pure and total: any string gives a value
and never an exception (tests/test_model_parsers_eco.py fuzzes each one).
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

_TEGRA_RELEASE = re.compile(r"#\s*R(\d+)\s*\([^)]*\)\s*,\s*REVISION:\s*(\d+(?:\.\d+)*)")


def parse_nv_tegra_release(text: str) -> Dict[str, str]:
    """``/etc/nv_tegra_release``: '# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, ...' ->
    {'l4t': '36.4.3', 'board': 'generic', 'gcid': '38968081'}; {} when the first such line is absent."""
    for line in text.splitlines()[:20]:
        m = _TEGRA_RELEASE.search(line)
        if not m:
            continue
        revision = m.group(2)
        if revision.count(".") == 0:
            revision += ".0"
        out = {"l4t": f"{m.group(1).lstrip('0') or '0'}.{revision}"}
        for key in ("BOARD", "GCID"):
            km = re.search(key + r":\s*([^,\s]+)", line)
            if km:
                out[key.lower()] = km.group(1)
        return out
    return {}


def parse_dpkg_query_w(text: str) -> Dict[str, str]:
    """``dpkg-query -W NAME...``: one 'name<TAB>version' line per installed package -> {name: version}.
    A package known but not installed prints an empty version and is left out."""
    out: Dict[str, str] = {}
    for line in text.splitlines():
        name, sep, version = line.partition("\t")
        name, version = name.strip(), version.strip()
        if sep and re.fullmatch(r"[a-z0-9][a-z0-9+.-]*(?::[a-z0-9]+)?", name) and re.fullmatch(r"[0-9][\w.+~:-]*", version):
            out[name.split(":")[0]] = version
    return out


def parse_device_tree_strings(text: str) -> List[str]:
    """A /proc/device-tree string list (NUL-separated, e.g. ``compatible``) -> its entries."""
    return [part.strip() for part in text.split("\0") if part.strip() and part.strip().isprintable()]


def parse_l4t_package_version(version: str) -> Optional[str]:
    """nvidia-l4t-core's version '36.4.3-20250107174145' -> L4T release '36.4.3'."""
    m = re.match(r"^(\d+\.\d+(?:\.\d+)?)(?:-|$)", version.strip())
    return m.group(1) if m else None


_FLASH_LOCAL = re.compile(r"^cu(\d+)torch(\d+\.\d+)cxx11abi(true|false)$", re.I)


def parse_flash_attn_local(version: str) -> Dict[str, str]:
    """flash-attn's build in its local version: '2.8.3+cu12torch2.8cxx11abiTRUE' ->
    {'cuda_major': '12', 'torch': '2.8', 'cxx11abi': 'true'}; {} without such a local version."""
    _, sep, local = version.strip().partition("+")
    m = _FLASH_LOCAL.match(local) if sep else None
    if not m:
        return {}
    digits = m.group(1)
    cuda_major = digits[:-1] if len(digits) >= 3 else digits  # cu118 -> 11, cu12 -> 12
    return {"cuda_major": cuda_major, "torch": m.group(2), "cxx11abi": m.group(3).lower()}
