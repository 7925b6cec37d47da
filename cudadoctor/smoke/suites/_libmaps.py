"""What a process actually loaded: the CUDA libraries in ``/proc/self/maps``, the version their
file names carry, and the package that owns each file (a pip distribution by its RECORD, a
conda package by conda-meta, or a guess from ``site-packages/nvidia/<x>/lib``). Standard
library only: the torch suite reads this in its child after CUDA is initialised.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

# Libraries reported, by the name before ".so" (hash suffixes of bundled copies removed).
WANTED = re.compile(
    r"^lib(cuda|cudart|cudnn(_\w+)?|cublas|cublasLt|nccl|nvrtc|nvrtc-builtins|nvJitLink|cusparse|cusparseLt"
    r"|cufft|curand|cusolver|cupti|nvToolsExt|cufile|nvshmem_host|nvidia-ml|torch_cuda|c10_cuda|torch_cpu)$")
# libcudnn_ops.so.9.1.0, libcudart-9335f6a2.so.12, libnvrtc-builtins.so.12.4, libcuda.so.550.54.15
_SONAME = re.compile(r"^(lib[\w+.-]+?)(?:-[0-9a-f]{8})?\.so(?:\.(\d[\w.]*))?$")
_NVIDIA_WHEEL = re.compile(r"[/\\]nvidia[/\\]([\w-]+)[/\\]lib[/\\]")


def mapped_paths(text: str) -> List[str]:
    """The distinct file paths of a ``/proc/<pid>/maps`` text, in first-seen order."""
    seen: Dict[str, None] = {}
    for line in text.splitlines():
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[5].startswith("/"):
            path = fields[5].strip()
            if path.endswith(" (deleted)"):
                path = path[: -len(" (deleted)")]
            seen.setdefault(path, None)
    return list(seen)


def split_name(path: str) -> Optional[Tuple[str, str]]:
    """``/x/libcudnn_ops.so.9.1.0`` -> ``("libcudnn_ops", "9.1.0")`` (version "" when the file
    name has none); None for a file that is not a shared library."""
    m = _SONAME.match(os.path.basename(path))
    if not m:
        return None
    return m.group(1), m.group(2) or ""


def cuda_libraries(paths: Iterable[str]) -> Dict[str, List[Tuple[str, str]]]:
    """Library name -> [(path, version from the file name)] for the libraries in WANTED."""
    out: Dict[str, List[Tuple[str, str]]] = {}
    for path in paths:
        named = split_name(path)
        if named and WANTED.match(named[0]):
            entries = out.setdefault(named[0], [])
            if all(p != path for p, _ in entries):
                entries.append((path, named[1]))
    return out


def read_maps(pid: str = "self") -> str:
    """The text of ``/proc/<pid>/maps`` (OSError where there is none)."""
    with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh:
        return fh.read()


# --------------------------------------------------------------------------- owners


def _site_dirs(extra: Sequence[str] = ()) -> List[str]:
    dirs = [os.path.realpath(p) for p in list(extra) + list(sys.path) if p and os.path.isdir(p)]
    return sorted(set(dirs), key=len, reverse=True)  # the deepest first


def _record_owners(site: str, rels: Dict[str, str]) -> Dict[str, str]:
    """path -> "dist version" for the files (path -> path relative to ``site``) listed in the
    RECORD of a distribution installed in ``site``."""
    found: Dict[str, str] = {}
    for record in glob.glob(os.path.join(site, "*.dist-info", "RECORD")):
        try:
            with open(record, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        hits = [p for p, rel in rels.items() if p not in found and rel in text]
        if not hits:
            continue
        listed = {line.split(",", 1)[0] for line in text.splitlines()}
        dist = _dist_name(os.path.dirname(record))
        for path in hits:
            if rels[path] in listed:
                found[path] = dist
    return found


def _dist_name(dist_info: str) -> str:
    """``.../nvidia_cudnn_cu12-9.1.0.70.dist-info`` -> "nvidia-cudnn-cu12 9.1.0.70" (METADATA's
    Name and Version when readable)."""
    name = version = ""
    try:
        with open(os.path.join(dist_info, "METADATA"), encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("Name:"):
                    name = line[5:].strip()
                elif line.startswith("Version:"):
                    version = line[8:].strip()
                if (name and version) or not line.strip():
                    break
    except OSError:
        pass
    if not name:
        name, _, version = os.path.basename(dist_info)[: -len(".dist-info")].partition("-")
    return f"{name} {version}".strip()


def _conda_owners(paths: Iterable[str]) -> Dict[str, str]:
    """path -> "conda <name> <version> <build> (<channel>)" for the paths that lie in a conda
    environment (``<prefix>/lib/...`` next to ``<prefix>/conda-meta``); one pass over each
    environment's conda-meta records, however many paths."""
    by_prefix: Dict[str, Dict[str, str]] = {}
    for path in paths:
        head, sep, _ = path.rpartition("/lib/")
        if sep and os.path.isdir(os.path.join(head, "conda-meta")):
            by_prefix.setdefault(head, {})[path] = os.path.relpath(path, head)
    found: Dict[str, str] = {}
    for head, rels in by_prefix.items():
        for record in glob.glob(os.path.join(head, "conda-meta", "*.json")):
            try:
                with open(record, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                hits = [p for p, rel in rels.items() if p not in found and f'"{rel}"' in text]
                data = json.loads(text) if hits else {}
            except (OSError, ValueError):
                continue
            files = set(data.get("files", ()))
            for path in hits:
                if rels[path] in files:
                    found[path] = _conda_label(data)
    return found


def _conda_label(data: Dict[str, object]) -> str:
    channel = str(data.get("channel", "")).rstrip("/").rsplit("/", 1)[-1]
    words = ["conda", str(data.get("name", "?")), str(data.get("version", "?")), str(data.get("build", ""))]
    return " ".join(w for w in words if w) + (f" ({channel})" if channel else "")


def owners(paths: Sequence[str], site_dirs: Sequence[str] = ()) -> Dict[str, str]:
    """path -> who installed it: "nvidia-cudnn-cu12 9.1.0.70" (pip RECORD), "conda cudnn 9.3.0
    h... (conda-forge)", "nvidia-cudnn-* (from the path)", or absent when nobody claims it."""
    found: Dict[str, str] = {}
    by_site: Dict[str, Dict[str, str]] = {}
    for path in paths:
        real = os.path.realpath(path)
        for site in _site_dirs(site_dirs):
            if real.startswith(site + os.sep):
                by_site.setdefault(site, {})[path] = os.path.relpath(real, site).replace(os.sep, "/")
                break
    for site, rels in by_site.items():
        found.update(_record_owners(site, rels))
    conda = _conda_owners(os.path.realpath(p) for p in paths if p not in found)
    for path in paths:
        owner = found.get(path) or conda.get(os.path.realpath(path))
        if owner is None:
            m = _NVIDIA_WHEEL.search(path)
            owner = f"nvidia-{m.group(1).replace('_', '-')}-* (from the path)" if m else None
        if owner:
            found[path] = owner
    return found


def loaded_details(text: str, site_dirs: Sequence[str] = ()) -> Tuple[Dict[str, str], List[str]]:
    """(details, duplicates) from a maps text: ``lib.<name>`` -> path(s), ``lib.<name>.version``
    -> the version in the file name, ``lib.<name>.dist`` -> owner; ``duplicates`` names the
    libraries loaded from more than one file (two libcudart copies, say)."""
    libs = cuda_libraries(mapped_paths(text))
    who = owners([p for entries in libs.values() for p, _ in entries], site_dirs)
    details: Dict[str, str] = {}
    duplicates: List[str] = []
    for name in sorted(libs):
        entries = libs[name]
        if len(entries) > 1:
            duplicates.append(name)
        details[f"lib.{name}"] = "; ".join(p for p, _ in entries)
        versions = "; ".join(v for _, v in entries if v)
        if versions:
            details[f"lib.{name}.version"] = versions
        dists = "; ".join(who[p] for p, _ in entries if p in who)
        if dists:
            details[f"lib.{name}.dist"] = dists
    return details, duplicates
