"""Is the GPU itself healthy? Lost GPUs, uncorrected memory errors and pending memory repairs,
a PCIe link narrower or slower than it should be, and clocks held back by heat or power.

Every fact comes from NVML (some from nvidia-smi); a field NVML does not report stays unknown
and its check stays silent. Findings about several GPUs with the same facts are grouped.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable, Dict, Hashable, List, Optional, Sequence, Tuple, TypeVar, Union

from cudadoctor.model import Category, Finding, Gpu, Severity, Snapshot
from cudadoctor.checks.base import Check, finding, gpus, ref

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

K = TypeVar("K", bound=Hashable)

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
HW = Category.HARDWARE_FAULT

GPU_IS_LOST = "NVML_ERROR_GPU_IS_LOST"
_LOST = re.compile(r"NVML_ERROR_GPU_IS_LOST|GPU is lost", re.IGNORECASE)
_LOST_INDEX = re.compile(r"^GPU (\d+):")
_BUS_ID = re.compile(r"\b((?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\b")

# nvmlClocksEventReasons that mean the GPU is slowed by heat or by its power supply, in the words
# of nvml.h; sw_power_cap (the board at its power limit) is normal under load and handled apart.
SLOWDOWNS: Dict[str, str] = {
    "hw_thermal_slowdown": "hardware thermal slowdown: the GPU is too hot and its hardware cut the clocks",
    "sw_thermal_slowdown": "software thermal slowdown: the driver lowered the clocks to keep the GPU or its "
                           "memory below their maximum operating temperature",
    "hw_power_brake_slowdown": "hardware power brake: the system asserted the external power-brake signal "
                               "(an overloaded power supply or a chassis power limit)",
    "hw_slowdown": "hardware slowdown: clocks cut by half or more, because of heat, the power brake or a power "
                   "supply problem",
}
IDLE, POWER_CAP = "gpu_idle", "sw_power_cap"


# ---------------------------------------------------------------------------- naming


def _name(g: Gpu, matrix: Matrix) -> str:
    if g.name:
        return g.name
    model = matrix.gpus.identify(pci_device_id=g.pci_device_id) if g.pci_device_id else None
    return model.name if model else f"PCI device {g.pci_device_id or 'unknown'}"


def _label(group: Sequence[Gpu], matrix: Matrix) -> str:
    """'GPU 0 (NVIDIA H100 80GB HBM3)', 'GPUs 0, 3 (NVIDIA H100 80GB HBM3)', 'GPUs 0 (A), 1 (B)'."""
    names = [_name(g, matrix) for g in group]
    if len(group) == 1:
        return f"GPU {group[0].index} ({names[0]})"
    if len(set(names)) == 1:
        return f"GPUs {', '.join(str(g.index) for g in group)} ({names[0]})"
    return "GPUs " + ", ".join(f"{g.index} ({n})" for g, n in zip(group, names))


def _grouped(items: Sequence[Gpu], key: Callable[[Gpu], Optional[K]]) -> List[Tuple[K, List[Gpu]]]:
    """GPUs with the same (non-None) key, in the order their first member appears."""
    groups: Dict[K, List[Gpu]] = {}
    for g in items:
        k = key(g)
        if k is not None:
            groups.setdefault(k, []).append(g)
    return list(groups.items())


def _indexes(group: Sequence[Gpu]) -> str:
    return ",".join(str(g.index) for g in group)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# ---------------------------------------------------------------------------- lost GPU


def check_gpu_lost(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """NVML (or nvidia-smi) says a GPU is lost: it fell off the PCIe bus (Xid 79)."""
    lost = [e for e in snap.errors if e.probe in ("gpus", "driver") and _LOST.search(e.detail)]
    if not lost:
        return []
    known = {g.index: g for g in gpus(snap)}
    which: Dict[str, str] = {}  # label -> the error's detail, one finding per GPU
    for e in lost:
        index = _LOST_INDEX.match(e.detail)
        bus = _BUS_ID.search(e.detail)
        if index and int(index.group(1)) in known:
            label = _label([known[int(index.group(1))]], matrix)
        elif index:
            label = f"GPU {index.group(1)}"
        elif bus:
            label = f"the GPU at PCI {bus.group(1)}"
        else:
            label = "a GPU"
        which.setdefault(label, e.detail)
    if len(which) > 1:
        which.pop("a GPU", None)
    return [finding(
        "gpu-fallen-off-bus", E, HW,
        f"{label} has fallen off the bus: the driver lost it",
        why=f"The driver reported '{detail}': the GPU stopped responding on PCIe (the kernel log shows "
            "'Xid 79, GPU has fallen off the bus'). Nothing can use it until the machine reboots, and software "
            "changes do not help. Usual causes: power delivery (power supply, cables, connector seating), "
            "overheating, the slot or riser, PCIe power management, or failing hardware.",
        fix="Read the kernel log for the Xid and what came before it, then reboot. If it happens again, check "
            "power cables and seating, cooling, and the slot; then have the GPU tested.",
        commands=["sudo dmesg | grep -E 'NVRM|Xid'", "sudo reboot",
                  "sudo journalctl -k -b -1 | grep -E 'NVRM|Xid'    # after the reboot: the previous boot's log"],
        evidence=["errors"],
        source=[ref("errors.json", "xid-79-fallen-off-bus")],
    ) for label, detail in which.items()]


# ---------------------------------------------------------------------------- memory


def _memory_state(g: Gpu, said: str = "") -> str:
    """The other memory repair facts NVML reports for this GPU (not ``said``, the finding's own)."""
    parts = []
    if g.remapped_rows_uncorrectable:
        parts.append(f"{_plural(g.remapped_rows_uncorrectable, 'row')} remapped for uncorrectable errors")
    if g.remapped_rows_pending and said != "remapped_rows_pending":
        parts.append("a row remap waits for a GPU reset")
    if g.retired_pages:
        parts.append(f"{_plural(g.retired_pages, 'page')} retired")
    if g.retired_pages_pending and said != "retired_pages_pending":
        parts.append("a page retirement waits for a GPU reset")
    return f" NVML also reports: {'; '.join(parts)}." if parts else ""


def _inspect(index: int) -> str:
    return f"nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT -i {index}"


def _reset(index: int) -> str:
    return f"sudo nvidia-smi -r -i {index}    # reset the GPU: stop every process on it first (or reboot)"


def check_ecc(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """Uncorrected (double-bit) ECC errors: since the driver loaded (error), or only in the
    GPU's lifetime count (warning)."""
    out: List[Finding] = []
    for g in gpus(snap):
        volatile, aggregate = g.ecc_uncorrected_volatile, g.ecc_uncorrected_aggregate
        label = _label([g], matrix)
        if volatile is not None and volatile > 0:
            lifetime = f" ({aggregate} over the GPU's lifetime)" if aggregate is not None else ""
            out.append(finding(
                "ecc-uncorrected-volatile", E, HW,
                f"{label} has had {_plural(volatile, 'uncorrected ECC error')} since the driver was loaded",
                why=f"NVML counts {volatile} uncorrected (double-bit) ECC memory errors since the driver was "
                    f"loaded{lifetime}. Each one kills the CUDA program that touched the bad memory "
                    "('uncorrectable ECC error encountered'), and programs on this GPU can fail again until the "
                    "memory is repaired by a GPU reset." + _memory_state(g),
                fix="Stop the work on this GPU, look at its memory error state, and reset it (or reboot) so that "
                    "the bad memory is retired or remapped. If errors come back after the reset, take the GPU "
                    "out of service and have it replaced (RMA).",
                commands=[_inspect(g.index), "sudo dmesg | grep -E 'Xid'", _reset(g.index)],
                evidence=[f"gpus[{g.index}].ecc_uncorrected_volatile", f"gpus[{g.index}].ecc_uncorrected_aggregate"],
            ))
        elif aggregate is not None and aggregate > 0:
            recent = ("none since the driver was loaded" if volatile == 0
                      else "how many since the driver was loaded is unknown")
            out.append(finding(
                "ecc-uncorrected-aggregate", W, HW,
                f"{label} has a history of {_plural(aggregate, 'uncorrected ECC error')}",
                why=f"NVML counts {aggregate} uncorrected (double-bit) ECC memory errors over the GPU's lifetime, "
                    f"{recent}. Past errors are usually repaired by page retirement or row remapping; a count "
                    "that keeps growing means the memory is failing." + _memory_state(g),
                fix="Nothing to do while the count stays the same. Note it, and compare after the next jobs; if it "
                    "grows, or a row remap fails, have the GPU replaced.",
                commands=[_inspect(g.index)],
                evidence=[f"gpus[{g.index}].ecc_uncorrected_aggregate", f"gpus[{g.index}].ecc_uncorrected_volatile"],
            ))
    return out


def check_memory_repair(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """Page retirement or row remapping waiting for a reset, or a row remap that failed."""
    out: List[Finding] = []
    for g in gpus(snap):
        label = _label([g], matrix)
        if g.remapped_rows_failure:
            out.append(finding(
                "row-remap-failure", E, HW,
                f"{label} failed to remap a bad memory row: it needs service",
                why="NVML reports that a row remap failed: the GPU found a memory row with uncorrectable errors "
                    "and could not replace it with a spare one (its spare rows may be used up). The bad memory "
                    "stays in use, and programs on this GPU will keep failing." + _memory_state(g),
                fix="Take the GPU out of service and contact the vendor for a replacement (RMA); keep the output "
                    "below for the support case.",
                commands=[_inspect(g.index), "nvidia-smi -q -i " + str(g.index) + " > gpu-report.txt"],
                evidence=[f"gpus[{g.index}].remapped_rows_failure", f"gpus[{g.index}].remapped_rows_uncorrectable"],
            ))
        elif g.remapped_rows_pending:
            out.append(finding(
                "row-remap-pending", W, HW,
                f"{label} has a memory row remap waiting for a GPU reset",
                why="NVML reports a pending row remap: after memory errors the GPU marked a row for replacement "
                    "by a spare one, which happens only at the next GPU reset. Until then the bad row is still "
                    "in use." + _memory_state(g, "remapped_rows_pending"),
                fix="Reset the GPU when no job is running on it, or reboot.",
                commands=[_reset(g.index), _inspect(g.index)],
                evidence=[f"gpus[{g.index}].remapped_rows_pending"],
            ))
        if g.retired_pages_pending:
            out.append(finding(
                "retired-pages-pending", W, HW,
                f"{label} has a memory page retirement waiting for a GPU reset",
                why="NVML reports a pending page retirement: after ECC errors the driver marked memory pages as "
                    "bad, and stops using them only after the driver reloads or the GPU is reset. Until then "
                    "programs may still be given the bad memory." + _memory_state(g, "retired_pages_pending"),
                fix="Reset the GPU when no job is running on it, or reboot.",
                commands=[_reset(g.index), _inspect(g.index)],
                evidence=[f"gpus[{g.index}].retired_pages_pending", f"gpus[{g.index}].retired_pages"],
            ))
    return out


# ---------------------------------------------------------------------------- PCIe


def _lspci(g: Gpu) -> str:
    bus = g.pci_bus_id or ""
    if re.fullmatch(r"[0-9a-fA-F]{8}:.*", bus):
        bus = f"{int(bus[:8], 16):04x}{bus[8:]}".lower()  # lspci wants a 4-digit domain
    return f"sudo lspci -vv -s {bus} | grep -E 'LnkCap|LnkSta'" if bus else "sudo lspci -vv -d 10de: | grep -E 'LnkCap|LnkSta'"


def _idle(g: Gpu) -> Optional[bool]:
    return None if g.clocks_event_reasons is None else IDLE in g.clocks_event_reasons


def check_pcie_link(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """A link trained narrower than GPU and slot allow (always a problem), or a slower generation
    while the GPU is busy (at idle a lower generation is normal power saving)."""
    out: List[Finding] = []

    def narrow(g: Gpu) -> Optional[Tuple[int, int]]:
        cur, top = g.pcie_width_current, g.pcie_width_max
        return (cur, top) if cur and top and cur < top else None

    for (cur, top), group in _grouped(gpus(snap), narrow):
        gens = [(g.pcie_gen_current, g.pcie_gen_max) for g in group]
        gen_note = ""
        if all(c and m and c < m for c, m in gens) and all(_idle(g) for g in group):
            c, m = gens[0]
            gen_note = (f" The lower generation (gen{c} of gen{m}) is normal: an idle GPU drops its link to a "
                        "slower generation to save power, and speeds it up under load.")
        out.append(finding(
            "pcie-link-width-reduced", W, HW,
            f"{_label(group, matrix)}: PCIe link at x{cur} of x{top} lanes",
            why=f"NVML reports the link at {cur} lanes while GPU and slot support {top}: transfers between host "
                f"and GPU get at most {cur}/{top} of their bandwidth. The usual causes are a card or riser not "
                "fully seated, a slot wired with fewer lanes than its size, or a damaged link that trained "
                f"narrower.{gen_note}",
            fix="Reseat the card (and its riser or cable), check in the board's manual how many lanes the slot "
                "has, and look for PCIe errors in the kernel log.",
            commands=[_lspci(group[0]), "sudo dmesg | grep -iE 'AER|pcie bus error'"],
            evidence=[f"gpus[{g.index}].pcie_width_current" for g in group]
            + [f"gpus[{g.index}].pcie_width_max" for g in group],
        ))

    def slow_while_busy(g: Gpu) -> Optional[Tuple[int, int]]:
        cur, top = g.pcie_gen_current, g.pcie_gen_max
        return (cur, top) if cur and top and cur < top and _idle(g) is False else None

    for (cur, top), group in _grouped(gpus(snap), slow_while_busy):
        out.append(finding(
            "pcie-link-gen-reduced", W, HW,
            f"{_label(group, matrix)}: PCIe link at gen{cur} of gen{top} while busy",
            why=f"NVML reports PCIe gen{cur} while GPU and slot support gen{top}, and the GPU was not idle (no "
                "'gpu_idle' clock event). At idle a lower generation is normal power saving; under load the link "
                "should run at its full speed. Causes: a BIOS setting that limits the slot's speed, a riser, "
                "retimer or extension cable that cannot hold the speed, or a link with signal errors. If the GPU "
                "only had light work at that moment, check again under load.",
            fix="Check again while a job runs; if it stays low, check the BIOS PCIe speed setting for the slot, "
                "reseat the card and remove risers, and look for PCIe errors in the kernel log.",
            commands=[_lspci(group[0]), "nvidia-smi -q -d PERFORMANCE -i " + _indexes(group),
                      "sudo dmesg | grep -iE 'AER|pcie bus error'"],
            evidence=[f"gpus[{g.index}].pcie_gen_current" for g in group]
            + [f"gpus[{g.index}].clocks_event_reasons" for g in group],
        ))
    return out


# ---------------------------------------------------------------------------- clocks


def check_throttling(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """Clocks held back now by heat or by the power supply (warning); by the board's power limit
    under load (a note: that is how GPUs run at full load)."""
    out: List[Finding] = []

    def slowdowns(g: Gpu) -> Optional[Tuple[str, ...]]:
        found = tuple(r for r in SLOWDOWNS if r in (g.clocks_event_reasons or ()))
        return found or None

    for reasons, group in _grouped(gpus(snap), slowdowns):
        temps = [f"{g.temperature_c} °C" for g in group if g.temperature_c is not None]
        temp = f" The GPU temperature is {', '.join(temps)}." if temps else ""
        decoded = "; ".join(SLOWDOWNS[r] for r in reasons)
        out.append(finding(
            "gpu-clocks-throttled", W, HW,
            f"{_label(group, matrix)}: clocks slowed down now ({', '.join(reasons)})",
            why=f"NVML reports why the clocks are held back now: {decoded}.{temp} Programs on this GPU run slower "
                "than they should, and heat or power problems can also make it fail.",
            fix="Check cooling (fans, airflow, dust, room temperature) and power (supply rating, cables and "
                "connectors fully seated); watch temperature, power and clock-event counters while a job runs.",
            commands=["nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i " + _indexes(group),
                      "nvidia-smi dmon -s pcv -i " + _indexes(group)],
            evidence=[f"gpus[{g.index}].clocks_event_reasons" for g in group]
            + [f"gpus[{g.index}].temperature_c" for g in group],
        ))

    def power_capped(g: Gpu) -> Optional[Union[float, str]]:
        reasons = g.clocks_event_reasons or ()
        if POWER_CAP not in reasons or IDLE in reasons or slowdowns(g):
            return None
        return g.power_limit_w if g.power_limit_w is not None else "unknown"

    for limit, group in _grouped(gpus(snap), power_capped):
        watts = f" ({limit:g} W)" if isinstance(limit, (int, float)) else ""
        out.append(finding(
            "gpu-power-capped", INFO, HW,
            f"{_label(group, matrix)}: running at the power limit{watts}",
            why=f"NVML reports the 'sw_power_cap' clock event: the driver holds the clocks where the board stays "
                f"within its enforced power limit{watts}. Under heavy load this is how a GPU normally runs.",
            fix="Nothing to do. If the limit was lowered on purpose (nvidia-smi -pl), it can be raised again within "
                "the board's range.",
            commands=["nvidia-smi -q -d POWER -i " + _indexes(group)],
            evidence=[f"gpus[{g.index}].clocks_event_reasons" for g in group]
            + [f"gpus[{g.index}].power_limit_w" for g in group],
        ))
    return out


CHECKS = (
    Check("gpu-lost", check_gpu_lost, ("gpu-fallen-off-bus",), 6, "no GPU has fallen off the bus"),
    Check("ecc", check_ecc, ("ecc-uncorrected-volatile", "ecc-uncorrected-aggregate"), 6,
          "no uncorrected ECC memory errors"),
    Check("memory-repair", check_memory_repair, ("row-remap-failure", "row-remap-pending", "retired-pages-pending"), 6,
          "no memory repair failed or waits for a reset"),
    Check("pcie-link", check_pcie_link, ("pcie-link-width-reduced", "pcie-link-gen-reduced"), 6,
          "each GPU's PCIe link runs at its full width (and speed under load)"),
    Check("throttling", check_throttling, ("gpu-clocks-throttled", "gpu-power-capped"), 6,
          "no GPU is slowed down by heat or power"),
)
