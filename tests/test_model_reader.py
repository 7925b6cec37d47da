"""The one reader of saved documents (cudadoctor/model/reader.py) and the commands reading through
it: bounded reads, no blocking on a pipe nobody writes, a linear Markdown scan, one behaviour for a
newer format and a byte-order mark (issue 16, items 9, 10, 15 and 16)."""

from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from cudadoctor.model import reader
from cudadoctor.model.reader import ReadError, extract_json, json_blocks, load, read_document
from helpers import cli

FUTURE = {"format": "cudadoctor.report", "format_version": 99, "snapshot": {"schema_version": 1, "driver": None}}


def _report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Dict[str, Any]:
    """A real report envelope of a recorded machine."""
    from helpers import MACHINES_DIR

    code, out, _ = cli(["check", "--json", "--machine", f"{MACHINES_DIR}/h200-driver580-torch211-cu130"], capsys)
    assert code in (0, 1)
    data: Dict[str, Any] = json.loads(out)
    return data


def _cudadoctor(args: List[str], **kwargs: Any) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-m", "cudadoctor", *args], capture_output=True, text=True,
                          timeout=60, **kwargs)


# ---------------------------------------------------------------------------- item 10: linear scan


def test_markdown_scan_is_linear() -> None:
    # 256 KB of unclosed ```json lines took 39 s with the back-referencing regular expression.
    text = "```json\n" * (256 * 1024 // 8)
    start = time.monotonic()
    assert extract_json(text) is None
    assert time.monotonic() - start < 2.0


def test_markdown_blocks_as_the_fence_rules_say() -> None:
    text = ("intro\n```json\n{\"a\": 1}\n```\n"  # a block
            "````json\n```\n{\"b\": 2}\n````  \r\n"  # a longer fence holds a shorter one
            "~~~ json \n{\"c\": 3}\n~~~\n"  # tildes, spaces around json
            "```json\n{\"never\": 1}\n")  # unclosed
    assert list(json_blocks(text)) == ['{"a": 1}\n', '```\n{"b": 2}\n', '{"c": 3}\n']
    assert extract_json(text) == '{"c": 3}\n'


# ---------------------------------------------------------------------------- item 9: bounded reads


def test_a_device_is_read_with_a_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "MAX_DOCUMENT_BYTES", 1024 * 1024)
    with pytest.raises(ReadError) as caught:
        read_document("/dev/zero")
    assert caught.value.kind == "too_large"
    assert "16 MiB" in caught.value.describe()


def test_a_large_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "MAX_DOCUMENT_BYTES", 1000)
    big = tmp_path / "big.json"
    big.write_text("[" + "0," * 1000 + "0]")
    with pytest.raises(ReadError, match="too_large"):
        load(str(big))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_nobody_writes_to_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    result = _cudadoctor(["diagnose", str(fifo)])
    assert result.returncode == 2
    assert result.stderr.strip() == f"cudadoctor: error: {fifo}: it is empty"


def test_a_folder_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(["diagnose", str(tmp_path)], capsys)
    assert code == 2
    assert err == f"cudadoctor: error: {tmp_path}: is a folder, not a file\n"


def test_endless_stdin_stops_at_the_cap() -> None:
    with open("/dev/zero", "rb") as zero:
        result = _cudadoctor(["diagnose", "-"], stdin=zero)
    assert result.returncode == 2
    assert result.stderr == "cudadoctor: error: -: binary data (NUL bytes), not a report or pasted text\n"


def test_a_process_substitution_pipe_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `cudadoctor diagnose <(ssh node cudadoctor check --json)`: a pipe with a writer reads whole.
    text = json.dumps(_report(tmp_path, capsys))
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, text.encode()[:60000])  # below the pipe's buffer on Linux
    finally:
        os.close(write_end)
    try:
        raw = read_document(f"/proc/self/fd/{read_end}" if os.path.exists("/proc/self/fd") else f"/dev/fd/{read_end}")
    finally:
        os.close(read_end)
    assert raw == text.encode()[:60000]


# ---------------------------------------------------------------------------- item 15: stdin closed


def test_diagnose_with_stdin_closed_is_a_usage_error() -> None:
    result = subprocess.run([sys.executable, "-m", "cudadoctor", "diagnose", "-"], stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=60,
                            preexec_fn=lambda: os.close(0))
    assert result.returncode == 2, result.stderr
    assert result.stderr == "cudadoctor: error: -: stdin is closed: nothing to read\n"


# ---------------------------------------------------------------------------- item 16: one behaviour


@pytest.mark.parametrize("command", [["diagnose"], ["diff", "OTHER"]])
def test_a_newer_format_is_refused_by_every_command(command: List[str], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    future = tmp_path / "future.json"
    future.write_text(json.dumps(FUTURE))
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(_report(tmp_path, capsys)))
    args = [command[0], str(future)] + [str(ok) for a in command[1:]]
    code, out, err = cli(args, capsys)
    assert code == 2
    assert out == ""
    assert err == (f"cudadoctor: error: {future}: written by a newer cudadoctor (format_version 99; this one "
                   "reads 1): upgrade cudadoctor\n")


def test_the_api_refuses_a_newer_format() -> None:
    import cudadoctor

    with pytest.raises(cudadoctor.CudadoctorError, match="newer cudadoctor"):
        cudadoctor.diagnose(FUTURE)


@pytest.mark.parametrize("bom,codec", [(codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                                       (codecs.BOM_UTF16_BE, "utf-16-be")])
def test_a_byte_order_mark_reads_in_diagnose_and_diff(bom: bytes, codec: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    data = _report(tmp_path, capsys)
    marked = tmp_path / "marked.json"
    marked.write_bytes(bom + json.dumps(data).encode(codec))
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(data))
    expected = cli(["diagnose", str(plain)], capsys)
    assert cli(["diagnose", str(marked)], capsys) == expected
    assert expected[2] == ""
    code, out, err = cli(["diff", str(plain), str(marked)], capsys)
    assert (code, err) == (0, "")
