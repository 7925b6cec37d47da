"""The torch smoke suite: its pure comparison logic, every test function on the CPU device (the
same code that runs on a GPU, against the same float64 references), the /proc/self/maps reader,
and the suite as a script (one JSON line; skipped on this CPU-only build). Real-GPU runs are
marked ``gpu``."""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
from typing import Any, Dict, List, Tuple

import pytest

torch = pytest.importorskip("torch")

from cudadoctor.smoke.suites import _compare, _libmaps, _protocol  # noqa: E402
from cudadoctor.smoke.suites import _torch_dist as dist  # noqa: E402
from cudadoctor.smoke.suites import _torch_perf as perf  # noqa: E402
from cudadoctor.smoke.suites import _torch_tests as tt  # noqa: E402
from cudadoctor.smoke import suite_path  # noqa: E402
from cudadoctor.smoke.suites import torch_suite as ts  # noqa: E402

SUITE = suite_path("torch")
CPU_BUILD = torch.version.cuda is None
HAVE_GPU = (not CPU_BUILD) and torch.cuda.is_available()


def run_case(fn: Any, *args: Any) -> _protocol.TestCase:
    """Run a test function the way ``rec.test`` does; the finished case."""
    rec = _protocol.Recorder("torch")
    with rec.test("t") as case:
        fn(case, *args)
    return rec.tests[0]


# --------------------------------------------------------------------------- matmul arithmetic


def test_matmul_error_is_zero_for_the_exact_product_and_scaled_by_abs_products() -> None:
    a = torch.tensor([[1.0, -2.0], [3.0, 4.0]])
    b = torch.tensor([[2.0, 1.0], [1.0, -1.0]])
    assert _compare.matmul_error(a @ b, a, b) == 0.0
    c = (a @ b).clone()
    c[0, 0] += 0.4  # |A||B|[0,0] = 1*2 + 2*1 = 4
    assert _compare.matmul_error(c, a, b) == pytest.approx(0.1)


def _tf32(x: Any) -> Any:
    """fp32 truncated to TF32's 10 mantissa bits (what a tensor core does to its inputs)."""
    return (x.view(torch.int32) & ~0x1FFF).view(torch.float32)


def test_tolerances_separate_fp32_from_tf32() -> None:
    """A GEMM run in TF32 instead of fp32 fails the fp32 tolerance and passes the TF32 one."""
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(256, _compare.MATMUL_K, generator=gen)
    b = torch.randn(_compare.MATMUL_K, 256, generator=gen)
    emulated = _tf32(a).double() @ _tf32(b).double()
    err = _compare.matmul_error(emulated, a, b)
    assert not _compare.within(err, _compare.MATMUL_TOL["fp32"])
    assert _compare.within(err, _compare.MATMUL_TOL["tf32"])
    assert _compare.matmul_error(a @ b, a, b) < _compare.MATMUL_TOL["fp32"] / 10
    tols = _compare.MATMUL_TOL
    assert tols["fp32"] < tols["tf32"] and tols["fp16"] < tols["bf16"]


def test_rel_error_worst_and_verdict_edge_cases() -> None:
    x = torch.tensor([1.0, 2.0])
    assert _compare.rel_error(x, x) == 0.0
    assert _compare.rel_error(torch.tensor([1.0, 2.0, 3.0]), x) == math.inf
    assert _compare.rel_error(torch.zeros(2), torch.zeros(2)) == 0.0
    assert _compare.rel_error(torch.ones(2), torch.zeros(2)) == math.inf
    assert math.isnan(_compare.rel_error(torch.tensor([float("nan"), 1.0]), x))
    assert _compare.worst({"a": 1e-7, "b": 3e-5, "c": 2e-6}) == ("b", 3e-5)
    name, value = _compare.worst({"a": 1.0, "b": float("nan"), "c": 5.0})
    assert name == "b" and math.isnan(value)
    assert not _compare.within(float("nan"), 1.0) and not _compare.within(math.inf, 1.0)
    ok, said = _compare.verdict("x", 2e-3, 1e-3)
    assert not ok and "2.00e-03 > tolerance 1e-03" in said


