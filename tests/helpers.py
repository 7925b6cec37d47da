"""Helpers shared by the test modules (fixtures live in conftest.py): where the recorded machines
are, the CLI run in-process, and a recorded machine's Snapshot."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

from cudadoctor.cli.app import run
from cudadoctor.host.recorded import RecordedHost
from cudadoctor.model import Snapshot
from cudadoctor.probes import collect

HERE = Path(__file__).resolve().parent
MACHINES = HERE / "machines"
MACHINES_DIR = str(MACHINES)

_snapshots: Dict[str, Snapshot] = {}


def cli(args: List[str], capsys: pytest.CaptureFixture[str]) -> Tuple[int, str, str]:
    """``cudadoctor ARGS`` run in-process: (exit code, stdout, stderr)."""
    code = run(args)
    out, err = capsys.readouterr()
    return code, out, err


def snapshot_of(name: str) -> Snapshot:
    """The Snapshot of recorded machine ``name`` (probed once per test session: it is frozen)."""
    if name not in _snapshots:
        _snapshots[name] = collect(RecordedHost.load(str(MACHINES / name)))
    return _snapshots[name]


def edited_machine(name: str, change: Callable[[Dict[str, Any]], None] = lambda d: None) -> Snapshot:
    """Recorded machine ``name`` after ``change`` edited a copy of its recording."""
    folder = MACHINES / name
    data = copy.deepcopy(json.loads((folder / "machine.json").read_text()))
    change(data)
    return collect(RecordedHost(data, str(folder / "fs")))


_right: Optional[List[Tuple[str, str, str, str, Tuple[str, ...]]]] = None


def corpus_right_today() -> List[Tuple[str, str, str, str, Tuple[str, ...]]]:
    """(slug, confirmed category, paste text, first verdict, asks) of each case of the reports
    corpus (tests/corpus/reports) whose first ranked cause is its confirmed category today: tests
    of what carries the diagnosis (triage) pick among them, so that the diagnosis may improve
    without their knowing its words."""
    global _right
    if _right is None:
        from cudadoctor.api import diagnose_text

        _right = []
        for folder in sorted((HERE / "corpus" / "reports").iterdir()):
            case = json.loads((folder / "case.json").read_text(encoding="utf-8"))
            text = (folder / "paste.md").read_text(encoding="utf-8", errors="replace")
            d = diagnose_text(text, name=folder.name)
            if d.top is not None and d.top.category.value == case["category"]:
                _right.append((folder.name, case["category"], text, d.top.verdict, d.asks))
    return _right
