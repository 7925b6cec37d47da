"""The invariants of ``gpus.json`` and ``architectures.json``: sorted unique records, compute
capabilities inside their architecture, PCI ids and names that resolve without ambiguity, and
architectures in order with a driver window of known branches. Run by ``cudadoctor data validate``
and the tests, never by a diagnosis, so :mod:`.gpus` loads this module only when asked.
"""

from __future__ import annotations

from typing import AbstractSet, Any, Dict, List, Mapping, Tuple

from cudadoctor.matrix.gpus import SEGMENTS, Architecture, GpuData, GpuModel
from cudadoctor.matrix.versions import vkey

GPUS = "gpus.json"
ARCHS = "architectures.json"


def invariants(data: GpuData, matrix: Any) -> List[str]:
    """Sorted, unique records; every GPU's compute capability inside its architecture; PCI ids
    that resolve to one GPU (or to several told apart by subsystem id, with one compute
    capability); names that never point at two compute capabilities; architectures in order with
    increasing capabilities and a driver window of known branches."""
    return _architecture_problems(data, matrix) + _gpu_problems(data)


def _model_key(m: GpuModel, generation: Mapping[str, int]) -> Tuple[int, str, int, str]:
    return (generation.get(m.architecture, len(generation)), m.name,
            SEGMENTS.index(m.segment) if m.segment in SEGMENTS else len(SEGMENTS), m.product or "")


def _architecture_problems(data: GpuData, matrix: Any) -> List[str]:
    out: List[str] = []
    names = [a.name for a in data.architectures]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        out.append(f"{ARCHS}: {dup}: listed twice")
    # generation order: each architecture's capabilities increase, architectures follow their first
    # capability, and no capability is claimed twice (Rubin's 10.7 comes after Blackwell's 12.1)
    caps = [vkey(cc) for a in data.architectures for cc in a.compute_capabilities]
    firsts = [vkey(a.compute_capabilities[0]) for a in data.architectures if a.compute_capabilities]
    within = all(vkey(x) < vkey(y) for a in data.architectures
                 for x, y in zip(a.compute_capabilities, a.compute_capabilities[1:]))
    if not within or any(b <= a for a, b in zip(firsts, firsts[1:])) or len(set(caps)) != len(caps):
        out.append(f"{ARCHS}: architectures are not in generation order with strictly increasing compute capabilities")
    known = {b.branch for b in matrix.cuda.branches}
    for a in data.architectures:
        out.extend(_one_architecture_problems(a, known))
    blocks = sorted(((b.first, b.last, f"{a.name} {b.chip}") for a in data.architectures for b in a.pci_device_id_ranges))
    for (_, last, name), (first, _, other) in zip(blocks, blocks[1:]):
        if first <= last:
            out.append(f"{ARCHS}: device-id ranges {name} and {other} overlap")
    return out


def _one_architecture_problems(a: Architecture, known: AbstractSet[str]) -> List[str]:
    out: List[str] = []
    where = f"{ARCHS}: {a.name}"
    for cc in a.tegra_compute_capabilities:
        if cc not in a.compute_capabilities:
            out.append(f"{where}: Tegra compute capability {cc} is not among its compute capabilities")
    for which, branch in (("first", a.first_driver_branch), ("last", a.last_driver_branch)):
        if branch is not None and branch not in known:
            out.append(f"{where}: {which}_driver_branch {branch} is not in driver_branches.json")
    lo, hi = a.first_driver_major, a.last_driver_major
    if lo is not None and hi is not None and lo > hi:
        out.append(f"{where}: first_driver_branch {a.first_driver_branch} is after last_driver_branch {a.last_driver_branch}")
    if a.requires_open_kernel_modules and a.supports_open_kernel_modules is False:
        out.append(f"{where}: requires the open kernel modules but does not support them")
    for block in a.pci_device_id_ranges:
        if block.first > block.last:
            out.append(f"{where}: range {block.chip} ends before it starts")
        if block.compute_capability and block.compute_capability not in a.compute_capabilities:
            out.append(f"{where}: range {block.chip}: compute capability {block.compute_capability} is not the architecture's")
    return out


