"""Text from outside, made safe to show on a terminal: control characters escaped.

A report, a bundle or an interpreter's stderr may come from a stranger. Printed raw, an escape
sequence in a GPU name or a smoke test's stderr can write the reader's clipboard (OSC 52,
``\\x1b]52;c;...\\x07``), clear the screen (``\\x1b[2J``), move the cursor over earlier lines (``\\r``,
backspace, the C1 CSI ``\\x9b``) or reorder what is shown (bidi overrides). Every renderer of
text and Markdown passes the data it shows through :func:`printable_tree` (or
:func:`printable` for one string), and JSON through :func:`json_printable`: the one place that
decides what a control character looks like (``\\x1b`` is shown as the four characters ``\\x1b``).
"""

from __future__ import annotations

import dataclasses
import enum
import re
from typing import Any, Dict, TypeVar

T = TypeVar("T")

# C0 controls, DEL, C1 controls (\x9b is a CSI on many terminals), the line and paragraph
# separators, the bidi embeddings, overrides and isolates ("Trojan Source", CVE-2021-42574), and
# lone surrogates: a byte that is not UTF-8 in a probed value (CUDA_HOME, PATH), which Python
# keeps as \udc80-\udcff and no stream can write; it is shown as the byte (\xff).
_OTHERS = "\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_CONTROL = re.compile(f"[\x00-\x1f{_OTHERS}]")
_CONTROL_BUT_LINES = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHERS}]")  # all but \t (9) and \n (10)
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
# Fields that hold several lines by nature (a stderr tail, an error message, a finding's why):
# their newlines and tabs are layout and stay; in every other field a newline could forge a line
# of the output ("✓ No problems found"), so it is escaped too.
MULTILINE_FIELDS = frozenset({"stderr_tail", "error_message", "why", "text", "stdout", "stderr", "message"})


def _escape(m: "re.Match[str]") -> str:
    char = m.group(0)
    named = _NAMED.get(char)
    if named:
        return named
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str, multiline: bool = False) -> str:
    """``text`` with every control character written as an escape (``\\x1b``, ``\\r``, ``\\x9b``);
    with ``multiline``, newlines and tabs stay (the text is shown as several lines)."""
    pattern = _CONTROL_BUT_LINES if multiline else _CONTROL
    return pattern.sub(_escape, text) if pattern.search(text) else text


def printable_tree(value: T, field: str = "") -> T:
    """A copy of ``value`` (dataclasses, tuples, lists, dicts and strings, any depth) whose every
    string went through :func:`printable`; newlines stay only in :data:`MULTILINE_FIELDS`.
    Unchanged parts are returned as they are (no copy when there is nothing to escape)."""
    result: Any = value
    if isinstance(value, str):
        result = printable(value, multiline=field in MULTILINE_FIELDS)
    elif isinstance(value, enum.Enum):
        pass
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes: Dict[str, Any] = {}
        for f in dataclasses.fields(value):
            if not f.init:
                continue
            old = getattr(value, f.name)
            new = printable_tree(old, f.name)
            if new is not old:
                changes[f.name] = new
        if changes:
            result = dataclasses.replace(value, **changes)
    elif isinstance(value, (tuple, list)):
        items = [printable_tree(v, field) for v in value]
        if any(new is not old for new, old in zip(items, value)):
            result = type(value)(items) if not hasattr(value, "_fields") else type(value)(*items)
    elif isinstance(value, dict):
        pairs = [(printable_tree(k, "") if isinstance(k, str) else k, printable_tree(v, field)) for k, v in value.items()]
        if any(nk is not k or nv is not v for (nk, nv), (k, v) in zip(pairs, value.items())):
            result = type(value)(pairs) if type(value) is not dict else dict(pairs)
    return result  # type: ignore[no-any-return]


_JSON_UNSAFE = re.compile(f"[{_OTHERS}]")


def json_printable(document: str) -> str:
    """A JSON document as ``json.dumps(..., ensure_ascii=False)`` wrote it, with the control
    characters it leaves raw (DEL, C1, separators, bidi controls; it escapes C0 itself) written
    as ``\\u`` escapes: the same JSON value, safe on a terminal."""
    if not _JSON_UNSAFE.search(document):
        return document
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", document)
