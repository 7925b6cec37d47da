"""A reader for the small subset of YAML that action.yml and the CI snippets of docs/ci.md use.

PyYAML is not a dependency of cudadoctor, and the files it would read are ours, so this reads
exactly what they need and refuses everything else with the line number: a later edit that steps
outside the subset fails loudly in tests/test_action.py instead of being misread.

The subset:

- block mappings (``key: value``, one key per line, no duplicate keys) and block sequences
  (``- item``, ``- key: value`` starting a mapping);
- scalars are strings, as GitHub passes every input: plain (one line, no ``: `` and no `` #``),
  ``'single'`` (``''`` for a quote) and ``"double"`` (escapes ``\\\\ \\" \\n \\t`` only) quoted, on
  one line;
- literal block scalars ``|`` (one final newline kept) and ``|-`` (none kept);
- one-line flow sequences of scalars: ``[self-hosted, gpu]``;
- full-line comments, and ``#`` comments after a value.

Outside it (an error): tabs in indentation, empty values (write ``""``), anchors, aliases, tags,
flow mappings, folded scalars (``>``), ``|+`` and indentation indicators, multi-line plain or
quoted scalars, complex keys, several documents.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple, Union

Value = Union[str, List["Value"], Dict[str, "Value"]]

_KEY = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.\-/]*)[ ]*:(?:[ ]+|$)")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t"}
_FORBIDDEN_START = "&*!{}>%@`?,]"


class YamlSubsetError(ValueError):
    """The text is not in the subset this reader accepts (or is not valid YAML at all)."""


def load(text: str) -> Dict[str, Value]:
    """The top-level mapping of ``text``; :class:`YamlSubsetError` names the line it could not read."""
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        stripped = line.lstrip(" ")
        if stripped.startswith("\t"):
            raise YamlSubsetError(f"line {number}: a tab in the indentation")
        if line.rstrip() in ("---", "...") or line.startswith("%"):
            raise YamlSubsetError(f"line {number}: document markers and directives are outside the subset")
    reader = _Reader(lines)
    start = reader.next_significant(0)
    if start is None:
        raise YamlSubsetError("line 1: the document is empty")
    if reader.indent(start) != 0:
        raise YamlSubsetError(f"line {start + 1}: the document must start at column 0")
    value, end = reader.block(start, 0)
    rest = reader.next_significant(end)
    if rest is not None:
        raise YamlSubsetError(f"line {rest + 1}: unexpected indentation")
    if not isinstance(value, dict):
        raise YamlSubsetError(f"line {start + 1}: the document must be a mapping")
    return value


class _Reader:
    def __init__(self, lines: List[str]) -> None:
        self.lines = lines

    def indent(self, i: int) -> int:
        return len(self.lines[i]) - len(self.lines[i].lstrip(" "))

    def significant(self, i: int) -> bool:
        stripped = self.lines[i].strip()
        return bool(stripped) and not stripped.startswith("#")

    def next_significant(self, i: int) -> Optional[int]:
        while i < len(self.lines):
            if self.significant(i):
                return i
            i += 1
        return None

    def block(self, i: int, indent: int) -> Tuple[Value, int]:
        """The mapping or sequence whose first line is ``i``, at column ``indent``."""
        content = self.lines[i][indent:]
        if content == "-" or content.startswith("- "):
            return self.sequence(i, indent)
        return self.mapping(i, indent)

    def mapping(self, i: int, indent: int) -> Tuple[Dict[str, Value], int]:
        out: Dict[str, Value] = {}
        at: Optional[int] = i
        while at is not None and self.indent(at) == indent:
            content = self.lines[at][indent:]
            if content.startswith("-"):
                break
            match = _KEY.match(content)
            if match is None:
                raise YamlSubsetError(f"line {at + 1}: expected 'key: value'")
            key = match.group(1)
            if key in out:
                raise YamlSubsetError(f"line {at + 1}: duplicate key {key!r}")
            rest = content[match.end():]
            if rest.strip() == "" or rest.lstrip().startswith("#"):
                value, end = self.nested(at, indent)
            else:
                value, end = self.scalar(rest, at, indent)
            out[key] = value
            at = self.next_significant(end)
        if at is not None and self.indent(at) > indent:
            raise YamlSubsetError(f"line {at + 1}: unexpected indentation (a multi-line plain scalar?)")
        return out, at if at is not None else len(self.lines)

    def nested(self, at: int, indent: int) -> Tuple[Value, int]:
        """The block under ``key:``: more indented, or a sequence at the key's own column."""
        child = self.next_significant(at + 1)
        if child is not None:
            child_indent = self.indent(child)
            content = self.lines[child][child_indent:]
            is_item = content == "-" or content.startswith("- ")
            if child_indent > indent or (child_indent == indent and is_item):
                return self.block(child, child_indent)
        raise YamlSubsetError(f"line {at + 1}: an empty value is outside the subset (write \"\")")

    def sequence(self, i: int, indent: int) -> Tuple[List[Value], int]:
        out: List[Value] = []
        at: Optional[int] = i
        while at is not None and self.indent(at) == indent:
            content = self.lines[at][indent:]
            if not (content == "-" or content.startswith("- ")):
                break
            after = content[1:]
            item = after.lstrip(" ")
            if item == "" or item.startswith("#"):
                raise YamlSubsetError(f"line {at + 1}: an empty sequence item is outside the subset")
            column = indent + 1 + len(after) - len(item)
            value: Value
            if _KEY.match(item):
                # '- key: value' opens a mapping whose keys sit at the column of 'key'
                saved = self.lines[at]
                self.lines[at] = " " * column + item
                try:
                    value, end = self.mapping(at, column)
                finally:
                    self.lines[at] = saved
            else:
                value, end = self.scalar(item, at, indent)
            out.append(value)
            at = self.next_significant(end)
        if at is not None and self.indent(at) > indent:
            raise YamlSubsetError(f"line {at + 1}: unexpected indentation")
        return out, at if at is not None else len(self.lines)

    def scalar(self, text: str, at: int, parent: int) -> Tuple[Value, int]:
        """A value written after ``key:`` or ``-`` on line ``at``; returns it and the next line."""
        where = f"line {at + 1}"
        if text.startswith("|"):
            return self.literal(text, at, parent)
        if text.startswith("["):
            return _flow_sequence(text, where), at + 1
        value, rest = _inline_scalar(text, where)
        _only_comment(rest, where)
        return value, at + 1

    def literal(self, header: str, at: int, parent: int) -> Tuple[str, int]:
        indicator = header.split("#", 1)[0].strip()
        if indicator not in ("|", "|-"):
            raise YamlSubsetError(f"line {at + 1}: only '|' and '|-' block scalars are in the subset")
        body: List[str] = []
        block_indent: Optional[int] = None
        i = at + 1
        while i < len(self.lines):
            line = self.lines[i]
            if line.strip() == "":
                body.append("")
                i += 1
                continue
            indent = self.indent(i)
            if block_indent is None:
                if indent <= parent:
                    break
                block_indent = indent
            if indent < block_indent:
                if indent > parent and self.significant(i):
                    raise YamlSubsetError(f"line {i + 1}: less indented than the block scalar it is in")
                break
            body.append(line[block_indent:])
            i += 1
        while body and body[-1] == "":
            body.pop()
        if block_indent is None:
            raise YamlSubsetError(f"line {at + 1}: an empty block scalar")
        text = "\n".join(body)
        return (text + "\n" if indicator == "|" else text), i


