"""The one reader of saved documents: a report or snapshot as JSON, or the Markdown of
``cudadoctor report`` (which ends with the report's JSON in a fenced block), turned into a value and
then into the parts of a :class:`~cudadoctor.model.Report`.

``diagnose``, ``diff``, ``fleet summarize``, the API and the pytest plugin all read through here,
so a file reads the same way everywhere. Failures raise :class:`ReadError`, whose ``kind`` and
``detail`` let each command word the one line it prints.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Optional, Sequence, Tuple

from cudadoctor.model import Finding, Snapshot
from cudadoctor.model.serialize import ENVELOPE_FORMAT, from_jsonable, snapshot_from_dict

# A fenced ```json block of a Markdown report.
FENCE = re.compile(r"^(`{3,}|~{3,})[ \t]*json[ \t]*\r?\n(.*?)^\1[ \t]*\r?$", re.MULTILINE | re.DOTALL)


class ReadError(ValueError):
    """Why a document cannot be read: ``kind`` is ``encoding`` (not UTF-8), ``json`` (not JSON;
    ``detail`` has the line and column) or ``unusable`` (nested too deeply, a number too long)."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail


def decode(raw: bytes) -> str:
    """UTF-8 text; a byte-order mark is not an error."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ReadError("encoding") from None


def parse(text: str, markdown: bool = True) -> Any:
    """The JSON value of ``text``, or (``markdown``) the JSON block of a Markdown report."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        embedded = markdown_json(text) if markdown else None
        if embedded is not None:
            return embedded
        raise ReadError("json", f"line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except (RecursionError, ValueError) as exc:
        raise ReadError("unusable", type(exc).__name__) from None


def extract_json(markdown: str) -> Optional[str]:
    """The text of the last ```json block of a Markdown report that parses as a JSON object, or
    None: what a maintainer feeds to ``cudadoctor diagnose``."""
    for match in reversed(list(FENCE.finditer(markdown))):
        try:
            value = json.loads(match.group(2))
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return str(match.group(2))
    return None


def markdown_json(text: str) -> Any:
    """The JSON block of a Markdown report, parsed; None when there is none."""
    if "```json" not in text and "~~~" not in text:
        return None
    block = extract_json(text)
    return json.loads(block) if block is not None else None


def report_parts(data: Any, keep_findings: bool = True) -> Tuple[Snapshot, Optional[Tuple[Finding, ...]], Dict[str, str]]:
    """(the snapshot, the findings it carries or None, its tool and data versions) of a parsed
    snapshot or report document. Raises SnapshotError (from the strict loader) or TypeError."""
    snapshot = snapshot_from_dict(data)
    envelope = isinstance(data, dict) and data.get("format") == ENVELOPE_FORMAT
    recorded = data.get("findings") if envelope and keep_findings else None
    findings = None if recorded is None else tuple(
        from_jsonable(Finding, f, f"findings[{i}]") for i, f in enumerate(_list(recorded)))
    versions = {k: data[k] for k in ("tool_version", "data_version") if isinstance(data.get(k), str)}
    return snapshot, findings, versions


def _list(value: Any) -> Sequence[Any]:
    if not isinstance(value, list):
        from cudadoctor.model.serialize import SnapshotError

        raise SnapshotError("findings: expected a list")
    return value
