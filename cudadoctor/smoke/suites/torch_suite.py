"""The torch smoke suite: does this torch really compute, differentiate and communicate on the
GPUs, and which CUDA libraries did it load?

Run by path under the target interpreter (``python torch_suite.py --tier quick``); prints one
JSON line (``_protocol``). Tests, per GPU unless said otherwise:

- ``device_enumeration`` (once): torch's devices agree with NVML: ``--expect "count=N;names=A|B;
  uuids=GPU-..|GPU-.."`` from the parent (which always has NVML facts: cudadoctor depends on
  nvidia-ml-py, the target interpreter need not), else pynvml in this process when importable;
- ``allocation``; ``matmul_fp32|tf32|fp16|bf16`` against float64 (tolerances in ``_compare``);
  ``autograd_mlp``, ``autograd_conv`` against float64 CPU copies; ``amp``; ``cudnn_conv``;
  ``bandwidth_h2d|d2h|d2d`` (definitions in ``_torch_perf``); from the standard tier on, ``gradcheck``
  (float64) after ``autograd_conv``;
- ``loaded_libraries`` (once, last of the quick tier): ``/proc/self/maps`` -> ``details``;
- standard tier: ``p2p_matrix`` and ``nccl_allreduce`` across every selected GPU (two or more);
- stress tier: ``stress_gemm`` for ``--duration`` seconds on every selected GPU at once.

Without a usable GPU the suite is skipped with the reason (a CPU-only build, no device), except
that a CUDA build that cannot initialise while a GPU is there fails with torch's error. The
hidden ``--device cpu`` runs every test on the CPU (CI: the same comparison code).
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

try:
    from . import _compare, _protocol
except ImportError:  # run by path: this file's folder is sys.path[0]
    import _compare  # type: ignore[no-redef,import-not-found]
    import _protocol  # type: ignore[no-redef,import-not-found]

SUITE = "torch"
STRESS_DEFAULT_S = 60.0
ALLREDUCE_BYTES = 256 << 20
ALLREDUCE_TIMEOUT_S = 120.0

# cudaError_t numbers torch prints as "Error <n>: ..." when cudaGetDeviceCount fails.
CUDA_ERROR_NUMBERS = {
    3: "cudaErrorInitializationError", 34: "cudaErrorStubLibrary", 35: "cudaErrorInsufficientDriver",
    36: "cudaErrorCallRequiresNewerDriver", 46: "cudaErrorDevicesUnavailable", 100: "cudaErrorNoDevice",
    101: "cudaErrorInvalidDevice", 209: "cudaErrorNoKernelImageForDevice", 222: "cudaErrorUnsupportedPtxVersion",
    800: "cudaErrorNotPermitted", 801: "cudaErrorNotSupported", 802: "cudaErrorSystemNotReady",
    803: "cudaErrorSystemDriverMismatch", 804: "cudaErrorCompatNotSupportedOnDevice", 999: "cudaErrorUnknown",
}
# torch's own wording of a failed CUDA initialisation (c10/cuda/CUDAFunctions.cpp, torch/cuda).
TORCH_INIT_TEXTS = (
    ("found no nvidia driver", "cudaErrorInsufficientDriver"),
    ("driver on your system is too old", "cudaErrorInsufficientDriver"),
    ("no cuda gpus are available", "cudaErrorNoDevice"),
    ("cuda driver initialization failed", "cudaErrorInitializationError"),
)
NO_DEVICE = ("cudaErrorNoDevice", "CUDA_ERROR_NO_DEVICE")


def decode_init_error(text: str) -> Optional[str]:
    """The CUDA error name in torch's text about a failed CUDA initialisation."""
    name = _protocol.decode_cuda_error(text)
    if name:
        return name
    m = re.search(r"\bError (\d+): ", text)
    if m and int(m.group(1)) in CUDA_ERROR_NUMBERS:
        return CUDA_ERROR_NUMBERS[int(m.group(1))]
    low = text.lower()
    return next((name for phrase, name in TORCH_INIT_TEXTS if phrase in low), None)


