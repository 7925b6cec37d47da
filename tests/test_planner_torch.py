"""The torch install planner on machine profiles a user would bring: which build it picks, the
exact pins and index, and what it says when nothing fits."""

from __future__ import annotations

from typing import Sequence, Union

import pytest

from cudadoctor.matrix import Matrix
from cudadoctor.data.source import default_matrix
from cudadoctor.matrix.versions import vkey
from cudadoctor.planner.torch import NoPlan, TorchPlan, plan_torch

Plan = Union[TorchPlan, NoPlan]


@pytest.fixture(scope="module")
def m() -> Matrix:
    return default_matrix()


def plan(m: Matrix, driver: Union[str, None], python: Union[str, None], ccs: Sequence[str], os: str = "linux",
         **kw: str) -> Plan:
    return plan_torch(m, driver, os, python, ccs, **kw)


def a_plan(p: Plan) -> TorchPlan:
    assert isinstance(p, TorchPlan), p
    return p


def newest_with(m: Matrix, variant: str) -> str:
    return [r.version for r in m.pytorch.releases if r.variant(variant)][-1]


def test_rtx_5090_on_r570_gets_a_cu128_build_with_sass_for_sm_120(m: Matrix) -> None:
    p = a_plan(plan(m, "570.124.06", "3.12", ["12.0"]))
    assert vkey(p.cuda or "") >= (12, 8) and vkey(p.cuda or "") < (13,)
    assert p.driver_rule == "native" and p.ptx_jit == ()
    support = m.pytorch.arch_support(p.version, p.variant, "12.0")
    assert support is not None and support.kind == "sass"
    assert p.version == newest_with(m, p.variant)  # the newest release with a CUDA 12.8+ 12.x variant
    assert p.install_command().endswith(f"--index-url {m.pytorch.index_url(p.variant)}")
    assert f"torch=={p.version}" in p.install_command() and f"torchvision=={p.torchvision}" in p.install_command()
    assert any("natively" in r.text and "cuda_toolkits.json#12.8.0" in r.source for r in p.reasons)


def test_gtx_1080_on_r580_gets_the_newest_release_that_still_has_a_cu126_build(m: Matrix) -> None:
    p = a_plan(plan(m, "580.95.05", "3.12", ["6.1"]))
    assert p.variant == "cu126"
    assert p.version == newest_with(m, "cu126")
    assert any("sm_61" in r.text and "passed over" in r.text for r in p.reasons)  # cu130+ have no sm_6x
    assert p.pins == (f"torch=={p.version}", f"torchvision=={p.torchvision}") + (
        (f"torchaudio=={p.torchaudio}",) if p.torchaudio else ())


def test_driver_470_gets_a_cu11x_build_through_minor_version_compatibility(m: Matrix) -> None:
    p = a_plan(plan(m, "470.82.01", "3.10", ["8.6"]))
    assert p.cuda is not None and p.cuda.startswith("11.")
    assert p.driver_rule == "minor_compat" and p.ptx_jit == ()
    assert p.floor_driver == "450.80.02" and p.min_driver == m.cuda.min_driver(p.cuda)
    assert any("minor-version compatibility" in r.text and "cuda_minor_compat.json#11" in r.source for r in p.reasons)


def test_keeping_the_installed_release_picks_its_other_variant(m: Matrix) -> None:
    p = a_plan(plan(m, "470.82.01", "3.10", ["8.6"], version="2.5.1"))
    assert p.label == "2.5.1+cu118"
    assert p.commands(("torch", "torchvision"), uninstall=("torch", "torchvision")) == [
        "pip uninstall -y torch torchvision",
        "pip install torch==2.5.1 torchvision==0.20.1 --index-url https://download.pytorch.org/whl/cu118",
    ]


def test_a_driver_too_old_for_every_build_says_which_driver_to_install(m: Matrix) -> None:
    p = plan(m, "418.39", "3.10", ["7.5"])
    assert isinstance(p, NoPlan)
    assert p.driver is not None and p.with_driver is not None
    assert m.cuda.driver_support(p.driver, p.with_driver.cuda or "", "linux").kind == "native"
    assert "418.39" in p.summary() and p.driver in p.summary()


