"""The pytest plugin (entry point ``cudadoctor``; docs/pytest.md).

pytest loads this module in every environment where cudadoctor is installed, so until the user
turns it on (``--cudadoctor``, ``-p cudadoctor``, any ``--cudadoctor-*`` option, or the ini option
``cudadoctor = true``) it only registers its options and the ``gpu`` marker, and imports nothing
of cudadoctor's. Turned on, it diagnoses the machine once per session (when pytest prints its
header), prints the verdict in one line, skips ``gpu``-marked tests this machine cannot run with
the diagnosis as the reason, and with ``--cudadoctor-strict`` stops a session on a broken stack.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import pytest

if TYPE_CHECKING:
    from cudadoctor.model import Report, Snapshot

STRICT_EXIT_CODE = 6  # pytest's own codes are 0-5; a CI job can tell "GPU stack broken" from "tests failed"
SNAPSHOT_KEY = "cudadoctor_snapshot"  # the controller's snapshot, handed to pytest-xdist workers
MARKER = ("gpu(count=1, min_cc=None, min_memory_gb=None, framework=None): needs a usable NVIDIA GPU; "
          "with cudadoctor's plugin on, skipped with the diagnosis when this machine has none (docs/pytest.md)")


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    _keep_asserts_as_written(pluginmanager)
    group = parser.getgroup("cudadoctor", "GPU stack diagnosis (cudadoctor)")
    group.addoption("--cudadoctor", action="store_true", default=False,
                    help="Diagnose the GPU stack once, print the verdict in the header, skip gpu-marked tests "
                         "this machine cannot run.")
    group.addoption("--cudadoctor-strict", action="store_true", default=False,
                    help=f"Stop the session (exit code {STRICT_EXIT_CODE}) when the GPU stack is broken.")
    group.addoption("--cudadoctor-snapshot", metavar="FILE", default=None,
                    help="Diagnose a saved `cudadoctor check --json` / report / snapshot instead of probing.")
    group.addoption("--cudadoctor-smoke", action="store_true", default=False,
                    help="Also run the quick smoke tests (a few seconds) when a GPU is present.")
    group.addoption("--cudadoctor-machine", metavar="DIR", default=None, help=argparse.SUPPRESS)
    parser.addini("cudadoctor", type="bool", default=False,
                  help="Turn cudadoctor's plugin on, as --cudadoctor does.")


def _keep_asserts_as_written(pluginmanager: pytest.PytestPluginManager) -> None:
    """pytest rewrites the asserts of every module of a distribution with a ``pytest11`` entry
    point, as if they were tests: for cudadoctor, some 100 modules recompiled (about 10 ms each)
    in every session where bytecode cannot be cached (read-only site-packages,
    PYTHONDONTWRITEBYTECODE). They are not tests, so they are unmarked. The hook's set is private
    API, hence the guards: without it, the cost comes back, nothing breaks."""
    marked = getattr(getattr(pluginmanager, "rewrite_hook", None), "_must_rewrite", None)
    if isinstance(marked, set):
        marked.discard("cudadoctor")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    if enabled(config):
        config.pluginmanager.register(CudadoctorPlugin(config), "cudadoctor-session")


def enabled(config: pytest.Config) -> bool:
    """On by an option, by ``-p cudadoctor`` (a no-op for pytest's loader once the entry point
    has loaded this module, so it is read from the command line), or by the ini option."""
    opt = config.option
    if opt.cudadoctor or opt.cudadoctor_strict or opt.cudadoctor_smoke or opt.cudadoctor_snapshot \
            or opt.cudadoctor_machine:
        return True
    named = list(getattr(opt, "plugins", None) or ()) + list(getattr(config.known_args_namespace, "plugins", None) or ())
    if any(p in ("cudadoctor", "cudadoctor.pytest_plugin") for p in named):
        return True
    return bool(config.getini("cudadoctor"))


class CudadoctorPlugin:
    """The session's diagnosis, taken once on first use, and the hooks that use it."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._report: Optional[Report] = None
        self._failure: Optional[str] = None
        self._source, self._saved = _check_source(config)

    # ------------------------------------------------------------------ the diagnosis

    def report(self) -> Optional[Report]:
        """The diagnosis (None when it could not be taken: then nothing is skipped)."""
        if self._report is None and self._failure is None:
            try:
                self._report = self._diagnose(self._snapshot())
            except Exception as exc:  # a bug in cudadoctor must not take the user's test session down
                self._failure = f"{type(exc).__name__}: {exc}"
        return self._report

    def _snapshot(self) -> Snapshot:
        from cudadoctor import api

        workerinput: Dict[str, Any] = getattr(self.config, "workerinput", {})
        if SNAPSHOT_KEY in workerinput:  # an xdist worker: the controller probed already
            from cudadoctor.model.serialize import snapshot_from_json

            return snapshot_from_json(workerinput[SNAPSHOT_KEY])
        if self._saved is not None:
            return self._saved
        if self._source:
            from cudadoctor.host.recorded import RecordedHost

            return api.collect(host=RecordedHost.load(self._source))
        snapshot = api.collect(python=sys.executable)  # the interpreter the tests run in
        return _with_smoke(snapshot) if self.config.option.cudadoctor_smoke else snapshot

    def _diagnose(self, snapshot: Snapshot) -> Report:
        from cudadoctor import api

        return api.make_report(snapshot, api.diagnose(snapshot))

    # ------------------------------------------------------------------ hooks

    def pytest_report_header(self, config: pytest.Config) -> List[str]:
        report = self.report()
        if report is None:
            return [f"cudadoctor: could not diagnose this machine ({self._failure}); no test is skipped by it"]
        from cudadoctor.model import Severity
        from cudadoctor.render.findings import MARK
        from cudadoctor.render.oneline import one_line

        lines = [f"cudadoctor: {one_line(report)}"]
        if config.option.verbose > 0:
            lines.extend(f"  {MARK[f.severity]} {f.title}  [{f.code}]" for f in report.findings
                         if f.severity is not Severity.OK)
        return lines

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        """--cudadoctor-strict: stop before collecting (after the header) on a broken stack."""
        if not self.config.option.cudadoctor_strict or hasattr(self.config, "workerinput"):
            return
        report = self.report()
        if report is None:
            return
        from cudadoctor.pytest_plugin.marker import blocking
        from cudadoctor.render.findings import fix_lines

        broken = blocking(report.findings)
        if broken:
            lines = [f"cudadoctor: the GPU stack is broken ({len(broken)} error{'s' if len(broken) > 1 else ''}):"]
            for f in broken:
                lines.append(f"  ✗ {f.title}  [{f.code}]")
                # every line: a cut after "pip uninstall -y torch ..." leaves no torch at all
                fixes = fix_lines(f)
                lines.extend(("    fix  " if i == 0 else "         ") + line for i, line in enumerate(fixes))
            lines.append("  details: cudadoctor check")
            pytest.exit("\n".join(lines), returncode=STRICT_EXIT_CODE)

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """A malformed ``gpu`` marker is an error where the test is collected, as a bad
        ``parametrize`` is, not a skip."""
        from cudadoctor.pytest_plugin.marker import RequirementError, parse_requirement

        try:
            parse_requirement([(m.args, m.kwargs) for m in metafunc.definition.iter_markers("gpu")])
            return
        except RequirementError as exc:
            problem = f"{metafunc.definition.name}: {exc}"
        pytest.fail(problem, pytrace=False)  # outside the except: no "during handling" chain

    def pytest_collection_modifyitems(self, items: List[pytest.Item]) -> None:
        """A ``gpu``-marked test this machine cannot run gets a skip mark with the reason (so
        pytest reports it at the test's own line)."""
        from cudadoctor.pytest_plugin.marker import RequirementError, parse_requirement, unmet

        for item in items:
            markers = list(item.iter_markers("gpu"))
            if not markers:
                continue
            try:
                requirement = parse_requirement([(m.args, m.kwargs) for m in markers])
            except RequirementError as exc:  # items pytest_generate_tests never saw (unittest, ...)
                raise pytest.UsageError(f"{item.nodeid}: {exc}") from None
            report = self.report()
            if report is None:
                return
            reason = unmet(requirement, report)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """pytest-xdist: the controller probes once and hands its snapshot to every worker."""
        report = self.report()
        if report is not None:
            from cudadoctor.model.serialize import snapshot_to_json

            node.workerinput[SNAPSHOT_KEY] = snapshot_to_json(report.snapshot, indent=None)


