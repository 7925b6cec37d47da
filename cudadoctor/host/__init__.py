"""The system seam: the only code that touches the machine.

Probes receive a :class:`Host` and ask it for files, directories, commands, the environment,
platform facts and NVML. :class:`RealHost` asks the running machine; the recorded host in
:mod:`cudadoctor.host.recorded` replays a machine saved under ``tests/machines/<name>/``.

Rules every implementation keeps:

- Commands never raise: a missing binary, a non-zero exit, a timeout or undecodable output all
  come back as a :class:`CommandResult`.
- File access raises ``OSError`` (``FileNotFoundError``, ``PermissionError``, ...), which is the
  ordinary Python contract and what probes catch.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import signal
import subprocess
import sys
import time
from dataclasses import field
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple
from cudadoctor.host.interpreter_script import INTERPRETER_SCRIPT as INTERPRETER_SCRIPT
from cudadoctor.record import frozen

if TYPE_CHECKING:
    from cudadoctor.host.nvml import Nvml

DEFAULT_TIMEOUT_S = 5.0
MAX_READ_BYTES = 4 * 1024 * 1024  # no file we read legitimately is larger
# What is kept of a command's stdout and of its stderr. The rest is read and dropped (the command
# must not block on a full pipe): an interpreter given as --python that runs `yes` filled 2.3 GB in
# 3.5 s (issue 16). nvidia-smi -q on a node of 8 GPUs prints about 100 KB.
MAX_OUTPUT_BYTES = 4 * 1024 * 1024


@frozen
class CommandResult:
    """What running a command gave. ``error`` is set when it did not run to completion."""

    argv: Tuple[str, ...]
    returncode: Optional[int] = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    error: Optional[str] = None  # not_found | timeout | permission | error
    truncated: bool = False  # stdout or stderr went past MAX_OUTPUT_BYTES: only the start is kept

    @property
    def ok(self) -> bool:
        return self.error is None and self.returncode == 0

    def describe(self) -> str:
        """A one-line account of a failure, for a ProbeError."""
        cmd = " ".join("<script>" if "\n" in a else a if len(a) <= 60 else a[:40] + "…" for a in self.argv)
        if self.error == "not_found":
            return f"{self.argv[0]} not found"
        if self.error == "timeout":
            return f"{cmd} timed out after {self.duration_s:.0f} s"
        if self.error == "permission":
            return f"{self.argv[0]}: permission denied"
        if self.error:
            return f"{cmd}: {self.stderr.strip() or self.error}"
        if self.returncode is not None and self.returncode < 0:
            try:
                name = signal.Signals(-self.returncode).name
            except ValueError:
                name = f"signal {-self.returncode}"
            return f"{cmd} was killed by {name}"
        return f"{cmd} exited with {self.returncode}: {telling_line(self.stderr + chr(10) + self.stdout)}"


_TELLING = ("error", "fail", "unable", "cannot", "could not", "not found", "mismatch", "denied")


def telling_line(output: str) -> str:
    """The line of a failed command's output that says why: the first that sounds like an
    error ('Failed to initialize NVML: Driver/library version mismatch'), else the last."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines:
        return "no output"
    for line in lines:
        if any(word in line.lower() for word in _TELLING):
            return line[:200]
    return lines[-1][:200]


@frozen
class PlatformFacts:
    system: str = ""  # platform.system(): Linux, Windows, Darwin
    release: str = ""  # kernel release
    machine: str = ""  # x86_64, aarch64, AMD64, arm64
    hostname: str = ""
    username: str = ""
    cpu_count: Optional[int] = None
    libc: str = ""  # "glibc 2.36"
    extra: Dict[str, str] = field(default_factory=dict)


@frozen
class InterpreterFacts:
    """What a stdlib-only script learns inside the target interpreter."""

    executable: str
    version: str
    implementation: str
    prefix: str
    base_prefix: str
    platform_tag: str
    site_packages: Tuple[str, ...]
    conda_prefix_env: Optional[str] = None  # CONDA_PREFIX as that interpreter sees it
    is_current: bool = False


class Host(Protocol):
    """Everything a probe may ask of a machine."""

    def read_bytes(self, path: str, limit: int = MAX_READ_BYTES) -> bytes: ...

    def list_dir(self, path: str) -> List[str]: ...

    def is_dir(self, path: str) -> bool: ...

    def is_file(self, path: str) -> bool: ...

    def exists(self, path: str) -> bool: ...

    def realpath(self, path: str) -> str: ...

    def which(self, name: str) -> Optional[str]: ...

    def run(self, argv: Sequence[str], timeout: float = DEFAULT_TIMEOUT_S) -> CommandResult: ...

    def environ(self) -> Mapping[str, str]: ...

    def platform(self) -> PlatformFacts: ...

    def interpreter(self, executable: Optional[str], timeout: float) -> InterpreterFacts: ...

    def nvml(self) -> "Nvml": ...


# --------------------------------------------------------------------------- helpers


