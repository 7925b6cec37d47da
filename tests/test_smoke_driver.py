"""The driver smoke suite (cudadoctor/smoke/suites/driver_suite.py) without a GPU, and with one.

Without a GPU: the CUresult table against cuda.h, the PTX by structure and (when ptxas is
installed) by assembling it, the verification and bandwidth arithmetic, the script on this
machine (no driver: one clean JSON line), and the whole suite against :class:`FakeCuda`, an
emulated libcuda whose kernels are Python and whose device memory is host memory, so every
host-side code path (bindings, launches, verification, cleanup, fault handling) runs here.
What only a GPU proves (the driver JIT-compiles the PTX and the kernels compute what the host
expects) is in the tests marked ``gpu``.
"""

from __future__ import annotations

import array
import ctypes
import io
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import pytest

from cudadoctor.smoke.suites import _protocol
from cudadoctor.smoke.suites import driver_suite as ds

CUDA_H = "/usr/local/cuda-13.0/include/cuda.h"
PTXAS = shutil.which("ptxas") or "/usr/local/cuda-13.0/bin/ptxas"
SUITE_PATH = os.path.abspath(ds.__file__)


def _libcuda_loads() -> bool:
    try:
        ds.load_libcuda()
    except OSError:
        return False
    return True


HAVE_LIBCUDA = _libcuda_loads()

# --------------------------------------------------------------------------- the CUresult table


def parse_curesult_enum(header: str) -> Dict[int, str]:
    """The CUresult enum of a cuda.h: value -> name (every entry, checked for duplicates)."""
    body = re.search(r"typedef enum cudaError_enum \{(.*?)\}\s*CUresult;", header, re.S)
    assert body, "no CUresult enum in the header"
    text = re.sub(r"/\*.*?\*/", "", body.group(1), flags=re.S)
    out: Dict[int, str] = {}
    for name, value in re.findall(r"\b(CUDA_[A-Z0-9_]+)\s*=\s*(\d+)", text):
        assert int(value) not in out, f"{value} twice"
        out[int(value)] = name
    return out


@pytest.mark.skipif(not os.path.exists(CUDA_H), reason=f"{CUDA_H} is not installed")
def test_error_table_is_cuda_h_13_0() -> None:
    with open(CUDA_H, encoding="utf-8") as f:
        header = f.read()
    assert "#define CUDA_VERSION 13000" in header
    assert ds.CURESULT_NAMES == parse_curesult_enum(header)


