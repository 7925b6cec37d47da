"""Fuzzing what triage reads from outside (issue 18): the OWNER/REPO#N and URL arguments, the
files (JSON of any shape, any text) and the joining of an issue's parts. No exception but the
documented ones escapes, and what is read back is what was written."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, List, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudadoctor.triage.issue import Comment, Issue, NotAnIssue, from_file, join
from cudadoctor.triage.refs import PUBLIC_API, IssueRef, RefError, parse_ref

FUZZ = settings(deadline=timedelta(seconds=1), max_examples=100)
owners = st.from_regex(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,37}", fullmatch=True)
repos = st.from_regex(r"[A-Za-z0-9._-]{1,100}", fullmatch=True).filter(lambda r: r not in (".", ".."))
numbers = st.integers(min_value=1, max_value=2**31 - 1)
hosts = st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,20}){1,3}", fullmatch=True)


def _parse(text: str) -> Optional[IssueRef]:
    try:
        return parse_ref(text)
    except RefError as exc:
        assert str(exc) and "\n" not in str(exc)
        return None


@FUZZ
@given(owners, repos, numbers)
def test_owner_repo_number_reads_back(owner: str, repo: str, number: int) -> None:
    ref = parse_ref(f"{owner}/{repo}#{number}")
    assert ref == IssueRef(owner, repo, number, PUBLIC_API)
    assert str(ref) == f"{owner}/{repo}#{number}"


@FUZZ
@given(owners, repos, numbers, st.sampled_from(["issues", "pull"]), st.sampled_from(["", "/", "#issuecomment-1",
                                                                                    "?q=1"]))
def test_a_github_url_reads_back(owner: str, repo: str, number: int, kind: str, tail: str) -> None:
    ref = parse_ref(f"https://github.com/{owner}/{repo}/{kind}/{number}{tail}")
    assert ref == IssueRef(owner, repo, number, PUBLIC_API)


@FUZZ
@given(hosts, owners, repos, numbers)
def test_an_enterprise_url_implies_its_api(host: str, owner: str, repo: str, number: int) -> None:
    if host in ("github.com", "www.github.com", "api.github.com"):
        return
    ref = parse_ref(f"https://{host}/{owner}/{repo}/issues/{number}")
    assert ref == IssueRef(owner, repo, number, f"https://{host}/api/v3")
    assert parse_ref(f"https://{host}/api/v3/repos/{owner}/{repo}/issues/{number}") == ref
    given = parse_ref(f"https://{host}/{owner}/{repo}/issues/{number}", api_url="http://127.0.0.1:9/")
    assert given is not None and given.api_url == "http://127.0.0.1:9"


@FUZZ
@given(st.one_of(
    st.text(max_size=200),
    st.builds(lambda a, b, c: f"{a}/{b}#{c}", st.text(max_size=20), st.text(max_size=20), st.text(max_size=12)),
    st.builds(lambda s, h, p: f"{s}://{h}/{p}", st.sampled_from(["http", "https", "HTTPS", "ftp"]),
              st.text(max_size=30), st.text(max_size=60)),
    st.builds(lambda o, r, n: f"https://github.com/{o}/{r}/issues/{n}", st.text(max_size=12), st.text(max_size=12),
              st.text(max_size=12)),
))
def test_any_argument_is_a_reference_none_or_one_clear_error(text: str) -> None:
    ref = _parse(text)
    if ref is not None:
        assert 0 < ref.number < 2**31 and ref.owner and ref.repo not in (".", "..")
        assert ref.api_url.startswith(("http://", "https://")) and not ref.api_url.endswith("/")
        assert "#" not in ref.repo and "/" not in ref.owner + ref.repo


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                               st.sampled_from(["title", "body", "user", "login", "comments", "number", "issue",
                                                "repository", "url", "repository_url", "author", "type"])
                               | st.text(max_size=8), inner, max_size=6), max_leaves=25)


@FUZZ
@given(st.one_of(json_values.map(json.dumps), st.text(max_size=300)))
def test_any_file_is_an_issue_or_one_clear_error(text: str) -> None:
    try:
        issue = from_file(text, "f.json")
    except NotAnIssue as exc:
        assert str(exc).startswith("f.json: ") and "\n" not in str(exc)
        return
    assert isinstance(issue.body, str) and isinstance(issue.title, str)
    assert all(isinstance(c, Comment) for c in issue.comments)
    joined = join(issue)
    assert isinstance(joined.text, str)


def _issue(body: str, comments: List[Any]) -> Issue:
    return Issue(ref=None, title="t", author="rep", body=body,
                 comments=tuple(Comment(i, who, text) for i, (who, text) in enumerate(comments)))


@FUZZ
@given(st.text(max_size=200), st.lists(st.tuples(st.sampled_from(["rep", "other"]), st.text(max_size=80)),
                                       max_size=5))
def test_every_joined_line_maps_back_to_where_it_was_written(body: str, comments: List[Any]) -> None:
    issue = _issue(body, comments)
    joined = join(issue)
    lines = joined.text.split("\n")
    for part in joined.parts:
        source = {"title": "t", "body": body}.get(part.origin)
        if source is None:
            source = next(c.body for c in issue.comments if c.id == part.comment_id)
        own = source.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n").split("\n")
        assert lines[part.first - 1: part.last] == own
        where = joined.where(part.last)
        assert where == ("the title" if part.origin == "title" else f"body line {len(own)}"
                         if part.origin == "body" else f"comment by @rep, line {len(own)}")
    assert all(p.author == "rep" for p in joined.parts)


@pytest.mark.parametrize("text", ["https://github.com/a/b/issues/1", "a/b#1", "https://api.github.com/repos/a/b/issues/1"])
def test_the_shapes_docs_triage_names(text: str) -> None:
    ref = parse_ref(text)
    assert ref == IssueRef("a", "b", 1, PUBLIC_API)
