"""Every command that reads outside input, against a table of hostile inputs (issue 16).

Each command runs as a child process under a 1 GiB address-space limit (``RLIMIT_AS``) and a
wall-clock limit, and must end with its documented exit code (docs/exit-codes.md: 2 for bad
input; ``fleet summarize`` 1 for an unreadable report, ``data validate`` 1 for a bad data folder)
and, for an error, one line (a ``hint:`` line may follow) and never a traceback. Inputs: a device
that never ends (/dev/zero), a named pipe nobody writes to, a folder, a sparse 200 MB file, an
endless stdin, JSON nested 100,000 deep, terminal escapes in values, invalid UTF-8, UTF-16 with a
byte-order mark, a report of a newer format, and 256 KB of unclosed ```json fences.
"""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

from helpers import MACHINES_DIR

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes and rlimits are POSIX")

MACHINE = f"{MACHINES_DIR}/h200-driver580-torch211-cu130"
MEMORY_LIMIT = 1024 ** 3
TIME_LIMIT_S = 20.0  # generous: each of these ends in well under a second when it works
ESCAPES = "\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J\x1b[31mred\x9b"


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def cudadoctor(args: List[str], stdin: Any = subprocess.DEVNULL) -> Tuple[int, str, str, float]:
    """(exit code, stdout, stderr, seconds) of ``cudadoctor ARGS`` under the limits."""
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "cudadoctor", *args], stdin=stdin, capture_output=True,
                            timeout=TIME_LIMIT_S * 2, preexec_fn=_limited, env={**os.environ, "NO_COLOR": "1"})
    seconds = time.monotonic() - start
    return (result.returncode, result.stdout.decode("utf-8", "replace"), result.stderr.decode("utf-8", "replace"),
            seconds)


# ---------------------------------------------------------------------------- the inputs


@pytest.fixture(scope="module")
def good_report(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "cudadoctor", "check", "--json", "--machine", MACHINE],
                         capture_output=True, timeout=60)
    data: Dict[str, Any] = json.loads(out.stdout)
    return data


def _escaped(report: Dict[str, Any]) -> bytes:
    data = json.loads(json.dumps(report))
    for gpu in data["snapshot"].get("gpus") or []:
        gpu["name"] = "NVIDIA H200 " + ESCAPES
    data["snapshot"]["host"]["distribution"] = "Ubuntu" + ESCAPES
    data["snapshot"]["host"]["hostname"] = "node" + ESCAPES
    return json.dumps(data).encode()


def _future(report: Dict[str, Any]) -> bytes:
    return json.dumps({**report, "format_version": 999}).encode()


# name -> (makes the file at a path, or names one; is it an error (exit 2) for the JSON readers)
Maker = Callable[[Path, Dict[str, Any]], str]


def _content(data: Callable[[Dict[str, Any]], bytes]) -> Maker:
    def make(folder: Path, report: Dict[str, Any]) -> str:
        path = folder / "input.json"
        path.write_bytes(data(report))
        return str(path)
    return make


def _fifo(folder: Path, report: Dict[str, Any]) -> str:
    path = folder / "input.json"
    os.mkfifo(path)
    return str(path)


def _folder(folder: Path, report: Dict[str, Any]) -> str:
    path = folder / "input.json"
    path.mkdir()
    return str(path)


def _sparse(folder: Path, report: Dict[str, Any]) -> str:
    path = folder / "input.json"
    with open(path, "wb") as fh:
        fh.truncate(200 * 1024 * 1024)  # 200 MB of zeros that take no disk
    return str(path)


