"""The step runner of the GPU proof kit (tools/gpu_proof.py): every step's commands run as child
processes in sessions of their own, each bounded by the step's time limit and by the kit's
global budget, killed with all their descendants when they overrun; whatever happens (a failing
step, a hanging one, SIGTERM, SIGINT) the summary and the archive are written.

Standard library only: the kit runs with the machine's python3 before anything is installed.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import tarfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_proof_procs import Command, descendants, reap_strays, run_child, run_children  # noqa: E402

PASS, FAIL, SKIP, TIMEOUT = "PASS", "FAIL", "SKIP", "TIMEOUT"
ARCHIVE_NAME = "gpu-proof.tar.gz"
SUMMARY_NAME = "summary.txt"
ARCHIVE_LIMIT = 15 << 20
# Log caps tried in turn until the archive fits ARCHIVE_LIMIT: a runaway log must not push the
# recorded machine or the manifest out of the one file that comes back.
LOG_CAPS = (1 << 20, 256 << 10, 32 << 10)


class Interrupted(Exception):
    """A signal asked the kit to stop; the archive is still written."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass
class Outcome:
    """What a step function decided: status, one short note, and the figures worth a summary."""

    status: str
    note: str = ""
    figures: Dict[str, Any] = field(default_factory=dict)


@dataclass
class StepResult:
    name: str
    status: str
    seconds: float
    note: str
    figures: Dict[str, Any]
    timeout_s: float
    commands: List[Command]
    what: str = ""


