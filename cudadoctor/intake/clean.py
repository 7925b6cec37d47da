"""A pasted text made plain, line for line: Markdown quote marks, code fences, HTML tags
(``<details>``, ``<summary>``, ``<br>``), HTML entities, invisible characters and the prefixes log
collectors put before each line (``docker compose logs``' "vllm-1  | ", Ray's "(RayWorker pid=7) ") removed, so that
the readers see the machine output as it was printed. Line numbers are kept: line N of the result
is line N of the text given."""

from __future__ import annotations

import html
import re
from typing import List

MAX_LINE = 4096  # a longer line is cut here: no output the readers know has longer lines
_QUOTE = re.compile(r"^(?:[ \t]{0,3}>[ \t]?)+")
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)[\w+.-]*[ \t]*$")
_TAG = re.compile(r"</?(?:details|summary|pre|code|br|p|div|span|b|i|em|strong|sub|sup|tt|kbd|hr)\b[^>]{0,200}>",
                  re.I)
_LOG_PREFIX = re.compile(r"^(?:[\w.-]{1,64}[-_]\d{1,4} {1,16}\| ?|\(\w{1,64} pid=\d+(?:, ip=[\d.]+)?\) )")
_INVISIBLE = re.compile("[\u200b-\u200d\u2060\ufeff\u00ad]")
_NBSP = re.compile("[\u00a0\u2007\u202f]")


def lines_of(text: str) -> List[str]:
    """The lines of ``text``, each made plain (see the module's docs)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    out = []
    for raw in text.split("\n"):
        line = raw[:MAX_LINE]
        if ">" in line[:64]:
            line = _QUOTE.sub("", line)
        if ("```" in line or "~~~" in line) and _FENCE.match(line):
            out.append("")
            continue
        if ("|" in line[:84] or "pid=" in line[:100]) and _LOG_PREFIX.match(line):
            line = _LOG_PREFIX.sub("", line, count=1)
        if "<" in line:
            line = _TAG.sub("", line)
        if "&" in line:
            line = html.unescape(line)
        if not line.isascii():
            line = _NBSP.sub(" ", _INVISIBLE.sub("", line))
        out.append(line.rstrip())
    return out
