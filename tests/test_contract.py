"""The JSON envelope is a contract with tools that read it: its keys change only on purpose,
with a format_version or schema_version bump."""

from __future__ import annotations

import dataclasses

from cudadoctor.api import make_report
from cudadoctor.model import SCHEMA_VERSION, DriverInfo, Gpu, Snapshot
from cudadoctor.render.jsonout import ENVELOPE_VERSION, envelope

ENVELOPE_KEYS = ["format", "format_version", "tool_version", "data_version", "data_origin", "node", "snapshot", "findings",
                 "redaction"]
SNAPSHOT_KEYS = [
    "schema_version", "tool_version", "created_at", "host", "python", "driver", "gpus", "gpus_source", "toolkits",
    "libraries", "packages", "frameworks", "compilers", "env", "errors", "probe_durations_s", "error_message", "smoke", "jetson",
]
DRIVER_KEYS = [
    "loaded", "driver_version", "cuda_driver_version", "nvml_version", "nvml_error",
    "kernel_module_version", "kernel_module_flavor", "nouveau_loaded", "device_nodes", "source",
]
GPU_KEYS = [
    "index", "name", "uuid", "serial", "pci_bus_id", "pci_device_id", "compute_capability",
    "memory_total_mib", "memory_used_mib", "mig_mode", "ecc_mode", "ecc_uncorrected_volatile",
    "ecc_uncorrected_aggregate", "retired_pages", "retired_pages_pending",
    "remapped_rows_uncorrectable", "remapped_rows_pending", "remapped_rows_failure",
    "pcie_gen_current", "pcie_gen_max", "pcie_width_current", "pcie_width_max",
    "persistence_mode", "temperature_c", "power_limit_w", "clocks_event_reasons", "source",
]


def test_envelope_keys_are_pinned() -> None:
    doc = envelope(make_report(Snapshot(driver=DriverInfo(), gpus=(Gpu(index=0),))))
    assert list(doc) == ENVELOPE_KEYS
    assert doc["format"] == "cudadoctor.report"
    assert doc["format_version"] == ENVELOPE_VERSION == 1
    assert list(doc["snapshot"]) == SNAPSHOT_KEYS
    assert doc["snapshot"]["schema_version"] == SCHEMA_VERSION == 1
    assert list(doc["snapshot"]["driver"]) == DRIVER_KEYS
    assert list(doc["snapshot"]["gpus"][0]) == GPU_KEYS


def test_every_section_has_defaults_so_partial_documents_load() -> None:
    for cls in (Snapshot, DriverInfo):
        for f in dataclasses.fields(cls):
            assert f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING, f.name
