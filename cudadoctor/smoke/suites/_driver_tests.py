"""The driver suite's tests on one GPU, written against :class:`_cuda_driver.Driver`: the kernels
and a device copy (quick tier), the memory pattern test and pinned host copies (standard), and
the loop each stress thread runs. A ``run_*`` function returns a :data:`Result`;
``driver_suite.py`` records it as a test.

Part of the driver smoke suite (``driver_suite.py``); standard library only.
"""

from __future__ import annotations

import array
import ctypes
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

try:  # imported as cudadoctor.smoke.suites._driver_tests
    from . import _cuda_driver, _curesult, _driver_math, _protocol, _ptx, _shared_gpu
except ImportError:  # run by path: the suite's folder is sys.path[0]
    import _shared_gpu  # type: ignore[no-redef,import-not-found]
    import _cuda_driver  # type: ignore[no-redef,import-not-found]
    import _curesult  # type: ignore[no-redef,import-not-found]
    import _driver_math  # type: ignore[no-redef,import-not-found]
    import _protocol  # type: ignore[no-redef,import-not-found]
    import _ptx  # type: ignore[no-redef,import-not-found]

Driver = _cuda_driver.Driver
Resources = _cuda_driver.Resources
download, upload = _cuda_driver.download, _cuda_driver.upload
GIB, MIB = _driver_math.GIB, _driver_math.MIB

Result = Tuple[Optional[str], Dict[str, float]]
"""What a ``run_*`` function returns: the failure's text (None when it passed), the metrics."""

# --------------------------------------------------------------------------- sizes per tier


class Plan:
    """How much work each test does. The defaults suit the tier; tests shrink them."""

    def __init__(self, tier: str = "quick") -> None:
        self.tier = tier
        self.n = 1 << 20  # elements for vector add, saxpy, reduction
        self.d2d_bytes = 256 * MIB if tier == "quick" else GIB
        self.d2d_reps = 20
        self.h2d_bytes = 256 * MIB
        self.h2d_reps = 10
        self.pattern_share = 0.85  # of free memory, standard tier
        self.pattern_chunk = GIB
        self.pattern_passes = 2
        self.pattern_sample_words = 1 << 14  # words read back and checked on the host
        self.stress_share = 0.5  # of free memory per pattern pass, stress tier
        self.stress_duration = 60.0  # seconds, when --duration is not given
        self.stress_pattern_s = 2.0  # seconds of pattern passes between rounds of the kernels
        self.assumed_gbs = 50.0  # device bandwidth to size work by before one is measured

    @property
    def standard(self) -> bool:
        return self.tier in ("standard", "stress")


# --------------------------------------------------------------------------- one GPU


