"""The smoke protocol, shared by every suite: arguments, timed tests, and the one JSON line.

Standard library only, and no import of cudadoctor: a suite runs as a plain script under the
target interpreter, which may not have cudadoctor installed. Import it both ways::

    try:
        from . import _protocol          # imported as cudadoctor.smoke.<suite> (tests)
    except ImportError:
        import _protocol                 # run by path: the script's folder is sys.path[0]

A suite is a function ``body(rec, args)`` run by :func:`main` (as a script) or :func:`run` (in
tests)::

    def body(rec: _protocol.Recorder, args: _protocol.Args) -> None:
        try:
            import torch
        except ImportError as exc:
            rec.skip_suite(f"torch is not installed ({exc})")
            return
        rec.framework = f"torch {torch.__version__}"
        for gpu in gpus:
            with rec.test("matmul_fp32", gpu=gpu) as t:
                err = ...
                t.metrics["max_rel_error"] = err
                if err > 1e-4:
                    t.fail(f"max relative error {err:.2e} > 1e-4")

    if __name__ == "__main__":
        sys.exit(_protocol.main("torch", body))

While the body runs, stdout (the file descriptor too, so C libraries' chatter) goes to stderr;
the one JSON line is then written to the real stdout. An exception inside ``rec.test`` is
recorded on that test (``error`` "Type: message", ``cuda_error`` decoded) and the next test
runs; an exception escaping the body makes the suite ``error``.

The line: ``{"protocol": 1, "suite", "status": passed|failed|skipped|error, "reason", "tier",
"framework", "tests": [{"name", "status", "gpu", "duration_s", "message", "error",
"cuda_error", "metrics"}], "details"}``. Exit code 0 for passed/skipped, 1 for failed/error.

Metrics the checks read (cudadoctor/checks/smoke.py; numbers, any other metric is only shown):

- device-to-device copy tests ``d2d_bandwidth`` (driver suite) and ``bandwidth_d2d`` (torch):
  the memory traffic, bytes read plus written per second in GB/s (10**9 B/s), from
  ``traffic_gbs`` or ``rw_gbs``, else twice ``bandwidth_gbs`` or ``gbs`` (bytes copied per
  second); compared with ``expected_gbs`` when given, else the GPU's peak in
  compat_data/gpus.json, else ``theoretical_gbs`` (memory clock x bus width); below half warns.
- hardware counters, any test, as ``X_delta`` or ``before_X``/``after_X`` pairs: ``ecc_uncorrected``,
  ``ecc_corrected`` (only warns), ``retired_pages``, ``remapped_rows``; as counts: ``pattern_errors``
  (words read back wrong), ``xid_events``; in tests whose name contains ``stress``:
  ``mismatches`` or ``mismatched_elements`` (results differing between identical runs). Above
  zero they make a ``hardware_fault`` finding.
- details the checks read: ``gpu.<i>.name`` (or ``gpu<i>`` = "name, ...") and
  ``gpu.<i>.pci_bus_id`` of GPU ``i`` (the index the suite uses, among the visible GPUs), to
  match it with the snapshot's GPUs and the GPU table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import sys
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, TextIO, Tuple

PROTOCOL_VERSION = 1
TIERS = ("quick", "standard", "stress")
STATUSES = ("passed", "failed", "skipped", "error")
MAX_TEXT = 600  # characters kept of a message or an error

# --------------------------------------------------------------------------- arguments


class Args:
    """A suite's command line: ``--tier``, ``--gpus``, ``--duration``, ``--timeout``, and the
    hidden ``--device`` (``cpu`` runs the comparison logic on the CPU device, for tests)."""

    def __init__(self, tier: str = "quick", gpus: Optional[List[int]] = None, duration: Optional[float] = None,
                 timeout: Optional[float] = None, device: Optional[str] = None) -> None:
        self.tier = tier
        self.gpus = gpus  # None: every visible GPU
        self.duration = duration  # seconds, for the stress tier
        self.timeout = timeout  # the parent's budget in seconds, so the suite can size its work
        self.device = device
        self.unknown: List[str] = []  # options the protocol does not know (see parse_args)
        self.started = time.monotonic()

    def remaining(self, margin: float = 5.0) -> Optional[float]:
        """Seconds left of the parent's budget, less ``margin`` (None: no budget given)."""
        if self.timeout is None:
            return None
        return max(0.0, self.timeout - margin - (time.monotonic() - self.started))

    def __repr__(self) -> str:
        return (f"Args(tier={self.tier!r}, gpus={self.gpus!r}, duration={self.duration!r}, "
                f"timeout={self.timeout!r}, device={self.device!r})")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # raise instead of exiting, so the suite still prints its line
        raise ValueError(message)


