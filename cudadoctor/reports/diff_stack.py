"""``cudadoctor diff`` of the GPU stack: driver, GPUs (matched by PCI bus id, not by position),
toolkits, the libraries the loader finds first, framework builds and packages."""

from __future__ import annotations

import re
from typing import Callable, Dict, List, Optional, Sequence, Tuple
from cudadoctor.record import frozen

from cudadoctor.reports.diff_fields import (
    UNKNOWN,
    Difference,
    Field,
    by_name,
    compare_fields,
    compare_items,
    compare_keyed,
    fmt,
    mib,
    whole_section,
)
from cudadoctor.model import DriverInfo, FrameworkBuild, Gpu, Library, Package, Snapshot, Toolkit


# --------------------------------------------------------------------------- driver


def _nvml_error(d: DriverInfo) -> Optional[str]:
    """NVML's error, "none" once the driver was probed without one, unknown when not probed."""
    if d.nvml_error:
        return d.nvml_error
    return "none" if d.loaded is not None else None


DRIVER_FIELDS: Tuple[Field[DriverInfo], ...] = (
    ("version", lambda d: d.driver_version, False),
    ("CUDA supported", lambda d: d.cuda_driver_version, False),
    ("kernel module", lambda d: d.kernel_module_version, False),
    ("kernel module flavor", lambda d: d.kernel_module_flavor, False),
    ("loaded", lambda d: d.loaded, False),
    ("NVML error", lambda d: _nvml_error(d), False),
    ("NVML version", lambda d: d.nvml_version, False),
    ("nouveau loaded", lambda d: d.nouveau_loaded, False),
    ("read through", lambda d: d.source, False),
    ("device nodes", lambda d: sorted(d.device_nodes) if d.device_nodes is not None else None, False),
    ("device node order", lambda d: d.device_nodes, True),
)


def diff_driver(a: Optional[DriverInfo], b: Optional[DriverInfo]) -> List[Difference]:
    if a is None and b is None:
        return []
    out = compare_fields("driver", "", a or DriverInfo(), b or DriverInfo(), DRIVER_FIELDS)
    order = [d for d in out if d.field == "device node order"]
    if order and any(d.field == "device nodes" for d in out):
        out.remove(order[0])  # the set differs: the order is not news on top of it
    return out


# --------------------------------------------------------------------------- GPUs


def _link(gen: Optional[int], width: Optional[int]) -> Optional[str]:
    if gen is None and width is None:
        return None
    return f"gen{gen if gen is not None else '?'} x{width if width is not None else '?'}"


GPU_FIELDS: Tuple[Field[Gpu], ...] = (
    ("name", lambda g: g.name or (f"PCI device {g.pci_device_id}" if g.pci_device_id else None), False),
    ("compute capability", lambda g: g.compute_capability, False),
    ("memory", lambda g: mib(g.memory_total_mib), False),
    ("MIG", lambda g: g.mig_mode, False),
    ("ECC", lambda g: g.ecc_mode, False),
    ("PCIe link (max)", lambda g: _link(g.pcie_gen_max, g.pcie_width_max), False),
    ("PCIe width (current)", lambda g: f"x{g.pcie_width_current}" if g.pcie_width_current is not None else None, False),
    ("uncorrected ECC errors (volatile)", lambda g: g.ecc_uncorrected_volatile, False),
    ("uncorrected ECC errors (aggregate)", lambda g: g.ecc_uncorrected_aggregate, False),
    ("retired pages", lambda g: g.retired_pages, False),
    ("page retirement pending", lambda g: g.retired_pages_pending, False),
    ("uncorrectable remapped rows", lambda g: g.remapped_rows_uncorrectable, False),
    ("row remap pending", lambda g: g.remapped_rows_pending, False),
    ("row remap failed", lambda g: g.remapped_rows_failure, False),
    ("PCI device id", lambda g: g.pci_device_id, True),
    ("seen through", lambda g: g.source, False),
    # noise: what changes from one minute to the next, and what names rather than describes a GPU
    ("index", lambda g: g.index, True),
    ("PCIe gen (current)", lambda g: g.pcie_gen_current, True),
    ("memory used", lambda g: mib(g.memory_used_mib), True),
    ("temperature", lambda g: f"{g.temperature_c} °C" if g.temperature_c is not None else None, True),
    ("power limit", lambda g: f"{g.power_limit_w:g} W" if g.power_limit_w is not None else None, True),
    ("clock event reasons", lambda g: g.clocks_event_reasons, True),
    ("persistence mode", lambda g: g.persistence_mode, True),
    ("UUID", lambda g: g.uuid, True),
    ("serial", lambda g: g.serial, True),
)


