"""Error signatures: the messages users see (tracebacks, warnings, kernel and installer logs),
each mapped to the root-cause categories it points to, most likely first.

:meth:`SignatureData.match` finds every signature in a text, most specific first. Patterns are
Python regular expressions, compiled once, case-insensitively, with ASCII classes. Two kinds of
matches overlap and the data says which wins through ``specificity`` (higher first):

- 40: a fact of the platform from which every GPU message follows (a WSL 1 kernel, a macOS host);
- 30: one program's message about one condition ("Torch not compiled with CUDA enabled");
- 20: a message many programs print (CUDA error strings, the dynamic loader, NVML, the kernel);
- 10: a wrapper or a summary whose cause is another message: "Unexpected error from
  cudaGetDeviceCount() ... Error 804: forward compatibility was attempted on non supported HW"
  matches both the PyTorch wrapper (10) and the CUDA error 804 (20), and 804 is the answer.

Equal specificity: the match earlier in the text first, then by id.

``sonames.json`` rides along: which pip package ships a CUDA library file by the name a loader asks
for (:meth:`SignatureData.shipped_by`), so a "cannot open shared object file" names what to install.

Speed: a long log (a 1 MB stderr) is not run through 87 regular expressions. Each pattern has
*keywords*, literals one of which every match contains (read from the pattern itself, see
:func:`keywords`); a signature whose keywords are all absent from the lower-cased text is skipped,
and the others run only on the line of each keyword, or, for a pattern that can match a line
break, the :data:`CONTEXT_LINES` lines either side: a match must lie within that many lines of its
keyword (real messages span at most three; a record's ``span`` widens that for a printed block,
such as TensorFlow's device list).
:func:`pattern_problems` rejects nested quantifiers, the cause of catastrophic backtracking.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import field
from typing import Any, Dict, List, Mapping, Optional, Pattern, Tuple, Union
from cudadoctor.record import frozen

from cudadoctor.model import Category
from cudadoctor.matrix._signatures_patterns import MIN_KEYWORD as MIN_KEYWORD
from cudadoctor.matrix._signatures_patterns import keywords as keywords
from cudadoctor.matrix._signatures_patterns import pattern_problems as pattern_problems
from cudadoctor.matrix._signatures_patterns import spans_lines as spans_lines
from cudadoctor.matrix._error_codes import ErrorCode, generated, nvml_alias, read_codes, read_families
from cudadoctor.matrix.load import DataError

TABLES = ("errors.json", "sonames.json", "error_codes.json", "error_families.json")
FILE = "errors.json"
CODES = "error_codes.json"
FAMILIES = "error_families.json"
SCHEMA = "errors.schema.json"
SONAMES = "sonames.json"

FLAGS = re.IGNORECASE | re.ASCII
CONTEXT_LINES = 3  # lines searched either side of a keyword's line
MAX_LINE = 2000  # a matched line longer than this is cut to the match and some context


@frozen
class Signature:
    id: str
    pattern: str  # "" for a signature matched through its codes alone
    specificity: int
    example: str
    frameworks: Tuple[str, ...]
    categories: Tuple[Category, ...]  # most likely first
    explanation: str
    verify: Tuple[str, ...]
    seen_in: Tuple[str, ...]
    source: str
    confidence: str
    regex: Optional[Pattern[str]] = field(repr=False, compare=False)
    keywords: Tuple[str, ...] = field(repr=False, compare=False)  # lower case; () = none found
    context: int = field(repr=False, compare=False)  # lines searched either side of a keyword
    example_first_match: Optional[str] = None
    note: Optional[str] = None
    other: Optional[str] = None  # what the category 'other' stands for with this message
    codes: Tuple[str, ...] = ()  # the library error codes (error_codes.json) it stands for
    container_first: Optional[Category] = None  # the likeliest cause when the text ran in a container

    @property
    def category(self) -> Category:
        """The most likely root cause."""
        return self.categories[0]


@frozen
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


@frozen
class Soname:
    """A CUDA library file by the name a loader asks for, and the pip package that ships it."""

    soname: str  # libcudart.so.12, cudart64_12.dll
    os: str  # linux | windows
    library: str  # cudart
    cuda_major: int
    pip: str  # nvidia-cuda-runtime-cu12
    source: str
    confidence: str
    note: Optional[str] = None


# The last text matched: (the SignatureData that matched it, the text, its matches)
_LAST: Dict[str, Tuple["SignatureData", str, Tuple["SignatureMatch", ...]]] = {}


@frozen
class SignatureData:
    signatures: Tuple[Signature, ...]  # sorted by id
    sonames: Tuple[Soname, ...] = ()  # sorted by file name, then CUDA major
    codes: Tuple[ErrorCode, ...] = ()  # every error code of the CUDA libraries (error_codes.json)
    _index: Mapping[str, Signature] = field(default_factory=dict, repr=False, compare=False)
    _by_code: Mapping[str, Signature] = field(default_factory=dict, repr=False, compare=False)
    _code_names: Mapping[str, ErrorCode] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self._index:
            index: Dict[str, Signature] = {}
            by_code: Dict[str, Signature] = {}
            for s in self.signatures:
                index.setdefault(s.id, s)
                for name in s.codes:
                    by_code.setdefault(name, s)
                    alias = nvml_alias(name)
                    if alias:
                        by_code.setdefault(alias, s)
            names: Dict[str, ErrorCode] = {}
            for c in self.codes:
                names.setdefault(c.name, c)
                alias = nvml_alias(c.name)
                if alias:
                    names.setdefault(alias, c)
            object.__setattr__(self, "_index", index)
            object.__setattr__(self, "_by_code", by_code)
            object.__setattr__(self, "_code_names", names)

    def for_code(self, name: str) -> Optional[Signature]:
        """The signature a library error code stands for ('cudaErrorNoDevice', 'CUDA_ERROR_NO_DEVICE',
        'NVMLError_LibRmVersionMismatch'); None for a name that is no error code the data knows."""
        return self._by_code.get(name)

    def code(self, name: str) -> Optional[ErrorCode]:
        """The error code of that name, as its library declares it."""
        return self._code_names.get(name)

    # ------------------------------------------------------------------ queries

    def by_id(self, signature_id: str) -> Optional[Signature]:
        return self._index.get(signature_id)

    def shipped_by(self, name: str) -> List[Soname]:
        """The pip packages that ship the library file ``name`` (a soname or a DLL name, with or
        without its directory), one per CUDA major; [] when the data does not know the name."""
        base = str(name).replace("\\", "/").rsplit("/", 1)[-1].strip()
        low = base.lower()
        return [s for s in self.sonames if s.soname.lower() == low]

    def for_category(self, category: Union[Category, str]) -> List[Signature]:
        """Signatures pointing to ``category``: those naming it as the most likely cause first,
        then those naming it further down their list."""
        value = category.value if isinstance(category, Category) else str(category)
        found = [s for s in self.signatures if value in [c.value for c in s.categories]]
        return sorted(found, key=lambda s: ([c.value for c in s.categories].index(value), s.id))

    def match(self, text: str) -> List[SignatureMatch]:
        """Every signature whose pattern is found in ``text``, most specific first (then earliest,
        then by id); one match per signature, its first. Any text is accepted; [] when nothing
        matches. The codes a text names are found by :mod:`cudadoctor.diagnosis.vocabulary`."""
        if not isinstance(text, str) or not text:
            return []
        last = _LAST.get("last")
        if last is not None and last[0] is self and (last[1] is text or last[1] == text):
            return list(last[2])  # one text is matched by the intake, the checks and explain: once
        scan = _Scan(text)
        found = [m for m in (scan.find(s) for s in self.signatures if s.regex is not None) if m is not None]
        found.sort(key=lambda m: (-m.signature.specificity, m.start, m.signature.id))
        _LAST["last"] = (self, text, tuple(found))
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
        if sig.regex is None:
            return None
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


# ---------------------------------------------------------------------------- build + invariants


def build(docs: Mapping[str, Mapping[str, Any]]) -> SignatureData:
    records = list(docs[FILE]["records"])
    codes = read_codes(docs[CODES]) if CODES in docs else ()
    if CODES in docs and FAMILIES in docs:
        claimed = {name: r["id"] for r in records for name in r.get("codes", ())}
        records += generated(codes, read_families(docs[FAMILIES]), claimed)
    rows = sorted((_signature(i, r) for i, r in enumerate(records)), key=lambda sig: sig.id)
    sonames = tuple(
        Soname(soname=r["soname"], os=r["os"], library=r["library"], cuda_major=r["cuda_major"], pip=r["pip"],
               source=r["source"], confidence=r["confidence"], note=r.get("note"))
        for r in docs[SONAMES]["records"]) if SONAMES in docs else ()
    return SignatureData(tuple(rows), sonames, codes)


def _signature(i: int, r: Mapping[str, Any]) -> Signature:
    vocabulary = {c.value: c for c in Category}
    where = f"records[{i}] ({r.get('id')})"
    pattern = r.get("pattern", "")
    regex: Optional[Pattern[str]] = None
    if pattern:
        try:
            regex = re.compile(pattern, FLAGS)
        except (re.error, RecursionError, OverflowError, ValueError, TypeError, AssertionError) as exc:
            raise DataError(FILE, [f"{where}: pattern does not compile: {exc}"]) from None
    unknown = [c for c in r["categories"] if c not in vocabulary]
    if unknown:
        raise DataError(FILE, [f"{where}: categories: {', '.join(map(repr, unknown))} not in cudadoctor.model.Category"])
    return Signature(
        id=r["id"], pattern=pattern, specificity=r["specificity"], example=r["example"],
        frameworks=tuple(r["frameworks"]), categories=tuple(vocabulary[c] for c in r["categories"]),
        explanation=r["explanation"], verify=tuple(r["verify"]), seen_in=tuple(r["seen_in"]),
        source=r["source"], confidence=r["confidence"], regex=regex, keywords=keywords(pattern) if pattern else (),
        context=r.get("span", CONTEXT_LINES) if pattern and spans_lines(pattern) else 0,
        example_first_match=r.get("example_first_match"), note=r.get("note"), other=r.get("other"),
        codes=tuple(r.get("codes", ())),
        container_first=vocabulary[r["container_first"]] if r.get("container_first") else None,
    )