# --------------------------------------------------------------------------- bandwidth arithmetic


def test_copy_and_allreduce_bandwidth_definitions() -> None:
    m = _compare.copy_bandwidth(256 << 20, 0.1, 10)  # 10 copies of 256 MiB in 0.1 s
    assert m["time_s"] == pytest.approx(0.01)
    assert m["gbs"] == pytest.approx((256 << 20) / 0.01 / 1e9)
    assert _compare.copy_bandwidth(1, 0.0, 0)["gbs"] == 0.0
    assert _compare.gbs(1e9, 0.5) == 2.0
    # nccl-tests: busbw = algbw * 2 (n - 1) / n
    assert _compare.allreduce_bandwidth(int(1e9), 0.01, 2) == (100.0, 100.0)
    assert _compare.allreduce_bandwidth(int(1e9), 0.01, 8) == pytest.approx((100.0, 175.0))
    assert _compare.allreduce_bandwidth(int(1e9), 0.01, 1) == (100.0, 0.0)


# --------------------------------------------------------------------------- enumeration


def test_parse_expect() -> None:
    e = _compare.parse_expect("count=2;names=NVIDIA H200|NVIDIA H200;uuids=GPU-a|GPU-b")
    assert (e.count, e.names, e.uuids) == (2, ["NVIDIA H200", "NVIDIA H200"], ["GPU-a", "GPU-b"])
    assert _compare.parse_expect("names=A|B").count == 2
    assert _compare.parse_expect("").count is None
    for bad in ("count=two", "gpus=2", "count"):
        with pytest.raises(ValueError):
            _compare.parse_expect(bad)


@pytest.mark.parametrize("names, uuids, expect, visible, ok, said", [
    (["NVIDIA H200"] * 2, ["aa", "bb"], "count=2;names=NVIDIA H200|NVIDIA H200;uuids=GPU-BB|GPU-AA", None, True,
     "matched by UUID"),
    (["NVIDIA L4", "NVIDIA A100"], ["", ""], "count=2;names=NVIDIA A100|NVIDIA L4", None, True, "names agree"),
    (["NVIDIA A100"], ["x"], "count=2;names=NVIDIA A100|NVIDIA L4", None, False, "the counts differ"),
    (["NVIDIA A100"], ["x"], "count=2;names=NVIDIA A100|NVIDIA L4", "1", True, "names agree"),
    (["NVIDIA T4"], ["x"], "count=2;names=NVIDIA A100|NVIDIA L4", "0", False, "no NVML GPU matches NVIDIA T4"),
    (["NVIDIA A100"] * 3, ["", "", ""], "count=2", "0,1,2", False, "more GPUs than exist"),
    (["NVIDIA A100-SXM4-40GB MIG 1g.5gb"], ["MIG-1"], "count=1;names=NVIDIA A100-SXM4-40GB", None, True,
     "names agree"),
    (["NVIDIA A100"], [""], "count=1", None, True, "no names"),
])
def test_compare_enumeration(names: List[str], uuids: List[str], expect: str, visible: Any, ok: bool,
                             said: str) -> None:
    got_ok, message = _compare.compare_enumeration(names, uuids, _compare.parse_expect(expect), visible)
    assert got_ok is ok, message
    assert said in message


def test_p2p_message() -> None:
    assert _compare.p2p_message([[None, True], [False, None]]) == "0->1 yes, 1->0 no"
    assert _compare.p2p_message([[None]]) == "one GPU: nothing to compare"


# --------------------------------------------------------------------------- stress verdict


