"""Pure comparison helpers of the torch suite: error metrics, tolerances, bandwidth arithmetic,
device enumeration against NVML. Standard library only (tensor arguments are duck-typed), so
the verdict logic is tested without a GPU and imported by path without cudadoctor.

Error metric of a matmul ``C = A @ B`` against the float64 reference ``R`` computed from the
same (already rounded) inputs::

    err = max_ij |C_ij - R_ij| / (|A| @ |B|)_ij

This is the quantity the standard floating-point bound is stated in (|fl(a.b) - a.b| <=
gamma_k |a|.|b|), so it is immune to cancellation in ``R`` and one tolerance fits every element.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

# Matmul tolerances on ``err`` above, for k = 256 (MATMUL_K) and inputs ~ N(0, 1) rounded to
# the dtype first (input rounding is not counted, except for TF32 which rounds fp32 inputs inside
# the tensor cores). u is the unit roundoff of the dtype. Measured on a CPU: fp32 1.4e-7, fp16
# 1.5e-4, bf16 1.2e-3 (output rounding dominates for fp16/bf16).
MATMUL_K = 256
MATMUL_TOL: Dict[str, float] = {
    # fp32 accumulation: worst case k*u = 256 * 2^-24 = 1.5e-5, typical sqrt(k)*u = 1e-6. 1e-5
    # is 70x the measured error and well below what TF32 gives (3.4e-4), so a GEMM silently run
    # in TF32 fails here.
    "fp32": 1e-5,
    # TF32 keeps 10 mantissa bits: rounding an fp32 input costs up to 2^-11 (to nearest) or
    # 2^-10 (truncation), so a product is off by up to 2^-10..2^-9 = 1e-3..2e-3 of |a||b|, plus
    # fp32 accumulation; 4e-3 is twice the worst case. Truncation emulated on a CPU: 3.4e-4.
    "tf32": 4e-3,
    # fp16 output rounding 2^-11 = 4.9e-4 of |C| <= |A||B|; cuBLAS may reduce split-K partial
    # sums in fp16 (torch allows it by default), a few more u each: 5e-3 is ~10 u.
    "fp16": 5e-3,
    # bf16 output rounding 2^-8 = 3.9e-3, and the same reduced-precision split-K: ~8 u.
    "bf16": 3e-2,
}

# Gradients (fp32 on the device, TF32 off) against the float64 CPU model with the same weights
# and inputs, normwise per tensor: ||g - g_ref|| / ||g_ref||. fp32 noise on these sizes is ~1e-7
# to 1e-6. Plain GEMMs (MLP) get 1e-4; convolutions 1e-3, since cuDNN may pick Winograd or FFT
# algorithms whose fp32 error reaches 1e-5..1e-4. A wrong kernel gives O(1).
GRAD_TOL: Dict[str, float] = {"mlp": 1e-4, "conv": 1e-3}

GB = 1e9  # bandwidths are in GB/s of 10^9 bytes, as bandwidthTest and nccl-tests print them
TINY = 1e-300


def matmul_error(c: Any, a: Any, b: Any) -> float:
    """``max |C - A@B| / (|A|@|B|)`` in float64 on the CPU (tensors of any dtype/device)."""
    a64, b64 = a.detach().double().cpu(), b.detach().double().cpu()
    ref = a64 @ b64
    scale = (a64.abs() @ b64.abs()).clamp_min(TINY)
    return float(((c.detach().double().cpu() - ref).abs() / scale).max())


def rel_error(x: Any, ref: Any) -> float:
    """Normwise relative error ``||x - ref|| / ||ref||`` in float64 on the CPU."""
    x64, r64 = x.detach().double().cpu(), ref.detach().double().cpu()
    if tuple(x64.shape) != tuple(r64.shape):
        return math.inf
    den = float(r64.norm())
    num = float((x64 - r64).norm())
    return num / den if den > 0 else (0.0 if num == 0 else math.inf)


def worst(errors: Mapping[str, float]) -> Tuple[str, float]:
    """The name and value of the largest error (NaN counts as the worst)."""
    name, value = "", 0.0
    for key, err in errors.items():
        if math.isnan(err) or err > value or not name:
            name, value = key, err
            if math.isnan(err):
                break
    return name, value


def within(err: float, tol: float) -> bool:
    """``err <= tol`` and finite (NaN and infinity never pass)."""
    return math.isfinite(err) and err <= tol


def verdict(what: str, err: float, tol: float) -> Tuple[bool, str]:
    """(ok, one-line message) for one compared quantity."""
    ok = within(err, tol)
    return ok, f"{what}: error {err:.2e} {'<=' if ok else '>'} tolerance {tol:.0e}"


# --------------------------------------------------------------------------- bandwidth


def gbs(nbytes: float, seconds: float) -> float:
    """GB/s (10^9 bytes per second); 0 when the time is not positive."""
    return nbytes / seconds / GB if seconds > 0 else 0.0


def copy_bandwidth(nbytes: int, total_s: float, iterations: int) -> Dict[str, float]:
    """Metrics of ``iterations`` copies of ``nbytes`` that took ``total_s`` seconds in all:
    ``gbs`` = bytes copied / time per copy (what a torch copy loop measures)."""
    per = total_s / iterations if iterations > 0 else 0.0
    return {"gbs": gbs(nbytes, per), "bytes": float(nbytes), "iterations": float(iterations), "time_s": per}


def allreduce_bandwidth(nbytes: int, seconds: float, ranks: int) -> Tuple[float, float]:
    """(algbw, busbw) in GB/s of one all-reduce of ``nbytes`` per rank taking ``seconds``, as
    nccl-tests define them: algbw = S / t; busbw = algbw * 2 (n - 1) / n."""
    algbw = gbs(nbytes, seconds)
    return algbw, (algbw * 2.0 * (ranks - 1) / ranks if ranks > 0 else 0.0)


# --------------------------------------------------------------------------- stress

# NVML clocks-event (throttle) reason bits, nvml.h nvmlClocksEventReason*.
THROTTLE_BITS: Dict[int, str] = {
    0x1: "GpuIdle", 0x2: "ApplicationsClocksSetting", 0x4: "SwPowerCap", 0x8: "HwSlowdown", 0x10: "SyncBoost",
    0x20: "SwThermalSlowdown", 0x40: "HwThermalSlowdown", 0x80: "HwPowerBrakeSlowdown", 0x100: "DisplayClockSetting",
}
HW_SLOWDOWN = 0x8 | 0x40 | 0x80


def throttle_names(mask: int) -> List[str]:
    """The names of the set bits of an NVML throttle-reason mask (unknown bits as hex)."""
    names = [name for bit, name in sorted(THROTTLE_BITS.items()) if mask & bit]
    rest = mask & ~sum(THROTTLE_BITS)
    return names + ([hex(rest)] if rest else [])


def _delta(before: Mapping[str, float], after: Mapping[str, float], key: str) -> Optional[float]:
    if key in before and key in after:
        return after[key] - before[key]
    return None


def stress_verdict(mismatches: int, before: Mapping[str, float], after: Mapping[str, float],
                   reasons_seen: int) -> Tuple[bool, str]:
    """(ok, what the watch saw) after a sustained GEMM: wrong elements or new uncorrected ECC
    errors fail; throttling (hardware slowdown included) and corrected ECC errors are reported.
    ``before``/``after`` are NVML samples (temperature_c, sm_clock_mhz, ecc_corrected, ...)."""
    problems, notes = [], []
    if mismatches:
        problems.append(f"{mismatches} elements differed from the first result beyond the tolerance")
    uncorrected = _delta(before, after, "ecc_uncorrected")
    if uncorrected:
        problems.append(f"{uncorrected:g} new uncorrected ECC errors")
    corrected = _delta(before, after, "ecc_corrected")
    if corrected:
        notes.append(f"{corrected:g} new corrected ECC errors")
    for key, unit in (("temperature_c", " C"), ("sm_clock_mhz", " MHz"), ("power_w", " W")):
        if key in before and key in after:
            notes.append(f"{key.rsplit('_', 1)[0]} {before[key]:g}->{after[key]:g}{unit}")
    names = throttle_names(reasons_seen & ~0x1)
    if names:
        hw = " (hardware slowdown)" if reasons_seen & HW_SLOWDOWN else ""
        notes.append(f"throttle reasons seen: {', '.join(names)}{hw}")
    if not before and not after:
        notes.append("clocks/temperature/ECC not watched (no NVML)")
    return not problems, "; ".join(problems + notes)


# --------------------------------------------------------------------------- enumeration


class Expect:
    """What NVML says about the GPUs: count, names and UUIDs (``GPU-...``) by NVML index."""

    def __init__(self, count: Optional[int] = None, names: Sequence[str] = (), uuids: Sequence[str] = (),
                 source: str = "--expect") -> None:
        self.count = count if count is not None else (len(names) or None)
        self.names = list(names)
        self.uuids = list(uuids)
        self.source = source

    def __repr__(self) -> str:
        return f"Expect(count={self.count!r}, names={self.names!r}, uuids={self.uuids!r}, source={self.source!r})"


def parse_expect(text: str) -> Expect:
    """``"count=2;names=NVIDIA H200|NVIDIA H200;uuids=GPU-1|GPU-2"`` -> Expect (ValueError when
    malformed). Every field is optional; names and UUIDs are separated by ``|``."""
    fields: Dict[str, str] = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or key not in ("count", "names", "uuids"):
            raise ValueError(f"--expect wants count=N;names=A|B;uuids=U|V, not {part!r}")
        fields[key] = value.strip()
    names = [n.strip() for n in fields.get("names", "").split("|") if n.strip()]
    uuids = [u.strip() for u in fields.get("uuids", "").split("|") if u.strip()]
    count: Optional[int] = None
    if "count" in fields:
        if not fields["count"].isdigit():
            raise ValueError(f"--expect count must be a number, not {fields['count']!r}")
        count = int(fields["count"])
    return Expect(count, names, uuids)


def norm_uuid(uuid: str) -> str:
    """``GPU-ABC...`` (NVML) and ``abc...`` (torch) -> ``abc...``."""
    u = uuid.strip().lower()
    return u[4:] if u.startswith("gpu-") else u


def same_model(torch_name: str, nvml_name: str) -> bool:
    """A torch device name matches an NVML name (a MIG instance: ``<name> MIG 1g.5gb``)."""
    return torch_name == nvml_name or torch_name.startswith(nvml_name + " MIG")


def _multiset_match(seen: Sequence[str], pool: Sequence[str]) -> List[str]:
    """The names in ``seen`` that find no distinct partner in ``pool``."""
    left, unmatched = list(pool), []
    for name in seen:
        hit = next((i for i, cand in enumerate(left) if same_model(name, cand)), None)
        if hit is None:
            unmatched.append(name)
        else:
            left.pop(hit)
    return unmatched


def compare_enumeration(names: Sequence[str], uuids: Sequence[str], expect: Expect,
                        visible: Optional[str]) -> Tuple[bool, str]:
    """Do torch's devices (``names``, ``uuids`` by torch index) agree with NVML's? Without
    CUDA_VISIBLE_DEVICES (``visible``) the counts must be equal; with it, torch must see a
    subset. Matching is by UUID when both sides have them, else by name (CUDA's default order
    is fastest first, NVML's by PCI bus, so order is ignored)."""
    n, want = len(names), expect.count
    summary = f"torch sees {n} GPU{'s' * (n != 1)}, NVML ({expect.source}) {want if want is not None else '?'}"
    if visible is not None:
        summary += f" with CUDA_VISIBLE_DEVICES={visible!r}"
    mig = any(" MIG " in f"{name} " for name in names)  # MIG instances: counts need not agree
    if want is not None:
        if visible is None and n != want and not mig:
            return False, f"{summary}: the counts differ"
        if visible is not None and n > want:
            return False, f"{summary}: torch sees more GPUs than exist"
    known = {norm_uuid(u) for u in expect.uuids}
    by_uuid = bool(known) and len(uuids) == n and all(u and norm_uuid(u) in known for u in uuids)
    if by_uuid:
        return True, f"{summary}; every device matched by UUID ({', '.join(sorted(set(names)))})"
    if expect.names:
        unmatched = _multiset_match(names, expect.names)
        if unmatched:
            return False, f"{summary}: no NVML GPU matches {', '.join(unmatched)} (NVML: {', '.join(expect.names)})"
        return True, f"{summary}; names agree ({', '.join(sorted(set(names)))})"
    return True, f"{summary}; NVML gave no names to compare"


def p2p_message(matrix: Sequence[Sequence[Optional[bool]]]) -> str:
    """``"0->1 yes, 1->0 yes"``: the off-diagonal entries of a peer-access matrix."""
    parts = [f"{i}->{j} {'yes' if ok else 'no'}" for i, row in enumerate(matrix) for j, ok in enumerate(row)
             if i != j and ok is not None]
    return ", ".join(parts) if parts else "one GPU: nothing to compare"
