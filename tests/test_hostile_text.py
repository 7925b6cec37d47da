"""Outside text cannot make a pattern run for minutes (issue 27): one pasted line of 100 KB took
27 s in ``explain -`` (``undefined symbol: ...``), a ``WinError 193`` line 54 s, the same through a
replayed report's ``error_message``, and redaction of one 100 KB environment value in ``diff`` 57 s.
Every signature, pattern, reader and the redaction are screened on adversarial lines
(benchmarks/adversarial.py, which measures them on 1 MB lines): four times the line must not take
much more than four times the time."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict

import pytest

from cudadoctor.reports.redact import redact_texts
from helpers import MACHINES_DIR

ROOT = Path(__file__).resolve().parents[1]
MACHINE = f"{MACHINES_DIR}/h200-driver580-torch211-cu130"
LIMIT_S = 15.0  # the command as a whole, its start included, on a busy machine (was minutes)
LINES = {
    "undefined symbol": "ImportError: /x/ext.so: undefined symbol: " + "_ZN2at" + "." * 300_000,
    "undefined symbol run": "undefined symbol: " + "a.so" * 75_000,
    "WinError 193": "OSError: [WinError 193] %1 is not a valid Win32 application " * 5_000,
    "WinError 126": "[WinError 126] Th" * 18_000,
    "GPU too old": "Found GPU0 GeForce " * 16_000,
    "cudnn": "libcudnn_" * 33_000,
}


def _adversarial() -> Any:
    spec = importlib.util.spec_from_file_location("adversarial", ROOT / "benchmarks" / "adversarial.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["adversarial"] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def _run(args: list, stdin: bytes = b"") -> float:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "cudadoctor", *args], input=stdin, capture_output=True, timeout=300)
    seconds = time.monotonic() - start
    assert done.returncode in (0, 1), done.stderr.decode()[-500:]
    return seconds


@pytest.mark.parametrize("name", sorted(LINES))
def test_explain_of_one_long_line_ends_quickly(name: str) -> None:
    assert _run(["explain", "-"], LINES[name].encode()) < LIMIT_S


def test_a_replayed_reports_error_message_ends_quickly(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "cudadoctor", "check", "--json", "--machine", MACHINE],
                         capture_output=True, timeout=120)
    report: Dict[str, Any] = json.loads(out.stdout)
    report["snapshot"]["smoke"] = [{"suite": "torch", "status": "failed", "reason": LINES["undefined symbol"],
                                    "stderr_tail": LINES["WinError 193"]}]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    assert _run(["diagnose", str(path)]) < LIMIT_S


@pytest.mark.parametrize("value", [
    "--" + "a-" * 50_000, "a://" * 25_000, "CREDENTIAL_" * 9_000, "TOKEN=" * 16_000, "/t/a" * 25_000,
    "-a" * 50_000, "1.2.3.4 " * 12_000, "a." * 50_000,
])
def test_redaction_of_a_long_value_is_quick(value: str) -> None:
    start = time.monotonic()
    redact_texts([value])
    assert time.monotonic() - start < 3.0  # was a minute for 100 KB


def test_no_pattern_grows_faster_than_its_line() -> None:
    """The adversarial screen: every case on lines of 1,024 and 4,096 characters."""
    adversarial = _adversarial()
    flagged = [r.name for r in adversarial.screen(1024) if r.superlinear]
    # once more for each case flagged: a pause of a busy machine is not growth, a quadratic pattern is again
    again = [f"{r.name}: {r.small * 1000:.1f} -> {r.large * 1000:.1f} ms on {r.line[:30]!r}"
             for name in flagged for r in adversarial.screen(1024, only=name) if r.name == name and r.superlinear]
    assert again == []
