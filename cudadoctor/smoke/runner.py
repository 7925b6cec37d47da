"""Run smoke suites in child processes and turn whatever happened into SmokeResults.

Each suite runs as its own process of the target interpreter (``python path/to/<suite>_suite.py
--tier ...``): spawned, never forked, in a new session so a timeout kills its whole process group,
stdin closed, stdout and stderr read by threads that keep a bounded amount. The parent never
hangs and never raises: a clean line, a Python exception, a non-zero exit, a signal, a timeout,
garbage and protocol violations all become a :class:`SmokeResult` with the reason and the last
lines of stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal as signals
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from cudadoctor.model import SmokeResult, SmokeTest, Snapshot
from cudadoctor.smoke import SUITES, suite_path

DEFAULT_TIMEOUT_S: Dict[str, float] = {"quick": 60.0, "standard": 300.0}
STRESS_GRACE_S = 120.0  # the stress tier's timeout is its duration plus this
STRESS_DEFAULT_DURATION_S = 60.0
STDOUT_LIMIT = 1 << 20  # bytes of stdout kept (the line is small; more is garbage anyway)
STDERR_KEEP = 64 << 10  # bytes of the end of stderr kept while reading
TAIL_LINES = 20
TAIL_CHARS = 4000
KILL_WAIT_S = 5.0  # after SIGKILL, how long to wait for the process to go
DRAIN_WAIT_S = 2.0  # after the child exits, how long its pipes may stay open (grandchildren)
DUMP_WAIT_S = 0.5  # after asking a hung child for its stack (SIGUSR1), before killing it
LOCK_ENV = "CUDADOCTOR_SMOKE_LOCK"  # suites/_shared_gpu.py: the timed sections' lock file

TEST_STATUSES = ("passed", "failed", "skipped", "error")
POLITE_ENV = {
    "XLA_PYTHON_CLIENT_PREALLOCATE": "false",  # JAX: allocate as needed, not 75 % of the GPU
    "TF_FORCE_GPU_ALLOW_GROWTH": "true",  # TensorFlow: the same
    "PYTHONUNBUFFERED": "1",
    "PYTHONFAULTHANDLER": "1",  # a segfault or abort prints the Python stack to stderr
    "PYTHONDONTWRITEBYTECODE": "1",  # leave the installed package folder alone
}


def default_timeout(tier: str, duration: Optional[float] = None) -> float:
    """quick 60 s, standard 300 s, stress its duration + 120 s."""
    if tier == "stress":
        return (duration if duration is not None else STRESS_DEFAULT_DURATION_S) + STRESS_GRACE_S
    return DEFAULT_TIMEOUT_S.get(tier, DEFAULT_TIMEOUT_S["quick"])


def child_env(base: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The user's environment (CUDA_VISIBLE_DEVICES untouched) plus settings that keep the
    frameworks polite and the child's output unbuffered."""
    env = dict(os.environ if base is None else base)
    env.update(POLITE_ENV)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    env.pop("PYTHONINSPECT", None)
    return env


def expectations(suite: str, snapshot: Optional[Snapshot]) -> List[str]:
    """What the parent knows and the suite should hold itself to: ``--expect-gpu`` when the
    snapshot lists NVIDIA GPUs (so "no device" fails instead of skipping), and for torch
    ``--expect "count=N;names=A|B;uuids=U|V"`` from NVML (its device_enumeration test)."""
    gpus = snapshot.gpus if snapshot is not None else None
    if not gpus:
        return []
    args = ["--expect-gpu"]
    if suite == "torch" and snapshot is not None and snapshot.gpus_from_driver:
        parts = [f"count={len(gpus)}"]
        names = [g.name or "" for g in gpus]
        uuids = [g.uuid or "" for g in gpus]
        for key, values in (("names", names), ("uuids", uuids)):
            if all(values) and not any(c in v for v in values for c in ";|"):
                parts.append(f"{key}={'|'.join(values)}")
        args += ["--expect", ";".join(parts)]
    return args


