"""``cudadoctor explain "ERROR TEXT"``: what an error message means, its possible causes most
likely first, and which of them holds on this machine (or on replayed facts)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import click

from ..errors import CudadoctorError, ExitCode
from ..host import DEFAULT_TIMEOUT_S
from ..model import Finding, Severity, Snapshot

FORMAT = "cudadoctor.explain"
FORMAT_VERSION = 1
WRAP = 100
MAX_TEXT = 16 * 1024 * 1024  # characters of a log read; the matcher is fast, memory is the limit


@dataclass(frozen=True)
class Checked:
    """What the causes were judged against."""

    kind: str  # machine | recorded | facts | snapshot
    what: str  # the target interpreter, or the file or folder replayed
    snapshot: Snapshot
    findings: Tuple[Finding, ...]


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
    from ..matrix import default_matrix
    from ..checks.signature import causes

    message = _message(text)
    sources = [name for name, given in (("--no-check", no_check), ("--facts", facts_file),
                                        ("--snapshot", snapshot_file), ("--machine", machine)) if given]
    if len(sources) > 1:
        raise CudadoctorError(f"{sources[0]} and {sources[1]} cannot be used together")
    if python is not None and sources and sources[0] != "--machine":
        raise CudadoctorError(f"--python and {sources[0]} cannot be used together")
    matrix = default_matrix()
    matches = matrix.signatures.match(message)
    checked = None if no_check else _check(message, facts_file, snapshot_file, machine, python, timeout, matrix)
    judged = [causes(m.signature.categories, checked.findings if checked else None,
                     checked.snapshot if checked else None) for m in matches]
    if as_json:
        json.dump(_document(message, matches, judged, checked, matrix), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        use_color = color if color is not None else (sys.stdout.isatty() and "NO_COLOR" not in os.environ)
        sys.stdout.write("\n".join(_text(message, matches, judged, checked, matrix, use_color, verbose)) + "\n")
    crashed = checked is not None and any(f.severity is Severity.CRASHED for f in checked.findings)
    return ExitCode.INTERNAL if crashed else ExitCode.OK


# ---------------------------------------------------------------------------- input


def _message(text: Tuple[str, ...]) -> str:
    if text == ("-",):
        if sys.stdin is None:
            raise CudadoctorError("no standard input to read the error text from")
        if sys.stdin.isatty():
            sys.stderr.write("cudadoctor: reading the error text from standard input (end with Ctrl-D)\n")
        message = sys.stdin.read(MAX_TEXT)
    else:
        message = " ".join(text)
    if not message.strip():
        raise CudadoctorError("no error text to explain",
                              hint="cudadoctor explain \"CUDA error: no kernel image is available...\"  "
                                   "(or pipe a log: ... 2>&1 | cudadoctor explain -)")
    return message


def _check(message: str, facts_file: Optional[str], snapshot_file: Optional[str], machine: Optional[str],
           python: Optional[str], timeout: float, matrix: Any) -> Checked:
    from dataclasses import replace

    from ..checks import run_checks

    if facts_file or snapshot_file:
        kind, path = ("facts", facts_file) if facts_file else ("snapshot", snapshot_file)
        assert path is not None
        snapshot = _load(kind, path)
        what = path
    else:
        from ..api import collect
        from .check import _host

        if python is not None and machine is None and not os.path.exists(python):
            raise CudadoctorError(f"--python {python}: no such file", hint="give the path of a Python interpreter")
        snapshot = collect(python=python, timeout=timeout, host=_host(machine))
        kind = "recorded" if machine else "machine"
        executable = snapshot.python.executable if snapshot.python else None
        what = machine if machine else (executable or "this machine")
    snapshot = replace(snapshot, error_message=message)
    return Checked(kind, what, snapshot, tuple(run_checks(snapshot, matrix)))


def _load(kind: str, path: str) -> Snapshot:
    from ..facts import snapshot_from_facts
    from ..serialize import SnapshotError, snapshot_from_dict

    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise CudadoctorError(f"--{kind} {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CudadoctorError(f"--{kind} {path}: not a UTF-8 text file") from None
    except json.JSONDecodeError as exc:
        raise CudadoctorError(f"--{kind} {path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except (RecursionError, ValueError):
        raise CudadoctorError(f"--{kind} {path}: not usable JSON") from None
    try:
        return snapshot_from_facts(data) if kind == "facts" else snapshot_from_dict(data)
    except SnapshotError as exc:
        raise CudadoctorError(f"--{kind} {path}: {exc}") from None


# ---------------------------------------------------------------------------- JSON


def _document(message: str, matches: Sequence[Any], judged: Sequence[Sequence[Any]], checked: Optional[Checked],
              matrix: Any) -> Dict[str, Any]:
    from .. import __version__
    from ..serialize import to_jsonable

    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "tool_version": __version__,
        "data_version": matrix.data_version,
        "signatures_known": len(matrix.signatures.signatures),
        "matched": bool(matches),
        "matches": [{
            "signature": m.signature.id,
            "line_number": m.line_number,
            "line": m.line,
            "text": m.text,
            "groups": dict(m.groups),
            "specificity": m.signature.specificity,
            "explanation": m.signature.explanation,
            "verify": list(m.signature.verify),
            "frameworks": list(m.signature.frameworks),
            "seen_in": list(m.signature.seen_in),
            "source": m.signature.source,
            "causes": to_jsonable(list(found)),
        } for m, found in zip(matches, judged)],
        "checked": {"kind": checked.kind, "what": checked.what} if checked else None,
        "findings": to_jsonable(list(checked.findings)) if checked else None,
    }


# ---------------------------------------------------------------------------- text

VERDICT_WORDS = {"holds": "holds here", "ruled_out": "not the cause here", "cannot_tell": "cannot tell"}


def _text(message: str, matches: Sequence[Any], judged: Sequence[Sequence[Any]], checked: Optional[Checked],
          matrix: Any, color: bool, verbose: bool) -> List[str]:
    from .. import __version__
    from ..checks.signature import CODES
    from ..render.text import BOLD, DIM, GREEN, RED, Style, findings_block

    style = Style(color)
    verdict_color = {"holds": RED, "ruled_out": GREEN, "cannot_tell": DIM}
    out = [style(f"cudadoctor {__version__}", BOLD) + f" · data {matrix.data_version} · explain", ""]
    if not matches:
        first = next(line.strip() for line in message.splitlines() if line.strip())
        out.append(style(f"No known error signature matches this text "
                         f"({len(matrix.signatures.signatures)} signatures known).", BOLD))
        out.extend(_wrap("", f"It begins: {first[:200]}"))
        out.extend(_wrap("", "Give the complete output, from the first error line on: the line naming the CUDA "
                             "error is often not the last one."))
        out.append("")
    for n, (m, found) in enumerate(zip(matches, judged), 1):
        sig = m.signature
        count = f" {n} of {len(matches)}" if len(matches) > 1 else ""
        out.append(style(f"Known error{count}: {sig.id}", BOLD) + style(f"  (line {m.line_number})", DIM))
        out.extend(_wrap("", " ".join(m.line.split())[:300]))
        out.extend(_wrap("what", sig.explanation))
        out.append("  possible causes, most likely first:")
        for i, cause in enumerate(found, 1):
            out.append(f"    {i}. {cause.label}")
            if cause.verdict != "not_checked":
                words = style(VERDICT_WORDS[cause.verdict], verdict_color[cause.verdict], BOLD)
                out.extend(_wrap("", f"{words}: {cause.reason}", indent=7))
        out.append("  verify:")
        out.extend(line for v in sig.verify for line in _wrap("", f"- {v}", indent=4))
        if verbose:
            out.extend(_wrap("seen", ", ".join(sig.seen_in)))
        out.append("")
    if checked is None:
        out.append(style("Not checked against this machine (--no-check).", DIM))
        return out
    where = {"machine": f"this machine (target {checked.what})", "recorded": f"the recorded machine {checked.what}",
             "facts": f"the facts in {checked.what}", "snapshot": f"the snapshot in {checked.what}"}[checked.kind]
    out.append(style(f"Checked against {where}:", BOLD))
    others = [f for f in checked.findings if f.code not in CODES]
    out.extend(findings_block(others, style, verbose))
    return out


def _wrap(label: str, text: str, indent: int = 2) -> List[str]:
    head = " " * indent + (f"{label:<5} " if label else "")
    lines = textwrap.wrap(text, WRAP - len(head), break_long_words=False, break_on_hyphens=False) or [""]
    return [head + lines[0]] + [" " * len(head) + line for line in lines[1:]]
