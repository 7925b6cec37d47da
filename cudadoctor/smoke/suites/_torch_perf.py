"""The torch suite's measurements: copy bandwidths (host->device pinned, device->host,
device->device) timed with CUDA events, and the stress tier's sustained GEMM with result
comparison while NVML watches clocks, temperature, throttle reasons and ECC counters. The GEMM
rate (``tflops``) is 2 n^3 per GEMM over the GEMMs' own time, each GEMM between two CUDA events:
the comparison of each result with the first runs between GEMMs and is not counted, so the figure
is what a plain matmul loop of the same size measures (``tflops_with_checks`` counts everything).

Bandwidth definitions (GB = 10^9 bytes): ``gbs`` = bytes of one copy / time of one copy, the
mean over ``iterations`` back-to-back copies after 2 warm-up copies, timed by CUDA events on
the copying stream (``time.perf_counter`` around the loop on the CPU device). For
device->device ``rw_gbs`` = 2 x bytes / time too, the memory traffic (read + write) that
bandwidthTest reports and memory specifications quote.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

try:
    from . import _compare, _protocol, _shared_gpu
except ImportError:  # run by path
    import _compare  # type: ignore[no-redef,import-not-found]
    import _protocol  # type: ignore[no-redef,import-not-found]
    import _shared_gpu  # type: ignore[no-redef,import-not-found]

import torch

MiB = 1 << 20
WARMUP = 2

# (host<->device bytes, device->device bytes, iterations) per tier: device copies of 256 MiB and
# more exceed every L2 cache (50 MB on H100/H200), so they measure memory, not cache.
SIZES: Dict[str, Tuple[int, int, int]] = {"quick": (64 * MiB, 256 * MiB, 10), "standard": (256 * MiB, 1024 * MiB, 20)}


def _is_cuda(device: str) -> bool:
    return torch.device(device).type == "cuda"


def time_loop(device: str, step: Callable[[], Any], iterations: int) -> float:
    """Seconds that ``iterations`` calls of ``step`` took, after WARMUP calls: CUDA events on
    the device's current stream, or perf_counter on the CPU; alone on the GPU among concurrent
    suites (_shared_gpu)."""
    with _shared_gpu.timed_alone():
        return _time_loop(device, step, iterations)


def _time_loop(device: str, step: Callable[[], Any], iterations: int) -> float:
    for _ in range(WARMUP):
        step()
    if not _is_cuda(device):
        start = time.perf_counter()
        for _ in range(iterations):
            step()
        return time.perf_counter() - start
    with torch.cuda.device(device):
        torch.cuda.synchronize()
        cuda: Any = torch.cuda  # Event is untyped
        begin, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(iterations):
            step()
        end.record()
        end.synchronize()
        return float(begin.elapsed_time(end)) / 1000.0


def _pattern(nbytes: int, pinned: bool) -> torch.Tensor:
    """``nbytes`` (a multiple of 1 MiB) of host memory holding a repeated 1 MiB random block."""
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
    block = torch.randint(0, 256, (MiB,), dtype=torch.uint8, generator=torch.Generator().manual_seed(3))
    host.view(-1, MiB).copy_(block.expand(nbytes // MiB, MiB))
    return host


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Do two byte buffers agree on a sparse sample (every 4099th byte)?"""
    return bool(torch.equal(a[::4099].cpu(), b[::4099].cpu()))


