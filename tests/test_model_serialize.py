"""Snapshot JSON: round trips, partial hand-written snapshots, and clear errors."""

from __future__ import annotations

import json

import pytest

from cudadoctor.model import (
    DriverInfo,
    ErrorKind,
    FrameworkBuild,
    Gpu,
    Library,
    LibraryCopy,
    ProbeError,
    Snapshot,
    Toolkit,
)
from cudadoctor.model.serialize import SnapshotError, snapshot_from_dict, snapshot_from_json, snapshot_to_json


def full_snapshot() -> Snapshot:
    return Snapshot(
        tool_version="0.1.0",
        created_at="2026-11-21T10:00:00Z",
        driver=DriverInfo(loaded=True, driver_version="580.95.05", cuda_driver_version="13.0", device_nodes=("/dev/nvidia0",)),
        gpus=(Gpu(index=0, name="NVIDIA H200", compute_capability="9.0", memory_total_mib=143771,
                  clocks_event_reasons=("sw_power_cap",), power_limit_w=700.0),),
        toolkits=(Toolkit(root="/usr/local/cuda-13.0", version="13.0.88", active=True, found_via=("PATH",)),),
        libraries=(Library("libcudnn", (LibraryCopy("/x/libcudnn.so.9", "9.10.2", "pip:nvidia-cudnn-cu13"),)),),
        frameworks=(FrameworkBuild("torch", "2.11.0+cu130", "cuda", "13.0", details={"cudnn_from": "pip"}),),
        env={"CUDA_VISIBLE_DEVICES": "0"},
        errors=(ProbeError("compilers", ErrorKind.TIMEOUT, "gcc --version timed out after 5 s", 5.0),),
        probe_durations_s={"driver": 0.01},
    )


def test_round_trip_is_identity() -> None:
    snap = full_snapshot()
    assert snapshot_from_json(snapshot_to_json(snap)) == snap


def test_json_is_stable_byte_for_byte() -> None:
    snap = full_snapshot()
    assert snapshot_to_json(snap) == snapshot_to_json(snapshot_from_json(snapshot_to_json(snap)))


def test_partial_snapshot_with_five_facts_loads() -> None:
    snap = snapshot_from_dict(
        {
            "driver": {"driver_version": "470.82.01", "cuda_driver_version": "11.4"},
            "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 3060 Laptop GPU"}],
            "frameworks": [{"name": "torch", "version": "2.5.1+cu124", "variant": "cuda", "cuda": "12.4"}],
        }
    )
    assert snap.driver is not None and snap.driver.driver_version == "470.82.01"
    assert snap.driver.loaded is None  # not given: unknown, not False
    assert snap.host is None and snap.toolkits is None  # sections not given stay unknown
    torch = snap.framework("torch")
    assert torch is not None and torch.cuda == "12.4"


def test_empty_section_means_known_absent() -> None:
    snap = snapshot_from_dict({"toolkits": [], "frameworks": []})
    assert snap.toolkits == () and snap.frameworks == ()
    assert snap.framework("torch") is None


@pytest.mark.parametrize(
    "doc, path",
    [
        ({"gpus": [{"index": 0, "nmae": "x"}]}, "gpus[0].nmae: unknown field"),
        ({"gpus": [{"index": 0, "memory_total_mib": "lots"}]}, "gpus[0].memory_total_mib: expected an integer"),
        ({"driver": {"loaded": "yes"}}, "driver.loaded: expected true or false"),
        ({"errors": [{"probe": "x", "kind": "exploded", "detail": ""}]}, "errors[0].kind: 'exploded' is not one of"),
        ({"gpus": [{"name": "no index"}]}, "gpus[0]"),
        ({"frameworks": {"torch": "2.5"}}, "frameworks: expected a list"),
        ({"schema_version": 99}, "newer than this cudadoctor understands"),
        ({"surprise": 1}, "surprise: unknown field"),
    ],
)
def test_bad_documents_name_the_path(doc: dict, path: str) -> None:
    with pytest.raises(SnapshotError) as info:
        snapshot_from_dict(doc)
    assert path in str(info.value)


def test_not_json_is_a_snapshot_error() -> None:
    with pytest.raises(SnapshotError, match="not valid JSON"):
        snapshot_from_json("{not json")
    with pytest.raises(SnapshotError, match="JSON object"):
        snapshot_from_json(json.dumps([1, 2]))


def test_a_report_envelope_loads_as_its_snapshot() -> None:
    from cudadoctor.api import make_report
    from cudadoctor.render.jsonout import envelope

    snap = full_snapshot()
    assert snapshot_from_dict(envelope(make_report(snap))) == snap
