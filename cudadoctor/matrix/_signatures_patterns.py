"""Pattern analysis for the error signatures: a small parser of the regular-expression syntax
the patterns of ``errors.json`` use, for what :mod:`re` does not expose: the literals a match must
contain (:func:`keywords`), whether a match can span lines (:func:`spans_lines`), and the nested
quantifiers that cause catastrophic backtracking (:func:`pattern_problems`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Sequence, Tuple

MIN_KEYWORD = 4  # shorter keywords would let nearly every log through


class _Unsupported(Exception):
    pass


@dataclass
class _Node:
    kind: str  # lit | any | zero | group
    char: str = ""
    alts: List[List["_Node"]] = field(default_factory=list)
    lo: int = 1
    hi: Optional[int] = 1  # None: unbounded
    newline: bool = False  # an "any" that can match a line break

    @property
    def repeats(self) -> bool:
        return self.hi is None or self.hi > 1


_QUANT = re.compile(r"\{(\d*)(?:(,)(\d*))?\}")


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0

    def parse(self) -> List[List[_Node]]:
        alts = self._alts()
        if self.i != len(self.p):
            raise _Unsupported(f"unexpected {self.p[self.i]!r} at {self.i}")
        return alts

    def _peek(self, text: str) -> bool:
        return self.p.startswith(text, self.i)

    def _alts(self) -> List[List[_Node]]:
        alts = [self._seq()]
        while self._peek("|"):
            self.i += 1
            alts.append(self._seq())
        return alts

    def _seq(self) -> List[_Node]:
        items: List[_Node] = []
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            node = self._atom()
            node.lo, node.hi = self._quantifier()
            items.append(node)
        return items

    def _quantifier(self) -> Tuple[int, Optional[int]]:
        p, i = self.p, self.i
        if i >= len(p):
            return 1, 1
        lo: int
        hi: Optional[int]
        if p[i] in "*+?":
            lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[p[i]]
            self.i += 1
        else:
            m = _QUANT.match(p, i)
            if not m or (not m.group(1) and not m.group(2)):
                return 1, 1
            lo = int(m.group(1) or 0)
            hi = lo if not m.group(2) else (int(m.group(3)) if m.group(3) else None)
            self.i = m.end()
        if self._peek("?") or self._peek("+"):  # lazy, possessive
            self.i += 1
        return lo, hi

    def _atom(self) -> _Node:
        c = self.p[self.i]
        if c == "(":
            return self._group()
        if c == "[":
            return self._class()
        if c == "\\":
            return self._escape()
        self.i += 1
        if c == ".":
            return _Node("any")  # no DOTALL: never a line break
        if c in "^$":
            return _Node("zero")
        if c in "*+?":
            raise _Unsupported("quantifier without an atom")
        return _Node("lit", char=c, newline=c == "\n")

    def _class(self) -> _Node:
        p = self.p
        start = self.i + 1
        self.i += 1
        negated = self._peek("^")
        if negated:
            self.i += 1
        if self._peek("]"):
            self.i += 1
        while self.i < len(p) and p[self.i] != "]":
            self.i += 2 if p[self.i] == "\\" else 1
        if self.i >= len(p):
            raise _Unsupported("unterminated class")
        body = p[start + (1 if negated else 0):self.i]
        self.i += 1
        return _Node("any", newline=_class_has_newline(body) != negated)

    def _escape(self) -> _Node:
        p = self.p
        if self.i + 1 >= len(p):
            raise _Unsupported("trailing backslash")
        e = p[self.i + 1]
        self.i += 2
        if e in "dDwWsS":
            return _Node("any", newline=e in "sDW")
        if e in "bBAZ":
            return _Node("zero")
        if e.isdigit() or e in "xuUN":
            raise _Unsupported(f"escape \\{e}")
        char = _ESCAPES.get(e, e)
        return _Node("lit", char=char, newline=char == "\n")

    def _group(self) -> _Node:
        p = self.p
        self.i += 1
        kind = "group"
        if self._peek("?"):
            if self._peek("?:"):
                self.i += 2
            elif self._peek("?P<"):
                end = p.find(">", self.i)
                if end < 0:
                    raise _Unsupported("unterminated group name")
                self.i = end + 1
            elif self._peek("?=") or self._peek("?!"):
                self.i += 2
                kind = "zero"
            elif self._peek("?<=") or self._peek("?<!"):
                self.i += 3
                kind = "zero"
            else:
                raise _Unsupported(f"group {p[self.i:self.i + 3]!r}")
        alts = self._alts()
        if not self._peek(")"):
            raise _Unsupported("unterminated group")
        self.i += 1
        return _Node(kind, alts=alts)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}


def _class_has_newline(body: str) -> bool:
    """Whether the items of a character class (between [ or [^ and ]) include a line break;
    True when unsure."""
    j = 0
    while j < len(body):
        if body[j] == "\\":
            e = body[j + 1: j + 2]
            j += 2
            if e in ("s", "D", "W") or e == "" or e in "xuUN0123456789":
                return True
            if e in ("d", "w", "S"):
                continue
            low = _ESCAPES.get(e, e)
        else:
            low = body[j]
            j += 1
        high = low
        if body[j: j + 1] == "-" and j + 1 < len(body):
            end = body[j + 1]
            j += 2
            if end == "\\":
                e = body[j: j + 1]
                j += 1
                if e not in _ESCAPES and not (e and not e.isalnum()):
                    return True
                end = _ESCAPES.get(e, e)
            high = end
        if ord(low) <= ord("\n") <= ord(high):
            return True
    return False


def _flat(seq: Sequence[_Node]) -> Iterable[_Node]:
    """The items of a sequence, groups that match exactly once without alternatives inlined."""
    for node in seq:
        if node.kind == "group" and len(node.alts) == 1 and node.lo == node.hi == 1:
            yield from _flat(node.alts[0])
        else:
            yield node


def _score(literals: Sequence[str]) -> Tuple[int, int, int]:
    """Longer is rarer, up to a point; past it, one literal beats several."""
    shortest = min(len(s) for s in literals)
    return min(shortest, 8), -len(literals), shortest


def _seq_keywords(seq: Sequence[_Node]) -> Optional[List[str]]:
    """The best set of literals one of which every match of the sequence contains."""
    candidates: List[List[str]] = []
    run: List[str] = []

    def flush() -> None:
        if run:
            candidates.append(["".join(run)])
            run.clear()

    for node in _flat(seq):
        if node.kind == "lit":
            if node.lo >= 1:
                run.append(node.char.lower())
            if not node.lo == node.hi == 1:
                flush()
        elif node.kind == "zero":
            continue  # takes no characters: the literals either side are adjacent
        elif node.kind == "group" and node.lo >= 1:
            flush()
            inner = _alts_keywords(node.alts)
            if inner:
                candidates.append(inner)
        else:
            flush()
    flush()
    return max(candidates, key=_score) if candidates else None


def _alts_keywords(alts: Sequence[Sequence[_Node]]) -> Optional[List[str]]:
    out: List[str] = []
    for seq in alts:
        found = _seq_keywords(seq)
        if not found:
            return None
        out.extend(found)
    return sorted(set(out))


def keywords(pattern: str) -> Tuple[str, ...]:
    """Lower-case literals one of which is in every text the pattern matches (case-insensitive,
    ASCII), the longest such set; () when the pattern has none or cannot be analysed."""
    try:
        found = _alts_keywords(_Parser(pattern).parse())
    except (_Unsupported, IndexError):
        return ()
    return tuple(found) if found else ()


def spans_lines(pattern: str) -> bool:
    """Whether a match can hold a line break (True when the pattern cannot be analysed)."""
    try:
        tree = _Parser(pattern).parse()
    except (_Unsupported, IndexError):
        return True

    def walk(alts: Sequence[Sequence[_Node]]) -> bool:
        return any(node.newline or walk(node.alts) for seq in alts for node in seq)

    return walk(tree)


def pattern_problems(pattern: str) -> List[str]:
    """What makes a pattern unsafe or slow on a long log: nested quantifiers or alternatives
    under a repeat (catastrophic backtracking), no keyword, a syntax this module cannot read."""
    try:
        tree = _Parser(pattern).parse()
    except (_Unsupported, IndexError) as exc:
        return [f"pattern cannot be analysed ({exc}); use plain groups, classes and quantifiers"]
    problems: List[str] = []

    def walk(alts: Sequence[Sequence[_Node]], repeated: bool) -> None:
        for seq in alts:
            for node in seq:
                if repeated and node.lo != node.hi:
                    problems.append("nested quantifier (a repeated group holds a quantified item)")
                if node.alts:
                    if node.repeats and len(node.alts) > 1:
                        problems.append("alternatives inside a repeated group")
                    walk(node.alts, repeated or node.repeats)

    walk(tree, False)
    found = keywords(pattern)
    if not found:
        problems.append("no literal that every match contains: the pattern would run over the whole text")
    elif min(len(k) for k in found) < MIN_KEYWORD:
        problems.append(f"keyword {min(found, key=len)!r} is shorter than {MIN_KEYWORD} characters")
    return sorted(set(problems))
