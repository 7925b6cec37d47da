"""The data's horizon (checks/horizon.py): a torch release, CUDA toolkit or driver branch newer
than the data is said, never a silent ✓; what the data knows gives no note."""

from __future__ import annotations

import json
from typing import Any, List

import pytest

from cudadoctor.api import diagnose
from helpers import cli

CODE = "newer-than-data"


def notes(**facts: Any) -> List[str]:
    return [f.title for f in diagnose(facts) if f.code == CODE]


@pytest.mark.parametrize("facts, title", [
    ({"torch_version": "2.16.0+cu130", "driver_version": "580.65.06"},
     "torch 2.16.0+cu130 is newer than the compatibility data knows"),
    ({"torch_version": "2.11.0+cu130", "driver_version": "625.10.01"},
     "driver 625.10.01 (branch R625) is newer than the compatibility data knows"),
    ({"nvcc_version": "13.6", "driver_version": "580.65.06"},
     "the CUDA toolkit 13.6 is newer than the compatibility data knows"),
    ({"jax_version": "0.13.0", "driver_version": "580.65.06"}, "jax 0.13.0 is newer than the compatibility data knows"),
    ({"cupy_package": "cupy-cuda13x==15.0.0", "driver_version": "580.65.06"},
     "cupy-cuda13x 15.0.0 is newer than the compatibility data knows"),
    ({"onnxruntime_package": "onnxruntime-gpu==1.32.0", "driver_version": "580.65.06"},
     "onnxruntime-gpu 1.32.0 is newer than the compatibility data knows"),
    ({"tensorflow_version": "2.22.0", "driver_version": "580.65.06"},
     "tensorflow 2.22.0 is newer than the compatibility data knows"),
])
def test_past_the_horizon_is_said(facts: Any, title: str) -> None:
    assert notes(**facts) == [title]


@pytest.mark.parametrize("facts", [
    {"torch_version": "2.5.1+cu124", "driver_version": "570.86.15"},
    {"torch_version": "2.6.0a0+ecf3bae", "driver_version": "570.86.15"},  # a pre-release, not a newer release
    {"nvcc_version": "12.4", "driver_version": "550.54.15"},
    {"nvcc_version": "13.5", "driver_version": "620.70.06"},  # CUDA 13.5 and R620 are in the data
    {"jax_version": "0.12.0.1", "driver_version": "580.65.06"},  # inside the newest series
    {"jax_version": "0.12.1", "driver_version": "580.65.06"},
    {"cupy_package": "cupy-cuda12x==14.2.0", "driver_version": "580.65.06"},
    {"onnxruntime_package": "onnxruntime-gpu==1.31.1", "driver_version": "580.65.06"},
    {"tensorflow_version": "2.21.1", "driver_version": "580.65.06"},  # a patch of a known release series
    {"tensorflow_version": "2.22.0rc0", "driver_version": "580.65.06"},  # a pre-release
])
def test_what_the_data_knows_gives_no_note(facts: Any) -> None:
    assert notes(**facts) == []


def test_the_horizon_says_what_the_data_reaches() -> None:
    why = {f.title.split()[0]: f.why for f in diagnose({"jax_version": "0.13.0", "tensorflow_version": "2.22.0",
                                                          "driver_version": "625.10.01"}) if f.code == CODE}
    assert why["jax"].startswith("The data knows up to jax 0.12.x.")
    assert why["tensorflow"].startswith("The data knows up to tensorflow 2.21.x.")
    assert why["driver"].startswith("The data knows up to branch R620. It is assumed to run at least what R620 runs "
                                    "(CUDA 13.5)")


def test_diagnose_facts_names_the_horizon(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"torch_version": "2.16.0+cu130", "nvcc_version": "13.6", "driver_version": "580.65.06",
                                 "gpu_name": "NVIDIA Hypothetical X900"}), encoding="utf-8")
    code, out, _ = cli(["diagnose", "--facts", str(facts), "--no-color"], capsys)
    lines = out.splitlines()
    verdict = next(line for line in lines if line.startswith(("✓", "!", "✗")))
    assert verdict == ("✓ No problems found. 3 facts are beyond the compatibility data: judged by assumption "
                       "(see below)."), out
    assert "torch 2.16.0+cu130 is newer than the compatibility data knows" in out
    assert "the CUDA toolkit 13.6 is newer than the compatibility data knows" in out
    assert "the GPU 'NVIDIA Hypothetical X900' is not one the compatibility data knows" in out
    found = json.loads(cli(["diagnose", "--facts", str(facts), "--json"], capsys)[1])["findings"]
    horizon = [f for f in found if f["code"] == CODE]
    assert len(horizon) == 2 and all(f["fix"]["commands"][0]["run"] == "cudadoctor data update" for f in horizon)
    assert code == 0