def bandwidth(t: _protocol.TestCase, device: str, direction: str, nbytes: int, iterations: int) -> None:
    """Time ``iterations`` copies of ``nbytes`` in ``direction`` (h2d, d2h, d2d), check the bytes
    arrived, report ``gbs`` (and ``rw_gbs`` for d2d)."""
    nbytes = max(MiB, nbytes // MiB * MiB)
    pinned = _is_cuda(device)
    if direction == "d2d":
        src = _pattern(nbytes, False).to(device)
        dst = torch.empty_like(src)
    elif direction == "h2d":
        src, dst = _pattern(nbytes, pinned), torch.empty(nbytes, dtype=torch.uint8, device=device)
    else:
        src, dst = _pattern(nbytes, False).to(device), torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)

    def step() -> None:
        dst.copy_(src, non_blocking=True)

    seconds = time_loop(device, step, iterations)
    if not _same(src, dst):
        raise _protocol.Fail(f"{direction}: the copied bytes differ from the source")
    m = _compare.copy_bandwidth(nbytes, seconds, iterations)
    t.metrics.update(m)
    what = {"h2d": "host (pinned) -> device", "d2h": "device -> host (pinned)", "d2d": "device -> device"}[direction]
    if not pinned:
        what = what.replace(" (pinned)", "")
    t.message = (f"{what}: {nbytes // MiB} MiB x {iterations} copies after {WARMUP} warm-up, "
                 f"{m['gbs']:.1f} GB/s = bytes per copy / time per copy (10^9 B/s)")
    if direction == "d2d":
        t.metrics["rw_gbs"] = 2 * m["gbs"]
        t.message += f"; read+write traffic {2 * m['gbs']:.1f} GB/s"
    t.message += "; CUDA events" if pinned else "; perf_counter"


def bandwidth_sizes(device: str, tier: str) -> Tuple[int, int, int]:
    """(host bytes, device bytes, iterations) for the tier, the device copy capped at 1/8 of free
    memory (it needs two buffers)."""
    host, dev, iters = SIZES.get(tier, SIZES["quick"])
    if _is_cuda(device):
        free, _ = torch.cuda.mem_get_info(device)
        dev = max(MiB, min(dev, free // 8 // MiB * MiB))
        host = min(host, dev)
    return host, dev, iters


# --------------------------------------------------------------------------- NVML watch


class Watch:
    """NVML readings of the GPUs under test, matched to torch devices by UUID (pynvml when
    importable; without it ``error`` says why and samples are empty)."""

    def __init__(self, uuids: Sequence[str]) -> None:
        self.handles: List[Any] = []
        self.error: Optional[str] = None
        self.nvml: Any = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml = pynvml
            for uuid in uuids:
                u = uuid if uuid.upper().startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
                self.handles.append(pynvml.nvmlDeviceGetHandleByUUID(u))
        except Exception as exc:
            self.error, self.handles = _protocol.format_error(exc), []

    def sample(self, index: int) -> Dict[str, float]:
        """temperature_c, sm_clock_mhz, mem_clock_mhz, power_w, throttle_reasons, ecc_corrected,
        ecc_uncorrected: whichever this GPU answers."""
        if index >= len(self.handles):
            return {}
        n, h = self.nvml, self.handles[index]
        reasons = getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            n, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
        reads: Dict[str, Callable[[], Any]] = {
            "temperature_c": lambda: n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU),
            "sm_clock_mhz": lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM),
            "mem_clock_mhz": lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM),
            "power_w": lambda: n.nvmlDeviceGetPowerUsage(h) / 1000.0,
            "throttle_reasons": lambda: reasons(h) if reasons else None,
            "ecc_corrected": lambda: n.nvmlDeviceGetTotalEccErrors(h, n.NVML_MEMORY_ERROR_TYPE_CORRECTED,
                                                                   n.NVML_VOLATILE_ECC),
            "ecc_uncorrected": lambda: n.nvmlDeviceGetTotalEccErrors(h, n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                                                     n.NVML_VOLATILE_ECC),
        }
        out: Dict[str, float] = {}
        for key, read in reads.items():
            try:
                value = read()
            except Exception:  # NOT_SUPPORTED on this GPU (or a MIG instance)
                continue
            if value is not None:
                out[key] = float(value)
        return out


# --------------------------------------------------------------------------- stress


