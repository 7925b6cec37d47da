"""``cudadoctor run``'s stderr: the thread that copies the command's stderr to ours as it arrives
(:class:`Pump`), and the bounded copy the diagnosis reads (:class:`Capture`). Part of run's fast
path: it imports only what :mod:`cudadoctor.oncall.run` does."""

from __future__ import annotations

import _thread
import os
import select
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List, Set

TAIL_BYTES = 2 * 1024 * 1024  # the end of stderr kept whole: a traceback ends there
KEPT_BYTES = 256 * 1024  # earlier lines that mention the GPU stack: the first CUDA error may be long gone
CHUNK = 64 * 1024  # a pipe's capacity on Linux: one read empties it
DRAIN_S = 2.0  # after the command exits, how long output still pending (a grandchild's) is copied

# Cheap prefilter for the lines kept from before the tail (lower case). Not a list of facts: the
# line of every error signature's example must contain one of these (tests/test_run.py guards it).
KEYWORDS = (b"cuda", b"cudnn", b"cublas", b"cupy", b"nccl", b"nvidia", b"nvml", b"nvrtc", b"nvcc", b"gpu",
            b"device", b"driver", b"libcu", b"ptx", b"xid", b"sm_", b"kernel", b"jax", b"torch", b"macos", b"darwin",
            b"host compiler", b"undefined symbol", b"winerror", b"mma", b"cufft", b"curand", b"cusolver", b"cusparse",
            b"nvjitlink", b"illegal instruction", b"reduction in the prior", b"visual c++", b"bfcarena", b"bus error",
            b"dtype", b"ancdata", b"invalid __", b"no wheels with", b"open files", b"out of resource", b".dll", b"dll load", b"outofmemory", b"out of memory")
SCANNED_BYTES = 8 * 1024 * 1024  # of the output before the tail, searched for KEYWORDS: ~10 ms a MiB


class Pump:
    """Copies the child's stderr to ours as it arrives, and into a :class:`Capture`. Runs in its own
    thread; ``wake`` becomes readable when the child has exited."""

    def __init__(self, fd: int, wake: int, capture: Capture) -> None:
        self.fd = fd
        self.wake = wake
        self.capture = capture
        self.done = _thread.allocate_lock()
        self.done.acquire()
        self.writable = True
        self.running = True

    def run(self) -> None:
        try:
            self._copy()
        except BaseException:  # nothing may escape a thread; what was copied stays copied
            pass
        finally:
            os.close(self.fd)  # a grandchild still writing gets EPIPE/EIO, as if stderr was closed
            self.running = False
            self.done.release()

    def _copy(self) -> None:
        waiting = [self.fd, self.wake]
        while True:
            ready = _readable(waiting)
            if self.wake in ready:
                break
            if not self._read_once():
                return
        # The child has exited. Copy what is left in the pipe without waiting for an end of file
        # that never comes while a grandchild holds stderr open.
        os.set_blocking(self.fd, False)
        deadline = time.monotonic() + DRAIN_S
        while time.monotonic() < deadline:
            try:
                if not self._read_once():
                    return
            except BlockingIOError:
                return

    def _read_once(self) -> bool:
        """One read and its copies; False at the end of the stream."""
        try:
            data = os.read(self.fd, CHUNK)
        except OSError as exc:
            if isinstance(exc, BlockingIOError):
                raise
            return False  # EIO: every holder of the pty's slave has closed it
        if not data:
            return False
        self.capture.add(data)
        if self.writable:
            self._write(data)
        return True

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(2, view):]
            except BlockingIOError:  # someone made our stderr non-blocking (it is shared)
                select.select([], [2], [], 1.0)
            except BrokenPipeError:
                # Our reader is gone (`... 2>&1 | head`): stop reading, so the child's next write
                # gets EPIPE/SIGPIPE as it would have without us.
                self.writable = False
                raise
            except OSError:
                self.writable = False  # a closed or broken stderr: keep capturing, drop the copy
                return


def _readable(fds: List[int]) -> List[int]:
    if hasattr(select, "poll") and sys.platform != "darwin":  # poll: no FD_SETSIZE limit
        poller = select.poll()
        for fd in fds:
            poller.register(fd, select.POLLIN)
        return [fd for fd, _ in poller.poll()]
    return select.select(fds, [], [])[0]


class Capture:
    """What the diagnosis reads of stderr, bounded: the last :data:`TAIL_BYTES` whole, and from
    the first :data:`SCANNED_BYTES` before it, the first :data:`KEPT_BYTES` of lines naming a part
    of the GPU stack."""

    def __init__(self) -> None:
        self.chunks: List[bytes] = []
        self.size = 0
        self.kept: List[bytes] = []
        self.kept_size = 0
        self.scanned = 0
        self.start_error_status = 0

    def add(self, data: bytes) -> None:
        self.chunks.append(data)
        self.size += len(data)
        if self.size > 2 * TAIL_BYTES:  # evict in large steps: each byte is copied about twice
            blob = b"".join(self.chunks)
            cut = blob.rfind(b"\n", 0, len(blob) - TAIL_BYTES) + 1 or len(blob) - TAIL_BYTES
            self._keep(blob[:cut])
            self.chunks = [blob[cut:]]
            self.size = len(self.chunks[0])

    def _keep(self, old: bytes) -> None:
        if self.kept_size >= KEPT_BYTES or self.scanned >= SCANNED_BYTES:
            return  # beyond this, a command writing gigabytes to stderr would be slowed down
        self.scanned += len(old)
        lower = old.lower()
        starts: Set[int] = set()
        for word in KEYWORDS:
            at = lower.find(word)
            while at >= 0 and len(starts) < 4096:
                start = lower.rfind(b"\n", 0, at) + 1
                starts.add(start)
                end = lower.find(b"\n", at)
                at = lower.find(word, end) if end >= 0 else -1
        for start in sorted(starts):
            end = old.find(b"\n", start)
            line = old[start:] if end < 0 else old[start:end + 1]
            self.kept.append(line)
            self.kept_size += len(line)
            if self.kept_size >= KEPT_BYTES:
                return

    def text_bytes(self) -> bytes:
        """The kept lines, then the tail."""
        return b"".join(self.kept + self.chunks)
