"""The toolchain concern: GPU architectures per CUDA toolkit, host compilers, cuDNN.

Spot checks of well-known facts go through the query methods; the data's invariants hold; and
hand-broken copies of the data give a DataError or an invariant problem naming the file and the
record, never another exception."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable, List

import pytest

from cudadoctor.matrix import DataError, Matrix
import cudadoctor.matrix.toolchain as toolchain
from cudadoctor.matrix._toolchain_invariants import invariants
from cudadoctor.matrix.toolchain import ToolchainData

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "compat_data"
LOCAL_CUDA_13_0 = Path("/usr/local/cuda-13.0")


@pytest.fixture(scope="module")
def tc(matrix: Matrix) -> ToolchainData:
    data: ToolchainData = matrix.toolchain
    return data


# ---------------------------------------------------------------------------- architectures


def test_cuda_12_0_cannot_compile_sm_35_kepler_removed_in_12_0_last_toolkit_11_8(tc: ToolchainData) -> None:
    result = tc.can_compile("12.0", "3.5")
    assert result.status == "dropped" and not result.ok
    assert result.last_cuda == "11.8" and result.deprecated_in == "11.0"
    assert tc.can_compile("11.8", "3.5").status == "deprecated"
    assert tc.can_compile("12.0", "sm_37").status == "dropped"
    assert tc.arch("sm_35") is not None and tc.arch("sm_35").architecture == "kepler"  # type: ignore[union-attr]


@pytest.mark.parametrize("cc", ["5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2"])
def test_cuda_13_0_cannot_compile_maxwell_pascal_volta_offline_last_toolkit_12_9(tc: ToolchainData, cc: str) -> None:
    result = tc.can_compile("13.0", cc)
    assert result.status == "dropped"
    assert result.last_cuda == "12.9"
    assert tc.can_compile("12.9", cc).ok
    assert tc.can_compile("12.9.1", cc).status == "deprecated"  # deprecated from 12.8 (sm_50 from 11.0)


@pytest.mark.parametrize("cc", ["7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0", "sm_90a", "sm_100f", "sm_120a"])
def test_cuda_13_0_compiles_turing_and_newer(tc: ToolchainData, cc: str) -> None:
    assert tc.can_compile("13.0", cc).status == "supported"
    assert tc.can_compile("13.0.2", cc).status == "supported"


def test_cuda_12_8_is_the_first_toolkit_for_sm_120(tc: ToolchainData) -> None:
    row = tc.arch("12.0")
    assert row is not None and row.sm == "sm_120" and row.first_cuda == "12.8" and row.architecture == "blackwell"
    too_old = tc.can_compile("12.6", "12.0")
    assert too_old.status == "too_new" and too_old.first_cuda == "12.8"
    assert tc.can_compile("12.8", "12.0").status == "supported"
    assert tc.can_compile("12.8", "sm_120f").status == "too_new"  # family targets from 12.9
    assert tc.can_compile("12.9", "sm_120f").status == "supported"


def test_sm_90a_needs_cuda_12_0_while_sm_90_needs_11_8(tc: ToolchainData) -> None:
    assert tc.can_compile("11.8", "9.0").status == "supported"
    variant = tc.can_compile("11.8", "sm_90a")
    assert variant.status == "too_new" and variant.first_cuda == "12.0" and variant.sm == "sm_90a"
    assert tc.can_compile("12.0", "compute_90a").ok
    assert tc.can_compile("13.0", "sm_90f").status == "unknown"  # no such target


def test_jetson_thor_was_sm_101_until_12_9_and_is_sm_110_from_13_0(tc: ToolchainData) -> None:
    old, new = tc.arch("sm_101"), tc.arch("11.0")
    assert old is not None and new is not None
    assert (old.renamed_to, new.formerly) == ("sm_110", "sm_101")
    assert tc.can_compile("13.0", "sm_101").status == "dropped"
    assert tc.can_compile("12.9", "sm_101a").status == "supported"
    assert tc.can_compile("12.9", "11.0").status == "too_new"


def test_archs_for_cuda_13_0_is_what_its_nvcc_lists(tc: ToolchainData) -> None:
    expected = ["sm_75", "sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_100", "sm_103", "sm_110",
                "sm_120", "sm_121"]
    assert tc.archs_for("13.0") == expected
    assert set(tc.nvcc_13_0_gpu_code) == set(expected)
    assert "sm_90a" in tc.archs_for("13.0", variants=True) and "sm_101a" not in tc.archs_for("13.0", variants=True)
    assert "sm_35" in tc.archs_for("11.8") and "sm_35" not in tc.archs_for("12.0")
    assert "sm_120" not in tc.archs_for("12.6") and "sm_120" in tc.archs_for("12.8")
    assert tc.archs_for("garbage") == []


@pytest.mark.skipif(not (LOCAL_CUDA_13_0 / "bin" / "nvcc").exists(), reason="no CUDA 13.0 toolkit here")
def test_archs_for_cuda_13_0_matches_the_installed_nvcc(tc: ToolchainData) -> None:
    out = subprocess.run([str(LOCAL_CUDA_13_0 / "bin" / "nvcc"), "--list-gpu-code"], capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    assert sorted(tc.archs_for("13.0")) == sorted(out)


@pytest.mark.parametrize("text, sm", [
    ("9.0", "sm_90"), ("sm_90", "sm_90"), ("sm_90a", "sm_90"), ("compute_90", "sm_90"), ("90", "sm_90"),
    ("8.6+PTX", "sm_86"), ("12.1", "sm_121"), ("SM_100F", "sm_100"),
])
def test_arch_lookup_accepts_the_usual_spellings(tc: ToolchainData, text: str, sm: str) -> None:
    row = tc.arch(text)
    assert row is not None and row.sm == sm


@pytest.mark.parametrize("text", ["", "garbage", "sm_999", "4.0", "9", "sm_"])
def test_arch_lookup_of_unknown_architectures_is_none(tc: ToolchainData, text: str) -> None:
    assert tc.arch(text) is None
    assert tc.can_compile("12.4", text).status == "unknown"


def test_can_compile_with_an_unparsable_cuda_version_is_unknown(tc: ToolchainData) -> None:
    assert tc.can_compile("", "9.0").status == "unknown"
    assert tc.can_compile("12", "9.0").status == "unknown"


# ---------------------------------------------------------------------------- host compilers


def test_cuda_13_0_newest_gcc_is_15_from_host_config_h(tc: ToolchainData) -> None:
    row = tc.compiler_limit("13.0")
    assert row is not None and row.gcc_max == 15 and row.confidence == "primary"
    assert tc.gcc_supported("13.0", "15.2.0") is True
    assert tc.gcc_supported("13.0.2", "16.1") is False
    assert tc.clang_supported("13.0", "20") is True and tc.clang_supported("13.0", "21.0.0") is False


@pytest.mark.skipif(not (LOCAL_CUDA_13_0 / "include" / "crt" / "host_config.h").exists(),
                    reason="no CUDA 13.0 toolkit here")
def test_cuda_13_0_gcc_limit_matches_the_installed_header(tc: ToolchainData) -> None:
    text = (LOCAL_CUDA_13_0 / "include" / "crt" / "host_config.h").read_text(errors="replace")
    m = re.search(r"#if __GNUC__ > (\d+)", text)
    assert m is not None
    row = tc.compiler_limit("13.0")
    assert row is not None and row.gcc_max == int(m.group(1))


def test_cuda_12_4_newest_gcc_is_13(tc: ToolchainData) -> None:
    row = tc.compiler_limit("12.4")
    assert row is not None and row.gcc_max == 13 and row.clang_max == 17
    assert tc.gcc_supported("12.4.1", "13.2.0") is True
    assert tc.gcc_supported("12.4", "14") is False
    assert tc.gcc_supported("12.4", "5.4") is False  # below GCC 6


def test_compiler_limit_by_major_minor_with_changes_inside_a_minor(tc: ToolchainData) -> None:
    assert tc.compiler_limit("12.4.1") == tc.compiler_limit("12.4")
    assert tc.compiler_limit("12.2").clang_max == 15  # type: ignore[union-attr]
    assert tc.compiler_limit("12.2.1").clang_max == 15  # type: ignore[union-attr]
    assert tc.compiler_limit("12.2.2").clang_max == 16  # type: ignore[union-attr]
    assert tc.clang_supported("12.2.0", "16") is False and tc.clang_supported("12.2.2", "16") is True
    assert tc.compiler_limit("12.7") is None and tc.gcc_supported("12.7", "13") is None
    assert tc.compiler_limit("garbage") is None


def test_gcc_max_of_cuda_11_and_12(tc: ToolchainData) -> None:
    limits = [tc.compiler_limit(v) for v in ("11.0", "11.1", "11.8", "12.0", "12.8", "13.4")]
    assert [row.gcc_max if row else None for row in limits] == [9, 10, 11, 12, 14, 16]


def test_unknown_compiler_limits_answer_none(tc: ToolchainData) -> None:
    assert tc.clang_supported("13.3", "20") is None  # 13.3's Clang limit is not established
    assert tc.gcc_supported("13.0", "not a version") is None
    assert tc.msvc_supported("12.4", 1939) is None


def test_msvc_range_cuda_13_0_rejects_vs_2017(tc: ToolchainData) -> None:
    assert tc.msvc_supported("13.0", 1916) is False
    assert tc.msvc_supported("13.0", 1939) is True
    assert tc.msvc_supported("12.6", 1916) is True
    assert tc.msvc_supported("13.0", 1950) is False


# ---------------------------------------------------------------------------- cuDNN


def test_cudnn_9_1_0_supports_cuda_12_and_11(tc: ToolchainData) -> None:
    assert tc.cudnn_supports("9.1.0", "12.4") is True
    assert tc.cudnn_supports("9.1.0.70", "11.8") is True
    assert tc.cudnn_supports("9.1.0", "13.0") is False
    assert tc.cudnn_min_driver("9.1.0", 12) == "525.60.13"
    assert tc.cudnn_min_driver("9.1.0", "11", os="windows") == "452.39"


def test_cudnn_8_9_7_supports_cuda_11_and_12(tc: ToolchainData) -> None:
    assert tc.cudnn_supports("8.9.7.29", "11.8") is True
    assert tc.cudnn_supports("8.9.7", "12.2") is True
    assert tc.cudnn_supports("8.9.7", "10.2") is False


@pytest.mark.parametrize("text, version", [
    ("9.1.0", "9.1.0"), ("9.1.0.70", "9.1.0"), ("9.1", "9.1.0"), ("8.9.7.29", "8.9.7"), ("8907", "8.9.7"),
    ("90100", "9.1.0"), ("91002", "9.10.2"), ("7605", "7.6.5"),
])
def test_cudnn_lookup_accepts_the_usual_spellings(tc: ToolchainData, text: str, version: str) -> None:
    row = tc.cudnn(text)
    assert row is not None and row.version == version


@pytest.mark.parametrize("text", ["", "garbage", "9", "9.99.0", "6.0.21"])
def test_cudnn_lookup_of_unknown_versions_is_none(tc: ToolchainData, text: str) -> None:
    assert tc.cudnn(text) is None
    assert tc.cudnn_supports(text, "12.4") is None
    assert tc.cudnn_min_driver(text, 12) is None


def test_cudnn_dropped_cuda_11_after_9_10_2(tc: ToolchainData) -> None:
    assert tc.cudnn_supports("9.10.2", "11.8") is True
    assert tc.cudnn_supports("9.11.0", "11.8") is False  # NVIDIA's 9.11.0 manifest: CUDA 12 only
    assert tc.cudnn_supports("9.11.1", "11.8") is None  # only PyPI wheels known: partial
    assert tc.cudnn_supports("9.17.0", "11.8") is False
    assert tc.cudnn_supports("9.17.0", "13.1") is True


def test_cudnn_cuda_ranges(tc: ToolchainData) -> None:
    assert tc.cudnn_supports("9.5.0", "12.6") is True
    assert tc.cudnn_supports("9.5.0", "12.8") is None  # newer than the matrix lists
    assert tc.cudnn_supports("9.10.2", "11.7") is False  # 9.10.2's CUDA 11 build lists 11.8 only
    assert tc.cudnn_supports("8.0.2", "10.1.105") is False  # needs 10.1 Update 2 (10.1.243)
    assert tc.cudnn_supports("8.0.2", "10.1.243") is True
    assert tc.cudnn_supports("8.0.2", "11") is True
    assert tc.cudnn_supports("9.1.0", "") is None


def test_cudnn_minimum_compute_capability(tc: ToolchainData) -> None:
    assert tc.cudnn_min_compute_capability("8.0.2", 10) == "3.0"
    assert tc.cudnn_min_compute_capability("8.0.2", 11) == "3.5"
    assert tc.cudnn_min_compute_capability("8.9.7") is None  # not in the sources
    assert tc.cudnn_min_compute_capability("8.9.5") == "5.0"
    assert tc.cudnn_min_compute_capability("9.17.0", 13) == "7.5"


# ---------------------------------------------------------------------------- the real data


def test_invariants_hold_on_the_shipped_data(matrix: Matrix, tc: ToolchainData) -> None:
    assert invariants(tc, matrix) == []


def test_records_cite_sources_without_research_traces() -> None:
    banned = re.compile(r"search-index|file id|public copy|read via|on this machine|\bid \d{8,}", re.I)
    for name in toolchain.TABLES:
        for record in json.loads((DATA / name).read_text())["records"]:
            assert record["source"].strip() and record["confidence"] in ("primary", "secondary", "unverified")
            assert not banned.search(json.dumps(record)), (name, record)


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
    """The invariant problems of a copy, or the DataError's as 'file: problem'."""
    matrix = Matrix(str(directory))
    try:
        return invariants(matrix.toolchain, matrix)
    except DataError as exc:
        return [f"{exc.file}: {p}" for p in exc.problems]


