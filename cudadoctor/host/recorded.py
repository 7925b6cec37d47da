"""A recorded machine: the seam replayed from ``tests/machines/<name>/``.

A machine folder holds ``machine.json`` and, optionally, an ``fs/`` tree whose files stand at
their absolute paths (``fs/proc/driver/nvidia/version`` is ``/proc/driver/nvidia/version``).
``machine.json`` keys (all optional):

- ``platform``: :class:`~cudadoctor.host.PlatformFacts` fields.
- ``env``: the environment variables.
- ``files``: ``{path: text}`` inline files; ``dirs``: extra (empty) directories.
- ``links``: ``{path: target}`` symbolic links, resolved like the kernel does.
- ``unreadable``: paths that raise ``PermissionError``.
- ``commands``: ``[{argv, stdout, stderr, returncode, error, hang_s}]``; ``argv[0]`` may be a
  bare name (matches any path with that basename) or a full path.
- ``interpreter``: the target interpreter's facts; ``interpreters``: ``{path: facts}``. Facts
  may carry ``is_current`` (default: true for ``interpreter``, false for ``interpreters``);
  ``{"$error": text, "kind": "timeout"}`` in ``interpreters`` makes that interpreter fail to
  answer (``kind`` as in InterpreterError, default ``error``).
- ``nvml``: see :class:`~cudadoctor.host.nvml.RecordedNvml`.

Exact answers, written by :mod:`cudadoctor.host.recorder` (hand-written machines rarely need them).
Each one, where present for a path or name, wins over what the tree above would say:

- ``listings``: ``{dir: [names]}``; ``list_dir`` returns exactly these names.
- ``stat``: ``{path: "file" | "dir" | "other" | "missing"}`` answers ``is_file``, ``is_dir``
  and ``exists`` (``other``: exists but is neither, e.g. the device node ``/dev/nvidia0``).
- ``realpaths``: ``{path: real}``; an answer for a directory also holds below it.
- ``which``: ``{name: path or null}``.
- ``recording``: provenance (when, what was trimmed); never read when replaying.

docs/recorded-machines.md says how to record a new one.
"""

from __future__ import annotations

import json
import os
import posixpath
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from cudadoctor.host import (
    DEFAULT_TIMEOUT_S,
    MAX_READ_BYTES,
    CommandResult,
    InterpreterError,
    InterpreterFacts,
    PlatformFacts,
    interpreter_facts_from_json,
)
from cudadoctor.host.nvml import RecordedNvml


