"""Golden text and markdown output for three recorded machines, compared without colour.

Regenerate after an intended change of wording: CUDADOCTOR_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py
"""

from __future__ import annotations

import os

import pytest

from cudadoctor.cli.app import run
from helpers import HERE

MACHINES = ("h200-driver580-torch211-cu130", "h100-driver580-torch211-cu130", "h200-proofkit-driver580-torch211-cu130", "laptop-rtx3060-driver470-torch25-cu124",
            "docker-nogpu-torch-cu126")
FORMATS = {"txt": ["--no-color"], "md": ["--format", "markdown"]}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("machine", MACHINES)
def test_golden(machine: str, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    run(["check", "--machine", str(HERE / "machines" / machine), *FORMATS[fmt]])
    out = capsys.readouterr().out
    assert "\x1b[" not in out
    golden = HERE / "golden" / f"{machine}.{fmt}"
    if os.environ.get("CUDADOCTOR_UPDATE_GOLDEN"):
        golden.write_text(out, encoding="utf-8")
    assert out == golden.read_text(encoding="utf-8"), f"regenerate with CUDADOCTOR_UPDATE_GOLDEN=1 if intended: {golden}"
