"""Each real report of the corpus keeps its verdict: the first cause `cudadoctor diagnose FILE`
ranks (tests/corpus/verdicts.json, written by `python benchmarks/accuracy.py --pin`), and the
accuracy figures stay at or above their targets. A change that fixes a case moves its pin (rewrite
the file and review the diff); a change that breaks one fails here."""

from __future__ import annotations

import json
import sys
from typing import Any, Dict

import pytest

from helpers import HERE

sys.path.insert(0, str(HERE.parent / "benchmarks"))
import accuracy  # noqa: E402

PINNED: Dict[str, Any] = json.loads((HERE / "corpus" / "verdicts.json").read_text(encoding="utf-8"))
_result: Dict[str, Any] = {}


def result() -> Dict[str, Any]:
    if not _result:
        _result.update(accuracy.evaluate())
    return _result


def test_every_case_is_pinned() -> None:
    assert sorted(PINNED) == sorted(result()["outcomes"])


@pytest.mark.parametrize("slug", sorted(PINNED))
def test_verdict(slug: str) -> None:
    now = accuracy.pins(result())[slug]
    assert now == PINNED[slug], "rerun `python benchmarks/accuracy.py --pin` and review the diff"


def test_healthy_machines_get_no_error_finding() -> None:
    splits = result()["splits"]
    assert splits["dev"]["healthy_with_errors"] == [] and splits["validation"]["healthy_with_errors"] == 0
