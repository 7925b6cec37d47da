"""The jax, cupy, tensorflow and julia smoke suites without their frameworks (none is installed
in CI): each suite run by path gives one clean skipped line; fake framework modules and a fake
``julia`` drive the failure paths (a broken import, "CUDA backend failed to initialize", no
device, a julia that hangs); the pure comparison and parsing helpers are tested directly, and the
tolerances are checked against float32 and TF32 arithmetic measured with torch on the CPU.
Tests needing a real GPU and the framework are marked ``gpu`` and skip themselves elsewhere."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from cudadoctor.smoke.suites import _frameworks as fw
from cudadoctor.smoke.suites import _protocol
from cudadoctor.smoke import suite_path
from cudadoctor.smoke.suites import cupy_suite, jax_suite, julia_suite, tensorflow_suite

FRAMEWORK_SUITES = {"jax": "jax", "cupy": "cupy", "tensorflow": "tensorflow"}


def run_path(suite: str, *args: str, env: Optional[Dict[str, str]] = None, pythonpath: Optional[Path] = None,
             path_dirs: Optional[List[Path]] = None, timeout: float = 120.0) -> Tuple[Dict[str, Any], int, str]:
    """Run suite ``suite`` by file path under this interpreter: (the JSON line, exit code, stderr).
    Asserts stdout is exactly one line."""
    child_env = dict(os.environ if env is None else env)
    child_env.pop("PYTHONPATH", None)
    if pythonpath is not None:
        child_env["PYTHONPATH"] = str(pythonpath)
    if path_dirs is not None:
        child_env["PATH"] = os.pathsep.join(str(p) for p in path_dirs)
    proc = subprocess.run([sys.executable, suite_path(suite), *args], capture_output=True, text=True,
                          env=child_env, timeout=timeout, stdin=subprocess.DEVNULL)
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, f"stdout was {proc.stdout!r}; stderr {proc.stderr[-2000:]}"
    result = json.loads(lines[0])
    assert result["protocol"] == 1 and result["suite"] == suite
    assert proc.returncode == _protocol.exit_code(result["status"])
    return result, proc.returncode, proc.stderr


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


# --------------------------------------------------------------------------- not installed


@pytest.mark.parametrize("suite", sorted(FRAMEWORK_SUITES))
@pytest.mark.parametrize("flags", [(), ("--expect-gpu",), ("--tier", "standard", "--gpus", "0,1")])
def test_a_missing_framework_gives_one_clean_skipped_line(suite: str, flags: Tuple[str, ...]) -> None:
    if installed(FRAMEWORK_SUITES[suite]):
        pytest.skip(f"{suite} is installed here")
    result, code, _ = run_path(suite, *flags)
    assert result["status"] == "skipped" and code == 0
    assert result["reason"] == f"{suite} is not installed in {sys.executable}"
    assert result["tests"] == [] and result["framework"] is None
    assert result["tier"] == ("standard" if "standard" in flags else "quick")


def test_without_julia_on_path_the_julia_suite_is_skipped(tmp_path: Path) -> None:
    result, code, _ = run_path("julia", "--expect-gpu", path_dirs=[tmp_path])
    assert (result["status"], result["reason"], code) == ("skipped", "julia is not on PATH", 0)


def test_jax_sets_the_allocator_flags_before_importing_jax(tmp_path: Path) -> None:
    """A fake jax records the environment it was imported under in its version."""
    fake_jax(tmp_path, """
        __version__ = "0.0+" + os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "unset") + "," + \\
            os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "unset")
        def devices(backend=None):
            raise RuntimeError(f"Unknown backend {backend}")
    """)
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="true")
    result, _, _ = run_path("jax", env=env, pythonpath=tmp_path)
    assert result["framework"] == "jax 0.0+false,platform"
    assert result["details"]["env.XLA_PYTHON_CLIENT_PREALLOCATE.user"] == "true"


# --------------------------------------------------------------------------- broken imports


@pytest.mark.parametrize("suite, module, raising, words", [
    ("jax", "jax", "ImportError('libcudart.so.12: cannot open shared object file')",
     "importing jax raised ImportError: libcudart.so.12: cannot open shared object file"),
    ("cupy", "cupy", "ModuleNotFoundError(\"No module named 'numpy'\", name='numpy')",
     "importing cupy raised ModuleNotFoundError: No module named 'numpy'"),
    ("tensorflow", "tensorflow", "RuntimeError('module compiled against API version 0x10')",
     "importing tensorflow raised RuntimeError: module compiled against API version 0x10"),
    ("jax", "jax", "ModuleNotFoundError('jax requires jaxlib to be installed')",
     "importing jax raised ModuleNotFoundError: jax requires jaxlib to be installed"),
])
def test_a_framework_whose_import_raises_makes_the_suite_error(tmp_path: Path, suite: str, module: str, raising: str,
                                                               words: str) -> None:
    (tmp_path / module).mkdir()
    (tmp_path / module / "__init__.py").write_text(f"print('chatter on stdout')\nraise {raising}\n")
    result, code, _ = run_path(suite, pythonpath=tmp_path)
    assert result["status"] == "error" and code == 1
    assert result["reason"] == words


# --------------------------------------------------------------------------- jax, faked


def fake_jax(root: Path, body: str, backend_errors: Optional[Dict[str, str]] = None) -> None:
    pkg = root / "jax"
    (pkg / "_src").mkdir(parents=True)
    (pkg / "__init__.py").write_text("import logging, os\n_log = logging.getLogger('jax._src.xla_bridge')\n"
                                     + textwrap.dedent(body))
    (pkg / "_src" / "__init__.py").write_text("")
    (pkg / "_src" / "xla_bridge.py").write_text(f"_backend_errors = {backend_errors or {}!r}\n")


CUDNN_TOO_OLD = ("CUDA backend failed to initialize: Found cuDNN version 8600, but JAX was built against version "
                 "8900, which is newer. The copy of cuDNN that is installed must be at least as new as the version "
                 "against which JAX was built. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)")


def test_jax_cuda_backend_failing_to_initialize_fails_with_jax_s_exact_message(tmp_path: Path) -> None:
    fake_jax(tmp_path, f"""
        __version__ = "0.4.30"
        def devices(backend=None):
            _log.warning({CUDNN_TOO_OLD!r})
            if backend in ("cuda", "gpu"):
                raise RuntimeError(f"Backend '{{backend}}' failed to initialize: Found cuDNN version 8600 ...")
            return []
    """, backend_errors={"cuda": "Found cuDNN version 8600, ..."})
    result, code, stderr = run_path("jax", pythonpath=tmp_path)
    assert result["status"] == "failed" and code == 1
    (test,) = result["tests"]
    assert (test["name"], test["status"], test["message"]) == ("devices", "failed", CUDNN_TOO_OLD)
    assert result["reason"] == f"devices failed: {CUDNN_TOO_OLD}"
    assert result["framework"] == "jax 0.4.30"
    assert CUDNN_TOO_OLD in stderr  # still shown


def test_jax_backend_error_without_a_logged_warning_is_rebuilt_from_backend_errors(tmp_path: Path) -> None:
    fake_jax(tmp_path, """
        __version__ = "0.4.30"
        def devices(backend=None):
            raise RuntimeError(f"Unknown backend {backend}")
    """, backend_errors={"cuda": "Unable to load cuSOLVER. Is it installed?"})
    result, _, _ = run_path("jax", pythonpath=tmp_path)
    assert result["status"] == "failed"
    assert result["tests"][0]["message"] == "CUDA backend failed to initialize: Unable to load cuSOLVER. Is it installed?."


@pytest.mark.parametrize("expect", [False, True])
def test_jax_with_no_device_is_skipped_unless_a_gpu_is_expected(tmp_path: Path, expect: bool) -> None:
    fake_jax(tmp_path, """
        __version__ = "0.4.30"
        def devices(backend=None):
            _log.warning("CUDA backend failed to initialize: INTERNAL: no supported devices found for platform CUDA;"
                         " CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected.")
            raise RuntimeError(f"Unknown backend {backend}")
    """)
    result, code, _ = run_path("jax", *(["--expect-gpu"] if expect else []), pythonpath=tmp_path)
    assert result["status"] == ("failed" if expect else "skipped")
    assert result["reason"].startswith("devices failed: no GPU visible to jax: " if expect else
                                       "no GPU visible to jax: CUDA backend failed to initialize")
    assert result["tests"][0]["cuda_error"] == "CUDA_ERROR_NO_DEVICE"


def test_a_cpu_only_jax_is_skipped_with_jax_s_own_hint(tmp_path: Path) -> None:
    hint = "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu."
    fake_jax(tmp_path, f"""
        __version__ = "0.4.30"
        def devices(backend=None):
            _log.warning({hint!r})
            raise RuntimeError(f"Unknown backend {{backend}}")
    """)
    for flags in ([], ["--expect-gpu"]):  # a CPU-only build is skipped either way, like torch's
        result, code, _ = run_path("jax", *flags, pythonpath=tmp_path)
        assert (result["status"], code) == ("skipped", 0)
        assert result["reason"] == \
            f"jax has no CUDA backend: no jax-cuda plugin is installed (a CPU-only jax); jax said: {hint}"


def test_jax_platforms_without_cuda_is_reported_as_the_reason(tmp_path: Path) -> None:
    fake_jax(tmp_path, """
        __version__ = "0.4.30"
        def devices(backend=None):
            raise AssertionError("not asked")
    """)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    result, _, _ = run_path("jax", env=env, pythonpath=tmp_path)
    assert (result["status"], result["reason"]) == ("skipped", "JAX_PLATFORMS='cpu' leaves out the CUDA backend")


# --------------------------------------------------------------------------- cupy and tensorflow, faked


def fake_cupy(root: Path, count_body: str) -> None:
    (root / "cupy").mkdir()
    (root / "cupy" / "__init__.py").write_text(textwrap.dedent(f"""
        import types
        __version__ = "13.3.0"
        class CUDARuntimeError(RuntimeError):
            pass
        def _count():
        {textwrap.indent(textwrap.dedent(count_body), '    ')}
        cuda = types.SimpleNamespace(
            runtime=types.SimpleNamespace(is_hip=False, runtimeGetVersion=lambda: 12060, driverGetVersion=lambda: 12040,
                                          getDeviceCount=_count),
            nvrtc=types.SimpleNamespace(getVersion=lambda: (12, 6)))
    """))


def test_cupy_reports_runtime_and_driver_versions_and_a_driver_too_old(tmp_path: Path) -> None:
    fake_cupy(tmp_path, "raise CUDARuntimeError('cudaErrorInsufficientDriver: CUDA driver version is insufficient "
                        "for CUDA runtime version')")
    result, code, _ = run_path("cupy", pythonpath=tmp_path)
    assert result["status"] == "failed" and code == 1
    details = result["details"]
    assert (details["cuda.runtime"], details["cuda.driver"], details["nvrtc"]) == ("12.6 (12060)", "12.4 (12040)", "12.6")
    (test,) = result["tests"]
    assert test["cuda_error"] == "cudaErrorInsufficientDriver"
    assert "CUDA driver version is insufficient" in test["message"]
    assert details["env.CUPY_TF32"] == "0"


@pytest.mark.parametrize("expect", [False, True])
def test_cupy_with_no_device_is_skipped_unless_a_gpu_is_expected(tmp_path: Path, expect: bool) -> None:
    fake_cupy(tmp_path, "raise CUDARuntimeError('cudaErrorNoDevice: no CUDA-capable device is detected')")
    result, _, _ = run_path("cupy", *(["--expect-gpu"] if expect else []), pythonpath=tmp_path)
    assert result["status"] == ("failed" if expect else "skipped")
    assert "no GPU visible to cupy" in result["reason"]
    assert result["tests"][0]["cuda_error"] == "cudaErrorNoDevice"


def fake_tensorflow(root: Path, stderr_lines: str, cuda_build: bool = True) -> None:
    (root / "tensorflow").mkdir()
    (root / "tensorflow" / "__init__.py").write_text(textwrap.dedent(f"""
        import os, types
        __version__ = "2.15.0"
        os.write(2, {stderr_lines!r}.encode())  # what the C++ side logs, straight to fd 2
        _info = {{"cuda_version": "12.2", "cudnn_version": "8", "is_cuda_build": {cuda_build!r},
                 "cuda_compute_capabilities": ["sm_50", "sm_90", "compute_90"]}}
        config = types.SimpleNamespace(
            list_physical_devices=lambda kind: [],
            experimental=types.SimpleNamespace(enable_tensor_float_32_execution=lambda on: None),
            set_soft_device_placement=lambda on: None)
        sysconfig = types.SimpleNamespace(get_build_info=lambda: _info)
        test = types.SimpleNamespace(is_built_with_cuda=lambda: {cuda_build!r})
    """))


MISSING_CUDNN = (
    "2024-05-01 10:00:00.123456: W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:64] "
    "Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: "
    "No such file or directory\n"
    "2024-05-01 10:00:00.223456: W tensorflow/core/common_runtime/gpu/gpu_device.cc:1960] Cannot dlopen some GPU "
    "libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to "
    "use GPU. Skipping registering GPU devices...\n")


def test_tensorflow_without_gpus_because_cudnn_is_missing_fails_with_tensorflow_s_lines(tmp_path: Path) -> None:
    fake_tensorflow(tmp_path, MISSING_CUDNN)
    result, code, stderr = run_path("tensorflow", pythonpath=tmp_path)
    assert result["status"] == "failed" and code == 1
    (test,) = result["tests"]
    assert test["name"] == "devices"
    assert test["message"].startswith("Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8")
    assert "Cannot dlopen some GPU libraries" in test["message"]
    assert result["details"]["build.cuda_compute_capabilities"] == "sm_50,sm_90,compute_90"
    assert result["details"]["build.cuda_version"] == "12.2"
    assert "Could not load dynamic library" in stderr  # captured, and still shown


@pytest.mark.parametrize("log, cuda_build, words", [
    ("E0000 00:00:1721000000.123456   12345 cuda_executor.cc:1015] failed call to cuInit: INTERNAL: CUDA error: "
     "Failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected\n", True, "no GPU visible to tensorflow"),
    ("", False, "tensorflow 2.15.0 is a CPU-only build (no CUDA)"),
])
def test_tensorflow_with_no_device_or_a_cpu_build_is_skipped(tmp_path: Path, log: str, cuda_build: bool, words: str) -> None:
    fake_tensorflow(tmp_path, log, cuda_build)
    result, _, _ = run_path("tensorflow", pythonpath=tmp_path)
    assert result["status"] == "skipped" and result["reason"].startswith(words)
    result, _, _ = run_path("tensorflow", "--expect-gpu", pythonpath=tmp_path)
    assert result["status"] == ("failed" if cuda_build else "skipped")  # a CPU build is skipped, like torch's


# --------------------------------------------------------------------------- julia, faked


def fake_julia(root: Path, output: str, extra: str = "") -> Path:
    """A ``julia`` on PATH: records its arguments, prints ``output`` and runs ``extra``."""
    bindir = root / "bin"
    bindir.mkdir(exist_ok=True)
    script = bindir / "julia"
    script.write_text("#!/bin/sh\n"
                      f"printf '%s\\n' \"$@\" > '{root}/args'\n"
                      "echo 'julia chatter on stdout'\n"
                      "echo 'julia chatter on stderr' >&2\n"
                      f"cat <<'EOF'\n{textwrap.dedent(output).strip()}\nEOF\n{extra}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return bindir


def system_dirs() -> List[Path]:
    return [Path(p) for p in ("/usr/bin", "/bin") if os.path.isdir(p)]


JULIA_OK = """
    cudadoctor:julia_version=1.10.4
    cudadoctor:cuda_jl=loaded
    cudadoctor:cuda_jl_version=5.4.2
    cudadoctor:zygote=loaded
    cudadoctor:zygote_version=0.6.70
    cudadoctor:runtime_version=12.5.0
    cudadoctor:driver_version=12.4.0
    cudadoctor:functional=true
    cudadoctor:ndevices=2
    cudadoctor:device.0=NVIDIA H200
    cudadoctor:device.1=NVIDIA H200
    cudadoctor:test.broadcast.0.status=done
    cudadoctor:test.broadcast.0.seconds=1.5
    cudadoctor:test.zygote_grad.0.value={err0}
    cudadoctor:test.zygote_grad.0.status=done
    cudadoctor:test.zygote_grad.0.seconds=9.25
    cudadoctor:test.broadcast.1.status=done
    cudadoctor:test.broadcast.1.seconds=0.01
    cudadoctor:test.zygote_grad.1.value=1.0e-7
    cudadoctor:test.zygote_grad.1.status=done
    cudadoctor:test.zygote_grad.1.seconds=0.5
    cudadoctor:done=true
