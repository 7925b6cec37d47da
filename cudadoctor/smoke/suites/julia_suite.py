"""The julia smoke suite: is CUDA.jl functional, and does a Zygote gradient through a CuArray
match the one computed on the CPU?

The Python child runs ``julia`` (found on PATH) as its own child, in a new session and bounded by
what is left of the parent's budget (``--timeout``), with the script :data:`JULIA_SCRIPT` and the
selected GPU indexes as arguments. The script prints ``cudadoctor:<key>=<value>`` lines on stdout
(anything else, and all of stderr, is julia's own chatter); :func:`interpret` turns them, the
exit status and a timeout into the protocol's tests. The tolerance is applied here, in Python,
so every suite states its bounds in one place (``_frameworks``).

Tests:

- ``functional``: ``using CUDA`` in the active Julia project and ``CUDA.functional()``. Julia
  not on PATH or CUDA.jl not installed in the active project: skipped. ``using CUDA`` raising:
  error. Not functional: failed with CUDA.jl's reason (skipped when the reason is that there is
  no device, failed with ``--expect-gpu``).
- ``broadcast`` per GPU: a CuArray broadcast (a kernel compiled by CUDA.jl's GPUCompiler) read
  back and checked exactly.
- ``zygote_grad`` per GPU: ``Zygote.gradient`` of ``sum(abs2, tanh.(W * x)) / length(x)`` with
  respect to ``W`` on CuArrays (a CUBLAS GEMM and broadcast kernels) against the same gradient on
  Arrays: normwise relative error <= ``_frameworks.GRAD_TOL`` (1e-4), CUDA.jl's math mode set to
  PEDANTIC (no TF32). Skipped when Zygote is not installed in the active project.

``framework`` is "CUDA.jl <version>" (or "julia <version>" before CUDA.jl is known); ``details``
hold the julia version, the CUDA runtime and driver versions CUDA.jl reports and the GPU names.
Runs as a script (``python julia_suite.py --tier quick [--expect-gpu]``).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

try:  # imported as cudadoctor.smoke.suites.julia_suite (tests)
    from . import _frameworks as fw
    from . import _protocol
except ImportError:  # run by path: this folder is sys.path[0]
    import _frameworks as fw  # type: ignore[no-redef,import-not-found]
    import _protocol  # type: ignore[no-redef,import-not-found]

SUITE = "julia"
PREFIX = "cudadoctor:"
DEFAULT_BUDGET_S = 300.0  # without --timeout; loading CUDA.jl takes 5-30 s, precompiling minutes
MIN_BUDGET_S = 5.0
STDERR_TAIL_LINES = 12

JULIA_SCRIPT = r"""
const PREFIX = "cudadoctor:"
say(k, v) = (println(PREFIX, k, "=", replace(string(v), r"\s+" => " ")); flush(stdout))
errtext(e) = replace(sprint(showerror, e), r"\s+" => " ")
say("julia_version", VERSION)
if Base.find_package("CUDA") === nothing
    say("cuda_jl", "missing")
    exit(0)
end
const CUDA_LOAD_ERROR = try
    @eval Main using CUDA
    ""
catch e
    errtext(e)
end
if !isempty(CUDA_LOAD_ERROR)
    say("cuda_load_error", CUDA_LOAD_ERROR)
    exit(0)
end
say("cuda_jl", "loaded")
say("cuda_jl_version", try pkgversion(CUDA) catch; "unknown" end)
const ZYGOTE = if Base.find_package("Zygote") === nothing
    "missing"
else
    try
        @eval Main using Zygote
        "loaded"
    catch e
        "error: " * errtext(e)
    end
end
say("zygote", ZYGOTE)
if ZYGOTE == "loaded"
    say("zygote_version", try pkgversion(Zygote) catch; "unknown" end)
end
try say("runtime_version", CUDA.runtime_version()) catch end
try say("driver_version", CUDA.driver_version()) catch end
const FUNCTIONAL = try
    CUDA.functional()
catch e
    say("functional_error", errtext(e))
    false
end
say("functional", FUNCTIONAL)
if !FUNCTIONAL
    try CUDA.functional(true) catch e; say("functional_error", errtext(e)) end
    exit(0)
end
const NDEV = try
    length(CUDA.devices())
catch e
    say("devices_error", errtext(e))
    0
end
say("ndevices", NDEV)
for i in 0:NDEV-1
    try say("device.$i", CUDA.name(CuDevice(i))) catch end
