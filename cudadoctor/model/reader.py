"""The one reader of saved documents: a report or snapshot as JSON, or the Markdown of
``cudadoctor report`` (which ends with the report's JSON in a fenced block), turned into a value and
then into the parts of a :class:`~cudadoctor.model.Report`.

``diagnose``, ``diff``, ``fleet summarize``, the API and the pytest plugin all read through here,
so a file reads the same way everywhere: the same size cap, the same encodings (UTF-8 with or
without a byte-order mark, UTF-16 with one), the same refusal of a report written by a newer
cudadoctor. Failures raise :class:`ReadError`, whose ``kind`` and ``detail`` let each command word
the one line it prints.
"""

from __future__ import annotations

import codecs
import collections
import errno
import json
import os
import stat
import sys
from bisect import bisect_right
from typing import Any, BinaryIO, Callable, Deque, Dict, Iterator, List, Optional, Sequence, TextIO, Tuple, TypeVar

from cudadoctor.model import Finding, Snapshot
from cudadoctor.model.serialize import ENVELOPE_FORMAT, from_jsonable, newer_format, snapshot_from_dict

# A report of a large cluster node is a few hundred KB; a document fifty times larger is not one,
# and reading /dev/zero or `yes |` without a cap ran out of memory (issue 16). JSON parsed into
# Python objects takes up to twenty times its size: 16 MiB keeps that under a few hundred MB.
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
MAX_DOCUMENT_TEXT = "16 MiB"
_CHUNK = 1024 * 1024
T = TypeVar("T")


class ReadError(ValueError):
    """Why a document cannot be read: ``kind`` is ``encoding`` (not UTF-8), ``json`` (not JSON;
    ``detail`` has the line and column), ``unusable`` (nested too deeply, a number too long),
    ``os`` (it cannot be opened or read; ``detail`` says why), ``not_file`` (a folder),
    ``too_large`` (over :data:`MAX_DOCUMENT_BYTES`) or ``closed`` (stdin is closed)."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail

    def describe(self) -> str:
        """The reason in words, for the line a command prints after the file's name."""
        if self.kind == "encoding":
            return "not a UTF-8 text file"
        if self.kind == "json":
            return f"not valid JSON ({self.detail})"
        if self.kind == "unusable":
            return f"not usable JSON ({self.detail})" if self.detail else "not usable JSON"
        if self.kind == "too_large":
            return f"larger than {MAX_DOCUMENT_TEXT}, the most cudadoctor reads"
        if self.kind == "closed":
            return "stdin is closed: nothing to read"
        return self.detail or self.kind


def read_document(path: str) -> bytes:
    """The bytes of the document at ``path`` (``-``: stdin), at most :data:`MAX_DOCUMENT_BYTES`.

    A regular file is read as it is. A named pipe or a device (``/dev/stdin``, ``<(...)``) is read
    too, but opened without blocking, so a pipe nobody writes to reads as empty instead of waiting
    for ever; /dev/zero or an endless stream stops at the cap. A folder, a socket, a file that
    cannot be opened or a closed stdin raise :class:`ReadError`."""
    if path == "-":
        stream = _stdin()
        return _read_capped(stream)
    return _read_file(path, "a report file", _read_capped, MAX_DOCUMENT_BYTES)


