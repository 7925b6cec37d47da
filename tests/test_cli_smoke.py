"""`cudadoctor smoke` in-process: the real driver suite on this machine, stub suites through the
hidden --suite-path option, the report's Smoke section, the findings, and usage errors."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import List, Tuple

import pytest

from cudadoctor.cli.app import run
from cudadoctor.cli.smoke import default_suites, parse_duration, parse_gpu_list
from cudadoctor.errors import CudadoctorError
from cudadoctor.model import FrameworkBuild, Snapshot
from cudadoctor.probes import collect
from cudadoctor.host.recorded import RecordedHost
from cudadoctor.smoke import SUITES
from cudadoctor.smoke.suites import _protocol
from helpers import MACHINES_DIR

H200 = "h200-driver580-torch211-cu130"


def cli(args: List[str], capsys: pytest.CaptureFixture[str]) -> Tuple[int, str, str]:
    if any(a.startswith("--suite-path") for a in args):  # the recorded machine's interpreter is not here
        args = [*args, "--python", sys.executable]
    code = run(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def h200(monkeypatch: pytest.MonkeyPatch) -> None:
    """Probe a recorded healthy H200 machine instead of this one, so the diagnosis is fixed."""
    snap = collect(RecordedHost.load(os.path.join(MACHINES_DIR, H200)))
    monkeypatch.setattr("cudadoctor.api.collect", lambda python=None, **_: snap)


def stub(tmp_path: Path, body: str, name: str = "stub_suite.py") -> str:
    """A suite file using the protocol by plain name, as a real suite does."""
    (tmp_path / "_protocol.py").write_text(Path(_protocol.__file__).read_text(encoding="utf-8"), encoding="utf-8")
    path = tmp_path / name
    path.write_text("import sys, time, _protocol\n" + textwrap.dedent(body), encoding="utf-8")
    return str(path)


PASSING = """
def body(rec, args):
    rec.details["args"] = repr(args)
    rec.details["unknown"] = repr(args.unknown)
    with rec.test("vector_add", gpu=0) as t:
        t.metrics["bandwidth_gbs"] = 1.5
    with rec.test("saxpy", gpu=0):
        time.sleep(0.01)
sys.exit(_protocol.main("driver", body))
"""


def test_the_real_driver_suite_on_this_machine_ends_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["smoke", "--suite", "driver", "--json", "--timeout", "60"], capsys)
    report = json.loads(out)
    smoke = report["snapshot"]["smoke"]
    assert [r["suite"] for r in smoke] == ["driver"]
    assert smoke[0]["status"] in ("passed", "skipped", "failed"), smoke[0]  # never a crash or a timeout
    assert smoke[0]["reason"]
    assert code in (0, 1)
    if smoke[0]["status"] == "failed":
        assert any(f["code"] == "smoke-driver-failed" for f in report["findings"])


def test_a_passing_stub_suite_in_text_with_per_test_durations(tmp_path: Path, h200: None,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = stub(tmp_path, PASSING)
    code, out, err = cli(["smoke", "--suite", "driver", "--suite-path", f"driver={path}"], capsys)
    assert code == 0, out + err
    smoke_line = next(line for line in out.splitlines() if line.startswith("Smoke"))
    assert smoke_line.split(None, 1)[1].startswith("✓ driver: 2 tests, ")
    assert "vector_add" not in out
    code, out, err = cli(["smoke", "--suite", "driver", "--suite-path", f"driver={path}", "-v"], capsys)
    assert "  ✓ vector_add GPU 0 " in out and "[bandwidth_gbs=1.5]" in out
    assert "  ✓ saxpy GPU 0 0.0" in out


def test_options_reach_the_suite(tmp_path: Path, h200: None, capsys: pytest.CaptureFixture[str]) -> None:
    path = stub(tmp_path, PASSING)
    code, out, err = cli(["smoke", "--suite", "driver", "--suite-path", f"driver={path}", "--gpu", "0,2",
                          "--tier", "stress", "--duration", "2m", "--timeout", "30", "--json"], capsys)
    r = json.loads(out)["snapshot"]["smoke"][0]
    assert r["tier"] == "stress"
    for part in ("tier='stress'", "gpus=[0, 2]", "duration=120.0", "timeout=30.0"):
        assert part in r["details"]["args"]
    assert "--expect-gpu" in r["details"]["unknown"]  # the recorded H200 has a GPU


def test_a_crashing_suite_becomes_a_finding(tmp_path: Path, h200: None, capsys: pytest.CaptureFixture[str]) -> None:
    path = stub(tmp_path, "import os\nos.abort()\n")
    code, out, err = cli(["smoke", "--suite", "torch", "--suite-path", f"torch={path}"], capsys)
    assert code == 1
    assert "✗ torch: killed by SIGABRT" in out
    assert "[smoke-framework-failed]" in out and "the torch smoke suite crashed: killed by SIGABRT" in out
    code, out, err = cli(["smoke", "--suite", "torch", "--suite-path", f"torch={path}", "--format", "markdown"], capsys)
    assert code == 1 and "smoke" in out


def test_driver_passing_and_torch_failing_blames_torch(tmp_path: Path, h200: None,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    driver = stub(tmp_path, PASSING, "d.py")
    torch = stub(tmp_path, """
