"""The one Markdown writer for values from outside (a stranger's report, an issue, a probed
value): every Markdown output (``report``, ``diagnose``, ``check``, ``diff``, ``fleet``,
``triage``) writes such values through it, so that nothing in a value can close its block, add
HTML, an image, a link or a mention to text that is pasted into a public tracker.

- :func:`fence`: a fenced block whose fence is longer than any run of backticks in its lines;
- :func:`code`: inline code whose delimiter is longer than the value's longest run of backticks;
- :func:`text`: prose: control characters escaped, one line, ``&`` and ``<`` as entities,
  Markdown's punctuation backslashed (no emphasis, link, image, heading, table cell, list),
  ``@mentions`` and bare URLs put in inline code (no one is notified, nothing is linked).
"""

from __future__ import annotations

import re
from typing import Iterable, List, Optional

from cudadoctor.model.printable import printable

_TICKS = re.compile(r"`+")
_PUNCTUATION = re.compile(r"([\\`*_{}\[\]<>#|~!])")
# what GitHub turns into a mention or a link by itself: @user, @org/team, http://..., www.x
_LIVE = re.compile(r"@[A-Za-z0-9][A-Za-z0-9-]*(?:/[A-Za-z0-9][A-Za-z0-9_.-]*)?"
                   r"|(?i:(?<![a-z0-9+.-])(?:[a-z][a-z0-9+.-]{0,30}://|www\.|mailto:)[^\s`]+)")


def longest_ticks(value: str) -> int:
    """The longest run of backticks in ``value``."""
    return max((len(m) for m in _TICKS.findall(value)), default=0) if "`" in value else 0


def fence(lines: Iterable[str], info: str = "") -> List[str]:
    """``lines`` as a fenced code block that no line can close: the fence has more backticks
    than the longest run in any line (at least three). Control characters are escaped."""
    body = [printable(line) for line in lines]
    ticks = "`" * max(3, max((longest_ticks(line) for line in body), default=0) + 1)
    return [ticks + info, *body, ticks]


def code(value: Optional[str], cell: bool = False) -> str:
    """``value`` as inline code that it cannot close: the delimiter is one backtick longer than its
    longest run, with a space inside when it starts or ends with a backtick (CommonMark strips one).
    ``cell``: inside a table's cell, where a ``|`` would end the cell even in code."""
    shown = printable(" ".join((value or "").split()))
    if cell:
        shown = shown.replace("|", "\\|")
    ticks = "`" * (longest_ticks(shown) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") or not shown.strip() else ""
    return f"{ticks}{pad}{shown}{pad}{ticks}"


def text(value: Optional[str]) -> str:
    """Prose from outside, inert in Markdown (see the module's docs); one line."""
    shown = printable(" ".join((value or "").split())).replace("&", "&amp;")
    out: List[str] = []
    at = 0
    for m in _LIVE.finditer(shown):
        out.append(_escaped(shown[at:m.start()]))
        out.append(code(m.group(0)))
        at = m.end()
    out.append(_escaped(shown[at:]))
    return "".join(out)


def _escaped(piece: str) -> str:
    return _PUNCTUATION.sub(r"\\\1", piece)
