"""GPU models and architectures: identification by PCI id and by name, compute capability,
driver branch windows, coverage of the table, and clear errors for broken data."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any, Callable, List

import pytest

from cudadoctor.matrix import DataError, Matrix
import cudadoctor.matrix.gpus as gpus
from cudadoctor.matrix._gpus_invariants import invariants
from cudadoctor.matrix.gpus import Architecture, GpuData, GpuModel

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "compat_data"
ARCHITECTURES = ["kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell", "rubin"]
WITHOUT_MODELS = {"rubin"}  # an architecture whose GPUs gpus.json does not list yet (no PCI ids published)


@pytest.fixture(scope="module")
def data(matrix: Matrix) -> GpuData:
    built: GpuData = matrix.gpus
    return built


def model(found: object) -> GpuModel:
    assert isinstance(found, GpuModel), found
    return found


def arch(found: object) -> Architecture:
    assert isinstance(found, Architecture), found
    return found


# ---------------------------------------------------------------------------- spot checks


def test_h100_sxm_by_device_id(data: GpuData) -> None:
    for form in ("0x2330", "2330", "0x233010DE", "0x233010de", "10de:2330"):
        h100 = model(data.by_pci_id(form))
        assert (h100.name, h100.compute_capability, h100.architecture) == ("NVIDIA H100 80GB HBM3", "9.0", "hopper")
    assert arch(data.architecture_of("9.0")).name == "hopper"


def test_h200(data: GpuData) -> None:
    h200 = model(data.by_pci_id("0x2335"))
    assert (h200.name, h200.compute_capability) == ("NVIDIA H200", "9.0")
    assert data.compute_capability("0x2335") == "9.0"
    assert data.compute_capability("NVIDIA H200") == "9.0"


def test_rtx_5090_is_blackwell_and_needs_r570(data: GpuData) -> None:
    rtx = model(data.by_name("NVIDIA GeForce RTX 5090"))
    assert (rtx.compute_capability, rtx.architecture, rtx.pci_device_ids) == ("12.0", "blackwell", ("0x2b85",))
    assert arch(data.architecture("blackwell")).first_driver_branch == "R570"
    old = data.driver_support(rtx.compute_capability, "565.57.01")
    assert (old.kind, old.first_branch, old.driver_branch, old.ok) == ("driver_too_old_for_gpu", "R570", "R565", False)
    assert data.driver_support("12.0", "570.86.10").kind == "ok"
    assert data.driver_support("12.0", "615.71.09").kind == "ok"
    assert arch(data.architecture("blackwell")).requires_open_kernel_modules is True


def test_rtx_3060_laptop(data: GpuData) -> None:
    laptop = model(data.by_name("NVIDIA GeForce RTX 3060 Laptop GPU"))
    assert (laptop.compute_capability, laptop.architecture, laptop.segment) == ("8.6", "ampere", "laptop")
    # the Tongfang subsystem gives the RTX 3080 Laptop GPU's id this name
    assert model(data.by_pci_id("0x249c")).name == "NVIDIA GeForce RTX 3080 Laptop GPU"
    assert model(data.by_pci_id("0x249c", "0x11941D05")).name == "NVIDIA GeForce RTX 3060 Laptop GPU"
    assert model(data.by_pci_id("0x249c", "1d05:1194")).name == "NVIDIA GeForce RTX 3060 Laptop GPU"


def test_gtx_1080_is_pascal_and_pascal_ends_with_r580(data: GpuData) -> None:
    gtx = model(data.by_name("NVIDIA GeForce GTX 1080"))
    assert (gtx.compute_capability, gtx.architecture, gtx.segment) == ("6.1", "pascal", "consumer")
    pascal = arch(data.architecture("pascal"))
    assert pascal.last_driver_branch == "R580"
    assert data.driver_support("6.1", "580.95.05").kind == "ok"
    dropped = data.driver_support("6.1", "590.48.01")
    assert (dropped.kind, dropped.last_branch, dropped.driver_branch) == ("driver_dropped_gpu", "R580", "R590")
    assert pascal.supports_open_kernel_modules is False


def test_tesla_k80_is_kepler_and_kepler_ends_with_r470(data: GpuData) -> None:
    k80 = model(data.by_name("Tesla K80"))
    assert (k80.compute_capability, k80.architecture, k80.pci_device_ids) == ("3.7", "kepler", ("0x102d",))
    assert arch(data.architecture_of("3.7")).last_driver_branch == "R470"
    assert data.driver_support("3.7", "470.256.02").kind == "ok"
    assert data.driver_support("3.7", "535.104.05").kind == "driver_dropped_gpu"


def test_jetson_orin(data: GpuData) -> None:
    orins = data.by_name_all("Orin (nvgpu)")
    assert len(orins) == 3 and {o.compute_capability for o in orins} == {"8.7"}
    assert {o.product for o in orins} == {"Jetson AGX Orin", "Jetson Orin NX", "Jetson Orin Nano"}
    assert model(data.by_name("Jetson Orin Nano")).compute_capability == "8.7"
    assert data.compute_capability("Orin") == "8.7"
    # Jetson runs the driver of Jetson Linux: the desktop branch window does not apply
    assert data.driver_support("8.7", "540.4.0").kind == "not_applicable"


def test_rtx_4090_with_and_without_the_nvidia_prefix(data: GpuData) -> None:
    a = model(data.by_name("NVIDIA GeForce RTX 4090"))
    b = model(data.by_name("GeForce RTX 4090"))
    assert a is b and a.compute_capability == "8.9" and a.architecture == "ada"
    assert data.by_name("  nvidia geforce   rtx 4090 ") is a
    assert data.identify(name="GeForce RTX 4090") is a
    # an exact name wins over a looser match
    assert model(data.by_name("NVIDIA GeForce RTX 4090 D")).name == "NVIDIA GeForce RTX 4090 D"
    assert model(data.by_name("NVIDIA GeForce RTX 4090 Laptop GPU")).segment == "laptop"


def test_names_nvml_reports_differently_from_marketing(data: GpuData) -> None:
    assert model(data.by_name("NVIDIA T4")).name == "Tesla T4"
    assert model(data.by_name("NVIDIA Tesla K80")).name == "Tesla K80"
    assert model(data.by_name("Quadro RTX 6000")).compute_capability == "7.5"
    assert model(data.by_name("NVIDIA GeForce RTX 2050")).compute_capability == "8.6"  # Ampere despite the name
    assert model(data.by_name("NVIDIA GeForce RTX 3050 A Laptop GPU")).compute_capability == "8.9"  # Ada
    assert model(data.by_name("NVIDIA GeForce GTX 1660 SUPER")).architecture == "turing"
    assert data.by_name("NVIDIA GeForce RTX 9999") is None
    assert data.by_name("") is None


def test_device_id_decides_over_name(data: GpuData) -> None:
    # 0x25b6 is A16 or A2 by subsystem; NVML's name picks between them when no subsystem is known
    assert model(data.identify(name="NVIDIA A2", pci_device_id="0x25b6")).name == "NVIDIA A2"
    assert model(data.identify(name="NVIDIA A16", pci_device_id="0x25b6")).name == "NVIDIA A16"
    assert model(data.by_pci_id("0x25b6", "0x157E10DE")).name == "NVIDIA A2"
    assert {m.name for m in data.candidates_for_pci_id("0x25b6")} == {"NVIDIA A16", "NVIDIA A2"}
    # a device id wins over a misleading name
    assert model(data.identify(name="NVIDIA GeForce RTX 4090", pci_device_id="0x2330")).name == "NVIDIA H100 80GB HBM3"
    # GT 730 on GK208B is 3.5
    assert data.compute_capability("0x1287") == "3.5"


def test_unconfirmed_ids_only_on_request(data: GpuData) -> None:
    assert data.by_pci_id("0x2501") is None  # RTX 3060 Rev. 2: only in pci.ids
    assert model(data.by_pci_id("0x2501", include_unconfirmed=True)).name == "NVIDIA GeForce RTX 3060"
    assert model(data.identify(pci_device_id="0x2501")).compute_capability == "8.6"


def test_blackwell_ranges_place_unlisted_ids(data: GpuData) -> None:
    assert data.by_pci_id("0x2b99") is None
    assert data.compute_capability("0x2b99") == "12.0"  # inside GB202's range
    assert arch(data.architecture_for_pci_id("0x3190")).name == "blackwell"
    assert data.compute_capability("0x0001") is None


def test_identifiers_are_normalised(data: GpuData) -> None:
    assert gpus.normalize_pci_id("0x2330") == "0x2330"
    assert gpus.normalize_pci_id("233010DE") == "0x2330"
    assert gpus.normalize_pci_id("10de:2330") == "0x2330"
    assert gpus.normalize_pci_id("8086:2330") is None
    assert gpus.normalize_pci_id("nonsense") is None
    assert gpus.normalize_compute_capability("sm_90a") == "9.0"
    assert gpus.normalize_compute_capability("120") == "12.0"
    assert gpus.normalize_compute_capability("compute_86") == "8.6"
    assert arch(data.architecture_of("sm_120")).name == "blackwell"
    assert data.architecture_of("4.0") is None
    assert arch(data.architecture_of("10.7")).name == "rubin"  # Vera Rubin, sm_107
    assert arch(data.architecture_of("sm_107")).name == "rubin"
    assert data.architecture_of("nonsense") is None
    assert data.driver_support("4.0", "535.104.05").kind == "unknown"
    assert data.driver_support("9.0", "garbage").kind == "unknown"
    assert data.by_pci_id("garbage") is None


def test_thor_under_both_compute_capabilities(data: GpuData) -> None:
    thor = model(data.by_name("NVIDIA Thor"))
    assert thor.compute_capability == "11.0" and not thor.pci_device_ids
    assert arch(data.architecture_of("10.1")).name == "blackwell"  # sm_101 before CUDA 13.0
    assert data.driver_support("10.1", "580.00").kind == "not_applicable"


def test_first_branches(data: GpuData) -> None:
    assert data.driver_support("9.0", "515.105.01").kind == "driver_too_old_for_gpu"
    assert data.driver_support("9.0", "520.61.05").kind == "ok"
    assert data.driver_support("8.9", "525.60.13").kind == "ok"
    assert data.driver_support("7.5", "418.87.01").kind == "ok"
    assert data.driver_support("7.5", "390.157").kind == "driver_too_old_for_gpu"
    assert data.driver_support("7.0", "390.157").kind == "ok"  # Volta predates every listed branch


def test_expected_bandwidth(data: GpuData) -> None:
    h100 = model(data.by_pci_id("0x2330"))
    assert data.expected_bandwidth_gbs(h100) == 3350
    assert data.expected_bandwidth_gbs("NVIDIA GeForce RTX 4090") == 1008
    assert data.expected_bandwidth_gbs("0x2b85") == 1792
    assert data.expected_bandwidth_gbs("NVIDIA GeForce GTX 1080") is None
    assert data.expected_bandwidth_gbs("no such gpu") is None


def test_lookups_are_indexed(data: GpuData) -> None:
    start = time.perf_counter()
    for _ in range(20000):
        data.by_pci_id("0x233010DE")
        data.by_name("GeForce RTX 4090")
    assert time.perf_counter() - start < 2.0


# ---------------------------------------------------------------------------- coverage


def test_coverage_kepler_to_blackwell_in_every_segment(data: GpuData) -> None:
    assert len(data.models) >= 120
    assert [a.name for a in data.architectures] == ARCHITECTURES
    assert {m.architecture for m in data.models} == set(ARCHITECTURES) - WITHOUT_MODELS
    counts = gpus.segments_covered(data.models)
    assert all(counts[s] > 0 for s in gpus.SEGMENTS), counts
    for segment in ("datacenter", "workstation", "consumer", "laptop"):
        archs = {m.architecture for m in data.models if m.segment == segment}
        assert len(archs) >= 6, (segment, archs)
    embedded = {m.architecture for m in data.models if m.segment == "embedded"}
    assert {"maxwell", "volta", "ampere", "blackwell"} <= embedded


def test_every_record_cites_a_source(data: GpuData) -> None:
    for m in data.models:
        assert m.source.startswith("http") and m.confidence in ("primary", "secondary", "unverified"), m.label
    for a in data.architectures:
        assert a.source.startswith("http"), a.name


def test_invariants_hold_on_the_shipped_data(matrix: Matrix, data: GpuData) -> None:
    assert invariants(data, matrix) == []


# ---------------------------------------------------------------------------- broken data


@pytest.fixture
def data_copy(tmp_path: Path) -> Path:
    target = tmp_path / "compat_data"
    shutil.copytree(DATA, target)
    return target


def edit(directory: Path, name: str, change: Callable[[Any], None]) -> None:
    path = directory / name
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def problems_of(directory: Path) -> List[str]:
    """Schema errors (as a DataError) or invariant problems; any other exception fails the test."""
    m = Matrix(str(directory))
    try:
        data = m.gpus
    except DataError as exc:
        return [f"{exc.file}: {p}" for p in exc.problems]
    return invariants(data, m)


def record(doc: Any, name: str, segment: str = "") -> Any:
    return next(r for r in doc["records"] if r["name"] == name and (not segment or r["segment"] == segment))


def test_a_wrong_type_names_the_file_and_record(data_copy: Path) -> None:
    edit(data_copy, "gpus.json", lambda d: record(d, "NVIDIA H100 80GB HBM3").update(compute_capability=9.0))
    problems = problems_of(data_copy)
    assert problems and all(p.startswith("gpus.json: ") for p in problems)
    assert any("NVIDIA H100 80GB HBM3" in p and "compute_capability" in p for p in problems), problems


def test_a_malformed_pci_id_is_a_schema_error(data_copy: Path) -> None:
    edit(data_copy, "gpus.json", lambda d: record(d, "NVIDIA H200").update(pci_device_ids=["0x2335X"]))
    problems = problems_of(data_copy)
    assert any("NVIDIA H200" in p and "pci_device_ids" in p for p in problems), problems


def test_unsorted_records(data_copy: Path) -> None:
    def swap(d: Any) -> None:
        d["records"][0], d["records"][-1] = d["records"][-1], d["records"][0]
    edit(data_copy, "gpus.json", swap)
    problems = problems_of(data_copy)
    assert any(p.startswith("gpus.json: ") and "not sorted" in p for p in problems), problems


def test_a_duplicate_record(data_copy: Path) -> None:
    def dup(d: Any) -> None:
        i = next(i for i, r in enumerate(d["records"]) if r["name"] == "NVIDIA H200")
        d["records"].insert(i, dict(d["records"][i]))
    edit(data_copy, "gpus.json", dup)
    problems = problems_of(data_copy)
    assert any("gpus.json: NVIDIA H200 (datacenter): listed twice" in p for p in problems), problems


def test_a_dangling_architecture(data_copy: Path) -> None:
    edit(data_copy, "gpus.json", lambda d: record(d, "NVIDIA L4").update(architecture="lovelace"))
    problems = problems_of(data_copy)
    assert any("gpus.json: NVIDIA L4 (datacenter)" in p and "'lovelace' is not in architectures.json" in p
               for p in problems), problems


def test_a_compute_capability_outside_its_architecture(data_copy: Path) -> None:
    edit(data_copy, "gpus.json", lambda d: record(d, "NVIDIA GeForce RTX 4090").update(compute_capability="8.6"))
    problems = problems_of(data_copy)
    assert any("gpus.json: NVIDIA GeForce RTX 4090 (consumer): compute capability 8.6 is not one of ada's" in p
               for p in problems), problems


def test_a_device_id_claimed_twice(data_copy: Path) -> None:
    edit(data_copy, "gpus.json", lambda d: record(d, "NVIDIA GeForce RTX 4080").update(pci_device_ids=["0x2704", "0x2684"]))
    problems = problems_of(data_copy)
    assert any("gpus.json: 0x2684: maps to" in p and "RTX 4080" in p and "RTX 4090" in p for p in problems), problems


def test_a_name_pointing_at_two_compute_capabilities(data_copy: Path) -> None:
    edit(data_copy, "gpus.json", lambda d: record(d, "NVIDIA GeForce GTX 1080", "laptop").update(compute_capability="6.0"))
    problems = problems_of(data_copy)
    assert any("'nvidia geforce gtx 1080' matches GPUs of different compute capability" in p for p in problems), problems


def test_an_unknown_driver_branch(data_copy: Path) -> None:
    edit(data_copy, "architectures.json", lambda d: record(d, "pascal").update(last_driver_branch="R999"))
    problems = problems_of(data_copy)
    assert problems == ["architectures.json: pascal: last_driver_branch R999 is not in driver_branches.json"]


def test_first_after_last_branch(data_copy: Path) -> None:
    edit(data_copy, "architectures.json", lambda d: record(d, "turing").update(last_driver_branch="R400"))
    problems = problems_of(data_copy)
    assert any("architectures.json: turing: first_driver_branch R410 is after last_driver_branch R400" in p
               for p in problems), problems


def test_architectures_out_of_order(data_copy: Path) -> None:
    def swap(d: Any) -> None:
        d["records"][0], d["records"][1] = d["records"][1], d["records"][0]
    edit(data_copy, "architectures.json", swap)
    problems = problems_of(data_copy)
    assert any(p.startswith("architectures.json: ") and "generation order" in p for p in problems), problems


def test_an_architecture_branch_of_the_wrong_type(data_copy: Path) -> None:
    edit(data_copy, "architectures.json", lambda d: record(d, "kepler").update(last_driver_branch=470))
    problems = problems_of(data_copy)
    assert problems and all(p.startswith("architectures.json: ") for p in problems)
    assert any("kepler" in p and "last_driver_branch" in p for p in problems), problems


def test_a_missing_field(data_copy: Path) -> None:
    edit(data_copy, "gpus.json", lambda d: record(d, "Tesla T4").pop("segment"))
    problems = problems_of(data_copy)
    assert any("Tesla T4" in p and "segment: required" in p for p in problems), problems


def test_a_missing_table(data_copy: Path) -> None:
    (data_copy / "architectures.json").unlink()
    assert problems_of(data_copy) == ["architectures.json: file is missing"]


def test_a_windows_r580_driver_numbered_581_is_still_r580() -> None:
    """Windows drivers of a branch carry the next number too (R580: 580.xx and 581.xx)."""
    from cudadoctor.matrix import Matrix

    gpus = Matrix(str(DATA)).gpus
    assert gpus.branch_major("581.57") == 580
    assert gpus.driver_support("6.1", "581.57").kind == "ok"  # Pascal's last branch is R580
    assert gpus.driver_support("6.1", "590.44.01").kind == "driver_dropped_gpu"


# ---------------------------------------------------------------------------- datasheet peaks (gpu_peaks.json)


def test_datasheet_peaks_of_an_h100_by_its_nvml_name_or_without_the_prefix(matrix: Matrix) -> None:
    from cudadoctor.matrix.peaks import datasheet

    name, peaks, bandwidth = datasheet(matrix, "H100 80GB HBM3")
    assert name == "NVIDIA H100 80GB HBM3" and bandwidth == 3350
    assert peaks is not None and (peaks.of("bf16"), peaks.of("tf32"), peaks.of("fp32")) == (989.5, 494.5, 67.0)
    v100 = datasheet(matrix, "Tesla V100-SXM2-16GB")[1]
    assert v100 is not None and v100.of("bf16") is None  # Volta has no bf16: no figure, not a guess
    assert datasheet(matrix, "NVIDIA Imaginary X1") == (None, None, None)


def test_every_peak_names_a_gpu_with_a_bandwidth_and_cites_a_source(matrix: Matrix) -> None:
    from cudadoctor.matrix.peaks import invariants as peak_invariants

    assert peak_invariants(matrix.peaks, matrix) == []
    assert all(r.source.startswith("https://") for r in matrix.peaks.rows)


def test_peak_invariants_catch_an_unknown_name_and_a_missing_bandwidth(data_copy: Path) -> None:
    edit(data_copy, "gpu_peaks.json", lambda d: d["records"].append(
        {"name": "NVIDIA Zeta 9", "fp32_tflops": 1.0, "source": "https://example.org", "confidence": "unverified"}))
    edit(data_copy, "gpus.json", lambda d: record(d, "NVIDIA L4").pop("memory_bandwidth_gbs"))
    problems = Matrix(str(data_copy)).validate()
    assert "gpu_peaks.json: NVIDIA Zeta 9: no such GPU in gpus.json" in problems
    assert "gpu_peaks.json: NVIDIA L4: gpus.json gives no memory_bandwidth_gbs for it" in problems


def test_a_peak_record_without_any_figure_is_a_schema_error(data_copy: Path) -> None:
    edit(data_copy, "gpu_peaks.json", lambda d: [r.pop(k) for r in d["records"][:1] for k in list(r) if k.endswith("_tflops")])
    with pytest.raises(DataError):
        Matrix(str(data_copy)).peaks
