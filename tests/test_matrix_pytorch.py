"""The pytorch concern: releases, wheel variants, which GPUs they run on, companions, indexes.

Spot checks of well-known facts go through the query methods; the data's invariants hold; and
hand-broken copies of the data give a DataError or an invariant problem naming the file and the
record, never another exception."""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path
from typing import Any, Callable, List

import pytest

import cudadoctor.matrix.pytorch as pytorch
from cudadoctor.matrix import DataError, Matrix
from cudadoctor.matrix.archs import parse_compute_capability, support_of
from cudadoctor.matrix.pytorch import PytorchData
from cudadoctor.matrix.versions import vkey

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "compat_data"
LOCAL_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")


@pytest.fixture(scope="module")
def pt(matrix: Matrix) -> PytorchData:
    data: PytorchData = matrix.pytorch
    return data


def cuda_variants(pt: PytorchData, version: str) -> List[str]:
    rel = pt.release(version)
    assert rel is not None
    return [v.name for v in rel.variants if v.cuda]


# ---------------------------------------------------------------------------- releases and variants


@pytest.mark.parametrize("version", ["2.4.0", "2.4.1"])
def test_torch_2_4_ships_cu118_cu121_cu124(pt: PytorchData, version: str) -> None:
    assert cuda_variants(pt, version) == ["cu118", "cu121", "cu124"]


def test_torch_2_5_1_pypi_default_is_cu124(pt: PytorchData) -> None:
    default = pt.variant("2.5.1")
    assert default is not None and default.name == "cu124" and default.cuda == "12.4"
    assert pt.pypi_variant("2.5.1") == default
    assert default.local_tag == "+cu124"
    rel = pt.release("2.5.1")
    assert rel is not None and rel.linux_default_variant == "cu124"


def test_pypi_defaults_per_platform(pt: PytorchData) -> None:
    assert pt.pypi_variant("2.5.1", "windows-x86_64").name == "cpu"  # type: ignore[union-attr]
    assert pt.pypi_variant("2.10.0", "linux-aarch64").name == "cpu"  # type: ignore[union-attr]
    assert pt.pypi_variant("2.11.0", "linux-aarch64").name == "cu130"  # type: ignore[union-attr]
    assert pt.pypi_variant("2.11.0", "freebsd") is None


@pytest.mark.parametrize("text, version", [
    ("2.5.1", "2.5.1"), ("2.5.1+cu124", "2.5.1"), (" v2.5.1 ", "2.5.1"), ("2.5", "2.5.1"), ("2.1", "2.1.2"),
    ("1.12", "1.12.1"), ("2", "2.15.0"),
])
def test_release_lookup(pt: PytorchData, text: str, version: str) -> None:
    rel = pt.release(text)
    assert rel is not None and rel.version == version


@pytest.mark.parametrize("text", ["2.6.0a0+ecf3bae40a", "2.5.1rc1", "2.5.9", "3.0", "", "torch", "2.5.1+", "1.11.0"])
def test_release_lookup_of_non_releases_is_none(pt: PytorchData, text: str) -> None:
    assert pt.release(text) is None


@pytest.mark.parametrize("version, name, expected", [
    ("2.5.1", "+cu124", "cu124"), ("2.5.1", "cu121", "cu121"), ("2.5.1", "CU118", "cu118"),
    ("2.5.1", None, "cu124"), ("2.5.1+cu121", None, "cu121"), ("2.5.1", "cpu", "cpu"), ("2.5.1", "rocm6.2", "rocm6.2"),
])
def test_variant_lookup(pt: PytorchData, version: str, name: Any, expected: str) -> None:
    found = pt.variant(version, name)
    assert found is not None and found.name == expected


def test_variant_lookup_of_unknown_variants_is_none(pt: PytorchData) -> None:
    assert pt.variant("2.5.1", "cu127") is None
    assert pt.variant("2.5.1", "cu126") is None
    assert pt.variant("9.9.9", "cu124") is None


