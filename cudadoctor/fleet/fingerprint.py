"""A node's configuration fingerprint: the facts that decide whether two nodes run the same stack.

Driver version, GPU models and count, CUDA toolkit versions, framework builds (with their CUDA),
the version of cuDNN, NCCL and cuBLAS the loader finds first, and the compatibility data version
that judged it. Nodes with equal fingerprints form one configuration. Read from the report's raw
dict (:mod:`cudadoctor.fleet.fields`), never from Snapshot dataclasses, for speed.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, List, Optional, Tuple
from cudadoctor.record import frozen

from cudadoctor.fleet.fields import items, obj, text

# (component, value) pairs in a fixed order: hashable, and readable as they are.
Fingerprint = Tuple[Tuple[str, str], ...]

UNKNOWN = "unknown"
NONE = "none"
# Libraries whose first copy is part of the fingerprint, with the name users know them by.
KEY_LIBRARIES = (("libcudnn", "cuDNN"), ("libnccl", "NCCL"), ("libcublas", "cuBLAS"))
KEY_NAMES = frozenset(name for name, _ in KEY_LIBRARIES)
# The Difference section of `cudadoctor diff` that shows each component (None: diff has none).
SECTION = {"driver": "driver", "gpus": "gpus", "cuda": "toolkits", "frameworks": "frameworks",
           "cuDNN": "libraries", "NCCL": "libraries", "cuBLAS": "libraries", "data": None}


def fingerprint(report: Dict[str, Any], snapshot: Dict[str, Any]) -> Fingerprint:
    """The fingerprint of one report (``report`` the envelope, ``snapshot`` its snapshot);
    raises :class:`~cudadoctor.fleet.fields.BadField` for a value of the wrong type."""
    data = report.get("data_version")
    out: List[Tuple[str, str]] = [
        ("driver", _driver(snapshot)),
        ("gpus", _gpus(snapshot)),
        ("cuda", _toolkits(snapshot)),
        ("frameworks", _frameworks(snapshot)),
    ]
    libraries = _first_copies(snapshot)
    out.extend((label, libraries.get(name, NONE) if libraries is not None else UNKNOWN) for name, label in KEY_LIBRARIES)
    out.append(("data", data if isinstance(data, str) else UNKNOWN))
    return tuple(out)


def _driver(snapshot: Dict[str, Any]) -> str:
    driver = obj(snapshot, "driver", "snapshot")
    if driver is None:
        return UNKNOWN
    version = text(driver, "driver_version", "snapshot.driver")
    if version:
        return version
    return "not loaded" if driver.get("loaded") is False else UNKNOWN


def _gpus(snapshot: Dict[str, Any]) -> str:
    gpus = items(snapshot, "gpus", "snapshot")
    if gpus is None:
        return UNKNOWN
    if not gpus:
        return NONE
    names: Counter[str] = Counter(gpu_name(g, i) for i, g in enumerate(gpus))
    return " · ".join(f"{n}× {name}" for name, n in sorted(names.items()))


def gpu_name(g: Dict[str, Any], i: int) -> str:
    """The model name of ``snapshot.gpus[i]``, else its PCI device id."""
    name = g.get("name")
    if type(name) is str and name:
        return name
    path = f"snapshot.gpus[{i}]"
    text(g, "name", path)  # raises for a wrong type
    device = text(g, "pci_device_id", path)
    return f"PCI device {device}" if device else "unknown GPU"


def _toolkits(snapshot: Dict[str, Any]) -> str:
    toolkits = items(snapshot, "toolkits", "snapshot")
    if toolkits is None:
        return UNKNOWN
    versions = set()
    for i, t in enumerate(toolkits):
        path = f"snapshot.toolkits[{i}]"
        if t.get("exists") is False:  # only a variable such as CUDA_HOME names it
            continue
        versions.add(text(t, "version", path) or "?")
    return ", ".join(sorted(versions)) if versions else NONE


def _frameworks(snapshot: Dict[str, Any]) -> str:
    builds = items(snapshot, "frameworks", "snapshot")
    if builds is None:
        return UNKNOWN
    out = []
    for i, b in enumerate(builds):
        path = f"snapshot.frameworks[{i}]"
        name = text(b, "name", path) or "?"
        version = text(b, "version", path) or UNKNOWN
        variant, cuda = text(b, "variant", path), text(b, "cuda", path)
        label = f"{name} {version}"
        if "+" not in version:  # a conda or source build: its version does not say what it was built for
            if variant == "cuda" and cuda:
                label += f" (CUDA {cuda})"
            elif variant:
                label += f" ({variant})"
        out.append(label)
    return " · ".join(sorted(out)) if out else NONE


def _first_copies(snapshot: Dict[str, Any]) -> Optional[Dict[str, str]]:
    """The version of the first copy of each key library (the one the loader picks)."""
    libraries = items(snapshot, "libraries", "snapshot")
    if libraries is None:
        return None
    out: Dict[str, str] = {}
    for i, lib in enumerate(libraries):
        name = lib.get("name")
        if type(name) is not str:
            text(lib, "name", f"snapshot.libraries[{i}]")  # raises for a wrong type; null: skipped
            continue
        if name not in KEY_NAMES or name in out:  # only the key libraries are read: fast
            continue
        path = f"snapshot.libraries[{i}]"
        copies = items(lib, "copies", path)
        if copies:
            out[name] = text(copies[0], "version", f"{path}.copies[0]") or "?"
    return out


def describe(fp: Fingerprint) -> str:
    """The fingerprint in one line: ``driver 570.124.06 · 8× NVIDIA H100 80GB HBM3 · CUDA 12.8.1 · ...``."""
    parts = []
    for component, value in fp:
        if component == "driver":
            parts.append(f"driver {value}")
        elif component == "gpus":
            parts.append("no GPU" if value == NONE else ("GPUs unknown" if value == UNKNOWN else value))
        elif component == "cuda":
            parts.append("no CUDA toolkit" if value == NONE else f"CUDA {value}")
        elif component == "frameworks":
            parts.append("no framework" if value == NONE else ("frameworks unknown" if value == UNKNOWN else value))
        elif value not in (NONE, UNKNOWN) or component == "data":  # an absent library is not news
            parts.append(f"{component} {value}")
    return " · ".join(parts)


def changes(a: Fingerprint, b: Fingerprint) -> List[Tuple[str, str, str]]:
    """(component, value in a, value in b) for every component that differs."""
    other = dict(b)
    return [(component, value, other.get(component, UNKNOWN)) for component, value in a if other.get(component, UNKNOWN) != value]


def phrase(component: str, a: str, b: str) -> str:
    """A fingerprint change in the words of :func:`cudadoctor.reports.diff.phrase`: ``data 2026.10.0 → 2026.11.0``."""
    label = {"cuda": "CUDA toolkits", "gpus": "GPUs"}.get(component, component)
    return f"{label} {a} → {b}"


@frozen
class Change:
    """One way a configuration differs from the majority (a Difference of `cudadoctor diff`, or a
    fingerprint component diff does not show)."""

    section: str
    key: str
    a: Optional[str]  # the majority's value; None when absent there
    b: Optional[str]  # this configuration's value
    phrase: str  # "driver 570.124.06 → 550.54.15"
    follows: bool = False  # its values contain an earlier change's (libcuda's version after the driver's)