class RecordedHost:
    """Replays a recorded machine. ``data`` is the parsed ``machine.json``."""

    def __init__(self, data: Mapping[str, Any], fs_root: Optional[str] = None) -> None:
        self.data = data
        self.fs_root = fs_root
        self.unrecorded: List[Tuple[str, ...]] = []  # commands asked for but not recorded
        self._files: Dict[str, str] = {_norm(k): v for k, v in data.get("files", {}).items()}
        self._links: Dict[str, str] = {_norm(k): v for k, v in data.get("links", {}).items()}
        self._unreadable: Set[str] = {_norm(p) for p in data.get("unreadable", [])}
        self._dirs: Set[str] = {_norm(p) for p in data.get("dirs", [])}
        self._nvml = RecordedNvml(data.get("nvml"))
        self._listings: Dict[str, List[str]] = {_norm(k): list(v) for k, v in data.get("listings", {}).items()}
        self._stat: Dict[str, str] = {_norm(k): str(v) for k, v in data.get("stat", {}).items()}
        self._realpaths: Dict[str, str] = {_norm(k): _norm(v) for k, v in data.get("realpaths", {}).items()}
        self._which: Dict[str, Optional[str]] = dict(data.get("which", {}))
        for path in list(self._files) + list(self._links) + list(self._dirs):
            parent = posixpath.dirname(path)
            while parent not in self._dirs:
                self._dirs.add(parent)
                parent = posixpath.dirname(parent)

    @classmethod
    def load(cls, machine_dir: str) -> "RecordedHost":
        with open(os.path.join(machine_dir, "machine.json"), encoding="utf-8") as fh:
            data = json.load(fh)
        fs_root = os.path.join(machine_dir, "fs")
        return cls(data, fs_root if os.path.isdir(fs_root) else None)

    # ------------------------------------------------------------------ paths

    def realpath(self, path: str) -> str:
        return self._realpath(_norm(path), 0)

    def _realpath(self, path: str, depth: int) -> str:
        known = self._realpaths.get(path)
        if known is not None:
            return known
        if depth < 40 and self._realpaths:
            # realpath(P) = R means realpath(P/x) = realpath(R/x): a recorded answer for a
            # symlinked directory resolves everything below it.
            parent = posixpath.dirname(path)
            while parent != "/":
                real = self._realpaths.get(parent)
                if real is not None and real != parent:
                    rest = path[len(parent) + 1 :]
                    return self._realpath(_norm(posixpath.join(real, rest)), depth + 1)
                parent = posixpath.dirname(parent)
        return self._resolve_links(path)

    def _resolve_links(self, path: str) -> str:
        for _ in range(40):
            changed = False
            parts = path.split("/")
            for i in range(2, len(parts) + 1):
                prefix = "/".join(parts[:i])
                target = self._links.get(prefix)
                if target is not None:
                    base = posixpath.dirname(prefix)
                    new = _norm(posixpath.join(base, target))
                    rest = "/".join(parts[i:])
                    path = _norm(posixpath.join(new, rest)) if rest else new
                    changed = True
                    break
            if not changed:
                return path
        raise OSError(40, "Too many levels of symbolic links", path)

    def _disk(self, path: str) -> Optional[str]:
        if self.fs_root is None:
            return None
        return os.path.join(self.fs_root, path.lstrip("/"))

    def _check(self, path: str) -> str:
        real = self.realpath(path)
        if real in self._unreadable or _norm(path) in self._unreadable:
            raise PermissionError(13, "Permission denied", path)
        return real

    def read_bytes(self, path: str, limit: int = MAX_READ_BYTES) -> bytes:
        real = self._check(path)
        if real in self._files:
            return self._files[real].encode("utf-8", errors="surrogateescape")[:limit]
        disk = self._disk(real)
        if disk and os.path.isfile(disk):
            with open(disk, "rb") as fh:
                return fh.read(limit)
        if self.is_dir(real):
            raise IsADirectoryError(21, "Is a directory", path)
        raise FileNotFoundError(2, "No such file or directory", path)

    def list_dir(self, path: str) -> List[str]:
        real = self._check(path)
        listing = self._listings.get(_norm(path), self._listings.get(real))
        if listing is not None:
            return list(listing)
        if not self.is_dir(real):
            if self.is_file(real):
                raise NotADirectoryError(20, "Not a directory", path)
            raise FileNotFoundError(2, "No such file or directory", path)
        names: Set[str] = set()
        for collection in (self._files, self._links, self._dirs):
            for entry in collection:
                if posixpath.dirname(entry) == real and entry != real:
                    names.add(posixpath.basename(entry))
        disk = self._disk(real)
        if disk and os.path.isdir(disk):
            names.update(os.listdir(disk))
        return sorted(names)

    def _kind(self, path: str) -> Optional[str]:
        """The recorded ``stat`` answer for ``path`` (or its real path), if there is one."""
        if not self._stat:
            return None
        kind = self._stat.get(_norm(path))
        if kind is None:
            try:
                kind = self._stat.get(self.realpath(path))
            except OSError:
                return None
        return kind

    def is_dir(self, path: str) -> bool:
        kind = self._kind(path)
        if kind is not None:
            return kind == "dir"
        try:
            real = self.realpath(path)
        except OSError:
            return False
        if real in self._dirs or real in self._listings or real == "/":
            return True
        disk = self._disk(real)
        return bool(disk and os.path.isdir(disk))

    def is_file(self, path: str) -> bool:
        kind = self._kind(path)
        if kind is not None:
            return kind == "file"
        try:
            real = self.realpath(path)
        except OSError:
            return False
        if real in self._files:
            return True
        disk = self._disk(real)
        return bool(disk and os.path.isfile(disk))

    def exists(self, path: str) -> bool:
        kind = self._kind(path)
        if kind is not None:
            return kind != "missing"
        return self.is_file(path) or self.is_dir(path)

    def which(self, name: str) -> Optional[str]:
        if name in self._which:
            return self._which[name]
        if "/" in name:
            return name if self.is_file(name) else None
        for directory in self.environ().get("PATH", "").split(":"):
            if directory and self.is_file(posixpath.join(directory, name)):
                return posixpath.join(directory, name)
        return None

    # ------------------------------------------------------------------ commands

    def run(self, argv: Sequence[str], timeout: float = DEFAULT_TIMEOUT_S) -> CommandResult:
        argv = tuple(argv)
        record = self._find_command(argv)
        if record is None:
            found = self.which(argv[0]) if argv else None
            if found is None:
                return CommandResult(argv, error="not_found")
            self.unrecorded.append(argv)
            return CommandResult(argv, error="error", stderr="command output was not recorded")
        hang = float(record.get("hang_s", 0) or 0)
        if hang:
            time.sleep(min(hang, timeout))
            if hang >= timeout:
                return CommandResult(argv, error="timeout", duration_s=timeout)
        stdout = record.get("stdout", "")
        stderr = record.get("stderr", "")
        return CommandResult(
            argv,
            returncode=record.get("returncode", 0 if not record.get("error") else None),
            stdout=_text(stdout),
            stderr=_text(stderr),
            duration_s=float(record.get("duration_s", 0.0)),
            error=record.get("error"),
        )

    def _find_command(self, argv: Tuple[str, ...]) -> Optional[Mapping[str, Any]]:
        if not argv:
            return None
        base = posixpath.basename(argv[0])
        for record in self.data.get("commands", []):
            rec = tuple(record["argv"])
            if rec == argv:
                return dict(record)
            if rec[1:] == argv[1:] and "/" not in rec[0] and rec[0] == base:
                # a bare recorded name answers for any path to it, as long as it exists here
                if "/" not in argv[0] or self.is_file(argv[0]):
                    return dict(record)
        return None

    # ------------------------------------------------------------------ the rest

    def environ(self) -> Mapping[str, str]:
        return dict(self.data.get("env", {}))

    def platform(self) -> PlatformFacts:
        raw = dict(self.data.get("platform", {}))
        extra = raw.pop("extra", {})
        return PlatformFacts(**raw, extra=extra)

    def interpreter(self, executable: Optional[str], timeout: float) -> InterpreterFacts:
        if executable is not None:
            facts = self.data.get("interpreters", {}).get(executable)
            if facts is None:
                default = self.data.get("interpreter")
                if default and posixpath.dirname(str(default.get("executable"))) == posixpath.dirname(executable):
                    return _facts(default, current=True)  # python vs python3 of the same env
                raise InterpreterError(f"{executable}: No such file or directory")
            return _facts(facts, current=False)
        default = self.data.get("interpreter")
        if default is None:
            raise InterpreterError("no interpreter recorded")
        return _facts(default, current=True)

    def nvml(self) -> RecordedNvml:
        return self._nvml