def normalize_bus_id(bus_id: Optional[str]) -> Optional[str]:
    """``00000000:17:00.0`` (NVML), ``0000:17:00.0`` (sysfs) and ``17:00.0`` are the same slot."""
    if not bus_id:
        return None
    text = bus_id.strip().lower()
    parts = text.split(":")
    if len(parts) == 3:
        try:
            return f"{int(parts[0], 16):04x}:{parts[1]}:{parts[2]}"
        except ValueError:
            return text
    if len(parts) == 2:
        return f"0000:{text}"
    return text


def _gpu_signature(g: Gpu) -> Tuple[str, ...]:
    return tuple(fmt(get(g)) for _, get, noise in GPU_FIELDS if not noise)


def match_gpus(a: Sequence[Gpu], b: Sequence[Gpu]) -> List[Tuple[Optional[Gpu], Optional[Gpu]]]:
    """Pairs of the same GPU: by PCI bus id; the rest by identical facts (the same model listed in
    another order), then by index; a GPU left over is on one side only."""
    left, right = list(a), list(b)
    pairs: List[Tuple[Optional[Gpu], Optional[Gpu]]] = []

    def take(same: Callable[[Gpu, Gpu], bool]) -> None:
        for ga in list(left):
            for gb in right:
                if same(ga, gb):
                    pairs.append((ga, gb))
                    left.remove(ga)
                    right.remove(gb)
                    break

    take(lambda x, y: normalize_bus_id(x.pci_bus_id) is not None
         and normalize_bus_id(x.pci_bus_id) == normalize_bus_id(y.pci_bus_id))
    # Only GPUs without a bus id on either side are matched by their facts: two GPUs in different
    # slots are different GPUs, even when of the same model.
    take(lambda x, y: (normalize_bus_id(x.pci_bus_id) is None or normalize_bus_id(y.pci_bus_id) is None)
         and _gpu_signature(x) == _gpu_signature(y))
    take(lambda x, y: x.index == y.index)
    pairs.extend((ga, None) for ga in left)
    pairs.extend((None, gb) for gb in right)
    return sorted(pairs, key=_pair_index)


def _pair_index(pair: Tuple[Optional[Gpu], Optional[Gpu]]) -> Tuple[int, int]:
    """A's index first (pairs and GPUs only in A), then GPUs only in B by their index."""
    ga, gb = pair
    return (0, ga.index) if ga is not None else (1, gb.index if gb is not None else 0)


def gpu_label(a: Optional[Gpu], b: Optional[Gpu]) -> str:
    """``GPU 0``, ``GPU 0/1`` when the indexes differ, with the slot when known: ``GPU 0 (17:00.0)``."""
    first = a or b
    assert first is not None
    index = str(first.index) if a is None or b is None or a.index == b.index else f"{a.index}/{b.index}"
    bus = normalize_bus_id(first.pci_bus_id)
    slot = f" ({bus[5:] if bus.startswith('0000:') else bus})" if bus else ""
    return f"GPU {index}{slot}"


def gpu_summary(g: Gpu) -> str:
    bits = [g.name or f"NVIDIA GPU {g.pci_device_id or '(model unknown)'}"]
    if g.compute_capability:
        bits.append(f"CC {g.compute_capability}")
    if g.memory_total_mib is not None:
        bits.append(f"{g.memory_total_mib} MiB")
    return ", ".join(bits)