class StepContext:
    """What a step function gets: its folder, its deadline, and :meth:`run`."""

    def __init__(self, name: str, folder: str, deadline: float, env: Mapping[str, str], facts: Dict[str, Any]) -> None:
        self.name = name
        self.folder = folder
        self.deadline = deadline
        self.env = dict(env)
        self.facts = facts  # shared between steps: what one step learnt that a later one needs
        self.commands: List[Command] = []

    def left(self) -> float:
        return self.deadline - time.monotonic()

    @property
    def timed_out(self) -> bool:
        return any(c.timed_out for c in self.commands)

    def path(self, name: str) -> str:
        return os.path.join(self.folder, name)

    def run(self, label: str, argv: Sequence[str], timeout: Optional[float] = None, env: Optional[Mapping[str, str]] = None,
            cwd: Optional[str] = None) -> Command:
        """Run ``argv`` with stdout and stderr to ``<label>.stdout|.stderr`` in the step's folder,
        stdin closed, for at most ``timeout`` seconds and never past the step's deadline."""
        limit = self.left() if timeout is None else min(timeout, self.left())
        cmd = Command(label, [str(a) for a in argv], stdout_file=f"{label}.stdout", stderr_file=f"{label}.stderr")
        self.commands.append(cmd)
        run_child(cmd, self.folder, max(limit, 0.1), dict(self.env if env is None else env), cwd or self.folder)
        return cmd

    def run_parallel(self, jobs: Sequence[Job], timeout: Optional[float] = None) -> List[Command]:
        """:meth:`run` for several commands at once (they share the limit): ``(label, argv, env)``."""
        limit = max(self.left() if timeout is None else min(timeout, self.left()), 0.1)
        cmds = [Command(label, [str(a) for a in argv], stdout_file=f"{label}.stdout", stderr_file=f"{label}.stderr")
                for label, argv, _ in jobs]
        self.commands.extend(cmds)
        envs = [dict(self.env if env is None else env) for _, _, env in jobs]
        run_children(cmds, self.folder, limit, envs, self.folder)
        return cmds

    def read(self, cmd: Command, stream: str = "stdout") -> str:
        name = cmd.stdout_file if stream == "stdout" else cmd.stderr_file
        try:
            with open(self.path(name), encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError:
            return ""


Job = Tuple[str, Sequence[str], Optional[Mapping[str, str]]]
StepFunction = Callable[[StepContext], Outcome]


@dataclass(frozen=True)
class Step:
    """``timeout_s``: the most the step may take; ``min_s``: the least worth starting it with
    (the global budget keeps that much for every later step)."""

    name: str
    func: StepFunction
    timeout_s: float
    min_s: float
    what: str


# --------------------------------------------------------------------------- the runner


class Runner:
    """Runs the steps in order within ``budget_s``, writes the summary after each step and the
    archive at the end (also on an exception or a signal)."""

    def __init__(self, out_dir: str, work_dir: str, budget_s: float, header: Callable[[], List[str]],
                 env: Mapping[str, str], manifest_extra: Callable[[], Dict[str, Any]]) -> None:
        self.out_dir = out_dir
        self.work_dir = work_dir
        self.start = time.monotonic()
        self.deadline = self.start + budget_s
        self.budget_s = budget_s
        self.header = header
        self.env = dict(env)
        self.manifest_extra = manifest_extra
        self.facts: Dict[str, Any] = {}
        self.results: List[StepResult] = []
        self.steps: List[Step] = []
        self.interrupted: Optional[str] = None
        # Only the kit's own process, a subreaper, ends what a step left behind: a runner inside
        # another program (the tests) must not touch that program's other children.
        self.reap = False

    # --- signals

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.interrupted:
            return  # one stop is enough: a second signal must not cut the clean-up short
        self.interrupted = signal.Signals(signum).name
        raise Interrupted(signum)

    def install_signals(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)

    @staticmethod
    def ignore_signals() -> Dict[int, Any]:
        """While the archive is written: a second SIGTERM must not cut it short. Returns the
        handlers it replaced, for :meth:`finish` to put back (an ignored signal is inherited by
        every program started later, so a runner inside another program must not leave it)."""
        previous: Dict[int, Any] = {}
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            previous[sig] = signal.signal(sig, signal.SIG_IGN)
        return previous

    # --- steps

    def _timeout_for(self, index: int, steps: Sequence[Step]) -> float:
        """The step's limit, less what the later steps need at least; never less than its own
        minimum while the budget still holds that (earlier steps come first)."""
        left = self.deadline - time.monotonic()
        reserved = sum(s.min_s for s in steps[index + 1:])
        step = steps[index]
        return min(step.timeout_s, max(left - reserved, min(step.min_s, left)))

    def run_all(self, steps: Sequence[Step]) -> List[StepResult]:
        self.steps = list(steps)
        for index, step in enumerate(steps):
            try:
                if self.interrupted:
                    break
                timeout = self._timeout_for(index, steps)
                if timeout < step.min_s:
                    self._record(step, Outcome(SKIP, f"not run: {max(timeout, 0):.0f} s of the kit's budget left for it, "
                                                     f"it needs {step.min_s:.0f} s"), 0.0, timeout, [])
                    continue
                self.run_step(step, timeout)
                self.write_summary()
            except Interrupted:
                pass  # the handler noted it; the rest are listed as not run
        self.list_the_rest()
        return self.results

    def list_the_rest(self) -> None:
        """Every step has a line, also those a stop or a failure of the kit kept from running."""
        done = {r.name for r in self.results}
        why = f"the kit was stopped by {self.interrupted}" if self.interrupted else "the kit stopped before it"
        for step in self.steps:
            if step.name not in done:
                self._record(step, Outcome(SKIP, f"not run: {why}"), 0.0, 0.0, [])
        order = {s.name: i for i, s in enumerate(self.steps)}
        self.results.sort(key=lambda r: order.get(r.name, len(order)))

    def run_step(self, step: Step, timeout: float) -> StepResult:
        folder = os.path.join(self.work_dir, "steps", step.name)
        os.makedirs(folder, exist_ok=True)
        ctx = StepContext(step.name, folder, time.monotonic() + timeout, self.env, self.facts)
        before = descendants(os.getpid()) if self.reap else []
        start = time.monotonic()
        try:
            outcome = step.func(ctx)
            if ctx.timed_out:  # whatever the step made of it, a killed command is the headline
                late = [c.label for c in ctx.commands if c.timed_out]
                outcome = Outcome(TIMEOUT, f"{', '.join(late)} ran past its limit and was killed; {outcome.note}".rstrip("; "),
                                  outcome.figures)
        except Interrupted as exc:
            self._record(step, Outcome(FAIL, f"interrupted by {exc}"), time.monotonic() - start, timeout, ctx.commands)
            raise
        except Exception as exc:  # a bug in a step must not cost the archive
            with open(os.path.join(folder, "kit-error.txt"), "w", encoding="utf-8") as fh:
                fh.write(traceback.format_exc())
            outcome = Outcome(FAIL, f"the kit's step raised {type(exc).__name__}: {exc}")
        finally:
            strays = reap_strays(before) if self.reap else []
            if strays:
                with open(os.path.join(folder, "strays.txt"), "w", encoding="utf-8") as fh:
                    fh.write(f"processes left running after the step, killed: {strays}\n")
        return self._record(step, outcome, time.monotonic() - start, timeout, ctx.commands)

    def _record(self, step: Step, outcome: Outcome, seconds: float, timeout: float, commands: List[Command]) -> StepResult:
        result = StepResult(step.name, outcome.status, round(seconds, 2), outcome.note, outcome.figures,
                            round(max(timeout, 0.0), 1), list(commands), step.what)
        self.results.append(result)
        return result

    # --- output

    def summary_lines(self) -> List[str]:
        lines = list(self.header())
        for r in self.results:
            lines.append(summary_line(r))
        counts = {s: sum(1 for r in self.results if r.status == s) for s in (PASS, FAIL, SKIP, TIMEOUT)}
        total = time.monotonic() - self.start
        lines.append(f"{counts[PASS]} passed, {counts[FAIL]} failed, {counts[TIMEOUT]} timed out, {counts[SKIP]} skipped "
                     f"in {total:.0f} s (budget {self.budget_s:.0f} s)"
                     + (f"; stopped by {self.interrupted}" if self.interrupted else ""))
        return lines

    def write_summary(self, extra: Sequence[str] = ()) -> None:
        text = "\n".join(self.summary_lines() + list(extra)) + "\n"
        for folder in (self.out_dir, self.work_dir):
            tmp = os.path.join(folder, SUMMARY_NAME + ".tmp")
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, os.path.join(folder, SUMMARY_NAME))

    def manifest(self) -> Dict[str, Any]:
        data: Dict[str, Any] = {"kit": "tools/gpu_proof.py", "manifest_version": 1,
                                "budget_s": self.budget_s, "wall_s": round(time.monotonic() - self.start, 2),
                                "interrupted": self.interrupted, "steps": [asdict(r) for r in self.results]}
        data.update(self.manifest_extra())
        return data

    def finish(self) -> int:
        """Write manifest, summary and archive; the kit's exit code."""
        previous = self.ignore_signals()
        try:
            self.list_the_rest()
            size = write_archive(self.out_dir, self.work_dir, self.manifest)
            self.write_summary([f"archive {ARCHIVE_NAME}: {size / (1 << 20):.2f} MiB (limit {ARCHIVE_LIMIT >> 20} MiB)"])
            write_archive(self.out_dir, self.work_dir, self.manifest)  # again, with that last line in it
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        if self.interrupted:
            return 130
        return 1 if any(r.status in (FAIL, TIMEOUT) for r in self.results) else 0