class Gpu:
    """What the suite knows about one selected GPU as it goes."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.device = -1
        self.name = ""
        self.attrs: Dict[str, int] = {}
        self.context = 0
        self.module = 0
        self.functions: Dict[str, int] = {}
        self.broken: Optional[str] = None  # why the remaining tests are skipped
        self.d2d_gbs: Optional[float] = None  # measured device copy bandwidth (bytes copied per s)

    @property
    def sm_count(self) -> int:
        return self.attrs.get("sm_count", 0) or 1

    @property
    def theoretical_gbs(self) -> Optional[float]:
        """The peak DRAM bandwidth from the memory clock and bus width (None when unknown)."""
        return _driver_math.theoretical_bandwidth_gbs(self.attrs.get("memory_clock_khz", 0),
                                                      self.attrs.get("memory_bus_width_bits", 0))

    def unusable(self, needs_module: bool) -> Optional[str]:
        """Why a test cannot run here: an earlier test broke the GPU, or it needs the PTX module
        and the module did not load. None when it can run."""
        if self.broken:
            return self.broken
        if needs_module and not self.module:
            return "the PTX module did not load on this GPU"
        return None


def _u64(v: int) -> ctypes.c_uint64:
    return ctypes.c_uint64(v)


def _u32(v: int) -> ctypes.c_uint32:
    return ctypes.c_uint32(v & _ptx.MASK32)


# --------------------------------------------------------------------------- the kernels


def run_vector_add(drv: Driver, gpu: Gpu, n: int, seed: int = 1) -> Result:
    """Launch vec_add_u32 on ``n`` random u32 pairs; (failure text or None, metrics)."""
    a, b = _driver_math.random_u32(n, seed), _driver_math.random_u32(n, seed + 1)
    with Resources(drv) as res:
        da, db, dc = res.device(4 * n), res.device(4 * n), res.device(4 * n)
        upload(drv, da, a)
        upload(drv, db, b)
        drv.memset32(dc, 0xDEADBEEF, n)
        grid = _driver_math.grid_for(n, gpu.sm_count)
        drv.launch(gpu.functions["vec_add_u32"], grid, _ptx.BLOCK, [_u64(da), _u64(db), _u64(dc), _u32(n)])
        drv.synchronize()
        got = download(drv, dc, "I", n)
    bad = _driver_math.compare_exact(got, _driver_math.vector_add_reference(a, b))
    return (bad.describe(n) if bad else None), {"elements": n, "mismatches": bad.count if bad else 0}


def run_saxpy(drv: Driver, gpu: Gpu, n: int, seed: int = 3) -> Result:
    """Launch saxpy_f32 on ``n`` random floats; (failure text or None, metrics)."""
    alpha = _driver_math.f32(1.7182817)
    x, y = _driver_math.random_f32(n, seed), _driver_math.random_f32(n, seed + 1)
    with Resources(drv) as res:
        dx, dy = res.device(4 * n), res.device(4 * n)
        upload(drv, dx, x)
        upload(drv, dy, y)
        drv.launch(gpu.functions["saxpy_f32"], _driver_math.grid_for(n, gpu.sm_count), _ptx.BLOCK,
                   [ctypes.c_float(alpha), _u64(dx), _u64(dy), _u32(n)])
        drv.synchronize()
        got = download(drv, dy, "f", n)
    bad, max_rel = _driver_math.compare_saxpy(alpha, x, y, got)
    rtol = _driver_math.SAXPY_RTOL
    metrics = {"elements": n, "max_rel_error": max_rel, "rtol": rtol, "mismatches": bad.count if bad else 0}
    if bad:
        return f"{bad.describe(n)} (tolerance {rtol:g} x (|a*x|+|y|))", metrics
    return None, metrics


def run_reduction(drv: Driver, gpu: Gpu, n: int, seed: int = 5) -> Result:
    """Launch reduce_sum_u32 over ``n`` random u32 (the total overflows 32 bits, so the u64
    accumulation is tested); every block's partial and the total must match exactly."""
    values = _driver_math.random_u32(n, seed)
    grid = _driver_math.grid_for(n, gpu.sm_count, _ptx.REDUCE_BLOCK, per_sm=4)
    with Resources(drv) as res:
        din, dout = res.device(4 * n), res.device(8 * grid)
        upload(drv, din, values)
        drv.memset32(dout, 0xFFFFFFFF, 2 * grid)
        drv.launch(gpu.functions["reduce_sum_u32"], grid, _ptx.REDUCE_BLOCK, [_u64(din), _u64(dout), _u32(n)])
        drv.synchronize()
        got = list(download(drv, dout, "Q", grid))
    expected = _driver_math.reduction_partials(values, grid, _ptx.REDUCE_BLOCK)
    total, want = sum(got), sum(values)
    metrics: Dict[str, float] = {"elements": n, "blocks": grid}
    bad = _driver_math.compare_exact(got, expected)
    if bad:
        return f"block partial sums: {bad.describe(grid)}; total {total}, expected {want}", metrics
    if total != want:  # cannot happen when every partial matches; kept as the stated invariant
        return f"total {total}, expected {want}", metrics
    return None, metrics


KERNEL_TESTS: Tuple[Tuple[str, Callable[..., Result]], ...] = (
    ("vector_add", run_vector_add), ("saxpy", run_saxpy), ("reduction", run_reduction))
"""The kernel tests in the order they run: (test name, ``run_*(drv, gpu, n, seed=its default)``)."""

# --------------------------------------------------------------------------- copies


def _timed_reps(drv: Driver, start: int, end: int, reps: int, copy: Callable[[], None]) -> float:
    """Seconds that ``reps`` calls of ``copy`` take on the GPU, between events ``start`` and ``end``
    (alone on the GPU among concurrent suites: _shared_gpu)."""
    with _shared_gpu.timed_alone():
        drv.record(start)
        for _ in range(reps):
            copy()
        drv.record(end)
        return drv.elapsed_s(start, end)