INPUTS: Dict[str, Tuple[Maker, bool]] = {
    "dev-zero": (lambda folder, report: "/dev/zero", True),
    "fifo-without-writer": (_fifo, True),
    "folder": (_folder, True),
    "sparse-200MB": (_sparse, True),
    "nested-100k": (_content(lambda r: b"[" * 100_000 + b"]" * 100_000), True),
    "invalid-utf8": (_content(lambda r: b'{"format": "cudadoctor.report", "x": "\xff\xfe\xc3"}'), True),
    "utf16-bom": (_content(lambda r: json.dumps(r).encode("utf-16")), False),
    "escapes-in-values": (_content(_escaped), False),
    "future-format": (_content(_future), True),
    "markdown-fences-256KB": (_content(lambda r: b"```json\n" * (256 * 1024 // 8)), True),
}
# What each can be as stdin: the bytes of a file, or an endless stream.
STDIN_INPUTS = ["dev-zero", "nested-100k", "invalid-utf8", "utf16-bom", "escapes-in-values", "future-format",
                "markdown-fences-256KB"]


def _assert_bounded(seconds: float, err: str) -> None:
    assert seconds < TIME_LIMIT_S
    assert "Traceback" not in err and "internal error" not in err and "MemoryError" not in err


def _assert_one_line_error(code: int, out: str, err: str) -> None:
    assert code == 2, err
    lines = err.splitlines()
    assert lines and lines[0].startswith("cudadoctor: error: ")
    assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith("  hint: ")), err
    assert out == ""


# ---------------------------------------------------------------------------- readers of a FILE


READERS: Dict[str, Callable[[str, str], List[str]]] = {
    "diagnose FILE": lambda path, good: ["diagnose", path],
    "diagnose --facts FILE": lambda path, good: ["diagnose", "--facts", path],
    "diff A B": lambda path, good: ["diff", good, path],
    "diff A -B-": lambda path, good: ["diff", path, good],
    "explain --snapshot FILE": lambda path, good: ["explain", "--snapshot", path, "CUDA error: out of memory"],
}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("name", list(INPUTS))
def test_readers_of_a_file(reader: str, name: str, tmp_path: Path, good_report: Dict[str, Any]) -> None:
    maker, is_error = INPUTS[name]
    if reader == "diagnose --facts FILE" and name in ("utf16-bom", "escapes-in-values"):
        is_error = True  # a report is not a flat facts file: a one-line usage error too
    good = tmp_path / "good.json"
    good.write_text(json.dumps(good_report))
    folder = tmp_path / "in"
    folder.mkdir()
    path = maker(folder, good_report)
    code, out, err, seconds = cudadoctor(READERS[reader](path, str(good)))
    _assert_bounded(seconds, err)
    if is_error:
        _assert_one_line_error(code, out, err)
        assert path in err.splitlines()[0]
    else:
        assert code in (0, 1) and err == "", err


@pytest.mark.parametrize("reader", ["diagnose -", "diff A -", "explain --snapshot -"])
@pytest.mark.parametrize("name", STDIN_INPUTS)
def test_readers_of_stdin(reader: str, name: str, tmp_path: Path, good_report: Dict[str, Any]) -> None:
    maker, is_error = INPUTS[name]
    good = tmp_path / "good.json"
    good.write_text(json.dumps(good_report))
    path = maker(tmp_path, good_report)
    args = {"diagnose -": ["diagnose", "-"], "diff A -": ["diff", str(good), "-"],
            "explain --snapshot -": ["explain", "--snapshot", "-", "CUDA error: out of memory"]}[reader]
    with open(path, "rb") as stdin:  # /dev/zero: an endless stream
        code, out, err, seconds = cudadoctor(args, stdin=stdin)
    _assert_bounded(seconds, err)
    if is_error:
        _assert_one_line_error(code, out, err)
        assert err.startswith("cudadoctor: error: -")
    else:
        assert code in (0, 1) and err == "", err


def test_stdin_closed(tmp_path: Path) -> None:
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "cudadoctor", "diagnose", "-"], capture_output=True,
                            timeout=TIME_LIMIT_S * 2, preexec_fn=lambda: (_limited(), os.close(0)))
    err = result.stderr.decode()
    _assert_bounded(time.monotonic() - start, err)
    _assert_one_line_error(result.returncode, result.stdout.decode(), err)


@pytest.mark.parametrize("reader", ["diagnose FILE", "diff A B"])
def test_escapes_in_values_are_not_printed_raw(reader: str, tmp_path: Path, good_report: Dict[str, Any]) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(good_report))
    path = _content(_escaped)(tmp_path, good_report)
    code, out, err, _ = cudadoctor(READERS[reader](path, str(good)) + ["--no-redact"] * (reader == "diff A B"))
    assert code in (0, 1)
    assert "\x1b" not in out + err and "\x9b" not in out + err and "\x07" not in out + err


# ---------------------------------------------------------------------------- fleet summarize


