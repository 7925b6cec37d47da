"""The processes of the GPU proof kit's steps: each command in a session of its own, stdin
closed, output to files, bounded by a time limit; a command that overruns is ended with every
descendant (the smoke suites run in sessions of their own), and what a finished step left running
is ended too. Linux reads the process tree from /proc; elsewhere only the process group is ended.

Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

KILL_GRACE_S = 2.0


@dataclass
class Command:
    """One child process of a step: what ran and how it ended."""

    label: str
    argv: List[str]
    returncode: Optional[int] = None
    seconds: float = 0.0
    timed_out: bool = False
    stdout_file: str = ""
    stderr_file: str = ""
    error: Optional[str] = None  # it could not be started



def become_subreaper() -> bool:
    """Linux: orphans of our children (a smoke suite whose parent was killed) become our
    children, so :func:`reap_strays` can still find and end them. True when that holds."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(36, 1, 0, 0, 0)) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def _parents() -> Dict[int, int]:
    """{pid: parent pid} of every process /proc lists (empty where there is no /proc)."""
    out: Dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as fh:
                stat = fh.read()
            # the command name is in parentheses and may itself hold spaces or ')'
            out[int(name)] = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return out


def descendants(pid: int) -> List[int]:
    parents = _parents()
    children: Dict[int, List[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _signal_all(pids: Sequence[int], sig: int) -> None:
    own_group = os.getpgrp()
    for pid in pids:
        try:
            group = os.getpgid(pid)
            if group != own_group:
                os.killpg(group, sig)
        except OSError:
            pass
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def kill_tree(proc: "subprocess.Popen[bytes]") -> None:
    """End ``proc``, its process group and every descendant (smoke suites run in sessions of
    their own): SIGTERM, a short grace, then SIGKILL. The tree is listed before anything is
    signalled, since a killed parent's children are re-parented and lost from view."""
    pids = [proc.pid] + descendants(proc.pid)
    _signal_all(pids, signal.SIGTERM)
    try:
        proc.wait(KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    _signal_all(pids + descendants(proc.pid), signal.SIGKILL)
    try:
        proc.wait(KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass


def reap_strays(before: Sequence[int]) -> List[int]:
    """End and reap what a finished step left running under us (as subreaper we inherit it);
    processes that were there before the step (``before``) are not the step's."""
    strays = [pid for pid in descendants(os.getpid()) if pid not in before]
    if strays:
        _signal_all(strays, signal.SIGKILL)
    for pid in strays:
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass
    return strays


def run_child(cmd: Command, folder: str, timeout: float, env: Dict[str, str], cwd: str) -> None:
    run_children([cmd], folder, timeout, [env], cwd)


def run_children(cmds: Sequence[Command], folder: str, timeout: float, envs: Sequence[Dict[str, str]], cwd: str) -> None:
    """Start every command, wait for all of them until ``timeout``, kill what still runs then
    (or when an exception, such as a signal, arrives while waiting)."""
    start = time.monotonic()
    procs: List[Optional["subprocess.Popen[bytes]"]] = []
    try:
        for cmd, env in zip(cmds, envs):
            procs.append(_start(cmd, folder, env, cwd))
        for cmd, proc in zip(cmds, procs):
            if proc is None:
                continue
            try:
                cmd.returncode = proc.wait(max(start + timeout - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                cmd.timed_out = True
                kill_tree(proc)
                cmd.returncode = proc.poll()
            cmd.seconds = round(time.monotonic() - start, 2)
    finally:
        for cmd, proc in zip(cmds, procs):
            if proc is not None and proc.poll() is None:  # an exception (a signal) arrived while waiting
                kill_tree(proc)
                cmd.returncode = proc.poll()
                cmd.seconds = round(time.monotonic() - start, 2)


def _start(cmd: Command, folder: str, env: Dict[str, str], cwd: str) -> Optional["subprocess.Popen[bytes]"]:
    with open(os.path.join(folder, cmd.stdout_file), "wb") as out, open(os.path.join(folder, cmd.stderr_file), "wb") as err:
        try:
            # the child holds its own copies of the descriptors, so closing ours at once is fine
            return subprocess.Popen(cmd.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, cwd=cwd,
                                    start_new_session=True)
        except OSError as exc:
            cmd.error = f"cannot start {cmd.argv[0]}: {exc.strerror or exc}"
            err.write(cmd.error.encode() + b"\n")
            return None
