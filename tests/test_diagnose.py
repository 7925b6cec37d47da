"""`cudadoctor diagnose` replays saved reports and typed facts with today's data; `check` takes
codes, lists its checks, and turns findings into exit codes for CI."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import List

import pytest

from helpers import MACHINES, cli

MISMATCH = str(MACHINES / "nvml-mismatch-after-upgrade")
H200 = str(MACHINES / "h200-driver580-torch211-cu130")


def saved_report(tmp_path: Path, machine: str, capsys: pytest.CaptureFixture[str]) -> Path:
    code, out, _ = cli(["check", "--machine", machine, "--json"], capsys)
    path = tmp_path / "report.json"
    path.write_text(out)
    return path


def test_a_saved_report_replays_to_the_same_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = saved_report(tmp_path, MISMATCH, capsys)
    original = json.loads(report.read_text())["findings"]
    code, out, _ = cli(["diagnose", str(report), "--json"], capsys)
    assert code == 1
    assert json.loads(out)["findings"] == original
    assert [f["code"] for f in original] == ["driver-library-mismatch"]


def test_a_bare_snapshot_replays_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = saved_report(tmp_path, MISMATCH, capsys)
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(json.dumps(json.loads(report.read_text())["snapshot"]))
    code, out, _ = cli(["diagnose", str(snapshot)], capsys)
    assert code == 1 and "driver-library-mismatch" in out


def test_diagnose_reads_stdin(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    report = saved_report(tmp_path, MISMATCH, capsys)
    monkeypatch.setattr("sys.stdin", io.StringIO(report.read_text()))
    code, out, _ = cli(["diagnose", "-"], capsys)
    assert code == 1 and "driver-library-mismatch" in out


def test_facts_from_a_bug_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"driver_version": "535.183.01", "kernel_module_version": "535.183.01",
                                 "nvml_error": "NVML_ERROR_LIB_RM_VERSION_MISMATCH"}))
    code, out, _ = cli(["diagnose", "--facts", str(facts)], capsys)
    assert code == 1
    assert "driver-library-mismatch" in out


@pytest.mark.parametrize("text", ["{}", '{"pip_packages": ["vllm"]}', '{"python": "3.11"}'])
def test_facts_with_nothing_to_judge_say_so_and_fail(text: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # "✓ No problems found" for facts that say nothing would be a verdict on nothing
    facts = tmp_path / "facts.json"
    facts.write_text(text)
    code, out, err = cli(["diagnose", "--facts", str(facts)], capsys)
    assert code == 2 and out == ""
    assert err.startswith(f"cudadoctor: error: {facts}: no fact cudadoctor can judge")


@pytest.mark.parametrize("name", ["RTX 5090", "5090", "rtx5090", "NVIDIA GeForce RTX 5090"])
def test_a_gpu_named_as_people_write_it_is_judged(name: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"gpu_name": name, "torch_version": "2.5.1+cu124", "driver_version": "570.86.15"}))
    code, out, _ = cli(["diagnose", "--facts", str(facts), "--json"], capsys)
    assert code == 1
    assert "arch-unsupported" in [f["code"] for f in json.loads(out)["findings"]]


def test_a_gpu_the_data_does_not_know_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"gpu_name": "banana GPU", "torch_version": "2.5.1+cu124"}))
    code, out, _ = cli(["diagnose", "--facts", str(facts)], capsys)
    assert code == 0
    assert "· the GPU 'banana GPU' is not one the compatibility data knows\n" in out


@pytest.mark.parametrize("fact, value, message", [
    ("driver_version", "banana", "driver_version: 'banana' is not a driver version"),
    ("compute_capability", "99.9", "compute_capability: '99.9' is not a compute capability"),
    ("driver_cuda_version", "twelve", "driver_cuda_version: 'twelve' is not a CUDA version"),
])
def test_an_impossible_value_is_an_error_naming_the_key(fact: str, value: str, message: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({fact: value}))
    code, _, err = cli(["diagnose", "--facts", str(facts)], capsys)
    assert code == 2 and message in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["diagnose"], "give a snapshot or report FILE, or --facts FILE"),
        (["diagnose", "/no/such.json"], "/no/such.json: No such file or directory"),
        (["diagnose", "--facts", "/no/such.json"], "/no/such.json: No such file or directory"),
    ],
)
def test_bad_input_is_one_line(args: List[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(args, capsys)
    assert code == 2 and message in err and "Traceback" not in err


def test_unusable_documents(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = cli(["diagnose", str(bad)], capsys)
    assert code == 2 and "not valid JSON (line 1, column 2" in err
    bad.write_text(json.dumps({"gpus": [{"index": "zero"}]}))
    code, _, err = cli(["diagnose", str(bad)], capsys)
    assert code == 2 and "gpus[0].index: expected an integer" in err
    bad.write_text(json.dumps({"gpu": "RTX 4090"}))
    code, _, err = cli(["diagnose", "--facts", str(bad)], capsys)
    assert code == 2 and "gpu: unknown fact" in err


def test_check_list_names_every_check(capsys: pytest.CaptureFixture[str]) -> None:
    from cudadoctor.checks import CHECKS

    code, out, _ = cli(["check", "--list"], capsys)
    assert code == 0
    for check in CHECKS:
        assert check.name in out


def test_check_runs_only_the_named_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["check", "--machine", MISMATCH, "mig-enabled", "--json"], capsys)
    assert code == 0 and json.loads(out)["findings"] == []
    code, _, err = cli(["check", "--machine", MISMATCH, "no-such-code"], capsys)
    assert code == 2 and "no check or finding code 'no-such-code'" in err


def test_fail_on(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["check", "--machine", MISMATCH, "--fail-on", "never"], capsys)[0] == 0
    assert cli(["check", "--machine", MISMATCH], capsys)[0] == 1
    assert cli(["check", "--machine", H200, "--fail-on", "warning"], capsys)[0] == 0


def test_no_checks_prints_facts_only(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["check", "--machine", MISMATCH, "--no-checks", "--json"], capsys)
    assert code == 0 and json.loads(out)["findings"] is None


def test_markdown_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["check", "--machine", MISMATCH, "--format", "markdown"], capsys)
    assert code == 1
    assert out.startswith("### cudadoctor ")
    assert "#### ✗ the driver's kernel module and user-space libraries are different versions" in out
    assert "<details><summary>Every fact</summary>" in out
