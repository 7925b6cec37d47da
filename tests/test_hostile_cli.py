"""Ordinary mistakes and a hostile environment end in one line and exit 2, never as an internal
error (issue 27): a data folder that is missing or broken, standard output closed or on a full
disk, a byte that is not UTF-8 in CUDA_HOME, PATH or VIRTUAL_ENV (the value is kept and shown
escaped: ``cudadoctor report``, the command people paste, still works)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="POSIX streams")


def _run(args: List[str], env: Optional[Dict[str, str]] = None, **kwargs: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudadoctor", *args], capture_output=kwargs.pop("capture", True),
                          env={**os.environ, "NO_COLOR": "1", **(env or {})}, timeout=120, **kwargs)  # type: ignore[call-overload]


def _one_line(done: subprocess.CompletedProcess, said: str) -> None:
    err = done.stderr.decode("utf-8", "replace")
    lines = err.splitlines()
    assert done.returncode == 2, err
    assert lines and lines[0].startswith("cudadoctor: error: ") and said in lines[0], err
    assert len(lines) <= 2 and "Traceback" not in err and "internal error" not in err, err


def test_a_missing_data_folder_is_one_line() -> None:
    _one_line(_run(["check", "--no-smoke"], {"CUDADOCTOR_DATA_DIR": "/nonexistent"}), "compatibility data")


def test_a_broken_data_folder_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{")
    _one_line(_run(["check", "--no-smoke"], {"CUDADOCTOR_DATA_DIR": str(tmp_path)}), "compatibility data")


@pytest.mark.parametrize("args", [["check", "--no-smoke"], ["report"], ["--version"]])
def test_a_full_disk_is_one_line(args: List[str]) -> None:
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, "-m", "cudadoctor", *args], stdout=full, stderr=subprocess.PIPE,
                              env={**os.environ, "NO_COLOR": "1"}, timeout=120)
    _one_line(done, "No space left on device")


@pytest.mark.parametrize("args", ["--version", "check --no-smoke"])
def test_a_closed_stdout_is_one_line(args: str) -> None:
    done = subprocess.run(["sh", "-c", f"'{sys.executable}' -m cudadoctor {args} >&-"], stderr=subprocess.PIPE,
                          timeout=120)
    _one_line(done, "standard output is closed")


@pytest.mark.parametrize("variable", ["CUDA_HOME", "PATH", "VIRTUAL_ENV"])
def test_a_byte_that_is_not_utf8_is_kept_and_shown_escaped(variable: str) -> None:
    env = {k.encode(): v.encode("utf-8", "surrogateescape") for k, v in os.environ.items()}
    value = b"/opt/cu\xffda"
    env[variable.encode()] = value + (b":" + env.get(b"PATH", b"") if variable == "PATH" else b"")
    for fmt in ("markdown", "json"):
        done = subprocess.run([sys.executable, "-m", "cudadoctor", "report", "--no-redact", "--format", fmt],
                              capture_output=True, env=env, timeout=120)
        assert done.returncode in (0, 1), done.stderr.decode("utf-8", "replace")
        out = done.stdout.decode("utf-8")  # valid UTF-8 throughout
        if fmt == "json" and variable == "CUDA_HOME":
            assert json.loads(out)["snapshot"]["env"]["CUDA_HOME"] == "/opt/cu\udcffda"
        if variable == "CUDA_HOME":
            assert "cu\\xffda" in out or "cu\\udcffda" in out


def test_report_through_a_link_says_which_file_it_wrote(tmp_path: Path) -> None:
    """`report -o LINK` writes through the link as a shell's `>` would (a `latest.md` link is kept a
    link); it says so, naming the file written, where it named only the link."""
    target = tmp_path / "reports" / "node1.md"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "latest.md"
    link.symlink_to(target)
    machine = Path(__file__).parent / "machines" / "laptop-rtx3060-driver470-torch25-cu124"
    done = _run(["report", "--machine", str(machine), "-o", str(link)])
    err = done.stderr.decode()
    assert done.returncode == 0 and link.is_symlink() and target.read_text().startswith("### cudadoctor report")
    assert f"a symbolic link: the file written is {target}" in err


def test_diagnose_json_never_emits_nan(tmp_path: Path) -> None:
    """A report with NaN or Infinity (not JSON, but Python writes them) is read, and what is written
    back is strict JSON."""
    doc = tmp_path / "facts.json"
    doc.write_text('{"driver_version": "550.54.14", "gpu_name": "NVIDIA GeForce RTX 4090", "gpu_count": NaN}')
    done = _run(["diagnose", "--facts", str(doc), "--json"])
    out = done.stdout.decode()
    assert "NaN" not in out and "Infinity" not in out
    json.loads(out, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


def test_a_looping_link_in_a_fleet_folder_is_one_unreadable_report(tmp_path: Path) -> None:
    from cudadoctor.fleet.read import discover, read_one

    (tmp_path / "loop.json").symlink_to(tmp_path / "loop.json")
    (tmp_path / "node1.json").write_text("{}")
    found = discover([str(tmp_path)])
    assert sorted(os.path.basename(p) for p in found) == ["loop.json", "node1.json"]
    loop = read_one(str(tmp_path / "loop.json"))
    assert getattr(loop, "kind", None) == "unreadable" and "cannot read it" in getattr(loop, "reason", "")


def test_a_lone_surrogate_in_an_interpreters_answer_is_shown_escaped(tmp_path: Path) -> None:
    """A --python interpreter whose prefix is not UTF-8 answers with a lone surrogate in its JSON."""
    fake = tmp_path / "python3"
    facts = ('{"executable": "%s", "version": "3.11.7", "implementation": "cpython", "prefix": "/opt/v\\udcffenv", '
             '"base_prefix": "/usr", "platform_tag": "linux-x86_64", '
             '"site_packages": ["/opt/v\\udcffenv/lib/python3.11/site-packages"], "conda_prefix_env": null}' % fake)
    fake.write_text("#!/bin/sh\ncat <<'J'\n" + facts + "\nJ\n")
    fake.chmod(0o755)
    for args in (["check", "--no-smoke"], ["report"]):
        done = _run([*args, "--python", str(fake)])
        err = done.stderr.decode("utf-8", "replace")
        assert done.returncode in (0, 1) and "Traceback" not in err and "internal error" not in err, err
        assert "v\\xffenv" in done.stdout.decode("utf-8")
