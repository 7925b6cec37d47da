"""Terminal injection (issue 16, item 8): control characters in a stranger's report, or in an
interpreter's stderr, are shown escaped by every command that prints them, in every format."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path
from typing import Any, Dict, List

import pytest

from cudadoctor.model import Gpu, Snapshot
from cudadoctor.model.printable import json_printable, printable, printable_tree
from helpers import MACHINES, cli

OSC52 = "\x1b]52;c;cm0gLXJmIH4K\x07"  # writes the reader's clipboard
CLEAR = "\x1b[2J\x1b[H"  # clears the screen
HOSTILE = f"{OSC52}{CLEAR}\x9b31m\rforged\x08\x08\u202e"
# What a terminal acts on: C0 controls but the newline (tabs are escaped in fields, none is ours),
# DEL, C1, and the bidi overrides.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_printable_escapes_every_control_character() -> None:
    assert printable(HOSTILE) == "\\x1b]52;c;cm0gLXJmIH4K\\x07\\x1b[2J\\x1b[H\\x9b31m\\rforged\\x08\\x08\\u202e"
    assert printable("two\nlines\tand\r", multiline=True) == "two\nlines\tand\\r"
    assert printable("one\nfield") == "one\\nfield"  # a newline in a one-line field could forge a line
    assert printable("RTX 4090 · ✓ ünïcode") == "RTX 4090 · ✓ ünïcode"


def test_printable_tree_and_json() -> None:
    snap = Snapshot(gpus=(Gpu(index=0, name=f"RTX{HOSTILE}"),), env={f"K{CLEAR}": "v\n"},
                    error_message="line 1\nline 2\x1b[2J")
    shown = printable_tree(snap)
    assert shown.gpus and not RAW.search(shown.gpus[0].name or "")
    assert shown.env == {"K\\x1b[2J\\x1b[H": "v\\n"}
    assert shown.error_message == "line 1\nline 2\\x1b[2J"
    plain = Snapshot(gpus=(Gpu(index=0, name="RTX 4090"),))
    assert printable_tree(plain) is plain  # nothing to escape: nothing copied
    doc = json.dumps({"a": HOSTILE}, ensure_ascii=False)
    assert not RAW.search(json_printable(doc)) and json.loads(json_printable(doc)) == {"a": HOSTILE}


def _plant(value: Any) -> Any:
    """Every string of a JSON report with the hostile sequence added (keys of the envelope kept)."""
    if isinstance(value, dict):
        return {k: _plant(v) if k not in ("format", "format_version", "schema_version", "code", "category",
                                          "severity", "status", "suite", "kind", "probe", "confidence", "tier",
                                          "installer") else v
                for k, v in value.items()}
    if isinstance(value, list):
        return [_plant(v) for v in value]
    if isinstance(value, str) and not re.fullmatch(r"[0-9.]+", value):
        return value + HOSTILE
    return value


@pytest.fixture
def hostile_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> List[Path]:
    """Two JSON reports of recorded machines with the hostile sequence in every text field."""
    paths = []
    for i, machine in enumerate(("laptop-rtx3060-driver470-torch25-cu124", "conda-forge-pytorch-cuda12")):
        code, out, err = cli(["report", "--machine", str(MACHINES / machine), "--format", "json", "--no-redact"], capsys)
        assert code == 0, err
        doc: Dict[str, Any] = json.loads(out)
        doc = _plant(doc)
        doc["snapshot"]["smoke"] = [{"suite": "torch", "status": "failed", "reason": f"boom{HOSTILE}",
                                     "stderr_tail": f"Traceback\n{OSC52}\n{CLEAR}RuntimeError: x\x9b2J"}]
        doc["snapshot"]["error_message"] = f"CUDA error: no kernel image{OSC52}\n{CLEAR}"
        path = tmp_path / "nodes" / f"node{i}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(doc), encoding="utf-8")
        paths.append(path)
    return paths


@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "line"])
def test_diagnose_shows_a_hostile_report_escaped(hostile_reports: List[Path], fmt: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["diagnose", str(hostile_reports[0]), "--format", fmt, "-v"], capsys)
    assert code in (0, 1), err
    assert not RAW.search(out + err), [line for line in out.splitlines() if RAW.search(line)][:3]
    assert ("\\u001b]52" if fmt == "json" else "\\x1b]52") in out or fmt == "line"


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_diff_shows_hostile_reports_escaped(hostile_reports: List[Path], fmt: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["diff", str(hostile_reports[0]), str(hostile_reports[1]), "--no-redact", "--format", fmt],
                         capsys)
    assert code == 0, err
    assert not RAW.search(out + err), [line for line in out.splitlines() if RAW.search(line)][:3]
    assert ("\\u001b" if fmt == "json" else "\\x1b") in out


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_fleet_summarize_shows_hostile_reports_escaped(hostile_reports: List[Path], fmt: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["fleet", "summarize", str(hostile_reports[0].parent), "--format", fmt, "-v"], capsys)
    assert code in (0, 1), err
    assert not RAW.search(out + err), [line for line in out.splitlines() if RAW.search(line)][:3]


@pytest.mark.parametrize("fmt", ["markdown", "text"])
def test_report_of_a_machine_with_a_hostile_gpu_name(tmp_path: Path, fmt: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`report` shows it escaped, and its JSON block still replays to the same name."""
    machine = tmp_path / "m"
    shutil.copytree(MACHINES / "laptop-rtx3060-driver470-torch25-cu124", machine)
    data = json.loads((machine / "machine.json").read_text(encoding="utf-8"))
    data["nvml"]["devices"][0]["nvmlDeviceGetName"] = f"NVIDIA GeForce RTX 3060{HOSTILE}"
    (machine / "machine.json").write_text(json.dumps(data), encoding="utf-8")
    code, out, err = cli(["report", "--machine", str(machine), "--format", fmt, "--no-smoke"], capsys)
    assert code == 0, err
    assert not RAW.search(out), [line for line in out.splitlines() if RAW.search(line)][:3]
    if fmt == "markdown":
        target = tmp_path / "report.md"
        target.write_text(out, encoding="utf-8")
        code, replay, err = cli(["diagnose", str(target), "--format", "json"], capsys)
        assert code in (0, 1), err
        assert json.loads(replay)["snapshot"]["gpus"][0]["name"].endswith(HOSTILE)