@pytest.mark.parametrize("version, cuda, expected", [
    ("2.5.1", "12.4", "cu124"), ("2.5.1+cu124", "12.4", "cu124"), ("2.5.1", "12.1", "cu121"),
    ("2.5.1", "12.4.131", "cu124"), ("2.5.1", None, "cpu"), ("2.5.1+cpu", "", "cpu"), ("2.5.1+rocm6.2", None, "rocm6.2"),
    ("1.12.1", "10.2", "cu102"), ("2.15.0", "13.2", "cu132"),
])
def test_variant_for_build(pt: PytorchData, version: str, cuda: Any, expected: str) -> None:
    found = pt.variant_for_build(version, cuda)
    assert found is not None and found.name == expected


def test_variant_for_a_build_no_release_has_is_none(pt: PytorchData) -> None:
    assert pt.variant_for_build("2.5.1", "12.5") is None
    assert pt.variant_for_build("2.6.0a0+ecf3bae40a", "12.8") is None


def test_2_11_cu130_cudnn_follows_the_wheel_pin(pt: PytorchData) -> None:
    found = pt.variant("2.11.0", "cu130")
    assert found is not None and found.cudnn == "9.19.0.56" and found.nccl == "2.28.9"


def test_every_cuda_variant_has_a_toolkit_row(pt: PytorchData, matrix: Matrix) -> None:
    for rel in pt.releases:
        for var in rel.variants:
            if var.cuda:
                assert matrix.cuda.release(var.cuda) is not None, (rel.version, var.name)
                assert var.name != "cu127"


# ---------------------------------------------------------------------------- which GPUs a build runs on


def test_a_cc_8_9_gpu_runs_2_1_0_cu121_through_the_sm_86_sass(pt: PytorchData) -> None:
    support = pt.arch_support("2.1.0", "cu121", "8.9")
    assert support is not None
    assert "sm_89" not in support.archs  # no Ada cubins in that build ...
    assert support.kind == "sass" and support.arch == "sm_86"  # ... same major, lower minor
    assert support.runs and support.compute_capability == (8, 9)


def test_rtx_50_sm_120_is_first_served_by_2_7_cu128(pt: PytorchData) -> None:
    matches = pt.releases_with_arch("12.0")
    sass = [(m.version, m.variant) for m in matches if m.support.kind == "sass"]
    assert sass[0] == ("2.7.0", "cu128")
    earlier = [m for m in matches if vkey(m.version) < (2, 7)]
    # before 2.7 only the compute_90 PTX of 2.6 cu126 reaches a 12.0 GPU (JIT, not confirmed by a binary)
    assert [(m.version, m.variant, m.support.kind, m.support.arch) for m in earlier] == [
        ("2.6.0", "cu126", "ptx_jit", "compute_90")]
    assert earlier[0].support.confidence != "primary"
    support = pt.arch_support("2.5.1", "cu124", "12.0")
    assert support is not None and support.kind == "unsupported" and support.arch is None


def test_no_cu124_build_runs_on_sm_120(pt: PytorchData) -> None:
    for rel in pt.releases:
        if rel.variant("cu124"):
            assert pt.arch_support(rel.version, "cu124", "sm_120").kind == "unsupported"  # type: ignore[union-attr]


def test_pascal_is_not_in_cu128_builds_from_2_8_but_is_in_cu126(pt: PytorchData) -> None:
    checked = 0
    for rel in pt.releases:
        if vkey(rel.version) < (2, 8):
            continue
        if rel.variant("cu128"):
            assert pt.arch_support(rel.version, "cu128", "6.1").kind == "unsupported"  # type: ignore[union-attr]
            checked += 1
        if rel.variant("cu126"):
            support = pt.arch_support(rel.version, "cu126", "6.1")
            assert support is not None and support.kind == "sass" and support.arch == "sm_60"
    assert checked >= 4


