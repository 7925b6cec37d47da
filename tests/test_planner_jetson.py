"""A Jetson described by its JetPack (or Jetson Linux release) gets its JetPack's wheels; one
described by its GPU alone gets no guess (planner/jetson.py, jetson.json)."""

from __future__ import annotations

import os

import pytest

from cudadoctor.errors import CudadoctorError
from cudadoctor.host.recorded import RecordedHost
from cudadoctor.api import collect
from cudadoctor.matrix import Matrix
from cudadoctor.planner.install import plan_install
from cudadoctor.planner.target import described, from_snapshot

from conftest import MACHINES_DIR


def _plan(matrix: Matrix, package: str = "torch", manager: str = "pip", **kw: object):  # type: ignore[no-untyped-def]
    return plan_install(matrix, described(matrix, **kw), [package], manager).results[0]  # type: ignore[arg-type]


def test_jetpack_6_2_plans_the_jetson_index(matrix: Matrix) -> None:
    # the index of JetPack 6 / CUDA 12.6: https://github.com/pytorch/TensorRT/pull/3453
    r = _plan(matrix, jetpack="6.2")
    assert r.plan is not None and r.steps is not None
    assert r.steps.commands[-1] == ("pip install torch torchvision torchaudio "
                                    "--index-url https://pypi.jetson-ai-lab.io/jp6/cu126")
    assert r.plan.cuda == "12.6"
    assert not any("download.pytorch.org" in c for c in r.steps.commands)


def test_l4t_of_jetpack_5_gets_nvidias_wheel_file(matrix: Matrix) -> None:
    # NVIDIA's 'PyTorch for Jetson' thread: torch 2.1.0 for JetPack 5.1.2 (L4T R35.4.1), Python 3.8
    r = _plan(matrix, l4t="35.4.1")
    assert r.plan is not None and r.steps is not None
    assert r.steps.commands[-1].startswith("pip install https://developer.download.nvidia.com/compute/redist/jp/v512/")
    assert "cp38" in r.steps.commands[-1]
    assert any("torchvision" in n for n in r.plan.notes)


def test_jetpack_wheels_are_for_its_python(matrix: Matrix) -> None:
    r = _plan(matrix, jetpack="6.2", python="3.12")
    assert r.plan is None and r.nofit is not None and r.nofit.python == "3.10"


def test_jetpack_7_takes_the_sbsa_wheels_without_desktop_driver_rules(matrix: Matrix) -> None:
    r = _plan(matrix, jetpack="7.0")
    assert r.plan is not None and r.plan.cuda is not None and r.plan.cuda.startswith("13.0")
    texts = " ".join(x.text for x in r.plan.reasons)
    assert "part of Jetson Linux" in texts and "the driver is unknown" not in texts


def test_a_jetson_gpu_without_its_jetpack_is_not_guessed(matrix: Matrix) -> None:
    r = _plan(matrix, gpus=["Jetson AGX Orin"])
    assert r.plan is None and r.nofit is not None
    assert "--jetpack" in r.nofit.reasons[0].text


def test_other_frameworks_on_a_jetson_say_they_cannot_tell(matrix: Matrix) -> None:
    r = _plan(matrix, "cupy", jetpack="6.2")
    assert r.plan is None and r.nofit is not None and "cannot tell" in r.nofit.reasons[0].text


def test_conda_on_a_jetson_points_to_pip(matrix: Matrix) -> None:
    r = _plan(matrix, manager="conda", jetpack="6.2")
    assert r.plan is None and r.nofit is not None and "pypi.jetson-ai-lab.io" in r.nofit.reasons[-1].text


@pytest.mark.parametrize("kw", [{"jetpack": "9.9"}, {"l4t": "1.2.3"}, {"jetpack": "6.2", "driver": "540.4.0"},
                                {"jetpack": "6.2", "platform": "linux-x86_64"}, {"jetpack": "6.2", "l4t": "35.4.1"}])
def test_bad_jetson_descriptions_are_one_line_errors(matrix: Matrix, kw: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(CudadoctorError):
        described(matrix, **kw)


def test_the_recorded_orin_gets_its_plan(matrix: Matrix) -> None:
    snap = collect(host=RecordedHost.load(os.path.join(MACHINES_DIR, "jetson-agx-orin-jp62-torch28")))
    result = plan_install(matrix, from_snapshot(snap, matrix), ["torch"])
    assert result.ok
    assert "jetson-ai-lab" in result.commands[-1]