@pytest.mark.skipif(os.name != "posix", reason="a shell script as the interpreter")
def test_an_interpreter_writing_escape_sequences_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nprintf 'Fatal: \\033]52;c;cm0K\\007\\033[2J\\233H\\r' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    code, out, err = cli(["check", "--python", str(fake), "--no-smoke"], capsys)
    assert code == 2
    assert not RAW.search(out + err), err
    assert "\\x1b]52" in err


@pytest.mark.parametrize("text", [f"CUDA error: no kernel image is available for execution on the device{OSC52}",
                                  f"{CLEAR}no signature here{OSC52}"])
@pytest.mark.parametrize("json_output", [False, True])
def test_explain_shows_a_pasted_log_escaped(text: str, json_output: bool, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["explain", "--no-check", text + "\x9b2J", *(["--json"] if json_output else [])], capsys)
    assert code == 0, err
    assert not RAW.search(out + err), out


def test_explain_judged_on_hostile_facts_shows_them_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the causes' verdicts and the findings quote the facts judged: a stranger's facts file
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"torch_version": "2.5.1+cpu", "driver_version": "570.86.15",
                                 "nvml_error": f"NVML_ERROR_{CLEAR}", "gpu_name": f"RTX {OSC52}5090"}))
    code, out, err = cli(["explain", "--facts", str(facts), "RuntimeError: Found no NVIDIA driver on your system."],
                         capsys)
    assert code == 0, err
    assert "Checked against the facts in" in out
    assert not RAW.search(out + err), out


def test_install_shows_hostile_data_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A data bundle is outside text too: an index URL carrying an escape sequence is shown escaped."""
    from cudadoctor.data.source import current, use

    data = tmp_path / "data"
    shutil.copytree(Path(__file__).resolve().parent.parent / "compat_data", data)
    table = json.loads((data / "package_indexes.json").read_text(encoding="utf-8"))
    for record in table["records"]:
        if record["id"] == "pytorch-wheels":
            record["url_pattern"] = "https://download.pytorch.org/whl/" + OSC52 + "{variant}"
    (data / "package_indexes.json").write_text(json.dumps(table), encoding="utf-8")
    previous = current()
    try:
        code, out, err = cli(["--data", str(data), "install", "torch", "--gpu", "RTX 4090", "--os", "linux"], capsys)
    finally:
        use(previous)  # the data in use goes back to what later tests expect
    assert code == 0, err
    assert "\\x1b]52" in out and not RAW.search(out + err)