def test_volta_in_cu128_from_2_8_to_2_10_only(pt: PytorchData) -> None:
    assert pt.arch_support("2.7.0", "cu128", "7.0").kind == "unsupported"  # type: ignore[union-attr]
    for version in ("2.8.0", "2.9.1", "2.10.0"):
        assert pt.arch_support(version, "cu128", "7.0").arch == "sm_70"  # type: ignore[union-attr]
    assert pt.arch_support("2.11.0", "cu128", "7.0").kind == "unsupported"  # type: ignore[union-attr]


def test_cuda_13_builds_carry_no_ptx(pt: PytorchData) -> None:
    for rel in pt.releases:
        for var in rel.variants:
            if var.cuda and var.cuda.startswith("13."):
                assert var.ptx == (), (rel.version, var.name)
                assert all(lists.ptx == () for _, lists in var.per_platform), (rel.version, var.name)
    support = pt.arch_support("2.13.0", "cu130", "13.0")
    assert support is not None and support.kind == "unsupported"


def test_aarch64_lists_differ(pt: PytorchData) -> None:
    thor = pt.arch_support("2.13.0", "cu130", "11.0", "linux-aarch64")
    assert thor is not None and thor.kind == "sass" and thor.arch == "sm_110" and thor.list_platform == "linux-aarch64"
    assert pt.arch_support("2.13.0", "cu130", "11.0").kind == "unsupported"  # type: ignore[union-attr]
    assert pt.arch_support("2.13.0", "cu130", "7.5", "linux-aarch64").kind == "unsupported"  # type: ignore[union-attr]


def test_windows_lists_and_unknown_lists(pt: PytorchData) -> None:
    hopper = pt.arch_support("2.5.1", "cu124", "9.0", "windows-x86_64")
    assert hopper is not None and hopper.arch == "sm_90a" and hopper.list_platform == "windows-x86_64"
    assert pt.arch_support("2.5.1", "cu124", "6.1", "windows-x86_64").arch == "sm_61"  # type: ignore[union-attr]
    unknown = pt.arch_support("2.8.0", "cu128", "7.0", "windows-x86_64")
    assert unknown is not None and unknown.list_platform == "linux-x86_64" and unknown.confidence == "unverified"
    nowhere = pt.arch_support("1.12.0", "cu102", "7.0", "windows-x86_64")
    assert nowhere is not None and nowhere.kind == "no_build" and not nowhere.runs


def test_cpu_and_rocm_builds_run_nothing_on_an_nvidia_gpu(pt: PytorchData) -> None:
    assert pt.arch_support("2.5.1", "cpu", "8.6").kind == "unsupported"  # type: ignore[union-attr]
    assert pt.arch_support("2.5.1", "rocm6.2", "8.6").kind == "unsupported"  # type: ignore[union-attr]


def test_arch_support_of_unknown_inputs_is_none(pt: PytorchData) -> None:
    assert pt.arch_support("2.5.1", "cu124", "eight") is None
    assert pt.arch_support("2.5.1", "cu127", "8.6") is None
    assert pt.arch_support("0.4.0", None, "8.6") is None


@pytest.mark.parametrize("archs, ptx, cc, kind, target", [
    (["sm_80"], [], (8, 6), "sass", "sm_80"),
    (["sm_86"], [], (8, 0), "unsupported", None),
    (["sm_80", "sm_86"], [], (8, 9), "sass", "sm_86"),
    (["sm_90"], [], (10, 0), "unsupported", None),
    (["sm_90"], ["sm_90"], (12, 0), "ptx_jit", "compute_90"),
    (["sm_90"], ["sm_90"], (8, 9), "unsupported", None),
    (["sm_120"], [], (12, 1), "sass", "sm_120"),
    (["sm_90a"], [], (9, 0), "sass", "sm_90a"),
    (["sm_80a"], [], (8, 6), "unsupported", None),
    (["sm_90", "sm_90a"], [], (9, 0), "sass", "sm_90"),
    (["sm_100f"], [], (10, 3), "sass", "sm_100f"),
])
def test_cuda_compatibility_rules(archs: List[str], ptx: List[str], cc: Any, kind: str, target: Any) -> None:
    assert support_of(archs, ptx, cc) == (kind, target)