def record(doc: Any, key: str, value: str) -> Any:
    return next(r for r in doc["records"] if r[key] == value)


def test_wrong_type_is_a_data_error_naming_file_and_record(data_copy: Path) -> None:
    edit(data_copy, "toolkit_archs.json", lambda d: record(d, "sm", "sm_90").update(first_cuda=11.8))
    with pytest.raises(DataError) as err:
        Matrix(str(data_copy)).toolchain
    assert err.value.file == "toolkit_archs.json" and "sm_90" in str(err.value) and "first_cuda" in str(err.value)


def test_missing_field_is_a_data_error(data_copy: Path) -> None:
    edit(data_copy, "host_compilers.json", lambda d: record(d, "cuda", "12.4").pop("gcc_max"))
    with pytest.raises(DataError) as err:
        Matrix(str(data_copy)).toolchain
    assert "host_compilers.json" in str(err.value) and "12.4" in str(err.value)


def test_bad_cudnn_cuda_entry_is_a_data_error(data_copy: Path) -> None:
    edit(data_copy, "cudnn.json", lambda d: record(d, "version", "9.1.0")["cuda"].append({"major": "13"}))
    with pytest.raises(DataError) as err:
        Matrix(str(data_copy)).toolchain
    assert "cudnn.json" in str(err.value) and "9.1.0" in str(err.value)


