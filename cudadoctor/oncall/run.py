"""``cudadoctor run -- COMMAND``: run a command unchanged and, when it fails with a known GPU
error, diagnose this machine for that error (docs/run.md).

This module is the fast path. ``cudadoctor.cli.main`` imports it before click, so it imports only
what a successful run needs: ``os``, ``sys``, ``_signal``, ``select``, ``time`` and ``_thread``
(plus ``fcntl``/``termios`` when a pseudo-terminal is used). No click, no dataclasses, no typing at
run time: each costs milliseconds of a 20 ms budget (2 % of a 1 s command, interpreter start-up
included). Everything heavy (signatures, probes, explain) is in :mod:`cudadoctor.oncall.run_diagnose`,
imported only after the command failed; the stderr copy (:class:`Pump`, :class:`Capture`) is in
:mod:`cudadoctor.oncall.run_stderr`.

How the command runs:

- stdin and stdout are inherited; stderr goes through a pipe (or a pseudo-terminal when our own
  stderr is a terminal, so that colours and progress bars look the same) which a thread copies to
  our stderr as the bytes arrive, keeping a bounded copy for the diagnosis (:class:`Capture`);
- the child is started with ``posix_spawnp`` in our process group: a Ctrl-C from the terminal
  reaches it directly, as without cudadoctor;
- the main thread blocks the signals it forwards and takes them with ``sigtimedwait``, whose
  ``si_code`` tells a signal sent by the terminal to the whole foreground group (already
  delivered to the child: not forwarded) from one sent to us alone with kill (forwarded);
- the exit status passes through; a child killed by signal N makes cudadoctor kill itself with
  the same signal, so the caller sees what it would have seen without cudadoctor.
"""

from __future__ import annotations

import _thread
import os
import sys
import time

from cudadoctor.oncall.run_stderr import KEYWORDS as KEYWORDS
from cudadoctor.oncall.run_stderr import TAIL_BYTES as TAIL_BYTES
from cudadoctor.oncall.run_stderr import Capture, Pump

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~3 ms to import; the annotations are strings anyway
    import signal
    from typing import Any, Dict, List, NoReturn, Optional, Sequence, Set, Tuple, Union
else:
    try:  # the C module under `signal`, loaded at start-up: `signal` adds 0.7 ms of enum classes
        import _signal as signal
    except ImportError:
        import signal

# Exit statuses of a shell for a command it could not start (POSIX "Command Search and Execution").
NOT_FOUND = 127
NOT_EXECUTABLE = 126
USAGE = 2

PUMP_WAIT_S = 30.0  # how long we wait for the copy to reach a slow stderr before exiting anyway
POLL_S = 1.0  # the child is also polled this often, in case a SIGCHLD went to another thread

SI_KERNEL = 0x80  # Linux <asm-generic/siginfo.h>: sent by the kernel, here by the terminal
FORWARDED = ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGWINCH", "SIGINT")
RESTORED = ("SIGPIPE", "SIGXFSZ")  # Python ignores these; the child gets them back at default


class Options:
    """The command line of ``cudadoctor run``: set once, by :func:`parse` or by the click
    command. (A plain class: ``dataclasses`` imports ``inspect``, 5 ms of the budget.)"""

    __slots__ = ("command", "no_check", "report", "timeout", "quiet", "verbose", "machine")

    def __init__(self, command: Sequence[str], no_check: bool = False, report: Optional[str] = None,
                 timeout: Optional[float] = None, quiet: bool = False, verbose: bool = False,
                 machine: Optional[str] = None) -> None:
        self.command = tuple(command)
        self.no_check = no_check
        self.report = report
        self.timeout = timeout  # None: the probes' default
        self.quiet = quiet
        self.verbose = verbose
        self.machine = machine


FLAGS = {"--no-check": "no_check", "-q": "quiet", "--quiet": "quiet", "-v": "verbose", "--verbose": "verbose"}
VALUED = {"--report": "report", "--timeout": "timeout", "--machine": "machine"}


