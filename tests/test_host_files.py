"""`report -o` and the atomic writer never replace what is not a regular file (issue 16, item 1):
a device node, a named pipe or a symbolic link at the path stays what it was."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import List

import pytest

from cudadoctor.host.files import write_atomically, write_output
from helpers import MACHINES_DIR, cli

MACHINE = f"{MACHINES_DIR}/h200-driver580-torch211-cu130"
fifo_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")


def _null_device(tmp_path: Path) -> str:
    """A character device to write to. As root, a private copy of /dev/null made in ``tmp_path``:
    were the old behaviour back, the test would replace that node and not the system's (which it
    did once). Else the system's /dev/null, which an ordinary user cannot replace anyway."""
    if os.geteuid() != 0:
        return "/dev/null"
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError:
        pytest.skip("root without mknod: writing the system's /dev/null is not risked")
    return str(node)


def test_a_device_stays_a_device(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    device = _null_device(tmp_path)
    before = os.stat(device)
    code, out, err = cli(["report", "--machine", MACHINE, "-o", device], capsys)
    assert code == 0, err
    after = os.stat(device)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino
    assert f"wrote the report to {device}" in err


# /dev/fd/1 rather than /dev/stdout: the same link to descriptor 1, but in a folder where even root
# cannot make a temporary file, so a return of the old rename cannot replace a system file.
def test_dev_stdout_prints_the_report() -> None:
    result = subprocess.run([sys.executable, "-m", "cudadoctor", "report", "--machine", MACHINE, "-o", "/dev/fd/1"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("### cudadoctor report")
    assert "wrote the report to /dev/fd/1" in result.stderr


def test_dev_stdout_into_a_file_appends_as_the_shell_opened_it(tmp_path: Path) -> None:
    out = tmp_path / "out.md"
    out.write_text("my notes\n")
    with open(out, "a") as fh:  # `cudadoctor report -o /dev/stdout >> out.md`
        result = subprocess.run([sys.executable, "-m", "cudadoctor", "report", "--machine", MACHINE, "-o",
                                 "/dev/fd/1"], stdout=fh, stderr=subprocess.PIPE, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert out.read_text().startswith("my notes\n### cudadoctor report")


@fifo_only
def test_a_pipe_being_read_gets_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "report.md"
    os.mkfifo(fifo)
    got: List[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    code, _, err = cli(["report", "--machine", MACHINE, "-o", str(fifo)], capsys)
    reader.join(30)
    assert code == 0, err
    assert got and got[0].startswith(b"### cudadoctor report")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@fifo_only
def test_a_pipe_nobody_reads_is_an_error_not_a_hang(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "report.md"
    os.mkfifo(fifo)
    code, out, err = cli(["report", "--machine", MACHINE, "-o", str(fifo)], capsys)
    assert code == 2
    assert err == f"cudadoctor: error: -o {fifo}: a named pipe that no process is reading\n"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_symlink_stays_a_link_to_the_file_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "reports" / "node1.md"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "latest.md"
    link.symlink_to(target)
    code, _, err = cli(["report", "--machine", MACHINE, "-o", str(link)], capsys)
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith("### cudadoctor report")
    assert sorted(p.name for p in target.parent.iterdir()) == ["node1.md"]  # no temporary file left


@fifo_only
def test_write_atomically_refuses_what_is_not_a_file(tmp_path: Path) -> None:
    fifo = tmp_path / "state.json"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="named pipe is there"):
        write_atomically(str(fifo), "{}")
    link = tmp_path / "to-null"
    link.symlink_to(_null_device(tmp_path))
    with pytest.raises(OSError, match="a device is there"):
        write_atomically(str(link), "{}")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink()
    assert {p.name for p in tmp_path.iterdir()} <= {"state.json", "to-null", "null"}


def test_a_regular_file_is_still_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "r.md"
    path.write_text("old")
    write_output(str(path), "new")
    assert path.read_text() == "new"
    write_output(str(tmp_path / "new" / "r.md"), "made")
    assert (tmp_path / "new" / "r.md").read_text() == "made"


def test_the_nvml_library_is_looked_for_where_the_loader_looks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A certain 'not there' skips importing ctypes; the library in LD_LIBRARY_PATH is found."""
    from cudadoctor.host import nvml

    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    absent = nvml._loader_may_find("libcudadoctor-test-absent.so.1")
    (tmp_path / "libcudadoctor-test-absent.so.1").write_bytes(b"")
    assert nvml._loader_may_find("libcudadoctor-test-absent.so.1") is True
    assert absent is False or not os.path.exists("/etc/ld.so.cache")  # the cache cannot name our made-up soname


def test_a_command_on_no_path_is_not_found_without_a_fork(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cudadoctor.host import run_command

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("subprocess.Popen", None)  # a fork would fail the test
    assert run_command(("nvidia-smi", "-L"), 5.0).error == "not_found"
    monkeypatch.undo()
    (tmp_path / "nvidia-smi").write_text("#!/bin/sh\n")  # there, but not executable: Popen says so
    monkeypatch.setenv("PATH", str(tmp_path))
    assert run_command(("nvidia-smi", "-L"), 5.0).error == "permission"