@pytest.mark.parametrize("text, cc", [("8.9", (8, 9)), ("sm_89", (8, 9)), ("12.0", (12, 0)), ((8, 6), (8, 6)),
                                      ("sm_120", (12, 0)), ("8", None), ("8.10", None), ((8,), None), ("x", None)])
def test_compute_capability_spellings(text: Any, cc: Any) -> None:
    assert parse_compute_capability(text) == cc


# ---------------------------------------------------------------------------- Python, companions, conda


def test_torch_2_13_pythons_match_the_local_wheel() -> None:
    if not LOCAL_WHEEL.exists():
        pytest.skip(f"{LOCAL_WHEEL} is not on this machine")
    with zipfile.ZipFile(LOCAL_WHEEL) as wheel:
        name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = wheel.read(name).decode()
    requires = re.search(r"^Requires-Python:\s*>=\s*(\d+\.\d+)\s*$", metadata, re.M)
    assert requires is not None
    pythons = Matrix(str(DATA)).pytorch.supported_pythons("2.13.0")
    assert pythons is not None and pythons[0] == requires.group(1)
    tag = re.search(r"-cp(\d)(\d+)-", LOCAL_WHEEL.name)
    assert tag is not None and f"{tag.group(1)}.{tag.group(2)}" in pythons


def test_python_lists_follow_the_wheels(pt: PytorchData) -> None:
    assert pt.supported_pythons("1.13.1") == ("3.7", "3.8", "3.9", "3.10", "3.11")
    assert pt.supported_pythons("1.13.1", "windows-x86_64") == ("3.7", "3.8", "3.9", "3.10")
    assert "3.13" not in pt.supported_pythons("2.5.1", "windows-x86_64")  # type: ignore[operator]
    assert pt.supported_pythons("2.15.0") == ("3.11", "3.12", "3.13", "3.14", "3.15")
    assert pt.supported_pythons("2.14.1", freethreaded=True)[-1] == "3.14t"  # type: ignore[index]
    assert pt.supported_pythons("9.9") is None


def test_companions(pt: PytorchData) -> None:
    assert pt.companions("2.5.1") == ("0.20.1", "2.5.1")
    assert pt.companions("2.12.0") == ("0.27.0", None)
    assert pt.companions("8.0") is None
    for text in ("0.20.1", "0.20.1+cu124"):
        rel = pt.torch_for_torchvision(text)
        assert rel is not None and rel.version == "2.5.1"
    assert pt.torch_for_torchvision("0.20").version == "2.5.1"  # type: ignore[union-attr]
    assert pt.torch_for_torchvision("0.99.0") is None


def test_release_for_git_version(pt: PytorchData) -> None:
    rel = pt.release("2.13.0")
    assert rel is not None and rel.git_version
    assert pt.release_for_git_version(rel.git_version[:10].upper()) == rel
    assert pt.release_for_git_version("xyz") is None


def test_conda_channels(pt: PytorchData) -> None:
    old = pt.conda("2.5.1")
    assert old is not None and old.channels == ("pytorch", "nvidia") and old.cuda_package == "pytorch-cuda"
    assert "12.4" in old.cuda_versions
    new = pt.conda("2.6.0")
    assert new is not None and new.channel == "conda-forge" and new.confidence == "unverified"
    for channel in old.channels + new.channels:
        assert pt.conda_channel(channel) is not None
    assert pt.conda("0.1") is None


# ---------------------------------------------------------------------------- package indexes


