"""One doc per finding code in docs/findings/, checked against the check table so they never
drift; the index is generated."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cudadoctor.checks import CHECKS, all_codes
from cudadoctor.checks.containers import CONTAINER_CHECKS, codes as container_codes
from cudadoctor.checks.docindex import doc_fields, index
from cudadoctor.model import Category, Severity

DOCS = Path(__file__).resolve().parents[1] / "docs" / "findings"
SECTIONS = ("## What it means", "## Why it happens", "## How to fix", "## Example")


EVERY_CODE = all_codes() + [c for c in container_codes() if c not in all_codes()]


@pytest.mark.parametrize("code", EVERY_CODE)
def test_every_code_has_its_doc(code: str) -> None:
    path = DOCS / f"{code}.md"
    assert path.is_file(), f"docs/findings/{code}.md is missing (template: docs/findings/TEMPLATE.md)"
    text = path.read_text(encoding="utf-8")
    assert text.startswith(f"# `{code}`\n"), "the doc starts with '# `code`'"
    fields = doc_fields(text)
    assert fields.get("severity", "").split(" ")[0].strip(",") in {s.value for s in Severity}, fields
    assert fields.get("category", "").strip("`").split("`")[0] in {c.value for c in Category}, fields
    check = next(c for c in (*CHECKS, *CONTAINER_CHECKS) if code in c.codes)
    assert f"`{check.name}`" in fields.get("check", ""), f"the doc names its check {check.name}"
    for section in SECTIONS:
        assert section in text, f"{code}: missing section {section}"


def test_no_doc_without_a_code() -> None:
    codes = set(EVERY_CODE)
    stray = [p.stem for p in DOCS.glob("*.md") if p.stem not in codes and p.stem not in ("README", "TEMPLATE")]
    assert not stray, f"docs for codes no check produces: {stray}"


def test_the_index_is_generated() -> None:
    assert (DOCS / "README.md").read_text(encoding="utf-8") == index(str(DOCS)), \
        "regenerate: python -m cudadoctor.checks.docindex > docs/findings/README.md"


def test_codes_are_stable_kebab_case_and_unique_per_check() -> None:
    for check in CHECKS:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", check.name)
        for code in check.codes:
            assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", code), code
    owners = [code for check in CHECKS for code in check.codes]
    assert len(owners) == len(set(owners)), "a code belongs to one check"
    for rule in CONTAINER_CHECKS:  # a container rule reuses a code of `check` only for the same cause
        assert re.fullmatch(r"docker(-[a-z0-9]+)+", rule.name)
        for code in rule.codes:
            assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", code), code


def test_every_category_is_documented() -> None:
    text = (DOCS.parent / "categories.md").read_text(encoding="utf-8")
    for category in Category:
        assert f"| `{category.value}` |" in text, category.value
