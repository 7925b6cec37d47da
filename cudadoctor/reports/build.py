"""What ``check``, ``report``, the library API and the pytest plugin share between probing and
printing: whether to run the quick smoke tests and which suites, and how a report is stamped with
its node and redacted (:func:`cudadoctor.render.render_report` renders it). One place, so the command and ``cudadoctor.report()`` write the
same text.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from cudadoctor.errors import CudadoctorError
from cudadoctor.model import Finding, Report, Snapshot
from cudadoctor.version import __version__

REPORT_FORMATS = ("markdown", "text", "json")


def make_report(snapshot: Snapshot, findings: Optional[Sequence[Finding]] = None) -> Report:
    """A report; ``findings=None`` means the checks did not run (probe facts only)."""
    from cudadoctor.data.source import data_info

    info = data_info()
    return Report(snapshot=snapshot, tool_version=__version__, data_version=info.data_version if info else "unknown",
                  data_origin=info.origin if info else None,
                  findings=tuple(findings or ()), checked=findings is not None)


def with_versions(report: Report, versions: Mapping[str, str]) -> Report:
    """``report`` with the tool and data versions a saved file recorded (those it has)."""
    if "tool_version" in versions:
        report = dataclasses.replace(report, tool_version=versions["tool_version"])
    if "data_version" in versions:
        report = dataclasses.replace(report, data_version=versions["data_version"])
    return report


def has_gpu(snapshot: Snapshot) -> bool:
    """Smoke tests need a GPU a driver answers for; without one they would only say so again."""
    return bool(snapshot.gpus) and snapshot.gpus_from_driver


def default_suites(snapshot: Snapshot) -> List[str]:
    """The driver suite, plus the suite of every framework the snapshot found (all when unknown)."""
    from cudadoctor.smoke import FRAMEWORK_OF, SUITES

    if snapshot.frameworks is None:
        return list(SUITES)
    present = {b.name for b in snapshot.frameworks}
    return [s for s in SUITES if s == "driver" or FRAMEWORK_OF.get(s) in present]


def with_quick_smoke(snapshot: Snapshot, python: Optional[str] = None) -> Snapshot:
    """The quick tier of the driver suite and of every installed framework's suite, each in its own
    child process of the target interpreter (docs/smoke.md); unchanged when no GPU answers."""
    if not has_gpu(snapshot):
        return snapshot
    from cudadoctor.smoke.runner import run_suites

    results = run_suites(default_suites(snapshot), python=snapshot.python.executable if snapshot.python else python,
                         tier="quick", snapshot=snapshot)
    return dataclasses.replace(snapshot, smoke=results)


class EarlySmoke:
    """The quick smoke suites of ``check``, started while the probes still run: as soon as the probes
    that choose them (:data:`PROBES`) have answered, every suite starts at once, one child each
    (docs/smoke.md), so that their imports and CUDA start overlap the rest of the probes and each
    other. :meth:`attach` waits for them; a run whose early start did not happen (no GPU, a probe
    that timed out) runs them then, as :func:`with_quick_smoke`."""

    PROBES = ("driver", "gpus", "python", "frameworks")

    def __init__(self, python: Optional[str] = None) -> None:
        self.python = python
        self._suites: Optional[Any] = None  # the start_suites context, entered
        self._started: Optional[List[Any]] = None
        self._decided = False

    def start(self, partial: Snapshot) -> None:
        """The callback of ``collect(when=...)``: the facts of :data:`PROBES`."""
        from cudadoctor.smoke.runner import start_suites

        self._decided = True
        if not has_gpu(partial):
            return
        python = partial.python.executable if partial.python and partial.python.executable else self.python
        suites = start_suites(default_suites(partial), python=python, tier="quick", snapshot=partial)
        self._started = suites.__enter__()
        self._suites = suites

    def attach(self, snapshot: Snapshot) -> Snapshot:
        """``snapshot`` with the suites' results (unchanged when no GPU answers)."""
        if not self._decided:
            return with_quick_smoke(snapshot, self.python)
        if self._started is None:
            return snapshot
        try:
            results = tuple(s.result() for s in self._started)
        finally:
            self.close()
        return dataclasses.replace(snapshot, smoke=results)

    def close(self) -> None:
        """Kill what still runs (an interrupted ``check``); idempotent."""
        suites, self._suites = self._suites, None
        if suites is not None:
            suites.__exit__(None, None, None)


def check_patterns(patterns: Sequence[str], label: str = "--redact") -> Tuple[str, ...]:
    """The extra redaction patterns, each a regular expression that needs at least a character."""
    for pattern in patterns:
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise CudadoctorError(f"{label} {pattern!r}: not a regular expression ({exc})") from None
        if compiled.search(""):
            raise CudadoctorError(f"{label} {pattern!r} matches the empty string", hint="give a pattern that needs a character")
    return tuple(patterns)


def finish_report(report: Report, *, redact: bool = True, keep_hostname: bool = False, patterns: Sequence[str] = (),
                  node: Optional[str] = None) -> Report:
    """The report as ``cudadoctor report`` writes it: redacted unless ``redact=False``, and naming
    its node (``node``, see cudadoctor.reports.node), by pseudonym when redacted and the hostname is not kept."""
    from cudadoctor.reports.node import pseudonym

    if redact:
        from cudadoctor.reports.redact import redact as redact_report
        from cudadoctor.reports.redact_rules import local_identity

        # whoever writes the report: its HOME and user names are private too, and the env probe
        # does not keep HOME (a HOME outside /home would be left in the paths otherwise)
        report, _ = redact_report(report, patterns, keep_hostname=keep_hostname, local=local_identity())
    shown = node if (not redact or keep_hostname or node is None) else pseudonym(node)
    return dataclasses.replace(report, node=shown)
