"""The versioned JSON envelope (keys pinned by tests/test_contract.py)."""

from __future__ import annotations

import json
from typing import Any, Dict, TextIO

from cudadoctor.model import Report
from cudadoctor.model.printable import json_printable
from cudadoctor.model.serialize import ENVELOPE_FORMAT, ENVELOPE_VERSION, snapshot_to_dict, to_jsonable

__all__ = ["ENVELOPE_VERSION", "envelope", "render_json"]  # the version lives with the reader, which refuses newer ones


def envelope(report: Report) -> Dict[str, Any]:
    return {
        "format": ENVELOPE_FORMAT,
        "format_version": ENVELOPE_VERSION,
        "tool_version": report.tool_version,
        "data_version": report.data_version,
        "data_origin": report.data_origin,
        "node": report.node,
        "snapshot": snapshot_to_dict(report.snapshot),
        "findings": to_jsonable(list(report.findings)) if report.checked else None,
        "redaction": report.redaction,
    }


def render_json(report: Report, stream: TextIO) -> None:
    # json escapes C0 controls itself; DEL, C1 and bidi controls it leaves raw
    stream.write(json_printable(json.dumps(envelope(report), indent=2, ensure_ascii=False)) + "\n")
