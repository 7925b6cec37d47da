"""compat_data brought to 2026-11 (issue 17): the releases the data lacked, and the values the audit
found wrong, each read again from its primary source (the wheels' METADATA, the simple index's
files, the binary). The records cite those sources; these tests keep the values from drifting back."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudadoctor.matrix import Matrix
from cudadoctor.matrix.ecosystem import EcosystemData

DATA = Path(__file__).resolve().parents[1] / "compat_data"


@pytest.fixture(scope="module")
def eco(matrix: Matrix) -> EcosystemData:
    data: EcosystemData = matrix.ecosystem
    return data


# ---------------------------------------------------------------------------- new releases


def test_cuda_135_runs_on_the_r620_branch(matrix: Matrix) -> None:
    release = matrix.cuda.release("13.5")
    assert release is not None and release.cuda == "13.5.0"
    branch = matrix.cuda.branch_of("620.70.06")
    assert branch is not None and branch.branch == "R620" and branch.max_cuda == "13.5"
    assert matrix.cuda.newest_cuda_for_driver("620.70.06") == "13.5"


def test_cudnn_928_and_nccl_232(matrix: Matrix, eco: EcosystemData) -> None:
    assert matrix.toolchain.cudnn_supports("9.28.1", "13.5") is not False
    row = matrix.toolchain.cudnn("9.28.1")
    assert row is not None and [c.major for c in row.cuda] == [13]  # no nvidia-cudnn-cu12 9.28.1 on PyPI
    nccl = eco.nccl.release("2.32.3")
    assert nccl is not None and nccl.cuda_majors == (12, 13)
    assert nccl.pip_for(13) == "nvidia-nccl-cu13"


def test_jax_012_is_known(eco: EcosystemData) -> None:
    rel = eco.jax_release("0.12.0.1")
    assert rel is not None and rel.python == ("3.12", "3.13", "3.14", "3.15")
    assert rel.cuda_majors == (12, 13)


def test_onnxruntime_131_is_the_pypi_cuda13_build(eco: EcosystemData) -> None:
    for version in ("1.28.0", "1.31.1"):
        build = eco.onnxruntime.pypi_build(version)
        assert build is not None and build.cuda_major == 13 and build.cudnn == "9"


# ---------------------------------------------------------------------------- corrected values


def test_jax_011_and_later_require_python_312(eco: EcosystemData) -> None:
    # jax 0.11.0's Requires-Python is >=3.12 and jaxlib 0.11.0 has cp312-cp314 wheels only
    for version in ("0.11.0", "0.11.2", "0.12.0"):
        rel = eco.jax_release(version)
        assert rel is not None and rel.python is not None and rel.python[0] == "3.12", version
    old = eco.jax_release("0.10.2")
    assert old is not None and old.python is not None and old.python[0] == "3.11"


@pytest.mark.parametrize("version", ["0.7.2", "0.10.2", "0.11.0", "0.12.0.1"])
def test_jax_cuda13_plugin_pins_cudnn_91204_and_nccl_2277(eco: EcosystemData, version: str) -> None:
    build = eco.jax_release(version).build(13)  # type: ignore[union-attr]
    assert build is not None and (build.min_cudnn, build.min_nccl) == ("9.12.0.46", "2.27.7")


def test_jax_cuda12_plugin_raises_its_cudnn_floor_at_0112(eco: EcosystemData) -> None:
    assert eco.jax_release("0.11.1").build(12).min_cudnn == "9.8"  # type: ignore[union-attr]
    assert eco.jax_release("0.11.2").build(12).min_cudnn == "9.10.2.21"  # type: ignore[union-attr]


def test_cupy_cuda12x_starts_at_115_and_cupy_wheel_at_104(eco: EcosystemData) -> None:
    cuda12x = eco.cupy.cuda_for("cupy-cuda12x")
    assert cuda12x is not None and cuda12x.shipped_in("11.5.0") and not cuda12x.shipped_in("11.4.0")
    meta = next(d for d in eco.cupy.distributions if d.distribution == "cupy-wheel")
    assert meta.first_cupy == "10.4.0" and meta.shipped_in("10.4.0") and not meta.shipped_in("10.3.0")


def test_cupy_140_has_python_314_wheels(eco: EcosystemData) -> None:
    row = eco.cupy.major_of("14.0.0")
    assert row is not None and row.python is not None and "3.14" in row.python
    assert "v14.1.0 (May 2026) ships" not in (row.note or "")


def test_tensorflow_and_cuda_pins_are_ranges_from_220(eco: EcosystemData) -> None:
    pins = eco.tensorflow.and_cuda_pins("2.20.0")
    assert pins is not None and pins.version == "2.20.0"
    assert pins.pin("nvidia-cudnn-cu12") == ">=9.3.0.75,<10.0"
    assert pins.pin("nvidia-nccl-cu12") == ">=2.25.1,<3.0"
    latest = eco.tensorflow.and_cuda_pins("2.21.0")
    assert latest is not None and latest.pin("nvidia-nccl-cu12") == ">=2.27.7,<3.0" and len(latest.pins) == 12
    # 2.19.0 still pins exactly; its wheel pins NCCL 2.23.4, not the development branch's 2.25.1
    exact = eco.tensorflow.and_cuda_pins("2.19.0")
    assert exact is not None and exact.pin("nvidia-nccl-cu12") == "==2.23.4"


def test_torch_213_cuda13_wheels_carry_no_sm120_ptx(matrix: Matrix) -> None:
    # read from the 2.13.0 x86_64 wheel's libtorch_cuda.so: 449 fatbins, cubins only (see the record's note)
    support = matrix.pytorch.arch_support("2.13.0", "cu130", "12.0", "linux-x86_64")
    assert support is not None and support.kind == "sass" and support.ptx == ()
    newer = matrix.pytorch.arch_support("2.13.0", "cu130", "13.0", "linux-x86_64")
    assert newer is not None and newer.kind == "unsupported"