def test_cu124_index_url(pt: PytorchData) -> None:
    assert pt.index_url("cu124") == "https://download.pytorch.org/whl/cu124"
    assert pt.index_url("+cu124") == "https://download.pytorch.org/whl/cu124"
    assert pt.index_url("../../evil") is None
    assert pt.index_url("cu124", "no-such-index") is None
    index = pt.package_index("pypi")
    assert index is not None and index.url() == "https://pypi.org/simple/"


def test_index_url_comes_from_the_data(data_copy: Path) -> None:
    def move(doc: Any) -> None:
        record(doc, "id", "pytorch-wheels")["url_pattern"] = "https://mirror.example/torch/{variant}"

    edit(data_copy, "package_indexes.json", move)
    assert Matrix(str(data_copy)).pytorch.index_url("cu124") == "https://mirror.example/torch/cu124"


# ---------------------------------------------------------------------------- the shipped data


def test_invariants_hold_on_the_shipped_data(matrix: Matrix, pt: PytorchData) -> None:
    assert pytorch.invariants(pt, matrix) == []


def test_records_cite_sources_without_research_traces() -> None:
    banned = re.compile(r"search-index|file id|public copy|read via|\bmemory\b|\bid \d{8,}", re.I)
    for name in pytorch.TABLES:
        for rec in json.loads((DATA / name).read_text())["records"]:
            assert rec["source"].strip() and rec["confidence"] in ("primary", "secondary", "unverified")
            assert not banned.search(json.dumps(rec)), (name, rec.get("version") or rec.get("id"))


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


def record(doc: Any, key: str, value: str) -> Any:
    return next(r for r in doc["records"] if r[key] == value)


def variant_of(doc: Any, version: str, name: str) -> Any:
    return next(v for v in record(doc, "version", version)["variants"] if v["name"] == name)


def problems_of(directory: Path) -> List[str]:
    """The invariant problems of a copy, or the DataError's as 'file: problem'."""
    matrix = Matrix(str(directory))
    try:
        return pytorch.invariants(matrix.pytorch, matrix)
    except DataError as exc:
        return [f"{exc.file}: {p}" for p in exc.problems]


def only(problems: List[str], *parts: str) -> None:
    assert problems, "the broken data passed"
    assert any(all(part in p for part in parts) for p in problems), problems


def test_wrong_type_is_a_data_error_naming_file_and_record(data_copy: Path) -> None:
    edit(data_copy, "pytorch.json", lambda d: variant_of(d, "2.5.1", "cu124").update(archs="sm_50"))
    with pytest.raises(DataError) as err:
        Matrix(str(data_copy)).pytorch
    assert err.value.file == "pytorch.json" and "2.5.1" in str(err.value) and "archs" in str(err.value)


def test_badly_spelled_arch_and_python_are_data_errors(data_copy: Path) -> None:
    edit(data_copy, "pytorch.json", lambda d: variant_of(d, "2.4.0", "cu121").update(archs=["sm_8.6"]))
    only(problems_of(data_copy), "pytorch.json", "2.4.0", "sm_8.6")
    shutil.copy(DATA / "pytorch.json", data_copy / "pytorch.json")
    edit(data_copy, "pytorch.json", lambda d: record(d, "version", "2.4.0").update(python=["3.x"]))
    only(problems_of(data_copy), "pytorch.json", "2.4.0", "python")


def test_missing_field_is_a_data_error(data_copy: Path) -> None:
    edit(data_copy, "pytorch.json", lambda d: record(d, "version", "2.0.1").pop("variants"))
    only(problems_of(data_copy), "pytorch.json", "2.0.1", "variants: required")


def test_unsorted_releases(data_copy: Path) -> None:
    def swap(doc: Any) -> None:
        recs = doc["records"]
        i = recs.index(record(doc, "version", "1.13.0"))
        recs[i], recs[i + 1] = recs[i + 1], recs[i]

    edit(data_copy, "pytorch.json", swap)
    only(problems_of(data_copy), "pytorch.json", "1.13.0", "listed after 1.13.1")


