"""``cudadoctor explain "ERROR TEXT"``: what an error message means, its possible causes most
likely first, and which of them holds on this machine (or on replayed facts)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Optional, Tuple

import click

from cudadoctor.errors import CudadoctorError, ExitCode
from cudadoctor.api import judge
from cudadoctor.diagnosis.explanation import Checked, explain_message
from cudadoctor.host import DEFAULT_TIMEOUT_S
from cudadoctor.model import Snapshot
from cudadoctor.model.printable import json_printable
from cudadoctor.model.reader import LOG_HEAD, LOG_MAX, LOG_TAIL, read_log
from cudadoctor.cli.output import terminal_color

if TYPE_CHECKING:
    from cudadoctor.diagnosis.intake import Intake
    from cudadoctor.matrix import Matrix

__all__ = ["Checked", "explain", "LOG_HEAD", "LOG_MAX", "LOG_TAIL", "read_log"]
@click.command()
@click.argument("text", nargs=-1, metavar="ERROR_TEXT|-")
@click.option("--no-check", is_flag=True, help="Only explain the message; do not look at this machine.")
@click.option("--facts", "facts_file", metavar="FILE", help="Judge the causes on facts from a bug report (docs/facts.md).")
@click.option("--snapshot", "snapshot_file", metavar="FILE", help="Judge the causes on a saved snapshot or report.")
@click.option("--machine", type=click.Path(file_okay=False), hidden=True, help="Replay a recorded machine folder.")
@click.option("--python", "python", metavar="PATH", help="Inspect the environment of this interpreter.")
@click.option("--timeout", type=click.FloatRange(min=0.1, max=600), default=DEFAULT_TIMEOUT_S, show_default=True,
              metavar="SECONDS", help="Time limit for each external command (nvidia-smi, nvcc, ...).")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable result.")
@click.option("--color/--no-color", default=None, help="Colour the text output (default: when a terminal).")
@click.option("-v", "--verbose", is_flag=True, help="Show notes and where each signature was seen.")
def explain(text: Tuple[str, ...], no_check: bool, facts_file: Optional[str], snapshot_file: Optional[str],
            machine: Optional[str], python: Optional[str], timeout: float, as_json: bool, color: Optional[bool],
            verbose: bool) -> int:
    """Explain an error message (quote it, or '-' to read it from stdin): its possible causes, most
    likely first, and which of them holds on this machine."""
    from cudadoctor.data.source import default_matrix

    message = _message(text)
    sources = [name for name, given in (("--no-check", no_check), ("--facts", facts_file),
                                        ("--snapshot", snapshot_file), ("--machine", machine)) if given]
    if len(sources) > 1:
        raise CudadoctorError(f"{sources[0]} and {sources[1]} cannot be used together")
    if python is not None and sources and sources[0] != "--machine":
        raise CudadoctorError(f"--python and {sources[0]} cannot be used together")
    matrix = default_matrix()
    if not (sources or python is not None):
        from cudadoctor.diagnosis.intake import read_text

        intake = read_text(message, matrix)
        message = intake.text  # made plain once (colours, log prefixes): what every matcher reads
        pasted = _pasted_machine(intake)
    else:
        pasted = None
    if pasted is not None:  # the text carries another machine's output: judge that machine, not this one
        checked: Optional[Checked] = pasted
    else:
        checked = None if no_check else _check(message, facts_file, snapshot_file, machine, python, timeout, matrix)
    result = explain_message(message, checked, matrix)
    if as_json:
        # the message is pasted text: json escapes its C0 controls, json_printable the C1 and bidi ones
        sys.stdout.write(json_printable(json.dumps(result.to_dict(), indent=2, ensure_ascii=False)) + "\n")
    else:
        use_color = terminal_color(color)
        sys.stdout.write(result.text(use_color, verbose))
    return ExitCode.INTERNAL if result.crashed else ExitCode.OK


# ---------------------------------------------------------------------------- input


def _message(text: Tuple[str, ...]) -> str:
    if text == ("-",):
        if sys.stdin is None:
            raise CudadoctorError("no standard input to read the error text from")
        if sys.stdin.isatty():
            sys.stderr.write("cudadoctor: reading the error text from standard input (end with Ctrl-D)\n")
        message, left_out = read_log(sys.stdin.buffer if hasattr(sys.stdin, "buffer") else None, sys.stdin)
        if left_out:
            sys.stderr.write(f"cudadoctor: a long log: read its first {LOG_HEAD >> 20} MiB and its last "
                             f"{LOG_TAIL >> 20} MiB ({left_out:,} bytes in between left out; line numbers count "
                             "the lines read)\n")
    else:
        message = " ".join(text)
    if not message.strip():
        raise CudadoctorError("no error text to explain",
                              hint="cudadoctor explain \"CUDA error: no kernel image is available...\"  "
                                   "(or pipe a log: ... 2>&1 | cudadoctor explain -)")
    return message


# Blocks that describe a machine (an error line, a path or a variable alone do not)
MACHINE_BLOCKS = frozenset({"collect_env", "nvidia_smi", "nvidia_smi_q", "nvidia_smi_l", "proc_version", "pip_list",
                            "pip_freeze", "conda_list", "jax_env", "cupy_config", "tf_build_info", "nvcc", "lspci",
                            "kernel_log", "uname", "os_release"})


def _pasted_machine(intake: "Intake") -> Optional[Checked]:
    """When the text holds a machine's own output (collect_env, nvidia-smi, a package list ...), the
    causes are judged on that machine, as the text describes it."""
    from cudadoctor.model.serialize import SnapshotError

    if not any(f.block in MACHINE_BLOCKS for f in intake.facts):
        return None
    try:
        snapshot = intake.snapshot()
    except SnapshotError:
        return None
    return judge(intake.text, snapshot, "paste", "the text given")


def _check(message: str, facts_file: Optional[str], snapshot_file: Optional[str], machine: Optional[str],
           python: Optional[str], timeout: float, matrix: Matrix) -> Checked:
    if facts_file or snapshot_file:
        kind, path = ("facts", facts_file) if facts_file else ("snapshot", snapshot_file)
        assert path is not None
        return judge(message, _load(kind, path), kind, path, matrix)
    from cudadoctor.api import checked_interpreter, collect
    from cudadoctor.host.recorded import replay

    host = replay(machine)
    snapshot = collect(python=checked_interpreter(python, host, "--python "), timeout=timeout, host=host)
    executable = snapshot.python.executable if snapshot.python else None
    if machine:
        return judge(message, snapshot, "recorded", machine, matrix)
    return judge(message, snapshot, "machine", executable or "this machine", matrix)


def _load(kind: str, path: str) -> Snapshot:
    from cudadoctor.api import read_json
    from cudadoctor.model.facts import snapshot_from_facts
    from cudadoctor.model.serialize import SnapshotError, snapshot_from_dict

    data = read_json(path, f"--{kind} {path}")
    try:
        return snapshot_from_facts(data) if kind == "facts" else snapshot_from_dict(data)
    except SnapshotError as exc:
        raise CudadoctorError(f"--{kind} {path}: {exc}") from None
