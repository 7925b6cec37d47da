"""The smoke runner against real children that follow the protocol or misbehave in every way the
issue lists, plus the protocol helpers the suites share."""

from __future__ import annotations

import ast
import io
import json
import math
import os
import shutil
import textwrap
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Set

import pytest

from cudadoctor.smoke import SUITE_FILES, SUITES, suite_path
from cudadoctor.smoke.suites import _protocol
from cudadoctor.smoke import runner
from cudadoctor.smoke.runner import interpret, parse_line, run_suite, run_suites

SMOKE_DIR = Path(_protocol.__file__).parent


def child(tmp_path: Path, body: str, name: str = "suite.py") -> str:
    """A child script next to a copy of _protocol.py, so `import _protocol` works by plain name as
    it does for a real suite run by path."""
    shutil.copy(SMOKE_DIR / "_protocol.py", tmp_path / "_protocol.py")
    shutil.copy(SMOKE_DIR / "_shared_gpu.py", tmp_path / "_shared_gpu.py")
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return str(path)


PROTOCOL_SUITE = """
    import os, sys
    import _protocol

    def body(rec, args):
        print("framework chatter on stdout")
        os.write(1, b"fd-level chatter\\n")
        rec.framework = "fake 1.0"
        rec.details["args"] = repr(args)
        rec.details["stdin"] = repr(sys.stdin.read())
        rec.details["prealloc"] = os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "")
        rec.details["growth"] = os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH", "")
        rec.details["cvd"] = os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>")
        with rec.test("vector_add", gpu=0) as t:
            t.metrics["bandwidth_gbs"] = 12.5
            t.message = "sum of 1M floats matches"
        with rec.test("saxpy", gpu=0):
            pass
    sys.exit(_protocol.main("driver", body))
"""