def test_unsorted_archs(data_copy: Path) -> None:
    edit(data_copy, "toolkit_archs.json", lambda d: d["records"].reverse())
    assert any(p.startswith("toolkit_archs.json: records are not sorted") for p in problems_of(data_copy))


def test_duplicate_cudnn_release(data_copy: Path) -> None:
    edit(data_copy, "cudnn.json", lambda d: d["records"].insert(0, dict(d["records"][0])))
    assert "cudnn.json: a version is listed twice" in problems_of(data_copy)


def test_duplicate_arch(data_copy: Path) -> None:
    def dup(d: Any) -> None:
        i = next(i for i, r in enumerate(d["records"]) if r["sm"] == "sm_90")
        d["records"].insert(i, dict(d["records"][i]))

    edit(data_copy, "toolkit_archs.json", dup)
    assert "toolkit_archs.json: sm_90: listed twice" in problems_of(data_copy)


def test_deprecated_after_last_toolkit(data_copy: Path) -> None:
    edit(data_copy, "toolkit_archs.json", lambda d: record(d, "sm", "sm_35").update(deprecated_in="12.0"))
    assert "toolkit_archs.json: sm_35: first_cuda <= deprecated_in <= last_cuda does not hold" in problems_of(data_copy)


def test_dangling_cuda_versions(data_copy: Path) -> None:
    edit(data_copy, "toolkit_archs.json", lambda d: record(d, "sm", "sm_70").update(last_cuda="12.7"))
    edit(data_copy, "host_compilers.json", lambda d: record(d, "cuda", "12.8").update(cuda="12.7"))
    edit(data_copy, "cudnn.json", lambda d: record(d, "version", "7.6.4")["cuda"].insert(0, {"major": 9}))
    found = problems_of(data_copy)
    assert "toolkit_archs.json: sm_70: last_cuda 12.7 is not a CUDA toolkit in cuda_toolkits.json" in found
    assert "host_compilers.json: 12.7: not a CUDA toolkit in cuda_toolkits.json" in found
    assert "cudnn.json: 7.6.4: CUDA 9: no CUDA toolkit or minor-compatibility row for this major" in found


