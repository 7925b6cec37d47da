"""Helpers shared by the jax, cupy, tensorflow and julia suites: importing a framework (not
installed vs. broken), ``--expect-gpu``, the pure comparison arithmetic on plain numbers, the
deterministic inputs of the small MLP they differentiate, version formatting, and capturing what
C++ libraries write to stderr. Standard library only: a suite imports this by plain name when it
runs as a script under an interpreter that has no cudadoctor.

Error metrics (the same definitions as the torch suite's ``_compare``):

- gradients and forward values, normwise per tensor: ``||x - ref||_2 / ||ref||_2``;
- a GEMM ``C = A @ B`` against the float64 product ``R`` of the same (already float32) inputs,
  componentwise scaled: ``max_ij |C_ij - R_ij| / (|A| @ |B|)_ij``, the quantity the standard
  bound ``|fl(a.b) - a.b| <= gamma_k |a|.|b|`` is stated in (immune to cancellation in ``R``);
- a kernel whose every output is one correctly rounded IEEE operation (``a + b``): exact.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import random
import re
import sys
import tempfile
from typing import Any, Dict, Iterator, List, Mapping, MutableMapping, Optional, Sequence, Tuple

try:  # imported as cudadoctor.smoke.suites._frameworks (tests)
    from . import _protocol
except ImportError:  # run by path: this folder is sys.path[0]
    import _protocol  # type: ignore[no-redef,import-not-found]

# --------------------------------------------------------------------------- tolerances

GRAD_TOL = 1e-4
"""Normwise relative error allowed between a float32 forward value or gradient computed on the
GPU and the same float32 computation on the framework's CPU backend (matmuls forced to full fp32:
TF32 off). Each side carries float32 rounding: measured 1.5e-7 against float64 for this MLP
(tests/test_smoke_frameworks.py), so two float32 sides differ by ~3e-7, a little more where tanh
is implemented differently (XLA, Eigen, CUDA libm: a few ulp). 1e-4 leaves more than two orders
of magnitude for that and still catches a wrong kernel (O(1)) or a matmul silently run in TF32
(4e-4 measured, rounding the forward matmuls' inputs to TF32). The torch suite states the same
bound for its MLP."""

GEMM_K = 256
GEMM_TOL = 1e-5
"""Componentwise scaled error allowed for a float32 GEMM with inner dimension ``GEMM_K`` = 256:
the worst case with fp32 accumulation in any order is k*u = 256 * 2^-24 = 1.5e-5, the typical
error sqrt(k)*u = 1e-6 (measured on a CPU for 256x256x256: 1.4e-7); 1e-5 is far above what fp32
gives and below what a GEMM silently run in TF32 gives (1.3e-4 measured by rounding the inputs to
TF32), as in the torch suite."""

TINY = 1e-300

# --------------------------------------------------------------------------- arguments

EXPECT_GPU_FLAG = "--expect-gpu"


def split_expect_gpu(argv: Sequence[str]) -> Tuple[bool, List[str]]:
    """Take ``--expect-gpu`` out of ``argv`` (the protocol's parser does not know it): the parent
    saw NVIDIA GPUs, so a suite that finds none fails instead of skipping (as the driver suite)."""
    rest = [a for a in argv if a != EXPECT_GPU_FLAG]
    return len(rest) != len(argv), rest


def run_suite(suite: str, body: Any, argv: Optional[Sequence[str]] = None, stream: Any = None,
              redirect: bool = True, seal: bool = False) -> int:
    """Run ``body(rec, args, expect_gpu)`` under the protocol with ``argv`` (default
    ``sys.argv[1:]``) and print the line on ``stream``; return the exit code."""
    expect, rest = split_expect_gpu(list(sys.argv[1:] if argv is None else argv))

    def suite_body(rec: _protocol.Recorder, args: _protocol.Args) -> None:
        body(rec, args, expect)

    return _protocol.run(suite, suite_body, rest, stream=stream, seal=seal, redirect=redirect)


def main(suite: str, body: Any) -> int:
    """Entry point of a suite run as a script."""
    _protocol.enable_stack_dumps()
    return run_suite(suite, body, seal=True)


def no_gpu(rec: _protocol.Recorder, expect_gpu: bool, reason: str, name: str = "devices",
           cuda_error: Optional[str] = None) -> None:
    """No GPU visible to the framework: a failed test when a GPU was expected, else a skipped
    suite (the driver suite's rule)."""
    if expect_gpu:
        rec.add(name, "failed", message=reason, cuda_error=cuda_error)
    else:
        rec.add(name, "skipped", message=reason, cuda_error=cuda_error)
        rec.skip_suite(reason)


def report_missing(rec: _protocol.Recorder, missing: Sequence[int], count: int, who: str) -> None:
    """A failed ``select_gpu`` test per requested GPU that ``who`` does not see."""
    visible = f"0..{count - 1}" if count > 1 else ("0" if count == 1 else "none")
    note = visible_devices_note()
    for index in missing:
        rec.add("select_gpu", "failed", gpu=index,
                message=f"GPU {index} is not visible to {who} ({count} visible: {visible}){note}")


def visible_devices_note() -> str:
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    return f" (CUDA_VISIBLE_DEVICES={value!r})" if value is not None else ""


# --------------------------------------------------------------------------- importing


def import_framework(rec: _protocol.Recorder, module: str, label: Optional[str] = None) -> Any:
    """Import ``module``; None after marking the suite skipped (the module is not installed) or
    error (importing it raised: a broken install, a missing shared library, ...)."""
    label = label or module
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = getattr(exc, "name", None)
        if isinstance(exc, ModuleNotFoundError) and missing and missing.split(".")[0] == module.split(".")[0]:
            rec.skip_suite(f"{label} is not installed in {sys.executable}")
        else:
            rec.error_suite(f"importing {label} raised {_protocol.format_error(exc)}")
    except (Exception, SystemExit) as exc:
        rec.error_suite(f"importing {label} raised {_protocol.format_error(exc)}")
    return None


def distributions(pattern: str) -> Dict[str, str]:
    """Installed distributions whose normalised name (lower case, ``-`` for ``_``/``.``) matches
    ``pattern`` (re.fullmatch): name -> version."""
    out: Dict[str, str] = {}
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover - Python < 3.8
        return out
    rx = re.compile(pattern)
    try:
        dists = list(metadata.distributions())
    except Exception:
        return out
    for dist in dists:
        try:
            name = re.sub(r"[-_.]+", "-", str(dist.metadata["Name"] or "")).lower()
            if name and rx.fullmatch(name) and name not in out:
                out[name] = str(dist.version)
        except Exception:
            continue
    return out


def loaded_libraries(details: MutableMapping[str, str]) -> None:
    """Add the CUDA libraries this process mapped (``lib.<name>``, ``.version``, ``.dist``) to
    ``details``, as the torch suite reports them; nothing where /proc is missing."""
    try:
        try:
            from . import _libmaps
        except ImportError:
            import _libmaps  # type: ignore[no-redef,import-not-found]
        found, duplicates = _libmaps.loaded_details(_libmaps.read_maps())
    except Exception:
        return
    details.update(found)
    if duplicates:
        details["lib.duplicates"] = ", ".join(duplicates)


# --------------------------------------------------------------------------- numbers


def flatten(value: Any) -> List[float]:
    """The numbers in ``value`` (a number, nested lists/tuples, or anything with ``tolist()``,
    i.e. an array of numpy, jax, tensorflow, cupy), in row-major order, as floats."""
    if hasattr(value, "tolist") and not isinstance(value, (list, tuple)):
        value = value.tolist()
    out: List[float] = []
    stack: List[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        elif hasattr(item, "tolist") and not isinstance(item, (int, float)):
            stack.append(item.tolist())
        else:
            out.append(float(item))
    return out


def rel_error(x: Any, ref: Any) -> float:
    """Normwise relative error ``||x - ref||_2 / ||ref||_2`` (inf when the sizes differ or the
    reference is zero and ``x`` is not; NaN when either holds a NaN)."""
    a, r = flatten(x), flatten(ref)
    if len(a) != len(r):
        return math.inf
    if any(math.isnan(v) for v in a) or any(math.isnan(v) for v in r):
        return math.nan
    scale = max([abs(v) for v in a] + [abs(v) for v in r] + [0.0])
    if math.isinf(scale):
        return math.inf if any(p != q for p, q in zip(a, r)) else 0.0
    if scale == 0.0:
        return 0.0
    # scaled first, so squares of large values cannot overflow
    num = math.sqrt(math.fsum(((p - q) / scale) ** 2 for p, q in zip(a, r)))
    den = math.sqrt(math.fsum((q / scale) ** 2 for q in r))
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den


def scaled_max_error(got: Any, ref: Any, scale: Any) -> float:
    """``max_i |got_i - ref_i| / scale_i`` (scale floored at a tiny positive number): the GEMM
    metric with ``scale = |A| @ |B|``. inf when the sizes differ, NaN when ``got`` has a NaN."""
    g, r, s = flatten(got), flatten(ref), flatten(scale)
    if not len(g) == len(r) == len(s):
        return math.inf
    worst = 0.0
    for p, q, d in zip(g, r, s):
        if math.isnan(p) or math.isnan(q):
            return math.nan
        e = abs(p - q) / max(abs(d), TINY) if p != q else 0.0
        if e > worst:
            worst = e
    return worst


def mismatches(got: Any, want: Any) -> Tuple[int, Optional[int]]:
    """(how many elements differ, index of the first) in an exact comparison; a NaN never
    equals anything; a size difference counts the extra elements."""
    g, w = flatten(got), flatten(want)
    count, first = abs(len(g) - len(w)), None
    for i, (p, q) in enumerate(zip(g, w)):
        if not p == q:
            count += 1
            if first is None:
                first = i
    if first is None and count:
        first = min(len(g), len(w))
    return count, first


def within(err: float, tol: float) -> bool:
    """``err <= tol`` and finite (NaN and infinity never pass)."""
    return math.isfinite(err) and err <= tol


def verdict(what: str, err: float, tol: float) -> Tuple[bool, str]:
    """(ok, one-line message) for one compared quantity."""
    ok = within(err, tol)
    return ok, f"{what}: error {err:.2e} {'<=' if ok else '>'} tolerance {tol:.0e}"


def worst(errors: Mapping[str, float]) -> Tuple[str, float]:
    """The name and value of the largest error (NaN counts as the worst)."""
    name, value = "", 0.0
    for key, err in errors.items():
        if math.isnan(err):
            return key, err
        if err > value or not name:
            name, value = key, err
    return name, value


def compare_tensors(what: str, got: Mapping[str, Any], ref: Mapping[str, Any], tol: float = GRAD_TOL) -> Tuple[bool, str, Dict[str, float]]:
    """Compare named tensors (``got`` vs ``ref``, normwise each): (ok, message, metrics with
    ``rel_error.<name>`` and ``max_rel_error``). A name missing on one side fails."""
    errors: Dict[str, float] = {}
    for name in ref:
        errors[name] = rel_error(got[name], ref[name]) if name in got else math.inf
    for name in got:
        if name not in ref:
            errors[name] = math.inf
    name, err = worst(errors)
    ok, message = verdict(f"{what} (worst: {name})" if len(errors) > 1 else what, err, tol)
    metrics = {f"rel_error.{k}": v for k, v in errors.items()}
    metrics["max_rel_error"] = err
    metrics["tolerance"] = tol
    return ok, message, metrics


# --------------------------------------------------------------------------- inputs

MLP_PARAMS = ("w1", "b1", "w2", "b2")
MLP_SHAPES: Dict[str, Tuple[int, ...]] = {"x": (16, 32), "w1": (32, 64), "b1": (64,), "w2": (64, 8), "b2": (8,),
                                          "y": (16, 8)}
"""The MLP the jax and tensorflow suites differentiate: ``out = tanh(x @ w1 + b1) @ w2 + b2``,
``loss = mean((out - y)^2)``; gradients with respect to w1, b1, w2, b2."""


def mlp_inputs(seed: int = 5) -> Dict[str, List[Any]]:
    """Deterministic inputs and weights of the MLP as nested lists (Python's random, so every
    framework and its CPU reference start from the same numbers). Weights are scaled by
    1/sqrt(fan-in), so tanh stays out of saturation and gradients are O(0.1)."""
    rng = random.Random(seed)

    def make(shape: Tuple[int, ...], scale: float) -> List[Any]:
        if len(shape) == 1:
            return [rng.gauss(0.0, 1.0) * scale for _ in range(shape[0])]
        return [make(shape[1:], scale) for _ in range(shape[0])]

    return {
        "x": make(MLP_SHAPES["x"], 1.0),
        "w1": make(MLP_SHAPES["w1"], 1.0 / math.sqrt(MLP_SHAPES["w1"][0])),
        "b1": make(MLP_SHAPES["b1"], 0.1),
        "w2": make(MLP_SHAPES["w2"], 1.0 / math.sqrt(MLP_SHAPES["w2"][0])),
        "b2": make(MLP_SHAPES["b2"], 0.1),
        "y": make(MLP_SHAPES["y"], 1.0),
    }


# --------------------------------------------------------------------------- versions


def cuda_version(value: Any) -> str:
    """A CUDA version integer as the runtime/driver APIs give it (1000*major + 10*minor):
    ``12020`` -> ``"12.2"``; anything else as text."""
    try:
        v = int(value)
    except (TypeError, ValueError):
        return str(value)
    if v <= 0:
        return str(v)
    return f"{v // 1000}.{(v % 1000) // 10}"


def cudnn_version(value: Any) -> str:
    """A cuDNN version integer: 9.x is 10000*major + 100*minor + patch (``90100`` -> 9.1.0),
    8.x and older 1000*major + 100*minor + patch (``8907`` -> 8.9.7)."""
    try:
        v = int(value)
    except (TypeError, ValueError):
        return str(value)
    if v <= 0:
        return str(v)
    if v >= 10000:
        return f"{v // 10000}.{(v % 10000) // 100}.{v % 100}"
    return f"{v // 1000}.{(v % 1000) // 100}.{v % 100}"


# --------------------------------------------------------------------------- errors

_NO_DEVICE = re.compile(r"(CUDA_)?ERROR_NO_DEVICE|cudaErrorNoDevice|no CUDA-capable device (is|was) detected",
                        re.IGNORECASE)


_NO_DRIVER = re.compile(r"CUDA driver (was )?not found|no CUDA driver|could not find (a |the )?CUDA driver"
                        r"|libcuda\.so[.\d]*: cannot open", re.IGNORECASE)


def says_no_device(text: Optional[str]) -> bool:
    """The error text says there is no GPU to use (CUDA_ERROR_NO_DEVICE and its spellings, CUDA.jl's
    "(code 100, ERROR_NO_DEVICE)" too), as opposed to a GPU that is there but cannot be used."""
    return bool(text) and bool(_NO_DEVICE.search(text or ""))


def says_no_driver(text: Optional[str]) -> bool:
    """The error text says there is no NVIDIA driver (libcuda) to load at all: like no device, a
    skip unless a GPU was expected (the driver suite's rule)."""
    return bool(text) and bool(_NO_DRIVER.search(text or ""))


# glog / absl prefixes of C++ log lines: "2024-05-01 10:00:00.123456: W tensorflow/x/y.cc:42] ",
# "W0000 00:00:1721000000.123456   12345 cuda_executor.cc:1015] "
_LOG_PREFIX = re.compile(r"^\s*(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] |[IWEF]\d{4} [\d:.]+\s+\d+ )\S+:\d+\]\s*")


def strip_log_prefix(line: str) -> str:
    """A C++ log line without its glog/absl prefix."""
    return _LOG_PREFIX.sub("", line).strip()


def matching_lines(text: str, needles: Sequence[str], limit: int = 4) -> List[str]:
    """The distinct lines of ``text`` containing any of ``needles`` (case-insensitive), log
    prefixes removed, at most ``limit``."""
    out: List[str] = []
    lowered = [n.lower() for n in needles]
    for raw in text.splitlines():
        low = raw.lower()
        if any(n in low for n in lowered):
            line = strip_log_prefix(raw)
            if line and line not in out:
                out.append(line)
                if len(out) >= limit:
                    break
    return out


@contextlib.contextmanager
def capture_stderr_fd(into: List[str], limit: int = 1 << 20) -> Iterator[None]:
    """While the block runs, what is written to file descriptor 2 (C++ libraries' logs, and
    Python's stderr) goes to a temporary file; afterwards it is copied to the real stderr and its
    text (the last ``limit`` bytes) appended to ``into``."""
    try:
        sys.stderr.flush()
    except Exception:
        pass
    tmp: Any = None
    saved: Optional[int] = None
    try:
        tmp = tempfile.TemporaryFile()
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
    except OSError:
        if saved is not None:
            os.close(saved)
            saved = None
    try:
        yield
    finally:
        if saved is None:
            if tmp is not None:
                tmp.close()
        else:
            try:
                sys.stderr.flush()
            except Exception:
                pass
            _protocol._flush_c_stdio()
            os.dup2(saved, 2)
            os.close(saved)
            try:
                size = tmp.seek(0, os.SEEK_END)
                tmp.seek(max(0, size - limit))
                text = tmp.read().decode("utf-8", "replace")
            finally:
                tmp.close()
            try:
                sys.stderr.write(text)
                sys.stderr.flush()
            except Exception:
                pass
            into.append(text)
