"""The cupy smoke suite: can cupy compile CUDA C with NVRTC and run it, and does cuBLAS compute?

Tests:

- ``devices``: cupy's CUDA runtime counts the GPUs (names, PCI bus ids and compute capabilities
  in ``details``). ``cudaErrorNoDevice`` is a skip (a failure with ``--expect-gpu``); any other
  error (``cudaErrorInsufficientDriver``, a runtime that cannot load) fails with its message.
- ``raw_kernel`` per GPU: a vector add written in CUDA C (:data:`VADD_SOURCE`), compiled at run
  time by NVRTC through ``cupy.RawKernel``, launched over a length that is not a multiple of the
  block size, compared with NumPy's ``a + b``: exactly, since each output is one correctly
  rounded IEEE float32 addition on both sides. The output starts as NaN, so a kernel that never
  ran cannot pass.
- ``gemm_fp32`` per GPU: ``cupy.matmul`` of float32 matrices (cuBLAS SGEMM) against NumPy's
  float64 product of the same inputs, componentwise scaled error ``max |C - R| / (|A| @ |B|)``
  <= ``_frameworks.GEMM_TOL`` (1e-5 for k = 256; see there). ``CUPY_TF32=0`` is set before cupy
  is imported, so the GEMM is true fp32 whatever the user's environment says.

``framework`` is "cupy <version>"; ``details`` hold the wheel (``package.cupy-cuda12x``), the
CUDA runtime and driver versions cupy reports (``runtimeGetVersion``, ``driverGetVersion``),
NVRTC's version and the CUDA libraries the process loaded. Runs as a script (``python
cupy_suite.py --tier quick [--expect-gpu]``).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, MutableMapping, Optional, Sequence, Tuple

try:  # imported as cudadoctor.smoke.suites.cupy_suite (tests)
    from . import _frameworks as fw
    from . import _protocol
except ImportError:  # run by path: this folder is sys.path[0]
    import _frameworks as fw  # type: ignore[no-redef,import-not-found]
    import _protocol  # type: ignore[no-redef,import-not-found]

SUITE = "cupy"

KERNEL_NAME = "cudadoctor_vadd"
VADD_SOURCE = r"""
extern "C" __global__ void cudadoctor_vadd(const float* a, const float* b, float* c, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
"""
BLOCK = 256
VADD_N: Dict[str, int] = {"quick": 100_003, "standard": 1_000_003, "stress": 1_000_003}
GEMM_MN: Dict[str, int] = {"quick": 256, "standard": 512, "stress": 512}
CUPY_PACKAGES = r"cupy(-cuda\w+|-rocm[\w-]*)?"


def grid_for(n: int, block: int = BLOCK) -> int:
    """Blocks of ``block`` threads covering ``n`` elements."""
    return max(1, (n + block - 1) // block)


def set_tf32_env(env: MutableMapping[str, str]) -> Dict[str, str]:
    """``CUPY_TF32=0`` (fp32 GEMMs stay fp32); details: the value used and the user's if it
    differed."""
    details: Dict[str, str] = {}
    before = env.get("CUPY_TF32")
    if before is not None and before != "0":
        details["env.CUPY_TF32.user"] = before
    env["CUPY_TF32"] = "0"
    details["env.CUPY_TF32"] = "0"
    return details


def vadd_verdict(got: Any, want: Any) -> Tuple[bool, str, Dict[str, float]]:
    """(ok, message, metrics) of the vector add: every element must equal NumPy's exactly."""
    count, first = fw.mismatches(got, want)
    n = len(fw.flatten(want))
    metrics = {"elements": float(n), "mismatches": float(count)}
    if count == 0:
        return True, f"vector add of {n} float32 values by an NVRTC-compiled kernel: every element exact", metrics
    g, w = fw.flatten(got), fw.flatten(want)
    at = first if first is not None else 0
    shown = f"; first at {at}: got {g[at]!r}, expected {w[at]!r}" if at < min(len(g), len(w)) else ""
    return False, f"vector add: {count} of {n} elements differ from NumPy's{shown}", metrics


def gemm_verdict(got: Any, ref: Any, scale: Any, k: int, tol: float = fw.GEMM_TOL) -> Tuple[bool, str, Dict[str, float]]:
    """(ok, message, metrics) of an fp32 GEMM against the float64 reference ``ref`` with
    ``scale = |A| @ |B|``."""
    err = fw.scaled_max_error(got, ref, scale)
    ok, message = fw.verdict(f"cuBLAS fp32 GEMM (k={k}) vs NumPy float64, max |C-R|/(|A||B|)", err, tol)
    if not ok and fw.within(err, 1e-2):
        message += " (as large as TF32 or fp16 arithmetic gives)"
    return ok, message, {"max_rel_error": err, "tolerance": tol, "k": float(k)}


# --------------------------------------------------------------------------- the workload


def raw_kernel(t: _protocol.TestCase, cupy: Any, gpu: int, n: int) -> None:
    import numpy as np  # type: ignore[import-not-found,unused-ignore]

    rng = np.random.RandomState(11)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    with cupy.cuda.Device(gpu):
        kernel = cupy.RawKernel(VADD_SOURCE, KERNEL_NAME)
        a_d, b_d = cupy.asarray(a), cupy.asarray(b)
        c_d = cupy.full(n, np.nan, dtype=cupy.float32)
        kernel((grid_for(n),), (BLOCK,), (a_d, b_d, c_d, np.int32(n)))
        cupy.cuda.Device(gpu).synchronize()
        c = cupy.asnumpy(c_d)
    ok, message, metrics = vadd_verdict(c, a + b)
    t.metrics.update(metrics)
    t.message = message
    if not ok:
        t.fail(message)


def gemm(t: _protocol.TestCase, cupy: Any, gpu: int, mn: int, k: int = fw.GEMM_K) -> None:
    import numpy as np  # type: ignore[import-not-found,unused-ignore]

    rng = np.random.RandomState(13)
    a = rng.standard_normal((mn, k)).astype(np.float32)
    b = rng.standard_normal((k, mn)).astype(np.float32)
    with cupy.cuda.Device(gpu):
        c_d = cupy.matmul(cupy.asarray(a), cupy.asarray(b))
        cupy.cuda.Device(gpu).synchronize()
        if c_d.dtype != cupy.float32:
            raise _protocol.Fail(f"cupy.matmul of float32 matrices returned {c_d.dtype}")
        c = cupy.asnumpy(c_d)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ok, message, metrics = gemm_verdict(c, a64 @ b64, np.abs(a64) @ np.abs(b64), k)
    t.metrics.update(metrics)
    t.message = message
    if not ok:
        t.fail(message)


# --------------------------------------------------------------------------- the suite


def versions(cupy: Any, details: MutableMapping[str, str]) -> Optional[int]:
    """The CUDA runtime and driver versions cupy reports, and NVRTC's, into ``details``; the
    driver's version number (0: no driver; None: unknown)."""
    runtime = cupy.cuda.runtime
    driver: Optional[int] = None
    for key, fn in (("cuda.runtime", "runtimeGetVersion"), ("cuda.driver", "driverGetVersion")):
        try:
            value = getattr(runtime, fn)()
            details[key] = f"{fw.cuda_version(value)} ({value})"
            if fn == "driverGetVersion":
                driver = int(value)
        except Exception as exc:
            details[key] = f"{fn} raised {_protocol.format_error(exc)}"
    try:
        major, minor = cupy.cuda.nvrtc.getVersion()
        details["nvrtc"] = f"{major}.{minor}"
    except Exception as exc:
        details["nvrtc"] = f"getVersion raised {_protocol.format_error(exc)}"
    return driver


def device_details(cupy: Any, index: int, details: MutableMapping[str, str]) -> str:
    """Name, PCI bus id and compute capability of GPU ``index`` into ``details``; its name."""
    name = "?"
    try:
        props = cupy.cuda.runtime.getDeviceProperties(index)
        raw = props.get("name", b"?")
        name = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        details[f"gpu.{index}.name"] = name
    except Exception:
        pass
    try:
        details[f"gpu.{index}.compute_capability"] = str(cupy.cuda.Device(index).compute_capability)
    except Exception:
        pass
    try:
        details[f"gpu.{index}.pci_bus_id"] = str(cupy.cuda.runtime.deviceGetPCIBusId(index))
    except Exception:
        pass
    return name


def body(rec: _protocol.Recorder, args: _protocol.Args, expect_gpu: bool = False) -> None:
    rec.details.update(set_tf32_env(os.environ))
    cupy = fw.import_framework(rec, "cupy")
    if cupy is None:
        return
    try:
        rec.framework = f"cupy {getattr(cupy, '__version__', '?')}"
        for name, version in sorted(fw.distributions(CUPY_PACKAGES).items()):
            rec.details[f"package.{name}"] = version
        if args.device == "cpu":
            rec.skip_suite("cupy has no CPU device (--device cpu)")
            return
        if getattr(cupy.cuda.runtime, "is_hip", False):
            rec.skip_suite("cupy is a ROCm (HIP) build, not a CUDA one")
            return
        driver = versions(cupy, rec.details)

        count = 0
        no_gpu_reason = f"no GPU visible to cupy{fw.visible_devices_note()}"
        with rec.test("devices") as t:
            try:
                count = int(cupy.cuda.runtime.getDeviceCount())
            except Exception as exc:
                text = _protocol.format_error(exc)
                if driver == 0:  # the runtime says cudaErrorInsufficientDriver when there is none at all
                    no_gpu_reason = f"no NVIDIA driver: cupy's driverGetVersion() is 0 (getDeviceCount raised {text})"
                elif fw.says_no_device(text):
                    no_gpu_reason += f": {text}"
                else:
                    t.cuda_error = _protocol.decode_cuda_error(text)
                    raise _protocol.Fail(f"getDeviceCount raised {text}")
            if count:
                names = [device_details(cupy, i, rec.details) for i in range(count)]
                t.metrics["count"] = count
                t.message = f"cupy sees {count} GPU{'s' * (count != 1)}: {', '.join(names)}"
        if rec.tests[-1].status != "passed":
            return
        if count == 0:
            rec.tests.pop()
            fw.no_gpu(rec, expect_gpu, no_gpu_reason,
                      cuda_error=None if driver == 0 else "cudaErrorNoDevice")
            return

        selected, missing = _protocol.select_gpus(args.gpus, count)
        fw.report_missing(rec, missing, count, "cupy")
        n, mn = VADD_N.get(args.tier, VADD_N["quick"]), GEMM_MN.get(args.tier, GEMM_MN["quick"])
        for gpu in selected:
            with rec.test("raw_kernel", gpu=gpu) as t:
                raw_kernel(t, cupy, gpu, n)
            with rec.test("gemm_fp32", gpu=gpu) as t:
                gemm(t, cupy, gpu, mn)
            try:
                with cupy.cuda.Device(gpu):
                    cupy.get_default_memory_pool().free_all_blocks()
            except Exception:
                pass
    finally:
        fw.loaded_libraries(rec.details)


def run(argv: Optional[Sequence[str]] = None, stream: Any = None, redirect: bool = True, seal: bool = False) -> int:
    """Run the suite with ``argv`` (default ``sys.argv[1:]``), print the line on ``stream``."""
    return fw.run_suite(SUITE, body, argv, stream=stream, redirect=redirect, seal=seal)


if __name__ == "__main__":
    sys.exit(fw.main(SUITE, body))