def _gpu_problems(data: GpuData) -> List[str]:
    out = _order_problems(data)
    for m in data.models:
        out.extend(_model_problems(data, m))
    out.extend(_shared_id_problems(data))
    for tier in data._names:
        for text, named in sorted(tier.items()):
            if len({m.compute_capability for m in named}) > 1:
                out.append(f"{GPUS}: name {text!r} matches GPUs of different compute capability "
                           f"({', '.join(f'{m.label} {m.compute_capability}' for m in named)})")
    return out


def _order_problems(data: GpuData) -> List[str]:
    out: List[str] = []
    generation = {a.name: a.generation for a in data.architectures}
    keys = [_model_key(m, generation) for m in data.models]
    if keys != sorted(keys):
        at = next(i for i, (a, b) in enumerate(zip(keys, keys[1:])) if b < a) + 1
        out.append(f"{GPUS}: {data.models[at].label}: records are not sorted by (architecture generation, name, segment, product)")
    seen: Dict[Tuple[int, str, int, str], GpuModel] = {}
    for m, key in zip(data.models, keys):
        if key in seen:
            out.append(f"{GPUS}: {m.label}: listed twice (same name, segment and product)")
        seen[key] = m
    return out


def _model_problems(data: GpuData, m: GpuModel) -> List[str]:
    out: List[str] = []
    where = f"{GPUS}: {m.label}"
    arch = data.architecture(m.architecture)
    if arch is None or arch.name != m.architecture:
        out.append(f"{where}: architecture {m.architecture!r} is not in architectures.json")
    elif m.compute_capability not in arch.compute_capabilities:
        out.append(f"{where}: compute capability {m.compute_capability} is not one of {m.architecture}'s "
                   f"({', '.join(arch.compute_capabilities)})")
    for s in m.pci_subsystem_ids:
        if s.device_id not in m.pci_device_ids:
            out.append(f"{where}: subsystem entry for {s.device_id}, which is not in its pci_device_ids")
    for device in m.pci_device_ids_unconfirmed:
        if device in data._pci:
            holders = ", ".join(o.label for o in data._pci[device])
            out.append(f"{where}: unconfirmed id {device} is a confirmed id of {holders}")
    if not m.pci_device_ids and m.segment != "embedded" and m.confidence != "unverified":
        out.append(f"{where}: no PCI device id (only Jetson-class or unverified records may lack one)")
    for device in m.pci_device_ids:
        hit = data.pci_range(device)
        if hit is not None and (hit[0].name != m.architecture
                                or (hit[1].compute_capability and hit[1].compute_capability != m.compute_capability)):
            out.append(f"{where}: {device} lies in {hit[0].name} {hit[1].chip}'s range, which does not match "
                       f"{m.architecture} {m.compute_capability}")
    return out


def _shared_id_problems(data: GpuData) -> List[str]:
    """Device ids, subsystem triples and unconfirmed ids that several records claim."""
    out: List[str] = []
    for device, sharing in sorted(data._pci.items()):
        generic = [m for m in sharing if device not in {s.device_id for s in m.pci_subsystem_ids}]
        if len(generic) > 1:
            out.append(f"{GPUS}: {device}: maps to {', '.join(m.label for m in generic)} with no subsystem id to tell them apart")
        if len({m.compute_capability for m in sharing}) > 1:
            out.append(f"{GPUS}: {device}: its records disagree on compute capability "
                       f"({', '.join(f'{m.label} {m.compute_capability}' for m in sharing)})")
    triples: Dict[Tuple[str, str, str], GpuModel] = {}
    for m in data.models:
        for s in m.pci_subsystem_ids:
            if s.key in triples and triples[s.key] is not m:
                out.append(f"{GPUS}: {m.label}: subsystem {':'.join(s.key)} is also listed for {triples[s.key].label}")
            triples.setdefault(s.key, m)
    loose: Dict[str, GpuModel] = {}
    for m in data.models:
        for device in m.pci_device_ids_unconfirmed:
            if device in loose:
                out.append(f"{GPUS}: {m.label}: unconfirmed id {device} is also listed for {loose[device].label}")
            loose.setdefault(device, m)
    return out