def diff_gpus(a: Snapshot, b: Snapshot) -> List[Difference]:
    whole = whole_section("gpus", a.gpus, b.gpus)
    if whole is not None:
        return whole
    out = compare_fields("gpus", "", a, b, (("listed by", lambda s: s.gpus_source, False),))
    for ga, gb in match_gpus(a.gpus or (), b.gpus or ()):
        label = gpu_label(ga, gb)
        if ga is None or gb is None:
            out.append(Difference("gpus", label, "", gpu_summary(ga) if ga else None, gpu_summary(gb) if gb else None))
        elif (ga.source == "pci") != (gb.source == "pci"):
            out.extend(compare_fields("gpus", label, ga, gb, PCI_ONLY_FIELDS))
        else:
            out.extend(compare_fields("gpus", label, ga, gb, GPU_FIELDS))
    return out


# A GPU no driver answered for on one side (seen on the PCI bus only) has no other facts there:
# its name (or device id) and that fact say it all, not a dozen "→ unknown" lines.
PCI_ONLY_FIELDS = tuple(f for f in GPU_FIELDS if f[0] in ("name", "seen through"))


# --------------------------------------------------------------------------- toolkits, libraries


ENV = "<env>"


def in_env(path: str, prefix: Optional[str]) -> str:
    """``path`` with the target environment's prefix written ``<env>``: the same wheel's library in
    two virtual environments (``~/proj/.venv``, ``/home/bob/venvs/torch``) is at the same place."""
    base = (prefix or "").rstrip("/\\")
    if base and (path == base or path[len(base):len(base) + 1] in ("/", "\\") and path.startswith(base)):
        return ENV + path[len(base):]
    return path


_PYTHON_LIB = re.compile(r"/lib/python\d+\.\d+t?/")


def where(path: str, prefix: Optional[str]) -> str:
    """A library's path as compared: inside the target environment written ``<env>/...``, with the
    Python version of ``lib/python3.X/site-packages`` left out (it is in the Python section), and
    ``/lib``, ``/lib64`` the same as ``/usr/lib``, ``/usr/lib64`` (one directory on merged-/usr systems)."""
    text = _PYTHON_LIB.sub("/lib/python3.x/", in_env(path, prefix))
    return "/usr" + text if text.startswith(("/lib/", "/lib64/")) else text


def _prefix(snapshot: Snapshot) -> Optional[str]:
    return snapshot.python.prefix if snapshot.python else None


TOOLKIT_FIELDS: Tuple[Field[Toolkit], ...] = (
    ("version", lambda t: t.version, False),
    ("active", lambda t: t.active, False),
    ("exists", lambda t: t.exists, False),
    ("nvcc", lambda t: t.nvcc, True),
    ("found via", lambda t: t.found_via, True),
    ("version read from", lambda t: t.version_source, True),
)


def _toolkit_summary(t: Toolkit) -> str:
    if t.exists is False:
        return "does not exist"
    return f"CUDA {t.version or UNKNOWN}" + (" (active)" if t.active else "")


def diff_toolkits(a: Snapshot, b: Snapshot) -> List[Difference]:
    """Toolkits by root (one inside the target environment, e.g. conda's, as ``<env>``)."""
    whole = whole_section("toolkits", a.toolkits, b.toolkits)
    if whole is not None:
        return whole
    return compare_items("toolkits", by_name(a.toolkits or (), lambda t: in_env(t.root.rstrip("/") or "/", _prefix(a))),
                         by_name(b.toolkits or (), lambda t: in_env(t.root.rstrip("/") or "/", _prefix(b))),
                         _toolkit_summary, TOOLKIT_FIELDS)


@frozen
class FirstCopy:
    """What is compared of a library family: the copy the loader finds first, its path inside the
    target environment written ``<env>/...`` (:func:`where`); the full paths and the other copies are noise."""

    version: Optional[str]
    found_via: Optional[str]
    where: str
    path: str
    realpath: Optional[str]
    every: Tuple[str, ...]

    @staticmethod
    def of(lib: Library, prefix: Optional[str]) -> "FirstCopy":
        first = lib.copies[0]
        every = tuple(sorted(f"{c.version or '?'} {where(c.path, prefix)}" for c in lib.copies))
        return FirstCopy(first.version, first.found_via, where(first.path, prefix), first.path, first.realpath, every)


