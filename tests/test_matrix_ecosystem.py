"""The ecosystem tables (TensorFlow, JAX, CuPy, ONNX Runtime, TensorRT, CUDA.jl, NCCL): well-known
facts through the queries the checks use, invariants on the shipped data, and broken copies of
the data that must fail with the file and the record named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

import cudadoctor.matrix.ecosystem as ecosystem
from cudadoctor.matrix import DataError, Matrix
from cudadoctor.matrix.ecosystem import EcosystemData

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "compat_data"


@pytest.fixture(scope="module")
def eco(matrix: Matrix) -> EcosystemData:
    data: EcosystemData = matrix.ecosystem
    return data


# ---------------------------------------------------------------------------- TensorFlow


def test_tf_215_linux_is_cuda_122_cudnn_89(eco: EcosystemData) -> None:
    cfg = eco.tf_config("2.15.0")
    assert cfg is not None and (cfg.cuda, cfg.cudnn) == ("12.2", "8.9")
    assert cfg.python == ("3.9", "3.10", "3.11") and cfg.and_cuda_extra
    assert eco.tf_config("2.15.1") == cfg  # a patch release has its series' configuration
    assert eco.tf_config("2.15", platform="wsl") == cfg


def test_tf_other_configurations(eco: EcosystemData) -> None:
    assert (eco.tf_config("2.0.0").cuda, eco.tf_config("2.0.0").cudnn) == ("10.0", "7.4")  # type: ignore[union-attr]
    assert eco.tf_config("2.4").cuda == "11.0"  # type: ignore[union-attr]
    assert eco.tf_config("2.14").cuda == "11.8"  # type: ignore[union-attr]
    assert eco.tf_config("2.18").cudnn_major == 9  # type: ignore[union-attr]
    assert eco.tf_config("2.16.1").compiler == "Clang 17.0.6"  # type: ignore[union-attr]
    assert eco.tf_config("1.15") is None and eco.tf_config("9.9") is None


def test_tf_210_is_the_last_native_windows_gpu_release(eco: EcosystemData) -> None:
    assert eco.tf_native_windows_gpu("2.10.0") and eco.tf_native_windows_gpu("2.10")
    assert not eco.tf_native_windows_gpu("2.11.0") and not eco.tf_native_windows_gpu("2.16.1")
    win = eco.tf_config("2.10.0", platform="windows")
    assert win is not None and win.package == "tensorflow-gpu" and (win.cuda, win.cudnn) == ("11.2", "8.1")
    assert eco.tf_config("2.11.0", platform="windows") is None
    assert eco.tensorflow.fact("native_windows_gpu_last").value == "2.10"  # type: ignore[union-attr]


def test_tf_and_cuda_extra_exists_from_214(eco: EcosystemData) -> None:
    assert not eco.tf_config("2.13.0").and_cuda_extra  # type: ignore[union-attr]
    assert eco.tf_config("2.14.0").and_cuda_extra  # type: ignore[union-attr]
    assert eco.tf_and_cuda_pins("2.13.0") is None
    pins = eco.tf_and_cuda_pins("2.14.1")
    assert pins is not None and pins.cuda_major == 11 and pins.pin("nvidia-nccl-cu11") == "==2.16.5"
    p215 = eco.tf_and_cuda_pins("2.15")
    assert p215 is not None and p215.cuda_major == 12 and p215.pin("nvidia-cudnn-cu12") == "==8.9.4.25"
    assert "tensorrt==8.6.1.post1" in p215.requirements()
    assert eco.tf_and_cuda_pins("2.18.0").pin("nvidia-cudnn-cu12") == "==9.3.0.75"  # type: ignore[union-attr]


def test_tf_compute_capability_floor(eco: EcosystemData) -> None:
    assert eco.tf_min_compute_capability("2.16.1") == "3.5"
    assert eco.tf_min_compute_capability("2.17.0") == "6.0"


# ---------------------------------------------------------------------------- JAX


def test_jax_plugin_distributions_name_their_cuda_major(eco: EcosystemData) -> None:
    assert eco.jax_plugin_cuda_major("jax-cuda12-plugin") == 12
    assert eco.jax_plugin_cuda_major("jax-cuda13-plugin") == 13
    assert eco.jax_plugin_cuda_major("jax_cuda12_pjrt") == 12
    assert eco.jax_plugin_cuda_major("jax-cuda11-pjrt") == 11
    assert eco.jax_plugin_cuda_major("jaxlib") is None


def test_jax_cuda11_dropped_at_0426(eco: EcosystemData) -> None:
    assert 11 in eco.jax_release("0.4.25").cuda_majors  # type: ignore[union-attr]
    rel = eco.jax_release("0.4.26")
    assert rel is not None and rel.cuda_majors == (12,)
    assert eco.jax.fact("cuda11_last").value == "0.4.25"  # type: ignore[union-attr]


def test_jax_schemes(eco: EcosystemData) -> None:
    old = eco.jax_release("0.4.29+cuda12.cudnn89")
    assert old is not None and old.scheme == "monolithic+plugin"
    b = old.build(12)
    assert b is not None and "cuda12.cudnn89" in b.jaxlib_local_versions
    assert b.index_url is not None and b.index_url.endswith("/jax_cuda_releases.html")
    new = eco.jax_release("0.4.30")
    assert new is not None and new.scheme == "plugin" and new.build(12).index_url is None  # type: ignore[union-attr]
    assert eco.jax_release("0.5.3") == eco.jax_release("0.4.34")


def test_jax_cuda13(eco: EcosystemData) -> None:
    assert 13 not in eco.jax_release("0.7.1").cuda_majors  # type: ignore[union-attr]
    rel = eco.jax_release("0.9.0")
    assert rel is not None and rel.python is not None and rel.python[0] == "3.11"
    b13 = rel.build(13)
    assert b13 is not None and b13.min_compute_capability == "7.5" and b13.min_driver == "580"
    assert b13.plugins == ("jax-cuda13-plugin", "jax-cuda13-pjrt") and b13.cudnn_major == 9
    assert "jax[cuda13]==0.9.0" in b13.extra_requirements("0.9.0")
    b12 = rel.build(12)
    assert b12 is not None and (b12.min_cuda, b12.min_driver, b12.min_compute_capability) == ("12.1", "525.60.13", "5.2")


# ---------------------------------------------------------------------------- CuPy


def _names(found: List[Any]) -> List[str]:
    return [d.distribution for d in found]


def test_cupy_distributions(eco: EcosystemData) -> None:
    c12 = eco.cupy_cuda_for("cupy-cuda12x")
    assert c12 is not None and c12.serves_cuda("12.0") and c12.serves_cuda("12.9.1") and not c12.serves_cuda("11.8")
    c11 = eco.cupy_cuda_for("cupy_cuda11x")
    assert c11 is not None and (c11.cuda_min, c11.cuda_max) == ("11.2", "11.8")
    assert c11.serves_cuda("11.2") and c11.serves_cuda("11.8.0") and not c11.serves_cuda("11.1")
    assert not c11.serves_cuda("12.0")
    c117 = eco.cupy_cuda_for("cupy-cuda117")
    assert c117 is not None and c117.serves_cuda("11.7") and not c117.serves_cuda("11.6")
    assert not c117.serves_cuda("11.8") and (c117.first_cupy, c117.last_cupy) == ("10.6.0", "10.6.0")
    assert eco.cupy_cuda_for("cupy-cuda13x").serves_cuda("13.0")  # type: ignore[union-attr]
    assert eco.cupy_cuda_for("numpy") is None


def test_cupy_package_for(eco: EcosystemData) -> None:
    assert _names(eco.cupy_package_for("12.4")) == ["cupy-cuda12x"]
    assert _names(eco.cupy_package_for("11.7")) == ["cupy-cuda11x", "cupy-cuda117"]
    assert _names(eco.cupy_package_for("11.7", cupy_version="10.6.0")) == ["cupy-cuda117"]
    assert _names(eco.cupy_package_for("11.7", cupy_version="13.3.0")) == ["cupy-cuda11x"]
    assert _names(eco.cupy_package_for("11.8", cupy_version="14.0.0")) == []  # v14 dropped CUDA 11


def test_cupy_compute_capability_per_major(eco: EcosystemData) -> None:
    assert eco.cupy_min_compute_capability("14.1.0") == "5.0"
    assert eco.cupy_min_compute_capability("13.6.0") == "3.5"
    assert eco.cupy_min_compute_capability("12.3.0") == "3.0"
    assert eco.cupy_min_compute_capability("3.0.0") is None


# ---------------------------------------------------------------------------- ONNX Runtime


def test_ort_pypi_is_cuda12_from_119(eco: EcosystemData) -> None:
    for version in ("1.19.0", "1.20.1", "1.22.0", "1.26.0"):
        pypi = eco.onnxruntime.pypi_build(version)
        assert pypi is not None and pypi.cuda_major == 12 and pypi.cudnn_major == 9, version
    assert eco.onnxruntime.pypi_build("1.18.1").cuda_major == 11  # type: ignore[union-attr]
    assert eco.onnxruntime.pypi_build("1.27.0").cuda_major == 13  # type: ignore[union-attr]


def test_ort_other_indexes(eco: EcosystemData) -> None:
    builds = {b.cuda_major: b for b in eco.ort_requirements("1.20.1")}
    assert set(builds) == {11, 12}
    assert not builds[11].pypi_default and builds[11].index_url != builds[12].index_url
    assert "onnxruntime-cuda-11" in builds[11].index_url
    b17 = eco.onnxruntime.build("1.17.1", 12)
    assert b17 is not None and not b17.pypi_default and b17.cudnn_major == 8
    assert eco.onnxruntime.build("1.18.0", 12).cudnn_major == 8  # type: ignore[union-attr]
    assert eco.onnxruntime.build("1.18.1", 12).cudnn_major == 9  # type: ignore[union-attr]
    assert [b.cuda for b in eco.ort_requirements("1.14.1")] == ["11.6"]


# ---------------------------------------------------------------------------- TensorRT, CUDA.jl, NCCL


def test_trt_requirements(eco: EcosystemData) -> None:
    r861 = eco.trt_requirements("8.6.1.6")
    assert r861 is not None and r861.cuda_majors == (11, 12) and r861.min_compute_capability == "5.0"
    r101 = eco.trt_requirements("10.1.0")
    assert r101 is not None and r101.min_compute_capability == "7.0" and r101.pip_for(12) == ("tensorrt-cu12",)
    assert r101.build(12).covers("12.4") and not r101.build(12).covers("12.5")  # type: ignore[union-attr]
    assert eco.trt_requirements("10.5.0").min_compute_capability == "7.5"  # type: ignore[union-attr]
    r1013 = eco.trt_requirements("10.13.2.6")
    assert r1013 is not None and 11 not in r1013.cuda_majors and 13 in r1013.cuda_majors
    assert eco.trt_requirements("10.16.1").pip_default_cuda_major == 13  # type: ignore[union-attr]
    r84 = eco.trt_requirements("8.4.3")
    assert r84 is not None and r84.pip == ("nvidia-tensorrt",) and r84.index_url is not None
    assert eco.trt_requirements("10.14") == eco.trt_requirements("10.14.1")


@pytest.mark.parametrize("version, first, cuda12", [
    ("10.2.0", "10.2", "12.5"), ("10.2.0.post1", "10.2", "12.5"), ("10.2.0.19", "10.2", "12.5"),
    ("10.3.0", "10.3", "12.5"), ("10.3.0.26", "10.3", "12.5"),
    ("10.4.0", "10.4", "12.6"), ("10.4.0.26", "10.4", "12.6"),
])
def test_trt_102_to_104_are_recorded_with_their_cuda_builds(eco: EcosystemData, version: str, first: str,
                                                            cuda12: str) -> None:
    """The PyPI releases 10.2.0-10.4.0 (tools/refresh_data.py found them missing): a CUDA 11.8 and a
    CUDA 12 build named for 12.5 (10.2, 10.3) or 12.6 (10.4), Volta still supported, cp38-cp312."""
    rel = eco.trt_requirements(version)
    assert rel is not None and rel.first == first and rel.cuda_majors == (11, 12)
    b11, b12 = rel.build(11), rel.build(12)
    assert b11 is not None and b11.covers("11.8") and not b11.covers("12.0")
    assert b12 is not None and (b12.cuda_max, b12.built_with) == (cuda12, cuda12) and b12.cuda_min is None
    assert b12.covers(cuda12) and not b12.covers("12.7")
    assert b12.covers("12.6") is (cuda12 == "12.6")
    assert rel.min_compute_capability == "7.0" and rel.python == ("3.8", "3.9", "3.10", "3.11", "3.12")
    assert rel.pip_default_cuda_major == 12 and "tensorrt-cu12-bindings" in rel.pip_for(12)
    assert rel.pip_for(11) == ("tensorrt-cu11", "tensorrt-cu11-libs", "tensorrt-cu11-bindings")


def test_cudajl_requirements(eco: EcosystemData, matrix: Matrix) -> None:
    rel = eco.cudajl_requirements("5.8.5")
    assert rel is not None and rel.min_julia == "1.10" and rel.cuda_majors == (12, 13)
    assert rel.min_compute_capability_for(13) == "7.5" and rel.min_compute_capability_for(12) == "5.0"
    assert rel.driver_cuda_for(13) == "13.0"
    assert matrix.cuda.min_driver(rel.driver_cuda_for(13) or "") == "580.65.06"
    old = eco.cudajl_requirements("5.8.2")
    assert old is not None and old.max_driver_cuda_major == 12 and old.supports_cuda("11.8")
    assert eco.cudajl_requirements("4.4.1").min_julia == "1.6"  # type: ignore[union-attr]
    assert eco.cudajl_requirements("0.9") is None


def test_nccl_release(eco: EcosystemData) -> None:
    rel = eco.nccl_release("2.10.3")
    assert rel is not None and [b.cuda for b in rel.builds] == ["10.2", "11.0", "11.4"]
    assert eco.nccl_release("2.28.9").pip_for(13) == "nvidia-nccl-cu13"  # type: ignore[union-attr]
    assert eco.nccl_release("2.27.7").pip_for(13) == "nvidia-nccl-cu13"  # type: ignore[union-attr]  # PyPI, 2025-09-23
    assert eco.nccl_release("2.27.6").pip_for(13) is None  # type: ignore[union-attr]
    assert eco.nccl_release("2.21").version == "2.21.5"  # type: ignore[union-attr]
    assert eco.nccl_release("2.16.5").cuda_majors == (11, 12)  # type: ignore[union-attr]
    # nvidia-nccl-cu13 2.30.7 is on PyPI (torch 2.14.0-2.15.0 pin it), beside the cuda13.3 redistributable
    r2307 = eco.nccl_release("2.30.7")
    assert r2307 is not None and r2307.pip_for(13) == "nvidia-nccl-cu13" and r2307.pip_for(12) == "nvidia-nccl-cu12"
    assert eco.nccl_release("2.28.3").pip_for(13) == "nvidia-nccl-cu13"  # type: ignore[union-attr]


def test_tensorrt_11_python_and_cuda13_names(eco: EcosystemData) -> None:
    # the cp38 ... cp314 bindings wheels of 11.1.0.106 and 11.4.0.106; tensorrt-cu13 11.4.0.106 on PyPI
    for version in ("11.1.0", "11.4.0"):
        rel = eco.trt_requirements(version)
        assert rel is not None and rel.python == ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14")
    r114 = eco.trt_requirements("11.4.0")
    assert r114 is not None and r114.pip_for(13)[0] == "tensorrt-cu13" and "tensorrt-cu13-libs" in r114.pip_for(13)


# ---------------------------------------------------------------------------- the data as a whole


def test_invariants_hold(eco: EcosystemData, matrix: Matrix) -> None:
    assert ecosystem.invariants(eco, matrix) == []


def test_every_record_is_sourced() -> None:
    for name in ecosystem.TABLES:
        doc = json.loads((DATA / name).read_text())
        lists = [v for k, v in doc.items() if isinstance(v, list)]
        for items in lists:
            for item in items:
                assert item.get("source") and item.get("confidence") in ("primary", "secondary", "unverified"), name


def test_no_index_url_in_code() -> None:
    """Package indexes are data: none is spelled out in the modules that read them."""
    folder = REPO / "cudadoctor" / "matrix"
    modules = ["ecosystem", "_ecocommon", "_tensorflow", "_jax", "_cupy", "_onnxruntime", "_tensorrt", "_julia", "_nccl"]
    for path in (folder / f"{m}.py" for m in modules):
        assert "http" not in path.read_text(), path.name


# ---------------------------------------------------------------------------- broken data


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "compat_data"
    shutil.copytree(DATA, target)
    return target


def _edit(directory: Path, name: str, change: Callable[[Dict[str, Any]], None]) -> None:
    path = directory / name
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _complaints(directory: Path) -> str:
    """What the data layer says about the data: a DataError's text, or the invariant problems."""
    m = Matrix(str(directory))
    try:
        return "\n".join(ecosystem.invariants(m.ecosystem, m))
    except DataError as exc:
        return str(exc)