"""


def test_julia_suite_runs_julia_and_passes_on_its_report(tmp_path: Path) -> None:
    bindir = fake_julia(tmp_path, JULIA_OK.format(err0="2.3283064365386963e-7"))
    result, code, stderr = run_path("julia", "--gpus", "0,1", path_dirs=[bindir] + system_dirs())
    assert result["status"] == "passed" and code == 0, result
    assert result["framework"] == "CUDA.jl 5.4.2 (julia 1.10.4)"
    names = [(t["name"], t["gpu"], t["status"]) for t in result["tests"]]
    assert names == [("functional", None, "passed"), ("broadcast", 0, "passed"), ("zygote_grad", 0, "passed"),
                     ("broadcast", 1, "passed"), ("zygote_grad", 1, "passed")]
    grad = result["tests"][2]
    assert grad["duration_s"] == 9.25 and grad["metrics"]["max_rel_error"] == pytest.approx(2.3283064365386963e-7)
    assert result["details"]["gpu.1.name"] == "NVIDIA H200" and result["details"]["cuda.driver"] == "12.4.0"
    args = (tmp_path / "args").read_text().splitlines()
    assert args[:4] == ["--startup-file=no", "--history-file=no", "--color=no", "-e"]
    assert args[-2:] == ["0", "1"]
    assert "CUDA.functional()" in "\n".join(args) and "Zygote.gradient" in "\n".join(args)
    assert "julia chatter on stdout" in stderr and "julia chatter on stderr" in stderr


def test_julia_gradient_beyond_the_tolerance_fails(tmp_path: Path) -> None:
    bindir = fake_julia(tmp_path, JULIA_OK.format(err0="0.31"))
    result, code, _ = run_path("julia", path_dirs=[bindir] + system_dirs())
    assert result["status"] == "failed" and code == 1
    assert result["reason"].startswith("zygote_grad on GPU 0 failed: Zygote gradient of sum(abs2, tanh.(W*x)) "
                                       "on CuArrays vs Arrays: error 3.10e-01 > tolerance 1e-04")


@pytest.mark.parametrize("output, status, words", [
    ("cudadoctor:julia_version=1.10.4\ncudadoctor:cuda_jl=missing", "skipped",
     "CUDA.jl is not installed in the active Julia project (julia 1.10.4)"),
    ("cudadoctor:julia_version=1.10.4\ncudadoctor:cuda_load_error=ArgumentError: Package CUDA not found", "error",
     "using CUDA raised ArgumentError: Package CUDA not found"),
    ("cudadoctor:cuda_jl=loaded\ncudadoctor:functional=false\n"
     "cudadoctor:functional_error=CUDA driver not found", "skipped", "CUDA.jl is not functional: CUDA driver not found"),
    ("cudadoctor:cuda_jl=loaded\ncudadoctor:functional=false\n"
     "cudadoctor:functional_error=CUDA error: system has unsupported display driver / cuda driver combination "
     "(code 803, ERROR_SYSTEM_DRIVER_MISMATCH)", "failed",
     "functional failed: CUDA.jl is not functional: CUDA error: system has unsupported display driver"),
    ("cudadoctor:cuda_jl=loaded\ncudadoctor:functional=false\n"
     "cudadoctor:functional_error=CuError(CUDA_ERROR_NO_DEVICE, no CUDA-capable device is detected)", "skipped",
     "CUDA.jl is not functional: CuError(CUDA_ERROR_NO_DEVICE"),
])
def test_julia_outcomes(tmp_path: Path, output: str, status: str, words: str) -> None:
    bindir = fake_julia(tmp_path, output)
    result, _, _ = run_path("julia", path_dirs=[bindir] + system_dirs())
    assert result["status"] == status, result
    assert result["reason"].startswith(words), result["reason"]


def test_a_julia_that_hangs_is_killed_with_its_children_within_the_budget(tmp_path: Path) -> None:
    bindir = fake_julia(tmp_path, "cudadoctor:julia_version=1.10.4", extra="sleep 60 &\nwait")
    start = time.monotonic()
    result, code, _ = run_path("julia", "--timeout", "6", path_dirs=[bindir] + system_dirs())
    assert time.monotonic() - start < 30
    assert result["status"] == "error" and code == 1
    assert result["reason"].startswith("julia did not finish within 5 s, while loading CUDA.jl")


def test_a_julia_that_dies_is_an_error_with_its_stderr(tmp_path: Path) -> None:
    bindir = fake_julia(tmp_path, "cudadoctor:julia_version=1.10.4\ncudadoctor:cuda_jl=loaded",
                        extra="echo 'signal (11): Segmentation fault' >&2\nexit 139")
    result, _, _ = run_path("julia", path_dirs=[bindir] + system_dirs())
    assert result["status"] == "error"
    assert result["reason"].startswith("julia exited with code 139 before finishing: ")
    assert "Segmentation fault" in result["reason"]


# --------------------------------------------------------------------------- julia, interpreted


def kv(text: str) -> Dict[str, str]:
    return julia_suite.parse_output(textwrap.dedent(text))


def test_parse_output_keeps_only_prefixed_lines_and_the_last_value() -> None:
    text = "noise\ncudadoctor:a=1\n  cudadoctor:b = x=y \ncudadoctor:a=2\ncudadoctor:=no key\ncudadoctor:nokey\n"
    assert julia_suite.parse_output(text) == {"a": "2", "b": "x=y"}


def test_interpret_a_missing_zygote_skips_only_the_gradient() -> None:
    out = julia_suite.interpret(kv(JULIA_OK.format(err0="1e-7").replace("zygote=loaded", "zygote=missing")
                                   .replace("test.zygote_grad", "ignored")), 0, wall_s=12.0)
    statuses = [(t["name"], t["gpu"], t["status"]) for t in out.tests]
    assert ("zygote_grad", 0, "skipped") in statuses and ("broadcast", 1, "passed") in statuses
    assert out.status is None
    assert next(t for t in out.tests if t["name"] == "zygote_grad")["message"] == \
        "Zygote is not installed in the active Julia project"
    assert out.tests[0]["duration_s"] == 12.0


def test_interpret_requested_gpus_that_do_not_exist_fail_select_gpu() -> None:
    out = julia_suite.interpret(kv(JULIA_OK.format(err0="1e-7")), 0, requested=[1, 5])
    names = [(t["name"], t["gpu"], t["status"]) for t in out.tests]
    assert names == [("functional", None, "passed"), ("select_gpu", 5, "failed"), ("broadcast", 1, "passed"),
                     ("zygote_grad", 1, "passed")]


def test_interpret_errors_nan_and_missing_outcomes() -> None:
    text = JULIA_OK.format(err0="NaN").replace("cudadoctor:test.broadcast.1.status=done",
                                               "cudadoctor:test.broadcast.1.error=CuError(CUDA_ERROR_ILLEGAL_ADDRESS)")
    text = text.replace("cudadoctor:test.zygote_grad.1.status=done\n", "")
    out = julia_suite.interpret(kv(text), 0)
    by = {(t["name"], t["gpu"]): t for t in out.tests}
    assert by[("zygote_grad", 0)]["status"] == "failed" and "nan" in by[("zygote_grad", 0)]["message"]
    assert by[("broadcast", 1)]["status"] == "error"
    assert by[("broadcast", 1)]["cuda_error"] == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert by[("zygote_grad", 1)]["status"] == "error"
    assert by[("zygote_grad", 1)]["error"] == "julia reported no outcome for this test"


def test_interpret_a_timeout_keeps_the_tests_that_reported() -> None:
    text = "\n".join(JULIA_OK.format(err0="1e-7").strip().splitlines()[:16])  # up to GPU 0's gradient
    out = julia_suite.interpret(kv(text), None, timed_out=True, budget_s=57.0)
    assert out.status == "error" and out.reason == "julia did not finish within 57 s, while running the tests"
    assert [(t["name"], t["gpu"], t["status"]) for t in out.tests] == [("broadcast", 0, "passed"),
                                                                       ("zygote_grad", 0, "passed")]


def test_interpret_no_devices_and_expect_gpu() -> None:
    text = "cudadoctor:cuda_jl=loaded\ncudadoctor:functional=true\ncudadoctor:ndevices=0\ncudadoctor:done=true"
    assert julia_suite.interpret(kv(text), 0).status == "skipped"
    out = julia_suite.interpret(kv(text), 0, expect_gpu=True)
    assert out.status is None and out.tests[0]["status"] == "failed"


def test_the_julia_script_prints_only_prefixed_keys_the_parser_reads() -> None:
    script = julia_suite.JULIA_SCRIPT
    for key in ("julia_version", "cuda_jl", "cuda_load_error", "cuda_jl_version", "zygote", "functional",
                "functional_error", "ndevices", "done"):
        assert f'say("{key}"' in script
    for key in ("test.$name.$i.value", "test.$name.$i.status", "test.$name.$i.error", "test.$name.$i.seconds"):
        assert f'"{key}"' in script
    assert "PEDANTIC_MATH" in script  # no TF32 in the GEMM


@pytest.mark.skipif(shutil.which("julia") is None, reason="julia is not installed")
def test_the_julia_script_parses() -> None:
    julia = shutil.which("julia")
    assert julia is not None
    code = f"Meta.parseall({julia_suite.JULIA_SCRIPT!r}); println(\"ok\")"
    proc = subprocess.run([julia, "--startup-file=no", "-e", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "ok", proc.stderr


# --------------------------------------------------------------------------- pure helpers


def test_flatten_takes_numbers_nested_lists_and_tolist_objects() -> None:
    class Arr:
        def tolist(self) -> Any:
            return [[1, 2], [3.5, True]]

    assert fw.flatten(3) == [3.0]
    assert fw.flatten([[1, [2, 3]], (4,)]) == [1.0, 2.0, 3.0, 4.0]
    assert fw.flatten(Arr()) == [1.0, 2.0, 3.5, 1.0]
    assert fw.flatten({"x": Arr()}.values().__iter__().__next__()) == [1.0, 2.0, 3.5, 1.0]


def test_rel_error_is_normwise() -> None:
    assert fw.rel_error([3.0, 4.0], [3.0, 4.0]) == 0.0
    assert fw.rel_error([3.0, 4.5], [3.0, 4.0]) == pytest.approx(0.1)
    assert fw.rel_error([[1.0], [0.0]], [1.0, 0.0]) == 0.0  # shape is not compared, only the elements
    assert fw.rel_error([1.0], [1.0, 2.0]) == math.inf
    assert math.isnan(fw.rel_error([float("nan"), 1.0], [1.0, 1.0]))
    assert fw.rel_error([0.0, 0.0], [0.0, 0.0]) == 0.0
    assert fw.rel_error([1e-30], [0.0]) == math.inf
    assert fw.rel_error([1e300, 1e300], [1e300, 1.1e300]) == pytest.approx(0.1 / math.hypot(1, 1.1))  # no overflow
    assert fw.rel_error([float("inf")], [1.0]) == math.inf


def test_scaled_max_error_and_mismatches() -> None:
    assert fw.scaled_max_error([1.0, 2.0], [1.0, 2.5], [1.0, 5.0]) == pytest.approx(0.1)
    assert fw.scaled_max_error([1.0], [1.0], [0.0]) == 0.0
    assert fw.scaled_max_error([1.0], [1.0, 2.0], [1.0, 1.0]) == math.inf
    assert math.isnan(fw.scaled_max_error([float("nan"), 9.0], [1.0, 1.0], [1.0, 1.0]))
    assert fw.mismatches([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) == (0, None)
    assert fw.mismatches([1.0, 9.0, float("nan")], [1.0, 2.0, float("nan")]) == (2, 1)
    assert fw.mismatches([1.0], [1.0, 2.0]) == (1, 1)


def test_verdicts_and_worst() -> None:
    assert fw.within(1e-5, 1e-4) and not fw.within(math.nan, 1.0) and not fw.within(math.inf, math.inf)
    assert fw.verdict("x", 2e-5, 1e-4) == (True, "x: error 2.00e-05 <= tolerance 1e-04")
    assert fw.worst({"a": 1.0, "b": math.nan, "c": 3.0})[0] == "b"
    assert fw.worst({"a": 1.0, "c": 3.0}) == ("c", 3.0)
    ok, message, metrics = fw.compare_tensors("grads", {"w": [1.0, 2.0], "b": [1.0]}, {"w": [1.0, 2.0], "b": [2.0]})
    assert not ok and message == "grads (worst: b): error 5.00e-01 > tolerance 1e-04"
    assert metrics["rel_error.w"] == 0.0 and metrics["max_rel_error"] == 0.5
    ok, message, _ = fw.compare_tensors("grads", {"w": [1.0]}, {"w": [1.0], "b": [1.0]})
    assert not ok and "worst: b" in message


def test_mlp_inputs_are_deterministic_and_shaped() -> None:
    a, b = fw.mlp_inputs(), fw.mlp_inputs()
    assert a == b and a != fw.mlp_inputs(seed=6)
    for name, shape in fw.MLP_SHAPES.items():
        value: Any = a[name]
        for size in shape:
            assert isinstance(value, list) and len(value) == size
            value = value[0]
        assert isinstance(value, float)


def test_versions_are_formatted() -> None:
    assert fw.cuda_version(12020) == "12.2" and fw.cuda_version(11080) == "11.8" and fw.cuda_version(13000) == "13.0"
    assert fw.cuda_version(0) == "0" and fw.cuda_version("x") == "x"
    assert fw.cudnn_version(90100) == "9.1.0" and fw.cudnn_version(8907) == "8.9.7" and fw.cudnn_version(91002) == "9.10.2"


def test_no_device_texts_and_log_lines() -> None:
    assert fw.says_no_device("CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected")
    assert fw.says_no_device("cudaErrorNoDevice") and not fw.says_no_device("CUDA_ERROR_NO_BINARY_FOR_GPU")
    assert not fw.says_no_device(None)
    assert fw.strip_log_prefix("2024-05-01 10:00:00.123456: W tensorflow/core/x.cc:12] hello") == "hello"
    assert fw.strip_log_prefix("W0000 00:00:1721000000.123456   12345 cuda_executor.cc:1015] hi") == "hi"
    assert fw.matching_lines("a\nB hit\nb hit\nB hit\n", ["HIT"]) == ["B hit", "b hit"]


def test_capture_stderr_fd_captures_c_level_writes_and_passes_them_on(capfd: pytest.CaptureFixture[str]) -> None:
    into: List[str] = []
    with fw.capture_stderr_fd(into):
        os.write(2, b"from C++\n")
    assert into == ["from C++\n"]
    assert "from C++" in capfd.readouterr().err


def test_split_expect_gpu() -> None:
    assert fw.split_expect_gpu(["--tier", "quick", "--expect-gpu"]) == (True, ["--tier", "quick"])
    assert fw.split_expect_gpu(["--gpus", "0"]) == (False, ["--gpus", "0"])


def test_import_framework_tells_missing_from_broken() -> None:
    rec = _protocol.Recorder("x")
    assert fw.import_framework(rec, "cudadoctor_no_such_module_here") is None
    assert rec.status() == ("skipped", f"cudadoctor_no_such_module_here is not installed in {sys.executable}")
    rec = _protocol.Recorder("x")
    assert fw.import_framework(rec, "json") is sys.modules["json"]
    assert rec.status()[0] == "skipped" and rec.tests == []  # nothing recorded


def test_jax_pure_parts() -> None:
    env: Dict[str, str] = {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform", "XLA_PYTHON_CLIENT_PREALLOCATE": "true"}
    details = jax_suite.set_allocator_env(env)
    assert env == {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    assert details["env.XLA_PYTHON_CLIENT_PREALLOCATE.user"] == "true"
    assert "env.XLA_PYTHON_CLIENT_ALLOCATOR.user" not in details
    assert jax_suite.platforms_setting(None) == (None, None)
    assert jax_suite.platforms_setting("cuda") == ("cuda,cpu", None)
    assert jax_suite.platforms_setting("cuda,cpu") == (None, None)
    assert jax_suite.platforms_setting("tpu,cpu")[1] == "JAX_PLATFORMS='tpu,cpu' leaves out the CUDA backend"
    assert jax_suite.backend_failure(["x", CUDNN_TOO_OLD], {}, []) == CUDNN_TOO_OLD
    assert jax_suite.backend_failure([], {"cuda": "why"}, []) == "CUDA backend failed to initialize: why."
    raised = "Unable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices."
    assert jax_suite.backend_failure([], {}, ["Unknown backend cuda", raised]) == raised
    assert jax_suite.backend_failure([], {}, ["Unknown backend cuda"]) is None
    cpu_only, why = jax_suite.no_cuda_reason([], {"jax": "0.4.30", "jaxlib": "0.4.30"}, [])
    assert cpu_only and why.startswith("jax has no CUDA backend: no jax-cuda plugin is installed")
    cpu_only, why = jax_suite.no_cuda_reason([], {"jaxlib": "0.4.20+cuda12.cudnn89"}, ["Unknown backend cuda"])
    assert not cpu_only and why.startswith("no GPU visible to jax: Unknown backend cuda")
    cpu_only, why = jax_suite.no_cuda_reason([], {"jax-cuda12-plugin": "0.4.30"}, [])
    assert not cpu_only and why.startswith("no GPU visible to jax")


def test_tensorflow_pure_parts() -> None:
    env: Dict[str, str] = {"TF_CPP_MIN_LOG_LEVEL": "3"}
    details = tensorflow_suite.set_env(env)
    assert env == {"TF_CPP_MIN_LOG_LEVEL": "1", "TF_FORCE_GPU_ALLOW_GROWTH": "true"}
    assert details["env.TF_CPP_MIN_LOG_LEVEL.user"] == "3"
    assert tensorflow_suite.classify_no_gpu(MISSING_CUDNN)[0] == "fail"
    kind, why = tensorflow_suite.classify_no_gpu(
        "E0000 00:00:1721000000.1 1 cuda_executor.cc:1015] failed call to cuInit: UNKNOWN ERROR (303)\n")
    assert (kind, why) == ("fail", "failed call to cuInit: UNKNOWN ERROR (303)")
    no_driver = ("W tensorflow/x/dso_loader.cc:64] Could not load dynamic library 'libcuda.so.1'; dlerror: libcuda.so.1:"
                 " cannot open shared object file: No such file or directory\n"
                 "E x/cuda_driver.cc:265] failed call to cuInit: UNKNOWN ERROR (303)\n")
    assert tensorflow_suite.classify_no_gpu(no_driver)[0] == "skip"
    assert tensorflow_suite.classify_no_gpu("Could not find cuda drivers on your machine, GPU will not be used.")[0] == "skip"
    assert tensorflow_suite.classify_no_gpu("")[0] == "skip"
    assert tensorflow_suite.build_details({"cuda_version": "12.2", "caps": ["sm_80", "sm_90"], "is_cuda_build": True}) \
        == {"build.cuda_version": "12.2", "build.caps": "sm_80,sm_90", "build.is_cuda_build": "True"}
    assert tensorflow_suite.on_device("/job:localhost/replica:0/task:0/device:GPU:1", "GPU", 1)
    assert not tensorflow_suite.on_device("/job:localhost/replica:0/task:0/device:CPU:0", "GPU", 0)
    assert not tensorflow_suite.on_device("/job:localhost/replica:0/task:0/device:GPU:11", "GPU", 1)


def test_cupy_pure_parts() -> None:
    assert cupy_suite.grid_for(256) == 1 and cupy_suite.grid_for(257) == 2 and cupy_suite.grid_for(0) == 1
    assert cupy_suite.VADD_N["quick"] % cupy_suite.BLOCK != 0  # the bounds check in the kernel matters
    ok, message, metrics = cupy_suite.vadd_verdict([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert ok and metrics == {"elements": 3.0, "mismatches": 0.0}
    ok, message, metrics = cupy_suite.vadd_verdict([1.0, float("nan"), 3.5], [1.0, 2.0, 3.0])
    assert not ok and message == "vector add: 2 of 3 elements differ from NumPy's; first at 1: got nan, expected 2.0"
    ok, message, _ = cupy_suite.gemm_verdict([1.0, 2.0], [1.0, 2.0 + 1e-4], [1.0, 1.0], 256)
    assert not ok and message.endswith("(as large as TF32 or fp16 arithmetic gives)")
    ok, _, metrics = cupy_suite.gemm_verdict([1.0, 2.0], [1.0, 2.0 + 1e-7], [1.0, 1.0], 256)
    assert ok and metrics["max_rel_error"] == pytest.approx(1e-7)
    env: Dict[str, str] = {"CUPY_TF32": "1"}
    assert cupy_suite.set_tf32_env(env) == {"env.CUPY_TF32.user": "1", "env.CUPY_TF32": "0"} and env["CUPY_TF32"] == "0"
    assert 'extern "C" __global__ void cudadoctor_vadd' in cupy_suite.VADD_SOURCE


# --------------------------------------------------------------------------- the tolerances, measured


def _tf32(x: Any) -> Any:
    import torch

    bits = x.detach().float().contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32).to(x.dtype)


def test_gemm_tolerance_passes_fp32_and_catches_tf32() -> None:
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(128, fw.GEMM_K, generator=gen)
    b = torch.randn(fw.GEMM_K, 128, generator=gen)
    a64, b64 = a.double(), b.double()
    ref, scale = a64 @ b64, a64.abs() @ b64.abs()
    fp32 = fw.scaled_max_error((a @ b).double(), ref, scale)
    tf32 = fw.scaled_max_error(_tf32(a).double() @ _tf32(b).double(), ref, scale)
    assert fp32 < fw.GEMM_TOL / 10 < fw.GEMM_TOL < tf32


def _torch_mlp(dtype: Any, tf32: bool = False) -> Dict[str, Any]:
    import torch

    t = {k: torch.tensor(v, dtype=torch.float32).to(dtype) for k, v in fw.mlp_inputs().items()}
    params = [t[k].clone().requires_grad_(True) for k in fw.MLP_PARAMS]
    w1, b1, w2, b2 = params

    def mm(x: Any, y: Any) -> Any:
        if tf32:  # inputs rounded to TF32 on the way forward, gradients straight through
            x, y = x + (_tf32(x) - x).detach(), y + (_tf32(y) - y).detach()
        return x @ y

    loss = ((mm(torch.tanh(mm(t["x"], w1) + b1), w2) + b2 - t["y"]) ** 2).mean()
    loss.backward()
    out: Dict[str, Any] = {"loss": float(loss.detach())}
    out.update({k: p.grad for k, p in zip(fw.MLP_PARAMS, params)})
    return out


def test_gradient_tolerance_passes_fp32_and_catches_tf32() -> None:
    torch = pytest.importorskip("torch")
    ref = _torch_mlp(torch.float64)
    ok, _, metrics = fw.compare_tensors("fp32", _torch_mlp(torch.float32), ref)
    assert ok and metrics["max_rel_error"] < fw.GRAD_TOL / 100
    ok, _, metrics = fw.compare_tensors("tf32", _torch_mlp(torch.float64, tf32=True), ref)
    assert not ok and metrics["max_rel_error"] > fw.GRAD_TOL


# --------------------------------------------------------------------------- with the framework


@pytest.mark.parametrize("suite", ["jax", "tensorflow"])
def test_the_comparison_runs_for_real_on_the_cpu_device(suite: str) -> None:
    pytest.importorskip(suite)
    result, code, _ = run_path(suite, "--device", "cpu", timeout=600)
    assert result["status"] == "passed", result
    assert all(t["metrics"]["max_rel_error"] <= fw.GRAD_TOL for t in result["tests"])


def nvidia_gpu_visible() -> bool:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        proc = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and "GPU " in proc.stdout


@pytest.mark.gpu
@pytest.mark.parametrize("suite", ["jax", "cupy", "tensorflow"])
@pytest.mark.parametrize("tier", ["quick", "standard"])
def test_a_framework_suite_passes_on_a_real_gpu(suite: str, tier: str) -> None:
    pytest.importorskip(FRAMEWORK_SUITES[suite])
    if not nvidia_gpu_visible():
        pytest.skip("no NVIDIA GPU visible")
    result, code, stderr = run_path(suite, "--tier", tier, "--expect-gpu", timeout=600)
    assert result["status"] == "passed", (result, stderr[-3000:])
    gpu_tests = [t for t in result["tests"] if t["gpu"] is not None]
    assert gpu_tests and all(t["status"] == "passed" for t in gpu_tests)
    assert any(k.startswith("gpu.0.") for k in result["details"])


@pytest.mark.gpu
def test_the_julia_suite_passes_on_a_real_gpu() -> None:
    if shutil.which("julia") is None:
        pytest.skip("julia is not installed")
    if not nvidia_gpu_visible():
        pytest.skip("no NVIDIA GPU visible")
    result, _, stderr = run_path("julia", "--expect-gpu", "--timeout", "580", timeout=600)
    if result["status"] == "skipped":
        pytest.skip(result["reason"])  # CUDA.jl not in the active project
    assert result["status"] == "passed", (result, stderr[-3000:])


# --------------------------------------------------------------------------- no driver


def test_no_driver_texts() -> None:
    assert fw.says_no_driver("CUDA driver not found") and fw.says_no_driver("libcuda.so.1: cannot open shared object")
    assert not fw.says_no_driver("CUDA driver version is insufficient for CUDA runtime version")
    assert fw.says_no_device("CUDA error: no CUDA-capable device was detected (code 100, ERROR_NO_DEVICE)")


def test_julia_reads_the_reason_from_cuda_jl_s_log_when_functional_is_false() -> None:
    stderr = ("┌ Error: Could not initialize CUDA\n│   exception =\n│    CUDA error: unknown error (code 999, "
              "ERROR_UNKNOWN)\n└ @ CUDA ~/.julia/packages/CUDA/x/src/initialization.jl:64\n")
    out = julia_suite.interpret(kv("cudadoctor:cuda_jl=loaded\ncudadoctor:functional=false"), 0, stderr)
    (test,) = out.tests
    assert test["status"] == "failed" and test["cuda_error"] == "CUDA_ERROR_UNKNOWN"
    assert test["message"] == ("CUDA.jl is not functional: Error: Could not initialize CUDA; CUDA error: unknown "
                               "error (code 999, ERROR_UNKNOWN)")
    assert "Could not initialize CUDA" in out.details["julia_stderr_tail"]
    assert julia_suite.cuda_error_name("CuError(CUDA_ERROR_INVALID_PTX)") == "CUDA_ERROR_INVALID_PTX"
    assert julia_suite.cuda_error_name("nothing") is None


def test_cupy_without_a_driver_is_skipped(tmp_path: Path) -> None:
    fake_cupy(tmp_path, "raise CUDARuntimeError('cudaErrorInsufficientDriver: CUDA driver version is insufficient "
                        "for CUDA runtime version')")
    init = tmp_path / "cupy" / "__init__.py"
    init.write_text(init.read_text().replace("driverGetVersion=lambda: 12040", "driverGetVersion=lambda: 0"))
    result, code, _ = run_path("cupy", pythonpath=tmp_path)
    assert (result["status"], code) == ("skipped", 0)
    assert result["reason"].startswith("no NVIDIA driver: cupy's driverGetVersion() is 0")
    result, _, _ = run_path("cupy", "--expect-gpu", pythonpath=tmp_path)
    assert result["status"] == "failed"


def test_jax_without_a_driver_is_skipped(tmp_path: Path) -> None:
    fake_jax(tmp_path, """
        __version__ = "0.4.30"
        def devices(backend=None):
            raise RuntimeError(f"Unknown backend {backend}")
    """, backend_errors={"cuda": "INTERNAL: libcuda.so.1: cannot open shared object file: No such file or directory"})
    result, _, _ = run_path("jax", pythonpath=tmp_path)
    assert result["status"] == "skipped" and "libcuda.so.1: cannot open" in result["reason"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_julia_dies_with_the_suite_process_when_the_runner_kills_it(tmp_path: Path) -> None:
    """The runner kills the suite's process group on its timeout; julia, in its own session,
    must go too."""
    from cudadoctor.smoke.runner import run_suite

    bindir = fake_julia(tmp_path, "cudadoctor:julia_version=1.10.4", extra=f"echo $$ > '{tmp_path}/pid'\nexec sleep 60")
    env_path = os.environ["PATH"]
    os.environ["PATH"] = os.pathsep.join(str(p) for p in [bindir] + system_dirs())
    try:  # the suite thinks it has 60 s; the runner gives it 3
        result = run_suite("julia", path=None, timeout=3.0, extra_args=["--timeout", "60"])
    finally:
        os.environ["PATH"] = env_path
    assert result.status == "timeout"
    pid = int((tmp_path / "pid").read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        pytest.fail("julia outlived the suite process")