def test_gcc_max_going_down(data_copy: Path) -> None:
    edit(data_copy, "host_compilers.json", lambda d: record(d, "cuda", "12.5").update(gcc_max=12))
    assert any(p.startswith("host_compilers.json: 12.5: gcc_max 12 is below 12.4's 13") for p in problems_of(data_copy))


def test_wrong_compute_capability_and_variant(data_copy: Path) -> None:
    def change(d: Any) -> None:
        record(d, "sm", "sm_89").update(compute_capability="8.8")
        record(d, "sm", "sm_90")["variants"].append({"sm": "sm_89a", "first_cuda": "12.0"})

    edit(data_copy, "toolkit_archs.json", change)
    found = problems_of(data_copy)
    assert "toolkit_archs.json: sm_89: compute_capability 8.8 does not match the sm number" in found
    assert "toolkit_archs.json: sm_90: variant sm_89a: is not a variant of sm_90" in found


def test_broken_rename_link(data_copy: Path) -> None:
    edit(data_copy, "toolkit_archs.json", lambda d: record(d, "sm", "sm_110").pop("formerly"))
    assert any(p.startswith("toolkit_archs.json: sm_101: renamed_to sm_110") for p in problems_of(data_copy))


def test_cudnn_range_of_the_wrong_major(data_copy: Path) -> None:
    edit(data_copy, "cudnn.json", lambda d: record(d, "version", "9.5.1")["cuda"][1].update(max="11.8"))
    assert "cudnn.json: 9.5.1: CUDA 12: max 11.8 is not a CUDA 12 version" in problems_of(data_copy)


def test_arch_list_disagreeing_with_nvcc_13_0(data_copy: Path) -> None:
    edit(data_copy, "toolkit_archs.json", lambda d: record(d, "sm", "sm_88").update(first_cuda="13.1"))
    assert any(p.startswith("toolkit_archs.json: nvcc_13_0: the records' CUDA 13.0 targets")
               for p in problems_of(data_copy))


def test_not_json_is_a_data_error(data_copy: Path) -> None:
    (data_copy / "cudnn.json").write_text("{not json")
    with pytest.raises(DataError) as err:
        Matrix(str(data_copy)).toolchain
    assert err.value.file == "cudnn.json"

