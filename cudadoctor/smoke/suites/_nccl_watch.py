"""The side channel and the watchdog of the multi-node NCCL check.

Every rank writes who it is and where it is (stage, step, state) into the c10d store the ranks
rendezvoused through, under ``cudadoctor/nccl/``. That store lives in torchrun's agent (or rank
0), outside the collectives, so it still answers when a collective hangs. A watchdog thread in
every rank reads it when its stage passes the deadline, or as soon as any rank reports a failure,
names the ranks at fault on stderr, and ends the process with ``os._exit``: a hung collective
cannot be unwound, and a clean exit could block in the library's teardown.
"""

from __future__ import annotations

import datetime
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence, Tuple

from . import _nccl_report as report
from ._nccl_report import Progress, RankError, RankInfo

POLL_S = 0.25
FAILURE_POLL_S = 0.5
GRACE_S = 1.0  # after the first failure, time for the other failing ranks to publish theirs
ACK_WAIT_S = 8.0  # how long a rank waits for rank 0 to have printed the list before it exits
STORE_TIMEOUT_S = 5.0  # each read of the watchdog: the store itself may be gone

Reporter = Callable[[List[RankError], Dict[int, RankInfo]], None]


class Channel:
    """The ranks' shared notes in the store (a ``torch.distributed.Store`` under our prefix)."""

    def __init__(self, store: Any, rank: int, world: int) -> None:
        self.store = store
        self.rank = rank
        self.world = world

    def set(self, key: str, value: str) -> None:
        self.store.set(key, value)

    def publish(self, progress: Progress) -> None:
        self.store.set(f"progress/{self.rank}", progress.to_json())

    def publish_failure(self, progress: Progress) -> None:
        """Record the failure and its place in the order of failures."""
        self.publish(progress)
        n = int(self.store.add("failed", 1))
        self.store.set(f"failed/{n}", str(self.rank))
        self.raise_alarm()

    def failures(self) -> int:
        return int(self.store.add("failed", 0))

    def raise_alarm(self) -> None:
        """Tell every rank's watchdog that the run is ending (a failure, or a stage past its
        deadline somewhere)."""
        self.store.add("alarm", 1)

    def alarm(self) -> int:
        return int(self.store.add("alarm", 0))

    def stop_kind(self) -> str:
        """Why the run is ending: ``failed`` once any rank published a failure, else ``hang``."""
        return "failed" if self.failures() else "hang"

    def get_all(self, kind: str, ranks: Sequence[int]) -> Dict[int, str]:
        """``kind/<rank>`` for every rank that wrote it (missing ones are left out, not waited for)."""
        keys = [f"{kind}/{r}" for r in ranks]
        if keys and self.store.check(keys):
            return {r: _text(v) for r, v in zip(ranks, self.store.multi_get(keys))}
        return {r: _text(self.store.get(k)) for r, k in zip(ranks, keys) if self.store.check([k])}

    def wait_all(self, kind: str, ranks: Sequence[int]) -> Dict[int, str]:
        """``kind/<rank>`` for every rank, waiting for them within the store's timeout."""
        keys = [f"{kind}/{r}" for r in ranks]
        return {r: _text(v) for r, v in zip(ranks, self.store.multi_get(keys))}

    def progress(self) -> Dict[int, Progress]:
        return {r: Progress.from_json(v) for r, v in self.get_all("progress", range(self.world)).items()}

    def infos(self) -> Dict[int, RankInfo]:
        return {r: RankInfo.from_json(v) for r, v in self.get_all("id", range(self.world)).items()}

    def failure_order(self) -> List[int]:
        got = self.get_all("failed", range(1, self.failures() + 1))
        return [int(got[n]) for n in sorted(got)]


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)


def _clone(store: Any) -> Any:
    """A second handle on the store for the watchdog thread, with a short timeout: the main
    thread may sit in a blocking store call, and a handle is not shared across threads safely."""
    try:
        other = store.clone()
    except Exception:  # an older torch: share the handle
        other = store
    try:
        other.set_timeout(datetime.timedelta(seconds=STORE_TIMEOUT_S))
    except Exception:
        pass
    return other


