"""Writing a file so that a reader never sees half of it, without replacing what is not a file."""

from __future__ import annotations

import errno
import os
import stat
from typing import Optional


def write_atomically(path: str, text: str, shared: bool = False) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder, flushed to disk and
    renamed over ``path``: a reader (a fleet summary, the next run) sees the old file or the whole
    new one. The folder is created. ``shared``: readable by others, as a new file would be (0666
    less the umask); else private to its owner. OSError propagates; no temporary file stays behind.

    Only a regular file or a new path is replaced. A symbolic link is followed, and the file it
    points to is written (the link stays a link); anything else at ``path`` (a device such as
    /dev/null, a named pipe, a folder) raises OSError: renaming over it would put a regular file
    where the device was, and as root that replaces the system's /dev/null (issue 16)."""
    import tempfile

    path = _regular_target(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".cudadoctor-", suffix=".tmp", dir=folder)
    try:
        with open(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if shared:
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_output(path: str, text: str, shared: bool = False) -> None:
    """Write ``text`` where the user pointed ``-o``: atomically (:func:`write_atomically`) to a
    regular file or a new path; straight into a stream that is not a file, as a shell's ``>``
    does: ``/dev/stdout``, ``/dev/stderr``, ``/dev/null``, a terminal, a named pipe someone reads.
    A named pipe nobody reads raises OSError at once instead of blocking; a folder, a socket or a
    block device raise OSError too. Nothing at ``path`` is ever replaced but a regular file."""
    mode: Optional[int]
    try:
        mode = os.stat(path).st_mode  # follows links: /dev/stdout -> /proc/self/fd/1 -> a pipe
    except FileNotFoundError:
        mode = None
    # /dev/stdout is a link to whatever descriptor 1 is; when that is a file (`-o /dev/stdout > out.md`,
    # or `>> out.md`), renaming over it would cut the shell's file loose: write into it instead.
    system = os.path.abspath(path).startswith(("/dev/", "/proc/"))
    if not system and (mode is None or stat.S_ISREG(mode)):
        write_atomically(path, text, shared)
        return
    if mode is None or not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        raise _refused(path, mode)
    flags = os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    if stat.S_ISREG(mode):
        flags |= os.O_APPEND  # the file the shell opened: after what is already in it, as it would write
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a named pipe with no reader: opening it would block for ever
            raise OSError(errno.ENXIO, "a named pipe that no process is reading") from None
        raise
    try:
        os.set_blocking(fd, True)  # non-blocking was for the open; the reader sets the pace
        with open(fd, "w", encoding="utf-8", newline="\n", closefd=False) as fh:
            fh.write(text)
    finally:
        os.close(fd)


def _regular_target(path: str) -> str:
    """The path to replace for ``path``: itself when it is missing or a regular file, the file a
    symbolic link points to (followed to the end); OSError when that is not a regular file."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    if stat.S_ISLNK(mode):
        target = os.path.realpath(path)
        try:
            mode = os.stat(target).st_mode
        except FileNotFoundError:
            return target  # a link to a file yet to be written: write that file
        if stat.S_ISREG(mode):
            return target
    if not stat.S_ISREG(mode):
        raise _refused(path, mode)
    return path


def _refused(path: str, mode: Optional[int]) -> OSError:
    if mode is None:
        return OSError(errno.ENOENT, "no such file: nothing is created under /dev or /proc", path)
    what = ("a folder" if stat.S_ISDIR(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a named pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
    return OSError(errno.EEXIST, f"{what} is there, not a regular file: not replaced", path)
