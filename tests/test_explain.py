"""`cudadoctor explain "ERROR TEXT"` as a user meets it: the possible causes of a message most
likely first, what to verify, and which cause holds on the machine (a recorded one here), on
facts or on a saved snapshot; usage errors exit 2."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import List

import pytest

from cudadoctor.probes import collect
from cudadoctor.host.recorded import RecordedHost
from cudadoctor.model.serialize import snapshot_to_json
from helpers import MACHINES, cli

MISMATCH_MACHINE = os.path.join(MACHINES, "nvml-mismatch-after-upgrade")
H200 = os.path.join(MACHINES, "h200-driver580-torch211-cu130")
DOCKER = os.path.join(MACHINES, "docker-nogpu-torch-cu126")
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch"
NO_KERNEL_IMAGE = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
LOG = ("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    x = torch.zeros(1).cuda()\n"
       "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
       "NumCudaDevices() that might have already set an error? Error 804: forward compatibility was attempted on "
       "non supported HW\n")


def test_a_known_message_with_its_cause_holding_here(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["explain", "--machine", MISMATCH_MACHINE, MISMATCH], capsys)
    assert code == 0, err
    assert "Known error: nvml-driver-library-version-mismatch  (line 1)" in out
    assert "possible causes, most likely first:" in out
    assert "1. a kernel module and driver libraries of different versions" in out
    assert "holds here: the driver's kernel module and user-space libraries are different versions" in out
    assert "verify:" in out and "- uptime (reboot since the upgrade?)" in out
    # the machine's own findings follow, with their fix, but not the message's own finding again
    assert "Checked against the recorded machine" in out
    assert "sudo reboot" in out
    assert "error-message-match" not in out


def test_a_cause_the_machine_rules_out(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["explain", "--machine", H200, MISMATCH], capsys)
    assert code == 0
    assert "not the cause here: NVML answers (driver 580.159.03)" in out
    assert "No problems found." in out


def test_causes_are_listed_most_likely_first_for_each_match(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["explain", "--no-check", LOG], capsys)
    assert code == 0
    first = out.index("Known error 1 of 2: cuda-compat-not-supported-on-device  (line 4)")
    second = out.index("Known error 2 of 2: torch-cudagetdevicecount-unexpected")
    assert first < second
    assert out.index("1. a driver too old for the CUDA version in use") < out.index(
        "2. a kernel module and driver libraries of different versions")
    assert "Not checked against this machine (--no-check)." in out
    assert "holds here" not in out and "cannot tell" not in out


def test_words_without_quotes_are_one_message(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["explain", "--no-check"] + NO_KERNEL_IMAGE.split(), capsys)
    assert code == 0
    assert "Known error: cuda-no-kernel-image" in out


def test_the_message_from_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(LOG))
    code, out, _ = cli(["explain", "-", "--no-check"], capsys)
    assert code == 0
    assert "cuda-compat-not-supported-on-device  (line 4)" in out


def test_no_match_says_so_and_still_checks_the_machine(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["explain", "--machine", DOCKER, "Segmentation fault (core dumped)"], capsys)
    assert code == 0, err
    assert "No known error signature matches this text" in out
    assert "It begins: Segmentation fault (core dumped)" in out
    assert "Checked against the recorded machine" in out
    assert "container" in out  # this docker container was started without its GPU


def test_json_result(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["explain", "--machine", MISMATCH_MACHINE, "--json", MISMATCH], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["format"] == "cudadoctor.explain" and doc["format_version"] == 1
    assert doc["matched"] is True
    match = doc["matches"][0]
    assert match["signature"] == "nvml-driver-library-version-mismatch"
    assert match["line_number"] == 1 and match["verify"]
    cause = match["causes"][0]
    assert cause["category"] == "driver_library_mismatch"
    assert cause["verdict"] == "holds" and cause["findings"] == ["driver-library-mismatch"]
    assert doc["checked"] == {"kind": "recorded", "what": MISMATCH_MACHINE}
    codes = [f["code"] for f in doc["findings"]]
    assert "driver-library-mismatch" in codes and "error-message-match" in codes
    mine = next(f for f in doc["findings"] if f["code"] == "error-message-match")
    assert mine["caused_by"] == "driver-library-mismatch" and mine["confidence"] == "low"


def test_json_without_a_match_or_a_check(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["explain", "--no-check", "--json", "all good"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert (doc["matched"], doc["matches"], doc["checked"], doc["findings"]) == (False, [], None, None)


def test_judged_on_facts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"driver_version": "550.127.05", "kernel_module_version": "535.183.01"}))
    code, out, _ = cli(["explain", "--facts", str(facts), MISMATCH], capsys)
    assert code == 0
    assert f"Checked against the facts in {facts}" in out
    assert "holds here" in out


def test_facts_that_say_too_little_cannot_tell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"driver_version": "550.127.05"}))
    code, out, _ = cli(["explain", "--facts", str(facts), MISMATCH], capsys)
    assert code == 0
    assert "cannot tell: the driver's state (NVML, kernel module): unknown" in out


def test_judged_on_a_saved_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "snapshot.json"
    saved.write_text(snapshot_to_json(collect(RecordedHost.load(MISMATCH_MACHINE))))
    code, out, _ = cli(["explain", "--snapshot", str(saved), MISMATCH], capsys)
    assert code == 0
    assert f"Checked against the snapshot in {saved}" in out
    assert "holds here" in out


@pytest.mark.parametrize("args, words", [
    (["explain"], "no error text"),
    (["explain", "  "], "no error text"),
    (["explain", "--no-check", "--facts", "f.json", "x"], "cannot be used together"),
    (["explain", "--python", "/usr/bin/python3", "--no-check", "x"], "cannot be used together"),
    (["explain", "--facts", "/nonexistent/facts.json", "x"], "/nonexistent/facts.json"),
    (["explain", "--machine", "/nonexistent", "x"], "no machine.json"),
])
def test_usage_errors_exit_2(args: List[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(args, capsys)
    assert code == 2
    assert words in err
    assert out == ""


def test_empty_stdin_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("\n \n"))
    code, _, err = cli(["explain", "-"], capsys)
    assert code == 2
    assert "no error text" in err


def test_bad_facts_are_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"gpu_nmae": "RTX 4090"}))
    code, _, err = cli(["explain", "--facts", str(facts), "x"], capsys)
    assert code == 2
    assert "gpu_nmae" in err


def test_help_names_stdin(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["explain", "--help"], capsys)
    assert code == 0
    assert "'-' to read it from stdin" in out


def test_explain_is_listed(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = cli(["--help"], capsys)
    assert "explain" in out


# ---------------------------------------------------------------------------- long logs


def test_a_long_log_is_read_at_both_ends_in_bounded_memory(tmp_path: Path) -> None:
    """The error of a log is almost always at its end: a 60 MB log whose CUDA error is its last
    line is explained, from a file and from a pipe, with the middle left out and said so."""
    import resource
    import subprocess
    import sys

    log = tmp_path / "train.log"
    line = b"2026-11-26 12:00:00 INFO step 12345 loss=0.1234 lr=0.0001 throughput=1234.5 samples/s\n"
    with open(log, "wb") as fh:
        for _ in range(60 * 1024 * 1024 // (len(line) * 1000)):
            fh.write(line * 1000)
        fh.write(b"RuntimeError: CUDA error: no kernel image is available for execution on the device\n")

    def limited() -> None:  # the whole log would not fit: 60 MB text is ~4x that as a str and its lines
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    command = [sys.executable, "-m", "cudadoctor", "explain", "--no-check", "-"]
    with open(log, "rb") as fh:
        from_file = subprocess.run(command, stdin=fh, capture_output=True, timeout=60, preexec_fn=limited)
    piped = subprocess.run(f"cat {log} | {' '.join(command)}", shell=True, capture_output=True, timeout=60,
                           preexec_fn=limited)
    for result in (from_file, piped):
        assert result.returncode == 0, result.stderr
        assert b"Known error: cuda-no-kernel-image" in result.stdout
        assert b"read its first 1 MiB and its last 8 MiB" in result.stderr
