"""Record a machine as a fixture: a Host that forwards every call and keeps what it answered.

:class:`RecordingHost` wraps any :class:`~cudadoctor.host.Host` (normally ``RealHost``); the
probes run through it unchanged, and :meth:`RecordingHost.machine` then gives the
``machine.json`` data and the file contents that :class:`~cudadoctor.host.recorded.RecordedHost`
replays to the same Snapshot. Run it on a real machine::

    python -m cudadoctor.host.recorder OUT_DIR [--python PATH] [--description TEXT]

It writes ``OUT_DIR/machine.json``, ``OUT_DIR/fs/...`` (every file read, at its real path;
text files whose path Windows cannot hold, such as sysfs's ``0000:17:00.0``, go to
machine.json's ``files`` instead) and a ``README.md`` stub. The recording keeps environment
values, the hostname and the username as they are: a maintainer reviews them before
committing a fixture (:mod:`cudadoctor.host.recorder_output` writes the folder). Stdlib and our
package only, so it runs on any machine that can run cudadoctor, click or not.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import posixpath
import shutil
import sys
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from cudadoctor.host import (
    DEFAULT_TIMEOUT_S,
    MAX_READ_BYTES,
    CommandResult,
    Host,
    InterpreterError,
    InterpreterFacts,
    PlatformFacts,
)
from cudadoctor.host.nvml import Nvml, NvmlError

FILE_CAP = 256 * 1024  # per file: as much as the probes read of /proc/cpuinfo; no binary fits
MAX_LISTING = 200  # a listing longer than this keeps only the names a GPU stack cares about

# Names a probe could look for in a big directory such as /usr/lib/x86_64-linux-gnu: CUDA
# libraries, the driver's libraries, and distributions in a site directory.
KEEP_IN_LISTINGS = (
    "cuda", "cudnn", "cublas", "cufft", "curand", "cusolver", "cusparse", "cupti", "nccl",
    "nvrtc", "nvjitlink", "nvidia", "nvml", "nvvm", "nvtx", "nvinfer", "nvonnx", "tensorrt",
    "libnv", ".dist-info", ".egg-info",
)

# Variables probes read besides those `probe_env` keeps (container detection, Julia's depot).
PROBE_ENV_EXTRA = frozenset(
    {"HOME", "container", "KUBERNETES_SERVICE_HOST", "APPTAINER_CONTAINER", "SINGULARITY_CONTAINER"}
)


def _norm(path: str) -> str:
    out = posixpath.normpath("/" + path.lstrip("/"))
    return "/" if out == "//" else out


def _jsonable(value: Any) -> Any:
    """An NVML answer as plain JSON: what RecordedNvml will hand back."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


class RecordingNvml:
    """Forwards NVML calls and records each answer, or ``{"$error": NAME}``, in
    :class:`~cudadoctor.host.nvml.RecordedNvml`'s shape."""

    def __init__(self, inner: Nvml, lock: threading.RLock) -> None:
        self.inner = inner
        self._lock = lock
        self.data: Dict[str, Any] = {"init_error": None, "system": {}, "devices": []}

    def init(self) -> None:
        try:
            self.inner.init()
        except NvmlError as exc:
            with self._lock:
                self.data["init_error"] = exc.name
            raise

    def _record(self, table: Dict[str, Any], key: str, call: Callable[[], Any]) -> Any:
        try:
            value = call()
        except NvmlError as exc:
            with self._lock:
                table.setdefault(key, {"$error": exc.name})
            raise
        with self._lock:
            table.setdefault(key, _jsonable(value))
        return value

    def _device_table(self, index: int) -> Dict[str, Any]:
        with self._lock:
            devices: List[Dict[str, Any]] = self.data["devices"]
            while len(devices) <= index:
                devices.append({})
            return devices[index]

    def system(self, fn: str) -> Any:
        # RecordedNvml initialises before every call, so a failed init answers for all of them.
        self.init()
        return self._record(self.data["system"], fn, lambda: self.inner.system(fn))

    def device_count(self) -> int:
        self.init()
        count = int(self._record(self.data["system"], "nvmlDeviceGetCount", self.inner.device_count))
        if count > 0:
            self._device_table(count - 1)
        return count

    def device(self, index: int, fn: str, *args: int) -> Any:
        self.init()
        key = f"{fn}({','.join(str(a) for a in args)})" if args else fn
        if index < 0:
            return self.inner.device(index, fn, *args)
        return self._record(self._device_table(index), key, lambda: self.inner.device(index, fn, *args))


class RecordingHost:
    """A Host that forwards every call to ``inner`` and records the answers.

    Thread-safe: the probes call it from several threads at once. A probe that overruns its
    deadline may still be calling when the recording is saved; :meth:`machine` copies under
    the lock, so such late answers are either in or out, never half-written.
    """

    def __init__(self, inner: Host, file_cap: int = FILE_CAP) -> None:
        self.inner = inner
        self.file_cap = file_cap
        self._lock = threading.RLock()
        self.files: Dict[str, bytes] = {}  # real path -> content (at most file_cap bytes)
        self.truncated: Dict[str, int] = {}  # real path -> bytes the probe was given
        self.unreadable: Set[str] = set()
        self.listings: Dict[str, List[str]] = {}
        self.stat: Dict[str, str] = {}
        self.realpaths: Dict[str, str] = {}
        self.which_answers: Dict[str, Optional[str]] = {}
        self.commands: Dict[Tuple[str, ...], Dict[str, Any]] = {}
        self.env: Optional[Dict[str, str]] = None
        self.platform_facts: Optional[Dict[str, Any]] = None
        self.interpreter_default: Optional[Dict[str, Any]] = None
        self.interpreters: Dict[str, Dict[str, Any]] = {}
        self._nvml: Optional[RecordingNvml] = None

    # ------------------------------------------------------------------ files

    def read_bytes(self, path: str, limit: int = MAX_READ_BYTES) -> bytes:
        try:
            data = self.inner.read_bytes(path, limit)
        except (FileNotFoundError, NotADirectoryError):
            raise  # absent: replaying finds nothing there either
        except IsADirectoryError:
            self._note_kind(path)
            raise
        except OSError:
            with self._lock:
                self.unreadable.add(_norm(path))
            raise
        self._keep_file(path, data)
        return data

    def _keep_file(self, path: str, data: bytes) -> None:
        """Store the content at the file's real path, so symlinked names share one copy."""
        norm = _norm(path)
        try:
            real = _norm(self.inner.realpath(path))
        except (OSError, ValueError):
            real = norm
        with self._lock:
            if real != norm:
                self.realpaths.setdefault(norm, real)
            kept = data[: self.file_cap]
            if len(kept) > len(self.files.get(real, b"")):
                self.files[real] = kept
            if len(data) > self.file_cap:
                self.truncated[real] = max(len(data), self.truncated.get(real, 0))

    def list_dir(self, path: str) -> List[str]:
        try:
            names = self.inner.list_dir(path)
        except (FileNotFoundError, NotADirectoryError):
            raise
        except OSError:
            with self._lock:
                self.unreadable.add(_norm(path))
            raise
        with self._lock:
            self.listings[_norm(path)] = sorted(names)
        return names

    def _note_kind(self, path: str) -> None:
        norm = _norm(path)
        with self._lock:
            if norm in self.stat:
                return
        if self.inner.is_file(path):
            kind = "file"
        elif self.inner.is_dir(path):
            kind = "dir"
        elif self.inner.exists(path):
            kind = "other"  # a device node, a socket, a fifo
        else:
            kind = "missing"
        with self._lock:
            self.stat.setdefault(norm, kind)

    def is_dir(self, path: str) -> bool:
        answer = self.inner.is_dir(path)
        self._note_kind(path)
        return answer

    def is_file(self, path: str) -> bool:
        answer = self.inner.is_file(path)
        self._note_kind(path)
        return answer

    def exists(self, path: str) -> bool:
        answer = self.inner.exists(path)
        self._note_kind(path)
        return answer

    def realpath(self, path: str) -> str:
        real = self.inner.realpath(path)
        with self._lock:
            self.realpaths[_norm(path)] = real
        return real

    def which(self, name: str) -> Optional[str]:
        found = self.inner.which(name)
        with self._lock:
            self.which_answers[name] = found
        return found

    # ------------------------------------------------------------------ commands and facts

    def run(self, argv: Sequence[str], timeout: float = DEFAULT_TIMEOUT_S) -> CommandResult:
        result = self.inner.run(argv, timeout)
        record = {
            "argv": list(argv),
            "stdout": result.stdout,
            "stderr": result.stderr,
            "returncode": result.returncode,
            "error": result.error,
            "duration_s": round(result.duration_s, 3),
        }
        with self._lock:
            self.commands.setdefault(tuple(argv), record)
        return result

    def environ(self) -> Mapping[str, str]:
        env = dict(self.inner.environ())
        with self._lock:
            self.env = dict(env)
        return env

    def platform(self) -> PlatformFacts:
        facts = self.inner.platform()
        with self._lock:
            self.platform_facts = dataclasses.asdict(facts)
        return facts

    def interpreter(self, executable: Optional[str], timeout: float) -> InterpreterFacts:
        try:
            facts = self.inner.interpreter(executable, timeout)
        except InterpreterError as exc:
            if executable is not None:
                with self._lock:
                    self.interpreters[executable] = {"$error": str(exc), "kind": getattr(exc, "kind", "error")}
            raise
        data = dataclasses.asdict(facts)
        data["site_packages"] = list(facts.site_packages)
        with self._lock:
            # the interpreter running cudadoctor is the default, also when named by path (an
            # activated venv is the target by default, and it may be this very interpreter)
            if executable is None or facts.is_current:
                self.interpreter_default = data
            else:
                self.interpreters[executable] = data
        return facts

    def nvml(self) -> Nvml:
        with self._lock:
            if self._nvml is None:
                self._nvml = RecordingNvml(self.inner.nvml(), self._lock)
            return self._nvml

    # ------------------------------------------------------------------ the result

    def machine(
        self, max_listing: int = MAX_LISTING, env_filter: Optional[Callable[[str], bool]] = None
    ) -> Tuple[Dict[str, Any], Dict[str, bytes]]:
        """``(machine.json data, {real path: content})``. Listings longer than ``max_listing``
        (0: no limit) keep only names in :data:`KEEP_IN_LISTINGS`; ``env_filter`` chooses the
        variables kept. Both are noted under ``recording``."""
        with self._lock:
            data: Dict[str, Any] = {"recording": self._provenance(self.files)}
            inline = {p: c.decode("utf-8") for p, c in sorted(self.files.items()) if _inline(p, c)}
            files = {p: c for p, c in self.files.items() if p not in inline}
            if inline:
                data["files"] = inline
            if self.platform_facts is not None:
                data["platform"] = dict(self.platform_facts)
            if self.env is not None:
                data["env"] = _chosen_env(self.env, env_filter, data["recording"])
            if self.interpreter_default is not None:
                data["interpreter"] = dict(self.interpreter_default)
            if self.interpreters:
                data["interpreters"] = {k: dict(v) for k, v in sorted(self.interpreters.items())}
            data["listings"] = _trimmed(self.listings, max_listing, data["recording"])
            data["stat"] = dict(sorted(self.stat.items()))
            data["realpaths"] = dict(sorted(self.realpaths.items()))
            data["which"] = dict(sorted(self.which_answers.items()))
            data["unreadable"] = sorted(self.unreadable)
            data["commands"] = [dict(r) for _, r in sorted(self.commands.items())]
            if self._nvml is not None:
                data["nvml"] = json.loads(json.dumps(self._nvml.data))
        return data, files

    def _provenance(self, files: Mapping[str, bytes]) -> Dict[str, Any]:
        out: Dict[str, Any] = {"file_cap_bytes": self.file_cap}
        if self.truncated:
            out["truncated_files"] = {p: {"size_at_least": n, "kept": len(files.get(p, b""))}
                                      for p, n in sorted(self.truncated.items())}
        return out


# Characters Windows cannot have in a file name; sysfs paths such as
# /sys/bus/pci/devices/0000:17:00.0/class have them, and a fixture must survive `git clone` there.
_UNSAFE_ON_WINDOWS = frozenset(':*?"<>|\\')


def _inline(path: str, content: bytes) -> bool:
    """Keep the file in machine.json's ``files`` instead of ``fs/``?"""
    if not _UNSAFE_ON_WINDOWS.intersection(path):
        return False
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        return False  # binary: fs/ is the only place for it
    return True


def _chosen_env(env: Mapping[str, str], keep: Optional[Callable[[str], bool]], notes: Dict[str, Any]) -> Dict[str, str]:
    if keep is None:
        return dict(sorted(env.items()))
    dropped = sorted(k for k in env if not keep(k))
    if dropped:
        notes["env_dropped"] = dropped
    return {k: v for k, v in sorted(env.items()) if keep(k)}


def _trimmed(listings: Mapping[str, List[str]], limit: int, notes: Dict[str, Any]) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {}
    trimmed: Dict[str, Dict[str, int]] = {}
    for directory, names in sorted(listings.items()):
        if limit and len(names) > limit:
            kept = [n for n in names if keep_in_listing(n)]
            trimmed[directory] = {"entries": len(names), "kept": len(kept)}
            names = kept
        out[directory] = list(names)
    if trimmed:
        notes["trimmed_listings"] = trimmed
    return out


