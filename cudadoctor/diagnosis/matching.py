"""Matching a text against what the data knows: the one entry point every command uses to find the
known errors in a text (a pasted report, a run's stderr, an exception, a smoke test's message).

:func:`match` returns the signatures found, most specific first; :func:`snippet` is the part of a
match a title quotes and :func:`notes` what the text and the facts add to a match (the pip
package that ships a library a loader could not open, who holds the memory when an allocation
failed).
"""

from __future__ import annotations

import bisect
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from cudadoctor.diagnosis.intake.clean import lines_of
from cudadoctor.diagnosis.vocabulary import CodeHit, vocabulary
from cudadoctor.model import Category, Snapshot

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix
    from cudadoctor.matrix.signatures import SignatureData, SignatureMatch

SNIPPET = 100  # characters of the message quoted in a title
SHORT = 32  # a match shorter than this is quoted with the rest of its line


def match(text: str, matrix: "Matrix", clean: bool = True) -> List["SignatureMatch"]:
    """Every known error in ``text``, most specific first (then earliest, then by id); one match
    per signature, its first. Any text is accepted; [] when nothing matches.

    The text is made plain first (:func:`cudadoctor.diagnosis.intake.clean.lines_of`: colours, log
    prefixes, Markdown; ``clean=False`` for a text that already is), line for line, so that line
    numbers stay those of the text given. Then the signatures' patterns run on it, and the codes it
    names are looked up in the vocabularies (:mod:`.vocabulary`); what no pattern found on one line
    is looked for once more across line breaks, for a message a terminal or a forum wrapped."""
    if not isinstance(text, str) or not text:
        return []
    last = _LAST.get("last")
    if last is not None and last[0] is matrix and (last[2] is text or (last[1] == clean and last[2] == text)):
        return list(last[3])  # the same text once more (the intake's, then a check's and explain's): once
    plain = "\n".join(lines_of(text)) if clean else text
    plain, shifts = _bounded(plain)
    data = matrix.signatures
    if len(plain) > REDUCE_AT:
        out = _in_a_long_text(plain, data)
    else:
        out = _all(plain, data)
    if shifts:
        out = [replace(m, start=_unbounded(m.start, shifts)) for m in out]
    _LAST["last"] = (matrix, clean, text, tuple(out))
    return out


LONG_LINE = 4096  # a longer line is matched on its head and its tail
LINE_END = 2048  # characters of each end of such a line
CUT = " … "


def _bounded(text: str) -> Tuple[str, List[Tuple[int, int]]]:
    """The text with every line longer than :data:`LONG_LINE` cut to its first and last
    :data:`LINE_END` characters (joined by :data:`CUT`), and where offsets moved: (offset in the
    cut text from which on, how many characters were taken out before it). An error's message is
    at a line's start or its end; the middle of a 1 MB line is data (a tensor, a base64 blob)
    that no pattern needs, and every pattern then runs on lines of bounded length."""
    if len(text) <= LONG_LINE or not _has_long_line(text):
        return text, []
    out: List[str] = []
    shifts: List[Tuple[int, int]] = []
    at = removed = 0
    for line in text.split("\n"):
        if len(line) > LONG_LINE:
            short = line[:LINE_END] + CUT + line[-LINE_END:]
            removed += len(line) - len(short)
            shifts.append((at + LINE_END + len(CUT), removed))
            line = short
        out.append(line)
        at += len(line) + 1
    return "\n".join(out), shifts


def _has_long_line(text: str) -> bool:
    at = 0
    while at < len(text):
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        if end - at > LONG_LINE:
            return True
        at = end + 1
    return False


def _unbounded(start: int, shifts: List[Tuple[int, int]]) -> int:
    """An offset of the cut text as an offset of the text given."""
    i = bisect.bisect_right([s for s, _ in shifts], start) - 1
    return start + shifts[i][1] if i >= 0 else start


def _all(plain: str, data: "SignatureData") -> List["SignatureMatch"]:
    found: Dict[str, "SignatureMatch"] = {m.signature.id: m for m in data.match(plain)}
    for hit in vocabulary(data).hits(plain):
        if hit.signature.id not in found:
            found[hit.signature.id] = _code_match(plain, hit)
    for m in _wrapped(plain, data, found):
        found.setdefault(m.signature.id, m)
    return sorted(found.values(), key=lambda m: (-m.signature.specificity, m.start, m.signature.id))


def _in_a_long_text(plain: str, data: "SignatureData") -> List["SignatureMatch"]:
    """A long text (a log) is matched at its start and its end: its first MiB (what was pasted
    before the run, the first error of a crash loop) and its last 2 MiB (where the error that ended
    it is); line numbers and offsets are those of the whole text."""
    head_end = plain.rfind("\n", 0, LONG_HEAD) + 1
    tail_start = plain.find("\n", len(plain) - LONG_TAIL) + 1
    out: Dict[str, "SignatureMatch"] = {}
    for m in _all(plain[:head_end], data):
        out[m.signature.id] = m
    skipped = plain.count("\n", 0, tail_start)
    for m in _all(plain[tail_start:], data):
        if m.signature.id not in out:
            out[m.signature.id] = replace(m, line_number=m.line_number + skipped, start=m.start + tail_start)
    return sorted(out.values(), key=lambda m: (-m.signature.specificity, m.start, m.signature.id))


