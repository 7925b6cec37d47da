"""GPU models and architectures: what a GPU is (by PCI device id or by the name NVML reports),
its compute capability and architecture, and which driver branches support that architecture.

Identify by PCI device id first: one marketing name can cover dies of different compute
capability (GeForce GT 730: GK208 3.5 or GK107 3.0), laptop and desktop parts often report the
same name, and a few device ids carry several names that only the PCI subsystem id tells apart
(A16 and A2 on 0x25b6). The name is the fallback, tolerant of case, of a missing 'NVIDIA ' prefix
and of the aliases the data lists. On a machine where no driver is loaded the probes still read
the device id from sysfs; :meth:`GpuData.identify` names such a GPU from it.

The lookups use indexes built once, in :func:`build`.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union
from cudadoctor.record import frozen

from cudadoctor.matrix._gpus_normalize import NVIDIA_VENDOR as NVIDIA_VENDOR
from cudadoctor.matrix._gpus_normalize import normalize_compute_capability as normalize_compute_capability
from cudadoctor.matrix._gpus_normalize import normalize_name as normalize_name
from cudadoctor.matrix._gpus_normalize import normalize_pci_id as normalize_pci_id
from cudadoctor.matrix._gpus_normalize import normalize_subsystem_id as normalize_subsystem_id
from cudadoctor.matrix._gpus_normalize import without_prefix
from cudadoctor.matrix.load import provenance
from cudadoctor.matrix.versions import major

# driver_branches.json: a driver version belongs to the newest branch at or below its first number
# (Windows R580 drivers are numbered 580.xx and 581.xx).
TABLES = ("gpus.json", "architectures.json", "driver_branches.json")
SEGMENTS = ("datacenter", "workstation", "consumer", "laptop", "embedded")


@frozen
class PciSubsystem:
    """A (device, subsystem vendor, subsystem device) triple under which NVIDIA's table gives a
    GPU one particular name. All ids lower-case '0x' hex."""

    device_id: str  # "0x2330"
    subsystem_vendor_id: str  # "0x10de"
    subsystem_device_id: str  # "0x16c0"

    @property
    def key(self) -> Tuple[str, str, str]:
        return (self.device_id, self.subsystem_vendor_id, self.subsystem_device_id)


@frozen
class GpuModel:
    name: str  # as NVML reports it: "NVIDIA H100 80GB HBM3", "Tesla T4", "Orin (nvgpu)"
    aliases: Tuple[str, ...]
    product: Optional[str]  # the module a shared name stands for: "Jetson AGX Orin"
    pci_device_ids: Tuple[str, ...]  # from NVIDIA's tables: ("0x2330",)
    pci_subsystem_ids: Tuple[PciSubsystem, ...]
    pci_device_ids_unconfirmed: Tuple[str, ...]  # only pci.ids lists these
    compute_capability: str  # "9.0"
    architecture: str  # "hopper"
    chip: Optional[str]
    segment: str  # datacenter | workstation | consumer | laptop | embedded
    memory_gib: Optional[float]
    memory_bandwidth_gbs: Optional[float]
    source: str
    confidence: str
    note: Optional[str] = None

    @property
    def label(self) -> str:
        """The name with what tells same-named records apart: 'NVIDIA GeForce GTX 1080 (laptop)'."""
        extra = self.product or self.segment
        return f"{self.name} ({extra})"


@frozen
class PciRange:
    """A block of device ids NVIDIA reserves for one chip (Blackwell's from gpu-admin-tools)."""

    chip: str
    first: int
    last: int
    compute_capability: Optional[str]

    def __contains__(self, device: object) -> bool:
        return isinstance(device, int) and self.first <= device <= self.last


@frozen
class Architecture:
    name: str  # "hopper"
    generation: int  # 0 for kepler, in the order of architectures.json
    compute_capabilities: Tuple[str, ...]
    tegra_compute_capabilities: Tuple[str, ...]  # Jetson/Tegra iGPUs: the branch window does not apply
    first_driver_branch: Optional[str]  # "R520"; None: older than every branch in driver_branches.json
    last_driver_branch: Optional[str]  # "R580"; None: still supported
    supports_open_kernel_modules: Optional[bool]
    requires_open_kernel_modules: Optional[bool]
    pci_device_id_ranges: Tuple[PciRange, ...]
    source: str
    confidence: str
    note: Optional[str] = None

    @property
    def first_driver_major(self) -> Optional[int]:
        return _branch_major(self.first_driver_branch)

    @property
    def last_driver_major(self) -> Optional[int]:
        return _branch_major(self.last_driver_branch)


@frozen
class GpuDriverSupport:
    """Does a driver's branch support a GPU architecture?

    ``kind``: ``ok``; ``driver_too_old_for_gpu`` (the driver's branch is older than
    ``first_branch``, the first to support the architecture); ``driver_dropped_gpu`` (newer than
    ``last_branch``, the last that supports it); ``not_applicable`` (a Jetson/Tegra GPU, which runs
    the driver of Jetson Linux); ``unknown`` (a compute capability or driver version the data
    cannot place)."""

    kind: str
    architecture: Optional[Architecture] = field(repr=False)
    driver_branch: Optional[str]  # "R590": the branch the driver version belongs to
    first_branch: Optional[str]
    last_branch: Optional[str]

    @property
    def ok(self) -> bool:
        return self.kind in ("ok", "not_applicable")


def _branch_major(branch: Optional[str]) -> Optional[int]:
    if branch and re.fullmatch(r"R\d{3}", branch):
        return int(branch[1:])
    return None


# ---------------------------------------------------------------------- the data


@frozen
class GpuData:
    models: Tuple[GpuModel, ...]
    architectures: Tuple[Architecture, ...]
    # indexes (built once by build())
    _pci: Mapping[str, Tuple[GpuModel, ...]] = field(default_factory=dict, repr=False, compare=False)
    _pci_default: Mapping[str, GpuModel] = field(default_factory=dict, repr=False, compare=False)
    _pci_subsystem: Mapping[Tuple[str, str, str], GpuModel] = field(default_factory=dict, repr=False, compare=False)
    _pci_unconfirmed: Mapping[str, Tuple[GpuModel, ...]] = field(default_factory=dict, repr=False, compare=False)
    _names: Tuple[Mapping[str, Tuple[GpuModel, ...]], ...] = field(default=(), repr=False, compare=False)
    _arch_by_name: Mapping[str, Architecture] = field(default_factory=dict, repr=False, compare=False)
    _arch_by_cc: Mapping[str, Architecture] = field(default_factory=dict, repr=False, compare=False)
    _branch_majors: Tuple[int, ...] = field(default=(), repr=False, compare=False)

    # ------------------------------------------------------------------ identification

    def by_pci_id(self, device_id: str, subsystem_id: Optional[str] = None,
                  include_unconfirmed: bool = False) -> Optional[GpuModel]:
        """The GPU with this PCI device id ('0x2330', '2330', '0x233010DE', '10de:2330').

        Where NVIDIA names one device id differently per subsystem, ``subsystem_id`` (NVML's
        '0x16C010DE' or lspci's '10de:16c0') picks the name; without it, or when it is not
        listed, the device id's generic name, else the first record (records sharing a device id
        share their compute capability). ``include_unconfirmed``: also ids only pci.ids lists."""
        device = normalize_pci_id(device_id)
        if device is None:
            return None
        if subsystem_id is not None:
            subsystem = normalize_subsystem_id(subsystem_id)
            if subsystem is not None:
                exact = self._pci_subsystem.get((device,) + subsystem)
                if exact is not None:
                    return exact
        found = self._pci_default.get(device)
        if found is not None:
            return found
        if include_unconfirmed:
            loose = self._pci_unconfirmed.get(device, ())
            return loose[0] if loose else None
        return None

    def candidates_for_pci_id(self, device_id: str) -> Tuple[GpuModel, ...]:
        """Every record listing this device id (several where the subsystem id decides the name)."""
        device = normalize_pci_id(device_id)
        return self._pci.get(device, ()) if device else ()

    def by_name(self, name: str) -> Optional[GpuModel]:
        """The GPU NVML calls ``name``: an exact (case-insensitive) name first, then an alias,
        then either without the 'NVIDIA ' prefix ('GeForce RTX 4090'). Where several records share
        the name (a desktop card and its laptop part), the first in table order."""
        found = self.by_name_all(name)
        return found[0] if found else None

    def by_name_all(self, name: str) -> Tuple[GpuModel, ...]:
        """All records of the best-matching tier of :meth:`by_name`."""
        if not isinstance(name, str) or not name.strip():
            return ()
        key = normalize_name(name)
        for tier, index in enumerate(self._names):
            found = index.get(without_prefix(key) if tier == 2 else key)
            if found:
                return found
        return ()

    def identify(self, name: Optional[str] = None, pci_device_id: Optional[str] = None,
                 subsystem_id: Optional[str] = None) -> Optional[GpuModel]:
        """The GPU, by PCI device id first (the name where several records share the id), then
        by name, then by an id only pci.ids lists."""
        if pci_device_id:
            candidates = self.candidates_for_pci_id(pci_device_id)
            if len(candidates) > 1 and name:
                named = [m for m in self.by_name_all(name) if m in candidates]
                if named:
                    return named[0]
            found = self.by_pci_id(pci_device_id, subsystem_id)
            if found is not None:
                return found
        if name:
            found = self.by_name(name) or self.resolve(name)[0]
            if found is not None:
                return found
        if pci_device_id:
            return self.by_pci_id(pci_device_id, include_unconfirmed=True)
        return None

    def resolve(self, name: str) -> Tuple[Optional[GpuModel], Tuple[GpuModel, ...]]:
        """The GPU a person names, however they write it (see :mod:`._gpus_resolve`): (the model,
        ()), or (None, the models it could be: several of different compute capability, or none)."""
        from cudadoctor.matrix import _gpus_resolve

        return _gpus_resolve.resolve(self, name)

    def compute_capability(self, name_or_id: str) -> Optional[str]:
        """The compute capability of a GPU named by PCI device id or by name; for an unlisted id
        inside a chip's reserved range (Blackwell), the chip's."""
        if normalize_pci_id(name_or_id) is not None:
            model = self.by_pci_id(name_or_id, include_unconfirmed=True)
            if model is not None:
                return model.compute_capability
            hit = self.pci_range(name_or_id)
            if hit is not None and hit[1].compute_capability:
                return hit[1].compute_capability
        model = self.by_name(name_or_id)
        return model.compute_capability if model else None

    def pci_range(self, device_id: str) -> Optional[Tuple[Architecture, PciRange]]:
        """The architecture and chip whose reserved device-id range holds ``device_id``."""
        device = normalize_pci_id(device_id)
        if device is None:
            return None
        number = int(device, 16)
        for arch in self.architectures:
            for block in arch.pci_device_id_ranges:
                if number in block:
                    return arch, block
        return None

    def architecture_for_pci_id(self, device_id: str) -> Optional[Architecture]:
        model = self.by_pci_id(device_id, include_unconfirmed=True)
        if model is not None:
            return self.architecture(model.architecture)
        hit = self.pci_range(device_id)
        return hit[0] if hit else None

    # ------------------------------------------------------------------ architectures

    def architecture(self, name: str) -> Optional[Architecture]:
        """By architecture name ('hopper', case-insensitive)."""
        return self._arch_by_name.get(name.strip().lower()) if isinstance(name, str) else None

    def architecture_of(self, compute_capability: str) -> Optional[Architecture]:
        """The architecture of a compute capability ('9.0', 'sm_90a', '120')."""
        cc = normalize_compute_capability(compute_capability)
        return self._arch_by_cc.get(cc) if cc else None

    def architecture_of_model(self, model: GpuModel) -> Optional[Architecture]:
        return self.architecture(model.architecture)

    def branch_major(self, driver_version: str) -> Optional[int]:
        """The branch a driver version belongs to, as a number: 581.57 -> 580 (a Windows R580
        driver), 535.104.05 -> 535; the version's own first number when no listed branch is below it."""
        number = major(driver_version)
        if number is None:
            return None
        below = [b for b in self._branch_majors if b <= number]
        return max(below) if below else number

    def driver_support(self, compute_capability: str, driver_version: str) -> GpuDriverSupport:
        """Whether the driver's branch (its major version: 535.104.05 -> R535) lies inside the
        architecture's window [first_driver_branch, last_driver_branch]."""
        arch = self.architecture_of(compute_capability)
        number = self.branch_major(driver_version) if isinstance(driver_version, str) else None
        branch = f"R{number}" if number is not None else None
        if arch is None or number is None:
            return GpuDriverSupport("unknown", arch, branch, arch.first_driver_branch if arch else None,
                                    arch.last_driver_branch if arch else None)
        cc = normalize_compute_capability(compute_capability)
        first, last = arch.first_driver_branch, arch.last_driver_branch
        if cc in arch.tegra_compute_capabilities:
            kind = "not_applicable"
        elif arch.first_driver_major is not None and number < arch.first_driver_major:
            kind = "driver_too_old_for_gpu"
        elif arch.last_driver_major is not None and number > arch.last_driver_major:
            kind = "driver_dropped_gpu"
        else:
            kind = "ok"
        return GpuDriverSupport(kind, arch, branch, first, last)

    # ------------------------------------------------------------------ performance

    def expected_bandwidth_gbs(self, model: Union[GpuModel, str]) -> Optional[float]:
        """Peak memory bandwidth in GB/s of a model (or of a GPU named by id or name); None where
        the data has no figure."""
        if isinstance(model, str):
            found = self.identify(pci_device_id=model) if normalize_pci_id(model) else self.by_name(model)
            if found is None:
                return None
            model = found
        return model.memory_bandwidth_gbs


# ---------------------------------------------------------------------- build


def _number(value: Any) -> Optional[float]:
    return float(value) if value is not None else None


def build(docs: Mapping[str, Mapping[str, Any]]) -> GpuData:
    models = tuple(_model(r) for r in docs["gpus.json"]["records"])
    architectures = tuple(_architecture(i, r) for i, r in enumerate(docs["architectures.json"]["records"]))
    pci, default, by_subsystem, loose = _pci_indexes(models)
    by_cc: Dict[str, Architecture] = {}
    for arch in architectures:
        for cc in arch.compute_capabilities:
            by_cc.setdefault(cc, arch)
    return GpuData(
        models, architectures,
        _pci=pci, _pci_default=default, _pci_subsystem=by_subsystem, _pci_unconfirmed=loose,
        _names=_name_indexes(models),
        _arch_by_name={a.name: a for a in reversed(architectures)}, _arch_by_cc=by_cc,
        _branch_majors=tuple(sorted(int(r["major"]) for r in docs["driver_branches.json"]["records"])),
    )


def _model(r: Mapping[str, Any]) -> GpuModel:
    return GpuModel(
        name=r["name"], aliases=tuple(r["aliases"]), product=r.get("product"),
        pci_device_ids=tuple(r["pci_device_ids"]),
        pci_subsystem_ids=tuple(PciSubsystem(s["device_id"], s["subsystem_vendor_id"], s["subsystem_device_id"])
                                for s in r.get("pci_subsystem_ids", ())),
        pci_device_ids_unconfirmed=tuple(r.get("pci_device_ids_unconfirmed", ())),
        compute_capability=r["compute_capability"], architecture=r["architecture"], chip=r.get("chip"),
        segment=r["segment"], memory_gib=_number(r.get("memory_gib")),
        memory_bandwidth_gbs=_number(r.get("memory_bandwidth_gbs")), **provenance(r),
    )


def _architecture(generation: int, r: Mapping[str, Any]) -> Architecture:
    return Architecture(
        name=r["name"], generation=generation, compute_capabilities=tuple(r["compute_capabilities"]),
        tegra_compute_capabilities=tuple(r.get("tegra_compute_capabilities", ())),
        first_driver_branch=r["first_driver_branch"], last_driver_branch=r["last_driver_branch"],
        supports_open_kernel_modules=r.get("supports_open_kernel_modules"),
        requires_open_kernel_modules=r.get("requires_open_kernel_modules"),
        pci_device_id_ranges=tuple(PciRange(b["chip"], int(b["first"], 16), int(b["last"], 16), b.get("compute_capability"))
                                   for b in r.get("pci_device_id_ranges", ())),
        **provenance(r),
    )


_Models = Mapping[str, Tuple[GpuModel, ...]]


def _pci_indexes(models: Sequence[GpuModel]) -> Tuple[_Models, Mapping[str, GpuModel],
                                                       Mapping[Tuple[str, str, str], GpuModel], _Models]:
    """Records by device id; the one a bare device id means; by subsystem triple; by unconfirmed id."""
    pci: Dict[str, List[GpuModel]] = {}
    loose: Dict[str, List[GpuModel]] = {}
    by_subsystem: Dict[Tuple[str, str, str], GpuModel] = {}
    for m in models:
        for device in m.pci_device_ids:
            pci.setdefault(device, []).append(m)
        for device in m.pci_device_ids_unconfirmed:
            loose.setdefault(device, []).append(m)
        for s in m.pci_subsystem_ids:
            by_subsystem.setdefault(s.key, m)
    default: Dict[str, GpuModel] = {}
    for device, found in pci.items():
        generic = [m for m in found if device not in {s.device_id for s in m.pci_subsystem_ids}]
        default[device] = (generic or found)[0]
    return ({k: tuple(v) for k, v in pci.items()}, default, by_subsystem,
            {k: tuple(v) for k, v in loose.items()})


def _name_indexes(models: Sequence[GpuModel]) -> Tuple[_Models, ...]:
    """The tiers of :meth:`GpuData.by_name_all`: exact names, aliases, either without 'NVIDIA '."""
    exact: Dict[str, List[GpuModel]] = {}
    alias: Dict[str, List[GpuModel]] = {}
    bare: Dict[str, List[GpuModel]] = {}
    for m in models:
        _add(exact, normalize_name(m.name), m)
        for a in m.aliases:
            _add(alias, normalize_name(a), m)
        for text in (m.name,) + m.aliases:
            _add(bare, without_prefix(normalize_name(text)), m)
    return tuple({k: tuple(v) for k, v in index.items()} for index in (exact, alias, bare))


def _add(index: Dict[str, List[GpuModel]], key: str, model: GpuModel) -> None:
    found = index.setdefault(key, [])
    if model not in found:
        found.append(model)


# ---------------------------------------------------------------------- invariants


def segments_covered(models: Sequence[GpuModel]) -> Dict[str, int]:
    """How many records each segment has (for coverage reports)."""
    counts = {s: 0 for s in SEGMENTS}
    for m in models:
        counts[m.segment] = counts.get(m.segment, 0) + 1
    return counts