def test_a_clean_suite_reports_its_tests_and_keeps_stdout_to_the_line(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    r = run_suite("driver", path=child(tmp_path, PROTOCOL_SUITE), tier="standard", gpus=[0, 2], timeout=30)
    assert r.status == "passed", r
    assert r.reason == "2 tests passed"
    assert r.exit_code == 0 and r.signal is None and r.tier == "standard"
    assert [t.name for t in r.tests] == ["vector_add", "saxpy"]
    assert r.tests[0].gpu == 0 and r.tests[0].metrics == {"bandwidth_gbs": 12.5}
    assert r.tests[0].duration_s is not None and r.tests[0].duration_s >= 0
    assert r.framework == "fake 1.0"
    assert "framework chatter on stdout" in r.stderr_tail and "fd-level chatter" in r.stderr_tail
    assert "tier='standard'" in r.details["args"] and "gpus=[0, 2]" in r.details["args"]
    assert "timeout=30.0" in r.details["args"]
    assert r.details["stdin"] == "''"  # stdin closed: a read returns at once
    assert r.details["prealloc"] == "false" and r.details["growth"] == "true"
    assert r.details["cvd"] == "1"  # CUDA_VISIBLE_DEVICES untouched
    assert r.duration_s is not None and r.duration_s < 30


def test_a_python_exception_before_any_line_is_an_error_with_the_traceback(tmp_path: Path) -> None:
    path = child(tmp_path, """
        import no_such_framework_module
    """)
    r = run_suite("torch", path=path, timeout=30)
    assert r.status == "error" and r.exit_code == 1
    assert r.reason.startswith("exited with code 1 without a result")
    assert "ModuleNotFoundError" in r.reason
    assert "Traceback" in r.stderr_tail


def test_a_failed_suite_exits_1_with_its_line(tmp_path: Path) -> None:
    path = child(tmp_path, """
        import sys, _protocol
        def body(rec, args):
            with rec.test("matmul_fp16", gpu=0) as t:
                t.metrics["max_rel_error"] = 0.5
                t.fail("max relative error 5.0e-01 > 1e-2")
            with rec.test("autograd_mlp", gpu=1):
                raise RuntimeError("CUDA error: no kernel image is available for execution on the device")
            with rec.test("after", gpu=1):
                pass
        sys.exit(_protocol.main("torch", body))
    """)
    r = run_suite("torch", path=path, timeout=30)
    assert r.status == "failed" and r.exit_code == 1
    assert r.reason == "matmul_fp16 on GPU 0 failed: max relative error 5.0e-01 > 1e-2 (and 1 more)"
    raised = r.tests[1]
    assert raised.status == "error" and raised.error is not None and raised.error.startswith("RuntimeError: CUDA error")
    assert raised.cuda_error == "cudaErrorNoKernelImageForDevice"
    assert r.tests[2].status == "passed"  # one test raising does not stop the others


def test_a_non_zero_exit_after_a_passing_line_is_an_error(tmp_path: Path) -> None:
    path = child(tmp_path, """
        import json, sys
        print(json.dumps({"protocol": 1, "suite": "jax", "status": "passed", "reason": "ok", "tier": "quick",
                          "framework": None, "tests": [], "details": {}}))
        sys.exit(3)
    """)
    r = run_suite("jax", path=path, timeout=30)
    assert r.status == "error" and r.exit_code == 3
    assert r.reason == "ok; then the process exited with code 3"


def test_abort_is_a_crash_named_by_its_signal(tmp_path: Path) -> None:
    r = run_suite("torch", path=child(tmp_path, "import os\nos.abort()\n"), timeout=30)
    assert r.status == "crashed" and r.signal == "SIGABRT" and r.reason == "killed by SIGABRT"
    assert r.exit_code == -6


def test_a_segfault_is_a_crash_with_the_python_stack(tmp_path: Path) -> None:
    r = run_suite("cupy", path=child(tmp_path, "import ctypes\nctypes.string_at(0)\n"), timeout=30)
    assert r.status == "crashed" and r.signal == "SIGSEGV" and r.reason == "killed by SIGSEGV"
    assert "Segmentation fault" in r.stderr_tail  # faulthandler, turned on in the child's environment


def test_a_crash_in_teardown_after_a_passing_line_keeps_the_tests(tmp_path: Path) -> None:
    path = child(tmp_path, """
        import atexit, os, sys, _protocol
        def body(rec, args):
            with rec.test("alloc", gpu=0):
                pass
        atexit.register(os.abort)
        sys.exit(_protocol.main("torch", body))
    """)
    r = run_suite("torch", path=path, timeout=30)
    assert r.status == "crashed" and r.signal == "SIGABRT"
    assert r.reason == "1 test passed; then the process was killed by SIGABRT"
    assert [t.name for t in r.tests] == ["alloc"]


def test_a_hang_is_killed_soon_after_the_timeout_with_where_it_hung(tmp_path: Path) -> None:
    path = child(tmp_path, """
        import sys, time, _protocol
        def body(rec, args):
            with rec.test("spin", gpu=0):
                time.sleep(120)
        sys.exit(_protocol.main("tensorflow", body))
    """)
    start = time.monotonic()
    r = run_suite("tensorflow", path=path, timeout=2)
    took = time.monotonic() - start
    assert r.status == "timeout" and r.reason == "timed out after 2 s"
    assert took < 2 + 5, took
    assert "time.sleep" in r.stderr_tail or "in body" in r.stderr_tail  # the SIGUSR1 stack dump


def test_a_hang_with_grandchildren_holding_the_pipes_kills_the_whole_group(tmp_path: Path) -> None:
    path = child(tmp_path, """
        import subprocess, sys, time
        procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]) for _ in range(2)]
        print(" ".join(str(p.pid) for p in procs), file=sys.stderr, flush=True)
        time.sleep(120)
    """)
    start = time.monotonic()
    r = run_suite("torch", path=path, timeout=2)
    assert r.status == "timeout"
    assert time.monotonic() - start < 2 + 6
    pids = [int(p) for p in r.stderr_tail.split()[:2]]
    time.sleep(0.2)
    for pid in pids:  # killed with the group (they are not our children: a signal 0 probe says gone)
        assert not _alive(pid), pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie still answers; its state says dead
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_an_exit_after_the_line_with_grandchildren_left_does_not_hang(tmp_path: Path) -> None:
    path = child(tmp_path, """
        import subprocess, sys, _protocol
        def body(rec, args):
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])  # holds stdout/stderr
            with rec.test("spawned", gpu=None):
                pass
        sys.exit(_protocol.main("torch", body))
    """)
    start = time.monotonic()
    r = run_suite("torch", path=path, timeout=60)
    assert r.status == "passed"
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("script, expected", [
    ("print('hello, I am not JSON')", "protocol violation: stdout is not a JSON line: 'hello, I am not JSON'"),
    ("print('[1, 2]')", "protocol violation: the result line is a JSON list, not an object"),
    ("print('{\"protocol\": 1, \"suite\": \"torch\"}')", "protocol violation: the result line misses status, reason, tests"),
    ("print('{\"protocol\": 2, \"suite\": \"t\", \"status\": \"passed\", \"reason\": \"\", \"tests\": []}')",
     "protocol violation: the suite speaks protocol 2, not 1"),
    ("print('{\"protocol\": 1, \"suite\": \"t\", \"status\": \"great\", \"reason\": \"\", \"tests\": []}')",
     "protocol violation: the result status 'great' is not one of passed, failed, skipped, error"),
    ("print('{\"protocol\": 1, \"suite\": \"t\", \"status\": \"passed\", \"reason\": \"\", \"tests\": 3}')",
     "protocol violation: the result's tests are not a list"),
    ("pass", "exited without printing a result line"),
])
def test_garbage_and_malformed_lines_are_errors(tmp_path: Path, script: str, expected: str) -> None:
    r = run_suite("torch", path=child(tmp_path, script + "\n"), timeout=30)
    assert r.status == "error"
    assert r.reason == expected


def test_two_lines_are_a_protocol_violation(tmp_path: Path) -> None:
    line = json.dumps({"protocol": 1, "suite": "torch", "status": "passed", "reason": "ok", "tests": []})
    r = run_suite("torch", path=child(tmp_path, f"print({line!r})\nprint({line!r})\n"), timeout=30)
    assert r.status == "error"
    assert r.reason.startswith("protocol violation: 2 lines on stdout instead of one")


def test_huge_stderr_is_kept_to_its_tail(tmp_path: Path) -> None:
    path = child(tmp_path, """
        import sys, _protocol
        def body(rec, args):
            chunk = ("x" * 1000 + "\\n") * 1000
            for _ in range(40):  # 40 MB of chatter
                sys.stderr.write(chunk)
            sys.stderr.write("the last words\\n")
            with rec.test("noisy"):
                pass
        sys.exit(_protocol.main("torch", body))
    """)
    r = run_suite("torch", path=path, timeout=60)
    assert r.status == "passed"
    assert len(r.stderr_tail) <= runner.TAIL_CHARS
    assert r.stderr_tail.endswith("the last words")
    assert len(r.stderr_tail.splitlines()) <= runner.TAIL_LINES


def test_huge_stdout_is_a_violation_without_eating_memory(tmp_path: Path) -> None:
    path = child(tmp_path, "import sys\nsys.stdout.write('y' * (8 << 20))\n")
    r = run_suite("torch", path=path, timeout=60)
    assert r.status == "error" and r.reason.startswith("protocol violation")


def test_late_output_after_the_line_goes_to_stderr(tmp_path: Path) -> None:
    path = child(tmp_path, """
        import atexit, ctypes, sys, _protocol
        def body(rec, args):
            ctypes.CDLL(None).printf(b"C chatter, buffered by libc\\n")
            with rec.test("one"):
                pass
        atexit.register(lambda: print("goodbye from atexit"))
        sys.exit(_protocol.main("torch", body))
    """)
    r = run_suite("torch", path=path, timeout=30)
    assert r.status == "passed", r
    assert "goodbye from atexit" in r.stderr_tail and "C chatter" in r.stderr_tail


def test_bad_arguments_still_give_a_line(tmp_path: Path) -> None:
    path = child(tmp_path, """
        import sys, _protocol
        sys.argv = [sys.argv[0], "--tier", "extreme"]
        sys.exit(_protocol.main("torch", lambda rec, args: None))
    """)
    r = run_suite("torch", path=path, timeout=30)
    assert r.status == "error" and r.reason.startswith("bad arguments:")


def test_a_body_that_raises_makes_the_suite_an_error(tmp_path: Path) -> None:
    path = child(tmp_path, """
        import sys, _protocol
        def body(rec, args):
            raise ImportError("libcudnn.so.9: cannot open shared object file")
        sys.exit(_protocol.main("torch", body))
    """)
    r = run_suite("torch", path=path, timeout=30)
    assert r.status == "error" and r.exit_code == 1
    assert r.reason == "the suite raised ImportError: libcudnn.so.9: cannot open shared object file"
    assert "Traceback" in r.stderr_tail


def test_missing_files_interpreters_and_suites(tmp_path: Path) -> None:
    assert run_suite("torch", path=str(tmp_path / "nope.py")).reason.endswith("nope.py is missing")
    r = run_suite("torch", python=str(tmp_path / "no-python"), path=child(tmp_path, "pass\n"))
    assert r.status == "error" and r.reason.startswith("could not start")
    assert run_suite("quantum").reason.startswith("no suite named 'quantum'")


@pytest.mark.parametrize("tier", ["quick", "standard"])
def test_run_suites_gives_each_result_in_order(tmp_path: Path, tier: str) -> None:
    a = child(tmp_path, "import sys, _protocol\nsys.exit(_protocol.main('driver', lambda r, a: r.skip_suite('no GPU')))\n", "a.py")
    b = child(tmp_path, "import os\nos.abort()\n", "b.py")
    results = run_suites(["driver", "torch"], paths={"driver": a, "torch": b}, timeout=30, tier=tier)
    assert [(r.suite, r.status) for r in results] == [("driver", "skipped"), ("torch", "crashed")]
    assert results[0].reason == "no GPU"
    assert float(results[0].details["peak_rss_mib"]) > 0  # each child's peak memory, reported


# Each suite marks that it started, then waits for the other's mark: run one after the other, the
# first would wait in vain and time out. In its timed section it checks that no other suite is in one.
MEETS = """
    import os, sys, time, _protocol, _shared_gpu
    here = os.path.dirname(os.path.abspath(__file__))
    me, other = sys.argv[0].rsplit("/", 1)[-1][:1], {"a": "b", "b": "a"}[sys.argv[0].rsplit("/", 1)[-1][:1]]

    def body(rec, args):
        open(os.path.join(here, me + ".started"), "w").close()
        deadline = time.monotonic() + 20
        while not os.path.exists(os.path.join(here, other + ".started")):
            if time.monotonic() > deadline:
                rec.error_suite("the other suite never started while this one ran")
                return
            time.sleep(0.01)
        for _ in range(5):
            with rec.test("timed") as t, _shared_gpu.timed_alone(t.metrics):
                inside = os.path.join(here, me + ".inside")
                open(inside, "w").close()
                if os.path.exists(os.path.join(here, other + ".inside")):
                    t.fail("two timed sections at once")
                time.sleep(0.05)
                os.unlink(inside)
    sys.exit(_protocol.main("x", body))
"""


def test_the_quick_tier_runs_suites_at_once_and_their_timed_sections_in_turn(tmp_path: Path) -> None:
    a, b = child(tmp_path, MEETS, "a.py"), child(tmp_path, MEETS, "b.py")
    results = run_suites(["driver", "torch"], paths={"driver": a, "torch": b}, timeout=60)
    assert [(r.suite, r.status) for r in results] == [("driver", "passed"), ("torch", "passed")], \
        [(r.reason, r.stderr_tail) for r in results]
    assert all(len(r.tests) == 5 and not any(t.metrics for t in r.tests) for r in results)
    assert not list(tmp_path.glob("cudadoctor-smoke-*.lock"))


def test_a_timed_section_without_a_lock_runs_as_it_is(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from cudadoctor.smoke.suites import _shared_gpu

    monkeypatch.delenv(_shared_gpu.LOCK_ENV, raising=False)
    with _shared_gpu.timed_alone():
        pass
    lock = tmp_path / "lock"
    monkeypatch.setenv(_shared_gpu.LOCK_ENV, str(lock))
    monkeypatch.setattr(_shared_gpu, "WAIT_S", 0.05)
    import fcntl

    with open(lock, "a") as holder:  # another suite hung inside its timed section
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
        metrics: Dict[str, float] = {}
        with _shared_gpu.timed_alone(metrics):
            pass
    assert metrics == {"shared_gpu": 1.0}  # it ran all the same, and says so


def test_the_suite_table() -> None:
    assert SUITES == ("driver", "torch", "jax", "cupy", "tensorflow", "julia")
    assert SUITE_FILES["torch"] == "torch_suite.py"
    assert suite_path("jax").endswith(os.path.join("smoke", "suites", "jax_suite.py"))


def test_timeouts_per_tier_and_the_child_command() -> None:
    assert runner.default_timeout("quick") == 60
    assert runner.default_timeout("standard") == 300
    assert runner.default_timeout("stress", 300) == 420
    assert runner.default_timeout("stress") == 180
    cmd = runner.suite_command("py", "s.py", "stress", [0, 2], 300.0, 420.0)
    assert cmd == ["py", "s.py", "--tier", "stress", "--timeout", "420", "--gpus", "0,2", "--duration", "300"]
    env = runner.child_env({"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "2", "PYTHONINSPECT": "1"})
    assert env["CUDA_VISIBLE_DEVICES"] == "2" and env["PATH"] == "/bin" and "PYTHONINSPECT" not in env
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false" and env["PYTHONUNBUFFERED"] == "1"


# --------------------------------------------------------------------------- interpret, alone

def _line(**over: Any) -> bytes:
    data: Dict[str, Any] = {"protocol": 1, "suite": "torch", "status": "passed", "reason": "ok", "tier": "quick",
                            "framework": "torch 2.5.1", "tests": [], "details": {}}
    data.update(over)
    return (json.dumps(data) + "\n").encode()


def test_interpret_tolerates_malformed_tests() -> None:
    tests: List[Any] = [
        "not a dict",
        {"name": "x", "status": "weird", "gpu": True, "duration_s": "slow", "metrics": {"a": "b", "c": 1, "d": None}},
        {"name": "y", "status": "passed", "gpu": 1, "duration_s": 0.5, "metrics": [1]},
    ]
    r = interpret("torch", "quick", 60, _line(tests=tests, details=["no"]), False, "", 0, False, 1.0)
    assert r.status == "passed"
    assert r.tests[0].status == "error" and r.tests[0].name == "?"
    assert r.tests[1].status == "error" and r.tests[1].gpu is None and r.tests[1].duration_s is None
    assert r.tests[1].metrics == {"c": 1.0}
    assert r.tests[2].gpu == 1 and r.tests[2].metrics == {}
    assert r.details == {}


def test_interpret_timeout_ignores_whatever_was_printed() -> None:
    r = interpret("jax", "quick", 60, _line(), False, "stuck\n", -9, True, 61.0)
    assert (r.status, r.reason, r.exit_code, r.signal) == ("timeout", "timed out after 60 s", None, None)
    r = interpret("jax", "quick", 60, b"", False, "", None, True, 66.0, unkillable=True)
    assert "could not be killed" in r.reason


def test_parse_line_returns_what_is_wrong() -> None:
    assert parse_line("{")[0] is None
    ok, problem = parse_line(_line().decode())
    assert ok is not None and problem == "" and ok["framework"] == "torch 2.5.1"


def test_tail_and_signal_names() -> None:
    text = "\n".join(f"line {i}" for i in range(100))
    assert runner.tail(text).splitlines() == [f"line {i}" for i in range(80, 100)]
    assert len(runner.tail("z" * 10000)) == runner.TAIL_CHARS
    assert runner.signal_name(-11) == "SIGSEGV" and runner.signal_name(1) is None and runner.signal_name(None) is None


# --------------------------------------------------------------------------- the protocol helpers

@pytest.mark.parametrize("text, name", [
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device\nCUDA kernel errors might",
     "cudaErrorNoKernelImageForDevice"),
    ("CUDA error: out of memory", "cudaErrorMemoryAllocation"),
    ("XlaRuntimeError: INTERNAL: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected", "CUDA_ERROR_NO_DEVICE"),
    ("cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorInsufficientDriver: CUDA driver version is "
     "insufficient", "cudaErrorInsufficientDriver"),
    ("cuModuleLoadData failed: CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"),
    ("CUDA error: an illegal memory access was encountered", "cudaErrorIllegalAddress"),
    ("CUDA error: something nobody has seen", None),
    ("ValueError: shapes do not match", None),
    ("", None),
    (None, None),
])
def test_decode_cuda_error(text: Optional[str], name: Optional[str]) -> None:
    assert _protocol.decode_cuda_error(text) == name


def test_parse_args() -> None:
    a = _protocol.parse_args(["--tier", "stress", "--gpus", "0,2,2", "--duration", "30", "--timeout", "150"])
    assert (a.tier, a.gpus, a.duration, a.timeout, a.device) == ("stress", [0, 2], 30.0, 150.0, None)
    remaining = a.remaining(margin=0)
    assert remaining is not None and 149 < remaining <= 150
    assert _protocol.parse_args([]).gpus is None and _protocol.parse_args([]).remaining() is None
    assert _protocol.parse_args(["--device", "cpu"]).device == "cpu"
    for bad in (["--tier", "max"], ["--gpus", "a"], ["--timeout", "soon"]):
        with pytest.raises(ValueError):
            _protocol.parse_args(bad)
    assert _protocol.parse_args(["--expect-gpu", "--tier", "standard"]).unknown == ["--expect-gpu"]
    assert _protocol.select_gpus(None, 2) == ([0, 1], [])
    assert _protocol.select_gpus([1, 3], 2) == ([1], [3])


def test_recorder_statuses_and_the_line() -> None:
    rec = _protocol.Recorder("torch")
    assert rec.status() == ("skipped", "no tests ran")
    with rec.test("skipme", gpu=0) as t:
        raise _protocol.Skip("bf16 needs sm_80")
    assert rec.status() == ("skipped", "bf16 needs sm_80")
    with rec.test("ok", gpu=0) as t:
        t.metrics.update({"nan": math.nan, "inf": math.inf, "flag": True, "n": 3, "x": 0.25, "s": "text"})
    assert rec.status() == ("passed", "1 test passed")
    with rec.test("bad", gpu=1):
        raise _protocol.Fail("gradients differ: 3e-2 > 1e-3")
    rec.add("allreduce", "error", error="RuntimeError: NCCL error: unhandled system error")
    assert rec.status() == ("failed", "bad on GPU 1 failed: gradients differ: 3e-2 > 1e-3 (and 1 more)")
    line = rec.result()
    assert line["tests"][1]["metrics"] == {"flag": 1, "n": 3, "x": 0.25}
    json.dumps(line, allow_nan=False)
    rec.error_suite("torch import raised")
    assert rec.status() == ("error", "torch import raised")
    with pytest.raises(ValueError):
        rec.add("x", "exploded")


def test_run_in_process_restores_stdout_and_returns_the_exit_code(capfd: pytest.CaptureFixture[str]) -> None:
    def body(rec: _protocol.Recorder, args: _protocol.Args) -> None:
        print("to stderr please")
        with rec.test("t", gpu=0 if args.device is None else None):
            pass

    out = io.StringIO()
    assert _protocol.run("jax", body, ["--device", "cpu"], stream=out) == 0
    line = json.loads(out.getvalue())
    assert line["suite"] == "jax" and line["tests"][0]["gpu"] is None and line["status"] == "passed"
    print("stdout works again")
    captured = capfd.readouterr()
    assert "to stderr please" in captured.err and "stdout works again" in captured.out


def test_every_existing_suite_file_is_a_script_importing_only_what_it_may() -> None:
    """Suites run by path under an interpreter without cudadoctor: no `cudadoctor` imports."""
    for name in SUITES:
        path = Path(suite_path(name))
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            assert "import cudadoctor" not in text and "from cudadoctor" not in text, name


def test_protocol_imports_only_the_standard_library() -> None:
    text = (SMOKE_DIR / "_protocol.py").read_text(encoding="utf-8")
    modules: Set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            modules.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            modules.add("." if node.level else str(node.module).split(".")[0])
    allowed = {"__future__", "argparse", "contextlib", "ctypes", "faulthandler", "json", "math", "os", "re",
               "resource", "signal", "sys", "time", "traceback", "typing"}
    assert modules and modules <= allowed, modules - allowed


def test_expectations_from_the_probed_machine() -> None:
    from cudadoctor.model import Gpu, Snapshot

    assert runner.expectations("torch", None) == []
    assert runner.expectations("driver", Snapshot(gpus=())) == []
    two = Snapshot(gpus_source="nvml", gpus=(Gpu(0, name="NVIDIA H200", uuid="GPU-a"), Gpu(1, name="NVIDIA H200", uuid="GPU-b")))
    assert runner.expectations("driver", two) == ["--expect-gpu"]
    assert runner.expectations("torch", two) == ["--expect-gpu", "--expect",
                                                 "count=2;names=NVIDIA H200|NVIDIA H200;uuids=GPU-a|GPU-b"]
    pci_only = Snapshot(gpus_source="pci", gpus=(Gpu(0),))
    assert runner.expectations("torch", pci_only) == ["--expect-gpu"]
    cmd = runner.suite_command("py", "s.py", "quick", None, None, 60.0, ["--expect-gpu"])
    assert cmd == ["py", "s.py", "--tier", "quick", "--timeout", "60", "--expect-gpu"]


def test_ctrl_c_in_the_parent_kills_the_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = child(tmp_path, """
        import os, sys, time
        print(os.getpid(), file=sys.stderr, flush=True)
        time.sleep(120)
    """)
    seen: List[int] = []

    def interrupted(self: Any, limit: float) -> None:
        time.sleep(0.5)
        seen.append(self.proc.pid)
        raise KeyboardInterrupt

    monkeypatch.setattr(runner._Child, "wait", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_suite("torch", path=path, timeout=60)
    assert seen and not _alive(seen[0])


def test_a_bug_while_waiting_is_an_error_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: Any, limit: float) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(runner._Child, "wait", broken)
    r = run_suite("torch", path=child(tmp_path, "import time\ntime.sleep(120)\n"), timeout=60)
    assert r.status == "error" and r.reason == "the runner failed: RuntimeError: boom"
