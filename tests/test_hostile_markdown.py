"""Markdown meant to be pasted into a public tracker stays inert whatever a report holds (issue
27): a value cannot close the block it is in (a fenced block with a longer fence, inline code with
a longer delimiter), and HTML, images, links and @mentions in values come out as text. Every
Markdown output is checked: ``check``/``diagnose --format markdown -v``, ``report``, ``diff
--format markdown``, ``fleet summarize --format markdown`` and ``triage``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from cudadoctor.render import md
from helpers import MACHINES_DIR, cli

MACHINE = f"{MACHINES_DIR}/h200-driver580-torch211-cu130"
BREAKOUT = "x\n```\n<img src=x onerror=alert(1)> ![pixel](https://evil.example/p.png) [click](https://evil.example) @maya"
TICKS = "a``b ``` c"


def fences_closed(text: str) -> List[str]:
    """The lines outside any fenced block; fails when a block is left open."""
    outside: List[str] = []
    fence = ""
    for line in text.split("\n"):
        m = re.match(r"^ {0,3}(`{3,})", line)
        if fence:
            if m and len(m.group(1)) >= len(fence) and not line.strip().strip("`"):
                fence = ""
            continue
        if m:
            fence = m.group(1)
            continue
        outside.append(line)
    assert not fence, "a fenced block is left open"
    return outside


def inert(text: str) -> None:
    """Outside code, nothing live: no HTML tag, image, link, or mention."""
    for line in fences_closed(text):
        prose = re.sub(r"\\.", "", line)  # backslash escapes: literal characters
        prose = re.sub(r"(`+)(?:(?!\1).)*?\1", "", prose)  # inline code removed
        assert "<img" not in prose and "![" not in prose, line
        assert "](" not in prose, line
        assert not re.search(r"(?<![`\w])@maya", prose), line
        assert "https://evil" not in prose, line


@pytest.fixture(scope="module")
def report() -> Dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "cudadoctor", "check", "--json", "--machine", MACHINE],
                         capture_output=True, timeout=120)
    data: Dict[str, Any] = json.loads(out.stdout)
    return data


def _hostile(report: Dict[str, Any]) -> Dict[str, Any]:
    data = json.loads(json.dumps(report))
    snap = data["snapshot"]
    snap["smoke"] = [{"suite": "torch", "status": "failed", "reason": BREAKOUT, "stderr_tail": BREAKOUT}]
    for gpu in snap.get("gpus") or []:
        gpu["name"] = "NVIDIA H200 " + BREAKOUT.replace("\n", " ")
    snap["host"]["distribution"] = TICKS + " " + BREAKOUT
    return data


def test_the_writer() -> None:
    assert md.code("a``b") == "```a``b```" and md.code("`x") == "`` `x ``"
    assert md.fence(["```` x"], "sh") == ["`````sh", "```` x", "`````"]
    assert md.code("a|b", cell=True) == "`a\\|b`"
    shown = md.text("<b> ![i](u) [l](u) @maya https://evil.example/x sm_90")
    assert "`@maya`" in shown and "`https://evil.example/x`" in shown and "\\<b\\>" in shown
    inert(shown)


@pytest.mark.parametrize("args", [["diagnose", "--format", "markdown", "-v"], ["diagnose", "--format", "markdown"]])
def test_diagnose_markdown_is_inert(report: Dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    args: List[str]) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_hostile(report)))
    code, out, err = cli([*args, str(path)], capsys)
    assert code in (0, 1), err
    inert(out)


def test_report_markdown_is_inert(report: Dict[str, Any]) -> None:
    from cudadoctor.model import Report
    from cudadoctor.model.reader import report_parts
    from cudadoctor.render.report_markdown import report_markdown

    snapshot, findings, _ = report_parts(_hostile(report))
    inert(report_markdown(Report(snapshot, "0.1.0", "x", findings or (), checked=True)))


def test_diff_markdown_is_inert(report: Dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(report))
    hostile = _hostile(report)
    hostile["snapshot"]["env"] = {**(hostile["snapshot"].get("env") or {}), "CUDA_VISIBLE_DEVICES": TICKS,
                                  "NCCL_DEBUG": BREAKOUT}
    b.write_text(json.dumps(hostile))
    code, out, err = cli(["diff", str(a), str(b), "--format", "markdown", "--no-redact"], capsys)
    assert code in (0, 1), err
    inert(out)
    assert "````a``b ``` c````" in out  # the value is in code with a longer delimiter


def test_fleet_markdown_is_inert(report: Dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for i, name in enumerate(["node-1", "@maya", "evil` ``` <img src=x>"]):
        data = _hostile(report) if i else json.loads(json.dumps(report))
        data["node"] = name
        (tmp_path / f"{i}.json").write_text(json.dumps(data))
    (tmp_path / "bad ``` <img src=x> @maya.json").write_text("{")
    code, out, err = cli(["fleet", "summarize", str(tmp_path), "--format", "markdown"], capsys)
    assert "Traceback" not in err
    inert(out)
