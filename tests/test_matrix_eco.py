"""The Jetson, Triton, flash-attn, xformers and vLLM tables (matrix.jetson, matrix.addons): the
queries the checks use, and the invariants that catch a broken record."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from cudadoctor.data.source import default_matrix
from cudadoctor.matrix import Matrix
from cudadoctor.matrix.addons import spec_allows

DATA = Path(__file__).resolve().parents[1] / "compat_data"


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return default_matrix()


@pytest.mark.parametrize("spec, version, expected", [
    ("==2.7.1", "2.7.1+cu128", True), ("==2.7.1", "2.8.0", False), ("==3.3.1", "3.3.1", True),
    ("~=3.8.0", "3.8.2", True), ("~=3.8.0", "3.9.0", False), (">=2.10", "2.10.0", True), (">=2.10", "2.9.1", False),
    ("==2.7.*", "2.7.3", True), ("==2.7", "2.7.0", True), (">=2.1,<2.3", "2.2.0", True), (">=2.1,<2.3", "2.3.0", False),
    ("===weird", "2.7.1", None), ("==2.7.1", "garbage", None),
])
def test_spec_allows(spec: str, version: str, expected: object) -> None:
    assert spec_allows(spec, version) is expected


def test_triton_pins_and_minimums(matrix: Matrix) -> None:
    a = matrix.addons
    assert a.triton_pin("2.7.1+cu128").spec == "==3.3.1"  # type: ignore[union-attr]
    assert a.triton_pin("2.14.0").spec == "~=3.8.0"  # type: ignore[union-attr]
    assert a.triton_pin("1.13.1") is None
    assert a.triton_release("3.2.0").min_compute_capability == "7.0"  # type: ignore[union-attr]
    assert a.triton_release("3.4.0").min_compute_capability == "8.0"  # type: ignore[union-attr]
    assert a.inductor_min_compute_capability == "7.0"


def test_extension_pins(matrix: Matrix) -> None:
    a = matrix.addons
    assert a.vllm_torch("0.10.1.1").torch == "==2.7.1"  # type: ignore[union-attr]
    assert a.vllm_torch("0.6.4.post1").torch == "==2.5.1"  # type: ignore[union-attr]
    assert a.vllm_torch("0.33.0").torch == "==2.14.0"  # type: ignore[union-attr]  # the newest on PyPI, 2026-11-02
    assert a.vllm_platforms is not None and a.vllm_platforms.value == "linux"
    assert a.xformers_torch("0.0.31").torch == "==2.7.1"  # type: ignore[union-attr]
    assert a.flash_attn_generation("flash-attn", "2.8.3").min_compute_capability == "8.0"  # type: ignore[union-attr]
    assert a.flash_attn_generation("flash-attn", "1.0.9").min_compute_capability == "7.5"  # type: ignore[union-attr]
    assert a.flash_attn_generation("flash-attn-3", "3.0.0b1").max_compute_capability == "9.0"  # type: ignore[union-attr]
    fa4 = a.flash_attn_generation("flash-attn-4", "4.0.0b36")
    assert fa4 is not None and (fa4.min_compute_capability, fa4.max_compute_capability) == ("9.0", "11.0")
    assert a.xformers_torch("0.0.31.post1").torch == "==2.7.1"  # type: ignore[union-attr]
    assert a.xformers_torch("0.0.32.post1").torch == "==2.8.0"  # type: ignore[union-attr]


def test_a_torch_patch_release_has_its_triton_pin(matrix: Matrix) -> None:
    pin = matrix.addons.triton_pin("2.14.1+cu130")
    assert pin is not None and pin.spec == "~=3.8.0" and spec_allows(pin.spec, "3.8.1")


def test_vllm_python_range_and_pypi_cuda(matrix: Matrix) -> None:
    a = matrix.addons
    assert a.vllm_python("0.32.0") == "<3.15,>=3.11" and a.vllm_python("0.33.0") == "<3.15,>=3.11"
    assert a.vllm_python("0.31.0") == "<3.15,>=3.10" and a.vllm_python("0.5.4") == ">=3.8"
    assert a.vllm_supports_python("0.32.0", "3.10") is False and a.vllm_supports_python("0.32.0", "3.14") is True
    assert a.vllm_supports_python("0.19.1", "3.14") is False  # '<3.14,>=3.10'
    assert a.vllm_supports_python("9.9.9", "3.12") is None  # a release the data does not know
    assert all(r.requires_python for r in a.vllm)  # every recorded release has its Requires-Python
    cuda, cc = a.vllm_pypi_wheel_cuda_major, a.vllm_pypi_wheel_min_compute_capability
    assert cuda is not None and cuda.value == "13" and cc is not None and cc.value == "7.5"


def test_vllm_without_requires_python_still_loads(tmp_path: Path) -> None:
    # older data (no requires_python): the loader keeps working and says "not recorded"
    data = tmp_path / "data"
    shutil.copytree(DATA, data)
    doc = json.loads((data / "vllm.json").read_text(encoding="utf-8"))
    for r in doc["records"]:
        r.pop("requires_python", None)
    (data / "vllm.json").write_text(json.dumps(doc), encoding="utf-8")
    a = Matrix(str(data)).addons
    assert a.vllm_torch("0.33.0").torch == "==2.14.0" and a.vllm_python("0.33.0") is None  # type: ignore[union-attr]


def test_jetson_match(matrix: Matrix) -> None:
    j = matrix.jetson
    m = j.match("36.4.3")
    assert m is not None and (m.jetpack, m.release.cuda, m.release.sbsa, m.assumed_from) == ("6.2", "12.6", False, None)
    assert m.release.wheel_index == "https://pypi.jetson-ai-lab.io/jp6/cu126"
    assert j.match("38.2.1").release.sbsa is True  # type: ignore[union-attr]
    patch = j.match("35.6.9")
    assert patch is not None and patch.assumed_from == "35.6.4"
    assert j.match("37.0.0") is None and j.match("nonsense") is None
    assert j.soc_of_gpu("NVIDIA Thor").compute_capability == "11.0"  # type: ignore[union-attr]
    assert j.soc("tegra234").family == "Jetson Orin"  # type: ignore[union-attr]


def _broken(tmp_path: Path, table: str, edit: object) -> Matrix:
    folder = tmp_path / "data"
    shutil.copytree(DATA, folder)
    doc = json.loads((folder / table).read_text())
    edit(doc)  # type: ignore[operator]
    (folder / table).write_text(json.dumps(doc))
    return Matrix(str(folder))


def test_invariants_catch_broken_records(tmp_path: Path) -> None:
    def pin_not_satisfied(doc: dict) -> None:
        doc["records"][0]["triton"] = "9.9.9"

    def l4t_twice(doc: dict) -> None:
        doc["records"][1]["releases"].append(copy.deepcopy(doc["records"][0]["releases"][0]))

    def toolkit_above_driver(doc: dict) -> None:
        doc["records"][4]["cuda"] = "12.8"

    problems = _broken(tmp_path / "a", "triton.json", pin_not_satisfied).validate()
    assert any("does not satisfy its own spec" in p for p in problems), problems
    problems = _broken(tmp_path / "b", "jetson.json", l4t_twice).validate()
    assert any("listed twice" in p or "not in order" in p for p in problems), problems
    problems = _broken(tmp_path / "c", "jetson.json", toolkit_above_driver).validate()
    assert any("newer than the driver's CUDA" in p for p in problems), problems


def test_the_shipped_data_is_sound(matrix: Matrix) -> None:
    assert Matrix(str(DATA)).validate() == []
