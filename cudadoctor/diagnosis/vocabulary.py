"""The error codes a text names, found through the vocabularies of the CUDA libraries
(compat_data/error_codes.json, read from their headers): whatever wraps a code, the text names it
in one of three ways, and each leads to the code's signature.

- its name: ``CUDA_ERROR_ILLEGAL_ADDRESS``, ``cudaErrorLaunchOutOfResources``,
  ``CUBLAS_STATUS_EXECUTION_FAILED``, ``ncclInvalidUsage``, ``NVML_ERROR_GPU_IS_LOST`` or pynvml's
  ``NVMLError_GpuIsLost`` (any token that starts like a library's codes is looked up);
- its message, as the library's own string function words it (``CUDA error: misaligned
  address``, ``Triton Error [CUDA]: an illegal memory access was encountered``). A message of a
  few common words ("out of memory", "invalid argument") counts only after the library's name on
  the same line ("CUDA error: out of memory", "cudaMalloc failed: out of memory"); a longer or
  CUDA-specific one ("too many resources requested for launch") counts anywhere;
- its number after a CUDA error word: ``CUDA error 2``, ``cuda runtime error (700)``, ``CUDA
  failure 2:`` (cudaError_t values, as the runtime numbers them), when the line gives no message
  and the number means the same in every CUDA release (:func:`_STABLE`).

Linear in the text: one regular expression of name prefixes, one of the messages (built as a
trie, so its alternatives do not backtrack), one of the numbered forms; each hit is a dictionary
look-up.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Dict, List, Pattern, Sequence, Tuple

from cudadoctor.record import frozen

if TYPE_CHECKING:
    from cudadoctor.matrix.signatures import Signature, SignatureData

# Words that make a short message CUDA's own wherever it stands.
SPECIFIC = ("device", "kernel", "gpu", "cuda", "ptx", "ecc", "launch", "nvlink", "mps", "texture", "__syncthreads",
            "driver/library", "nccl")
# Messages of three or more words that other software prints too (errno texts, allocators).
GENERIC = frozenset({"out of memory", "operation not permitted", "operation not supported", "file not found",
                     "driver shutting down", "named symbol not found", "wait operation timed out",
                     "feature not yet implemented", "the license check failed", "an internal operation failed",
                     "the resource allocation failed", "invalid host pointer", "no error", "unknown result code",
                     "the requested functionality is not supported", "resource not mapped", "array is mapped",
                     "resource already mapped", "resource already acquired"})
CONTEXT_CHARS = 120  # how far before a common message its library's name may stand
# The library's name before a common message, on the same line
LIBRARY_CONTEXT = {
    "cuda_driver": r"(?i:cuda)|\bcu[A-Z][A-Za-z]+", "cuda_runtime": r"(?i:cuda)|\bcu[A-Z][A-Za-z]+",
    "cublas": r"(?i:cublas)", "cudnn": r"(?i:cudnn)", "cufft": r"(?i:cufft)", "cusolver": r"(?i:cusolver)",
    "cusparse": r"(?i:cusparse)", "curand": r"(?i:curand)", "nvrtc": r"(?i:nvrtc)", "nvjitlink": r"(?i:nvjitlink)",
    "nccl": r"(?i:nccl)", "nvml": r"(?i:nvml|nvidia-smi)",
}
# (One run of blanks, then an optional separator and its own blanks: two optional runs side by side
# would be tried in every split of a long run of blanks.)
_NUMBERED = re.compile(r"\bcuda(?:[ _](?:runtime|driver))?[ _]?(?:error|failure)(?:[ _]code)?[ \t]*(?:[:#(=][ \t]*)?"
                       r"(\d{1,5})(?!\d)|\bcudaError_t[ \t]*(?:[:#(=][ \t]*)?(\d{1,5})\b", re.IGNORECASE)
MAX_HITS = 2000  # a text that names codes more often than this is read up to here


def _STABLE(value: int) -> bool:
    """Whether a cudaError_t number means the same in every CUDA release: CUDA 10.1 renumbered the
    runtime's codes (invalid device function was 8 and is 98, a device-side assert was 59 and is
    710); 1-3 kept their meaning, and 100-9999 exist only in the new numbering."""
    return value in (1, 2, 3) or 100 <= value <= 9999
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_NUMBER_AFTER = re.compile(r"[ \t]{0,16}\(\d{1,5}\)")
# A line holding a code's message holds one of these too (an error word or a library's name):
# only such lines are searched for messages and numbers, so a long log costs a few str.find.
ANCHORS = ("error", "fail", "cuda", "nccl", "nvml", "cublas", "cudnn", "cufft", "cusolver", "cusparse", "curand",
           "nvrtc", "nvjitlink", "exception", "warn", "fatal", "abort", "assert")
MAX_LINE = 4096  # a longer candidate line is searched on its first MAX_LINE characters


@frozen
class CodeHit:
    """A code named in the text: its signature, the name, where (offset and length) and how."""

    signature: "Signature"
    name: str
    start: int
    end: int
    how: str  # name | message | number


class Vocabulary:
    """The look-up tables of one SignatureData: built once, then reused for every text."""

    def __init__(self, data: "SignatureData") -> None:
        self.data = data
        self.prefixes = _prefixes([c.name for c in data.codes if data.for_code(c.name) is not None])
        self.messages: Dict[str, List[Tuple[str, str]]] = {}  # lower-case message -> [(library, code name)]
        for c in data.codes:
            if data.for_code(c.name) is None:
                continue
            for text in c.messages:
                key = " ".join(text.lower().split()).rstrip(".")
                if key and key != c.name.lower() and len(key) >= 8:
                    self.messages.setdefault(key, []).append((c.library, c.name))
        self.message_regex = _trie_regex(list(self.messages)) if self.messages else None
        self.contexts = {lib: re.compile(p) for lib, p in LIBRARY_CONTEXT.items()}
        self.runtime_values = {c.value: c.name for c in data.codes if c.library == "cuda_runtime" and c.value}

    def hits(self, text: str) -> List[CodeHit]:
        """Every code named in ``text``, in the order found (names, then messages, then numbers)."""
        out = self._name_hits(text)
        low = text.lower()
        for start, end in _candidate_lines(low):
            if self.message_regex is not None:
                for m in self.message_regex.finditer(text, start, end):
                    out.extend(self._message_hits(text, m.start(), m.end()))
            on_line = any(h.start >= start and h.end <= end for h in out)
            for m in _NUMBERED.finditer(text, start, end):
                if on_line:
                    break  # the line names its code (or gives its message): that decides, not the number
                value = int(m.group(1) or m.group(2))
                code = self.runtime_values.get(value) if _STABLE(value) else None
                sig = self.data.for_code(code) if code else None
                if code and sig is not None:
                    out.append(CodeHit(sig, code, m.start(), m.end(), "number"))
            if len(out) >= MAX_HITS:
                break
        return out

    def _name_hits(self, text: str) -> List[CodeHit]:
        out: List[CodeHit] = []
        for prefix in self.prefixes:
            at = text.find(prefix)
            while at >= 0 and len(out) < MAX_HITS:
                if at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_"):
                    m = _TOKEN.match(text, at)
                    if m is not None:
                        sig = self.data.for_code(m.group(0))
                        if sig is not None:
                            out.append(CodeHit(sig, m.group(0), m.start(), m.end(), "name"))
                at = text.find(prefix, at + len(prefix))
        out.sort(key=lambda h: h.start)
        return out

    def _message_hits(self, text: str, start: int, end: int) -> List[CodeHit]:
        key = " ".join(text[start:end].lower().split())
        owners = self.messages.get(key, [])
        if not owners:
            return []
        distinctive = (len(key.split()) >= 3 and key not in GENERIC) or any(w in key for w in SPECIFIC)
        if not distinctive and _NUMBER_AFTER.match(text, end):
            return []  # "UNKNOWN ERROR (303)": a wrapper's words for a code it cannot name, not this message
        line_start = text.rfind("\n", 0, start) + 1
        before = text[max(line_start, start - CONTEXT_CHARS):start]
        out: List[CodeHit] = []
        for library, name in owners:
            if distinctive or self.contexts[library].search(before):
                sig = self.data.for_code(name)
                if sig is not None and all(h.signature is not sig for h in out):
                    out.append(CodeHit(sig, name, start, end, "message"))
        return out

def _candidate_lines(low: str) -> List[Tuple[int, int]]:
    """(start, end) spans of the lower-cased text to search for messages and numbers: each line
    that holds an anchor word, in order; of a line longer than MAX_LINE, the stretch around each
    anchor in it."""
    spans: List[Tuple[int, int]] = []
    for word in ANCHORS:
        at = low.find(word)
        while at >= 0:
            line = low.rfind("\n", 0, at) + 1
            end = low.find("\n", at)
            end = len(low) if end < 0 else end
            if end - line <= MAX_LINE:
                spans.append((line, end))
                at = low.find(word, end + 1) if end < len(low) else -1
            else:
                spans.append((max(line, at - CONTEXT_CHARS - 200), min(end, at + 600)))
                at = low.find(word, at + len(word))
            if len(spans) > 200_000:
                break
    spans.sort()
    merged: List[Tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _prefixes(names: Sequence[str]) -> List[str]:
    """The prefix each library's error codes share, as a name shape: 'CUDA_ERROR_', 'cudaError',
    'CUBLAS_STATUS_', 'nccl', 'NVML_ERROR_' (and pynvml's 'NVMLError_')."""
    out = set()
    for name in names:
        m = re.match(r"([A-Z]+_(?:ERROR|STATUS)_)|([A-Z]+_)|([a-z]+(?:Error)?)", name)
        if m:
            out.add(m.group(0))
        if name.startswith("NVML_ERROR_"):
            out.add("NVMLError_")
    return sorted(out)


def _trie_regex(words: Sequence[str]) -> Pattern[str]:
    """One case-insensitive pattern matching any of ``words`` (whitespace inside a word matches
    any run of spaces or line breaks), built as a trie so that no alternative backtracks into
    another; whole words only."""
    trie: Dict[str, Any] = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: Dict[str, Any]) -> str:
        alts = []
        end = "" in node
        for ch in sorted(k for k in node if k):
            piece = r"\s+" if ch == " " else re.escape(ch)
            alts.append(piece + build(node[ch]))
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if end else body

    return re.compile(r"(?<![\w-])" + build(trie) + r"(?![\w-])", re.IGNORECASE)


_CACHE: Dict[int, Tuple["SignatureData", Vocabulary]] = {}


def vocabulary(data: "SignatureData") -> Vocabulary:
    """The vocabulary of ``data``, built on first use."""
    cached = _CACHE.get(id(data))
    if cached is None or cached[0] is not data:
        cached = (data, Vocabulary(data))
        _CACHE.clear()
        _CACHE[id(data)] = cached
    return cached[1]
