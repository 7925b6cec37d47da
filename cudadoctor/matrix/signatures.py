"""Error signatures: the messages users see (tracebacks, warnings, kernel and installer logs),
each mapped to the root-cause categories it points to, most likely first.

:meth:`SignatureData.match` finds every signature in a text, most specific first. Patterns are
Python regular expressions, compiled once, case-insensitively, with ASCII classes. Two kinds of
matches overlap and the data says which wins through ``specificity`` (higher first):

- 30: one program's message about one condition ("Torch not compiled with CUDA enabled");
- 20: a message many programs print (CUDA error strings, the dynamic loader, NVML, the kernel);
- 10: a wrapper or a summary whose cause is another message: "Unexpected error from
  cudaGetDeviceCount() ... Error 804: forward compatibility was attempted on non supported HW"
  matches both the PyTorch wrapper (10) and the CUDA error 804 (20), and 804 is the answer.

Equal specificity: the match earlier in the text first, then by id.

Speed: a long log (a 1 MB stderr) is not run through 87 regular expressions. Each pattern has
*keywords*, literals one of which every match contains (read from the pattern itself, see
:func:`keywords`); a signature whose keywords are all absent from the lower-cased text is skipped,
and the others run only on the line of each keyword, or, for a pattern that can match a line
break, the :data:`CONTEXT_LINES` lines either side: a match must lie within that many lines of its
keyword (real messages span at most three).
:func:`pattern_problems` rejects nested quantifiers, the cause of catastrophic backtracking.
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Pattern, Sequence, Tuple, Union

from ..model import Category
from .load import DataError, read_json

TABLES = ("errors.json",)
FILE = "errors.json"
SCHEMA = "errors.schema.json"

FLAGS = re.IGNORECASE | re.ASCII
CONTEXT_LINES = 3  # lines searched either side of a keyword's line
MIN_KEYWORD = 4  # shorter keywords would let nearly every log through
MAX_LINE = 2000  # a matched line longer than this is cut to the match and some context


@dataclass(frozen=True)
class Signature:
    id: str
    pattern: str
    specificity: int
    example: str
    frameworks: Tuple[str, ...]
    categories: Tuple[Category, ...]  # most likely first
    explanation: str
    verify: Tuple[str, ...]
    seen_in: Tuple[str, ...]
    source: str
    confidence: str
    regex: Pattern[str] = field(repr=False, compare=False)
    keywords: Tuple[str, ...] = field(repr=False, compare=False)  # lower case; () = none found
    context: int = field(repr=False, compare=False)  # lines searched either side of a keyword
    example_first_match: Optional[str] = None
    note: Optional[str] = None

    @property
    def category(self) -> Category:
        """The most likely root cause."""
        return self.categories[0]


@dataclass(frozen=True)
class SignatureMatch:
    signature: Signature
    groups: Mapping[str, str]  # the named groups that took part, e.g. {"lib": "libcudnn.so.8"}
    text: str  # what the pattern matched
    line: str  # the line (or lines) holding the match
    line_number: int  # 1-based, of the match's first line
    start: int  # offset of the match in the text

    @property
    def categories(self) -> Tuple[Category, ...]:
        return self.signature.categories


@dataclass(frozen=True)
class SignatureData:
    signatures: Tuple[Signature, ...]  # sorted by id
    _index: Mapping[str, Signature] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self._index:
            index: Dict[str, Signature] = {}
            for s in self.signatures:
                index.setdefault(s.id, s)
            object.__setattr__(self, "_index", index)

    # ------------------------------------------------------------------ queries

    def by_id(self, signature_id: str) -> Optional[Signature]:
        return self._index.get(signature_id)

    def for_category(self, category: Union[Category, str]) -> List[Signature]:
        """Signatures pointing to ``category``: those naming it as the most likely cause first,
        then those naming it further down their list."""
        value = category.value if isinstance(category, Category) else str(category)
        found = [s for s in self.signatures if value in [c.value for c in s.categories]]
        return sorted(found, key=lambda s: ([c.value for c in s.categories].index(value), s.id))

    def match(self, text: str) -> List[SignatureMatch]:
        """Every signature found in ``text``, most specific first (then earliest, then by id);
        one match per signature, its first. Any text is accepted; [] when nothing matches."""
        if not isinstance(text, str) or not text:
            return []
        scan = _Scan(text)
        found = [m for m in (scan.find(s) for s in self.signatures) if m is not None]
        found.sort(key=lambda m: (-m.signature.specificity, m.start, m.signature.id))
        return found

    def first(self, text: str) -> Optional[SignatureMatch]:
        """The most specific signature in ``text``, or None."""
        found = self.match(text)
        return found[0] if found else None


# ---------------------------------------------------------------------------- matching


class _Scan:
    """One text being matched: its lower-cased copy and line offsets, computed once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.low = text.lower()  # str.lower never adds or removes a newline: same line numbers
        self._breaks: Optional[List[int]] = None
        self._low_breaks: Optional[List[int]] = None

    @property
    def breaks(self) -> List[int]:
        """Offsets of the newlines of the text."""
        if self._breaks is None:
            self._breaks = [m.start() for m in re.finditer("\n", self.text)]
        return self._breaks

    @property
    def low_breaks(self) -> List[int]:
        if self._low_breaks is None:
            if len(self.low) == len(self.text):  # every character lower-cased to one: same offsets
                self._low_breaks = self.breaks
            else:
                self._low_breaks = [m.start() for m in re.finditer("\n", self.low)]
        return self._low_breaks

    def line_start(self, line: int) -> int:
        return 0 if line <= 0 else self.breaks[line - 1] + 1

    def line_end(self, line: int) -> int:
        return len(self.text) if line >= len(self.breaks) else self.breaks[line]

    def find(self, sig: Signature) -> Optional[SignatureMatch]:
        if not sig.keywords:
            m = sig.regex.search(self.text)
            return self._result(sig, m) if m else None
        lines = set()
        for kw in sig.keywords:
            at = self.low.find(kw)
            while at >= 0:
                lines.add(bisect.bisect_right(self.low_breaks, at))
                at = self.low.find(kw, at + len(kw))
        last = len(self.breaks)
        for line in sorted(lines):
            start = self.line_start(max(0, line - sig.context))
            end = self.line_end(min(last, line + sig.context))
            m = sig.regex.search(self.text, start, end)
            if m:
                return self._result(sig, m)
        return None

    def _result(self, sig: Signature, m: "re.Match[str]") -> SignatureMatch:
        first = bisect.bisect_right(self.breaks, m.start())
        last = bisect.bisect_right(self.breaks, max(m.start(), m.end() - 1))
        begin, end = self.line_start(first), self.line_end(last)
        if end - begin > MAX_LINE:
            begin = max(begin, m.start() - MAX_LINE // 4)
            end = min(end, max(m.end(), begin) + MAX_LINE // 4)
        line = self.text[begin:end].replace("\r\n", "\n").rstrip("\r")[:MAX_LINE]
        return SignatureMatch(sig, _groups(m), m.group(0), line, first + 1, m.start())


def _groups(m: "re.Match[str]") -> Dict[str, str]:
    """Named groups that took part; 'lib2' is reported as 'lib' when the pattern has a 'lib'
    (Python forbids one name in two alternatives)."""
    names = set(m.re.groupindex)
    out: Dict[str, str] = {}
    for name, value in m.groupdict().items():
        if value is None:
            continue
        base = name.rstrip("0123456789")
        key = base if base != name and base in names else name
        out.setdefault(key, value.strip())
    return out


# ---------------------------------------------------------------------------- pattern analysis
#
# A small parser of the regular-expression syntax the patterns use, for two things `re` does not
# expose: the literals a match must contain (the keywords) and nested quantifiers.


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
        p = self.p
        c = p[self.i]
        if c == "(":
            return self._group()
        if c == "[":
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
        if c == "\\":
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
        self.i += 1
        if c == ".":
            return _Node("any")  # no DOTALL: never a line break
        if c in "^$":
            return _Node("zero")
        if c in "*+?":
            raise _Unsupported("quantifier without an atom")
        return _Node("lit", char=c, newline=c == "\n")

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


# ---------------------------------------------------------------------------- build + invariants


def build(docs: Mapping[str, Mapping[str, Any]]) -> SignatureData:
    rows = []
    vocabulary = {c.value: c for c in Category}
    for i, r in enumerate(docs[FILE]["records"]):
        where = f"records[{i}] ({r.get('id')})"
        try:
            regex = re.compile(r["pattern"], FLAGS)
        except (re.error, RecursionError, OverflowError, ValueError, TypeError, AssertionError) as exc:
            raise DataError(FILE, [f"{where}: pattern does not compile: {exc}"]) from None
        unknown = [c for c in r["categories"] if c not in vocabulary]
        if unknown:
            raise DataError(FILE, [f"{where}: categories: {', '.join(map(repr, unknown))} not in cudadoctor.model.Category"])
        rows.append(Signature(
            id=r["id"], pattern=r["pattern"], specificity=r["specificity"], example=r["example"],
            frameworks=tuple(r["frameworks"]), categories=tuple(vocabulary[c] for c in r["categories"]),
            explanation=r["explanation"], verify=tuple(r["verify"]), seen_in=tuple(r["seen_in"]),
            source=r["source"], confidence=r["confidence"], regex=regex, keywords=keywords(r["pattern"]),
            context=CONTEXT_LINES if spans_lines(r["pattern"]) else 0,
            example_first_match=r.get("example_first_match"), note=r.get("note"),
        ))
    return SignatureData(tuple(rows))


def invariants(data: SignatureData, matrix: Any) -> List[str]:
    """Sorted unique ids; safe patterns with keywords; every example matched by its own pattern,
    first, or after the signature its record names; https seen_in; the schema's category list
    equal to cudadoctor.model.Category."""
    problems: List[str] = []
    ids = [s.id for s in data.signatures]
    if ids != sorted(ids):
        problems.append(f"{FILE}: records are not sorted by id")
    seen = set()
    for i in ids:
        if i in seen:
            problems.append(f"{FILE}: {i}: id is listed twice")
        seen.add(i)
    for s in data.signatures:
        where = f"{FILE}: {s.id}"
        problems.extend(f"{where}: {p}" for p in pattern_problems(s.pattern))
        if not s.seen_in or any(not u.startswith("https://") for u in s.seen_in):
            problems.append(f"{where}: seen_in needs at least one https:// URL, and only those")
        problems.extend(_example_problems(data, s))
    problems.extend(_schema_problems(matrix))
    return problems


def _example_problems(data: SignatureData, s: Signature) -> List[str]:
    where = f"{FILE}: {s.id}"
    found = data.match(s.example)
    order = [m.signature.id for m in found]
    if s.id not in order:
        return [f"{where}: example is not matched by its own pattern"]
    first = found[0].signature
    if s.example_first_match is None:
        if first.id != s.id:
            return [f"{where}: {first.id} (specificity {first.specificity}) comes before it on its own "
                    f"example; raise its specificity or name {first.id} in example_first_match"]
        ties = [m.signature.id for m in found[1:] if m.signature.specificity == s.specificity]
        if ties:
            return [f"{where}: {', '.join(ties)} match its example at the same specificity; "
                    "give the more specific one a higher specificity"]
        return []
    winner = data.by_id(s.example_first_match)
    if winner is None:
        return [f"{where}: example_first_match {s.example_first_match} is not a signature"]
    if first.id != winner.id:
        return [f"{where}: example_first_match says {winner.id} comes first on its example, but {first.id} does"]
    if winner.specificity <= s.specificity:
        return [f"{where}: example_first_match {winner.id} must have a higher specificity than {s.specificity}"]
    return []


def _schema_problems(matrix: Any) -> List[str]:
    directory = getattr(matrix, "directory", None)
    if not isinstance(directory, str):
        return []
    try:
        schema = read_json(os.path.join(directory, "schemas"), SCHEMA)
        listed = schema["$defs"]["category"]["enum"]
    except DataError as exc:
        return [f"{SCHEMA}: {p}" for p in exc.problems]
    except (KeyError, TypeError):
        return [f"{SCHEMA}: $defs.category.enum is missing"]
    vocabulary = [c.value for c in Category]
    if listed != vocabulary:
        missing = [c for c in vocabulary if c not in listed]
        extra = [c for c in listed if c not in vocabulary]
        return [f"{SCHEMA}: $defs.category.enum differs from cudadoctor.model.Category "
                f"(missing: {missing or 'none'}; not in Category: {extra or 'none'}; or another order)"]
    return []