def suite_command(python: str, path: str, tier: str, gpus: Optional[Sequence[int]], duration: Optional[float],
                  timeout: float, extra: Sequence[str] = ()) -> List[str]:
    cmd = [python, path, "--tier", tier, "--timeout", f"{timeout:g}", *extra]
    if gpus is not None:
        cmd += ["--gpus", ",".join(str(g) for g in gpus)]
    if duration is not None:
        cmd += ["--duration", f"{duration:g}"]
    return cmd


def run_suite(suite: str, python: Optional[str] = None, tier: str = "quick", gpus: Optional[Sequence[int]] = None,
              duration: Optional[float] = None, timeout: Optional[float] = None,
              path: Optional[str] = None, extra_args: Sequence[str] = ()) -> SmokeResult:
    """Run one suite in a child of ``python`` (default: this interpreter) and say what happened.
    ``path`` replaces the suite's file (tests, ``--suite-path``); ``extra_args`` go to the suite
    (see :func:`expectations`). Never raises."""
    return start_suite(suite, python, tier, gpus, duration, timeout, path, extra_args).result()


def start_suite(suite: str, python: Optional[str] = None, tier: str = "quick", gpus: Optional[Sequence[int]] = None,
                duration: Optional[float] = None, timeout: Optional[float] = None, path: Optional[str] = None,
                extra_args: Sequence[str] = (), env: Optional[Mapping[str, str]] = None) -> "Started":
    """Start one suite's child and return at once; :meth:`Started.result` waits for it (its time
    limit counts from its start). Never raises."""
    if tier == "stress" and duration is None:
        duration = STRESS_DEFAULT_DURATION_S
    limit = timeout if timeout is not None else default_timeout(tier, duration)
    try:
        file = path or suite_path(suite)
    except KeyError:
        return Started(suite, tier, limit, SmokeResult(suite, "error", f"no suite named {suite!r} (known: "
                                                       f"{', '.join(SUITES)})", tier=tier))
    if not os.path.isfile(file):
        return Started(suite, tier, limit, SmokeResult(suite, "error", f"the suite file {file} is missing", tier=tier))
    interpreter = python or sys.executable
    try:
        child = _Child(suite_command(interpreter, file, tier, gpus, duration, limit, extra_args),
                       dict(env) if env is not None else child_env())
    except OSError as exc:
        return Started(suite, tier, limit, SmokeResult(suite, "error", f"could not start {interpreter}: "
                                                       f"{exc.strerror or exc}", tier=tier))
    return Started(suite, tier, limit, child)


class Started:
    """A suite whose child runs (or which could not start: then its result is known already)."""

    def __init__(self, suite: str, tier: str, limit: float, child: "Union[_Child, SmokeResult]") -> None:
        self.suite, self.tier, self.limit, self.child = suite, tier, limit, child

    def result(self) -> SmokeResult:
        """Wait for the child (within its limit) and say what happened. Never raises but for Ctrl-C,
        which kills the child first (it is in its own session and would not get it)."""
        child = self.child
        if isinstance(child, SmokeResult):
            return child
        try:
            child.wait(self.limit)
            return interpret(self.suite, self.tier, self.limit, child.stdout_bytes(), child.stdout_truncated,
                             child.stderr_text(), child.returncode, child.timed_out, child.duration_s, child.unkillable)
        except Exception as exc:  # a bug here must not take the parent down
            child.kill()
            return SmokeResult(self.suite, "error", f"the runner failed: {type(exc).__name__}: {exc}", tier=self.tier,
                               stderr_tail=tail(child.stderr_text()))
        except BaseException:
            child.kill()
            raise

    def kill(self) -> None:
        """Stop the child and its process group (a suite no longer wanted)."""
        if isinstance(self.child, _Child):
            self.child.kill()


