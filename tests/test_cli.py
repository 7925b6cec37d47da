"""The command line as a user meets it: exit codes, one-line errors, output on stdout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from cudadoctor import __version__
from cudadoctor.errors import CudadoctorError
from helpers import cli

TINY: Dict[str, Any] = {
    "platform": {"system": "Linux", "release": "6.8.0", "machine": "x86_64", "hostname": "box",
                 "username": "u", "cpu_count": 4, "libc": "glibc 2.35"},
    "env": {"PATH": "/usr/bin:/bin"},
    "files": {"/etc/os-release": 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\nVERSION_ID="22.04"\n'},
    "dirs": ["/dev", "/usr/lib", "/venv/lib/python3.11/site-packages/torch-2.13.0+cpu.dist-info"],
    "interpreter": {"executable": "/venv/bin/python", "version": "3.11.9", "implementation": "cpython",
                    "prefix": "/venv", "base_prefix": "/usr", "platform_tag": "linux-x86_64",
                    "site_packages": ["/venv/lib/python3.11/site-packages"]},
    "nvml": {"init_error": "NVML_ERROR_LIBRARY_NOT_FOUND"},
}


@pytest.fixture
def tiny_machine(tmp_path: Path) -> Path:
    machine = dict(TINY)
    machine["files"] = dict(TINY["files"])
    machine["files"]["/venv/lib/python3.11/site-packages/torch/version.py"] = (
        "__version__ = '2.13.0+cpu'\ncuda = None\nhip = None\ngit_version = 'abc'\n"
    )
    (tmp_path / "machine.json").write_text(json.dumps(machine))
    return tmp_path


def test_version_names_tool_and_data(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["--version"], capsys)
    assert code == 0
    assert out.startswith(f"cudadoctor {__version__} · compat data ")


def test_version_fast_path_matches_click_path() -> None:
    fast = subprocess.run([sys.executable, "-m", "cudadoctor", "--version"], capture_output=True, text=True)
    assert fast.returncode == 0
    assert fast.stdout.startswith(f"cudadoctor {__version__} · compat data ")


def test_check_text_on_a_recorded_machine(tiny_machine: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["check", "--machine", str(tiny_machine), "--no-color"], capsys)
    assert code == 0, err
    assert "target /venv/bin/python (3.11.9, venv venv)" in out
    assert "no NVIDIA driver is loaded" in out
    assert "torch 2.13.0+cpu  CPU-only build (no CUDA)" in out
    assert "Ubuntu 22.04.4 LTS" in out
    assert "\x1b[" not in out


def test_check_json_is_the_envelope(tiny_machine: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["check", "--machine", str(tiny_machine), "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["format"] == "cudadoctor.report"
    assert doc["snapshot"]["driver"]["nvml_error"] == "NVML_ERROR_LIBRARY_NOT_FOUND"
    assert doc["snapshot"]["frameworks"][0]["variant"] == "cpu"


def test_color_only_when_asked(tiny_machine: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = cli(["check", "--machine", str(tiny_machine), "--color"], capsys)
    assert "\x1b[1m" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["check", "--python", "/definitely/not/here"], "--python /definitely/not/here: no such file"),
        (["check", "--machine", "/definitely/not/here"], "no machine.json"),
        (["check", "--timeout", "0"], "Invalid value for '--timeout'"),
        (["nonsense"], "No such command 'nonsense'"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2(args: List[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(args, capsys)
    assert code == 2
    assert message in err
    assert "Traceback" not in err + out


def test_python_that_is_not_python(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho not python\nexit 1\n")
    fake.chmod(0o755)
    code, _, err = cli(["check", "--python", str(fake)], capsys)
    assert code == 2
    assert "did not answer as a Python interpreter" in err
    assert err.count("\n") <= 2


def test_python_flag_inspects_another_interpreter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The real thing: ask an interpreter in a child process (this one, under another path)."""
    other = tmp_path / "python3"
    other.symlink_to(sys.executable)
    code, out, err = cli(["check", "--json", "--python", str(other)], capsys)
    assert code in (0, 1), err
    snap = json.loads(out)["snapshot"]
    assert snap["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert snap["python"]["is_current"] is False
    assert snap["python"]["site_packages"]


def test_internal_error_is_one_line_without_debug(monkeypatch: pytest.MonkeyPatch, tiny_machine: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import cudadoctor.api

    def boom(*_a: Any, **_k: Any) -> None:
        raise RuntimeError("kaput")

    monkeypatch.setattr(cudadoctor.api, "make_report", boom)
    code, _, err = cli(["check", "--machine", str(tiny_machine)], capsys)
    assert code == 3
    assert "internal error: RuntimeError: kaput" in err and "Traceback" not in err
    code, _, err = cli(["--debug", "check", "--machine", str(tiny_machine)], capsys)
    assert code == 3 and "Traceback" in err


def test_python_m_entry_point_and_broken_pipe() -> None:
    proc = subprocess.run(
        f"{sys.executable} -m cudadoctor check -v | head -1", shell=True, capture_output=True, text=True
    )
    assert proc.stdout.startswith("cudadoctor ")
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("folder", ["missing", "empty"])
def test_data_folder_without_data_is_a_usage_error(folder: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # issue 16, item 15: this was "internal error: DataError: manifest.json: file is missing", exit 3
    path = tmp_path / folder
    if folder == "empty":
        path.mkdir()
    code, out, err = cli(["--data", str(path), "check", "--no-smoke"], capsys)
    assert code == 2
    assert out == ""
    assert err.splitlines()[0] == f"cudadoctor: error: --data {path}: not a compat_data folder (" + (
        "no such folder)" if folder == "missing" else "no manifest.json in it)")
    assert "internal error" not in err


def test_python_by_bare_name_resolves_like_a_shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # issue 16, item 17: `--python hang` with ./hang here said "hang not found" after the probes
    from cudadoctor.api import checked_interpreter

    hang = tmp_path / "hang"
    hang.write_text("#!/bin/sh\nsleep 60\n")
    hang.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    code, out, err = cli(["check", "--no-smoke", "--python", "hang"], capsys)
    assert (code, out) == (2, "")
    assert err == ("cudadoctor: error: --python hang: not found on PATH\n"
                   "  hint: to use the file hang in this folder, give ./hang\n")
    name = Path(sys.executable).name
    assert checked_interpreter(name, None) == str(Path(sys.executable).parent / name)
    with pytest.raises(CudadoctorError, match="not found on PATH and no such file"):
        checked_interpreter("no-such-python-anywhere", None)