def read_text(host: Host, path: str, limit: int = MAX_READ_BYTES) -> str:
    """Read a file as text, replacing undecodable bytes."""
    return host.read_bytes(path, limit).decode("utf-8", errors="replace")


def try_read_text(host: Host, path: str, limit: int = MAX_READ_BYTES) -> Optional[str]:
    """Read a file as text, or ``None`` if it cannot be read for any reason."""
    try:
        return read_text(host, path, limit)
    except (OSError, ValueError):
        return None


def try_list_dir(host: Host, path: str) -> List[str]:
    try:
        return sorted(host.list_dir(path))
    except (OSError, ValueError):
        return []


def glob_dir(host: Host, directory: str, pattern: str) -> List[str]:
    """Entries of ``directory`` matching a shell pattern, as full paths, sorted."""
    return [
        posixpath.join(directory, name)
        for name in try_list_dir(host, directory)
        if fnmatch.fnmatchcase(name, pattern)
    ]


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


# --------------------------------------------------------------------------- real


def _uname() -> Tuple[str, str, str, str, str]:
    """(system, release, machine, libc name, libc version) as the ``platform`` module gives them,
    from os.uname() and os.confstr() where they exist: importing ``platform`` alone cost `check`
    about 8 ms."""
    try:
        u = os.uname()
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
        name, _, version = libc.partition(" ")
        if not version:
            raise ValueError(libc)
        return u.sysname, u.release, u.machine, name, version
    except (AttributeError, ValueError, OSError):  # Windows, macOS, musl: ask platform
        import platform

        libc_name, libc_version = platform.libc_ver()
        return platform.system(), platform.release(), platform.machine(), libc_name, libc_version


def interpreter_facts_from_json(data: Mapping[str, Any], is_current: bool) -> InterpreterFacts:
    return InterpreterFacts(
        executable=str(data["executable"]),
        version=str(data["version"]),
        implementation=str(data["implementation"]),
        prefix=str(data["prefix"]),
        base_prefix=str(data["base_prefix"]),
        platform_tag=str(data["platform_tag"]),
        site_packages=tuple(str(p) for p in data["site_packages"]),
        conda_prefix_env=data.get("conda_prefix_env"),
        is_current=is_current,
    )


class RealHost:
    """The running machine."""

    def __init__(self) -> None:
        self._nvml: Optional[Nvml] = None

    def read_bytes(self, path: str, limit: int = MAX_READ_BYTES) -> bytes:
        # Read in small chunks: some /proc files refuse one large read with ENOMEM.
        chunks: List[bytes] = []
        left = limit
        with open(path, "rb", buffering=0) as fh:
            while left > 0:
                chunk = fh.read(min(left, 64 * 1024))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
        return b"".join(chunks)

    def list_dir(self, path: str) -> List[str]:
        return os.listdir(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def is_file(self, path: str) -> bool:
        return os.path.isfile(path)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)

    def which(self, name: str) -> Optional[str]:
        return which(name, os.environ.get("PATH", ""))

    def run(self, argv: Sequence[str], timeout: float = DEFAULT_TIMEOUT_S) -> CommandResult:
        return run_command(argv, timeout)

    def environ(self) -> Mapping[str, str]:
        return dict(os.environ)

    def platform(self) -> PlatformFacts:
        user = _user_name()
        system, release, machine, libc_name, libc_version = _uname()
        return PlatformFacts(
            system=system,
            release=release,
            machine=machine,
            hostname=_host_name(),
            username=user,
            cpu_count=os.cpu_count(),
            libc=f"{libc_name} {libc_version}".strip(),
        )

    def interpreter(self, executable: Optional[str], timeout: float) -> InterpreterFacts:
        """Facts of the target interpreter: in-process when it is this one, else a child."""
        import json

        if executable is None or _same_file(executable, sys.executable):
            scope: Dict[str, Any] = {}

            def capture(text: str) -> None:
                scope["out"] = text

            exec(INTERPRETER_SCRIPT, {"print": capture, "__name__": "__probe__"})  # noqa: S102
            return interpreter_facts_from_json(json.loads(scope["out"]), is_current=True)
        # -I: a json.py in the current directory or PYTHONPATH must not answer for the stdlib.
        result = self.run([executable, "-I", "-c", INTERPRETER_SCRIPT], timeout)
        if result.truncated:
            # The facts are one line of a few KB: megabytes of output are not a Python answering.
            raise InterpreterError(f"{executable} printed more than {MAX_OUTPUT_BYTES // (1024 * 1024)} MiB, "
                                   "not the facts of a Python interpreter", kind="bad_output")
        if not result.ok:
            raise InterpreterError(result.describe(), kind=result.error or "error")
        try:
            return interpreter_facts_from_json(json.loads(result.stdout), is_current=False)
        except (ValueError, KeyError, TypeError, RecursionError) as exc:  # '[[[[...' recurses
            raise InterpreterError(f"{executable} printed no usable facts ({exc})", kind="bad_output") from None

    def nvml(self) -> Nvml:
        if self._nvml is None:
            from cudadoctor.host.nvml import RealNvml

            self._nvml = RealNvml()
        return self._nvml