def _copy_result(nbytes: int, reps: int, seconds: float, intact: bool, corrupted: str) -> Result:
    """A timed copy's outcome: ``corrupted`` when the data did not survive, a failure when the
    events measured nothing, else the bandwidth of ``reps`` copies of ``nbytes``."""
    metrics: Dict[str, float] = {"bytes": nbytes, "reps": reps, "seconds": seconds}
    if not intact:
        return corrupted, metrics
    if seconds <= 0:
        return "the events measured no time for the copies", metrics
    metrics["bandwidth_gbs"] = _driver_math.bandwidth_gbs(nbytes * reps, seconds)  # bytes copied per second
    return None, metrics


def run_d2d(drv: Driver, gpu: Gpu, nbytes: int, reps: int) -> Result:
    """Time ``reps`` device-to-device copies of ``nbytes`` with events; check the copy."""
    nbytes &= ~3
    words = nbytes // 4
    with Resources(drv) as res:
        src, dst = res.device(nbytes), res.device(nbytes)
        start, end = res.event(), res.event()
        drv.memset32(src, 0xA5C3F00F, words)
        drv.memset32(dst, 0, words)
        drv.dtod_async(dst, src, nbytes)  # warm-up
        drv.synchronize()
        seconds = _timed_reps(drv, start, end, reps, lambda: drv.dtod_async(dst, src, nbytes))
        sample = min(words, 1024)
        head = download(drv, dst, "I", sample)
        tail = download(drv, dst + nbytes - 4 * sample, "I", sample)
    intact = not (any(w != 0xA5C3F00F for w in head) or any(w != 0xA5C3F00F for w in tail))
    failure, metrics = _copy_result(nbytes, reps, seconds, intact, "the copied data differs from the source")
    if failure:
        return failure, metrics
    gbs = gpu.d2d_gbs = metrics["bandwidth_gbs"]
    metrics["traffic_gbs"] = 2 * gbs  # each byte is read and written: DRAM traffic
    peak = gpu.theoretical_gbs
    if peak:
        metrics["theoretical_gbs"] = peak
        metrics["fraction_of_theoretical"] = 2 * gbs / peak
    return None, metrics


def run_host_copy(drv: Driver, gpu: Gpu, nbytes: int, reps: int, to_device: bool) -> Result:
    """Time ``reps`` pinned host<->device copies of ``nbytes``; check the data round-trips."""
    nbytes &= ~3
    with Resources(drv) as res:
        host_src, host_dst = res.host(nbytes), res.host(nbytes)
        dev = res.device(nbytes)
        start, end = res.event(), res.event()
        seed_words = _driver_math.random_u32(1024, 7 if to_device else 8).tobytes()
        for offset in range(0, nbytes, len(seed_words)):
            ctypes.memmove(host_src + offset, seed_words, min(len(seed_words), nbytes - offset))
        ctypes.memset(host_dst, 0, nbytes)
        drv.htod_async(dev, host_src, nbytes)  # warm-up, and the data for the device->host run
        drv.synchronize()
        if to_device:
            seconds = _timed_reps(drv, start, end, reps, lambda: drv.htod_async(dev, host_src, nbytes))
            drv.dtoh_async(host_dst, dev, nbytes)
            drv.synchronize()
        else:
            seconds = _timed_reps(drv, start, end, reps, lambda: drv.dtoh_async(host_dst, dev, nbytes))
        same = _host_equal(host_src, host_dst, nbytes)
    return _copy_result(nbytes, reps, seconds, same, "the data read back differs from what was written")


def _host_equal(a: int, b: int, nbytes: int, step: int = 16 * MIB) -> bool:
    for offset in range(0, nbytes, step):
        size = min(step, nbytes - offset)
        if ctypes.string_at(a + offset, size) != ctypes.string_at(b + offset, size):
            return False
    return True


# --------------------------------------------------------------------------- memory patterns


class PatternOutcome:
    """What pattern passes found: mismatching words, where the first was, what it held."""

    def __init__(self) -> None:
        self.errors = 0
        self.first: Optional[Tuple[int, int, int]] = None  # (pass, chunk, word index)
        self.observed: Optional[Tuple[int, int]] = None  # (word read back, word expected) there
        self.bytes_checked = 0

    def where(self, chunks: Sequence[int]) -> str:
        """``first in pass P, chunk C, word I (device address A): read X, expected Y (bits Z)``."""
        if self.first is None:
            return ""
        p, c, i = self.first
        text = f"first in pass {p}, chunk {c}, word {i} (device address {chunks[c] + 4 * i:#x})"
        if self.observed is not None:
            got, want = self.observed
            text += f": read {got:#010x}, expected {want:#010x} (bits {got ^ want:#010x} differ)"
        return text


