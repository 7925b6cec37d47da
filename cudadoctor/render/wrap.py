"""Wrapping prose that holds commands: a quoted span is never broken.

``textwrap`` breaks at any space, also inside ``python -c 'import torch; print(torch.__version__,
torch.version.cuda)'``: the two halves then paste as two broken shell lines. Here a span quoted
with ``'`` or ``"`` (opened at the start of a word or after ``=`` or ``(``) is one unit with the
word around it, and no line breaks before such a unit or an option (``-c``): ``python -c '...'``
stays on one line, longer than the width if it must.
"""

from __future__ import annotations

import re
from typing import List

_UNIT = re.compile(r"""(?:(?<![^\s=(])'[^']*'(?=[\s,.;:)?]|$)|(?<![^\s=(])"[^"]*"(?=[\s,.;:)?]|$)|\S)+""")


def wrap(text: str, width: int) -> List[str]:
    """``text`` in lines of at most ``width`` characters where the words allow, whitespace
    collapsed, never breaking inside a quoted span (a command to paste)."""
    groups: List[str] = []  # a word with the options and quoted arguments after it: python -c '...'
    for unit in _UNIT.findall(text):
        if groups and unit[0] in "'\"-":
            groups[-1] += " " + unit
        else:
            groups.append(unit)
    lines: List[str] = []
    line = ""
    for group in groups:
        if line and line not in ("-", "*", "•") and len(line) + 1 + len(group) > width:  # not after a bullet
            lines.append(line)
            line = group
        else:
            line = f"{line} {group}" if line else group
    if line:
        lines.append(line)
    return lines