end
using LinearAlgebra, Random
const X = randn(MersenneTwister(1), Float32, 32, 16)
const W0 = randn(MersenneTwister(2), Float32, 64, 32) ./ Float32(sqrt(32))
loss(W, x) = sum(abs2, tanh.(W * x)) / length(x)
function broadcast_check()
    a = CUDA.fill(1.0f0, 4099)
    h = Array(a .* 2.0f0 .+ 1.0f0)
    all(==(3.0f0), h) || error("a CuArray broadcast gave $(h[findfirst(!=(3.0f0), h)]) instead of 3.0")
    nothing
end
function grad_error()
    gc = Zygote.gradient(w -> loss(w, X), W0)[1]
    xg = CuArray(X)
    gg = Zygote.gradient(w -> loss(w, xg), CuArray(W0))[1]
    gg isa CuArray || error("the gradient came back as a $(typeof(gg)), not a CuArray")
    Float64(norm(Array(gg) .- gc) / norm(gc))
end
function run_test(name, i, f)
    t0 = time()
    try
        v = f()
        v === nothing || say("test.$name.$i.value", v)
        say("test.$name.$i.status", "done")
    catch e
        say("test.$name.$i.error", errtext(e))
    end
    say("test.$name.$i.seconds", time() - t0)
end
const WANT = isempty(ARGS) ? collect(0:NDEV-1) : [parse(Int, a) for a in ARGS]
for i in WANT
    0 <= i < NDEV || continue
    try
        CUDA.device!(i)
        try CUDA.math_mode!(CUDA.PEDANTIC_MATH) catch end
    catch e
        say("test.broadcast.$i.error", "CUDA.device!($i) raised " * errtext(e))
        continue
    end
    run_test("broadcast", i, broadcast_check)
    ZYGOTE == "loaded" && run_test("zygote_grad", i, grad_error)