@pytest.mark.parametrize("code, name", [
    (0, "CUDA_SUCCESS"), (3, "CUDA_ERROR_NOT_INITIALIZED"), (34, "CUDA_ERROR_STUB_LIBRARY"),
    (100, "CUDA_ERROR_NO_DEVICE"), (218, "CUDA_ERROR_INVALID_PTX"), (222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"),
    (700, "CUDA_ERROR_ILLEGAL_ADDRESS"), (803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"),
    (804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"), (999, "CUDA_ERROR_UNKNOWN"),
])
def test_error_names(code: int, name: str) -> None:
    assert ds.curesult_name(code) == name


def test_unknown_code_and_hints() -> None:
    assert ds.curesult_name(12345) == "CUresult 12345"
    assert set(ds.CURESULT_HINTS) <= set(ds.CURESULT_NAMES.values())
    assert ds.STICKY_ERRORS <= set(ds.CURESULT_NAMES.values())


def test_cuda_error_text_decodes_to_its_name() -> None:
    exc = ds.CudaError("cuInit", 803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver")
    assert str(exc).startswith("cuInit returned CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803): ")
    assert "reboot" in str(exc)  # the hint
    assert _protocol.decode_cuda_error(str(exc)) == "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"


# --------------------------------------------------------------------------- the PTX

SPECIAL_REGISTERS = {"tid", "ntid", "ctaid", "nctaid"}


def ptx_entries(ptx: str) -> Dict[str, Tuple[List[str], str]]:
    """entry name -> (parameter names, body)."""
    out: Dict[str, Tuple[List[str], str]] = {}
    for m in re.finditer(r"\.visible \.entry (\w+)\((.*?)\)\s*\{(.*?)\n\}", ptx, re.S):
        params = re.findall(r"\.param \.\w+ (\w+)", m.group(2))
        out[m.group(1)] = (params, m.group(3))
    return out


def test_ptx_header_targets_an_old_isa() -> None:
    lines = [ln.strip() for ln in ds.PTX.strip().splitlines() if ln.strip() and not ln.strip().startswith("//")]
    assert lines[:3] == [f".version {ds.PTX_ISA}", f".target {ds.PTX_TARGET}", ".address_size 64"]
    assert ds.PTX.isascii()


def test_ptx_structure() -> None:
    """Every kernel the suite looks up is an entry; braces balance; each register used is
    declared (index below the declared count); each branch target is a label of the same
    entry; each parameter loaded is declared; shared memory fits the reduction's block."""
    assert ds.PTX.count("{") == ds.PTX.count("}")
    entries = ptx_entries(ds.PTX)
    assert sorted(entries) == sorted(ds.KERNELS)
    for name, (params, body) in entries.items():
        declared = {prefix: int(n) for prefix, n in re.findall(r"\.reg \.\w+ %(\w+?)<(\d+)>;", body)}
        for prefix, index in re.findall(r"%([a-z]+)(\d+)\b", body):
            if prefix in SPECIAL_REGISTERS:
                continue
            assert prefix in declared and int(index) < declared[prefix], f"{name}: %{prefix}{index} undeclared"
        labels = set(re.findall(r"^(\w+):", body, re.M))
        for target in re.findall(r"\bbra(?:\.uni)? (\w+);", body):
            assert target in labels, f"{name}: branch to unknown label {target}"
        for used in re.findall(r"ld\.param\.\w+ %\w+, \[(\w+)\]", body):
            assert used in params, f"{name}: loads undeclared parameter {used}"
        assert body.rstrip().endswith("ret;")
    assert f"sdata[{ds.REDUCE_BLOCK}]" in entries["reduce_sum_u32"][1]


def test_ptx_parameters_match_the_launches() -> None:
    assert {name: len(params) for name, (params, _) in ptx_entries(ds.PTX).items()} == {
        name: len(sig) for name, sig in FakeCuda.KERNEL_ARGS.items()}


@pytest.mark.skipif(not os.path.exists(PTXAS), reason="ptxas is not installed")
@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_ptxas_assembles_the_ptx(tmp_path: Any, arch: str) -> None:
    """ptxas (CUDA 13.0 knows no sm_50 any more) compiles the sm_50-targeted PTX for newer
    GPUs, as the driver's JIT does: the module is valid PTX, and every kernel is in it."""
    src = tmp_path / "driver_suite.ptx"
    src.write_text(ds.PTX)
    proc = subprocess.run([PTXAS, f"-arch={arch}", "-v", str(src), "-o", str(tmp_path / "out.cubin")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for kernel in ds.KERNELS:
        assert f"Compiling entry function '{kernel}'" in proc.stdout + proc.stderr


# --------------------------------------------------------------------------- pure helpers


def lowbias32(x: int) -> int:
    """Chris Wellons' lowbias32, written independently of the suite's mirror."""
    x &= 0xFFFFFFFF
    x = ((x ^ (x >> 16)) * 0x7FEB352D) & 0xFFFFFFFF
    x = ((x ^ (x >> 15)) * 0x846CA68B) & 0xFFFFFFFF
    return x ^ (x >> 16)


def device_pattern(index: int, seed: int) -> int:
    return lowbias32((index % 2**32) * 0x9E3779B1 + (seed ^ (index // 2**32)))


def test_pattern_word_mirrors_the_ptx_formula() -> None:
    for i in list(range(50)) + [2**31, 2**32 - 1, 2**32, 2**32 + 7, 5 * 2**32 + 3]:
        for seed in (0, 1, 0xDEADBEEF):
            assert ds.pattern_word(i, seed) == device_pattern(i, seed)
    assert ds.pattern_word(1, 0) == 0x6D523710  # a fixed value: the formula cannot drift silently


def test_pattern_seeds_are_distinct_and_odd() -> None:
    seeds = [ds.pattern_seed(p, c) for p in range(8) for c in range(200)]
    assert len(set(seeds)) == len(seeds)
    assert all(s & 1 for s in seeds)


def test_f32_and_references() -> None:
    assert ds.f32(0.1) == struct.unpack("<f", struct.pack("<f", 0.1))[0] != 0.1
    assert ds.f32(1e39) == math.inf
    assert list(ds.vector_add_reference([0xFFFFFFFF, 5], [2, 7])) == [1, 12]
    assert list(ds.saxpy_reference(2.0, [1.5, -1.0], [0.25, 3.0])) == [3.25, 1.0]


def test_random_inputs_are_deterministic() -> None:
    assert ds.random_u32(1000, 7) == ds.random_u32(1000, 7) != ds.random_u32(1000, 8)
    floats = ds.random_f32(1000, 3)
    assert all(0.125 <= abs(v) < 2.0 for v in floats) and len(set(floats)) > 990
    assert any(v < 0 for v in floats) and any(v > 0 for v in floats)


def simulate_reduction(values: List[int], grid: int, block: int) -> List[int]:
    """Every thread of the grid-stride loop, one by one."""
    partial = [0] * grid
    for b in range(grid):
        for t in range(block):
            i = b * block + t
            while i < len(values):
                partial[b] += values[i]
                i += grid * block
    return partial


@pytest.mark.parametrize("n, grid, block", [(1, 1, 4), (37, 3, 4), (100, 2, 8), (1000, 7, 32), (64, 8, 8)])
def test_reduction_partials_follow_the_grid_stride_loop(n: int, grid: int, block: int) -> None:
    values = [(i * 2654435761) & 0xFFFFFFFF for i in range(n)]
    got = ds.reduction_partials(values, grid, block)
    assert got == simulate_reduction(values, grid, block)
    assert sum(got) == sum(values)


def test_compare_exact() -> None:
    assert ds.compare_exact(array.array("I", [1, 2, 3]), array.array("I", [1, 2, 3])) is None
    bad = ds.compare_exact([1, 9, 3, 8], [1, 2, 3, 4])
    assert bad is not None and (bad.count, bad.first, bad.got, bad.expected) == (2, 1, 9, 2)
    assert "2 of 4 elements differ; first at [1]: got 9, expected 2" == bad.describe(4)
    assert ds.compare_exact([1, 2], [1, 2, 3]) is not None


def test_compare_saxpy_tolerance() -> None:
    alpha = ds.f32(1.7182817)
    x, y = ds.random_f32(2000, 1), ds.random_f32(2000, 2)
    exact = ds.saxpy_reference(alpha, x, y)
    assert ds.compare_saxpy(alpha, x, y, exact) == (None, 0.0)
    # one ulp off everywhere (what a different rounding would give) passes
    bits = array.array("I", exact.tobytes())
    ulp = array.array("f", array.array("I", (b + 1 for b in bits)).tobytes())
    bad, max_rel = ds.compare_saxpy(alpha, x, y, ulp)
    assert bad is None and 0 < max_rel < ds.SAXPY_RTOL
    # a wrong value, a NaN and a flipped mantissa bit fail
    wrong = array.array("f", exact)
    wrong[10] += 1e-3
    wrong[20] = math.nan
    raw = array.array("I", wrong.tobytes())
    raw[30] ^= 1 << 12
    wrong = array.array("f", raw.tobytes())
    bad, _ = ds.compare_saxpy(alpha, x, y, wrong)
    assert bad is not None and bad.count == 3 and bad.first == 10


def test_bandwidth_arithmetic() -> None:
    assert ds.bandwidth_gbs(2e9, 1.0) == 2.0
    assert ds.bandwidth_gbs(20 * 256 * 2**20, 0.0025) == pytest.approx(2147.48, rel=1e-5)
    with pytest.raises(ValueError):
        ds.bandwidth_gbs(1, 0.0)
    # H100 SXM5 as deviceQuery reports it: 2619 MHz, 5120-bit bus -> 3.35 TB/s
    assert ds.theoretical_bandwidth_gbs(2_619_000, 5120) == pytest.approx(3352.3, rel=1e-4)
    assert ds.theoretical_bandwidth_gbs(0, 5120) is None


def test_sizing() -> None:
    assert ds.grid_for(1, 100) == 1
    assert ds.grid_for(1 << 20, 132) == 132 * 8
    assert ds.grid_for(1000, 0) == 4
    gib = ds.GIB
    assert ds.plan_chunks(10 * gib, 0.85, gib) == [gib] * 8 + [int(0.5 * gib)]
    assert ds.plan_chunks(2 * gib + 4 * ds.MIB, 0.5, gib) == [gib]  # a 2 MiB rest is too small
    assert ds.plan_chunks(1000, 0.5, gib) == [500]
    assert ds.plan_chunks(0, 0.5, gib) == []
    assert all(s % 4 == 0 for s in ds.plan_chunks(12345677, 0.77, 1 << 20))
    sizes = [gib] * 8
    assert ds.fit_to_budget(sizes, 1e9, 2, None) == sizes
    assert ds.fit_to_budget(sizes, 1e9, 2, 13.0) == [gib] * 3  # 13 s x 1 GB/s / (2 x 2 passes) = 3.03 GiB
    assert ds.fit_to_budget(sizes, 1e9, 2, 0.0) == [gib]  # always one chunk


def test_driver_version_text_and_load_reason() -> None:
    assert ds.driver_version_text(13000) == "13.0"
    assert ds.driver_version_text(12040) == "12.4"
    assert ds.driver_version_text(12090) == "12.9"
    missing = OSError("libcuda.so.1: cannot open shared object file: No such file or directory")
    assert ds.load_failure_reason(missing) == "libcuda.so.1 not found: no NVIDIA driver"
    assert ds.load_failure_reason(OSError("libcuda.so.1: wrong ELF class: ELFCLASS32")).startswith(
        "libcuda.so.1 could not be loaded: libcuda.so.1: wrong ELF class")


def test_expect_gpu_flag_is_taken_out() -> None:
    assert ds._expect_gpu(["--tier", "quick", "--expect-gpu"]) == (True, ["--tier", "quick"])
    assert ds._expect_gpu(["--gpus", "0"]) == (False, ["--gpus", "0"])


def test_bindings_convert_every_argument_through_real_ctypes() -> None:
    """Each symbol as a real ctypes function (a C callback with the declared prototype), so
    ctypes converts the arguments the Driver methods pass exactly as for libcuda: a wrong
    type raises ctypes.ArgumentError here. The launch's kernelParams are read in the callee."""
    seen: Dict[str, Tuple[Any, ...]] = {}
    kernel_args: List[Any] = []

    class ProtoLib:
        pass

    lib = ProtoLib()
    keep = []
    for name, argtypes in ds.SIGNATURES.items():
        def impl(*args: Any, _name: str = name) -> int:
            seen[_name] = args
            if _name == "cuLaunchKernel":
                params = args[9]
                kernel_args.extend([ctypes.c_uint64.from_address(params[0]).value,
                                    ctypes.c_float.from_address(params[1]).value,
                                    ctypes.c_uint32.from_address(params[2]).value])
            return 0
        fn = ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(impl)
        keep.append(fn)
        setattr(lib, name, fn)
    drv = ds.Driver(lib)
    drv.init()
    for query in (drv.driver_version, drv.device_count):
        query()
    for per_device in (drv.device, drv.device_name, drv.total_memory, drv.pci_bus_id, drv.uuid):
        per_device(0)
    drv.attribute(0, 75)
    drv.set_current(drv.retain_primary_context(0))
    drv.synchronize()
    drv.memory_info()
    ptr, host = drv.alloc(64), drv.alloc_host(64)
    drv.htod(ptr, ctypes.c_void_p(host), 64)
    drv.dtoh(ctypes.c_void_p(host), ptr, 64)
    drv.dtod(ptr, ptr, 64)
    drv.htod_async(ptr, host, 64)
    drv.dtoh_async(host, ptr, 64)
    drv.dtod_async(ptr, ptr, 64)
    drv.memset32(ptr, 0xFFFFFFFF, 16)
    module, _ = drv.load_module(ds.PTX)
    drv.function(module, "vec_add_u32")
    drv.launch(0x1234, 3, 256, [ctypes.c_uint64(2**40 + 3), ctypes.c_float(1.5), ctypes.c_uint32(7)])
    start, end = drv.event(), drv.event()
    drv.record(start)
    drv.elapsed_s(start, end)
    drv.destroy_event(end)
    drv.unload_module(module)
    drv.free(ptr)
    drv.free_host(host)
    drv.release_primary_context(0)
    assert kernel_args == [2**40 + 3, 1.5, 7]
    assert seen["cuLaunchKernel"][:9] == (0x1234, 3, 1, 1, 256, 1, 1, 0, None)
    assert seen["cuMemsetD32_v2"] == (ptr, 0xFFFFFFFF, 16)
    assert seen["cuModuleLoadDataEx"][1] == ds.PTX.encode() and seen["cuModuleLoadDataEx"][2] == 4
    assert set(seen) == set(ds.SIGNATURES) - set(ds.FALLBACKS.values()) - {"cuGetErrorName", "cuGetErrorString"}


def test_missing_symbols_fall_back_or_say_so() -> None:
    class OldLib:
        def cuEventElapsedTime(self, p: Any, a: Any, b: Any) -> int:
            _out(p).value = 2.5
            return 0

        def cuEventSynchronize(self, ev: Any) -> int:
            return 0

    drv = ds.Driver(OldLib())
    assert drv.elapsed_s(1, 2) == 0.0025
    with pytest.raises(ds.MissingSymbol, match="has no cuMemAlloc_v2: the driver is older"):
        drv.alloc(4)
    assert drv.error_name(222) == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"  # no cuGetErrorName: the table


# --------------------------------------------------------------------------- this machine


@pytest.mark.skipif(HAVE_LIBCUDA, reason="libcuda.so.1 is installed here")
@pytest.mark.parametrize("expect, status, code", [(False, "skipped", 0), (True, "failed", 1)])
def test_script_without_a_driver(tmp_path: Any, expect: bool, status: str, code: int) -> None:
    """Run by path from another folder, as the runner does under a target interpreter that
    may not have cudadoctor: one JSON line, the right status and reason."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    argv = [sys.executable, SUITE_PATH, "--tier", "quick"] + (["--expect-gpu"] if expect else [])
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=str(tmp_path), env=env)
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout + proc.stderr
    result = json.loads(lines[0])
    assert proc.returncode == code
    assert result["protocol"] == 1 and result["suite"] == "driver" and result["status"] == status
    assert result["tier"] == "quick" and result["framework"] is None
    assert "libcuda.so.1 not found: no NVIDIA driver" in result["reason"]
    if not expect:
        assert result["reason"] == "libcuda.so.1 not found: no NVIDIA driver"
    assert [t["name"] for t in result["tests"]] == ["load_libcuda"]
    assert result["tests"][0]["status"] == status


@pytest.mark.skipif(HAVE_LIBCUDA, reason="libcuda.so.1 is installed here")
def test_runner_runs_the_driver_suite_here() -> None:
    from cudadoctor.smoke import runner

    result = runner.run_suite("driver", tier="quick", timeout=60)
    assert (result.status, result.reason) == ("skipped", "libcuda.so.1 not found: no NVIDIA driver")
    assert result.exit_code == 0 and result.tests[0].name == "load_libcuda"


# --------------------------------------------------------------------------- an emulated libcuda

CUDA_SUCCESS = 0


def _out(arg: Any) -> Any:
    """The ctypes object behind a ``byref(...)`` argument."""
    return getattr(arg, "_obj", arg)


def _addr(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, ctypes.Array):
        return ctypes.addressof(value)
    if isinstance(value, ctypes._SimpleCData):
        return int(value.value or 0)
    raise TypeError(f"not an address: {value!r}")


class FakeCuda:
    """A libcuda with ``gpus`` fake devices: device memory is host memory (a device pointer is
    a host address), kernels run as Python, events read the clock. It checks what a driver
    would (a current context for every call that needs one, known kernels, real allocations)
    and keeps count of what is still allocated, so a test can see the suite freed everything.

    Faults: ``init_error`` (cuInit's CUresult), ``device_count``, ``module_error`` (and
    ``jit_log``), ``launch_error`` = (kernel, CUresult, after how many launches of it),
    ``wrong_add_at`` (vec_add_u32 writes a wrong word there), ``corrupt`` = (pass seed index,
    word) the memory flips a bit of after a pattern fill, ``no_error_name`` (no cuGetErrorName)."""

    KERNEL_ARGS: Dict[str, Tuple[Any, ...]] = {
        "vec_add_u32": (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32),
        "saxpy_f32": (ctypes.c_float, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32),
        "reduce_sum_u32": (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32),
        "pattern_fill": (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32),
        "pattern_check": (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint64),
    }

    def __init__(self, gpus: int = 1, free: int = 8 << 20, init_error: int = 0, device_count: Optional[int] = None,
                 module_error: int = 0, jit_log: str = "", launch_error: Optional[Tuple[str, int, int]] = None,
                 wrong_add_at: Optional[int] = None, corrupt_word: Optional[int] = None,
                 no_error_name: bool = False) -> None:
        self.gpus = gpus
        self.free0 = free
        self.init_error = init_error
        self.count = gpus if device_count is None else device_count
        self.module_error, self.jit_log = module_error, jit_log
        self.launch_error = launch_error
        self.wrong_add_at = wrong_add_at
        self.corrupt_word = corrupt_word
        self.initialised = False
        self.lock = threading.Lock()
        self.local = threading.local()
        self.device_mem: Dict[int, Tuple[int, Any]] = {}  # address -> (device, buffer)
        self.host_mem: Dict[int, Any] = {}
        self.contexts: Dict[int, int] = {}  # device -> retain count
        self.modules: Dict[int, int] = {}  # handle -> device
        self.events: Dict[int, float] = {}
        self.launches: Dict[str, int] = {}
        self.fills: Dict[int, int] = {}  # chunk address -> fills done
        self.names: Dict[int, bytes] = {}
        self._next = 1
        self.calls: List[str] = []
        if no_error_name:
            self.cuGetErrorName = None  # type: ignore[assignment]

    def __getattribute__(self, name: str) -> Any:
        value = object.__getattribute__(self, name)
        if name.startswith("cu"):
            if value is None:
                raise AttributeError(name)
            object.__getattribute__(self, "calls").append(name)
        return value

    # helpers
    def _handle(self) -> int:
        with self.lock:
            self._next += 1
            return self._next

    def _ctx(self) -> Optional[int]:
        return getattr(self.local, "ctx", None)

    def _need_ctx(self) -> int:
        if not self.initialised:
            return 3  # CUDA_ERROR_NOT_INITIALIZED
        if self._ctx() is None:
            return 201  # CUDA_ERROR_INVALID_CONTEXT
        return 0

    def leaks(self) -> Dict[str, int]:
        return {"device": len(self.device_mem), "host": len(self.host_mem), "contexts": sum(self.contexts.values()),
                "modules": len(self.modules), "events": len(self.events)}

    # init and devices
    def cuInit(self, flags: int) -> int:
        if self.init_error:
            return self.init_error
        self.initialised = True
        return 0

    def cuDriverGetVersion(self, p: Any) -> int:
        _out(p).value = 13000
        return 0

    def cuGetErrorName(self, code: int, p: Any) -> int:
        name = ds.CURESULT_NAMES.get(code)
        if name is None:
            return 1
        self.names[code] = name.encode()
        _out(p).value = self.names[code]
        return 0

    def cuGetErrorString(self, code: int, p: Any) -> int:
        return 1  # no descriptions: the suite copes

    def cuDeviceGetCount(self, p: Any) -> int:
        if not self.initialised:
            return 3
        _out(p).value = self.count
        return 0

    def cuDeviceGet(self, p: Any, ordinal: int) -> int:
        if not 0 <= ordinal < self.count:
            return 101
        _out(p).value = ordinal
        return 0

    def cuDeviceGetName(self, buf: Any, size: int, dev: int) -> int:
        buf.value = f"Fake GPU {dev}".encode()
        return 0

    def cuDeviceGetAttribute(self, p: Any, attribute: int, dev: int) -> int:
        values = {75: 8, 76: 6, 16: 4, 1: 1024, 13: 1_500_000, 36: 9_000_000, 37: 256, 38: 1 << 22, 32: 0, 18: 0,
                  17: 0, 20: 0}
        if attribute not in values:
            return 1
        _out(p).value = values[attribute]
        return 0

    def cuDeviceTotalMem_v2(self, p: Any, dev: int) -> int:
        _out(p).value = 2 * self.free0
        return 0

    def cuDeviceGetPCIBusId(self, buf: Any, size: int, dev: int) -> int:
        buf.value = f"0000:{dev + 1:02x}:00.0".encode()
        return 0

    def cuDeviceGetUuid_v2(self, buf: Any, dev: int) -> int:
        ctypes.memmove(buf, bytes(range(dev, dev + 16)), 16)
        return 0

    # contexts
    def cuDevicePrimaryCtxRetain(self, p: Any, dev: int) -> int:
        self.contexts[dev] = self.contexts.get(dev, 0) + 1
        _out(p).value = 0x1000 + dev
        return 0

    def cuDevicePrimaryCtxRelease_v2(self, dev: int) -> int:
        if not self.contexts.get(dev):
            return 201
        self.contexts[dev] -= 1
        return 0

    def cuCtxSetCurrent(self, ctx: Any) -> int:
        dev = _addr(ctx) - 0x1000
        if not self.contexts.get(dev):
            return 201
        self.local.ctx = dev
        return 0

    def cuCtxSynchronize(self) -> int:
        return self._need_ctx()

    def cuMemGetInfo_v2(self, free: Any, total: Any) -> int:
        err = self._need_ctx()
        if err:
            return err
        used = sum(len(buf) for d, buf in self.device_mem.values() if d == self._ctx())
        _out(free).value = self.free0 - used
        _out(total).value = 2 * self.free0
        return 0

    # modules
    def cuModuleLoadDataEx(self, p: Any, image: bytes, n: int, options: Any, values: Any) -> int:
        err = self._need_ctx()
        if err:
            return err
        if self.module_error:
            if self.jit_log:
                ctypes.memmove(values[2], self.jit_log.encode() + b"\0", len(self.jit_log) + 1)
            return self.module_error
        assert image.startswith(b"\n.version 6.0\n.target sm_50")
        handle = self._handle()
        self.modules[handle] = self._ctx()  # type: ignore[assignment]
        _out(p).value = handle
        return 0

    def cuModuleGetFunction(self, p: Any, module: Any, name: bytes) -> int:
        if _addr(module) not in self.modules:
            return 400
        if name.decode() not in self.KERNEL_ARGS:
            return 500
        _out(p).value = 0x100000 + list(self.KERNEL_ARGS).index(name.decode())
        return 0

    def cuModuleUnload(self, module: Any) -> int:
        return 0 if self.modules.pop(_addr(module), None) is not None else 400

    # memory
    def cuMemAlloc_v2(self, p: Any, size: int) -> int:
        err = self._need_ctx()
        if err:
            return err
        used = sum(len(buf) for d, buf in self.device_mem.values() if d == self._ctx())
        if size > self.free0 - used:
            return 2
        buf = ctypes.create_string_buffer(size)
        with self.lock:
            self.device_mem[ctypes.addressof(buf)] = (self._ctx(), buf)  # type: ignore[assignment]
        _out(p).value = ctypes.addressof(buf)
        return 0

    def cuMemFree_v2(self, ptr: int) -> int:
        with self.lock:
            return 0 if self.device_mem.pop(_addr(ptr), None) is not None else 1

    def cuMemAllocHost_v2(self, p: Any, size: int) -> int:
        buf = ctypes.create_string_buffer(size)
        self.host_mem[ctypes.addressof(buf)] = buf
        _out(p).value = ctypes.addressof(buf)
        return 0

    def cuMemFreeHost(self, ptr: Any) -> int:
        return 0 if self.host_mem.pop(_addr(ptr), None) is not None else 1

    def _in_device(self, ptr: int, size: int) -> bool:
        for base, (dev, buf) in list(self.device_mem.items()):
            if base <= ptr and ptr + size <= base + len(buf):
                return dev == self._ctx()
        return False

    def _copy(self, dst: Any, src: Any, size: int, dst_dev: bool, src_dev: bool) -> int:
        err = self._need_ctx()
        if err:
            return err
        d, s = _addr(dst), _addr(src)
        if (dst_dev and not self._in_device(d, size)) or (src_dev and not self._in_device(s, size)):
            return 1
        ctypes.memmove(d, s, size)
        return 0

    def cuMemcpyHtoD_v2(self, dst: Any, src: Any, size: int) -> int:
        return self._copy(dst, src, size, True, False)

    def cuMemcpyDtoH_v2(self, dst: Any, src: Any, size: int) -> int:
        return self._copy(dst, src, size, False, True)

    def cuMemcpyDtoD_v2(self, dst: Any, src: Any, size: int) -> int:
        return self._copy(dst, src, size, True, True)

    def cuMemcpyHtoDAsync_v2(self, dst: Any, src: Any, size: int, stream: Any) -> int:
        return self._copy(dst, src, size, True, False)

    def cuMemcpyDtoHAsync_v2(self, dst: Any, src: Any, size: int, stream: Any) -> int:
        return self._copy(dst, src, size, False, True)

    def cuMemcpyDtoDAsync_v2(self, dst: Any, src: Any, size: int, stream: Any) -> int:
        return self._copy(dst, src, size, True, True)

    def cuMemsetD32_v2(self, ptr: Any, value: int, count: int) -> int:
        err = self._need_ctx()
        if err:
            return err
        if not self._in_device(_addr(ptr), 4 * count):
            return 1
        words = array.array("I", [value]) * count
        ctypes.memmove(_addr(ptr), words.buffer_info()[0], 4 * count)
        return 0

    # events
    def cuEventCreate(self, p: Any, flags: int) -> int:
        handle = self._handle()
        self.events[handle] = 0.0
        _out(p).value = handle
        return 0

    def cuEventRecord(self, ev: Any, stream: Any) -> int:
        if _addr(ev) not in self.events:
            return 400
        time.sleep(0.001)  # so an elapsed time is never 0
        self.events[_addr(ev)] = time.perf_counter()
        return 0

    def cuEventSynchronize(self, ev: Any) -> int:
        return 0 if _addr(ev) in self.events else 400

    def cuEventElapsedTime_v2(self, p: Any, start: Any, end: Any) -> int:
        _out(p).value = (self.events[_addr(end)] - self.events[_addr(start)]) * 1e3
        return 0

    def cuEventDestroy_v2(self, ev: Any) -> int:
        return 0 if self.events.pop(_addr(ev), None) is not None else 400

    # kernels
    def cuLaunchKernel(self, fn: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int,
                       stream: Any, params: Any, extra: Any) -> int:
        err = self._need_ctx()
        if err:
            return err
        name = list(self.KERNEL_ARGS)[_addr(fn) - 0x100000]
        with self.lock:
            self.launches[name] = self.launches.get(name, 0) + 1
        if self.launch_error and self.launch_error[0] == name and self.launches[name] > self.launch_error[2]:
            return self.launch_error[1]
        assert (gy, gz, by, bz) == (1, 1, 1, 1) and 1 <= bx <= 1024 and gx >= 1
        args = [t.from_address(params[i]).value for i, t in enumerate(self.KERNEL_ARGS[name])]
        getattr(self, "_k_" + name)(gx, bx, *args)
        return 0

    def _words(self, ptr: int, n: int, code: str = "I") -> "array.array[Any]":
        assert self._in_device(ptr, 4 * n if code != "Q" else 8 * n), "kernel touches memory it does not own"
        return array.array(code, ctypes.string_at(ptr, n * array.array(code).itemsize))

    @staticmethod
    def _store(ptr: int, data: "array.array[Any]") -> None:
        ctypes.memmove(ptr, data.buffer_info()[0], len(data) * data.itemsize)

    def _k_vec_add_u32(self, grid: int, block: int, a: int, b: int, c: int, n: int) -> None:
        out = array.array("I", ((x + y) & 0xFFFFFFFF for x, y in zip(self._words(a, n), self._words(b, n))))
        if self.wrong_add_at is not None and self.wrong_add_at < n:
            out[self.wrong_add_at] ^= 4
        self._store(c, out)

    def _k_saxpy_f32(self, grid: int, block: int, alpha: float, x: int, y: int, n: int) -> None:
        xs, ys = self._words(x, n, "f"), self._words(y, n, "f")
        self._store(y, array.array("f", (alpha * a + b for a, b in zip(xs, ys))))

    def _k_reduce_sum_u32(self, grid: int, block: int, src: int, dst: int, n: int) -> None:
        assert block & (block - 1) == 0 and block <= 256
        values = self._words(src, n)
        self._store(dst, array.array("Q", simulate_reduction(list(values), grid, block)))

    def _k_pattern_fill(self, grid: int, block: int, ptr: int, n: int, seed: int) -> None:
        data = array.array("I", (device_pattern(i, seed) for i in range(n)))
        fills = self.fills[ptr] = self.fills.get(ptr, 0) + 1
        if self.corrupt_word is not None and fills == 1 and self.corrupt_word < n:
            data[self.corrupt_word] ^= 1 << 7  # a stuck bit, in the first fill of every chunk
        self._store(ptr, data)

    def _k_pattern_check(self, grid: int, block: int, ptr: int, n: int, seed: int, err: int) -> None:
        count, first = self._words(err, 2, "Q")
        for i, word in enumerate(self._words(ptr, n)):
            if word != device_pattern(i, seed):
                count += 1
                first = min(first, i)
        self._store(err, array.array("Q", [count, first]))


def small_plan(tier: str = "quick") -> ds.Plan:
    plan = ds.Plan(tier)
    plan.n = 3000  # not a multiple of the block: the tails are covered
    plan.d2d_bytes, plan.d2d_reps = 1 << 20, 3
    plan.h2d_bytes, plan.h2d_reps = 1 << 20, 2
    plan.pattern_chunk = 64 << 10
    plan.pattern_sample_words = 512
    plan.stress_pattern_s = 0.05
    return plan


def run_fake(fake: FakeCuda, argv: List[str], plan: Optional[ds.Plan] = None) -> Tuple[int, Dict[str, Any]]:
    """The suite's line and exit code over ``fake``; the line also goes through the runner's
    reading of a child's output, which must agree on the status."""
    from cudadoctor.smoke import runner

    out = io.StringIO()
    tier = argv[argv.index("--tier") + 1] if "--tier" in argv else "quick"
    code = ds.run(argv, stream=out, loader=lambda: fake, plan=plan or small_plan(tier), redirect=False)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    seen = runner.interpret("driver", tier, 60.0, out.getvalue().encode(), False, "", code, False, 1.0)
    assert (seen.status, len(seen.tests)) == (result["status"], len(result["tests"])), seen.reason
    return code, result


def by_name(result: Dict[str, Any], gpu: Optional[int] = 0) -> Dict[str, Dict[str, Any]]:
    return {t["name"]: t for t in result["tests"] if t["gpu"] == gpu}


QUICK = ["device_info", "context", "module_load", "vector_add", "saxpy", "reduction", "d2d_bandwidth"]
STANDARD = QUICK + ["memory_pattern", "h2d_bandwidth", "d2h_bandwidth"]


def test_emulated_quick_passes_and_frees_everything() -> None:
    fake = FakeCuda()
    code, result = run_fake(fake, ["--tier", "quick"])
    assert code == 0, result
    assert result["status"] == "passed", result
    assert [t["name"] for t in result["tests"]] == ["cu_init"] + QUICK
    assert all(t["status"] == "passed" for t in result["tests"])
    tests = by_name(result)
    assert tests["d2d_bandwidth"]["metrics"]["bandwidth_gbs"] > 0
    assert tests["d2d_bandwidth"]["metrics"]["theoretical_gbs"] == pytest.approx(576.0)
    assert tests["device_info"]["metrics"]["cc_major"] == 8
    assert tests["reduction"]["metrics"]["blocks"] == ds.grid_for(3000, 4, per_sm=4)
    assert result["details"]["driver_cuda_version"] == "13.0"
    assert result["details"]["gpu0"].startswith("Fake GPU 0, cc 8.6, 16 MiB, 0000:01:00.0, GPU-00010203-")
    assert fake.leaks() == {"device": 0, "host": 0, "contexts": 0, "modules": 0, "events": 0}
    assert fake.launches == {"vec_add_u32": 1, "saxpy_f32": 1, "reduce_sum_u32": 1}


def test_emulated_standard_runs_the_pattern_test_and_pinned_copies() -> None:
    fake = FakeCuda(gpus=2, free=1 << 20)
    code, result = run_fake(fake, ["--tier", "standard", "--timeout", "300"])
    assert result["status"] == "passed" and code == 0, result
    for gpu in (0, 1):
        tests = by_name(result, gpu)
        assert list(tests) == STANDARD
        pattern = tests["memory_pattern"]["metrics"]
        assert pattern["errors"] == 0 and pattern["chunks"] == 13 and pattern["passes"] == 2
        assert 0.8 < pattern["share_of_free"] <= 0.85
        assert tests["h2d_bandwidth"]["metrics"]["bandwidth_gbs"] > 0
        assert tests["d2h_bandwidth"]["metrics"]["bandwidth_gbs"] > 0
    assert fake.leaks() == {"device": 0, "host": 0, "contexts": 0, "modules": 0, "events": 0}


def test_emulated_stress_runs_for_the_duration_on_every_gpu_at_once() -> None:
    fake = FakeCuda(gpus=2, free=256 << 10)
    start = time.monotonic()
    code, result = run_fake(fake, ["--tier", "stress", "--duration", "0.5"])
    assert result["status"] == "passed" and code == 0, result
    stress = [t for t in result["tests"] if t["name"] == "stress"]
    assert [t["gpu"] for t in stress] == [0, 1]
    for t in stress:
        assert t["metrics"]["iterations"] >= 1 and t["metrics"]["pattern_passes"] >= 1
        assert t["metrics"]["bytes_checked"] > 0 and t["duration_s"] >= 0.4
    assert time.monotonic() - start < 30
    assert fake.leaks() == {"device": 0, "host": 0, "contexts": 0, "modules": 0, "events": 0}


def test_emulated_memory_fault_is_found_and_located() -> None:
    fake = FakeCuda(free=1 << 20, corrupt_word=1234)
    code, result = run_fake(fake, ["--tier", "standard"])
    assert code == 1 and result["status"] == "failed"
    test = by_name(result)["memory_pattern"]
    assert test["status"] == "failed" and test["metrics"]["errors"] == 13  # one word in each chunk
    assert "first in pass 0, chunk 0, word 1234 (device address 0x" in test["message"]
    assert re.search(r": read 0x[0-9a-f]{8}, expected 0x[0-9a-f]{8} \(bits 0x00000080 differ\)", test["message"])
    assert result["reason"].startswith("memory_pattern on GPU 0 failed: 13 words differ")
    assert fake.leaks()["device"] == 0


def test_emulated_wrong_kernel_result_fails_the_test() -> None:
    fake = FakeCuda(wrong_add_at=2999)
    code, result = run_fake(fake, ["--tier", "quick"])
    test = by_name(result)["vector_add"]
    assert code == 1 and test["status"] == "failed" and test["metrics"]["mismatches"] == 1
    assert test["message"].startswith("1 of 3000 elements differ; first at [2999]")
    assert by_name(result)["saxpy"]["status"] == "passed"


@pytest.mark.parametrize("code, name", [(803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"), (34, "CUDA_ERROR_STUB_LIBRARY"),
                                        (804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"), (999, "CUDA_ERROR_UNKNOWN")])
def test_emulated_broken_driver_fails_at_cu_init(code: int, name: str) -> None:
    _, result = run_fake(FakeCuda(init_error=code), ["--tier", "quick"])
    assert result["status"] == "failed"
    (test,) = result["tests"]
    assert test["name"] == "cu_init" and test["status"] == "error" and test["cuda_error"] == name
    assert f"cuInit returned {name} ({code})" in test["error"]


def test_emulated_error_names_fall_back_to_the_table() -> None:
    fake = FakeCuda(init_error=803, no_error_name=True)
    _, result = run_fake(fake, ["--tier", "quick"])
    assert result["tests"][0]["cuda_error"] == "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"


@pytest.mark.parametrize("expect, status", [(False, "skipped"), (True, "failed")])
def test_emulated_no_device(expect: bool, status: str, monkeypatch: Any) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    argv = ["--tier", "quick"] + (["--expect-gpu"] if expect else [])
    code, result = run_fake(FakeCuda(init_error=100), argv)
    assert result["status"] == status and code == (1 if expect else 0)
    assert "no CUDA GPU visible: cuInit returned CUDA_ERROR_NO_DEVICE (CUDA_VISIBLE_DEVICES='')" in result["reason"]
    assert result["tests"][0]["cuda_error"] == "CUDA_ERROR_NO_DEVICE"
    _, result = run_fake(FakeCuda(device_count=0), argv)
    assert result["status"] == status


def test_emulated_ptx_rejected_skips_the_kernels_but_not_the_copy() -> None:
    fake = FakeCuda(module_error=222, jit_log="ptxas application ptx input, line 2; fatal : Unsupported .version 6.0")
    code, result = run_fake(fake, ["--tier", "quick"])
    tests = by_name(result)
    load = tests["module_load"]
    assert load["status"] == "error" and load["cuda_error"] == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
    assert "JIT log: ptxas application ptx input" in load["error"]
    assert all(tests[k]["status"] == "skipped" for k in ("vector_add", "saxpy", "reduction"))
    assert tests["d2d_bandwidth"]["status"] == "passed"
    assert result["status"] == "failed" and code == 1
    assert fake.leaks() == {"device": 0, "host": 0, "contexts": 0, "modules": 0, "events": 0}


def test_emulated_sticky_error_skips_the_rest_of_that_gpu_only() -> None:
    fake = FakeCuda(gpus=2, launch_error=("vec_add_u32", 700, 0))
    _, result = run_fake(fake, ["--tier", "quick"])
    gpu0, gpu1 = by_name(result, 0), by_name(result, 1)
    assert gpu0["vector_add"]["status"] == "error" and gpu0["vector_add"]["cuda_error"] == "CUDA_ERROR_ILLEGAL_ADDRESS"
    for name in ("saxpy", "reduction", "d2d_bandwidth"):
        assert gpu0[name]["status"] == "skipped"
        assert "after CUDA_ERROR_ILLEGAL_ADDRESS in vector_add" in gpu0[name]["message"]
    assert gpu1["vector_add"]["status"] == "error"  # the fake fails every vec_add launch
    assert result["status"] == "failed"
    assert "vector_add on GPU 0 raised" in result["reason"] and "CUDA_ERROR_ILLEGAL_ADDRESS" in result["reason"]


def test_emulated_failed_free_is_reported() -> None:
    fake = FakeCuda()
    real_free = fake.cuMemFree_v2
    fake.cuMemFree_v2 = lambda ptr: (real_free(ptr), 1)[1]  # type: ignore[method-assign]
    _, result = run_fake(fake, ["--tier", "quick"])
    test = by_name(result)["vector_add"]
    assert test["status"] == "error" and test["cuda_error"] == "CUDA_ERROR_INVALID_VALUE"
    assert test["error"].startswith("CudaError: cuMemFree_v2 returned CUDA_ERROR_INVALID_VALUE (1)")


def test_emulated_gpu_selection() -> None:
    fake = FakeCuda(gpus=3)
    _, result = run_fake(fake, ["--gpus", "2,5"])
    assert {t["gpu"] for t in result["tests"] if t["name"] == "vector_add"} == {2}
    missing = [t for t in result["tests"] if t["name"] == "select_gpu"]
    assert [(t["gpu"], t["status"]) for t in missing] == [(5, "failed")]
    assert "GPU 5 is not visible (3 visible: 0..2)" in missing[0]["message"]


def test_emulated_bad_arguments_are_an_error_line() -> None:
    code, result = run_fake(FakeCuda(), ["--tier", "forever"])
    assert code == 1 and result["status"] == "error" and result["reason"].startswith("bad arguments")


# --------------------------------------------------------------------------- a real GPU


def _run_script(*args: str, timeout: float = 300) -> Tuple[int, Dict[str, Any], str]:
    proc = subprocess.run([sys.executable, SUITE_PATH, *args], capture_output=True, text=True, timeout=timeout)
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout + proc.stderr[-4000:]
    return proc.returncode, json.loads(lines[0]), proc.stderr


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_LIBCUDA, reason="no NVIDIA driver (libcuda.so.1) here")
def test_gpu_quick_tier_passes() -> None:
    code, result, stderr = _run_script("--tier", "quick", "--expect-gpu", "--timeout", "120")
    assert result["status"] == "passed", json.dumps(result, indent=1) + stderr[-4000:]
    assert code == 0
    names = {t["name"] for t in result["tests"]}
    assert set(QUICK) <= names
    for t in result["tests"]:
        if t["name"] == "d2d_bandwidth":
            assert t["metrics"]["bandwidth_gbs"] > 1.0


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_LIBCUDA, reason="no NVIDIA driver (libcuda.so.1) here")
def test_gpu_standard_tier_passes() -> None:
    code, result, stderr = _run_script("--tier", "standard", "--expect-gpu", "--timeout", "280", timeout=300)
    assert result["status"] == "passed", json.dumps(result, indent=1) + stderr[-4000:]
    patterns = [t for t in result["tests"] if t["name"] == "memory_pattern"]
    assert patterns and all(t["metrics"]["errors"] == 0 for t in patterns)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_LIBCUDA, reason="no NVIDIA driver (libcuda.so.1) here")
def test_gpu_driver_rejects_a_bad_module_by_name() -> None:
    """The decoding path on a real driver: PTX of an ISA no driver knows, and PTX that is
    not PTX, come back as their CUresult names, with the JIT's log."""
    drv = ds.Driver(ds.load_libcuda())
    drv.init()
    dev = drv.device(0)
    ctx = drv.retain_primary_context(dev)
    try:
        drv.set_current(ctx)
        with pytest.raises(ds.CudaError) as too_new:
            drv.load_module(ds.PTX.replace(".version 6.0", ".version 99.9"))
        assert too_new.value.name in ("CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "CUDA_ERROR_INVALID_PTX")
        with pytest.raises(ds.CudaError) as garbage:
            drv.load_module(ds.PTX.replace("add.u32 %r8, %r8, %r9;", "frobnicate %r8;"))
        assert garbage.value.name == "CUDA_ERROR_INVALID_PTX"
        module, _ = drv.load_module(ds.PTX)
        drv.unload_module(module)
    finally:
        drv.release_primary_context(dev)
