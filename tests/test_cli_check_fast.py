"""`cudadoctor check`'s fast path (cudadoctor/cli/check_run.py) takes the common command lines
without click: each gives what the click command gives, and anything else goes to click."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import List, Tuple

import pytest

from cudadoctor.cli.check_run import parse
from helpers import MACHINES

MACHINE = str(MACHINES / "laptop-rtx3060-driver470-torch25-cu124")
HEALTHY = str(MACHINES / "h200-driver580-torch211-cu130")


def _cudadoctor(args: List[str], fast: bool) -> Tuple[int, str, str]:
    """``cudadoctor ARGS`` in a fresh process, through the command's entry (fast path on) or
    through click alone."""
    entry = ("from cudadoctor.cli import main; main()" if fast else
             "import sys; from cudadoctor.cli.app import run; sys.exit(run(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", entry, *args], capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def _stable(out: str) -> str:
    """The output less what differs between two runs (when the snapshot was taken, probe times)."""
    try:
        doc = json.loads(out)
    except ValueError:
        return out
    doc["snapshot"].pop("created_at", None)
    doc["snapshot"].pop("probe_durations_s", None)
    return json.dumps(doc, sort_keys=True)


@pytest.mark.parametrize("args", [
    ["check", "--machine", MACHINE],
    ["check", "--machine", MACHINE, "--json"],
    ["check", f"--machine={HEALTHY}", "--no-smoke", "--format", "markdown"],
    ["check", "--machine", MACHINE, "-v", "--no-color", "--fail-on", "never"],
    ["check", "--machine", HEALTHY, "--format=line", "--fail-on=warning", "--timeout", "2"],
    ["check", "--machine", MACHINE, "--no-checks", "--json", "--format", "text"],
], ids=["text", "json", "markdown", "verbose-never", "line-warning", "no-checks"])
def test_the_fast_path_prints_what_click_prints(args: List[str]) -> None:
    assert parse(args[1:]) is not None  # the fast path takes it
    fast, slow = _cudadoctor(args, fast=True), _cudadoctor(args, fast=False)
    assert (fast[0], _stable(fast[1]), fast[2]) == (slow[0], _stable(slow[1]), slow[2])


@pytest.mark.parametrize("args", [
    ["--help"], ["--python", sys.executable], ["no-nvidia-gpu"], ["--jsn"], ["--format", "html"],
    ["--timeout", "0"], ["--timeout", "nan"], ["--fail-on"], ["--", "x"], ["--machine", __file__],
])
def test_anything_else_goes_to_click(args: List[str]) -> None:
    assert parse(args) is None


def test_a_usage_error_is_worded_by_click() -> None:
    code, _, err = _cudadoctor(["check", "--format", "html"], fast=True)
    assert code == 2 and "Invalid value for '--format'" in err


def test_errors_on_the_fast_path_are_one_line() -> None:
    code, out, err = _cudadoctor(["check", "--machine", "/nonexistent/machine"], fast=True)
    assert code == _cudadoctor(["check", "--machine", "/nonexistent/machine"], fast=False)[0]
    assert "Traceback" not in err and err.startswith("cudadoctor: ")


def test_check_does_not_import_click_on_the_fast_path() -> None:
    code = ("import sys; from cudadoctor.cli import main\n"
            "try:\n    main(['check', '--machine', %r, '--json'])\nexcept SystemExit:\n    pass\n"
            "print('click' in sys.modules)" % MACHINE)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.parametrize("args", [
    ["check", "--machine", MACHINE, "--json"],
    ["check", "--machine", HEALTHY, "--no-smoke", "--fail-on", "warning"],
], ids=["json", "text"])
def test_the_command_as_a_process_leaves_with_the_same_output_and_status(args: List[str]) -> None:
    # `python -m cudadoctor` leaves without the interpreter's teardown: the output must be whole
    proc = subprocess.run([sys.executable, "-m", "cudadoctor", *args], capture_output=True, text=True, timeout=120)
    code, out, err = _cudadoctor(args, fast=True)
    assert (proc.returncode, _stable(proc.stdout), proc.stderr) == (code, _stable(out), err)


def test_check_as_a_process_does_not_load_inspect() -> None:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "cudadoctor", "check", "--machine", MACHINE,
                           "--json"], capture_output=True, text=True, timeout=120)
    loaded = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "dataclasses" in loaded and "inspect" not in loaded


def test_a_module_made_lazy_loads_on_first_use() -> None:
    code = ("import sys; from cudadoctor.cli import lazy\n"
            "lazy('colorsys'); stand_in = sys.modules['colorsys']\n"
            "import colorsys\n"
            "print(type(sys.modules['colorsys']).__name__, round(colorsys.rgb_to_hsv(1, 0, 0)[2]),\n"
            "      type(sys.modules['colorsys']).__name__, stand_in.ONE_THIRD == colorsys.ONE_THIRD)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["Later", "1", "module", "True"]