def summary_line(r: StepResult) -> str:
    figures = " ".join(f"{k}={_fmt(v)}" for k, v in r.figures.items() if not isinstance(v, (dict, list)))
    parts = [f"{r.status:<7} {r.name} ({r.seconds:.1f} s)"]
    if figures:
        parts.append(figures)
    if r.note:  # the whole note is in manifest.json; the summary stays one readable line
        parts.append(f"- {r.note if len(r.note) <= 240 else r.note[:239] + '…'}")
    return "  ".join(parts)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


# --------------------------------------------------------------------------- the archive


def _walk(folder: str) -> Iterator[str]:
    machines = os.path.join(folder, "machine") + os.sep
    for root, dirs, files in os.walk(folder):
        # caches tools leave in a step's folder (pytest's hypothesis database) are not evidence;
        # a recorded filesystem keeps every folder (a venv at /opt/x/.venv holds the frameworks)
        recorded = (root + os.sep).startswith(machines)
        dirs[:] = sorted(d for d in dirs if recorded or not d.startswith("."))
        for name in sorted(files):
            yield os.path.join(root, name)


def _capped(path: str, cap: int) -> Optional[bytes]:
    """A log's bytes when it is over ``cap``: its head and tail with a marker; None to take it whole."""
    size = os.path.getsize(path)
    if size <= cap:
        return None
    head, tail = cap // 4, cap - cap // 4
    with open(path, "rb") as fh:
        first = fh.read(head)
        fh.seek(size - tail)
        last = fh.read()
    return first + f"\n[... {size - head - tail} bytes cut by the GPU proof kit ...]\n".encode() + last


def _is_log(path: str) -> bool:
    return path.endswith((".stdout", ".stderr", ".txt", ".log"))


def write_archive(out_dir: str, work_dir: str, manifest: Callable[[], Dict[str, Any]]) -> int:
    """Tar ``work_dir`` as ``gpu-proof/`` into OUT_DIR/gpu-proof.tar.gz, logs capped so the
    archive stays under :data:`ARCHIVE_LIMIT`; the size written."""
    target = os.path.join(out_dir, ARCHIVE_NAME)
    size = 0
    for cap in LOG_CAPS:
        data = manifest()
        data["log_cap_bytes"] = cap
        with open(os.path.join(work_dir, "manifest.json"), "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, default=str)
        tmp = target + ".tmp"
        with tarfile.open(tmp, "w:gz") as tar:
            for path in _walk(work_dir):
                name = "gpu-proof/" + os.path.relpath(path, work_dir)
                cut = _capped(path, cap) if _is_log(path) else None
                if cut is None:
                    tar.add(path, arcname=name, recursive=False)
                else:
                    info = tar.gettarinfo(path, arcname=name)
                    info.size = len(cut)
                    tar.addfile(info, io.BytesIO(cut))
        os.replace(tmp, target)
        size = os.path.getsize(target)
        if size <= ARCHIVE_LIMIT:
            break
    return size
