"""Finding the report files and reading them into compact records, in parallel when there are many.

Memory stays bounded: each file is parsed, reduced to its :class:`~cudadoctor.fleet.record.NodeRecord`
and dropped. JSON parsing is most of the cost (10,000 reports of 15 KB are 150 MB of JSON), so
above :data:`PARALLEL_MIN` files the work is shared by forked worker processes over chunks of
paths; below it, starting them would cost more than it saves.
"""

from __future__ import annotations

import os
import stat
import sys
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from cudadoctor.errors import CudadoctorError
from cudadoctor.fleet.record import NodeRecord, Result, Unreadable, extract
from cudadoctor.model.reader import ReadError, decode, parse, read_document

SUFFIXES = (".json", ".md")
PARALLEL_MIN = 2000  # files: below this, one process is faster than starting workers
CHUNK = 100  # files per task handed to a worker
MAX_JOBS = 8
TIMEOUT_S = 120.0  # a chunk of files taking longer is a stuck file system, not a slow parse


def discover(inputs: Sequence[str]) -> List[str]:
    """The report files named: a directory stands for its ``*.json`` and ``*.md`` files (not its
    sub-directories). Raises a usage error for a path that does not exist or when none is found."""
    found: List[str] = []
    for given in inputs:
        try:
            mode = os.stat(given).st_mode
        except OSError as exc:
            raise CudadoctorError(f"{given}: {exc.strerror or exc}",
                                  hint="give report files or directories holding them") from None
        if stat.S_ISDIR(mode):
            found.extend(_reports_in(given))
        else:
            found.append(given)
    unique = list(dict.fromkeys(found))
    if not unique:
        raise CudadoctorError(f"no reports in {', '.join(inputs)} (no *.json or *.md files)",
                              hint="each node writes one: cudadoctor report --format json -o DIR/$(hostname).json")
    return unique


def _reports_in(directory: str) -> List[str]:
    try:
        with os.scandir(directory) as entries:
            # Only regular files: a named pipe with a .json name would block open() for ever. An entry
            # that cannot be followed (a symbolic link that loops) is kept: reading it makes it one
            # unreadable report, and the others are summarised.
            names = [e.path for e in entries if e.name.endswith(SUFFIXES) and _file_or_broken(e)]
    except OSError as exc:
        raise CudadoctorError(f"{directory}: {exc.strerror or exc}") from None
    return sorted(names)


def _file_or_broken(entry: "os.DirEntry[str]") -> bool:
    try:
        return entry.is_file()
    except OSError:
        return True


def stem(path: str) -> str:
    """The node name a file stands for when its report does not say: its name less the suffix."""
    base = os.path.basename(path)
    for suffix in SUFFIXES:
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def read_one(path: str) -> Result:
    """Read, parse and extract one report file; every failure is an :class:`Unreadable`."""
    data, reason = parse_file(path)
    if reason is not None:
        return Unreadable(stem(path), path, "unreadable", reason)
    return extract(data, path, stem(path))


def parse_file(path: str) -> Tuple[Any, Optional[str]]:
    """(the parsed JSON of a report file, None), or (None, why it cannot be parsed). A Markdown
    report stands for the JSON block it ends with."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None, "not a regular file"
        raw = read_document(path)  # capped: a report is never near 64 MiB
    except OSError as exc:
        return None, f"cannot read it: {exc.strerror or exc}"
    except ReadError as exc:
        return None, exc.describe() if exc.kind != "os" else f"cannot read it: {exc.detail}"
    if not raw.strip():
        return None, "empty file"
    try:
        return parse(decode(raw)), None
    except ReadError as exc:
        if exc.kind == "json":
            return None, f"not JSON ({exc.detail})"
        return None, exc.describe()


Packed = Tuple[Any, ...]


def _read_chunk(paths: Sequence[str]) -> List[Packed]:
    """A worker's task: the records of ``paths`` as plain tuples, whose pickling is several times
    cheaper than dataclasses'; equal fingerprints are made one object, which pickle sends once."""
    seen: Dict[Any, Any] = {}
    out: List[Packed] = []
    for p in paths:
        r = read_one(p)
        if isinstance(r, NodeRecord):
            out.append((r.node, r.path, seen.setdefault(r.fingerprint, r.fingerprint), r.findings, r.signals,
                        r.samples, r.checked))
        else:
            out.append((r.node, r.path, r.kind, r.reason))
    return out


def _unpack(packed: Packed) -> Result:
    return NodeRecord(*packed) if len(packed) == 7 else Unreadable(*packed)


def _ignore_interrupt() -> None:
    """In a worker: Ctrl-C is the parent's to handle (it terminates the pool), not a traceback per worker."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def default_jobs() -> int:
    """Worker processes to use: one per CPU, at most :data:`MAX_JOBS`."""
    return max(1, min(os.cpu_count() or 1, MAX_JOBS))


def read_all(paths: Sequence[str], jobs: Optional[int] = None) -> Iterator[Result]:
    """The records of ``paths``, in their order. Forked workers share the parsing when there are
    at least :data:`PARALLEL_MIN` files, more than one job and the platform forks (Linux); each
    chunk must arrive within :data:`TIMEOUT_S` or the workers are killed and it is an error."""
    jobs = default_jobs() if jobs is None else jobs
    if jobs <= 1 or len(paths) < PARALLEL_MIN or not sys.platform.startswith("linux"):
        for p in paths:
            yield read_one(p)
        return
    import multiprocessing

    chunks = [paths[i:i + CHUNK] for i in range(0, len(paths), CHUNK)]
    # fork: the workers start in a few milliseconds with every module already imported (the
    # parent has no threads at this point, so forking is safe).
    pool = multiprocessing.get_context("fork").Pool(min(jobs, len(chunks)), initializer=_ignore_interrupt)
    try:
        results = pool.imap(_read_chunk, chunks)
        for _ in chunks:
            try:
                chunk = results.next(TIMEOUT_S)
            except multiprocessing.TimeoutError:
                raise CudadoctorError(f"reading the reports stalled for {TIMEOUT_S:.0f} s",
                                      hint="is the file system holding them responding?") from None
            for packed in chunk:
                yield _unpack(packed)
        pool.close()
    finally:
        pool.terminate()
        pool.join()