def parse(args: Sequence[str]) -> Optional[Options]:
    """The options and command of ``cudadoctor run ARGS``, or None when click must answer:
    --help, an unknown option, a bad value, a missing command, options that conflict."""
    values: Dict[str, Union[str, bool]] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        name, eq, value = arg.partition("=")
        if name in FLAGS and not eq:
            values[FLAGS[name]] = True
            i += 1
        elif name in VALUED:
            if not eq:
                if i + 1 >= len(args):
                    return None
                value = args[i + 1]
            values[VALUED[name]] = value
            i += 1 if eq else 2
        else:
            return None
    command = list(args[i:])
    timeout = _timeout(values.get("timeout"))
    if not command or timeout is False or (values.get("no_check") and values.get("report") is not None):
        return None
    report, machine = values.get("report"), values.get("machine")
    return Options(command, no_check=bool(values.get("no_check")), report=report if isinstance(report, str) else None,
                   timeout=timeout if isinstance(timeout, float) else None, quiet=bool(values.get("quiet")),
                   verbose=bool(values.get("verbose")), machine=machine if isinstance(machine, str) else None)


def _timeout(value: Union[str, bool, None]) -> Union[float, bool, None]:
    """The --timeout value, None when absent, False when click should say what is wrong with it."""
    if not isinstance(value, str):
        return None
    try:
        seconds = float(value)
    except ValueError:
        return False
    return seconds if 0.1 <= seconds <= 600 else False


def main(options: Options) -> NoReturn:
    """Run the command, diagnose a failure, and exit as the command did (the console fast path)."""
    code = exit_code(execute(options))
    # os._exit skips the interpreter's shutdown (1-2 ms): everything of ours is flushed and closed.
    os._exit(code)


def execute(options: Options) -> int:
    """Run the command; on failure, print the diagnosis. Returns the command's wait status
    (``os.waitpid``'s encoding), or a shell's exit code when it could not start, encoded alike."""
    status, capture = run_command(options.command)
    if status is None:
        return capture.start_error_status
    if status != 0 and not _died_of(status, "SIGPIPE") and not (options.quiet and options.report is None):
        try:
            from cudadoctor.oncall.run_diagnose import diagnose

            diagnose(options, status, capture.text_bytes())
        except KeyboardInterrupt:
            _say("diagnosis interrupted")
        except Exception as exc:  # the diagnosis is extra: it never changes the exit status
            _say(f"could not diagnose the failure: {type(exc).__name__}: {exc}")
    return status


def exit_code(status: int) -> int:
    """The exit code that passes the command's wait status on. A command killed by a signal makes
    us die of the same signal here (so the caller sees what it would have seen without us); 128+N
    is returned only if that signal cannot kill us."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        _die_by(sig)
        return 128 + sig
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1


def _die_by(sig: int) -> None:
    """Kill this process with ``sig`` at its default action. The core a child may have dumped is
    its own; ours would be a Python interpreter's, so core dumps are switched off first."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass
    try:
        signal.signal(sig, signal.SIG_DFL)  # fails for SIGKILL, which needs no help
    except (ValueError, OSError):
        pass
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
        os.kill(os.getpid(), sig)
    except (ValueError, OSError):
        return
    time.sleep(0.1)  # delivery is immediate for ourselves; this only covers a signal we cannot die of


def _died_of(status: int, name: str) -> bool:
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == getattr(signal, name, -1)


def _say(message: str) -> None:
    sys.stderr.write(f"cudadoctor: {message}\n")
    sys.stderr.flush()


# ---------------------------------------------------------------------------- running


def run_command(command: Sequence[str]) -> Tuple[Optional[int], Capture]:
    """Run ``command`` with stderr copied through; return its wait status (None when it could not
    start: then ``capture.start_error_status`` holds 127 or 126, already explained on stderr)."""
    capture = Capture()
    if not hasattr(os, "posix_spawnp"):
        _say("error: cudadoctor run needs a POSIX system (Linux, macOS)")
        capture.start_error_status = USAGE << 8
        return None, capture
    forwarded = _forwardable()
    waited = set(forwarded) | {signal.SIGCHLD}
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, waited)
    try:
        read_fd, write_fd, is_pty = _stderr_channel()
        try:
            pid = _spawn(command, write_fd, old_mask)
        except OSError as exc:
            os.close(read_fd)
            capture.start_error_status = _start_error(command[0], exc) << 8
            return None, capture
        finally:
            os.close(write_fd)
        wake_r, wake_w = os.pipe()
        pump = Pump(read_fd, wake_r, capture)
        _thread.start_new_thread(pump.run, ())
        status = _supervise(pid, waited, read_fd if is_pty else None)
        os.write(wake_w, b"x")
        pump.done.acquire(True, PUMP_WAIT_S)
        os.close(wake_w)
        if not pump.running:
            os.close(wake_r)  # else the abandoned thread may still poll it
        _discard_pending(waited)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    return status, capture