end
say("done", true)
"""


# --------------------------------------------------------------------------- pure parts


def parse_output(text: str, prefix: str = PREFIX) -> Dict[str, str]:
    """The ``<prefix><key>=<value>`` lines of the script's stdout as a dict (a later line wins);
    other lines are ignored."""
    out: Dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith(prefix):
            continue
        key, sep, value = line[len(prefix):].partition("=")
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out


def _float(text: Optional[str]) -> Optional[float]:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def tail_lines(text: str, lines: int = STDERR_TAIL_LINES) -> str:
    """The last non-empty lines of ``text``, joined by `` | ``."""
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()][-lines:]
    return " | ".join(kept)


class Outcome:
    """What a julia run amounts to: a suite-level status and reason (None: decided by the tests),
    the tests (dicts for ``Recorder.add``), framework and details."""

    def __init__(self) -> None:
        self.status: Optional[str] = None  # skipped | error, or None
        self.reason = ""
        self.tests: List[Dict[str, Any]] = []
        self.framework: Optional[str] = None
        self.details: Dict[str, str] = {}

    def test(self, name: str, status: str, gpu: Optional[int] = None, duration_s: float = 0.0,
             message: Optional[str] = None, error: Optional[str] = None, cuda_error: Optional[str] = None,
             metrics: Optional[Dict[str, float]] = None) -> None:
        self.tests.append({"name": name, "status": status, "gpu": gpu, "duration_s": duration_s, "message": message,
                           "error": error, "cuda_error": cuda_error or cuda_error_name(error or message),
                           "metrics": dict(metrics or {})})

    def no_gpu(self, expect_gpu: bool, reason: str, name: str = "functional") -> None:
        if expect_gpu:
            self.test(name, "failed", message=reason)
        else:
            self.test(name, "skipped", message=reason)
            self.status, self.reason = "skipped", reason

    def __repr__(self) -> str:
        return f"Outcome(status={self.status!r}, reason={self.reason!r}, tests={self.tests!r})"


def interpret(kv: Mapping[str, str], returncode: Optional[int], stderr: str = "", timed_out: bool = False,
              budget_s: float = 0.0, wall_s: float = 0.0, requested: Optional[Sequence[int]] = None,
              expect_gpu: bool = False, tol: float = fw.GRAD_TOL) -> Outcome:
    """Turn the script's ``key=value`` output ``kv``, its exit status (None: did not finish) and
    stderr into an :class:`Outcome`."""
    out = Outcome()
    julia = kv.get("julia_version")
    if julia:
        out.details["julia"] = julia
        out.framework = f"julia {julia}"
    for key, name in (("cuda_jl_version", "cuda_jl"), ("zygote_version", "zygote"), ("runtime_version", "cuda.runtime"),
                      ("driver_version", "cuda.driver")):
        if kv.get(key):
            out.details[name] = kv[key]
    if kv.get("cuda_jl_version"):
        out.framework = f"CUDA.jl {kv['cuda_jl_version']}" + (f" (julia {julia})" if julia else "")
    err_tail = tail_lines(stderr)
    if err_tail and (timed_out or returncode not in (0, None) or kv.get("functional") == "false"):
        out.details["julia_stderr_tail"] = err_tail[-_protocol.MAX_TEXT:]

    if kv.get("cuda_jl") == "missing":
        out.status = "skipped"
        out.reason = "CUDA.jl is not installed in the active Julia project" + (f" (julia {julia})" if julia else "")
        return out
    if kv.get("cuda_load_error"):
        out.status, out.reason = "error", f"using CUDA raised {kv['cuda_load_error']}"
        return out
    if timed_out or returncode is None:
        stage = ("while loading CUDA.jl (precompiling or downloading artifacts?)" if "cuda_jl" not in kv
                 else "while running the tests" if "functional" in kv else "while initialising CUDA")
        out.status, out.reason = "error", f"julia did not finish within {budget_s:.0f} s, {stage}"
        _gpu_tests(out, kv, requested, tol)
        return out
    if "cuda_jl" not in kv or ("done" not in kv and kv.get("functional") != "false"):
        how = (f"was killed by signal {-returncode}" if returncode < 0 else f"exited with code {returncode}")
        out.status = "error"
        out.reason = f"julia {how} before finishing" + (f": {err_tail[-300:]}" if err_tail else "")
        _gpu_tests(out, kv, requested, tol)
        return out

    functional = kv.get("functional") == "true"
    if not functional:
        why = kv.get("functional_error") or _error_lines(stderr) or "CUDA.functional() is false"
        reason = f"CUDA.jl is not functional: {why}"
        if fw.says_no_device(why) or fw.says_no_driver(why):
            out.no_gpu(expect_gpu, reason)
        else:
            out.test("functional", "failed", duration_s=wall_s, message=reason)
        return out
    count = int(_float(kv.get("ndevices")) or 0)
    if count == 0:
        out.no_gpu(expect_gpu, f"CUDA.jl sees no GPU{fw.visible_devices_note()}" +
                   (f": {kv['devices_error']}" if kv.get("devices_error") else ""))
        return out
    names = [kv.get(f"device.{i}", "?") for i in range(count)]
    for i, name in enumerate(names):
        out.details[f"gpu.{i}.name"] = name
    out.test("functional", "passed", duration_s=wall_s, metrics={"count": float(count), "julia_wall_s": wall_s},
             message=f"CUDA.functional() is true; CUDA.jl sees {count} GPU{'s' * (count != 1)}: {', '.join(names)}")
    selected, missing = _protocol.select_gpus(requested, count)
    for index in missing:
        out.test("select_gpu", "failed", gpu=index,
                 message=f"GPU {index} is not visible to CUDA.jl ({count} visible: 0..{count - 1})")
    _gpu_tests(out, kv, selected, tol, zygote=kv.get("zygote", "missing"))
    return out


def _error_lines(stderr: str) -> str:
    """The error lines of julia's log (``┌ Error: ...``, ``│ CUDA error: ...``), frames removed."""
    lines = [ln.strip("┌│└ \t") for ln in fw.matching_lines(stderr, ("error", "exception"), limit=6)]
    return "; ".join(ln for ln in lines if ln and ln.rstrip("=").strip().lower() != "exception")


_JULIA_CODE = re.compile(r"\(code \d+, (ERROR_[A-Z0-9_]+)\)")


def cuda_error_name(text: Optional[str]) -> Optional[str]:
    """The CUDA error name in a text, CUDA.jl's "(code 100, ERROR_NO_DEVICE)" read as
    CUDA_ERROR_NO_DEVICE."""
    if not text:
        return None
    m = _JULIA_CODE.search(text)
    return f"CUDA_{m.group(1)}" if m else _protocol.decode_cuda_error(text)


def _gpu_indexes(kv: Mapping[str, str]) -> List[int]:
    found = set()
    for key in kv:
        parts = key.split(".")
        if len(parts) == 4 and parts[0] == "test" and parts[2].isdigit():
            found.add(int(parts[2]))
    return sorted(found)


