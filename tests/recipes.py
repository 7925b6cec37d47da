"""The recipes of docs/fleet.md, as the tests read them: the fenced block after
``<!-- recipe: NAME -->``."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "fleet.md"


def recipe(name: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"<!-- recipe: " + re.escape(name) + r" -->\s*```[a-z]*\n(.*?)```", text, re.S)
    assert m, f"docs/fleet.md has no recipe {name!r}"
    return m.group(1)