def run_suites(suites: Sequence[str], python: Optional[str] = None, tier: str = "quick",
               gpus: Optional[Sequence[int]] = None, duration: Optional[float] = None,
               timeout: Optional[float] = None, paths: Optional[Mapping[str, str]] = None,
               snapshot: Optional[Snapshot] = None, concurrent: Optional[bool] = None) -> Tuple[SmokeResult, ...]:
    """Run the suites; ``paths`` overrides suite files; ``snapshot`` (the probed machine) tells each
    suite what to expect. The quick tier runs them concurrently (``concurrent``; their timed sections
    one at a time: :func:`start_suites`); the standard and stress tiers, which load the GPUs and
    measure under that load, one after the other."""
    if concurrent is None:
        concurrent = tier == "quick"
    if not concurrent:
        return tuple(run_suite(s, python=python, tier=tier, gpus=gpus, duration=duration, timeout=timeout,
                               path=(paths or {}).get(s), extra_args=expectations(s, snapshot)) for s in suites)
    with start_suites(suites, python, tier, gpus, duration, timeout, paths, snapshot) as started:
        return tuple(s.result() for s in started)


@contextlib.contextmanager
def start_suites(suites: Sequence[str], python: Optional[str] = None, tier: str = "quick",
                 gpus: Optional[Sequence[int]] = None, duration: Optional[float] = None,
                 timeout: Optional[float] = None, paths: Optional[Mapping[str, str]] = None,
                 snapshot: Optional[Snapshot] = None) -> Iterator[List[Started]]:
    """Start every suite at once, one child each, sharing a lock file through which their timed
    sections (bandwidths) take turns (suites/_shared_gpu.py); on leaving, every child still running
    is killed and the lock file removed."""
    fd, lock = tempfile.mkstemp(prefix="cudadoctor-smoke-", suffix=".lock")
    os.close(fd)
    env = child_env()
    env[LOCK_ENV] = lock
    started: List[Started] = []
    try:
        for name in suites:
            started.append(start_suite(name, python, tier, gpus, duration, timeout, (paths or {}).get(name),
                                       expectations(name, snapshot), env=env))
        yield started
    finally:
        for one in started:
            if isinstance(one.child, _Child) and one.child.proc.poll() is None:
                one.kill()
        try:
            os.unlink(lock)
        except OSError:
            pass


# --------------------------------------------------------------------------- the child process


class _Reader(threading.Thread):
    """Reads a pipe to its end, keeping the first ``head`` bytes or the last ``keep`` bytes."""

    def __init__(self, pipe: Any, head: Optional[int] = None, keep: Optional[int] = None) -> None:
        super().__init__(daemon=True)
        self.pipe, self.head, self.keep = pipe, head, keep
        self.data = bytearray()
        self.truncated = False

    def run(self) -> None:
        try:
            while True:
                chunk = self.pipe.read1(65536) if hasattr(self.pipe, "read1") else self.pipe.read(65536)
                if not chunk:
                    break
                self._take(chunk)
        except (OSError, ValueError):
            pass

    def _take(self, chunk: bytes) -> None:
        if self.head is not None:
            room = self.head - len(self.data)
            if len(chunk) > room:
                self.truncated = True
            self.data += chunk[: max(room, 0)]
        else:
            self.data += chunk
            if self.keep is not None and len(self.data) > 2 * self.keep:
                del self.data[: len(self.data) - self.keep]
                self.truncated = True


