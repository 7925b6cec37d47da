"""The driver suite's host-side arithmetic: deterministic inputs, the results the kernels must
produce and how a result differs from them, bandwidths, and how much work fits a GPU's memory
and a time budget. Nothing here touches the driver, so all of it is tested without a GPU.

Part of the driver smoke suite (``driver_suite.py``); standard library only.
"""

from __future__ import annotations

import array
import random
import struct
import sys
from typing import Any, List, Optional, Sequence, Tuple

try:  # imported as cudadoctor.smoke.suites._driver_math
    from . import _ptx
except ImportError:  # run by path: the suite's folder is sys.path[0]
    import _ptx  # type: ignore[no-redef,import-not-found]

GIB = 1 << 30
MIB = 1 << 20


def f32(x: float) -> float:
    """``x`` rounded to the nearest float32 (overflow gives an infinity)."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", x))[0])
    except OverflowError:
        return float("inf") if x > 0 else float("-inf")


def random_u32(n: int, seed: int) -> "array.array[int]":
    """``n`` deterministic pseudo-random u32 values."""
    out = array.array("I")
    out.frombytes(random.Random(seed).randbytes(4 * n))
    if sys.byteorder != "little":
        out.byteswap()
    return out


def random_f32(n: int, seed: int) -> "array.array[float]":
    """``n`` deterministic float32 values of either sign, magnitudes in [1/8, 2) with random
    23-bit mantissas (no NaN, infinity or denormal): random bits with the exponent's top six
    bits forced to 011111 (masked as one big integer, so it takes milliseconds)."""
    raw = random.Random(seed).randbytes(4 * n)
    keep = int.from_bytes(struct.pack("<I", 0x81FFFFFF) * n, "little")
    force = int.from_bytes(struct.pack("<I", 0x3E000000) * n, "little")
    bits = (int.from_bytes(raw, "little") & keep) | force
    out = array.array("f")
    out.frombytes(bits.to_bytes(4 * n, "little"))
    if sys.byteorder != "little":
        out.byteswap()
    return out


def vector_add_reference(a: Sequence[int], b: Sequence[int]) -> "array.array[int]":
    """``(a + b) mod 2**32`` element-wise: what vec_add_u32 computes."""
    return array.array("I", ((x + y) & _ptx.MASK32 for x, y in zip(a, b)))


def saxpy_reference(alpha: float, x: Sequence[float], y: Sequence[float]) -> "array.array[float]":
    """``alpha*x + y`` in double (the product of two float32 is exact there), rounded to float32."""
    return array.array("f", (alpha * xi + yi for xi, yi in zip(x, y)))


SAXPY_RTOL = 1e-6
"""Saxpy bound: ``|gpu - ref| <= SAXPY_RTOL * (|alpha*x| + |y|)``. fma.rn.f32 and the host's
double-then-float32 value are each within half a float32 ulp (2**-24 relative) of the exact
``alpha*x + y``, itself at most ``|alpha*x| + |y|``: they differ by at most ~1.2e-7 of that, so
1e-6 leaves an 8x margin and still catches any wrong bit above the last few."""


def reduction_partials(values: Sequence[int], grid: int, block: int) -> List[int]:
    """The per-block u64 sums reduce_sum_u32 writes for ``values`` with ``grid`` x ``block``
    threads: block ``b`` visits runs of ``block`` elements starting at ``(b + k*grid) * block``."""
    partial = [0] * grid
    for run, start in enumerate(range(0, len(values), block)):
        partial[run % grid] += sum(values[start:start + block])
    return [p & 0xFFFFFFFFFFFFFFFF for p in partial]


class Mismatch:
    """How ``got`` differs from ``expected``: count, first index and both values there, and for
    floats the largest absolute error."""

    def __init__(self, count: int, first: int, got: Any, expected: Any, max_abs_error: float = 0.0) -> None:
        self.count = count
        self.first = first
        self.got = got
        self.expected = expected
        self.max_abs_error = max_abs_error

    @classmethod
    def of_lengths(cls, got: Sequence[Any], expected: Sequence[Any], first: int) -> "Mismatch":
        """``got`` and ``expected`` differ in length: by how much, pointing at ``first``."""
        return cls(abs(len(got) - len(expected)), first, f"length {len(got)}", f"length {len(expected)}")

    def describe(self, total: int) -> str:
        return (f"{self.count} of {total} elements differ; first at [{self.first}]: "
                f"got {self.got!r}, expected {self.expected!r}")


def compare_exact(got: Sequence[Any], expected: Sequence[Any]) -> Optional[Mismatch]:
    """None when equal element by element (and in length), else the :class:`Mismatch`."""
    if len(got) == len(expected) and got == expected:
        return None
    if len(got) != len(expected):
        return Mismatch.of_lengths(got, expected, min(len(got), len(expected)))
    count, first = 0, -1
    for i, (g, e) in enumerate(zip(got, expected)):
        if g != e:
            count += 1
            if first < 0:
                first = i
    return Mismatch(count, first, got[first], expected[first])


def compare_saxpy(alpha: float, x: Sequence[float], y0: Sequence[float], got: Sequence[float],
                  rtol: float = SAXPY_RTOL) -> Tuple[Optional[Mismatch], float]:
    """Check saxpy output ``got`` against ``alpha*x + y0`` within :data:`SAXPY_RTOL`:
    (the mismatch or None, the largest relative error seen). NaN/inf never pass."""
    expected = saxpy_reference(alpha, x, y0)
    if len(got) != len(expected):
        return Mismatch.of_lengths(got, expected, 0), 0.0
    if got == expected:  # fma.rn and the double-then-float value agree almost always
        return None, 0.0
    count, first, max_abs, max_rel = 0, -1, 0.0, 0.0
    for i, (g, e) in enumerate(zip(got, expected)):
        scale = abs(alpha * x[i]) + abs(y0[i])
        err = abs(g - e)
        if not err <= rtol * scale:  # also catches NaN
            count += 1
            if first < 0:
                first = i
        if err == err:
            max_abs = max(max_abs, err)
            if scale > 0:
                max_rel = max(max_rel, err / scale)
    if count == 0:
        return None, max_rel
    return Mismatch(count, first, got[first], expected[first], max_abs), max_rel


def bandwidth_gbs(nbytes: float, seconds: float) -> float:
    """``nbytes`` moved in ``seconds`` as GB/s (10**9 bytes per second)."""
    if seconds <= 0 or nbytes < 0:
        raise ValueError(f"cannot compute a bandwidth from {nbytes} bytes in {seconds} s")
    return nbytes / seconds / 1e9


def theoretical_bandwidth_gbs(memory_clock_khz: int, bus_width_bits: int) -> Optional[float]:
    """The peak DRAM bandwidth from the device attributes, as NVIDIA's deviceQuery computes it:
    2 (double data rate) x memory clock x bus width. None when either attribute is 0 (unknown)."""
    if memory_clock_khz <= 0 or bus_width_bits <= 0:
        return None
    return 2.0 * memory_clock_khz * 1e3 * (bus_width_bits / 8) / 1e9


def grid_for(n: int, sm_count: int, block: int = _ptx.BLOCK, per_sm: int = 8) -> int:
    """Blocks for ``n`` elements: enough to cover them, at most ``per_sm`` per SM (grid-stride
    loops cover the rest), at least 1."""
    return max(1, min((n + block - 1) // block, max(1, sm_count) * per_sm))


def plan_chunks(free_bytes: int, share: float, chunk_bytes: int, min_chunk: int = 16 * MIB) -> List[int]:
    """Sizes of the chunks that cover ``share`` of ``free_bytes`` (each a multiple of 4 bytes,
    at most ``chunk_bytes``; a last, smaller chunk when at least ``min_chunk``)."""
    target = int(max(0, free_bytes) * share) & ~3
    chunk_bytes = max(4, chunk_bytes & ~3)
    sizes = [chunk_bytes] * (target // chunk_bytes)
    rest = target - sum(sizes)
    if rest >= min_chunk or (not sizes and rest >= 4):
        sizes.append(rest & ~3)
    return sizes


def fit_to_budget(sizes: List[int], bytes_per_second: float, passes: int, budget_s: Optional[float]) -> List[int]:
    """The leading chunks of ``sizes`` a pattern test can write and read ``passes`` times within
    ``budget_s`` at ``bytes_per_second`` (all of them when there is no budget; at least one)."""
    if budget_s is None or bytes_per_second <= 0:
        return list(sizes)
    allowed = budget_s * bytes_per_second / (2.0 * max(1, passes))
    out: List[int] = []
    for size in sizes:
        if out and sum(out) + size > allowed:
            break
        out.append(size)
    return out

