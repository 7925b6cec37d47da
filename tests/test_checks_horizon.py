"""The data's horizon (checks/horizon.py): a torch release, CUDA toolkit or driver branch newer
than the data is said, never a silent ✓; what the data knows gives no note."""

from __future__ import annotations

from typing import Any, List

import pytest

from cudadoctor.api import diagnose

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
])
def test_past_the_horizon_is_said(facts: Any, title: str) -> None:
    assert notes(**facts) == [title]


@pytest.mark.parametrize("facts", [
    {"torch_version": "2.5.1+cu124", "driver_version": "570.86.15"},
    {"torch_version": "2.6.0a0+ecf3bae", "driver_version": "570.86.15"},  # a pre-release, not a newer release
    {"nvcc_version": "12.4", "driver_version": "550.54.15"},
])
def test_what_the_data_knows_gives_no_note(facts: Any) -> None:
    assert notes(**facts) == []