@pytest.mark.parametrize("name", list(INPUTS))
def test_fleet_summarize(name: str, tmp_path: Path, good_report: Dict[str, Any]) -> None:
    """A report named on the command line or found in the folder: an unreadable one is a problem
    of the summary (exit 1, with its reason), never a hang, a crash or a memory blow-up."""
    maker, is_error = INPUTS[name]
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "good.json").write_text(json.dumps(good_report))
    path = maker(folder, good_report)
    for args in (["fleet", "summarize", str(folder)], ["fleet", "summarize", str(folder / "good.json"), path]):
        code, out, err, seconds = cudadoctor(args)
        _assert_bounded(seconds, err)
        assert code in (0, 1), err
        named = args[-1] == path
        if is_error and named and name != "folder":  # a folder named stands for the reports in it
            assert code == 1, out


def test_fleet_summarize_of_a_device_or_folder_alone(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err, seconds = cudadoctor(["fleet", "summarize", str(empty)])
    _assert_bounded(seconds, err)
    _assert_one_line_error(code, out, err)


# ---------------------------------------------------------------------------- explain


def test_explain_a_huge_argument() -> None:
    text = "RuntimeError: CUDA error: out of memory " + "x" * 120_000  # near the kernel's 128 KiB per argument
    code, out, err, seconds = cudadoctor(["explain", "--no-check", text])
    _assert_bounded(seconds, err)
    assert code in (0, 1) and err == "", err
    assert len(out) < 60_000


def test_explain_endless_stdin() -> None:
    with open("/dev/zero", "rb") as stdin:
        code, out, err, seconds = cudadoctor(["explain", "--no-check", "-"], stdin=stdin)
    _assert_bounded(seconds, err)
    assert code in (0, 1, 2), err
    if code == 2:
        _assert_one_line_error(code, out, err)


# ---------------------------------------------------------------------------- report -o


def _device(folder: Path) -> Optional[str]:
    """A character device that may be written: a private /dev/null made with mknod as root (a
    regression must not replace the system's), else the system's (a user cannot replace it)."""
    if os.geteuid() != 0:
        return "/dev/null"
    node = folder / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError:
        return None
    return str(node)


@pytest.mark.parametrize("target", ["device", "fifo-without-reader", "folder", "link-to-device"])
def test_report_output_is_never_replaced(target: str, tmp_path: Path) -> None:
    device = _device(tmp_path)
    if device is None and target in ("device", "link-to-device"):
        pytest.skip("root without mknod")
    path = tmp_path / "out.md"
    if target == "device":
        path = Path(str(device))
    elif target == "fifo-without-reader":
        os.mkfifo(path)
    elif target == "folder":
        path.mkdir()
    else:
        path.symlink_to(str(device))
    before = os.lstat(path)
    code, out, err, seconds = cudadoctor(["report", "--machine", MACHINE, "-o", str(path)])
    _assert_bounded(seconds, err)
    after = os.lstat(path)
    assert (stat.S_IFMT(after.st_mode), after.st_ino) == (stat.S_IFMT(before.st_mode), before.st_ino)
    if target in ("device", "link-to-device"):
        assert code == 0 and "wrote the report" in err
    else:
        _assert_one_line_error(code, out, err)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".cudadoctor-")]  # no temporary file left


# ---------------------------------------------------------------------------- data validate DIR


@pytest.mark.parametrize("name", ["dev-zero", "fifo-without-writer", "folder", "sparse-200MB", "nested-100k",
                                  "invalid-utf8"])
def test_data_validate_a_hostile_manifest(name: str, tmp_path: Path, good_report: Dict[str, Any]) -> None:
    maker, _ = INPUTS[name]
    folder = tmp_path / "data"
    folder.mkdir()
    made = maker(folder, good_report)
    manifest = folder / "manifest.json"
    if made != str(manifest):
        if os.path.isdir(made):
            os.rmdir(made)
            manifest.mkdir()
        else:
            if os.path.lexists(made) and made.startswith(str(folder)):
                os.rename(made, manifest)
            else:
                manifest.symlink_to(made)
    code, out, err, seconds = cudadoctor(["data", "validate", str(folder)])
    _assert_bounded(seconds, err)
    assert code == 1, err
    assert "manifest.json" in out + err
