"""``cudadoctor report``: everything a bug report needs, redacted, in one paste (docs/reports.md).

It probes, runs the checks (and the quick smoke tests where a GPU answers, as ``check`` does),
redacts the Report (:mod:`cudadoctor.reports.redact`) and renders it: Markdown sized for an issue body,
text, or the JSON envelope. A report is not a verdict: it exits 0 once written, whatever it found.
"""

from __future__ import annotations

import os
import stat
import sys
from typing import Optional, Tuple

import click

from cudadoctor.errors import CudadoctorError, ExitCode
from cudadoctor.model.printable import printable
from cudadoctor.host import DEFAULT_TIMEOUT_S
from cudadoctor.reports.build import (
    REPORT_FORMATS,
    check_patterns,
    finish_report,
)
from cudadoctor.render import render_report

FORMATS = REPORT_FORMATS
SUFFIXES = {".md": "markdown", ".markdown": "markdown", ".txt": "text", ".json": "json"}


@click.command()
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="Output format (default: markdown, or text on a terminal; -o picks by its suffix).")
@click.option("-o", "--output", metavar="FILE",
              help="Write the report to FILE instead of stdout; {host} in FILE stands for the node's name "
                   "(its pseudonym when redacted), e.g. reports/{host}.json on every node of a cluster.")
@click.option("--smoke/--no-smoke", default=True, show_default=True,
              help="Run the quick smoke tests when a GPU answers (as `check` does).")
@click.option("--python", "python", metavar="PATH",
              help="Inspect the environment of this interpreter (default: the active venv or conda env).")
@click.option("--redact", "patterns", multiple=True, metavar="PATTERN",
              help="Also replace every match of this regular expression (repeatable).")
@click.option("--no-redact", is_flag=True, help="Keep usernames, hostnames, paths, addresses and secrets as they are.")
@click.option("--keep-hostname", is_flag=True,
              help="Redact, but keep the hostname and the node's name (fleets, clusters: for internal use).")
@click.option("--max-length", type=click.IntRange(min=2000), default=None, metavar="CHARS",
              help="Shorten the Markdown to at most this many characters (default 60,000: a GitHub issue "
                   "holds 65,536, and your own words need room).")
@click.option("--timeout", type=click.FloatRange(min=0.1, max=600), default=DEFAULT_TIMEOUT_S, show_default=True,
              metavar="SECONDS", help="Time limit for each external command (nvidia-smi, nvcc, ...).")
@click.option("--machine", type=click.Path(file_okay=False), hidden=True, help="Replay a recorded machine folder.")
def report(fmt: Optional[str], output: Optional[str], smoke: bool, python: Optional[str], patterns: Tuple[str, ...],
           no_redact: bool, keep_hostname: bool, max_length: Optional[int], timeout: float, machine: Optional[str]) -> int:
    """A report to paste into a bug tracker: verdict, key versions, findings, every fact, and the
    JSON a maintainer replays with `cudadoctor diagnose`. Redacted unless --no-redact."""
    from cudadoctor.api import checked_report
    from cudadoctor.reports.node import expand, node_name
    from cudadoctor.host.recorded import replay

    if no_redact and (patterns or keep_hostname):
        raise CudadoctorError("--no-redact keeps every value: it does not go with --redact or --keep-hostname")
    compiled = check_patterns(patterns)
    name = fmt or _default_format(output)
    checked = checked_report(python=python, timeout=timeout, host=replay(machine), smoke=smoke and machine is None,
                             option="--python ", strict_python=True)
    # the node is where the report is written, also when it replays a recorded machine
    result = finish_report(checked, redact=not no_redact, keep_hostname=keep_hostname, patterns=compiled,
                           node=node_name(checked.snapshot))
    color = output is None and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    text = render_report(result, name, color, max_length)
    if output is None:
        sys.stdout.write(text)
        return ExitCode.OK
    output = expand(output, result.node)
    through = _link_target(output)
    _write(output, text)
    how = "not redacted" if no_redact else "redacted"
    where = f"{output} (a symbolic link: the file written is {printable(through)})" if through else output
    sys.stderr.write(f"cudadoctor: wrote the report to {where} ({name}, {how}, {len(text):,} characters)\n")
    return ExitCode.OK


def _write(path: str, text: str) -> None:
    """Write atomically, creating the folder: on a cluster, a summary that reads the folder while
    nodes still write sees whole reports only. /dev/stdout, /dev/null, a terminal or a named pipe
    being read are written into as a shell's ``>`` would; a device or pipe is never replaced by a
    file, and a pipe nobody reads is an error rather than a hang."""
    from cudadoctor.host.files import write_output

    folder = os.path.dirname(os.path.abspath(path))
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise CudadoctorError(f"-o {path}: {folder} is not a folder")
    try:
        write_output(path, text, shared=True)
    except OSError as exc:
        raise CudadoctorError(f"-o {path}: {exc.strerror or exc}") from None


def _link_target(path: str) -> Optional[str]:
    """The file a symbolic link ``path`` leads to, when it is one to a file (written through, as a
    shell's ``>`` would, and said so); None for anything else (a path, /dev/stdout's terminal or pipe)."""
    if not os.path.islink(path):
        return None
    target = os.path.realpath(path)
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return target  # a link to a file not yet there: it is created
    return target if stat.S_ISREG(mode) else None


def _default_format(output: Optional[str]) -> str:
    if output is not None:
        return SUFFIXES.get(os.path.splitext(output)[1].lower(), "markdown")
    return "text" if sys.stdout.isatty() else "markdown"