def _record(doc: Dict[str, Any], key: str, value: str) -> Dict[str, Any]:
    return next(r for r in doc["records"] if r.get(key) == value)


def _tf215(doc: Dict[str, Any]) -> Dict[str, Any]:
    return next(r for r in doc["records"] if r["version"] == "2.15.0" and r["platform"] == "linux")


def _swap(items: List[Any], i: int, j: int) -> None:
    items[i], items[j] = items[j], items[i]


BROKEN = [
    # wrong types and malformed values: caught when the file loads
    ("tensorflow.json", lambda d: _tf215(d).update(cuda=12.2), ["tensorflow.json", "(2.15.0)", "cuda"]),
    ("tensorflow.json", lambda d: d["and_cuda_pins"][1]["pins"].update({"nvidia-cudnn-cu12": "8.9"}),
     ["tensorflow.json", "and_cuda_pins[1]", "nvidia-cudnn-cu12"]),
    ("jax.json", lambda d: d["records"][3]["builds"][0].pop("plugins"), ["jax.json", "records[3]", "plugins"]),
    ("cupy.json", lambda d: _record(d, "distribution", "cupy-cuda12x").update(cuda_min="twelve"),
     ["cupy.json", "(cupy-cuda12x)", "cuda_min"]),
    ("onnxruntime.json", lambda d: d["records"][0].update(pypi_default="yes"), ["onnxruntime.json", "pypi_default"]),
    ("tensorrt.json", lambda d: d["records"][2].pop("builds"), ["tensorrt.json", "records[2]", "builds: required"]),
    ("julia.json", lambda d: d["records"][0].update(extra=1), ["julia.json", "records[0]", "extra: unknown field"]),
    ("nccl.json", lambda d: d["records"].clear(), ["nccl.json", "records"]),
    # unsorted and duplicated records
    ("jax.json", lambda d: _swap(d["records"], 4, 5), ["jax.json: 0.4.4-0.4.6"]),
    ("tensorflow.json", lambda d: _swap(d["records"], 0, 1), ["tensorflow.json: records (by platform"]),
    ("cupy.json", lambda d: d["records"].append(_record(d, "distribution", "cupy-cuda12x")),
     ["cupy.json: cupy-cuda12x: listed twice"]),
    ("nccl.json", lambda d: d["records"].insert(0, d["records"][0]), ["nccl.json: 2.7.8: listed twice"]),
    ("onnxruntime.json", lambda d: _record(d, "first", "1.21").update(first="1.20"),
     ["onnxruntime.json", "overlaps 1.19-1.20"]),
    ("julia.json", lambda d: d["records"][-1].update(first="5.8.2"), ["julia.json: 5.8.2-5: overlaps 5.5-5.8.2"]),
    # dangling references and disagreeing facts
    ("tensorflow.json", lambda d: _tf215(d).update(cuda="12.99"),
     ["tensorflow.json: 2.15.0 (linux): CUDA 12.99 is not a release of cuda_toolkits.json"]),
    ("onnxruntime.json", lambda d: d["records"][-1].update(cuda_major=14, cuda="14"),
     ["onnxruntime.json: 1.27-1.31 CUDA 14: CUDA 14 is not a major of cuda_toolkits.json"]),
    ("tensorflow.json", lambda d: d["and_cuda_pins"][1]["pins"].update({"nvidia-nccl-cu12": "==2.99.1"}),
     ["tensorflow.json: and_cuda_pins 2.15.0: nvidia-nccl-cu12==2.99.1", "nccl.json"]),
    ("tensorflow.json", lambda d: d["and_cuda_pins"][1]["pins"].update({"nvidia-cublas-cu11": "==11.11.3.6"}),
     ["tensorflow.json: and_cuda_pins 2.15.0: nvidia-cublas-cu11 is a CUDA 11 wheel in a CUDA 12 set"]),
    ("tensorflow.json", lambda d: d["and_cuda_pins"][1]["pins"].update({"nvidia-cudnn-cu12": "==9.1.0.70"}),
     ["tensorflow.json: and_cuda_pins 2.15.0", "does not match the tested cuDNN 8.9"]),
    ("jax.json", lambda d: next(f for f in d["facts"] if f["id"] == "cuda11_last").update(value="0.4.29"),
     ["jax.json: facts: cuda11_last"]),
    ("jax.json", lambda d: d["records"][-1]["builds"][1].update(plugins=["jax-cuda12-plugin"]),
     ["jax.json: 0.12.0-0.12: CUDA 13: plugin jax-cuda12-plugin is not a CUDA 13 distribution"]),
    ("cupy.json", lambda d: _record(d, "distribution", "cupy-cuda117").update(last_cupy="14.0.0"),
     ["cupy.json: cupy-cuda117: serves CUDA 11.7, which CuPy v14 does not support"]),
    ("tensorrt.json", lambda d: d["records"][-1].update(min_compute_capability="6.1"),
     ["tensorrt.json", "minimum compute capability goes down"]),
    ("nccl.json", lambda d: _record(d, "version", "2.28.9")["builds"][1].update(pip="nvidia-nccl-cu12"),
     ["nccl.json: 2.28.9: CUDA 13: nvidia-nccl-cu12 is not a CUDA 13 wheel"]),
]


@pytest.mark.parametrize("name,change,expected", BROKEN)
def test_broken_data_is_reported(tmp_path: Path, name: str, change: Callable[[Dict[str, Any]], None],
                                 expected: List[str]) -> None:
    directory = _copy(tmp_path)
    _edit(directory, name, change)
    text = _complaints(directory)
    for part in expected:
        assert part in text, text


def test_build_errors_name_the_file(tmp_path: Path) -> None:
    """What the schema lets through but the rows cannot use is a DataError of that file."""
    docs = {name: json.loads((DATA / name).read_text()) for name in ecosystem.TABLES}
    del docs["julia.json"]["records"][0]["first"]
    with pytest.raises(DataError) as err:
        ecosystem.build(docs)
    assert err.value.file == "julia.json"