def parse_gpus(text: str) -> List[int]:
    """``"0,2"`` -> ``[0, 2]``; raises ValueError on anything else."""
    out: List[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit():
            raise ValueError(f"GPU indexes are numbers separated by commas, not {text!r}")
        if int(part) not in out:
            out.append(int(part))
    return out


def parse_args(argv: Optional[Sequence[str]] = None) -> Args:
    """Parse a suite's arguments (default ``sys.argv[1:]``); raises ValueError when one is
    malformed. Options it does not know (a newer parent's, e.g. ``--expect-gpu`` for a suite that
    does not take it) are kept in ``args.unknown`` and otherwise ignored."""
    p = _Parser(add_help=False)
    p.add_argument("--tier", choices=TIERS, default="quick")
    p.add_argument("--gpus", type=parse_gpus, default=None)
    p.add_argument("--duration", type=float, default=None)
    p.add_argument("--timeout", type=float, default=None)
    p.add_argument("--device", default=None, help=argparse.SUPPRESS)
    ns, unknown = p.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    args = Args(tier=ns.tier, gpus=ns.gpus, duration=ns.duration, timeout=ns.timeout, device=ns.device)
    args.unknown = unknown
    return args


def select_gpus(requested: Optional[Sequence[int]], count: int) -> Tuple[List[int], List[int]]:
    """The GPUs to test out of ``count`` visible ones: (present, missing). ``None`` asks for all."""
    if requested is None:
        return list(range(count)), []
    return [g for g in requested if 0 <= g < count], [g for g in requested if not 0 <= g < count]


# --------------------------------------------------------------------------- errors

_DRIVER_NAME = re.compile(r"\bCUDA_ERROR_[A-Z0-9_]+\b")
_RUNTIME_NAME = re.compile(r"\bcudaError[A-Z][A-Za-z0-9]*\b")
_CUDA_ERROR_TEXT = re.compile(r"CUDA error:\s*([^\n]+)", re.IGNORECASE)

# cudaGetErrorString texts (CUDA runtime API), as torch prints them after "CUDA error: ".
RUNTIME_MESSAGES: Dict[str, str] = {
    "no kernel image is available for execution on the device": "cudaErrorNoKernelImageForDevice",
    "out of memory": "cudaErrorMemoryAllocation",
    "invalid device ordinal": "cudaErrorInvalidDevice",
    "no cuda-capable device is detected": "cudaErrorNoDevice",
    "cuda driver version is insufficient for cuda runtime version": "cudaErrorInsufficientDriver",
    "system has unsupported display driver / cuda driver combination": "cudaErrorSystemDriverMismatch",
    "forward compatibility was attempted on non supported hw": "cudaErrorCompatNotSupportedOnDevice",
    "the provided ptx was compiled with an unsupported toolchain": "cudaErrorUnsupportedPtxVersion",
    "an illegal memory access was encountered": "cudaErrorIllegalAddress",
    "an illegal instruction was encountered": "cudaErrorIllegalInstruction",
    "misaligned address": "cudaErrorMisalignedAddress",
    "unspecified launch failure": "cudaErrorLaunchFailure",
    "device-side assert triggered": "cudaErrorAssert",
    "the launch timed out and was terminated": "cudaErrorLaunchTimeout",
    "too many resources requested for launch": "cudaErrorLaunchOutOfResources",
    "uncorrectable ecc error encountered": "cudaErrorECCUncorrectable",
    "uncorrectable nvlink error was detected during the execution": "cudaErrorNvlinkUncorrectable",
    "cuda-capable device(s) is/are busy or unavailable": "cudaErrorDevicesUnavailable",
    "initialization error": "cudaErrorInitializationError",
    "invalid device function": "cudaErrorInvalidDeviceFunction",
    "device kernel image is invalid": "cudaErrorInvalidKernelImage",
    "ptx jit compiler library not found": "cudaErrorJitCompilerNotFound",
    "operation not supported": "cudaErrorNotSupported",
    "operation not permitted": "cudaErrorNotPermitted",
    "system not yet initialized": "cudaErrorSystemNotReady",
    "invalid argument": "cudaErrorInvalidValue",
    "peer access is not supported between these two devices": "cudaErrorPeerAccessUnsupported",
    "unknown error": "cudaErrorUnknown",
}


def decode_cuda_error(text: Optional[str]) -> Optional[str]:
    """The CUDA error name in an error text: a driver name (``CUDA_ERROR_NO_DEVICE``), a
    runtime name (``cudaErrorNoKernelImageForDevice``), or the runtime name of a known message
    after ``CUDA error:`` (torch's form). None when there is none."""
    if not text:
        return None
    for pattern in (_DRIVER_NAME, _RUNTIME_NAME):
        m = pattern.search(text)
        if m:
            return m.group(0)
    for m in _CUDA_ERROR_TEXT.finditer(text):
        said = m.group(1).strip().lower().rstrip(".")
        for message, name in RUNTIME_MESSAGES.items():
            if said.startswith(message):
                return name
    return None


def one_line(text: str, limit: int = MAX_TEXT) -> str:
    """Whitespace collapsed to single spaces, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def format_error(exc: BaseException) -> str:
    """``"Type: message"`` on one line (the message cut to a bounded size)."""
    message = str(exc)
    return one_line(f"{type(exc).__name__}: {message}" if message else type(exc).__name__)


# --------------------------------------------------------------------------- tests


class Skip(Exception):
    """Raise inside ``rec.test(...)`` to mark the test skipped with this message."""


class Fail(Exception):
    """Raise inside ``rec.test(...)`` to mark the test failed with this message."""


class TestCase:
    """One test as it runs; set ``message`` and ``metrics``, call :meth:`fail` or :meth:`skip`."""

    __test__ = False  # not a pytest class

    def __init__(self, name: str, gpu: Optional[int] = None) -> None:
        self.name = name
        self.gpu = gpu
        self.status = "passed"
        self.message: Optional[str] = None  # what was compared and the outcome
        self.error: Optional[str] = None
        self.cuda_error: Optional[str] = None
        self.metrics: Dict[str, float] = {}
        self.duration_s = 0.0

    def fail(self, message: str) -> None:
        """Mark the test failed (the body goes on; ``raise Fail(message)`` stops it)."""
        self.status, self.message = "failed", message

    def skip(self, message: str) -> None:
        """Mark the test skipped, with why."""
        self.status, self.message = "skipped", message

    def record_exception(self, exc: BaseException) -> None:
        self.status = "error"
        self.error = format_error(exc)
        self.cuda_error = decode_cuda_error(str(exc)) or decode_cuda_error(self.error)

    def as_dict(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "gpu": self.gpu,
            "duration_s": round(self.duration_s, 6),
            "message": one_line(self.message) if self.message else None,
            "error": self.error,
            "cuda_error": self.cuda_error,
            "metrics": _clean_metrics(self.metrics),
        }


def _clean_metrics(metrics: Dict[str, Any]) -> Dict[str, float]:
    """Finite numbers only (bools become 0/1; NaN, infinities and non-numbers are dropped)."""
    out: Dict[str, float] = {}
    for key, value in metrics.items():
        if isinstance(value, bool):
            value = int(value)
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(number):
            out[str(key)] = int(value) if isinstance(value, int) else number
    return out


class Recorder:
    """Collects a suite's tests and builds its result line."""

    def __init__(self, suite: str, tier: str = "quick") -> None:
        self.suite = suite
        self.tier = tier
        self.framework: Optional[str] = None  # "torch 2.5.1+cu124"
        self.details: Dict[str, str] = {}  # free facts: loaded libraries, device names, ...
        self.tests: List[TestCase] = []
        self._status: Optional[str] = None  # set by skip_suite / error_suite
        self._reason: Optional[str] = None

    @contextlib.contextmanager
    def test(self, name: str, gpu: Optional[int] = None) -> Iterator[TestCase]:
        """Time one test; an exception raised inside is recorded on it, not propagated
        (``Skip``/``Fail`` set the status with their message)."""
        case = TestCase(name, gpu)
        start = time.perf_counter()
        try:
            yield case
        except Skip as exc:
            case.skip(str(exc))
        except Fail as exc:
            case.fail(str(exc))
        except (Exception, SystemExit) as exc:
            case.record_exception(exc)
        finally:
            case.duration_s = time.perf_counter() - start
            self.tests.append(case)

    def add(self, name: str, status: str, gpu: Optional[int] = None, duration_s: float = 0.0,
            message: Optional[str] = None, error: Optional[str] = None, cuda_error: Optional[str] = None,
            metrics: Optional[Dict[str, float]] = None) -> TestCase:
        """Record a test measured elsewhere (e.g. in a spawned worker process)."""
        if status not in STATUSES:
            raise ValueError(f"test status {status!r} is not one of {STATUSES}")
        case = TestCase(name, gpu)
        case.status, case.duration_s, case.message, case.error = status, duration_s, message, error
        case.cuda_error = cuda_error or decode_cuda_error(error)
        case.metrics = dict(metrics or {})
        self.tests.append(case)
        return case

    def skip_suite(self, reason: str) -> None:
        """The whole suite is skipped: its framework is not installed, or no GPU is visible."""
        self._status, self._reason = "skipped", reason

    def error_suite(self, reason: str) -> None:
        """The suite could not run its tests (e.g. importing the framework raised)."""
        self._status, self._reason = "error", reason

    def status(self) -> Tuple[str, str]:
        """(status, reason): skipped/error when set; failed when a test failed or raised;
        skipped when every test was skipped; else passed."""
        if self._status is not None:
            return self._status, self._reason or self._status
        bad = [t for t in self.tests if t.status in ("failed", "error")]
        if bad:
            first = bad[0]
            where = f" on GPU {first.gpu}" if first.gpu is not None else ""
            what = first.message or first.error or first.status
            more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            verb = "failed: " if first.status == "failed" else "raised "
            return "failed", f"{first.name}{where} {verb}{what}{more}"
        if not self.tests:
            return "skipped", "no tests ran"
        if all(t.status == "skipped" for t in self.tests):
            return "skipped", self.tests[0].message or "every test was skipped"
        passed = sum(1 for t in self.tests if t.status == "passed")
        return "passed", f"{passed} test{'s' if passed != 1 else ''} passed"

    def result(self) -> Dict[str, Any]:
        """The result line as a dict."""
        status, reason = self.status()
        return {
            "protocol": PROTOCOL_VERSION,
            "suite": self.suite,
            "status": status,
            "reason": one_line(reason),
            "tier": self.tier,
            "framework": self.framework,
            "tests": [t.as_dict() for t in self.tests],
            "details": {str(k): str(v) for k, v in self.details.items()},
        }


# --------------------------------------------------------------------------- output


def _flush_c_stdio() -> None:
    """Flush C's stdio buffers, so a library's printf lands where fd 1 points now."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except Exception:  # no libc (Windows) or no symbol: nothing buffered we can reach
        pass


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send stdout to stderr, at the file-descriptor level too (C libraries' output), until exit."""
    saved_py = sys.stdout
    try:
        sys.stdout.flush()
    except Exception:
        pass
    try:
        saved_fd: Optional[int] = os.dup(1)
        os.dup2(2, 1)
    except OSError:
        saved_fd = None
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        try:
            sys.stderr.flush()
        except Exception:
            pass
        _flush_c_stdio()
        if saved_fd is not None:
            os.dup2(saved_fd, 1)
            os.close(saved_fd)
        sys.stdout = saved_py


def exit_code(status: str) -> int:
    """0 for passed/skipped, 1 for failed/error."""
    return 0 if status in ("passed", "skipped") else 1


def emit(result: Dict[str, Any], stream: Optional[TextIO] = None, seal: bool = False) -> int:
    """Print the result as one JSON line on ``stream`` (default stdout); return the exit code.
    With ``seal``, stdout (fd 1 too) then points to stderr, so nothing printed later (atexit
    chatter) can follow the line."""
    line = json.dumps(result, allow_nan=False, ensure_ascii=True, sort_keys=False)
    out = stream or sys.stdout
    out.write(line + "\n")
    out.flush()
    if seal and stream is None:
        try:
            os.dup2(2, 1)
        except OSError:
            pass
        sys.stdout = sys.stderr
    return exit_code(str(result.get("status")))


Body = Callable[[Recorder, Args], None]


def run(suite: str, body: Body, argv: Optional[Sequence[str]] = None, stream: Optional[TextIO] = None,
        seal: bool = False, redirect: bool = True) -> int:
    """Parse ``argv``, run ``body(rec, args)`` with stdout sent to stderr, emit the line on
    ``stream``; return the exit code. Never raises (KeyboardInterrupt aside). With ``seal`` (a
    script's run) it also turns on :func:`enable_stack_dumps`."""
    if seal:
        enable_stack_dumps()
    rec = Recorder(suite)
    guard = stdout_to_stderr() if redirect else contextlib.nullcontext()
    with guard:
        try:
            args = parse_args(argv)
            rec.tier = args.tier
        except ValueError as exc:
            rec.error_suite(f"bad arguments: {exc}")
        else:
            try:
                body(rec, args)
            except (Exception, SystemExit) as exc:
                rec.error_suite(f"the suite raised {format_error(exc)}")
                try:
                    import traceback

                    traceback.print_exc(file=sys.stderr)
                except Exception:
                    pass
    _note_peak_memory(rec)
    return emit(rec.result(), stream, seal=seal)


def _note_peak_memory(rec: "Recorder") -> None:
    """``details["peak_rss_mib"]``: this process's peak resident memory, which the parent reports
    for each child (issue 26). Absent where the platform does not say."""
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    except (ImportError, OSError, ValueError):
        return
    mib = peak / (1 << 20 if sys.platform == "darwin" else 1 << 10)
    rec.details.setdefault("peak_rss_mib", f"{mib:.1f}")


def enable_stack_dumps() -> None:
    """A crash prints the Python stack to stderr, and so does SIGUSR1 (the runner sends it to a
    suite that ran out of time, just before killing it: the tail shows where it hung)."""
    try:
        import faulthandler
        import signal

        faulthandler.enable()
        if hasattr(signal, "SIGUSR1"):
            faulthandler.register(signal.SIGUSR1, all_threads=True)
    except Exception:
        pass


def main(suite: str, body: Body) -> int:
    """Entry point of a suite run as a script: ``sys.exit(_protocol.main("torch", body))``."""
    return run(suite, body, sys.argv[1:], seal=True)