def test_stress_verdict() -> None:
    before = {"temperature_c": 40.0, "sm_clock_mhz": 1980.0, "ecc_corrected": 1.0, "ecc_uncorrected": 0.0}
    after = {"temperature_c": 71.0, "sm_clock_mhz": 1755.0, "ecc_corrected": 3.0, "ecc_uncorrected": 0.0}
    ok, said = _compare.stress_verdict(0, before, after, 0x4 | 0x1)
    assert ok
    assert "2 new corrected ECC errors" in said and "temperature 40->71 C" in said
    assert "SwPowerCap" in said and "GpuIdle" not in said and "hardware slowdown" not in said
    ok, said = _compare.stress_verdict(0, before, dict(after, ecc_uncorrected=1.0), 0x40)
    assert not ok and "1 new uncorrected ECC errors" in said and "HwThermalSlowdown (hardware slowdown)" in said
    ok, said = _compare.stress_verdict(12, {}, {}, 0)
    assert not ok and "12 elements differed" in said and "not watched" in said
    assert _compare.throttle_names(0x8 | 0x1000) == ["HwSlowdown", "0x1000"]


# --------------------------------------------------------------------------- CUDA initialisation


@pytest.mark.parametrize("text, name", [
    ("RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU",
     "cudaErrorInsufficientDriver"),
    ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040).",
     "cudaErrorInsufficientDriver"),
    ("CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
     "calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility was "
     "attempted on non supported HW", "cudaErrorCompatNotSupportedOnDevice"),
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device",
     "cudaErrorNoKernelImageForDevice"),
    ("RuntimeError: No CUDA GPUs are available", "cudaErrorNoDevice"),
    ("something else", None),
])
def test_decode_init_error(text: str, name: Any) -> None:
    assert ts.decode_init_error(text) == name


def test_classify_unavailable() -> None:
    no_driver = "RuntimeError: Found no NVIDIA driver on your system."
    status, reason = ts.classify_unavailable(no_driver, None, None)
    assert status == "skipped" and reason.startswith("torch.cuda.is_available() is False: RuntimeError: Found no")
    status, reason = ts.classify_unavailable(no_driver, None, 2)
    assert status == "failed" and "NVML sees 2 GPUs but torch cannot use them" in reason
    assert ts.classify_unavailable("x", "", 4) == (
        "skipped", "torch.cuda.is_available() is False: CUDA_VISIBLE_DEVICES='' hides every GPU")
    status, reason = ts.classify_unavailable("Error 803: system has unsupported display driver / cuda driver "
                                             "combination", None, None)
    assert status == "failed" and reason.startswith("CUDA cannot initialise: Error 803")
    assert ts.classify_unavailable("", None, None)[0] == "skipped"
    assert ts.classify_unavailable("", "7", 1) == (
        "failed", "NVML sees 1 GPU but torch cannot use them (CUDA_VISIBLE_DEVICES='7'): torch reports no CUDA device")


def test_pop_expect() -> None:
    assert ts.pop_expect(["--tier", "quick", "--expect", "count=1", "--expect-gpu", "--gpus", "0"]) == (
        ["--tier", "quick", "--gpus", "0"], "count=1", True)
    assert ts.pop_expect(["--expect=names=A|B"]) == ([], "names=A|B", False)
    assert ts.pop_expect(["--expect"]) == ([], "", False)


def test_nvml_expect_prefers_the_parents_facts() -> None:
    expect, why = ts.nvml_expect("count=1;names=NVIDIA L4")
    assert expect is not None and expect.names == ["NVIDIA L4"] and expect.source == "--expect" and not why


# --------------------------------------------------------------------------- /proc/self/maps

MAPS = """\
7f0000000000-7f0000001000 r--p 00000000 fe:00 1 /opt/env/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9
7f0000001000-7f0000002000 r-xp 00001000 fe:00 1 /opt/env/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9
7f0000002000-7f0000003000 r--p 00000000 fe:00 2 /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15
7f0000003000-7f0000004000 r--p 00000000 fe:00 3 /opt/my env/lib/libcudart.so.12.4.127 (deleted)
7f0000004000-7f0000005000 rw-p 00000000 00:00 0 [heap]
7f0000005000-7f0000006000 rw-p 00000000 00:00 0
7f0000006000-7f0000007000 r--p 00000000 fe:00 4 /usr/lib/x86_64-linux-gnu/libc.so.6
"""


