"""A pasted text made plain, line for line: Markdown quote marks, code fences, HTML tags
(``<details>``, ``<summary>``, ``<br>``), HTML entities, invisible characters, terminal colours
(ANSI escapes) and the prefixes loggers and log collectors put before each line removed, so that
the readers and the error matcher see the machine output as it was printed. The prefixes:
``docker compose logs``' "vllm-1  | ", Ray's "(RayWorker pid=7) ", torchrun's "[rank3]:" and
"[default0]:", glog's "E1128 01:23:20.659046 12345 file.cc:123] ", timestamps ("2026-11-28
01:23:20,123 - ERROR - ", "[2026-11-28T01:23:20Z] ", "01:23:20.659 "), vLLM's "INFO 11-28
01:23:20 [file.py:12] ", pytest's "E   ". Line numbers are kept: line N of the result is line N
of the text given."""

from __future__ import annotations

import html
import re
from typing import List

MAX_LINE = 4096  # a longer line keeps this much of its head and tail: no output the readers know is longer
_QUOTE = re.compile(r"^(?:[ \t]{0,3}>[ \t]?)+")
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)[\w+.-]*[ \t]*$")
_TAG = re.compile(r"</?(?:details|summary|pre|code|br|p|div|span|b|i|em|strong|sub|sup|tt|kbd|hr)\b[^>]{0,200}>",
                  re.I)
_LOG_PREFIX = re.compile(r"^(?:[\w.-]{1,64}[-_]\d{1,4} {1,16}\| ?|\(\w{1,64} pid=\d+(?:, ip=[\d.]+)?\) )")
_ANSI = re.compile(r"\x1b\[[0-9;?]{0,32}[ -/]{0,4}[@-~]|\x1b\][^\x07\x1b]{0,256}(?:\x07|\x1b\\\\)|\x1b[@-Z\\\\-_]")
# One logger's prefix at the start of a line; applied until none is left (a timestamp before a
# rank, a compose prefix before a glog line). Each alternative is anchored and bounded.
_LOGGER = re.compile(
    r"^(?:"
    r"\[(?:rank|default)\d{1,5}\]:?[ \t]?"  # torchrun: [rank3]: / [default0]:
    r"|\[\d{1,5}(?:,\d{1,5}){0,64}\]<(?:stdout|stderr)>:[ \t]?"  # torchrun's tee: [0,1]<stderr>:
    r"|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{1,9}[ \t]{1,8}\d{1,10} [\w./+-]{1,200}:\d{1,7}\] ?"  # glog
    r"|\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d| ?UTC)?\]?:?[ \t]{0,4}"
    r"(?:-[ \t]{0,4})?(?:[\w.]{1,64}[ \t]{1,4}-[ \t]{1,4})?"  # 2026-11-28 01:23:20,123 - name -
    r"(?:\[?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]?[ \t]{0,4}(?:-[ \t]{0,4}|:[ \t]{0,4})?)?"
    r"|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?(?: \[[\w./:-]{1,200}\])? "  # vLLM
    r"|\d\d:\d\d:\d\d(?:[.,]\d{1,9})?[ \t]{1,4}(?=\S)"  # 01:23:20.659 before a line
    r"|[A-Z][a-z]{2} {1,2}\d{1,2} \d\d:\d\d:\d\d [\w.-]{1,64} [\w./@-]{1,64}(?:\[\d{1,10}\])?: "  # journald, syslog
    r"|\[[A-Z][a-z]{2} [A-Z][a-z]{2} {1,2}\d{1,2} \d\d:\d\d:\d\d \d{4}\] "  # dmesg -T
    r"|\[\d\d/\d\d \d\d:\d\d:\d\d [\w.]{1,80}\]:? "  # detectron2 and fvcore: [11/01 20:14:15 d2.engine]:
    r"|(?:stdout|stderr) [FP] "  # the CRI log format after its timestamp (kubectl logs of a node)
    r"|E {3}(?=\S)"  # pytest's error lines
    r")"
)
_LOGGER_STARTS = frozenset("0123456789[IWEFDCJMASNO")  # the first characters of _LOGGER's prefixes
# A line _plain leaves as it is (but for trailing blanks) holds none of these: the one search that
# lets most lines of a long log skip it
_SPECIAL = re.compile("[>`<&|\x1b~\x80-\U0010ffff]|pid=|^(?:[0-9\\[IWEFDCJMASNO]|stdout |stderr )")
_INLINE_CODE = re.compile(r"^(\s*(?:[-*+]\s+)?)`{1,3}([^`]{3,4000})`{1,3}[.,;:]?\s*$")
_INVISIBLE = re.compile("[\u200b-\u200d\u2060\ufeff\u00ad]")
_NBSP = re.compile("[\u00a0\u2007\u202f]")


def lines_of(text: str) -> List[str]:
    """The lines of ``text``, each made plain (see the module's docs)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    plain, special = _plain, _SPECIAL.search
    return [plain(line) if len(line) > MAX_LINE or special(line) else line.rstrip() for line in text.split("\n")]


def logged_lines(text: str, lines: List[str]) -> List[int]:
    """The 0-based numbers of the lines of ``text`` (made plain as ``lines``) that began with a
    logger's prefix (a timestamp, a level, a rank): a log, whatever the lines say."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    out = []
    for i, raw in enumerate(text.split("\n")):
        if i >= len(lines):
            break
        head = raw[:1]
        if head in _LOGGER_STARTS and lines[i] and len(lines[i]) < len(raw) and _LOGGER.match(raw):
            out.append(i)
    return out


def _unlogged(line: str) -> str:
    for _ in range(4):  # a logger's prefix inside another's
        m = _LOGGER.match(line)
        if m is None or not m.end():
            break
        line = line[m.end():]
        head = line[:1]
        if not head or not (head in _LOGGER_STARTS or (head == "s" and line.startswith(("stdout ", "stderr ")))):
            break
    return line


def _plain(raw: str) -> str:
    # a longer line keeps its head and its tail: an error is where a line starts or ends
    line = raw if len(raw) <= MAX_LINE else raw[:MAX_LINE // 2] + " … " + raw[-(MAX_LINE // 2):]
    if ">" in line[:64]:
        line = _QUOTE.sub("", line)
    if ("```" in line or "~~~" in line) and _FENCE.match(line):
        return ""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if ("|" in line[:84] or "pid=" in line[:100]) and _LOG_PREFIX.match(line):
        line = _LOG_PREFIX.sub("", line, count=1)
    head = line[:1]
    if head and (head in _LOGGER_STARTS or (head == "s" and line.startswith(("stdout ", "stderr ")))):
        line = _unlogged(line)
    if "<" in line:
        line = _TAG.sub("", line)
    if "`" in line:
        inline = _INLINE_CODE.match(line)
        if inline:  # a line of output quoted as inline code: `RuntimeError: ...`
            line = inline.group(1) + inline.group(2)
    if "&" in line:
        line = html.unescape(line)
    if not line.isascii():
        line = _NBSP.sub(" ", _INVISIBLE.sub("", line))
    return line.rstrip()