class InterpreterError(RuntimeError):
    """The target interpreter could not be asked for its facts. ``kind`` says why, in
    CommandResult's words (not_found | timeout | permission | error) or bad_output."""

    def __init__(self, message: str, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind


def _same_file(a: str, b: str) -> bool:
    """Both name the same interpreter in the same folder (python, python3 and python3.11 of
    one venv): its prefix, found from that folder, is then the same as well."""
    try:
        same_dir = os.path.realpath(os.path.dirname(os.path.abspath(a))) == os.path.realpath(
            os.path.dirname(os.path.abspath(b))
        )
        return same_dir and os.path.samefile(a, b)
    except OSError:
        return False


def which(name: str, path: str) -> Optional[str]:
    """shutil.which without importing shutil (which pulls in zlib, bz2 and lzma: a tenth of the
    time `cudadoctor check` may take)."""
    if os.sep in name or (os.altsep and os.altsep in name):
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    suffixes = [""]
    if sys.platform == "win32":
        suffixes = [""] + os.environ.get("PATHEXT", ".COM;.EXE;.BAT;.CMD").lower().split(";")
    for directory in path.split(os.pathsep):
        for suffix in suffixes:
            candidate = os.path.join(directory or os.curdir, name + suffix)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    return None


def _nowhere(name: str) -> bool:
    """A bare command name that no directory of PATH holds (not even as a file that cannot be
    run, which Popen would report as a permission error)."""
    if not name or os.sep in name or (os.altsep and os.altsep in name) or sys.platform == "win32":
        return False
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        if os.path.lexists(os.path.join(directory or os.curdir, name)):
            return False
    return True


def run_command(argv: Sequence[str], timeout: float) -> CommandResult:
    """Run ``argv`` with a timeout; never raise. The child gets its own process group so a
    timeout kills everything it started (nvidia-smi can spawn helpers that hang)."""
    argv = tuple(argv)
    start = time.monotonic()
    if argv and _nowhere(argv[0]):  # what Popen would find after forking: nvidia-smi on a machine without it
        return CommandResult(argv, error="not_found", duration_s=time.monotonic() - start)
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env={**os.environ, "LC_ALL": "C"},
        )
    except FileNotFoundError:
        return CommandResult(argv, error="not_found", duration_s=time.monotonic() - start)
    except PermissionError:
        return CommandResult(argv, error="permission", duration_s=time.monotonic() - start)
    except OSError as exc:
        return CommandResult(argv, error="error", stderr=str(exc), duration_s=time.monotonic() - start)
    drains = [_Drain(proc.stdout), _Drain(proc.stderr)]
    deadline = start + timeout
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        try:
            proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass
    for drain in drains:
        # A helper the command left running may hold its pipes open: wait for the output until the
        # deadline (a second more after a timeout), then take what came.
        drain.thread.join(max(0.0, deadline - time.monotonic()) + (1.0 if timed_out else 0.0))
    if any(d.thread.is_alive() for d in drains) and not timed_out:
        _kill_group(proc)
        for drain in drains:
            drain.thread.join(1.0)
    out, err = (b"".join(d.chunks) for d in drains)
    truncated = any(d.truncated for d in drains)
    if timed_out:
        return CommandResult(argv, stdout=decode(out), stderr=decode(err), duration_s=timeout, error="timeout",
                             truncated=truncated)
    return CommandResult(
        argv,
        returncode=proc.returncode,
        stdout=decode(out),
        stderr=decode(err),
        duration_s=time.monotonic() - start,
        truncated=truncated,
    )


class _Drain:
    """Reads a pipe to its end on a thread, keeping the first :data:`MAX_OUTPUT_BYTES`."""

    def __init__(self, pipe: Optional[Any]) -> None:
        import threading

        self.pipe = pipe
        self.chunks: List[bytes] = []
        self.kept = 0
        self.truncated = False
        self.thread = threading.Thread(target=self._run, name="cudadoctor-pipe", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        if self.pipe is None:
            return
        fd = self.pipe.fileno()
        try:
            while True:
                chunk = os.read(fd, 64 * 1024)
                if not chunk:
                    break
                room = MAX_OUTPUT_BYTES - self.kept
                if len(chunk) > room:
                    self.truncated = True
                    chunk = chunk[:room]
                if chunk:
                    self.chunks.append(chunk)
                    self.kept += len(chunk)
        except OSError:
            pass
        finally:
            try:
                self.pipe.close()
            except OSError:
                pass


def _kill_group(proc: "subprocess.Popen[bytes]") -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, AttributeError):
        proc.kill()


def _user_name() -> str:
    """What getpass.getuser() answers (LOGNAME, USER, LNAME, USERNAME, then the passwd entry),
    without importing getpass; "" for an arbitrary container uid with neither."""
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        if os.environ.get(name):
            return os.environ[name]
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, AttributeError):
        return ""


def _host_name() -> str:
    """socket.gethostname() without importing socket where os.uname() answers the same."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()