def classify_unavailable(error: str, visible: Optional[str], expected: Optional[int]) -> Tuple[str, str]:
    """(suite status, reason) when ``torch.cuda.is_available()`` is False: ``skipped`` when no
    GPU is there to use (CUDA_VISIBLE_DEVICES hides them all; no driver or no device, and NVML
    does not say otherwise), ``failed`` when a GPU is there and CUDA cannot initialise."""
    said = error or "torch reports no CUDA device"
    if visible is not None and visible.strip() in ("", "-1", "none", "NoDevFiles"):
        return "skipped", f"torch.cuda.is_available() is False: CUDA_VISIBLE_DEVICES={visible!r} hides every GPU"
    name = decode_init_error(said)
    no_gpu = name in NO_DEVICE or not error or "found no nvidia driver" in said.lower()
    if no_gpu and not expected:
        return "skipped", f"torch.cuda.is_available() is False: {said}"
    if no_gpu:
        note = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
        return "failed", f"NVML sees {expected} GPU{'s' * (expected != 1)} but torch cannot use them{note}: {said}"
    return "failed", f"CUDA cannot initialise: {said}"


def pop_expect(argv: Sequence[str]) -> Tuple[List[str], Optional[str], bool]:
    """Take the parent's NVML facts out of the arguments (the protocol's parser does not know
    them): ``--expect VALUE`` / ``--expect=VALUE`` (count, names, UUIDs) and ``--expect-gpu``
    (NVML saw at least one GPU, as for the other suites). (rest, expect text, expect_gpu)."""
    rest: List[str] = []
    expect: Optional[str] = None
    expect_gpu = False
    items = list(argv)
    while items:
        item = items.pop(0)
        if item == "--expect":
            expect = items.pop(0) if items else ""
        elif item.startswith("--expect="):
            expect = item.split("=", 1)[1]
        elif item == "--expect-gpu":
            expect_gpu = True
        else:
            rest.append(item)
    return rest, expect, expect_gpu


def nvml_expect(text: Optional[str]) -> Tuple[Optional[_compare.Expect], str]:
    """NVML's GPUs: from ``--expect`` (ValueError when malformed), else pynvml in this process;
    (None, why) when neither is available."""
    if text is not None:
        return _compare.parse_expect(text), ""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            names = [_str(pynvml.nvmlDeviceGetName(h)) for h in handles]
            uuids = [_str(pynvml.nvmlDeviceGetUUID(h)) for h in handles]
        finally:
            pynvml.nvmlShutdown()
        return _compare.Expect(len(handles), names, uuids, source="pynvml"), ""
    except Exception as exc:
        return None, f"no NVML information (no --expect from the parent; pynvml: {_protocol.format_error(exc)})"


