"""One story per diagnosis: no two findings' fixes conflict (checks/reconcile.py).

The walk covers every recorded machine under tests/machines/ and every corpus paste (through
benchmarks/accuracy.py, which reads the validation split only as counts)."""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, List

import pytest

from cudadoctor.api import collect, diagnose
from cudadoctor.checks.reconcile import Intents, conflicts, intents
from cudadoctor.host.recorded import RecordedHost
from cudadoctor.model import Finding, Fix, FixCommand, Severity, Category

from conftest import MACHINES_DIR

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "benchmarks"))
import accuracy  # noqa: E402


def _codes(facts: Dict[str, Any]) -> List[Finding]:
    return list(diagnose(facts))


def _clashes(findings: List[Finding]) -> List[str]:
    wants = [intents(f) for f in findings]
    return [c for i, a in enumerate(wants) for b in wants[i + 1:] for c in conflicts(a, b)]


# ---------------------------------------------------------------------- the rule


def _finding(*commands: str, code: str = "x") -> Finding:
    return Finding(code, Severity.WARNING, Category.OTHER, "t", fix=Fix("", tuple(FixCommand(c) for c in commands)))


def test_intents_read_torch_builds_drivers_and_toolkits() -> None:
    f = _finding("pip uninstall -y torch", "pip install torch==2.11.0 --index-url https://download.pytorch.org/whl/cu128",
                 "sudo apt install nvidia-driver-570-open    # Ubuntu; then reboot",
                 "export CUDA_HOME=/usr/local/cuda-12.8    # after installing CUDA 12.8")
    assert intents(f) == Intents(("cu128",), (570,), ("12.8",))
    assert intents(_finding("uv pip install torch==2.5.1+cu121 torchvision==0.20.1+cu121")).torch == ("cu121",)
    assert intents(_finding("pip install torchvision==0.20.1")).empty


def test_conflicts_are_disjoint_choices() -> None:
    cu128, cu118 = Intents(torch=("cu128",)), Intents(torch=("cu118",))
    assert conflicts(cu128, cu118)
    assert not conflicts(cu128, Intents(torch=("cu118", "cu128")))  # an alternative in common
    assert conflicts(cu128, Intents(toolkits=("11.8",)))  # nvcc advice for the build that goes
    assert not conflicts(cu128, Intents(toolkits=("12.8",)))
    assert conflicts(Intents(drivers=(550,)), Intents(drivers=(570,)))


# ---------------------------------------------------------------------- the two stories of the issue


def test_gtx1080_no_sass_claim_beside_no_kernels() -> None:
    """torch 2.8.0+cu128 has no sm_61: the minor-compat note must not say every GPU has SASS, and the
    driver advice for the build that goes is not shown beside the fix that replaces it."""
    found = _codes({"driver_version": "535.183.01", "gpu_name": "GTX 1080", "torch_version": "2.8.0+cu128",
                    "torch_cuda": "12.8", "python": "3.11.9"})
    assert found[0].code == "arch-unsupported"
    assert not any("Every GPU has SASS" in f.why for f in found)
    assert "driver-minor-version-compat" not in [f.code for f in found]
    assert not _clashes(found)


def test_minor_compat_keeps_its_sass_sentence_when_true() -> None:
    found = _codes({"driver_version": "535.183.01", "gpu_name": "RTX 4090", "torch_version": "2.8.0+cu128",
                    "torch_cuda": "12.8", "python": "3.11.9"})
    minor = next(f for f in found if f.code == "driver-minor-version-compat")
    assert "Every GPU has SASS" in minor.why


def test_rtx5090_nvcc_advice_follows_the_fixed_build() -> None:
    """The root fix is a cu128 build; nvcc 12.8 is then right, so no 'install CUDA 11.8' beside it."""
    found = _codes({"driver_version": "570.124.06", "gpu_name": "RTX 5090", "torch_version": "2.5.1+cu118",
                    "torch_cuda": "11.8", "python": "3.11.9", "nvcc_version": "12.8"})
    assert found[0].code == "arch-unsupported"
    assert "nvcc-torch-mismatch" not in [f.code for f in found]
    assert not any("11.8" in c.run for f in found for c in (f.fix.commands if f.fix else ()))


def test_newest_build_named_is_one_the_driver_runs() -> None:
    found = _codes({"driver_version": "570.124.06", "gpu_name": "RTX 5090", "torch_version": "2.8.0+cu126",
                    "torch_cuda": "12.6", "python": "3.11.9"})
    assert "The newest torch build with SASS for sm_120 that driver 570.124.06 runs is 2.11.0+cu128" in found[0].why


def test_nvcc_advice_reworded_to_the_fixed_build() -> None:
    found = _codes({"driver_version": "570.124.06", "gpu_name": "RTX 5090", "torch_version": "2.5.1+cu118",
                    "torch_cuda": "11.8", "python": "3.11.9", "nvcc_version": "12.4"})
    nvcc = next(f for f in found if f.code == "nvcc-torch-mismatch")
    assert nvcc.fix is not None and "cuda-12.8" in nvcc.fix.commands[0].run
    assert nvcc.caused_by == "arch-unsupported"
    assert not _clashes(found)


# ---------------------------------------------------------------------- every recorded machine and paste


@pytest.mark.parametrize("name", sorted(os.listdir(MACHINES_DIR)))
def test_recorded_machine_has_one_story(name: str) -> None:
    host = RecordedHost.load(os.path.join(MACHINES_DIR, name))
    assert not _clashes(list(diagnose(collect(host=host))))


def test_corpus_diagnoses_have_one_story() -> None:
    clashes = accuracy.fix_conflicts()
    assert {k: len(v) for k, v in clashes.items()} == {k: 0 for k in clashes}, clashes["dev"] + clashes["provoked"]
