"""Probes: the facts of a machine, gathered concurrently through the system seam.

Each probe is a function ``(ctx) -> ProbeOutput`` listed in :data:`PROBES`. The runner gives
every probe its own daemon thread and a deadline; a probe that raises becomes a ProbeError of
kind ``error``, and one that overruns becomes a ProbeError of kind ``timeout``, so nothing a
machine does can crash or hang ``collect``.
"""

from __future__ import annotations

import datetime
import threading
import time
from dataclasses import replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from cudadoctor.version import __version__
from cudadoctor.host import DEFAULT_TIMEOUT_S, Host
from cudadoctor.model import ErrorKind, ProbeError, Snapshot
from cudadoctor.probes.context import Context, ProbeOutput, command_kind

__all__ = ["Context", "ProbeOutput", "collect", "command_kind", "probe_names"]


ProbeFn = Callable[[Context], ProbeOutput]


def _registry() -> Dict[str, ProbeFn]:
    # Imported here, not at module level, so that `cudadoctor --version` stays cheap.
    from cudadoctor.probes import compilers, driver, frameworks, jetson, libraries, packages, system, toolkits

    return {
        "host": system.probe_host,
        "env": system.probe_env,
        "python": packages.probe_python,
        "driver": driver.probe_driver,
        "gpus": driver.probe_gpus,
        "toolkits": toolkits.probe_toolkits,
        "libraries": libraries.probe_libraries,
        "packages": packages.probe_packages,
        "frameworks": frameworks.probe_frameworks,
        "compilers": compilers.probe_compilers,
        "jetson": jetson.probe_jetson,
    }


def probe_names() -> List[str]:
    return list(_registry())


def collect(
    host: Host,
    python: Optional[str] = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    only: Optional[Sequence[str]] = None,
    when: Optional[Tuple[Sequence[str], Callable[[Snapshot], None]]] = None,
) -> Snapshot:
    """Run the probes against ``host`` and assemble a Snapshot.

    ``python`` is the target interpreter (default: the one running cudadoctor); ``timeout``
    bounds each external command; a probe as a whole gets a few commands' worth of time.
    ``when=(names, callback)``: as soon as those probes have finished, ``callback`` gets a Snapshot
    of their facts alone, in the thread of the last of them, while the others still run (``check``
    starts its smoke suites so); an exception it raises is dropped.
    """
    ctx = Context(host=host, python=python, timeout=timeout)
    _start_early(ctx, only)
    registry = _registry()
    names = [n for n in registry if only is None or n in only]
    results: Dict[str, ProbeOutput] = {}
    durations: Dict[str, float] = {}
    threads: Dict[str, threading.Thread] = {}
    waiting = [n for n in (when[0] if when else ()) if n in names]
    lock = threading.Lock()

    def runner(name: str, fn: ProbeFn) -> None:
        start = time.monotonic()
        try:
            results[name] = fn(ctx)
        except Exception as exc:  # a probe bug must not take the run down
            results[name] = ProbeOutput(
                errors=[ProbeError(name, ErrorKind.ERROR, f"{type(exc).__name__}: {exc}")]
            )
        durations[name] = round(time.monotonic() - start, 4)
        if when is not None and name in waiting:
            with lock:
                waiting.remove(name)
                fire = not waiting
            if fire:
                _early(when, dict(results), dict(durations), probe_deadline(timeout))

    for name in names:
        thread = threading.Thread(target=runner, args=(name, registry[name]), daemon=True)
        threads[name] = thread
        thread.start()

    deadline = time.monotonic() + probe_deadline(timeout)
    for name, thread in threads.items():
        thread.join(max(0.0, deadline - time.monotonic()))

    # Copies: a probe that overran may still finish, and write, while the Snapshot is built.
    return assemble(names, dict(results), dict(durations), probe_deadline(timeout))


def _early(when: Tuple[Sequence[str], Callable[[Snapshot], None]], results: Mapping[str, ProbeOutput],
           durations: Mapping[str, float], deadline: float) -> None:
    names, callback = when
    try:
        callback(assemble([n for n in names if n in results], results, durations, deadline))
    except Exception:  # the caller finds out that nothing started, and does it after collect
        pass


# Commands the probes always run, whatever the machine (ldconfig, the compilers' versions): started
# before the probes are even imported, so that they run while Python loads them (the probes then
# find their answers in the Context, which runs each command once).
def _start_early(ctx: Context, only: Optional[Sequence[str]]) -> None:
    def early() -> None:
        try:
            commands = []
            if only is None or "compilers" in only:
                from cudadoctor.probes.compilers import compilers_on_path, version_commands

                commands += version_commands(compilers_on_path(ctx))
            if only is None or "libraries" in only:
                from cudadoctor.probes.libraries import LDCONFIG

                commands.append(LDCONFIG)
            ctx.run_many(commands)
        except Exception:  # the probe that needs the command meets the error again, and records it
            pass

    threading.Thread(target=early, name="cudadoctor-early", daemon=True).start()


def probe_deadline(timeout: float) -> float:
    """How long the whole probe stage may take: a probe runs at most a few commands in a row."""
    return 3 * timeout + 1.0


def assemble(
    names: Sequence[str],
    results: Mapping[str, ProbeOutput],
    durations: Mapping[str, float],
    deadline: float,
) -> Snapshot:
    values: Dict[str, Any] = {}
    errors: List[ProbeError] = []
    for name in names:
        out = results.get(name)
        if out is None:
            errors.append(
                ProbeError(name, ErrorKind.TIMEOUT, f"did not finish within {deadline:.0f} s", deadline)
            )
            continue
        values.update(out.values)
        errors.extend(
            e if e.duration_s is not None else replace(e, duration_s=durations.get(name)) for e in out.errors
        )
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    return Snapshot(
        tool_version=__version__,
        created_at=now.isoformat().replace("+00:00", "Z"),
        errors=tuple(errors),
        probe_durations_s=dict(sorted(durations.items())),
        **values,
    )
