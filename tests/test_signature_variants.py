"""Wording does not decide a match (shared/DESIGN.md, "Match the kind, not the example"): from
every signature's example (errors.json and every error code's generated one), variants a real
report could show are derived (other numbers, units and device ordinals, a logger's prefix on
every line, terminal colours, a line wrapped by a terminal or a forum, a Markdown quote or
fence, Windows line ends), and each must be matched by the same signature, first where the
example is.

The variants are mechanical, from the example's text: a number with a unit, an ordinal after
cuda:/GPU/device/rank; never a number that names a code ("Error 804", "CUDA error (2)")."""

from __future__ import annotations

import re
import textwrap
from typing import Callable, Dict, List, Tuple

import pytest

from cudadoctor.data.source import default_matrix
from cudadoctor.diagnosis.matching import match

MATRIX = default_matrix()
SIGNATURES = MATRIX.signatures.signatures

_SIZE = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)*)(\s?)(KiB|MiB|GiB|TiB|KB|MB|GB|TB|bytes|B)\b")
_ORDINAL = re.compile(r"\b(cuda:|GPU ?|device |rank |Rank )(\d+)\b")
_BIG = re.compile(r"(?<![\w.,])(\d{5,})(\s?bytes)\b")


def _other_number(value: str) -> str:
    """Another number of the same shape: '1.70' -> '12.34', '2' -> '7', '300,219,760,640' -> '12,345'."""
    if "," in value and "." not in value.replace(",", "", 1):
        return "12,345"
    if "." in value:
        return "12.34"
    return "7" if value != "7" else "3"


def sizes(text: str) -> str:
    return _SIZE.sub(lambda m: _other_number(m.group(1)) + m.group(2) + m.group(3), text)


def units(text: str) -> str:
    swap = {"GiB": "MiB", "MiB": "GiB", "KiB": "MiB", "GB": "MB", "MB": "GB", "TiB": "GiB"}
    return _SIZE.sub(lambda m: m.group(1) + m.group(2) + swap.get(m.group(3), m.group(3)), text)


def separators(text: str) -> str:
    return _BIG.sub(lambda m: f"{int(m.group(1)):,}" + m.group(2), text)


def ordinals(text: str) -> str:
    return _ORDINAL.sub(lambda m: m.group(1) + ("3" if m.group(2) != "3" else "5"), text)


def each_line(prefix: str) -> Callable[[str], str]:
    return lambda text: "\n".join(prefix + line for line in text.split("\n"))


def colour(text: str) -> str:
    """As a terminal shows it: the exception's name red, the whole line bold."""
    red = re.sub(r"\b(\w*(?:Error|Exception))\b", "\x1b[31m\\1\x1b[0m", text, count=1)
    return "\n".join(f"\x1b[1m{line}\x1b[22m" for line in red.split("\n"))


def wrapped(text: str) -> str:
    """Hard-wrapped at 60 columns on spaces, as a forum or an e-mail does."""
    return "\n".join(textwrap.fill(line, 60, break_long_words=False, break_on_hyphens=False) if len(line) > 60 else line
                     for line in text.split("\n"))


VARIANTS: Dict[str, Callable[[str], str]] = {
    "sizes": sizes,
    "units": units,
    "separators": separators,
    "ordinals": ordinals,
    "glog": each_line("E1128 01:23:20.659046 12345 cuda_executor.cc:1234] "),
    "python-logging": each_line("2026-11-28 01:23:20,123 - root - ERROR - "),
    "timestamp": each_line("[2026-11-28T01:23:20.123Z] "),
    "rank": each_line("[rank3]: "),
    "compose": each_line("trainer-1  | "),
    "ray": each_line("(RayWorker pid=12345) "),
    "colour": colour,
    "wrapped": wrapped,
    "quoted": each_line("> "),
    "fenced": lambda text: "```\n" + text + "\n```",
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "inside-a-traceback": lambda text: ("Traceback (most recent call last):\n  File \"/home/u/train.py\", line 7, "
                                        "in <module>\n    main()\n" + text + "\n"),
}

# The examples whose text a variant cannot keep the meaning of: a pattern that reads a block's
# line structure (a package list, a device list) is not wrapped; the rest are listed by reason.
LINE_STRUCTURED = {s.id for s in SIGNATURES if s.pattern and ("\\n" in s.pattern or "(?:^|" in s.pattern)}
IDS = [s.id for s in SIGNATURES]


def _first_and_ids(text: str) -> Tuple[str, List[str]]:
    found = match(text, MATRIX)
    return (found[0].signature.id if found else ""), [m.signature.id for m in found]


@pytest.mark.parametrize("sig_id", IDS)
def test_every_variant_of_the_example_matches_the_same_signature(sig_id: str) -> None:
    sig = MATRIX.signatures.by_id(sig_id)
    assert sig is not None
    first, _ = _first_and_ids(sig.example)
    wrong = []
    for name, variant in VARIANTS.items():
        if name == "wrapped" and sig_id in LINE_STRUCTURED:
            continue
        text = variant(sig.example)
        got_first, got = _first_and_ids(text)
        if sig_id not in got or got_first != first:
            wrong.append((name, text, got))
    assert wrong == []


def test_the_variants_change_what_they_claim_to() -> None:
    """The derivations themselves: a test of the test."""
    oom = "CUDA out of memory. Tried to allocate 1.70 GiB. GPU 0 has a total capacity of 6.00 GiB"
    assert sizes(oom) == "CUDA out of memory. Tried to allocate 12.34 GiB. GPU 0 has a total capacity of 12.34 GiB"
    assert units(oom).count("MiB") == 2 and ordinals(oom).count("GPU 3") == 1
    assert separators("allocating 300219760640 bytes") == "allocating 300,219,760,640 bytes"
    assert "\x1b[31mRuntimeError\x1b[0m" in colour("RuntimeError: CUDA error: misaligned address")
    assert wrapped("x " * 80).count("\n") >= 2
    assert "Error 804" in sizes("Error 804: forward compatibility") and "(2)" in ordinals("CUDA error (2)")