def test_mapped_paths_and_names() -> None:
    paths = _libmaps.mapped_paths(MAPS)
    assert paths == ["/opt/env/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
                     "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15", "/opt/my env/lib/libcudart.so.12.4.127",
                     "/usr/lib/x86_64-linux-gnu/libc.so.6"]
    libs = _libmaps.cuda_libraries(paths)
    assert sorted(libs) == ["libcuda", "libcudart", "libcudnn"]
    assert libs["libcuda"] == [("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15", "550.54.15")]
    assert _libmaps.split_name("/t/lib/libcudart-9335f6a2.so.12") == ("libcudart", "12")
    assert _libmaps.split_name("/x/libnvrtc-builtins.so.12.4") == ("libnvrtc-builtins", "12.4")
    assert _libmaps.split_name("/x/libcudnn_engines_precompiled.so.9.1.0") == ("libcudnn_engines_precompiled", "9.1.0")
    assert _libmaps.split_name("/x/libcublasLt.so") == ("libcublasLt", "")
    assert _libmaps.split_name("/x/python3.11") is None


def _touch(path: Any, text: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_owners_from_record_conda_and_path(tmp_path: Any) -> None:
    site = tmp_path / "site-packages"
    _touch(site / "nvidia/cudnn/lib/libcudnn.so.9")
    _touch(site / "nvidia/cudnn/lib/libcudnn_ops.so.9")
    _touch(site / "nvidia_cudnn_cu12-9.1.0.70.dist-info/METADATA", "Metadata-Version: 2.1\nName: nvidia-cudnn-cu12\n"
           "Version: 9.1.0.70\n\nbody\n")
    _touch(site / "nvidia_cudnn_cu12-9.1.0.70.dist-info/RECORD",
           "nvidia/cudnn/lib/libcudnn.so.9,sha256=x,1\nnvidia/cudnn/lib/libcudnn_ops.so.9,sha256=y,2\n")
    _touch(site / "nvidia/nccl/lib/libnccl.so.2")  # no RECORD claims it: guessed from the path
    conda = tmp_path / "conda"
    _touch(conda / "lib/libcublas.so.12.6.4.1")
    _touch(conda / "conda-meta/libcublas-12.6.4.1-h0.json", json.dumps({
        "name": "libcublas", "version": "12.6.4.1", "build": "h0", "files": ["lib/libcublas.so.12.6.4.1"],
        "channel": "https://conda.anaconda.org/conda-forge/linux-64"}))
    maps = "".join(f"7f00-7f01 r--p 00000000 fe:00 1 {p}\n" for p in (
        site / "nvidia/cudnn/lib/libcudnn.so.9", site / "nvidia/cudnn/lib/libcudnn_ops.so.9",
        site / "nvidia/nccl/lib/libnccl.so.2", conda / "lib/libcublas.so.12.6.4.1"))
    details, dups = _libmaps.loaded_details(maps, site_dirs=[str(site)])
    assert not dups
    assert details["lib.libcudnn.dist"] == "nvidia-cudnn-cu12 9.1.0.70"
    assert details["lib.libcudnn_ops.dist"] == "nvidia-cudnn-cu12 9.1.0.70"
    assert details["lib.libcudnn.version"] == "9"
    assert details["lib.libnccl.dist"] == "nvidia-nccl-* (from the path)"
    assert details["lib.libcublas.dist"] == "conda libcublas 12.6.4.1 h0 (linux-64)"
    assert details["lib.libcublas"] == str(conda / "lib/libcublas.so.12.6.4.1")


def test_duplicates_are_named() -> None:
    maps = ("1-2 r--p 0 fe:00 1 /a/lib/libcudart.so.12\n"
            "1-2 r--p 0 fe:00 2 /b/lib/libcudart.so.11.0\n")
    details, dups = _libmaps.loaded_details(maps, site_dirs=[])
    assert dups == ["libcudart"]
    assert details["lib.libcudart"] == "/a/lib/libcudart.so.12; /b/lib/libcudart.so.11.0"
    assert details["lib.libcudart.version"] == "12; 11.0"


def test_this_process_maps_show_libtorch_and_its_wheel() -> None:
    details, _ = _libmaps.loaded_details(_libmaps.read_maps())
    assert details["lib.libtorch_cpu"].endswith("libtorch_cpu.so")
    assert details["lib.libtorch_cpu.dist"] == f"torch {torch.__version__}"
    case = run_case(ts.loaded_libraries, {})
    assert case.status == "passed" and "libtorch_cpu" in (case.message or "")


# --------------------------------------------------------------------------- tests on the CPU device


@pytest.mark.parametrize("kind", ["fp32", "tf32", "fp16", "bf16"])
def test_matmul_on_cpu(kind: str) -> None:
    case = run_case(tt.matmul, "cpu", kind)
    assert case.status == "passed", case.message or case.error
    assert case.metrics["max_rel_error"] < case.metrics["tolerance"] / 5
    assert case.metrics["tolerance"] == _compare.MATMUL_TOL[kind]


def test_matmul_fails_beyond_its_tolerance(monkeypatch: Any) -> None:
    monkeypatch.setitem(_compare.MATMUL_TOL, "bf16", 1e-6)
    case = run_case(tt.matmul, "cpu", "bf16")
    assert case.status == "failed" and "> tolerance 1e-06" in (case.message or "")


@pytest.mark.parametrize("which", ["mlp", "conv"])
def test_autograd_on_cpu_against_float64(which: str, monkeypatch: Any) -> None:
    case = run_case(tt.autograd, "cpu", which)
    assert case.status == "passed", case.message
    assert case.metrics["tensors"] == 8 and case.metrics["max_rel_error"] < 1e-5
    monkeypatch.setitem(_compare.GRAD_TOL, which, 1e-9)  # fp32 cannot meet this: the failure path
    assert run_case(tt.autograd, "cpu", which).status == "failed"


def test_autograd_catches_a_wrong_gradient() -> None:
    gen = torch.Generator().manual_seed(42)
    model: Any
    model, x = tt.make_mlp(gen)
    w = torch.randn(x.shape[0], 10, dtype=torch.float64)
    ref = tt.forward_backward(model, x, w)
    with torch.no_grad():
        model[0].weight[0, 0] += 0.5  # a "kernel" that computes something else
    got = tt.forward_backward(model, x, w)
    assert _compare.rel_error(got["grad_0.weight"], ref["grad_0.weight"]) > 100 * _compare.GRAD_TOL["mlp"]


def test_gradcheck_cudnn_amp_allocation_on_cpu() -> None:
    for fn, args in ((tt.gradcheck, ()), (tt.cudnn_conv, ({},)), (tt.amp_step, ()), (tt.allocation, (1 << 20,))):
        case = run_case(fn, "cpu", *args)
        assert case.status == "passed", (fn.__name__, case.message, case.error)
    amp = run_case(tt.amp_step, "cpu")
    assert amp.metrics["scale"] == 1024.0 and amp.metrics["max_param_change"] > 0
    assert "bfloat16" in (amp.message or "")


def test_matmul_support_by_capability(monkeypatch: Any) -> None:
    assert tt.matmul_support("cpu", "bf16") is None
    monkeypatch.setattr(tt, "capability", lambda device: (7, 5))
    monkeypatch.setattr(tt, "is_cuda", lambda device: True)
    assert "needs compute capability 8.0+" in (tt.matmul_support("cuda:0", "bf16") or "")
    assert tt.matmul_support("cuda:0", "fp16") is None


@pytest.mark.parametrize("direction", ["h2d", "d2h", "d2d"])
def test_bandwidth_on_cpu(direction: str) -> None:
    case = run_case(perf.bandwidth, "cpu", direction, 2 << 20, 3)
    assert case.status == "passed", case.error
    m = case.metrics
    assert m["bytes"] == 2 << 20 and m["iterations"] == 3
    assert m["gbs"] == pytest.approx(m["bytes"] / m["time_s"] / 1e9)
    assert ("rw_gbs" in m) == (direction == "d2d")
    assert "bytes per copy / time per copy" in (case.message or "")


def test_stress_on_cpu_and_watch_without_nvml() -> None:
    (result,) = perf.stress(["cpu"], 0.2, None, size=(64, "fp32"))
    assert result["status"] == "passed", result["message"]
    assert result["metrics"]["iterations"] > 0 and result["metrics"]["mismatched_elements"] == 0
    watch = perf.Watch(["GPU-00000000-0000-0000-0000-000000000000"])
    if watch.error:  # no NVML library here
        assert watch.sample(0) == {}


class FakeClock:
    """A clock that moves only when told: the GEMM and the comparison each take a known time."""

    def __init__(self) -> None:
        self.t = 0.0

    def mark(self) -> float:
        return self.t

    def seconds(self, begin: float, end: float) -> float:
        return end - begin

    def now(self) -> float:
        return self.t


def test_stress_rate_counts_the_gemms_not_their_verification(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    gemm_s, verify_s, n = 0.25, 0.75, 64  # the comparison takes three times the GEMM
    multiply, verify = perf._Gemm.multiply, perf._Gemm.verify

    def slow_multiply(self: Any) -> Any:
        clock.t += gemm_s
        return multiply(self)

    def slow_verify(self: Any, c: Any) -> None:
        clock.t += verify_s
        verify(self, c)

    monkeypatch.setattr(perf._Gemm, "multiply", slow_multiply)
    monkeypatch.setattr(perf._Gemm, "verify", slow_verify)
    (result,) = perf.stress(["cpu"], 10.0, None, size=(n, "fp32"), clock=lambda device: clock, now=clock.now)
    m = result["metrics"]
    assert result["status"] == "passed", result["message"]
    assert m["iterations"] >= 10 and m["seconds"] == pytest.approx(m["iterations"] * (gemm_s + verify_s))
    assert m["gemm_seconds"] == pytest.approx(m["iterations"] * gemm_s)
    assert m["tflops"] == pytest.approx(2 * n ** 3 / gemm_s / 1e12)  # the GEMM's rate, comparison left out
    assert m["tflops_with_checks"] == pytest.approx(2 * n ** 3 / (gemm_s + verify_s) / 1e12)
    assert f"TFLOPS over the GEMMs' own {m['gemm_seconds']:.1f} s" in result["message"]


def test_allreduce_across_two_spawned_cpu_ranks() -> None:
    result = dist.allreduce([None, None], 1 << 20, 3, 60.0, backend="gloo")
    assert result["status"] == "passed", result["message"]
    m = result["metrics"]
    assert m["ranks"] == 2 and m["mismatched_elements"] == 0
    assert m["busbw_gbs"] == pytest.approx(m["algbw_gbs"])  # 2 (n - 1) / n = 1 for n = 2


def test_allreduce_timeout_kills_the_workers() -> None:
    result = dist.allreduce([None, None], 1 << 20, 3, 0.3, backend="gloo")
    assert result["status"] == "failed" and "timed out after 0.3 s" in result["message"]


def test_allreduce_summary_of_a_crashed_rank() -> None:
    got = {0: {"rank": 0, "wrong": 0, "time_s": 0.01}}
    result = dist._summarize([0, 1], "nccl", 1 << 20, 3, 60.0, got, [0, -11], False)
    assert result["status"] == "failed" and "rank 1: exited with code -11 without a result" in result["message"]
    got = {r: {"rank": r, "wrong": 5 * r, "time_s": 0.01 * (r + 1)} for r in range(2)}
    result = dist._summarize([0, 1], "nccl", 1 << 20, 3, 60.0, got, [0, 0], False)
    assert result["status"] == "failed" and "5 wrong elements" in result["message"]
    assert result["metrics"]["time_s"] == 0.02  # the slowest rank


# --------------------------------------------------------------------------- the whole suite


def _in_process(*argv: str) -> Tuple[int, Dict[str, Any]]:
    out = io.StringIO()
    code = ts.main(list(argv), stream=out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    return code, json.loads(lines[0])


def test_suite_on_the_cpu_device_runs_every_quick_test() -> None:
    code, result = _in_process("--device", "cpu", "--expect", "count=1;names=X", "--expect-gpu")
    assert code == 0 and result["status"] == "passed", result
    names = [t["name"] for t in result["tests"]]
    assert names == ["allocation", "matmul_fp32", "matmul_tf32", "matmul_fp16", "matmul_bf16", "autograd_mlp",
                     "autograd_conv", "amp", "cudnn_conv", "bandwidth_h2d", "bandwidth_d2h",
                     "bandwidth_d2d", "loaded_libraries"]  # gradcheck: standard tier
    assert all(t["duration_s"] >= 0 and t["gpu"] is None for t in result["tests"])
    assert result["framework"] == f"torch {torch.__version__}"
    assert result["details"]["lib.libtorch_cpu.dist"] == f"torch {torch.__version__}"


def test_suite_skips_tests_when_the_budget_is_spent() -> None:
    _, result = _in_process("--device", "cpu", "--timeout", "1")
    assert all(t["status"] == "skipped" for t in result["tests"]) and result["status"] == "skipped"
    assert "time budget" in result["reason"]


@pytest.mark.skipif(not CPU_BUILD, reason="needs a CPU-only torch build")
def test_suite_by_path_is_skipped_on_a_cpu_only_build() -> None:
    proc = subprocess.run([sys.executable, SUITE], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and len(lines) == 1, proc.stdout + proc.stderr[-2000:]
    result = json.loads(lines[0])
    assert result["status"] == "skipped" and result["suite"] == "torch" and result["protocol"] == 1
    assert result["reason"] == f"torch {torch.__version__} is a CPU-only build"
    assert result["framework"] == f"torch {torch.__version__}"


# --------------------------------------------------------------------------- real GPUs


def _run_script(*argv: str, timeout: float = 300) -> Dict[str, Any]:
    proc = subprocess.run([sys.executable, SUITE, *argv], capture_output=True, text=True, timeout=timeout)
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout + proc.stderr[-4000:]
    result: Dict[str, Any] = json.loads(lines[0])
    assert proc.returncode == (0 if result["status"] in ("passed", "skipped") else 1)
    return result


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA build of torch with a usable GPU here")
def test_gpu_quick_tier_passes() -> None:
    result = _run_script("--tier", "quick", "--timeout", "120", "--expect-gpu")
    assert result["status"] == "passed", json.dumps(result, indent=1)
    by_name = {(t["name"], t["gpu"]): t for t in result["tests"]}
    assert by_name[("device_enumeration", None)]["status"] in ("passed", "skipped")
    for name in ("matmul_fp32", "autograd_mlp", "autograd_conv", "cudnn_conv", "amp"):
        assert by_name[(name, 0)]["status"] == "passed"
    assert ("gradcheck", 0) not in by_name  # the standard tier's
    assert by_name[("bandwidth_d2d", 0)]["metrics"]["gbs"] > 0
    details = result["details"]
    assert "libcudart" in details.get("lib.libcudart", "") or "libcudart" in json.dumps(details)
    assert details["gpu.0.name"] == torch.cuda.get_device_name(0)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA build of torch with a usable GPU here")
def test_gpu_standard_tier_passes() -> None:
    result = _run_script("--tier", "standard", "--timeout", "280", timeout=300)
    assert result["status"] == "passed", json.dumps(result, indent=1)
    names = {t["name"] for t in result["tests"]}
    assert {"p2p_matrix", "nccl_allreduce"} <= names


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA build of torch with a usable GPU here")
def test_gpu_stress_tier_short_run() -> None:
    result = _run_script("--tier", "stress", "--duration", "5", "--timeout", "200", timeout=240)
    assert result["status"] == "passed", json.dumps(result, indent=1)
    stress = [t for t in result["tests"] if t["name"] == "stress_gemm"]
    assert stress and all(t["metrics"]["mismatched_elements"] == 0 and t["metrics"]["tflops"] > 0 for t in stress)