def _gpu_tests(out: Outcome, kv: Mapping[str, str], selected: Optional[Sequence[int]], tol: float,
               zygote: Optional[str] = None) -> None:
    """``broadcast`` and ``zygote_grad`` per GPU from the ``test.<name>.<gpu>.*`` keys. With
    ``zygote`` None (julia stopped early) only tests that reported something are recorded."""
    indexes = list(selected) if selected is not None and zygote is not None else _gpu_indexes(kv)
    for gpu in indexes:
        for name in ("broadcast", "zygote_grad"):
            base = f"test.{name}.{gpu}"
            seconds = _float(kv.get(f"{base}.seconds")) or 0.0
            error = kv.get(f"{base}.error")
            reported = any(k.startswith(base + ".") for k in kv)
            if error:
                out.test(name, "error", gpu=gpu, duration_s=seconds, error=error)
            elif name == "zygote_grad" and zygote is not None and zygote != "loaded" and not reported:
                why = ("Zygote is not installed in the active Julia project" if zygote == "missing"
                       else f"using Zygote raised {zygote[len('error: '):] if zygote.startswith('error: ') else zygote}")
                out.test(name, "skipped", gpu=gpu, message=why)
            elif kv.get(f"{base}.status") == "done":
                if name == "broadcast":
                    out.test(name, "passed", gpu=gpu, duration_s=seconds,
                             message="a CuArray broadcast kernel computed 1 * 2 + 1 = 3 on 4099 elements")
                else:
                    err = _float(kv.get(f"{base}.value"))
                    err = math.nan if err is None else err
                    ok, message = fw.verdict("Zygote gradient of sum(abs2, tanh.(W*x)) on CuArrays vs Arrays",
                                             err, tol)
                    out.test(name, "passed" if ok else "failed", gpu=gpu, duration_s=seconds, message=message,
                             metrics={"max_rel_error": err, "tolerance": tol})
            elif zygote is not None and (name == "broadcast" or zygote == "loaded"):
                out.test(name, "error", gpu=gpu, duration_s=seconds, error="julia reported no outcome for this test")


# --------------------------------------------------------------------------- running julia


def _die_with_parent() -> None:
    """In the julia child before exec (Linux): SIGKILL it when this suite process dies, since its
    own session is out of reach of the runner's kill of the suite's process group."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except Exception:
        pass


def run_julia(julia: str, gpus: Optional[Sequence[int]], budget_s: float) -> Tuple[Optional[int], str, str, bool, float]:
    """Run the script under ``julia`` in a new session, killing its whole process group (julia's
    precompile workers too) after ``budget_s``: (exit code or None when killed for time, stdout,
    stderr, timed out, seconds)."""
    cmd = [julia, "--startup-file=no", "--history-file=no", "--color=no", "-e", JULIA_SCRIPT]
    cmd += [str(g) for g in (gpus or [])]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True,
                            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
    timed_out = False
    try:
        stdout, stderr = proc.communicate(timeout=budget_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        try:
            stdout, stderr = proc.communicate(timeout=5.0)
        except subprocess.TimeoutExpired:
            stdout, stderr = b"", b""
    wall = time.monotonic() - start
    code = None if timed_out else proc.returncode
    return code, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"), timed_out, wall


def budget(args: _protocol.Args) -> float:
    """Seconds julia may take: what is left of the parent's budget less a margin to print the
    line, or :data:`DEFAULT_BUDGET_S`."""
    left = args.remaining(margin=3.0)
    return DEFAULT_BUDGET_S if left is None else max(MIN_BUDGET_S, left)


def body(rec: _protocol.Recorder, args: _protocol.Args, expect_gpu: bool = False) -> None:
    julia = shutil.which("julia")
    if julia is None:
        rec.skip_suite("julia is not on PATH")
        return
    rec.details["julia.path"] = julia
    if args.device == "cpu":
        rec.skip_suite("the julia suite has no CPU mode (--device cpu)")
        return
    limit = budget(args)
    try:
        code, stdout, stderr, timed_out, wall = run_julia(julia, args.gpus, limit)
    except OSError as exc:
        rec.error_suite(f"could not run {julia}: {exc.strerror or exc}")
        return
    if stderr:
        sys.stderr.write(stderr)
    noise = [ln for ln in stdout.splitlines() if ln.strip() and not ln.strip().startswith(PREFIX)]
    if noise:
        sys.stderr.write("\n".join(noise) + "\n")
    outcome = interpret(parse_output(stdout), code, stderr, timed_out, limit, wall, args.gpus, expect_gpu)
    rec.framework = outcome.framework
    rec.details.update(outcome.details)
    for t in outcome.tests:
        rec.add(**t)
    if outcome.status == "skipped":
        rec.skip_suite(outcome.reason)
    elif outcome.status == "error":
        rec.error_suite(outcome.reason)


def run(argv: Optional[Sequence[str]] = None, stream: Any = None, redirect: bool = True, seal: bool = False) -> int:
    """Run the suite with ``argv`` (default ``sys.argv[1:]``), print the line on ``stream``."""
    return fw.run_suite(SUITE, body, argv, stream=stream, redirect=redirect, seal=seal)


if __name__ == "__main__":
    sys.exit(fw.main(SUITE, body))