def _str(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# --------------------------------------------------------------------------- the body


def body(rec: _protocol.Recorder, args: _protocol.Args, expect_text: Optional[str] = None,
         expect_gpu: bool = False) -> None:
    """The suite (``_protocol.run`` calls it): gate on the build and CUDA, then every test."""
    try:
        import torch
    except ImportError as exc:
        if getattr(exc, "name", None) == "torch":
            rec.skip_suite(f"torch is not installed in {sys.executable}")
        else:
            _import_failed(rec, exc)
        return
    except Exception as exc:
        _import_failed(rec, exc)
        return
    rec.framework = f"torch {torch.__version__}"
    _build_details(rec, torch)
    if args.device == "cpu":
        _run_all(rec, args, [None], expect_text)
        return
    if not torch.version.cuda:
        hip = getattr(torch.version, "hip", None)
        rec.skip_suite(f"torch {torch.__version__} is a ROCm (HIP {hip}) build, not a CUDA one" if hip
                       else f"torch {torch.__version__} is a CPU-only build")
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        available = torch.cuda.is_available()
    if not available:
        _unavailable(rec, torch, [str(w.message) for w in caught], expect_text, expect_gpu)
        return
    present, missing = _protocol.select_gpus(args.gpus, torch.cuda.device_count())
    for gpu in missing:
        rec.add("gpu_selection", "failed", gpu=gpu, message=f"GPU {gpu} was asked for; torch sees "
                f"{torch.cuda.device_count()} (indexes 0..{torch.cuda.device_count() - 1})")
    if present:
        _run_all(rec, args, present, expect_text)


def _import_failed(rec: _protocol.Recorder, exc: BaseException) -> None:
    error = _protocol.format_error(exc)
    rec.add("import_torch", "error", error=error, cuda_error=decode_init_error(str(exc)),
            message="import torch raised")
    rec.error_suite(f"import torch raised {error}")


def _unavailable(rec: _protocol.Recorder, torch: Any, said: List[str], expect_text: Optional[str],
                 expect_gpu: bool) -> None:
    """torch.cuda.is_available() is False: find torch's error and skip or fail."""
    error = ""
    try:
        torch.cuda.init()
    except Exception as exc:
        error = _protocol.format_error(exc)
    if not error:
        error = _protocol.one_line(" ".join(said))
    try:
        expect, _ = nvml_expect(expect_text)
    except ValueError:
        expect = None
    expected = max((expect.count or 0) if expect else 0, 1 if expect_gpu else 0)
    status, reason = classify_unavailable(error, os.environ.get("CUDA_VISIBLE_DEVICES"), expected or None)
    if status == "skipped":
        rec.skip_suite(reason)
        return
    rec.add("cuda_init", "failed", message=reason, error=error or None, cuda_error=decode_init_error(error))


def _build_details(rec: _protocol.Recorder, torch: Any) -> None:
    d = rec.details
    d["torch.path"] = os.path.dirname(getattr(torch, "__file__", "") or "")
    d["python"] = sys.executable
    d["torch.version.cuda"] = str(torch.version.cuda)
    for key, read in (("torch.arch_list", lambda: " ".join(torch.cuda.get_arch_list())),
                      ("cudnn.version", lambda: torch.backends.cudnn.version()),
                      ("nccl.version", lambda: ".".join(str(v) for v in torch.cuda.nccl.version()))):
        try:
            value = read()
        except Exception:  # a CPU build, or a library that does not load: the tests will say
            continue
        if value:
            d[key] = str(value)


def _gpu_details(rec: _protocol.Recorder, torch: Any, gpu: int) -> None:
    """Name, capability, memory, and whether the build carries a kernel image for the GPU."""
    try:
        props = torch.cuda.get_device_properties(gpu)
        arch = list(torch.cuda.get_arch_list())
    except Exception as exc:  # the tests on this GPU will fail with the same error
        rec.details[f"gpu.{gpu}.error"] = _protocol.format_error(exc)
        return
    d, sm = rec.details, f"sm_{props.major}{props.minor}"
    d[f"gpu.{gpu}.name"] = str(props.name)
    d[f"gpu.{gpu}.capability"] = f"{props.major}.{props.minor}"
    d[f"gpu.{gpu}.memory_gib"] = f"{props.total_memory / (1 << 30):.1f}"
    uuid = str(getattr(props, "uuid", "") or "")
    if uuid:
        d[f"gpu.{gpu}.uuid"] = uuid
    bus = [getattr(props, f"pci_{part}_id", None) for part in ("domain", "bus", "device")]  # torch >= 2.5
    if all(isinstance(v, int) for v in bus):
        d[f"gpu.{gpu}.pci_bus_id"] = f"{bus[0]:04x}:{bus[1]:02x}:{bus[2]:02x}.0"
    ptx = [a for a in arch if a.startswith("compute_") and a[8:].isdigit()
           and int(a[8:]) <= props.major * 10 + props.minor]
    d[f"gpu.{gpu}.kernel_image"] = (f"{sm} in the build" if sm in arch else f"PTX {ptx[-1]} (JIT)" if ptx
                                    else f"none: the build has {' '.join(arch)}")


def _test(rec: _protocol.Recorder, args: _protocol.Args, name: str, gpu: Optional[int],
          fn: Callable[..., None], *extra: Any, need: float = 1.0) -> None:
    """Run ``fn(t, *extra)`` as test ``name``, or skip it when the parent's budget is spent."""
    left = args.remaining()
    if left is not None and left < need:
        rec.add(name, "skipped", gpu=gpu, message=f"{left:.0f} s of the suite's time budget left")
        return
    with rec.test(name, gpu=gpu) as t:
        fn(t, *extra)


def _siblings() -> Tuple[Any, Any, Any, Any]:
    """The modules that import torch (imported once torch is known to import)."""
    try:
        from . import _libmaps, _torch_dist, _torch_perf, _torch_tests
    except ImportError:  # run by path
        import _libmaps  # type: ignore[no-redef,import-not-found]
        import _torch_dist  # type: ignore[no-redef,import-not-found]
        import _torch_perf  # type: ignore[no-redef,import-not-found]
        import _torch_tests  # type: ignore[no-redef,import-not-found]
    return _torch_tests, _torch_perf, _torch_dist, _libmaps


def _run_all(rec: _protocol.Recorder, args: _protocol.Args, gpus: Sequence[Optional[int]],
             expect_text: Optional[str]) -> None:
    """Every test of the tier on ``gpus`` (``[None]``: the CPU device); tiers are cumulative."""
    import torch

    tests, perf, _, _ = _siblings()
    if None not in gpus:
        _test(rec, args, "device_enumeration", None, enumeration, expect_text)
    for gpu in gpus:
        device = "cpu" if gpu is None else f"cuda:{gpu}"
        if gpu is not None:
            _gpu_details(rec, torch, gpu)
        numeric = tests.NUMERIC_TESTS + (tests.STANDARD_TESTS if args.tier != "quick" else ())
        for name, fn, extra in numeric:
            _test(rec, args, name, gpu, fn, device, *extra)
        _test(rec, args, "cudnn_conv", gpu, tests.cudnn_conv, device, rec.details)
        for direction in ("h2d", "d2h", "d2d"):
            _test(rec, args, f"bandwidth_{direction}", gpu, _bandwidth, device, direction, args.tier)
        if gpu is not None:
            torch.cuda.empty_cache()
    _test(rec, args, "loaded_libraries", None, loaded_libraries, rec.details)
    if args.tier in ("standard", "stress"):
        _multi_gpu(rec, args, gpus)
    if args.tier == "stress":
        _stress(rec, args, gpus)


CPU_COPY_BYTES = 8 << 20
CPU_STRESS_S = 0.5


def _bandwidth(t: _protocol.TestCase, device: str, direction: str, tier: str) -> None:
    """One copy bandwidth, sized for the tier (small on the CPU device)."""
    _, perf, _, _ = _siblings()
    if device == "cpu":
        perf.bandwidth(t, device, direction, CPU_COPY_BYTES, 3)
        return
    host, dev, iterations = perf.bandwidth_sizes(device, tier)
    perf.bandwidth(t, device, direction, dev if direction == "d2d" else host, iterations)


def loaded_libraries(t: _protocol.TestCase, details: Dict[str, str]) -> None:
    """The CUDA libraries in /proc/self/maps, their versions and owners, into ``details``."""
    _, _, _, libmaps = _siblings()
    found, duplicates = libmaps.loaded_details(libmaps.read_maps())
    details.update(found)
    names = sorted(k[4:] for k in found if k.count(".") == 1)
    t.metrics["libraries"] = len(names)
    parts = []
    for name in names:
        version = found.get(f"lib.{name}.version")
        owner = found.get(f"lib.{name}.dist")
        parts.append(name + (f" {version}" if version else "") + (f" ({owner})" if owner else ""))
    t.message = "loaded: " + (", ".join(parts) if parts else "no CUDA library in /proc/self/maps")
    if duplicates:
        t.message += f"; loaded from more than one file: {', '.join(duplicates)}"


def _multi_gpu(rec: _protocol.Recorder, args: _protocol.Args, gpus: Sequence[Optional[int]]) -> None:
    """P2P matrix and the all-reduce (gloo across two CPU ranks on the CPU device)."""
    import torch

    _, _, dist, _ = _siblings()
    if None in gpus:
        rec.add("p2p_matrix", "skipped", message="peer access is between GPUs; the CPU device has none")
        _test(rec, args, "nccl_allreduce", None, _allreduce, [None, None], "gloo", CPU_COPY_BYTES, args, need=10.0)
        return
    if len(gpus) < 2:
        for name in ("p2p_matrix", "nccl_allreduce"):
            rec.add(name, "skipped", message=f"{len(gpus)} GPU selected: nothing to compare or reduce across")
        return
    _test(rec, args, "p2p_matrix", None, dist.p2p, list(gpus))
    torch.cuda.empty_cache()
    _test(rec, args, "nccl_allreduce", None, _allreduce, list(gpus), "nccl", ALLREDUCE_BYTES, args, need=15.0)


def _allreduce(t: _protocol.TestCase, gpus: List[Optional[int]], backend: str, nbytes: int,
               args: _protocol.Args) -> None:
    import torch.distributed

    _, _, dist, _ = _siblings()
    if not torch.distributed.is_available() or (backend == "nccl" and not torch.distributed.is_nccl_available()):
        raise _protocol.Skip(f"this torch build has no {backend} (torch.distributed)")
    left = args.remaining()
    timeout = ALLREDUCE_TIMEOUT_S if left is None else max(5.0, min(ALLREDUCE_TIMEOUT_S, left - 5.0))
    result = dist.allreduce(gpus, nbytes, 20, timeout, backend=backend)
    t.metrics.update(result["metrics"])
    t.message = result["message"]
    if result["status"] != "passed":
        t.fail(result["message"])
        t.error = result.get("error")
        t.cuda_error = _protocol.decode_cuda_error(result.get("error"))


def _stress(rec: _protocol.Recorder, args: _protocol.Args, gpus: Sequence[Optional[int]]) -> None:
    """Sustained GEMM on every GPU at once for --duration (less when the budget is short)."""
    import time

    import torch

    _, perf, _, _ = _siblings()
    cpu = None in gpus
    duration = args.duration if args.duration is not None else (CPU_STRESS_S if cpu else STRESS_DEFAULT_S)
    left = args.remaining(margin=15.0)
    if left is not None:
        duration = min(duration, left - 10.0)
    if duration <= 0:
        for gpu in gpus:
            rec.add("stress_gemm", "skipped", gpu=gpu, message="no time left in the suite's budget")
        return
    devices = ["cpu" if g is None else f"cuda:{g}" for g in gpus]
    watch = None if cpu else perf.Watch([str(torch.cuda.get_device_properties(d).uuid) for d in devices])
    start = time.perf_counter()
    try:
        results = perf.stress(devices, duration, watch, size=(128, "fp32") if cpu else None)
    except Exception as exc:
        for gpu in gpus:
            rec.add("stress_gemm", "error", gpu=gpu, duration_s=time.perf_counter() - start,
                    error=_protocol.format_error(exc))
        return
    for gpu, r in zip(gpus, results):
        rec.add("stress_gemm", r["status"], gpu=gpu, duration_s=time.perf_counter() - start, message=r["message"],
                metrics=r["metrics"])


def enumeration(t: _protocol.TestCase, expect_text: Optional[str]) -> None:
    """torch's devices against NVML's (module docstring)."""
    import torch

    expect, why = nvml_expect(expect_text)
    if expect is None:
        raise _protocol.Skip(why)
    count = torch.cuda.device_count()
    names = [str(torch.cuda.get_device_name(i)) for i in range(count)]
    uuids = [str(getattr(torch.cuda.get_device_properties(i), "uuid", "") or "") for i in range(count)]
    ok, said = _compare.compare_enumeration(names, uuids, expect, os.environ.get("CUDA_VISIBLE_DEVICES"))
    t.metrics.update(torch_count=count, nvml_count=expect.count if expect.count is not None else -1)
    if not ok:
        raise _protocol.Fail(said)
    t.message = said


def main(argv: Optional[Sequence[str]] = None, stream: Any = None) -> int:
    """Run the suite on ``argv`` (default ``sys.argv[1:]``), print the line; the exit code."""
    rest, expect, expect_gpu = pop_expect(sys.argv[1:] if argv is None else argv)
    return _protocol.run(SUITE, lambda rec, args: body(rec, args, expect, expect_gpu), rest, stream=stream,
                         seal=stream is None)


if __name__ == "__main__":
    _protocol.enable_stack_dumps()
    sys.exit(main())