def body(rec, args):
    rec.framework = "torch 2.11.0+cu130"
    with rec.test("matmul_fp16", gpu=0):
        raise RuntimeError("CUDA error: no kernel image is available for execution on the device")
sys.exit(_protocol.main("torch", body))
""", "t.py")
    code, out, err = cli(["smoke", "--suite", "driver", "--suite", "torch", "--suite-path", f"driver={driver}",
                          "--suite-path", f"torch={torch}", "--json"], capsys)
    assert code == 1
    report = json.loads(out)
    assert [(r["suite"], r["status"]) for r in report["snapshot"]["smoke"]] == [("driver", "passed"), ("torch", "failed")]
    assert report["snapshot"]["smoke"][1]["tests"][0]["cuda_error"] == "cudaErrorNoKernelImageForDevice"
    f = next(f for f in report["findings"] if f["code"] == "smoke-framework-failed")
    assert "the problem is the torch install" in f["why"]


def test_a_skipped_suite_reads_as_skipped(tmp_path: Path, h200: None, capsys: pytest.CaptureFixture[str]) -> None:
    path = stub(tmp_path, "sys.exit(_protocol.main('julia', lambda rec, args: rec.skip_suite('julia is not installed')))\n")
    code, out, err = cli(["smoke", "--suite", "julia", "--suite-path", f"julia={path}"], capsys)
    assert code == 0
    assert "· julia: skipped (julia is not installed)" in out


@pytest.mark.parametrize("args, message", [
    (["--suite", "quantum"], "no smoke suite named 'quantum'"),
    (["--gpu", "a,b"], "--gpu 'a,b'"),
    (["--tier", "stress", "--duration", "5d"], "--duration '5d'"),
    (["--duration", "5m"], "--duration applies to the stress tier"),
    (["--python", "/no/such/python"], "--python /no/such/python: no such file"),
    (["--suite-path", "nothing"], "--suite-path 'nothing'"),
])
def test_usage_errors(args: List[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["smoke", *args], capsys)
    assert code == 2
    assert message in err


def test_parse_duration_and_gpus() -> None:
    assert parse_duration("90") == 90 and parse_duration("90s") == 90
    assert parse_duration("5m") == 300 and parse_duration("1.5h") == 5400 and parse_duration(" 2M ") == 120
    for bad in ("0", "-1", "5d", "m", ""):
        with pytest.raises(CudadoctorError):
            parse_duration(bad)
    assert parse_gpu_list("0,2") == (0, 2) and parse_gpu_list("1, 1") == (1,)
    with pytest.raises(CudadoctorError):
        parse_gpu_list(",")


def test_default_suites_follow_the_installed_frameworks() -> None:
    assert default_suites(Snapshot()) == list(SUITES)  # frameworks unknown: every suite (they skip themselves)
    snap = Snapshot(frameworks=(FrameworkBuild("jax"), FrameworkBuild("torch"), FrameworkBuild("onnxruntime")))
    assert default_suites(snap) == ["driver", "torch", "jax"]
    assert default_suites(Snapshot(frameworks=())) == ["driver"]


def test_smoke_is_listed_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["--help"], capsys)
    assert code == 0 and "smoke" in out
    code, out, err = cli(["smoke", "--help"], capsys)
    assert code == 0 and "--tier" in out and "--suite-path" not in out


@pytest.mark.parametrize("body, words", [("echo 'not python'", "printed no usable facts"),
                                         ("exec sleep 60", "timed out after")], ids=["not-python", "hangs"])
def test_an_interpreter_that_does_not_answer_is_said_first(body: str, words: str, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    # issue 16, item 12: smoke ran every suite under it (365 s), then blamed the NVIDIA driver
    import time

    python = tmp_path / "python"
    python.write_text("#!/bin/sh\n" + body + "\n")
    python.chmod(0o755)
    start = time.monotonic()
    code = run(["smoke", "--python", str(python)])
    out, err = capsys.readouterr()
    assert time.monotonic() - start < 30
    assert code == 2 and out == ""
    assert err.startswith(f"cudadoctor: error: --python {python} did not answer as a Python interpreter: ")
    assert words in err and err.count("\n") == 1


def test_the_api_says_it_too(tmp_path: Path) -> None:
    import cudadoctor

    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'not python'\n")
    python.chmod(0o755)
    with pytest.raises(CudadoctorError, match="did not answer as a Python interpreter"):
        cudadoctor.smoke("driver", python=str(python))
