"""The subset of YAML that compose files use, without a YAML library: block mappings and
sequences by indentation, one-line flow sequences and mappings (``[gpu]``, ``{a: b}``), quoted
and plain scalars, comments, block scalars (``|``, ``>``) read as text. Anchors are dropped,
aliases stay the text ``*name`` and merge keys (``<<``) are not followed, so no input makes the
tree larger than the file. Bounded: at most :data:`MAX_DEPTH` levels, never an exception.

Each value is a :class:`Node` with the line it starts on."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from cudadoctor.record import frozen

MAX_DEPTH = 64


@frozen
class Node:
    value: Any  # str | None | list[Node] | dict[str, Node]
    line: int

    def get(self, key: str) -> Optional["Node"]:
        return self.value.get(key) if isinstance(self.value, dict) else None

    def text(self) -> Optional[str]:
        return self.value if isinstance(self.value, str) else None

    def items(self) -> List["Node"]:
        return list(self.value) if isinstance(self.value, list) else []


def _strip_comment(text: str) -> str:
    if "#" not in text:
        return text.rstrip()
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'" and (i == 0 or text[i - 1] in " \t:[{,-"):
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text.rstrip()


def _lines(text: str) -> List[Tuple[int, int, str]]:
    """(line number, indent, content) of the meaningful lines of the first document."""
    out: List[Tuple[int, int, str]] = []
    for number, raw in enumerate(text.split("\n"), 1):  # \n only: the line numbers an editor shows
        raw = raw.rstrip("\r").replace("\t", "  ")
        content = _strip_comment(raw)
        if not content.strip():
            continue
        if content.strip() in ("---", "...") and len(content) - len(content.lstrip()) == 0:
            if out:
                break
            continue
        out.append((number, len(content) - len(content.lstrip()), content.strip()))
    return out


def scalar(text: str) -> Optional[str]:
    text = text.strip()
    if text.startswith("&"):  # an anchor: its name goes, its value stays
        text = text.partition(" ")[2].strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    return text


def _split_flow(body: str) -> List[str]:
    parts: List[str] = []
    cur: List[str] = []
    depth, quote = 0, ""
    for ch in body:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return parts


def _flow(text: str, line: int, depth: int) -> Node:
    """A one-line flow value, or a scalar."""
    text = text.strip()
    if depth < MAX_DEPTH and len(text) >= 2 and text[0] == "[" and text[-1] == "]":
        return Node([_flow(p, line, depth + 1) for p in _split_flow(text[1:-1])], line)
    if depth < MAX_DEPTH and len(text) >= 2 and text[0] == "{" and text[-1] == "}":
        out = {}
        for part in _split_flow(text[1:-1]):
            key, sep, value = part.partition(":")
            k = scalar(key)
            if sep and k is not None:
                out[k] = _flow(value, line, depth + 1)
        return Node(out, line)
    return Node(scalar(text), line)


def _key(content: str) -> Optional[Tuple[str, str]]:
    """'key: value' -> (key, value); None when the line is no mapping entry."""
    if content.startswith(("\"", "'")):
        q = content[0]
        end = content.find(q, 1)
        if end > 0 and content[end + 1:end + 2] == ":":
            return content[1:end], content[end + 2:]
        return None
    idx = content.find(": ")
    if content.endswith(":") and (idx < 0 or idx > len(content) - 2):
        idx = len(content) - 1
    if idx <= 0 or content.startswith(("[", "{")):
        return None
    return content[:idx], content[idx + 1:]


class _Parser:
    def __init__(self, text: str) -> None:
        self.lines = _lines(text)
        self.i = 0

    def block(self, indent: int, depth: int) -> Node:
        """The block starting at the current line, whose lines are indented at least ``indent``."""
        if self.i >= len(self.lines):
            return Node(None, 0)
        number, ind, content = self.lines[self.i]
        if ind < indent or depth >= MAX_DEPTH:
            self._skip(indent)
            return Node(None, number)
        if content.startswith("- ") or content == "-":
            return self.sequence(ind, depth)
        if _key(content) is not None:
            return self.mapping(ind, depth)
        self.i += 1
        return _flow(content, number, depth)

    def _skip(self, indent: int) -> None:
        while self.i < len(self.lines) and self.lines[self.i][1] >= indent:
            self.i += 1

    def value(self, rest: str, number: int, indent: int, depth: int) -> Node:
        """The value after 'key:' or '- ': on the same line, or the block below."""
        rest = rest.strip()
        if rest.startswith("&"):
            rest = rest.partition(" ")[2].strip()
        if rest in ("|", ">", "|-", ">-", "|+", ">+"):
            texts = []
            while self.i < len(self.lines) and self.lines[self.i][1] > indent:
                texts.append(self.lines[self.i][2])
                self.i += 1
            return Node("\n".join(texts), number)
        if rest:
            return _flow(rest, number, depth)
        if self.i < len(self.lines) and (self.lines[self.i][1] > indent or
                                         (self.lines[self.i][1] == indent and self.lines[self.i][2].startswith("-"))):
            inner = self.block(self.lines[self.i][1], depth + 1)
            return Node(inner.value, number)  # a nested block is at the line of its key
        return Node(None, number)

    def mapping(self, indent: int, depth: int) -> Node:
        out = {}
        first = self.lines[self.i][0]
        while self.i < len(self.lines):
            number, ind, content = self.lines[self.i]
            if ind != indent:
                if ind > indent:  # a line deeper than its mapping and no key's value: skip it
                    self.i += 1
                    continue
                break
            kv = _key(content)
            if kv is None:
                break
            self.i += 1
            key = scalar(kv[0]) or ""
            node = self.value(kv[1], number, indent, depth)
            if key != "<<":
                out[key] = node
        return Node(out, first)

    def sequence(self, indent: int, depth: int) -> Node:
        items = []
        first = self.lines[self.i][0]
        while self.i < len(self.lines):
            number, ind, content = self.lines[self.i]
            if ind != indent or not (content.startswith("- ") or content == "-"):
                if ind > indent:
                    self.i += 1
                    continue
                break
            rest = content[1:].strip()
            if rest and not rest.startswith(("[", "{")) and _key(rest) is not None:
                # '- key: value' starts a mapping whose keys sit at the column after '- '
                inner = ind + (len(content) - len(rest))
                self.lines[self.i] = (number, inner, rest)
                items.append(self.mapping(inner, depth + 1))
            else:
                self.i += 1
                items.append(self.value(rest, number, indent, depth + 1))
        return Node(items, first)


def parse(text: str) -> Node:
    """The first document of ``text`` as a tree of :class:`Node` s (a mapping at the top, or
    whatever the document is)."""
    parser = _Parser(text)
    if not parser.lines:
        return Node(None, 0)
    node = parser.block(parser.lines[0][1], 0)
    return node