def _check_source(config: pytest.Config) -> Tuple[Optional[str], Optional[Snapshot]]:
    """The recorded machine folder or the saved snapshot to diagnose instead of this machine
    (neither: probe it). A bad file or folder is a usage error before anything runs."""
    snapshot, machine = config.option.cudadoctor_snapshot, config.option.cudadoctor_machine
    if snapshot and machine:
        raise pytest.UsageError("--cudadoctor-snapshot and --cudadoctor-machine: give one of them")
    if machine:
        from cudadoctor.errors import CudadoctorError
        from cudadoctor.host.recorded import check_machine

        try:
            check_machine(machine, "--cudadoctor-machine")
        except CudadoctorError as exc:
            raise pytest.UsageError(exc.message) from None
        return machine, None
    if snapshot:
        return None, _load_snapshot(snapshot)
    return None, None


def _load_snapshot(path: str) -> Snapshot:
    """A snapshot, a `check --json` / `report --format json` envelope, or a Markdown report."""
    from cudadoctor.api import read_json
    from cudadoctor.errors import CudadoctorError
    from cudadoctor.model.serialize import SnapshotError, snapshot_from_dict

    label = f"--cudadoctor-snapshot {path}"
    try:
        return snapshot_from_dict(read_json(path, label, markdown=True))
    except CudadoctorError as exc:
        raise pytest.UsageError(exc.message) from None
    except SnapshotError as exc:
        raise pytest.UsageError(f"{label}: {exc}") from None


def _with_smoke(snapshot: Snapshot) -> Snapshot:
    """The quick smoke tests, as `cudadoctor check` runs them: only where a driver lists GPUs."""
    from cudadoctor.reports.build import with_quick_smoke

    return with_quick_smoke(snapshot, sys.executable)