def test_duplicate_release(data_copy: Path) -> None:
    edit(data_copy, "pytorch.json", lambda d: d["records"].insert(0, record(d, "version", "2.0.0")))
    only(problems_of(data_copy), "pytorch.json", "1.12.0", "listed after 2.0.0")
    shutil.copy(DATA / "pytorch.json", data_copy / "pytorch.json")
    edit(data_copy, "pytorch.json", lambda d: d["records"].insert(5, record(d, "version", "2.0.0")))
    only(problems_of(data_copy), "pytorch.json", "2.0.0", "listed after 2.0.0")


def test_default_variant_that_is_not_a_variant(data_copy: Path) -> None:
    edit(data_copy, "pytorch.json", lambda d: record(d, "version", "2.5.1").update(linux_default_variant="cu127"))
    only(problems_of(data_copy), "pytorch.json: 2.5.1", "linux_default_variant cu127")
    assert Matrix(str(data_copy)).pytorch.variant("2.5.1") is None


def test_cuda_without_a_toolkit_row(data_copy: Path) -> None:
    edit(data_copy, "pytorch.json", lambda d: variant_of(d, "2.5.1", "cu124").update(name="cu127", cuda="12.7"))
    only(problems_of(data_copy), "pytorch.json: 2.5.1: cu127", "CUDA 12.7 has no row in cuda_toolkits.json")


def test_name_that_disagrees_with_cuda(data_copy: Path) -> None:
    edit(data_copy, "pytorch.json", lambda d: variant_of(d, "2.5.1", "cu124").update(cuda="12.1"))
    only(problems_of(data_copy), "pytorch.json: 2.5.1: cu124", "name does not match CUDA 12.1")


def test_ptx_not_among_archs(data_copy: Path) -> None:
    edit(data_copy, "pytorch.json", lambda d: variant_of(d, "2.7.0", "cu128").update(ptx=["sm_90a"]))
    only(problems_of(data_copy), "pytorch.json: 2.7.0: cu128", "ptx sm_90a is not in archs")


def test_unsorted_archs(data_copy: Path) -> None:
    edit(data_copy, "pytorch.json", lambda d: variant_of(d, "2.7.0", "cu126").update(archs=["sm_90", "sm_50"]))
    only(problems_of(data_copy), "pytorch.json: 2.7.0: cu126", "not sorted")


def test_torchvision_paired_twice(data_copy: Path) -> None:
    edit(data_copy, "pytorch.json", lambda d: record(d, "version", "2.5.1").update(torchvision="0.20.0"))
    only(problems_of(data_copy), "pytorch.json: 2.5.1", "torchvision 0.20.0")


def test_conda_channel_missing_from_the_indexes(data_copy: Path) -> None:
    edit(data_copy, "package_indexes.json", lambda d: d["records"].remove(record(d, "id", "conda-nvidia")))
    only(problems_of(data_copy), "pytorch.json: 2.5.1", "conda channel nvidia")


def test_index_placeholders_that_do_not_match(data_copy: Path) -> None:
    edit(data_copy, "package_indexes.json", lambda d: record(d, "id", "pytorch-wheels").update(placeholders=["tag"]))
    problems = problems_of(data_copy)
    only(problems, "package_indexes.json: pytorch-wheels", "placeholders do not match")
    only(problems, "package_indexes.json", "no pytorch-wheels record")
    assert Matrix(str(data_copy)).pytorch.index_url("cu124") is None


def test_per_platform_lists_for_a_platform_without_a_build(data_copy: Path) -> None:
    def move(doc: Any) -> None:
        var = variant_of(doc, "2.5.1", "cu124")
        var["platforms"] = ["linux-x86_64"]

    edit(data_copy, "pytorch.json", move)
    only(problems_of(data_copy), "pytorch.json: 2.5.1: cu124", "windows-x86_64")
