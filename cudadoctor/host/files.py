"""Writing a file so that a reader never sees half of it."""

from __future__ import annotations

import os


def write_atomically(path: str, text: str, shared: bool = False) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder, flushed to disk and
    renamed over ``path``: a reader (a fleet summary, the next run) sees the old file or the whole
    new one. The folder is created. ``shared``: readable by others, as a new file would be (0666
    less the umask); else private to its owner. OSError propagates; no temporary file stays behind."""
    import tempfile

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