class Watchdog:
    """Stage bookkeeping of the main thread, and the thread that ends a stuck or failed run."""

    def __init__(self, channel: Channel, local_rank: int, reporter: Reporter) -> None:
        self.main = channel
        self.side = Channel(_clone(channel.store), channel.rank, channel.world)
        self.local_rank = local_rank
        self.reporter = reporter  # rank 0: write the JSON document of a run that did not finish
        self.timeouts: Dict[str, float] = {}
        self.current = Progress(seq=-1, stage="start")
        self.deadline: Optional[float] = None
        self._seq = -1
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cudadoctor-nccl-watchdog", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=2.0)

    # ------------------------------------------------------------------ the main thread

    def enter(self, stage: str, timeout: float) -> None:
        """Start ``stage``: publish it and arm its deadline."""
        self._seq += 1
        self.timeouts[stage] = timeout
        self.current = Progress(seq=self._seq, stage=stage)
        self.deadline = time.monotonic() + timeout
        self.main.publish(self.current)

    def step(self, what: str, number: Optional[int] = None) -> None:
        """Publish a step inside the stage (before each collective outside a timed loop).
        ``number`` puts it at a fixed place, for steps that only some ranks take: a rank that
        skips ahead must not look as far along as one stuck before it."""
        c = self.current
        step = number if number is not None else c.step + 1
        self.current = Progress(seq=c.seq, stage=c.stage, step=step, what=what, state="running")
        self.main.publish(self.current)

    def leave(self) -> None:
        c = self.current
        self.current = Progress(seq=c.seq, stage=c.stage, step=c.step + 1, what=c.what, state="done")
        self.deadline = None
        self.main.publish(self.current)

    def fail(self, error: str, code: int) -> NoReturn:
        """This rank raised: publish it, say it, and stop the run (never returns)."""
        try:
            consequence = self._lock.locked() or self.side.alarm() > 0
            kind = self.side.stop_kind() if consequence else "failed"
        except Exception:
            consequence, kind = self._lock.locked(), "failed"
        if consequence:
            # The run is already ending for another rank's failure or a hang: this error
            # (typically "connection closed by peer") follows from it, it is not news.
            self.stop(kind, report.EXIT_FAILED if kind == "failed" else report.EXIT_HANG)
        c = self.current
        failed = Progress(seq=c.seq, stage=c.stage, step=c.step, what=c.what, state="failed", error=error)
        try:
            self.main.publish_failure(failed)
            info: Optional[RankInfo] = self.main.infos().get(self.main.rank)
        except Exception:  # the store is gone too: say what we know
            info = None
        _say([f"{report.PREFIX}: {report.describe(self.main.rank, info)} failed in '{c.stage}': {error}"])
        self.stop("failed", code)

    # ------------------------------------------------------------------ the thread

    def _loop(self) -> None:
        next_poll = 0.0
        while not self._stopped.wait(POLL_S):
            deadline = self.deadline
            if deadline is not None and time.monotonic() > deadline:
                self.stop("hang", report.EXIT_HANG)
            if time.monotonic() >= next_poll:
                next_poll = time.monotonic() + FAILURE_POLL_S
                try:
                    kind = self.side.stop_kind() if self.side.alarm() else None
                except Exception:  # the store is unreachable: the deadline still ends the run
                    kind = None
                if kind is not None:
                    self.stop(kind, report.EXIT_FAILED if kind == "failed" else report.EXIT_HANG)

    def stop(self, kind: str, code: int) -> NoReturn:
        """Name the ranks at fault (rank 0; another rank only when rank 0 stays silent), let
        rank 0 write the document, and end the process with ``code``."""
        if not self._lock.acquire(blocking=False):
            while True:  # the other thread is already ending the process
                time.sleep(60)
        try:
            try:
                self.side.raise_alarm()
            except Exception:
                pass
            if kind == "failed":
                time.sleep(GRACE_S)
            errors, infos = self._errors(kind)
            if self.main.rank == 0:
                _say(report.error_lines(errors))
                try:
                    self.reporter(errors, infos)
                finally:
                    self._ack()
            elif not self._acknowledged() and self.local_rank == 0:
                _say(report.error_lines(errors))
        except BaseException as exc:  # whatever happened, the process must end
            _say([f"{report.PREFIX}: rank {self.main.rank}: could not report the {kind} run: {exc!r}"])
        finally:
            _flush()
            os._exit(code)

    def _errors(self, kind: str) -> Tuple[List[RankError], Dict[int, RankInfo]]:
        try:
            progress = self.side.progress()
            infos = self.side.infos()
            order = self.side.failure_order()
        except Exception as exc:
            said = (f"rank {self.main.rank}: {kind} in '{self.current.stage}', and the store the ranks share "
                    f"did not answer ({type(exc).__name__}: {exc}); rank 0's host or its torchrun agent may be gone")
            return [RankError(self.main.rank, "late", self.current.stage, None, None, said)], {}
        errors = report.failed_errors(order, progress, infos)
        if kind == "hang":
            errors += report.late_errors(self.main.world, progress, infos, self.timeouts)
        return errors, infos

    def _ack(self) -> None:
        try:
            self.side.set("reported", "1")
        except Exception:
            pass

    def _acknowledged(self) -> bool:
        """Wait (bounded) for rank 0 to say it printed the list."""
        end = time.monotonic() + ACK_WAIT_S
        while time.monotonic() < end:
            try:
                if self.side.store.check(["reported"]):
                    return True
            except Exception:
                return False
            time.sleep(POLL_S)
        return False


def _say(lines: Sequence[str]) -> None:
    if lines:
        sys.stderr.write("\n".join(lines) + "\n")
        sys.stderr.flush()


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass

