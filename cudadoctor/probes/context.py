"""Facts several probes need, computed once and shared between probe threads."""

from __future__ import annotations

import posixpath
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, TypeVar
from cudadoctor.record import frozen

from cudadoctor.host import CommandResult, Host, InterpreterError, InterpreterFacts, try_list_dir
from cudadoctor.model import ErrorKind, ProbeError
from cudadoctor.model.parsers import parse_dist_info_dirname

T = TypeVar("T")


@frozen
class Distribution:
    """An installed distribution found by its ``.dist-info`` folder name."""

    name: str  # normalised
    version: str
    site: str
    dist_info: str  # full path of the .dist-info folder


@dataclass
class Context:
    """What the probes of one stage share: the host, the target interpreter, the timeout of a
    command, and the answers computed once (:meth:`once`)."""

    host: Host
    python: Optional[str] = None
    timeout: float = 5.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _memo: Dict[str, Any] = field(default_factory=dict, repr=False)
    _events: Dict[str, threading.Event] = field(default_factory=dict, repr=False)

    def once(self, key: str, compute: Callable[[], T]) -> T:
        """Compute ``key`` once; other threads asking meanwhile wait for that result."""
        with self._lock:
            if key in self._memo:
                return self._result(key)  # type: ignore[no-any-return]
            event = self._events.get(key)
            owner = event is None
            if owner:
                event = self._events[key] = threading.Event()
        assert event is not None
        if not owner:
            event.wait()
            return self._result(key)  # type: ignore[no-any-return]
        try:
            value = compute()
            self._memo[key] = value
        except BaseException as exc:
            self._memo[key] = _Failed(exc)
            raise
        finally:
            event.set()
        return value

    def _result(self, key: str) -> Any:
        value = self._memo[key]
        if isinstance(value, _Failed):
            raise value.exc
        return value

    # ------------------------------------------------------------------ shared facts

    def env(self) -> Mapping[str, str]:
        return self.once("env", self.host.environ)

    def run(self, *argv: str) -> CommandResult:
        """Run a command once per probe stage, with the stage's timeout."""
        return self.once("run:" + "\0".join(argv), lambda: self.host.run(argv, self.timeout))

    def run_many(self, commands: List[Tuple[str, ...]]) -> List[CommandResult]:
        """Run independent commands at the same time (each still once per stage); results in order."""
        results: List[Optional[CommandResult]] = [None] * len(commands)

        def one(i: int) -> None:
            results[i] = self.run(*commands[i])

        threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(commands))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return [r if r is not None else CommandResult(tuple(c), error="error") for r, c in zip(results, commands)]

    def interpreter(self) -> Tuple[Optional[InterpreterFacts], Optional[str]]:
        """The target interpreter's facts, or the reason they could not be had."""
        facts, error = self._interpreter()
        return facts, (str(error) if error is not None else None)

    def target_python(self) -> Optional[str]:
        """The interpreter to inspect: --python, else the active venv's or conda env's (what
        `python` means in the user's shell, also when cudadoctor itself runs from pipx or uvx),
        else ``None`` for the interpreter running cudadoctor."""
        if self.python is not None:
            return self.python
        env = self.env()
        for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
            prefix = env.get(var)
            if not prefix:
                continue
            for relative in ("bin/python3", "bin/python", "python.exe"):
                candidate = posixpath.join(prefix, relative)
                if self.host.is_file(candidate):
                    return candidate
        return None

    def interpreter_error(self) -> Optional[InterpreterError]:
        """Why the target interpreter did not answer (its ``kind`` included), or ``None``."""
        return self._interpreter()[1]

    def _interpreter(self) -> Tuple[Optional[InterpreterFacts], Optional[InterpreterError]]:
        def compute() -> Tuple[Optional[InterpreterFacts], Optional[InterpreterError]]:
            try:
                return self.host.interpreter(self.target_python(), self.timeout), None
            except InterpreterError as exc:
                return None, exc

        return self.once("interpreter", compute)

    def site_dirs(self) -> Tuple[str, ...]:
        facts, _ = self.interpreter()
        return facts.site_packages if facts else ()

    def list_dir(self, path: str) -> List[str]:
        return self.once("ls:" + path, lambda: try_list_dir(self.host, path))

    def distributions(self) -> List[Distribution]:
        """Every ``*.dist-info``/``*.egg-info`` in the target's site directories, in path order."""

        def compute() -> List[Distribution]:
            found: List[Distribution] = []
            for site in self.site_dirs():
                for entry in self.list_dir(site):
                    parsed = parse_dist_info_dirname(entry)
                    if parsed:
                        found.append(Distribution(parsed[0], parsed[1], site, posixpath.join(site, entry)))
            return found

        return self.once("distributions", compute)

    def distribution(self, *names: str) -> Optional[Distribution]:
        """The first installed distribution among ``names`` (normalised names)."""
        by_name = self.once("dist-by-name", lambda: _first_by_name(self.distributions()))
        for name in names:
            if name in by_name:
                return by_name[name]
        return None

    def conda_prefix(self) -> Optional[str]:
        """The target environment's conda prefix, if it is a conda environment."""

        def compute() -> Optional[str]:
            facts, _ = self.interpreter()
            candidates = [facts.prefix] if facts else []
            if facts and facts.conda_prefix_env:
                candidates.append(facts.conda_prefix_env)
            if not facts:
                candidates.append(self.env().get("CONDA_PREFIX", ""))
            for prefix in candidates:
                if prefix and self.host.is_dir(posixpath.join(prefix, "conda-meta")):
                    return prefix
            return None

        return self.once("conda-prefix", compute)


class _Failed:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _first_by_name(dists: List[Distribution]) -> Dict[str, Distribution]:
    out: Dict[str, Distribution] = {}
    for dist in dists:
        out.setdefault(dist.name, dist)
    return out


@dataclass
class ProbeOutput:
    """What one probe found: Snapshot fields to set, and the facts it could not read."""

    values: Dict[str, Any] = field(default_factory=dict)
    errors: List[ProbeError] = field(default_factory=list)


def command_kind(error: Optional[str]) -> ErrorKind:
    """The ProbeError kind for a failed command's ``CommandResult.error`` (or
    ``InterpreterError.kind``); a plain non-zero exit is an ``error``."""
    return {
        "not_found": ErrorKind.NOT_INSTALLED,
        "timeout": ErrorKind.TIMEOUT,
        "permission": ErrorKind.PERMISSION,
        "bad_output": ErrorKind.BAD_OUTPUT,
    }.get(error or "", ErrorKind.ERROR)