def _spawn(command: Sequence[str], stderr_fd: int, mask: Any) -> int:
    """Start ``command`` with ``stderr_fd`` as its stderr and the signal mask ``mask``. A file the
    kernel will not execute (ENOEXEC: a script without a ``#!`` line) is run by /bin/sh, as every
    shell does (POSIX, "Command Search and Execution"); posix_spawnp does not."""
    import errno

    def spawn(argv: Sequence[str]) -> int:
        return os.posix_spawnp(argv[0], list(argv), os.environ,
                               file_actions=[(os.POSIX_SPAWN_DUP2, stderr_fd, 2)], setsigmask=mask,
                               setsigdef=[getattr(signal, n) for n in RESTORED if hasattr(signal, n)])

    try:
        return spawn(command)
    except OSError as exc:
        if exc.errno != errno.ENOEXEC:
            raise
        from cudadoctor.host import which

        path = command[0] if "/" in command[0] else which(command[0], os.environ.get("PATH", os.defpath))
        if path is None or not os.path.isfile("/bin/sh"):
            raise
        try:
            return spawn(["/bin/sh", path, *command[1:]])
        except OSError:
            raise exc from None


def _forwardable() -> List[int]:
    """The signals we forward, less those ignored when we started (nohup, a background job):
    the child inherits the ignoring and must not get them from us either."""
    found = []
    for name in FORWARDED:
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) != signal.SIG_IGN:
            found.append(sig)
    return found


def _start_error(program: str, exc: OSError) -> int:
    """Say why the command did not start, the way a shell words it; return the shell's code."""
    import errno

    if exc.errno == errno.ENOENT:
        _say(f"error: {program}: " + ("no such file or directory" if "/" in program else "command not found"))
        return NOT_FOUND
    reason = "is a directory" if os.path.isdir(program) else (exc.strerror or str(exc)).lower()
    _say(f"error: {program}: cannot execute: {reason}")
    return NOT_EXECUTABLE


def _stderr_channel() -> Tuple[int, int, bool]:
    """(read end, write end, is a pseudo-terminal) for the child's stderr: a pty when our stderr is
    a terminal, so that the child's isatty(2) is what it would be without us."""
    if os.isatty(2):
        try:
            import termios

            master, slave = os.openpty()
        except (ImportError, OSError):
            pass
        else:
            try:
                attrs = termios.tcgetattr(slave)
                attrs[1] &= ~termios.OPOST  # bytes unchanged: no "\n" -> "\r\n"; our terminal does that
                termios.tcsetattr(slave, termios.TCSANOW, attrs)
                _copy_winsize(2, slave)
            except (OSError, termios.error):
                pass
            return master, slave, True
    read_fd, write_fd = os.pipe()
    return read_fd, write_fd, False


def _copy_winsize(source: int, target: int) -> None:
    """Give the pty our terminal's size (tqdm and friends size their bars from it)."""
    try:
        import fcntl
        import termios

        size = fcntl.ioctl(source, termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(target, termios.TIOCSWINSZ, size)
    except (ImportError, OSError):
        pass


def _supervise(pid: int, waited: Set[int], pty_fd: Optional[int]) -> int:
    """Forward signals to the child until it exits; return its wait status."""
    timed = hasattr(signal, "sigtimedwait")
    while True:
        if timed:
            info = signal.sigtimedwait(waited, POLL_S)
            sig, code = (info.si_signo, info.si_code) if info is not None else (None, None)
        else:  # macOS has no sigtimedwait: no timeout, no si_code
            sig, code = signal.sigwait(waited), None
        if sig is None or sig == signal.SIGCHLD:
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): the status is lost
                return 1 << 8
            if done:
                return status
            continue
        if sig == getattr(signal, "SIGWINCH", None):
            if pty_fd is not None:
                _copy_winsize(2, pty_fd)
        elif _from_terminal(sig, code):
            continue  # the terminal signalled its whole foreground group: the child has it already
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _from_terminal(sig: int, code: Optional[int]) -> bool:
    """Whether ``sig`` was sent by the terminal to the foreground process group (which holds the
    child too) rather than to cudadoctor alone by kill(2)."""
    if code is not None and sys.platform.startswith("linux"):
        return code == SI_KERNEL
    if sig not in (signal.SIGINT, signal.SIGQUIT):
        return False
    try:  # elsewhere: guess from whether we are in the terminal's foreground group
        return os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return False


def _discard_pending(waited: Set[int]) -> None:
    """Consume signals that came with the child's end (Ctrl-C reaches both of us): unblocked they
    would kill or interrupt us after the fact."""
    for sig in set(signal.sigpending()) & waited:
        signal.sigwait({sig})  # pending: returns at once
