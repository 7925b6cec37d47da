"""torch's own measurements on the buffers the smoke suites use, for the kit's side-by-side
check: a device-to-device copy loop of ``--bytes`` timed with CUDA events (bytes copied per
second, as the driver suite's ``bandwidth_gbs`` and the torch suite's ``gbs`` count them), and
plain ``n x n`` matmul loops (TF32 off for fp32, as in the stress tier), in TFLOP/s; plus the
stress tier's step (the GEMM and its comparison with the first result) timed the same way, which
tells a gap caused by that comparison work from a slow GEMM. Prints one JSON object.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable, Dict

import _case

WARMUP = 2


def timed(torch: Any, step: Callable[[], Any], iterations: int) -> float:
    """Seconds per call of ``step``, by CUDA events around ``iterations`` calls after WARMUP."""
    for _ in range(WARMUP):
        step()
    torch.cuda.synchronize()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(iterations):
        step()
    end.record()
    end.synchronize()
    return float(begin.elapsed_time(end)) / 1000.0 / iterations


def copy_gbs(torch: Any, nbytes: int, reps: int) -> Dict[str, float]:
    src = torch.full((nbytes,), 0xA5, dtype=torch.uint8, device="cuda:0")
    dst = torch.empty_like(src)
    per = timed(torch, lambda: dst.copy_(src), reps)
    return {"bytes": float(nbytes), "reps": float(reps), "seconds_per_copy": per, "gbs": nbytes / per / 1e9}


def iterations_for(torch: Any, step: Callable[[], Any], seconds: float) -> int:
    start = time.perf_counter()
    step()
    torch.cuda.synchronize()
    one = max(time.perf_counter() - start, 1e-5)
    return max(3, min(2000, int(seconds / one)))


def matmul_tflops(torch: Any, n: int, kind: str, seconds: float) -> Dict[str, float]:
    dtype = torch.bfloat16 if kind == "bf16" else torch.float16 if kind == "fp16" else torch.float32
    gen = torch.Generator(device="cuda:0").manual_seed(99)
    a = torch.randn(n, n, device="cuda:0", generator=gen).to(dtype)
    b = torch.randn(n, n, device="cuda:0", generator=gen).to(dtype)
    out = torch.empty(n, n, device="cuda:0", dtype=dtype)
    iterations = iterations_for(torch, lambda: torch.matmul(a, b, out=out), seconds)
    per = timed(torch, lambda: torch.matmul(a, b, out=out), iterations)
    return {"n": float(n), "iterations": float(iterations), "tflops": 2.0 * n ** 3 / per / 1e12}


def checked_step_tflops(torch: Any, n: int, kind: str, seconds: float) -> Dict[str, float]:
    """The stress tier's step: the GEMM, then a bitwise and a tolerance comparison with the first result."""
    dtype = torch.bfloat16 if kind == "bf16" else torch.float32
    gen = torch.Generator(device="cuda:0").manual_seed(99)
    a = torch.randn(n, n, device="cuda:0", generator=gen).to(dtype)
    b = torch.randn(n, n, device="cuda:0", generator=gen).to(dtype)
    golden = a @ b
    golden_f, threshold = golden.float(), (a.abs().float() @ b.abs().float()).mul_(1e-2)
    wrong = torch.zeros((), dtype=torch.int64, device="cuda:0")

    def step() -> None:
        c = a @ b
        wrong.add_((c != golden).sum())
        wrong.add_(torch.gt(c.float().sub_(golden_f).abs_(), threshold).sum())

    iterations = iterations_for(torch, step, seconds)
    per = timed(torch, step, iterations)
    return {"n": float(n), "iterations": float(iterations), "tflops": 2.0 * n ** 3 / per / 1e12}


def main() -> None:
    p = _case.parser(__doc__)
    p.add_argument("--bytes", type=int, required=True, help="device copy size (the driver suite's)")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--n", type=int, default=0, help="matmul size (0: the stress tier's rule)")
    p.add_argument("--seconds", type=float, default=1.0, help="about how long each matmul loop runs")
    args = p.parse_args()
    _case.require_gpu(args.gpus)
    torch = _case.cuda_torch()
    if not torch.cuda.is_available():
        _case.skip("no GPU: torch.cuda.is_available() is False")
    torch.backends.cuda.matmul.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    n = args.n or (8192 if props.total_memory >= 16 << 30 else 4096)
    result: Dict[str, Any] = {"device": props.name, "torch": torch.__version__,
                              "d2d": copy_gbs(torch, args.bytes, args.reps), "matmul": {}}
    for kind in ("bf16", "fp16", "fp32") if props.major >= 8 else ("fp16", "fp32"):
        result["matmul"][kind] = matmul_tflops(torch, n, kind, args.seconds)
    kind = "bf16" if props.major >= 8 else "fp32"
    result["stress_step"] = dict(checked_step_tflops(torch, n, kind, args.seconds), kind=kind)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