class _Child:
    def __init__(self, cmd: List[str], env: Dict[str, str]) -> None:
        posix = os.name == "posix"
        flags: Dict[str, Any] = {"start_new_session": True} if posix else {
            "creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
        self.started = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env, close_fds=True, **flags)
        self.out = _Reader(self.proc.stdout, head=STDOUT_LIMIT)
        self.err = _Reader(self.proc.stderr, keep=STDERR_KEEP)
        self.out.start()
        self.err.start()
        self.timed_out = False
        self.unkillable = False
        self.duration_s = 0.0
        self.returncode: Optional[int] = None

    @property
    def stdout_truncated(self) -> bool:
        return self.out.truncated

    def wait(self, limit: float) -> None:
        """Wait until ``limit`` seconds after the child's start (others may have been awaited first)."""
        try:
            self.returncode = self.proc.wait(timeout=max(0.0, self.started + limit - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.timed_out = True
            self._ask_for_stack()
            self.kill()
        self.duration_s = time.monotonic() - self.started
        self.out.join(DRAIN_WAIT_S)
        self.err.join(DRAIN_WAIT_S)
        if self.out.is_alive() or self.err.is_alive():  # a grandchild still holds the pipes
            self._kill_group()
            self.out.join(DRAIN_WAIT_S)
            self.err.join(DRAIN_WAIT_S)

    def _ask_for_stack(self) -> None:
        """SIGUSR1: a suite using the protocol dumps every thread's Python stack to stderr."""
        usr1 = getattr(signals, "SIGUSR1", None)
        if usr1 is None:
            return
        try:
            self.proc.send_signal(usr1)
            self.proc.wait(timeout=DUMP_WAIT_S)
        except (OSError, subprocess.TimeoutExpired):
            pass

    def _kill_group(self) -> None:
        try:
            if os.name == "posix":
                os.killpg(self.proc.pid, signals.SIGKILL)
            elif self.proc.poll() is None:
                self.proc.kill()
        except (OSError, ProcessLookupError):
            pass

    def kill(self) -> None:
        self._kill_group()
        try:
            self.returncode = self.proc.wait(timeout=KILL_WAIT_S)
        except subprocess.TimeoutExpired:  # stuck in the kernel (uninterruptible sleep in the driver)
            self.unkillable = True

    def stdout_bytes(self) -> bytes:
        return bytes(self.out.data)

    def stderr_text(self) -> str:
        return bytes(self.err.data).decode("utf-8", errors="replace")


# --------------------------------------------------------------------------- interpreting


def tail(text: str, lines: int = TAIL_LINES, chars: int = TAIL_CHARS) -> str:
    """The last ``lines`` lines of ``text``, at most ``chars`` characters."""
    kept = "\n".join(text.rstrip().splitlines()[-lines:])
    return kept if len(kept) <= chars else "…" + kept[-(chars - 1):]


def signal_name(returncode: Optional[int]) -> Optional[str]:
    """'SIGSEGV' for a child killed by signal 11 (returncode -11), else None."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return signals.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _last_error_line(stderr: str) -> Optional[str]:
    """The exception line of a traceback ('ModuleNotFoundError: No module named x'), or the last line."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else None


def interpret(suite: str, tier: str, limit: float, stdout: bytes, stdout_truncated: bool, stderr: str,
              returncode: Optional[int], timed_out: bool, duration_s: float, unkillable: bool = False) -> SmokeResult:
    """A SmokeResult from what the child left: pure, so every outcome is testable alone."""
    base: Dict[str, Any] = dict(suite=suite, tier=tier, duration_s=round(duration_s, 3), exit_code=returncode,
                                signal=signal_name(returncode), stderr_tail=tail(stderr))
    if timed_out:
        extra = " (it could not be killed: stuck in the kernel driver?)" if unkillable else ""
        base.update(exit_code=None, signal=None)
        return SmokeResult(status="timeout", reason=f"timed out after {limit:g} s{extra}", **base)
    text = stdout.decode("utf-8", errors="replace")
    lines = [line for line in text.splitlines() if line.strip()]
    sig = base["signal"]
    if not lines:
        if sig:
            return SmokeResult(status="crashed", reason=f"killed by {sig}", **base)
        said = _last_error_line(stderr)
        if returncode:
            return SmokeResult(status="error", reason=f"exited with code {returncode} without a result"
                               + (f": {said}" if said else ""), **base)
        return SmokeResult(status="error", reason="exited without printing a result line", **base)
    if len(lines) > 1 or stdout_truncated:
        head = " ".join(lines[0].split())[:120]
        return SmokeResult(status="error", reason=f"protocol violation: {len(lines)} lines on stdout instead of one "
                           f"(first: {head!r})" + (f"; then killed by {sig}" if sig else ""), **base)
    parsed, problem = parse_line(lines[0])
    if parsed is None:
        return SmokeResult(status="error", reason=f"protocol violation: {problem}"
                           + (f"; then killed by {sig}" if sig else ""), **base)
    return _from_line(parsed, base, returncode, sig)


def _from_line(line: Dict[str, Any], base: Dict[str, Any], returncode: Optional[int], sig: Optional[str]) -> SmokeResult:
    status, reason = line["status"], line["reason"]
    if sig:  # a clean line, then a crash (often in teardown): the crash is the news
        status, reason = "crashed", f"{reason}; then the process was killed by {sig}"
    elif returncode and status in ("passed", "skipped"):
        status, reason = "error", f"{reason}; then the process exited with code {returncode}"
    return SmokeResult(
        status=status, reason=reason, tests=tuple(_test(t) for t in line["tests"]),
        framework=line["framework"], details=line["details"], **{**base, "tier": line.get("tier") or base["tier"]},
    )


REQUIRED = ("protocol", "suite", "status", "reason", "tests")


def parse_line(line: str) -> Tuple[Optional[Dict[str, Any]], str]:
    """(the line as a checked dict, '') or (None, what is wrong with it)."""
    try:
        data = json.loads(line)
    except ValueError:
        return None, f"stdout is not a JSON line: {' '.join(line.split())[:120]!r}"
    if not isinstance(data, dict):
        return None, f"the result line is a JSON {type(data).__name__}, not an object"
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        return None, f"the result line misses {', '.join(missing)}"
    if data["protocol"] != 1:
        return None, f"the suite speaks protocol {data['protocol']!r}, not 1"
    if data["status"] not in TEST_STATUSES:
        return None, f"the result status {data['status']!r} is not one of {', '.join(TEST_STATUSES)}"
    if not isinstance(data["tests"], list):
        return None, "the result's tests are not a list"
    details = data.get("details")
    framework = data.get("framework")
    return {
        "status": data["status"],
        "reason": " ".join(str(data["reason"] or "").split())[:600],
        "tier": data.get("tier") if isinstance(data.get("tier"), str) else None,
        "framework": framework if isinstance(framework, str) else None,
        "tests": data["tests"],
        "details": {str(k): str(v) for k, v in details.items()} if isinstance(details, dict) else {},
    }, ""


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if value == value and abs(value) != float("inf") else None


def _text(value: Any) -> Optional[str]:
    return None if value is None else str(value)[:1000]


def _test(raw: Any) -> SmokeTest:
    """A SmokeTest from one entry of the line, tolerating any malformed field."""
    if not isinstance(raw, dict):
        return SmokeTest(name="?", status="error", error=f"malformed test entry: {str(raw)[:200]}")
    status = raw.get("status")
    gpu = raw.get("gpu")
    given = raw.get("metrics")
    metrics: Dict[Any, Any] = given if isinstance(given, dict) else {}
    clean = {str(k): n for k, n in ((k, _number(v)) for k, v in metrics.items()) if n is not None}
    return SmokeTest(
        name=str(raw.get("name") or "?"),
        status=status if status in TEST_STATUSES else "error",
        gpu=gpu if isinstance(gpu, int) and not isinstance(gpu, bool) else None,
        duration_s=_number(raw.get("duration_s")),
        message=_text(raw.get("message")),
        error=_text(raw.get("error")),
        cuda_error=_text(raw.get("cuda_error")),
        metrics=clean,
    )