def _inline_scalar(text: str, where: str) -> Tuple[str, str]:
    """A quoted or plain scalar at the start of ``text``; returns it and what follows it."""
    if text.startswith("'"):
        out, i = [], 1
        while i < len(text):
            if text[i] == "'":
                if text[i + 1:i + 2] == "'":
                    out.append("'")
                    i += 2
                    continue
                return "".join(out), text[i + 1:]
            out.append(text[i])
            i += 1
        raise YamlSubsetError(f"{where}: a single-quoted string must end on its line")
    if text.startswith('"'):
        out, i = [], 1
        while i < len(text):
            char = text[i]
            if char == "\\":
                escape = text[i + 1:i + 2]
                if escape not in _ESCAPES:
                    raise YamlSubsetError(f"{where}: the escape \\{escape} is outside the subset")
                out.append(_ESCAPES[escape])
                i += 2
                continue
            if char == '"':
                return "".join(out), text[i + 1:]
            out.append(char)
            i += 1
        raise YamlSubsetError(f"{where}: a double-quoted string must end on its line")
    if text[0] in _FORBIDDEN_START or text.startswith(("- ", "|", "[")):
        raise YamlSubsetError(f"{where}: {text[0]!r} starts a YAML feature outside the subset")
    value = re.split(r"[ ]#", text, maxsplit=1)[0].rstrip()
    if ": " in value or value.endswith(":"):
        raise YamlSubsetError(f"{where}: ': ' in a plain scalar (quote it)")
    return value, text[len(value):]


def _only_comment(rest: str, where: str) -> None:
    stripped = rest.strip()
    if stripped and not stripped.startswith("#"):
        raise YamlSubsetError(f"{where}: unexpected text after the value: {stripped!r}")
    if stripped and not rest.startswith((" ", "\t")):
        raise YamlSubsetError(f"{where}: a comment needs a space before '#'")


def _flow_sequence(text: str, where: str) -> List[Value]:
    """``[a, 'b', "c"]`` on one line: scalars only."""
    items: List[Value] = []
    rest = text[1:].lstrip(" ")
    if rest.startswith("]"):
        _only_comment(rest[1:], where)
        return items
    while True:
        if rest[:1] in ("'", '"'):
            value, rest = _inline_scalar(rest, where)
        else:
            match = re.match(r"[^,\[\]{}#'\"]+", rest)
            if match is None:
                raise YamlSubsetError(f"{where}: only scalars are in the subset's flow sequences")
            value, rest = match.group(0).strip(), rest[match.end():]
            if not value or value[0] in _FORBIDDEN_START or ": " in value:
                raise YamlSubsetError(f"{where}: {value!r} in a flow sequence is outside the subset")
        items.append(value)
        rest = rest.lstrip(" ")
        if rest.startswith(","):
            rest = rest[1:].lstrip(" ")
            continue
        if rest.startswith("]"):
            _only_comment(rest[1:], where)
            return items
        raise YamlSubsetError(f"{where}: a flow sequence must end on its line")