class Clock:
    """Marks on a device's stream around each GEMM, so that its time is measured apart from the
    comparison that follows it: CUDA events on the device's current stream (read after a
    synchronisation), ``time.perf_counter`` on the CPU, where a GEMM is done when it returns."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.cuda = _is_cuda(device)

    def mark(self) -> Any:
        if not self.cuda:
            return time.perf_counter()
        cuda: Any = torch.cuda  # Event is untyped
        event = cuda.Event(enable_timing=True)
        event.record(torch.cuda.current_stream(self.device))
        return event

    def seconds(self, begin: Any, end: Any) -> float:
        """Between two marks; for CUDA events, once the device has passed ``end``."""
        if not self.cuda:
            return float(end - begin)
        return float(begin.elapsed_time(end)) / 1000.0


class _Gemm:
    """One device's sustained GEMM: inputs, the first result (checked against float64), the
    per-element threshold, and on-device counters of wrong and bitwise-different elements. Each
    GEMM is timed on its own (:class:`Clock`); comparing its result with the first is not counted."""

    def __init__(self, device: str, n: int, kind: str, clock: Optional[Clock] = None) -> None:
        self.device, self.n, self.kind = device, n, kind
        self.clock = clock or Clock(device)
        dtype = torch.bfloat16 if kind == "bf16" else torch.float32
        gen = torch.Generator(device=device).manual_seed(99)
        self.a = torch.randn(n, n, device=device, generator=gen).to(dtype)
        self.b = torch.randn(n, n, device=device, generator=gen).to(dtype)
        self.golden = self.a @ self.b
        rows = torch.arange(0, n, max(1, n // 32), device=device)
        self.ref_error = _compare.matmul_error(self.golden[rows], self.a[rows], self.b)
        self.threshold = (self.a.abs().float() @ self.b.abs().float()).mul_(_compare.MATMUL_TOL[kind])
        self.golden_f = self.golden.float()
        self.wrong = torch.zeros((), dtype=torch.int64, device=device)
        self.bitwise = torch.zeros((), dtype=torch.int64, device=device)
        self.iterations = 0
        self.gemm_seconds = 0.0
        self.spans: List[Tuple[Any, Any]] = []  # marks around GEMMs not yet added to gemm_seconds

    def multiply(self) -> torch.Tensor:
        return self.a @ self.b

    def verify(self, c: torch.Tensor) -> None:
        """Count the elements of ``c`` that differ from the first result, bitwise and beyond the threshold."""
        self.bitwise += (c != self.golden).sum()
        # c.float() is c itself for fp32: the in-place difference comes after the bitwise check
        self.wrong += torch.gt(c.float().sub_(self.golden_f).abs_(), self.threshold).sum()

    def step(self) -> None:
        begin = self.clock.mark()
        c = self.multiply()
        self.spans.append((begin, self.clock.mark()))
        self.verify(c)
        self.iterations += 1

    def settle(self) -> None:
        """Add the timed GEMMs to ``gemm_seconds`` (after the device was synchronised)."""
        self.gemm_seconds += sum(self.clock.seconds(begin, end) for begin, end in self.spans)
        self.spans.clear()


def stress_size(device: str) -> Tuple[int, str]:
    """(n, kind) of the stress GEMM: bf16 on sm_80+ (tensor cores: the most power), fp32
    otherwise; n = 8192 (4096 below 16 GiB of memory, 2048 below 4 GiB, 128 on the CPU)."""
    if not _is_cuda(device):
        return 128, "fp32"
    props = torch.cuda.get_device_properties(device)
    kind = "bf16" if props.major >= 8 else "fp32"
    total = props.total_memory
    return (8192 if total >= 16 << 30 else 4096 if total >= 4 << 30 else 2048), kind


def stress(devices: Sequence[str], duration: float, watch: Optional[Watch] = None,
           size: Optional[Tuple[int, str]] = None, clock: Callable[[str], Clock] = Clock,
           now: Callable[[], float] = time.monotonic) -> List[Dict[str, Any]]:
    """Run the GEMM on every device for ``duration`` seconds (round-robin, asynchronous launches,
    a synchronisation about every 0.5 s to sample NVML); one result dict per device: status,
    message, metrics. ``tflops`` counts the GEMMs' own time (``clock(device)`` marks each one), not
    the comparisons of their results; ``now`` is the host clock that bounds the run (tests fake both)."""
    from_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        gemms = [_Gemm(d, *(size or stress_size(d)), clock=clock(d)) for d in devices]
        before = [watch.sample(i) if watch else {} for i in range(len(devices))]
        reasons, peak = [0] * len(devices), [dict(s) for s in before]
        start, inner = now(), 1
        while True:
            round_start = now()
            for g in gemms:
                for _ in range(inner):
                    g.step()
            for d in devices:
                if _is_cuda(d):
                    torch.cuda.synchronize(d)
            for g in gemms:
                g.settle()
            for i in range(len(devices)):
                s = watch.sample(i) if watch else {}
                reasons[i] |= int(s.get("throttle_reasons", 0))
                if "temperature_c" in s:
                    peak[i]["temperature_c"] = max(s["temperature_c"], peak[i].get("temperature_c", 0.0))
            at = now()
            if at - start >= duration:
                break
            inner = max(1, min(1000, int(inner * 0.5 / max(at - round_start, 1e-3))))
        elapsed = now() - start
        after = [watch.sample(i) if watch else {} for i in range(len(devices))]
        return [_stress_result(g, elapsed, before[i], after[i], reasons[i], peak[i], watch)
                for i, g in enumerate(gemms)]
    finally:
        torch.backends.cuda.matmul.allow_tf32 = from_tf32


def _stress_result(g: _Gemm, elapsed: float, before: Dict[str, float], after: Dict[str, float], reasons: int,
                   peak: Dict[str, float], watch: Optional[Watch]) -> Dict[str, Any]:
    wrong, bitwise = int(g.wrong.item()), int(g.bitwise.item())
    flops = 2.0 * g.n ** 3 * g.iterations
    tflops = flops / g.gemm_seconds / 1e12 if g.gemm_seconds > 0 else 0.0
    ok, seen = _compare.stress_verdict(wrong, before, after, reasons)
    ref_ok = _compare.within(g.ref_error, _compare.MATMUL_TOL[g.kind])
    metrics: Dict[str, float] = {"iterations": g.iterations, "seconds": elapsed, "tflops": tflops,
                                 "gemm_seconds": g.gemm_seconds, "n": g.n,
                                 "tflops_with_checks": flops / elapsed / 1e12 if elapsed > 0 else 0.0,
                                 "mismatched_elements": wrong, "bitwise_different_elements": bitwise,
                                 "reference_error": g.ref_error, "throttle_reasons": reasons,
                                 "hw_slowdown": bool(reasons & _compare.HW_SLOWDOWN)}
    for key, value in after.items():
        metrics[f"after_{key}"] = value
    for key, value in before.items():
        metrics[f"before_{key}"] = value
    if "temperature_c" in peak:
        metrics["max_temperature_c"] = peak["temperature_c"]
    message = (f"{g.iterations} GEMMs {g.n}x{g.n} {g.kind} in {elapsed:.1f} s: {tflops:.1f} TFLOPS over the GEMMs' "
               f"own {g.gemm_seconds:.1f} s, each result then compared with the first (checked against float64: "
               f"error {g.ref_error:.1e}), the comparisons timed apart; {wrong} wrong, {bitwise} bitwise-different "
               "elements")
    if seen:
        message += f"; {seen}"
    if watch is not None and watch.error:
        message += f" (NVML: {watch.error})"
    if not ref_ok:
        ok = False
        message = f"the first result is off: error {g.ref_error:.2e} > {_compare.MATMUL_TOL[g.kind]:.0e}; " + message
    return {"status": "passed" if ok else "failed", "message": message, "metrics": metrics}