LIBRARY_FIELDS: Tuple[Field[FirstCopy], ...] = (
    ("version", lambda c: c.version, False),
    ("found via", lambda c: c.found_via, False),
    ("path", lambda c: c.where, False),
    ("full path", lambda c: c.path, True),
    ("real path", lambda c: c.realpath, True),
    ("every copy", lambda c: c.every, True),
)


def _library_summary(c: FirstCopy) -> str:
    return f"{c.version or UNKNOWN} at {c.where}" + (f" ({c.found_via})" if c.found_via else "")


def diff_libraries(a: Snapshot, b: Snapshot) -> List[Difference]:
    whole = whole_section("libraries", a.libraries, b.libraries)
    if whole is not None:
        return whole
    found_a = {name: FirstCopy.of(lib, _prefix(a)) for name, lib in by_name(a.libraries or (), lambda x: x.name).items() if lib.copies}
    found_b = {name: FirstCopy.of(lib, _prefix(b)) for name, lib in by_name(b.libraries or (), lambda x: x.name).items() if lib.copies}
    return compare_items("libraries", found_a, found_b, _library_summary, LIBRARY_FIELDS)


# --------------------------------------------------------------------------- frameworks, packages


FRAMEWORK_FIELDS: Tuple[Field[FrameworkBuild], ...] = (
    ("version", lambda f: f.version, False),
    ("variant", lambda f: f.variant, False),
    ("CUDA", lambda f: f.cuda, False),
    ("cuDNN", lambda f: f.cudnn, False),
    ("NCCL", lambda f: f.nccl, False),
    ("distribution", lambda f: f.distribution, True),
    ("git version", lambda f: f.git_version, True),
    ("location", lambda f: f.location, True),
    ("details", lambda f: f.details, True),
)


def _framework_summary(f: FrameworkBuild) -> str:
    bits = [f.version or UNKNOWN]
    if f.variant:
        bits.append(f"{f.variant} build")
    if f.cuda:
        bits.append(f"CUDA {f.cuda}")
    if f.cudnn:
        bits.append(f"cuDNN {f.cudnn}")
    return ", ".join(bits)


def diff_frameworks(a: Snapshot, b: Snapshot) -> List[Difference]:
    whole = whole_section("frameworks", a.frameworks, b.frameworks)
    if whole is not None:
        return whole
    return compare_items("frameworks", by_name(a.frameworks or (), lambda f: f.name),
                         by_name(b.frameworks or (), lambda f: f.name), _framework_summary, FRAMEWORK_FIELDS)


def package_value(p: Package) -> str:
    """The version, and for a conda package its channel and build string (``cuda`` vs ``cpu``)."""
    if p.installer == "pip":
        return p.version or "(version not given)"
    extra = ", ".join(x for x in (p.channel, p.build) if x)
    return f"{p.version} ({p.installer}{', ' + extra if extra else ''})"


def _packages(packages: Sequence[Package], value: Callable[[Package], str]) -> Dict[str, str]:
    grouped: Dict[str, List[str]] = {}
    for p in packages:
        grouped.setdefault(p.name, []).append(value(p))
    return {name: " + ".join(sorted(set(values))) for name, values in grouped.items()}


def diff_packages(a: Snapshot, b: Snapshot) -> List[Difference]:
    whole = whole_section("packages", a.packages, b.packages)
    if whole is not None:
        return whole
    out = compare_keyed("packages", _packages(a.packages or (), package_value), _packages(b.packages or (), package_value))
    where_a = _packages(a.packages or (), lambda p: p.location or UNKNOWN)
    where_b = _packages(b.packages or (), lambda p: p.location or UNKNOWN)
    out.extend(Difference("packages", name, "location", where_a[name], where_b[name], noise=True)
               for name in sorted(set(where_a) & set(where_b)) if where_a[name] != where_b[name])
    return out