def test_python_3_14_on_an_old_release_says_which_python_would_do(m: Matrix) -> None:
    p = plan(m, "560.35.03", "3.14", ["8.6"], version="2.5")
    assert isinstance(p, NoPlan)
    assert p.python == m.pytorch.supported_pythons("2.5.1")[-1]  # type: ignore[index]
    assert p.with_python is not None and p.with_python.version == "2.5.1"
    assert "Python 3.14" in p.summary()
    # without the version constraint, a newer release has 3.14 wheels
    newer = a_plan(plan(m, "560.35.03", "3.14", ["8.6"]))
    assert "3.14" in (m.pytorch.supported_pythons(newer.version) or ())


def test_no_gpu_gets_the_cpu_variant(m: Matrix) -> None:
    p = a_plan(plan(m, None, "3.12", []))
    assert p.variant == "cpu" and p.cuda is None and p.driver_rule is None
    assert p.index_url == m.pytorch.index_url("cpu")
    assert p.version == m.pytorch.releases[-1].version


def test_heterogeneous_gpus_fall_back_to_ptx_only_as_a_last_resort(m: Matrix) -> None:
    """No build has SASS for both a Pascal and a Blackwell card; one with PTX for the newer one is
    the last resort, and the plan says so."""
    p = a_plan(plan(m, "580.95.05", "3.12", ["6.1", "12.0"]))
    assert p.ptx_jit == ("12.0",)
    assert any("PTX JIT" in r.text and "last resort" in r.text for r in p.reasons)
    assert m.pytorch.arch_support(p.version, p.variant, "6.1").kind == "sass"  # type: ignore[union-attr]


def test_minor_compat_is_refused_when_a_gpu_would_need_ptx(m: Matrix) -> None:
    """Driver 560 runs CUDA 12.8 builds only through minor-version compatibility, which cannot JIT
    CUDA 12.8 PTX: a build that serves sm_120 through PTX is never chosen on it."""
    p = plan(m, "550.54.14", "3.12", ["6.1", "12.0"])
    assert isinstance(p, NoPlan)
    assert p.with_driver is not None and p.with_driver.ptx_jit == ("12.0",)
    assert p.driver == p.with_driver.min_driver  # the native minimum, since PTX must be JIT-compiled
    assert "Driver 550.54.14 runs no build of torch with kernels for sm_61, sm_120" in p.summary()


def test_unknown_driver_plans_the_pypi_default_and_names_the_driver_it_needs(m: Matrix) -> None:
    p = a_plan(plan(m, None, "3.11", ["8.9"]))
    rel = m.pytorch.release(p.version)
    assert rel is not None and p.variant == rel.linux_default_variant
    assert p.driver_rule is None
    assert any("driver is unknown" in r.text and (p.min_driver or "") in r.text for r in p.reasons)


def test_windows_driver_table_and_platform(m: Matrix) -> None:
    p = a_plan(plan(m, "566.36", "3.10", ["8.9"], os="windows", platform="windows-x86_64"))
    assert p.platform == "windows-x86_64"
    assert m.cuda.driver_support("566.36", p.cuda or "", "windows").kind == p.driver_rule == "native"


def test_a_gpu_no_release_supports(m: Matrix) -> None:
    p = plan(m, "580.95.05", "3.12", ["2.0"])  # Fermi
    assert isinstance(p, NoPlan)
    assert "No build of torch has kernels for sm_20." in p.summary()


def test_kepler_is_not_told_to_install_a_driver_it_cannot_run(m: Matrix) -> None:
    """Tesla K80 stops at R470: with Python 3.14 nothing fits, and no driver would help."""
    p = plan(m, "470.82.01", "3.14", ["3.7"])
    assert isinstance(p, NoPlan)
    assert p.python is not None and p.with_python is not None and p.with_python.cuda
    assert p.driver is None