def _facts(data: Mapping[str, Any], current: bool) -> InterpreterFacts:
    """Recorded facts; ``is_current`` as recorded when it was, else ``current``."""
    if "$error" in data:
        raise InterpreterError(str(data["$error"]), kind=str(data.get("kind", "error")))
    return interpreter_facts_from_json(data, is_current=bool(data.get("is_current", current)))


def _norm(path: str) -> str:
    out = posixpath.normpath("/" + path.lstrip("/"))
    return "/" if out == "//" else out


def _text(value: Any) -> str:
    """Recorded output: a string, or a list of lines (easier to read in JSON)."""
    if isinstance(value, list):
        return "\n".join(str(v) for v in value) + ("\n" if value else "")
    return str(value)


def check_machine(folder: str, option: str = "--machine") -> None:
    """A usage error (CudadoctorError) unless ``folder``, given with ``option``, is a recorded
    machine: a folder holding ``machine.json``."""
    if not os.path.isfile(os.path.join(folder, "machine.json")):
        from cudadoctor.errors import CudadoctorError

        raise CudadoctorError(f"{option} {folder}: no machine.json in that folder")


def replay(folder: Optional[str], option: str = "--machine") -> Optional[RecordedHost]:
    """The recorded machine in ``folder`` (the hidden ``--machine`` option of the commands), or
    None when no folder is given: probe this machine."""
    if folder is None:
        return None
    check_machine(folder, option)
    return RecordedHost.load(folder)
