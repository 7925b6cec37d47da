"""The driver smoke suite: the CUDA driver API through ctypes, no framework needed.

Loads ``libcuda.so.1`` (``nvcuda.dll`` on Windows), initialises the driver, lists the devices
and their attributes, retains each selected GPU's primary context, has the driver JIT-compile
an embedded PTX module (:data:`PTX`), launches its kernels (vector add, saxpy, a block
reduction) and checks their results on the host, times a device-to-device copy, and frees
everything. ``standard`` adds a memory pattern test over a large share of free memory and
pinned host<->device bandwidths; ``stress`` repeats kernels and pattern passes for
``--duration`` seconds on every selected GPU at once. Only the standard library is used, so it
proves a machine with a driver and nothing else can run CUDA work; if this suite passes and a
framework's suite fails, the framework's install is at fault, not the driver.

Run as a script (``python driver_suite.py --tier quick``) it prints one JSON line
(``_protocol``). Besides the protocol's arguments it takes ``--expect-gpu``: the parent saw
NVIDIA GPUs (NVML, PCI), so no ``libcuda.so.1`` or ``CUDA_ERROR_NO_DEVICE`` is a failure, not a
skip. Without it, a machine with no driver or no visible GPU gives ``skipped``.

The suite is split over this folder: ``_curesult`` (what a CUresult means), ``_cuda_driver`` (the
ctypes binding), ``_ptx`` (the kernels), ``_driver_math`` (host references, comparisons and
sizes) and ``_driver_tests`` (the tests on one GPU). This file runs them tier by tier.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

try:  # imported as cudadoctor.smoke.suites.driver_suite (tests)
    from . import _cuda_driver, _curesult, _driver_math, _driver_tests, _protocol, _ptx
except ImportError:  # run by path: this folder is sys.path[0]
    import _cuda_driver  # type: ignore[no-redef,import-not-found]
    import _curesult  # type: ignore[no-redef,import-not-found]
    import _driver_math  # type: ignore[no-redef,import-not-found]
    import _driver_tests  # type: ignore[no-redef,import-not-found]
    import _protocol  # type: ignore[no-redef,import-not-found]
    import _ptx  # type: ignore[no-redef,import-not-found]

SUITE = "driver"

# The names this suite's code and its tests use, from the modules that define them (they lived
# in this file before it was split).
CURESULT_NAMES = _curesult.CURESULT_NAMES
CURESULT_HINTS = _curesult.CURESULT_HINTS
STICKY_ERRORS = _curesult.STICKY_ERRORS
curesult_name = _curesult.curesult_name
CudaError = _curesult.CudaError

SIGNATURES = _cuda_driver.SIGNATURES
FALLBACKS = _cuda_driver.FALLBACKS
Driver = _cuda_driver.Driver
MissingSymbol = _cuda_driver.MissingSymbol
load_libcuda = _cuda_driver.load_libcuda
load_failure_reason = _cuda_driver.load_failure_reason
driver_version_text = _cuda_driver.driver_version_text

PTX = _ptx.PTX
PTX_ISA = _ptx.PTX_ISA
PTX_TARGET = _ptx.PTX_TARGET
KERNELS = _ptx.KERNELS
REDUCE_BLOCK = _ptx.REDUCE_BLOCK
pattern_word = _ptx.pattern_word
pattern_seed = _ptx.pattern_seed

GIB = _driver_math.GIB
MIB = _driver_math.MIB
SAXPY_RTOL = _driver_math.SAXPY_RTOL
f32 = _driver_math.f32
random_u32 = _driver_math.random_u32
random_f32 = _driver_math.random_f32
vector_add_reference = _driver_math.vector_add_reference
saxpy_reference = _driver_math.saxpy_reference
reduction_partials = _driver_math.reduction_partials
compare_exact = _driver_math.compare_exact
compare_saxpy = _driver_math.compare_saxpy
bandwidth_gbs = _driver_math.bandwidth_gbs
theoretical_bandwidth_gbs = _driver_math.theoretical_bandwidth_gbs
grid_for = _driver_math.grid_for
plan_chunks = _driver_math.plan_chunks
fit_to_budget = _driver_math.fit_to_budget

Plan = _driver_tests.Plan
Gpu = _driver_tests.Gpu

# --------------------------------------------------------------------------- the suite


def _expect_gpu(argv: Sequence[str]) -> Tuple[bool, List[str]]:
    """Take ``--expect-gpu`` out of ``argv`` (the protocol's parser does not know it)."""
    rest = [a for a in argv if a != "--expect-gpu"]
    return len(rest) != len(argv), rest


def _no_gpu(rec: _protocol.Recorder, expect_gpu: bool, name: str, reason: str, cuda_error: Optional[str] = None) -> None:
    """No driver or no visible GPU: a failed test when a GPU was expected, else a skipped suite."""
    rec.add(name, "failed" if expect_gpu else "skipped", message=reason, cuda_error=cuda_error)
    if not expect_gpu:
        rec.skip_suite(reason)


def _visible_devices_note() -> str:
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    return f" (CUDA_VISIBLE_DEVICES={value!r})" if value is not None else ""


def gpu_test(rec: _protocol.Recorder, drv: Driver, gpu: Gpu, name: str, fn: Callable[[_protocol.TestCase], None],
             needs_module: bool = False) -> _protocol.TestCase:
    """Run ``fn(case)`` as test ``name`` on ``gpu`` with its context current; recorded skipped
    instead when an earlier test left the GPU unusable (or the module is needed and did not
    load). A sticky CUDA error (the context is lost) marks the GPU unusable for what follows."""
    unusable = gpu.unusable(needs_module)
    if unusable:
        return rec.add(name, "skipped", gpu=gpu.index, message=unusable)
    with rec.test(name, gpu=gpu.index) as case:
        if gpu.context:
            drv.set_current(gpu.context)
        fn(case)
    if case.cuda_error in STICKY_ERRORS and gpu.broken is None:
        gpu.broken = f"skipped after {case.cuda_error} in {name} on this GPU (its context is unusable)"
    return case


def body(rec: _protocol.Recorder, args: _protocol.Args, loader: Callable[[], Any] = load_libcuda,
         expect_gpu: bool = False, plan: Optional[Plan] = None) -> None:
    """The suite: see the module's docstring. ``loader`` returns the driver library (tests pass
    an emulated one); ``plan`` overrides the tier's sizes."""
    plan = plan or Plan(args.tier)
    rec.details["ptx"] = f"PTX ISA {PTX_ISA}, .target {PTX_TARGET}, JIT-compiled by the driver"

    try:
        lib = loader()
    except OSError as exc:
        _no_gpu(rec, expect_gpu, "load_libcuda", load_failure_reason(exc))
        return
    drv = Driver(lib)
    path = _cuda_driver.library_path("libcuda") or _cuda_driver.library_path("nvcuda")
    if path:
        rec.details["libcuda"] = path

    count = _init(rec, drv)
    init = rec.tests[-1]
    if init.status != "passed":
        if init.cuda_error == "CUDA_ERROR_NO_DEVICE":
            rec.tests.pop()
            _no_gpu(rec, expect_gpu, "cu_init", "no CUDA GPU visible: cuInit returned CUDA_ERROR_NO_DEVICE"
                    + _visible_devices_note(), "CUDA_ERROR_NO_DEVICE")
        return
    if count == 0:
        _no_gpu(rec, expect_gpu, "devices", "no CUDA GPU visible: cuDeviceGetCount returned 0" + _visible_devices_note())
        return

    selected, missing = _protocol.select_gpus(args.gpus, count)
    for index in missing:
        rec.add("select_gpu", "failed", gpu=index,
                message=f"GPU {index} is not visible ({count} visible: 0..{count - 1}){_visible_devices_note()}")
    gpus = [Gpu(i) for i in selected]
    try:
        for gpu in gpus:
            _setup_gpu(rec, drv, gpu)
        for gpu in gpus:
            _quick(rec, drv, gpu, plan)
        if plan.standard:
            for gpu in gpus:
                _standard(rec, drv, gpu, plan, args, len(gpus))
        if args.tier == "stress":
            _stress_all(rec, drv, gpus, plan, args)
    finally:
        for gpu in gpus:
            _teardown_gpu(rec, drv, gpu)


def _init(rec: _protocol.Recorder, drv: Driver) -> int:
    """The cu_init test: cuInit, the driver's CUDA version, the device count."""
    count = 0
    with rec.test("cu_init") as t:
        drv.init()
        version = drv.driver_version()
        count = drv.device_count()
        rec.details["driver_cuda_version"] = driver_version_text(version)
        t.metrics.update({"driver_version": version, "device_count": count})
        t.message = f"driver supports CUDA {driver_version_text(version)}; {count} device(s) visible"
    return count


def _setup_gpu(rec: _protocol.Recorder, drv: Driver, gpu: Gpu) -> None:
    """device_info, context and module_load on one GPU."""

    def device_info(t: _protocol.TestCase) -> None:
        gpu.device = drv.device(gpu.index)
        gpu.name = drv.device_name(gpu.device)
        for key, attribute in _cuda_driver.ATTRIBUTES.items():
            try:
                gpu.attrs[key] = drv.attribute(gpu.device, attribute)
            except CudaError:
                pass  # an attribute this driver does not know
        total = drv.total_memory(gpu.device)
        t.metrics.update(gpu.attrs)
        t.metrics["total_memory_bytes"] = total
        peak = gpu.theoretical_gbs
        if peak:
            t.metrics["theoretical_bandwidth_gbs"] = peak
        extra = []
        for getter in (drv.pci_bus_id, drv.uuid):
            try:
                extra.append(getter(gpu.device))
            except Exception:
                pass
        cc = f"{gpu.attrs.get('cc_major', '?')}.{gpu.attrs.get('cc_minor', '?')}"
        t.message = f"{gpu.name}: compute capability {cc}, {gpu.attrs.get('sm_count', '?')} SMs, {total / GIB:.1f} GiB"
        rec.details[f"gpu{gpu.index}"] = ", ".join([gpu.name, f"cc {cc}", f"{total // MIB} MiB"] + extra)

    def context(t: _protocol.TestCase) -> None:
        gpu.context = drv.retain_primary_context(gpu.device)
        drv.set_current(gpu.context)
        free, total = drv.memory_info()
        t.metrics.update({"free_bytes": free, "total_bytes": total})
        t.message = f"primary context; {free / GIB:.1f} of {total / GIB:.1f} GiB free"

    def module_load(t: _protocol.TestCase) -> None:
        start = time.perf_counter()
        module, info = drv.load_module(PTX)
        t.metrics["jit_s"] = time.perf_counter() - start
        gpu.module = module
        for name in KERNELS:
            gpu.functions[name] = drv.function(module, name)
        t.message = (f"PTX ISA {PTX_ISA} (.target {PTX_TARGET}) JIT-compiled for "
                     f"sm_{gpu.attrs.get('cc_major', '?')}{gpu.attrs.get('cc_minor', '?')}: {len(KERNELS)} kernels")
        if info:
            t.message += f"; JIT: {_protocol.one_line(info, 200)}"

    if gpu_test(rec, drv, gpu, "device_info", device_info).status != "passed":
        gpu.broken = gpu.broken or "skipped: device_info failed on this GPU"
        return
    if gpu_test(rec, drv, gpu, "context", context).status != "passed":
        gpu.broken = gpu.broken or "skipped: no context on this GPU"
        return
    gpu_test(rec, drv, gpu, "module_load", module_load)


def _apply(case: _protocol.TestCase, result: _driver_tests.Result, ok: str) -> None:
    """Put a ``run_*`` outcome on the test case: failed with its text, or passed with ``ok``."""
    failure, metrics = result
    case.metrics.update(metrics)
    if failure:
        case.fail(failure)
    else:
        case.message = ok
        if "bandwidth_gbs" in metrics:
            case.message += f" at {metrics['bandwidth_gbs']:.1f} GB/s"


def _copy_size(drv: Driver, wanted: int, fraction: int) -> int:
    """``wanted`` bytes, or 1/``fraction`` of free device memory when that is less; Skip when
    that leaves less than 64 KiB."""
    free, _ = drv.memory_info()
    nbytes = min(wanted, free // fraction) & ~3
    if nbytes < 64 << 10:
        raise _protocol.Skip(f"too little free device memory for a copy test ({free} bytes free)")
    return nbytes


def _quick(rec: _protocol.Recorder, drv: Driver, gpu: Gpu, plan: Plan) -> None:
    """The kernels and a device-to-device copy on one GPU."""
    n = plan.n
    passed = {"vector_add": f"{n} u32 sums exact",
              "saxpy": f"{n} float32 fma within {SAXPY_RTOL:g} x (|a*x|+|y|)",
              "reduction": f"{n} u32 summed in u64 per block, exact"}
    for name, run_kernel in _driver_tests.KERNEL_TESTS:

        def kernel(t: _protocol.TestCase, run_kernel: Callable[..., _driver_tests.Result] = run_kernel,
                   ok: str = passed[name]) -> None:
            _apply(t, run_kernel(drv, gpu, n), ok)

        gpu_test(rec, drv, gpu, name, kernel, needs_module=True)

    def d2d(t: _protocol.TestCase) -> None:
        nbytes = _copy_size(drv, plan.d2d_bytes, 8)
        _apply(t, _driver_tests.run_d2d(drv, gpu, nbytes, plan.d2d_reps),
               f"{plan.d2d_reps} x {nbytes / MIB:.1f} MiB copied device to device and checked")

    gpu_test(rec, drv, gpu, "d2d_bandwidth", d2d)


def _standard(rec: _protocol.Recorder, drv: Driver, gpu: Gpu, plan: Plan, args: _protocol.Args, n_gpus: int) -> None:
    """The memory pattern test and pinned host<->device bandwidths on one GPU."""

    def pattern(t: _protocol.TestCase) -> None:
        remaining = args.remaining(margin=10.0)
        budget = None if remaining is None else remaining * 0.5 / max(1, n_gpus)
        _apply(t, _driver_tests.run_memory_pattern(drv, gpu, plan, budget), "")
        if t.status == "passed":
            t.message = (f"{t.metrics.get('bytes_tested', 0) / GIB:.2f} GiB "
                         f"({100 * t.metrics.get('share_of_free', 0):.0f}% of free) written and verified "
                         f"{plan.pattern_passes}x; the device pattern matches the host's; an injected error was caught")

    gpu_test(rec, drv, gpu, "memory_pattern", pattern, needs_module=True)
    for name, to_device in (("h2d_bandwidth", True), ("d2h_bandwidth", False)):

        def host_copy(t: _protocol.TestCase, to_device: bool = to_device) -> None:
            nbytes = _copy_size(drv, plan.h2d_bytes, 4)
            _apply(t, _driver_tests.run_host_copy(drv, gpu, nbytes, plan.h2d_reps, to_device),
                   f"{plan.h2d_reps} x {nbytes / MIB:.1f} MiB pinned {'host to device' if to_device else 'device to host'}")

        gpu_test(rec, drv, gpu, name, host_copy)


def _stress_all(rec: _protocol.Recorder, drv: Driver, gpus: Sequence[Gpu], plan: Plan, args: _protocol.Args) -> None:
    """Stress every usable GPU at once (one thread each; ctypes releases the GIL in calls)."""
    duration = args.duration if args.duration is not None else plan.stress_duration
    remaining = args.remaining(margin=15.0)
    if remaining is not None:
        duration = min(duration, remaining * 0.8)
    deadline = time.monotonic() + max(0.0, duration)
    work: List[Tuple[Gpu, Dict[str, Any], threading.Thread]] = []
    for gpu in gpus:
        unusable = gpu.unusable(needs_module=True)
        if unusable:
            rec.add("stress", "skipped", gpu=gpu.index, message=unusable)
            continue
        result: Dict[str, Any] = {}
        thread = threading.Thread(target=_driver_tests.stress_gpu, args=(drv, gpu, plan, deadline, result),
                                  name=f"stress-gpu{gpu.index}", daemon=True)
        work.append((gpu, result, thread))
        thread.start()
    for gpu, result, thread in work:
        thread.join()
        rec.add("stress", result.get("status", "error"), gpu=gpu.index, duration_s=result.get("duration_s", 0.0),
                message=result.get("message"), error=result.get("error"), cuda_error=result.get("cuda_error"),
                metrics=result.get("metrics"))


def _teardown_gpu(rec: _protocol.Recorder, drv: Driver, gpu: Gpu) -> None:
    """Unload the GPU's module and release its context; a failure is a ``cleanup`` test unless
    the GPU was already broken."""
    problems: List[str] = []

    def attempt(*steps: Callable[[], None]) -> None:
        try:
            for step in steps:
                step()
        except Exception as exc:
            problems.append(str(exc))

    if gpu.module:
        attempt(lambda: drv.set_current(gpu.context), lambda: drv.unload_module(gpu.module))
        gpu.module = 0
    if gpu.context:
        attempt(lambda: drv.release_primary_context(gpu.device))
        gpu.context = 0
    if problems and not gpu.broken:
        rec.add("cleanup", "failed", gpu=gpu.index, message="; ".join(problems))


def run(argv: Optional[Sequence[str]] = None, stream: Any = None, loader: Callable[[], Any] = load_libcuda,
        plan: Optional[Plan] = None, redirect: bool = True, seal: bool = False) -> int:
    """Run the suite with ``argv`` (default ``sys.argv[1:]``), print the line on ``stream``."""
    expect, rest = _expect_gpu(list(sys.argv[1:] if argv is None else argv))

    def suite_body(rec: _protocol.Recorder, args: _protocol.Args) -> None:
        body(rec, args, loader=loader, expect_gpu=expect, plan=plan)

    return _protocol.run(SUITE, suite_body, rest, stream=stream, seal=seal, redirect=redirect)


if __name__ == "__main__":
    sys.exit(run(seal=True))
