"""The body of ``cudadoctor check``, and its fast path.

``check`` is the command people run most, often in a loop on many nodes, and importing click costs
about a sixth of its run. So :func:`fast_check` takes the common command lines itself, before
click loads (as ``run`` does): flags, ``--format``, ``--fail-on``, ``--timeout`` and the hidden
``--machine``. Anything else (``--help``, ``--python``, check names, a misspelt option, a bad
value) returns None and goes to click, which parses and words errors as it always does. Both
paths run :func:`run_check`, so they print the same thing; tests/test_cli_check_fast.py compares them.
"""

from __future__ import annotations

import os
import sys

from cudadoctor.cli.output import FAIL_ON, FORMATS, emit, exit_code
from cudadoctor.errors import CudadoctorError, ExitCode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Sequence, Tuple, Union

    Value = Union[bool, str, float, None]

FLAGS = {"--json": ("as_json", True), "--no-smoke": ("no_smoke", True), "--no-checks": ("no_checks", True),
         "-v": ("verbose", True), "--verbose": ("verbose", True), "--color": ("color", True),
         "--no-color": ("color", False)}
CHOICES = {"--format": ("fmt", FORMATS), "--fail-on": ("fail_on", FAIL_ON)}
TIMEOUT_RANGE = (0.1, 600)  # check's --timeout bounds, for click's FloatRange and the fast path alike


def run_check(checks: "Tuple[str, ...]" = (), list_checks: bool = False, python: "Optional[str]" = None,
              timeout: float = 5.0, no_checks: bool = False, no_smoke: bool = False, machine: "Optional[str]" = None,
              as_json: bool = False, fmt: "Optional[str]" = None, verbose: bool = False,
              color: "Optional[bool]" = None, fail_on: str = "error") -> int:
    """Probe the driver, GPUs, toolkits, libraries and framework builds, and say what is wrong."""
    from cudadoctor.api import checked_report

    if list_checks:
        return _list()
    known_checks(checks)
    from cudadoctor.host.recorded import replay

    report = checked_report(python=python, timeout=timeout, host=replay(machine), only=checks or None,
                            checks=not no_checks, smoke=not (no_smoke or no_checks or checks or machine),
                            option="--python ", strict_python=True)
    emit(report, fmt, as_json, verbose, color)
    return exit_code(report.findings, fail_on)


def fast_check(args: "Sequence[str]") -> "Optional[int]":
    """The exit code of ``cudadoctor check ARGS`` run without click, or None when click must parse."""
    options = parse(args)
    if options is None:
        return None
    from cudadoctor.cli.handler import guarded

    return guarded(lambda: run_check(**options), ["check", *args])  # type: ignore[arg-type]


def parse(args: "Sequence[str]") -> "Optional[Dict[str, Value]]":
    """``check``'s options from ``args`` when every one is of the common kinds, else None."""
    from cudadoctor.host import DEFAULT_TIMEOUT_S

    options: "Dict[str, Value]" = {"timeout": DEFAULT_TIMEOUT_S}
    rest: "List[str]" = list(args)
    while rest:
        arg = rest.pop(0)
        name, eq, inline = arg.partition("=")
        if arg in FLAGS:
            key, value = FLAGS[arg]
            options[key] = value
            continue
        if name not in CHOICES and name not in ("--timeout", "--machine"):
            return None
        if eq:
            value_text = inline
        elif rest:
            value_text = rest.pop(0)
        else:
            return None
        if name in CHOICES:
            key, allowed = CHOICES[name]
            if value_text not in allowed:
                return None
            options[key] = value_text
        elif name == "--timeout":
            seconds = _seconds(value_text)
            if seconds is None:
                return None
            options["timeout"] = seconds
        elif os.path.isfile(value_text):  # click's Path(file_okay=False) words that error
            return None
        else:
            options["machine"] = value_text
    return options


def _seconds(text: str) -> "Optional[float]":
    try:
        value = float(text)
    except ValueError:
        return None
    low, high = TIMEOUT_RANGE
    return value if low <= value <= high else None


def _list() -> int:
    from cudadoctor.checks import CHECKS

    for c in CHECKS:
        sys.stdout.write(f"{c.name:<26} {c.summary}\n")
        sys.stdout.write(f"{'':<26} codes: {', '.join(c.codes)}\n")
    return ExitCode.OK


def known_checks(names: "Tuple[str, ...]") -> None:
    """A usage error for a name that is neither a check nor a finding code."""
    if not names:
        return
    from cudadoctor.checks import CHECKS, all_codes

    known = set(all_codes()) | {c.name for c in CHECKS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise CudadoctorError(f"no check or finding code {unknown[0]!r}", hint="cudadoctor check --list")