def keep_in_listing(name: str) -> bool:
    lower = name.lower()
    return any(key in lower for key in KEEP_IN_LISTINGS)


def gpu_env_name(name: str) -> bool:
    """The variables probes read: those ``probe_env`` reports, and :data:`PROBE_ENV_EXTRA`."""
    from cudadoctor.probes.system import ENV_NAMES, ENV_PREFIXES

    return name in ENV_NAMES or name.startswith(ENV_PREFIXES) or name in PROBE_ENV_EXTRA


# --------------------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m cudadoctor.host.recorder",
        description="Record this machine, as the probes see it, into a replayable fixture folder.",
    )
    p.add_argument("out_dir", metavar="OUT_DIR", help="folder to write (e.g. tests/machines/<name>)")
    p.add_argument("--python", metavar="PATH", help="target interpreter (default: this one)")
    p.add_argument("--description", default="", help="first paragraph of the README stub")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per command")
    p.add_argument("--env", choices=("all", "gpu"), default="all",
                   help="all variables (default), or only those the probes read")
    p.add_argument("--max-listing", type=int, default=MAX_LISTING,
                   help="trim longer directory listings to CUDA-related names (0: never)")
    p.add_argument("--file-cap", type=int, default=FILE_CAP, help="bytes kept per file")
    p.add_argument("--force", action="store_true", help="replace an existing recording in OUT_DIR")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Record this machine into OUT_DIR; 0 when written, 1 when it could not be, 2 on misuse."""
    args = _parser().parse_args(argv)
    out_dir = args.out_dir
    if os.path.exists(os.path.join(out_dir, "machine.json")):
        if not args.force:
            sys.stderr.write(f"{out_dir} already holds a recording; --force replaces it\n")
            return 2
        shutil.rmtree(os.path.join(out_dir, "fs"), ignore_errors=True)

    from cudadoctor.host import RealHost
    from cudadoctor.probes import collect
    from cudadoctor.host.recorder_output import readme_stub, summarize, write_machine

    recorder = RecordingHost(RealHost(), file_cap=args.file_cap)
    snapshot = collect(recorder, python=args.python, timeout=args.timeout)
    data, files = recorder.machine(args.max_listing, gpu_env_name if args.env == "gpu" else None)
    _annotate(data, args)
    try:
        failed = write_machine(out_dir, data, files)
        readme = os.path.join(out_dir, "README.md")
        if not os.path.exists(readme):  # a maintainer's README outlives a re-recording
            with open(readme, "w", encoding="utf-8") as fh:
                fh.write(readme_stub(data, summarize(snapshot), args.description))
    except OSError as exc:
        sys.stderr.write(f"cannot write {out_dir}: {exc}\n")
        return 1
    _say_done(out_dir, data, files, failed)
    if snapshot.python is None:
        reasons = "; ".join(e.detail for e in snapshot.errors_of("python")) or "no answer"
        sys.stderr.write(f"warning: the target interpreter did not answer ({reasons})\n")
    return 0


def _annotate(data: Dict[str, Any], args: argparse.Namespace) -> None:
    from cudadoctor.version import __version__

    target = data.get("interpreters", {}).get(args.python) if args.python else None
    if "interpreter" not in data and target and "$error" not in target:
        # `cudadoctor check --machine DIR` asks for the default interpreter: make it the target.
        data["interpreter"] = target
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    data["recording"].update(
        name=os.path.basename(os.path.abspath(args.out_dir)),
        recorded_at=now.isoformat().replace("+00:00", "Z"),
        tool_version=__version__,
        target_python=args.python,
        env=args.env,
    )


def _say_done(out_dir: str, data: Mapping[str, Any], files: Mapping[str, bytes], failed: List[str]) -> None:
    inline = data.get("files", {})
    size = sum(len(c) for c in files.values()) + sum(len(t) for t in inline.values())
    sys.stderr.write(
        f"recorded {len(files) + len(inline)} files ({size // 1024} KiB), {len(data['listings'])} "
        f"listings, {len(data['commands'])} commands into {out_dir}\n"
        "review env, hostname, username and fs/ before committing it\n"
    )
    for path in failed:
        sys.stderr.write(f"  not written: {path}\n")


if __name__ == "__main__":
    sys.exit(main())
