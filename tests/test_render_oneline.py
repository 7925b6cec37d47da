"""The one-line verdict (cudadoctor.render.oneline): the pytest header, `check --format line`, a
scheduler's drain reason. Golden lines for recorded machines, then how a long line is shortened."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest

from cudadoctor import api
from cudadoctor.cli.app import run
from cudadoctor.model import Category, Finding, FrameworkBuild, Gpu, Report, Severity
from cudadoctor.host.recorded import RecordedHost
from cudadoctor.render.oneline import LIMIT, one_line
from helpers import MACHINES


GOLDEN = {
    "h200-driver580-torch211-cu130":
        "driver 580.159.03 (CUDA 13.0) · 1× NVIDIA H200 (sm_90, 140 GiB) · torch 2.11.0+cu130 · jax 0.11.2 (CUDA 13)"
        " · cupy 14.2.0 (CUDA 13) · ✓ no problems found",
    "dev-debian12-cuda13-nodriver-torch213cpu":
        "no NVIDIA driver · no GPU · torch 2.13.0+cpu (CPU-only) · ✗ no-nvidia-gpu: this machine has no NVIDIA GPU",
    "dgx-h100x8-driver570-torch27-cu128":
        "driver 570.124.06 (CUDA 12.8) · 8× NVIDIA H100 80GB HBM3 (sm_90, 80 GiB) · torch 2.7.1+cu128 · ✓ no problems found",
    "conda-forge-pytorch-cuda12":
        "driver 560.35.03 (CUDA 12.6) · 1× NVIDIA RTX A6000 (sm_86, 48 GiB) · torch 2.5.1 (CUDA 12.6) · ✓ no problems found",
    "laptop-rtx3060-driver470-torch25-cu124":
        "driver 470.82.01 (CUDA 11.4) · 1× NVIDIA GeForce RTX 3060 Laptop GPU (sm_86, 6 GiB) · torch 2.5.1+cu124"
        " · ✗ driver-too-old-for-build: torch 2.5.1+cu124 needs a newer NVIDIA driver than 470.82.01",
    "docker-nogpu-torch-cu126":
        "driver unreadable (kernel module 550.120) · 1× NVIDIA GeForce RTX 3090 (PCI only) · torch 2.6.0+cu126"
        " · ✗ container-without-gpu: this docker container was started without GPU access",
    "two-toolkits-ldpath-cudnn8-shadow":  # two warnings: the first is named, the title cut to fit
        "driver 550.120 (CUDA 12.4) · 1× NVIDIA GeForce RTX 4090 (sm_89, 24 GiB) · torch 2.4.1+cu124"
        " · ! cuda-library-shadowed: LD_LIBRARY_PATH puts older CUDA libraries in front of torch 2.4.1+cu12… (+1 more)",
}


def _report(name: str) -> Report:
    snapshot = api.collect(host=RecordedHost.load(os.path.join(MACHINES, name)))
    return api.make_report(snapshot, api.diagnose(snapshot))


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_line(name: str) -> None:
    line = one_line(_report(name))
    assert line == GOLDEN[name]
    assert len(line) <= LIMIT and "\n" not in line


def test_check_format_line_prints_the_line_and_keeps_the_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    code = run(["check", "--machine", os.path.join(MACHINES, "laptop-rtx3060-driver470-torch25-cu124"), "--format", "line"])
    assert (code, capsys.readouterr().out) == (1, GOLDEN["laptop-rtx3060-driver470-torch25-cu124"] + "\n")
    code = run(["check", "--machine", os.path.join(MACHINES, "h200-driver580-torch211-cu130"), "--format", "line"])
    assert (code, capsys.readouterr().out) == (0, GOLDEN["h200-driver580-torch211-cu130"] + "\n")


def test_diagnose_format_line_reads_a_saved_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    machine = os.path.join(MACHINES, "dev-debian12-cuda13-nodriver-torch213cpu")
    run(["check", "--machine", machine, "--json"])
    saved = tmp_path / "check.json"
    saved.write_text(capsys.readouterr().out, encoding="utf-8")
    assert run(["diagnose", str(saved), "--format", "line"]) == 1
    assert capsys.readouterr().out == GOLDEN["dev-debian12-cuda13-nodriver-torch213cpu"] + "\n"


def test_ascii_spells_the_marks_out() -> None:
    line = one_line(_report("dev-debian12-cuda13-nodriver-torch213cpu"), ascii=True)
    assert line == "no NVIDIA driver | no GPU | torch 2.13.0+cpu (CPU-only) | ERROR no-nvidia-gpu: this machine has no NVIDIA GPU"
    healthy = one_line(_report("dgx-h100x8-driver570-torch27-cu128"), ascii=True)
    assert healthy.endswith("| 8x NVIDIA H100 80GB HBM3 (sm_90, 80 GiB) | torch 2.7.1+cu128 | OK no problems found")


def _with(report: Report, **changes: Any) -> Report:
    return dataclasses.replace(report, snapshot=dataclasses.replace(report.snapshot, **changes))


def _error(code: str, title: str) -> Finding:
    return Finding(code=code, severity=Severity.ERROR, category=Category.OTHER, title=title)


def test_a_long_verdict_is_cut_but_keeps_its_code_and_count() -> None:
    base = _report("h200-driver580-torch211-cu130")
    report = dataclasses.replace(base, findings=(_error("some-error", "word " * 80), _error("other", "x")))
    line = one_line(report)
    assert len(line) <= LIMIT
    assert "torch 2.11.0+cu130 (+2 more)" in line  # extra frameworks collapse first
    assert "✗ some-error: word word" in line and line.endswith("… (+1 more)")


def test_many_gpu_models_cut_the_facts_not_the_verdict() -> None:
    base = _report("dgx-h100x8-driver570-torch27-cu128")
    gpus = tuple(Gpu(index=i, name=f"NVIDIA Model {i} " + "x" * 30, compute_capability="8.0") for i in range(8))
    line = one_line(_with(base, gpus=gpus), limit=150)
    assert len(line) <= 150
    assert line.endswith("… · ✓ no problems found")


def test_unknown_and_absent_facts() -> None:
    base = _report("h200-driver580-torch211-cu130")
    unknown = one_line(_with(base, driver=None, gpus=None, frameworks=None))
    assert unknown == "driver unknown · GPUs unknown · frameworks unknown · ✓ no problems found"
    assert one_line(_with(base, frameworks=())) == (
        "driver 580.159.03 (CUDA 13.0) · 1× NVIDIA H200 (sm_90, 140 GiB) · ✓ no problems found")
    rocm = FrameworkBuild(name="torch", version="2.5.1+rocm6.2", variant="rocm")
    assert " · torch 2.5.1+rocm6.2 (rocm) · " in one_line(_with(base, frameworks=(rocm,)))


def test_without_checks_there_is_no_verdict() -> None:
    base = _report("h200-driver580-torch211-cu130")
    line = one_line(dataclasses.replace(base, findings=(), checked=False))
    assert line.endswith("cupy 14.2.0 (CUDA 13)")
