"""Hardware health checks, as an operator would read them: a lost GPU, uncorrected memory errors,
memory repairs waiting for a reset, a degraded PCIe link, clocks held back by heat or power.

Faults are injected into recorded healthy machines: into NVML's answers (a lost GPU, through the
real probe) or into the probed Gpu records (the counters NVML would report)."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Callable, Dict, List, Sequence

import pytest

from cudadoctor.checks import run_checks
from cudadoctor.checks import hardware
from cudadoctor.model.facts import snapshot_from_facts
from cudadoctor.data.source import default_matrix
from cudadoctor.model import Category, Finding, Severity, Snapshot
from cudadoctor.probes import collect
from cudadoctor.host.recorded import RecordedHost
from helpers import MACHINES_DIR, snapshot_of

H200 = "h200-driver580-torch211-cu130"
DGX = "dgx-h100x8-driver570-torch27-cu128"
LAPTOP = "laptop-rtx3060-driver470-torch25-cu124"
WSL = "wsl2-rtx4090-driver566"


machine = snapshot_of


def with_nvml(name: str, change: Callable[[Dict[str, Any]], None]) -> Snapshot:
    """A recorded machine whose NVML answers are changed, probed for real."""
    folder = os.path.join(MACHINES_DIR, name)
    with open(os.path.join(folder, "machine.json"), encoding="utf-8") as fh:
        data = json.load(fh)
    change(data["nvml"])
    return collect(RecordedHost(data, os.path.join(folder, "fs")))


def with_gpus(name: str, **changes: Dict[str, Any]) -> Snapshot:
    """A recorded machine with some fields of some GPUs changed: with_gpus(DGX, g1={...})."""
    snap = machine(name)
    gpus = list(snap.gpus or ())
    for key, fields in changes.items():
        index = int(key[1:])
        gpus[index] = dataclasses.replace(gpus[index], **fields)
    return dataclasses.replace(snap, gpus=tuple(gpus))


def hw(snap: Snapshot) -> List[Finding]:
    return list(run_checks(snap, default_matrix(), hardware.CHECKS))


def codes(found: Sequence[Finding]) -> List[str]:
    return [f.code for f in found]


def only(found: Sequence[Finding], code: str) -> Finding:
    hits = [f for f in found if f.code == code]
    assert len(hits) == 1, codes(found)
    return hits[0]


def commands(f: Finding) -> List[str]:
    return [c.run for c in f.fix.commands] if f.fix else []


# ---------------------------------------------------------------------------- healthy machines


# Every recorded machine but those recorded for a hardware fault (none yet).
HEALTHY_HARDWARE = (H200, DGX, LAPTOP, WSL, "conda-forge-pytorch-cuda12", "dev-debian12-cuda13-nodriver-torch213cpu",
                    "docker-nogpu-torch-cu126", "nvml-mismatch-after-upgrade", "two-toolkits-ldpath-cudnn8-shadow")


@pytest.mark.parametrize("name", HEALTHY_HARDWARE)
def test_recorded_machines_raise_no_hardware_problem(name: str) -> None:
    found = hw(machine(name))
    assert not [f for f in found if f.severity in (Severity.WARNING, Severity.ERROR)], codes(found)


def test_idle_laptop_at_pcie_gen1_is_not_flagged() -> None:
    gpu = (machine(LAPTOP).gpus or ())[0]
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max, gpu.clocks_event_reasons) == (1, 4, ("gpu_idle",))
    assert hw(machine(LAPTOP)) == []


def test_facts_carry_no_health_counters_so_the_checks_are_silent() -> None:
    snap = snapshot_from_facts({"gpu_name": "NVIDIA H100 80GB HBM3", "driver_version": "570.86.15"})
    assert hw(snap) == []


# ---------------------------------------------------------------------------- lost GPU


def test_gpu_lost_in_a_device_call_is_an_error_naming_the_gpu() -> None:
    snap = with_nvml(H200, lambda n: n["devices"][0].update(nvmlDeviceGetUUID={"$error": "NVML_ERROR_GPU_IS_LOST"}))
    f = only(hw(snap), "gpu-fallen-off-bus")
    assert (f.severity, f.category) == (Severity.ERROR, Category.HARDWARE_FAULT)
    assert f.title == "GPU 0 (NVIDIA H200) has fallen off the bus: the driver lost it"
    assert "NVML_ERROR_GPU_IS_LOST" in f.why and "Xid 79" in f.why and "reboot" in f.why
    assert "sudo reboot" in commands(f)
    assert any("Xid" in c for c in commands(f))
    assert f.source == ("errors.json#xid-79-fallen-off-bus",)


def test_gpu_lost_at_device_count_names_no_gpu() -> None:
    snap = with_nvml(H200, lambda n: n["system"].update(nvmlDeviceGetCount={"$error": "NVML_ERROR_GPU_IS_LOST"}))
    f = only(hw(snap), "gpu-fallen-off-bus")
    assert f.title.startswith("a GPU has fallen off the bus")


def test_nvidia_smi_gpu_is_lost_message_names_the_bus_id() -> None:
    from cudadoctor.model import ErrorKind, ProbeError

    error = ProbeError("driver", ErrorKind.ERROR, "nvidia-smi exited with 15: Unable to determine the device handle "
                       "for GPU 0000:01:00.0: GPU is lost.  Reboot the system to recover this GPU")
    f = only(hw(Snapshot(errors=(error,))), "gpu-fallen-off-bus")
    assert "0000:01:00.0" in f.title


def test_other_nvml_errors_are_not_a_lost_gpu() -> None:
    snap = with_nvml(H200, lambda n: n["devices"][0].update(nvmlDeviceGetUUID={"$error": "NVML_ERROR_UNKNOWN"}))
    assert snap.errors_of("gpus")
    assert hw(snap) == []


# ---------------------------------------------------------------------------- memory


def test_uncorrected_ecc_errors_since_driver_load_are_an_error() -> None:
    f = only(hw(with_gpus(DGX, g1={"ecc_uncorrected_volatile": 2, "ecc_uncorrected_aggregate": 5})),
             "ecc-uncorrected-volatile")
    assert (f.severity, f.category) == (Severity.ERROR, Category.HARDWARE_FAULT)
    assert f.title == "GPU 1 (NVIDIA H100 80GB HBM3) has had 2 uncorrected ECC errors since the driver was loaded"
    assert "(5 over the GPU's lifetime)" in f.why
    assert "nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT -i 1" in commands(f)
    assert any(c.startswith("sudo nvidia-smi -r -i 1") for c in commands(f))
    assert f.fix is not None and "RMA" in f.fix.text


def test_past_ecc_errors_only_are_a_warning() -> None:
    found = hw(with_gpus(DGX, g3={"ecc_uncorrected_volatile": 0, "ecc_uncorrected_aggregate": 3}))
    f = only(found, "ecc-uncorrected-aggregate")
    assert f.severity is Severity.WARNING
    assert "GPU 3" in f.title and "history of 3 uncorrected ECC errors" in f.title
    assert "none since the driver was loaded" in f.why
    assert "ecc-uncorrected-volatile" not in codes(found)


def test_ecc_counts_of_zero_or_unknown_are_silent() -> None:
    assert hw(with_gpus(DGX, g0={"ecc_uncorrected_volatile": None, "ecc_uncorrected_aggregate": None})) == []


def test_failed_row_remap_is_an_error_asking_for_service() -> None:
    f = only(hw(with_gpus(H200, g0={"remapped_rows_failure": True, "remapped_rows_uncorrectable": 12})),
             "row-remap-failure")
    assert f.severity is Severity.ERROR
    assert "needs service" in f.title
    assert "12 rows remapped" in f.why
    assert f.fix is not None and "RMA" in f.fix.text


def test_pending_row_remap_asks_for_a_gpu_reset() -> None:
    f = only(hw(with_gpus(H200, g0={"remapped_rows_pending": True})), "row-remap-pending")
    assert f.severity is Severity.WARNING
    assert "waiting for a GPU reset" in f.title
    assert commands(f)[0].startswith("sudo nvidia-smi -r -i 0")
    assert f.why.count("waits for") == 0  # the finding's own fact is not repeated as "also"


def test_pending_page_retirement_asks_for_a_reset() -> None:
    f = only(hw(with_gpus(LAPTOP, g0={"retired_pages_pending": True, "retired_pages": 2})), "retired-pages-pending")
    assert f.severity is Severity.WARNING
    assert "2 pages retired" in f.why
    assert commands(f)[0].startswith("sudo nvidia-smi -r -i 0")


# ---------------------------------------------------------------------------- PCIe


def test_narrow_link_is_a_warning_grouping_the_gpus_and_calling_idle_gen_normal() -> None:
    snap = with_gpus(DGX, g2={"pcie_width_current": 8, "pcie_gen_current": 1},
                     g3={"pcie_width_current": 8, "pcie_gen_current": 1})
    f = only(hw(snap), "pcie-link-width-reduced")
    assert (f.severity, f.category) == (Severity.WARNING, Category.HARDWARE_FAULT)
    assert f.title == "GPUs 2, 3 (NVIDIA H100 80GB HBM3): PCIe link at x8 of x16 lanes"
    assert "gen1 of gen5" in f.why and "normal" in f.why
    assert any(c.startswith("sudo lspci -vv -s 0000:3a:00.0") for c in commands(f))


def test_lower_generation_under_load_is_a_warning() -> None:
    f = only(hw(with_gpus(DGX, g4={"pcie_gen_current": 3, "clocks_event_reasons": ()})), "pcie-link-gen-reduced")
    assert f.severity is Severity.WARNING
    assert f.title == "GPU 4 (NVIDIA H100 80GB HBM3): PCIe link at gen3 of gen5 while busy"
    assert "At idle a lower generation is normal power saving" in f.why


def test_lower_generation_with_unknown_idle_state_is_silent() -> None:
    assert hw(with_gpus(DGX, g4={"pcie_gen_current": 3, "clocks_event_reasons": None})) == []


# ---------------------------------------------------------------------------- clocks


def test_thermal_slowdown_is_a_warning_with_the_reason_decoded() -> None:
    snap = with_gpus(DGX, g5={"clocks_event_reasons": ("sw_power_cap", "hw_thermal_slowdown"), "temperature_c": 91})
    found = hw(snap)
    f = only(found, "gpu-clocks-throttled")
    assert f.severity is Severity.WARNING
    assert "hw_thermal_slowdown" in f.title and "sw_power_cap" not in f.title
    assert "too hot" in f.why and "91 °C" in f.why
    assert any("nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i 5" == c for c in commands(f))
    assert "gpu-power-capped" not in codes(found)


@pytest.mark.parametrize("reason, words", [
    ("hw_power_brake_slowdown", "power-brake"),
    ("sw_thermal_slowdown", "maximum operating temperature"),
    ("hw_slowdown", "half or more"),
])
def test_each_slowdown_is_decoded(reason: str, words: str) -> None:
    f = only(hw(with_gpus(H200, g0={"clocks_event_reasons": (reason,)})), "gpu-clocks-throttled")
    assert words in f.why


def test_power_cap_under_load_is_only_a_note() -> None:
    snap = with_gpus(DGX, g6={"clocks_event_reasons": ("sw_power_cap",)}, g7={"clocks_event_reasons": ("sw_power_cap",)})
    found = hw(snap)
    assert codes(found) == ["gpu-power-capped"]
    f = found[0]
    assert f.severity is Severity.INFO
    assert f.title == "GPUs 6, 7 (NVIDIA H100 80GB HBM3): running at the power limit (700 W)"
    assert "normally" in f.why


def test_idle_gpu_is_not_throttled() -> None:
    assert hw(with_gpus(H200, g0={"clocks_event_reasons": ("gpu_idle",)})) == []


def test_hardware_checks_run_with_the_registered_checks() -> None:
    snap = with_gpus(H200, g0={"ecc_uncorrected_volatile": 1})
    found = run_checks(snap, default_matrix())
    assert "ecc-uncorrected-volatile" in codes(found)
