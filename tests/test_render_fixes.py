"""A fix is shown whole wherever it is shown (issue 16, item 18): following a fix cut after
``pip uninstall -y torch ...`` leaves no torch at all."""

from __future__ import annotations

import io

import pytest

from cudadoctor.api import diagnose, make_report
from cudadoctor.render.markdown import render_markdown
from cudadoctor.render.report_fit import fit_markdown
from cudadoctor.render.text import render_text
from helpers import MACHINES, snapshot_of

RECORDED = sorted(p.name for p in MACHINES.iterdir() if (p / "machine.json").is_file())


@pytest.mark.parametrize("machine", RECORDED)
def test_every_fix_command_is_in_every_view(machine: str) -> None:
    snap = snapshot_of(machine)
    report = make_report(snap, diagnose(snap))
    # notes (info) are listed by title in the report, their fix in `check -v`: the fixes of problems must be whole
    commands = [c.run for f in report.findings if f.fix and f.severity.value in ("error", "warning") for c in f.fix.commands]
    views = {"report": fit_markdown(report)[0]}
    for name, render in (("text", render_text), ("markdown", render_markdown)):
        stream = io.StringIO()
        render(report, stream)
        views[name] = stream.getvalue()
    for name, text in views.items():
        missing = [c for c in commands if c not in text]
        assert missing == [], (name, missing)