def pattern_pass(drv: Driver, gpu: Gpu, chunks: Sequence[int], sizes: Sequence[int], pass_index: int,
                 err_buf: int, out: PatternOutcome) -> None:
    """Fill every chunk with its pattern, then check every chunk (so a write that lands in
    another chunk is caught), adding mismatches to ``out``."""
    grid = gpu.sm_count * 8
    for c, (ptr, size) in enumerate(zip(chunks, sizes)):
        seed = _ptx.pattern_seed(pass_index, c)
        drv.launch(gpu.functions["pattern_fill"], grid, _ptx.BLOCK, [_u64(ptr), _u64(size // 4), _u32(seed)])
    drv.synchronize()
    for c, (ptr, size) in enumerate(zip(chunks, sizes)):
        count, first = check_chunk(drv, gpu, ptr, size // 4, _ptx.pattern_seed(pass_index, c), err_buf)
        out.bytes_checked += size
        if count:
            out.errors += count
            if out.first is None:
                out.first = (pass_index, c, first)
                if 0 <= first < size // 4:
                    (got,) = download(drv, ptr + 4 * first, "I", 1)
                    out.observed = (got, _ptx.pattern_word(first, _ptx.pattern_seed(pass_index, c)))


def check_chunk(drv: Driver, gpu: Gpu, ptr: int, words: int, seed: int, err_buf: int) -> Tuple[int, int]:
    """Run pattern_check over one chunk: (mismatching words, first mismatching index)."""
    upload(drv, err_buf, array.array("Q", [0, _ptx.NO_ERROR_INDEX]))
    drv.launch(gpu.functions["pattern_check"], gpu.sm_count * 8, _ptx.BLOCK,
               [_u64(ptr), _u64(words), _u32(seed), _u64(err_buf)])
    drv.synchronize()
    count, first = download(drv, err_buf, "Q", 2)
    return int(count), int(first)


def allocate_chunks(drv: Driver, res: Resources, sizes: Sequence[int]) -> Tuple[List[int], List[int]]:
    """Allocate as many of ``sizes`` as the GPU gives (stopping at CUDA_ERROR_OUT_OF_MEMORY)."""
    ptrs: List[int] = []
    for size in sizes:
        try:
            ptrs.append(res.device(size))
        except _curesult.CudaError as exc:
            if exc.name != "CUDA_ERROR_OUT_OF_MEMORY" or not ptrs:
                raise
            break
    return ptrs, list(sizes[: len(ptrs)])


def run_memory_pattern(drv: Driver, gpu: Gpu, plan: Plan, budget_s: Optional[float]) -> Result:
    """Write and verify pseudo-random patterns over ``plan.pattern_share`` of free memory in
    chunks, ``plan.pattern_passes`` times; then prove the checker catches a corrupted word and
    that the device's pattern equals the host's :func:`pattern_word` on a sample."""
    free, total = drv.memory_info()
    bw = (gpu.d2d_gbs or plan.assumed_gbs) * 1e9
    sizes = _driver_math.fit_to_budget(_driver_math.plan_chunks(free, plan.pattern_share, plan.pattern_chunk),
                                       bw, plan.pattern_passes, budget_s)
    if not sizes:
        raise _protocol.Skip(f"not enough free memory for a pattern test ({free} bytes free)")
    out = PatternOutcome()
    metrics: Dict[str, float] = {"free_bytes": free, "total_bytes": total}
    with Resources(drv) as res:
        err_buf = res.device(16)
        chunks, sizes = allocate_chunks(drv, res, sizes)
        start = time.perf_counter()
        for p in range(plan.pattern_passes):
            pattern_pass(drv, gpu, chunks, sizes, p, err_buf, out)
        seconds = time.perf_counter() - start
        tested = sum(sizes)
        metrics.update({"bytes_tested": tested, "share_of_free": tested / free if free else 0.0,
                        "chunks": len(chunks), "passes": plan.pattern_passes, "errors": out.errors})
        if seconds > 0:
            metrics["pattern_gbs"] = _driver_math.bandwidth_gbs(2 * out.bytes_checked, seconds)
        if out.errors:
            return (f"{out.errors} words differ from the pattern written over {tested / GIB:.2f} GiB; "
                    f"{out.where(chunks)}"), metrics
        return _verify_the_checker(drv, gpu, plan, chunks[0], sizes[0] // 4, err_buf), metrics


def _verify_the_checker(drv: Driver, gpu: Gpu, plan: Plan, chunk: int, words: int, err_buf: int) -> Optional[str]:
    """After clean passes over ``chunk`` (the first, of ``words`` words): the device's pattern is
    the host's :func:`pattern_word` on a sample, and pattern_check counts a corrupted word."""
    seed = _ptx.pattern_seed(plan.pattern_passes - 1, 0)  # the last pass's, for the first chunk
    sample = min(plan.pattern_sample_words, words)
    got = download(drv, chunk, "I", sample)
    bad = _driver_math.compare_exact(got, array.array("I", (_ptx.pattern_word(i, seed) for i in range(sample))))
    if bad:
        return f"the device pattern differs from the host's: {bad.describe(sample)}"
    victim = words - 1
    drv.memset32(chunk + 4 * victim, _ptx.pattern_word(victim, seed) ^ 1, 1)
    count, first = check_chunk(drv, gpu, chunk, words, seed, err_buf)
    if (count, first) != (1, victim):
        return f"the checker missed an injected error: counted {count} (first at {first}), expected 1 at {victim}"
    return None


# --------------------------------------------------------------------------- stress


def stress_gpu(drv: Driver, gpu: Gpu, plan: Plan, deadline: float, result: Dict[str, Any]) -> None:
    """Until ``deadline`` (monotonic): the three kernels with fresh inputs, verified, then pattern
    passes over ``plan.stress_share`` of free memory for about ``plan.stress_pattern_s`` (the GPU
    stays busy while the host verifies little). Fills ``result`` (a test's fields)."""
    start = time.perf_counter()
    metrics: Dict[str, float] = {"iterations": 0, "pattern_passes": 0, "bytes_checked": 0, "pattern_errors": 0}
    result.update(status="passed", metrics=metrics, message=None, error=None, cuda_error=None)
    try:
        drv.set_current(gpu.context)
        free, _ = drv.memory_info()
        sizes = _driver_math.plan_chunks(free, plan.stress_share, plan.pattern_chunk)
        with Resources(drv) as res:
            err_buf = res.device(16)
            chunks, sizes = allocate_chunks(drv, res, sizes) if sizes else ([], [])
            iteration = 0
            while time.monotonic() < deadline:
                failure = _stress_round(drv, gpu, plan, iteration, chunks, sizes, err_buf, deadline, metrics)
                if failure:
                    result.update(status="failed", message=failure)
                    return
                iteration += 1
                metrics["iterations"] = iteration
    except Exception as exc:
        result.update(status="error", error=_protocol.format_error(exc),
                      cuda_error=getattr(exc, "name", None) or _protocol.decode_cuda_error(str(exc)))
    finally:
        result["duration_s"] = time.perf_counter() - start
        metrics["seconds"] = result["duration_s"]
        if result.get("status") == "passed":
            result["message"] = (f"{int(metrics['iterations'])} rounds of the kernels and "
                                 f"{int(metrics['pattern_passes'])} pattern passes "
                                 f"({metrics['bytes_checked'] / GIB:.1f} GiB checked), all verified")


def _stress_round(drv: Driver, gpu: Gpu, plan: Plan, iteration: int, chunks: Sequence[int], sizes: Sequence[int],
                  err_buf: int, deadline: float, metrics: Dict[str, float]) -> Optional[str]:
    """One stress round: the kernels, then pattern passes for up to ``plan.stress_pattern_s``
    (counted in ``metrics``). The failure's text, or None."""
    for name, fn in KERNEL_TESTS:
        failure, _ = fn(drv, gpu, plan.n, 100 + 3 * iteration)
        if failure:
            return f"iteration {iteration}, {name}: {failure}"
    burst_end = min(deadline, time.monotonic() + plan.stress_pattern_s)
    while chunks:
        passes = int(metrics["pattern_passes"])
        out = PatternOutcome()
        pattern_pass(drv, gpu, chunks, sizes, 1000 + passes, err_buf, out)
        metrics["pattern_passes"] = passes + 1
        metrics["bytes_checked"] += out.bytes_checked
        if out.errors:
            metrics["pattern_errors"] += out.errors
            return f"pattern pass {passes + 1}: {out.errors} words differ from the pattern; {out.where(chunks)}"
        if time.monotonic() >= burst_end:
            break
    return None