REDUCE_AT = 3 << 20  # a longer text is matched at its start and its end
LONG_HEAD, LONG_TAIL = 1 << 20, 2 << 20
_LAST: Dict[str, Tuple[Any, bool, str, Tuple["SignatureMatch", ...]]] = {}
MAX_WRAPPED = 1 << 20  # a longer text is searched across line breaks at its start and its end only
WRAPPED_HEAD, WRAPPED_TAIL = 64 << 10, 512 << 10
MAX_LINE = 2000  # a matched line longer than this is cut to the match and some context


def _code_match(text: str, hit: CodeHit) -> "SignatureMatch":
    from cudadoctor.matrix.signatures import SignatureMatch

    begin = text.rfind("\n", 0, hit.start) + 1
    end = text.find("\n", hit.end)
    end = len(text) if end < 0 else end
    if end - begin > MAX_LINE:  # a very long line: the match and some context either side
        begin = max(begin, hit.start - MAX_LINE // 4)
        end = min(end, max(hit.end, begin) + MAX_LINE // 4)
    line = text[begin:end][:MAX_LINE]
    return SignatureMatch(hit.signature, {"code": hit.name}, text[hit.start:hit.end], line,
                          text.count("\n", 0, hit.start) + 1, hit.start)


def _wrapped(text: str, data: "SignatureData", found: Dict[str, "SignatureMatch"]) -> List["SignatureMatch"]:
    """The matches that only appear with line breaks (and the indentation after them) read as
    spaces: a message wrapped by a terminal, a forum or a log formatter."""
    if "\n" not in text:
        return []
    if len(text) > MAX_WRAPPED:  # a long log: its end, where the error is, and its start
        head, tail = text[:WRAPPED_HEAD], text[-WRAPPED_TAIL:]
        skipped = text.count("\n", 0, len(text) - WRAPPED_TAIL)
        ends = [m for m in _wrapped(head, data, found) if m.line_number < head.count("\n")]
        for m in _wrapped(tail[tail.find("\n") + 1:], data, found):
            ends.append(replace(m, line_number=m.line_number + skipped + 1, start=m.start + len(text) - WRAPPED_TAIL))
        return ends
    flat, starts = _flatten(text)
    out: List["SignatureMatch"] = []
    for m in data.match(flat):
        if m.signature.id not in found and m.signature.pattern and "\\n" not in m.signature.pattern:
            out.append(_unflattened(text, starts, m, m.start, m.start + len(m.text)))
    for hit in vocabulary(data).hits(flat):
        if hit.signature.id not in found and all(x.signature is not hit.signature for x in out):
            out.append(_unflattened(text, starts, _code_match(flat, hit), hit.start, hit.end))
    return out


def _flatten(text: str) -> Tuple[str, List[int]]:
    """The text with each line break and the blanks around it as one space, and where each
    original line starts in it."""
    lines = text.split("\n")
    starts, at, parts = [], 0, []
    for line in lines:
        stripped = line.strip()
        starts.append(at)
        parts.append(stripped)
        at += len(stripped) + 1
    return " ".join(parts), starts


def _unflattened(text: str, starts: List[int], m: "SignatureMatch", begin: int, end: int) -> "SignatureMatch":
    """A match in the flattened text, with the line number and lines of the text given."""
    first = bisect.bisect_right(starts, begin) - 1
    last = bisect.bisect_right(starts, max(begin, end - 1)) - 1
    lines = text.split("\n")[first:last + 1]
    return replace(m, line="\n".join(lines)[:2000], line_number=first + 1,
                   start=sum(len(x) + 1 for x in text.split("\n")[:first]))


def first(text: str, matrix: "Matrix") -> Optional["SignatureMatch"]:
    """The most specific known error in ``text``, or None."""
    found = match(text, matrix)
    return found[0] if found else None


def snippet(found: Any) -> str:
    """The part of the message a title quotes: what the pattern matched, or, when that alone is
    too short to recognise ('Error 804'), its line from the match on (or up to it, at its end)."""
    text = " ".join(str(found.text).split())
    if len(text) < SHORT:
        line = " ".join(str(found.line).split())
        at = max(line.find(text), 0)
        text = line[at:] if len(line) - at >= SHORT else line[max(0, at + len(text) - SNIPPET):]
    return text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…"


def notes(found: Any, message: str, matrix: "Matrix", snapshot: Optional[Snapshot] = None) -> Tuple[str, ...]:
    """What the text and the facts add to a matched signature: for a library that cannot be
    loaded, the pip package that ships that file name; for out of memory, who holds the memory
    (:mod:`cudadoctor.diagnosis.memory`)."""
    from cudadoctor.diagnosis import memory

    out: List[str] = []
    groups = dict(getattr(found, "groups", {}) or {})
    for key in ("lib", "dll"):
        name = groups.get(key)
        shipped = matrix.signatures.shipped_by(name) if name else []
        if shipped:
            where = "; ".join(f"{s.pip} (CUDA {s.cuda_major})" for s in shipped)
            out.append(f"{shipped[0].soname} is shipped by the pip package {where}: pip list | grep {shipped[0].pip}")
    if Category.OUT_OF_MEMORY in found.signature.categories:
        out.extend(memory.notes(message, snapshot))
    return tuple(out)