def _read_file(path: str, what: str, read: Callable[[Any], T], cap: Optional[int] = None) -> T:
    """``read`` of the open file at ``path``: a regular file, a named pipe or a device, opened
    without blocking (a pipe nobody writes to reads as empty), then read blocking (a pipe whose
    writer is still working is read to its end). A folder ("is a folder, not WHAT"), a socket, a
    file that cannot be opened, or a regular file over ``cap`` bytes raise :class:`ReadError`."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise ReadError("os", exc.strerror or str(exc)) from None
    if stat.S_ISDIR(mode):
        raise ReadError("not_file", f"is a folder, not {what}")
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
        raise ReadError("not_file", "not a regular file")
    if cap is not None and stat.S_ISREG(mode) and os.stat(path).st_size > cap:
        raise ReadError("too_large")  # said before reading any of it
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ReadError("os", exc.strerror or str(exc)) from None
    try:
        if not stat.S_ISREG(mode):
            os.set_blocking(fd, True)
        with open(fd, "rb", buffering=0, closefd=False) as fh:
            return read(fh)
    except OSError as exc:
        raise ReadError("os", exc.strerror or str(exc)) from None
    finally:
        os.close(fd)


def _stdin() -> Any:
    """stdin as bytes, or as text where it has no bytes underneath (a test's StringIO, an
    embedding application's stream); ReadError when it is closed (``<&-``)."""
    stream = sys.stdin
    if stream is None:  # Python starts with sys.stdin None when descriptor 0 is closed
        raise ReadError("closed")
    try:
        if stream.closed:
            raise ReadError("closed")
    except (AttributeError, ValueError):
        pass
    return getattr(stream, "buffer", stream)


def _read_capped(stream: Any) -> bytes:
    """Up to :data:`MAX_DOCUMENT_BYTES` from ``stream``; ReadError ``too_large`` past it."""
    chunks: List[bytes] = []
    total = 0
    try:
        while total <= MAX_DOCUMENT_BYTES:
            chunk = stream.read(min(_CHUNK, MAX_DOCUMENT_BYTES + 1 - total))
            if not chunk:
                break
            if isinstance(chunk, str):  # a text stream: counted in UTF-8 bytes, as a file would be
                chunk = chunk.encode("utf-8", "surrogateescape")
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        if exc.errno == errno.EBADF:  # descriptor 0 closed (`<&-`) under a stream Python made anyway
            raise ReadError("closed") from None
        raise ReadError("os", exc.strerror or str(exc)) from None
    except ValueError:  # a closed file object
        raise ReadError("closed") from None
    if total > MAX_DOCUMENT_BYTES:
        raise ReadError("too_large")
    return b"".join(chunks)


def load(path: str, markdown: bool = True) -> Any:
    """The JSON value of the document at ``path`` (``-``: stdin): read with the cap, decoded and
    parsed, a Markdown report standing for its JSON block. Raises :class:`ReadError`."""
    raw = read_document(path)
    if not raw.strip():  # also a pipe nobody writes to
        raise ReadError("json", "it is empty")
    value = parse(decode(raw), markdown)
    newer = newer_format(value)
    if newer is not None:
        raise ReadError("newer", newer)
    return value


def decode(raw: bytes) -> str:
    """UTF-8 text; a byte-order mark is not an error, and one of UTF-16 (what Windows PowerShell's
    ``>`` writes) says how to decode the rest."""
    try:
        if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and not raw.startswith(codecs.BOM_UTF32_LE):
            return raw.decode("utf-16")
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ReadError("encoding") from None


def parse(text: str, markdown: bool = True) -> Any:
    """The JSON value of ``text``, or (``markdown``) the JSON block of a Markdown report."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        embedded = markdown_json(text) if markdown else None
        if embedded is not None:
            return embedded
        raise ReadError("json", f"line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except (RecursionError, ValueError, MemoryError) as exc:
        raise ReadError("unusable", type(exc).__name__) from None


def _no_constant(name: str) -> None:
    """NaN, Infinity and -Infinity in outside JSON are read as null: strict JSON has no such
    values, and what cudadoctor writes back must parse everywhere."""
    return None


def extract_json(markdown: str) -> Optional[str]:
    """The text of the last ```json block of a Markdown report that parses as a JSON object, or
    None: what a maintainer feeds to ``cudadoctor diagnose``."""
    for block in reversed(list(json_blocks(markdown))):
        try:
            value = json.loads(block)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return block
    return None


def _fence(line: str) -> Tuple[str, str]:
    """(the run of backticks or tildes a line starts with, the rest of the line), or ("", line)."""
    if not line.startswith(("```", "~~~")):
        return "", line
    mark = line[0]
    end = len(line) - len(line.lstrip(mark))
    return line[:end], line[end:]


def json_blocks(markdown: str) -> Iterator[str]:
    """The text of each fenced ```json (or ~~~json) block, in order: an opening line of three or
    more backticks or tildes and ``json``, up to the first line of the same fence alone.

    A line scanner, linear in the text: a regular expression with a back-reference to the fence
    rescanned the rest of the text from every unclosed opening line, and 256 KB of them took
    39 s (issue 16)."""
    starts: List[int] = []  # offset of each line
    openers: List[Tuple[int, str]] = []  # (line index, fence) of each opening line
    closers: Dict[str, List[int]] = {}  # fence -> line indexes of the lines that close it
    offset = 0
    lines = markdown.split("\n")
    for index, line in enumerate(lines):
        starts.append(offset)
        offset += len(line) + 1
        fence, rest = _fence(line[:-1] if line.endswith("\r") else line)
        if not fence:
            continue
        rest = rest.strip(" \t")
        if rest == "":
            closers.setdefault(fence, []).append(index)
        elif rest == "json" and index + 1 < len(lines):  # an opening line ends with a newline
            openers.append((index, fence))
    after = -1  # blocks do not overlap: the next one opens after the last one closed
    for index, fence in openers:
        if index <= after:
            continue
        candidates = closers.get(fence, [])
        found = bisect_right(candidates, index)
        if found == len(candidates):
            continue
        close = candidates[found]
        yield markdown[starts[index + 1]:starts[close]]
        after = close


def markdown_json(text: str) -> Any:
    """The JSON block of a Markdown report, parsed; None when there is none."""
    if "```json" not in text and "~~~" not in text:
        return None
    block = extract_json(text)
    return json.loads(block, parse_constant=_no_constant) if block is not None else None


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


# ---------------------------------------------------------------------------- logs

# How much of a log is read. The error that matters is almost always at the end (a traceback's last
# line, the last CUDA error before the exit), so a longer log keeps its end and its beginning (where
# a build or a driver message may sit) and leaves out the middle, in bounded memory and time.
LOG_TAIL = 8 * 1024 * 1024
LOG_HEAD = 1024 * 1024
CHUNK = 1024 * 1024
LOG_MAX = 1 << 30  # an endless stream (a device, `yes`) is read this far, then its tail is explained


def read_log(raw: Optional[BinaryIO], text_stream: Optional[TextIO] = None) -> Tuple[str, int]:
    """(the log's text, how many bytes of its middle were left out). A log of any length: its
    first LOG_HEAD and last LOG_TAIL bytes are kept. A regular file is read from both ends by
    seeking, a pipe chunk by chunk with only the tail kept in memory, up to LOG_MAX bytes (a stream
    that does not end is cut there)."""
    if raw is None:  # a text stream without bytes underneath (tests, IDEs)
        assert text_stream is not None
        data = text_stream.read(LOG_HEAD + LOG_TAIL + 1).encode("utf-8", "replace")
        return _decoded(data[:LOG_HEAD + LOG_TAIL]), 0
    try:
        info = os.fstat(raw.fileno())
        size = info.st_size if stat.S_ISREG(info.st_mode) else None
    except (OSError, ValueError, AttributeError):
        size = None
    if size is not None and size > LOG_HEAD + LOG_TAIL:
        head = raw.read(LOG_HEAD)
        raw.seek(size - LOG_TAIL)
        return _decoded(head) + "\n" + _decoded(_from_a_line(raw.read(LOG_TAIL))), size - LOG_HEAD - LOG_TAIL
    head = raw.read(LOG_HEAD)
    tail: Deque[bytes] = collections.deque()
    kept = left_out = 0
    total = len(head)
    while total < LOG_MAX:
        chunk = raw.read(CHUNK)
        if not chunk:
            break
        total += len(chunk)
        tail.append(chunk)
        kept += len(chunk)
        while kept - len(tail[0]) >= LOG_TAIL:
            left_out += len(tail[0])
            kept -= len(tail.popleft())
    rest = b"".join(tail)
    if left_out:
        return _decoded(head) + "\n" + _decoded(_from_a_line(rest)), left_out
    return _decoded(head + rest), 0


def _from_a_line(data: bytes) -> bytes:
    """``data`` from its first whole line on (a cut in the middle of a line is no line)."""
    cut = data.find(b"\n")
    return data[cut + 1:] if 0 <= cut < len(data) - 1 else data


def _decoded(data: bytes) -> str:
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):  # Windows PowerShell's `>`
        return data.decode("utf-16", "replace")
    return data.decode("utf-8-sig", "replace")


def read_text_file(path: str) -> Tuple[str, int]:
    """(the text of the file at ``path`` or stdin for ``-``, how many bytes of its middle were left
    out): a log or a paste of any size, read in bounded memory from both ends (:func:`read_log`).
    A folder, a socket, a file that cannot be opened or a closed stdin raise :class:`ReadError`;
    a pipe nobody writes to reads as empty."""
    if path == "-":
        stream = _stdin()
        raw = stream if hasattr(stream, "fileno") and not hasattr(stream, "encoding") else None
        return read_log(raw, None if raw is not None else stream)
    return _read_file(path, "a file", read_log)
