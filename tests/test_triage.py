"""``cudadoctor triage`` (docs/triage.md) against a local stand-in for GitHub's REST API
(tests/github_stub.py), with issue bodies from the real reports corpus (tests/corpus/reports).

The corpus cases are chosen by what the diagnosis gets right today (its first cause is the
confirmed category), so that the diagnosis can improve without these tests naming its words:
they check that the reply carries the diagnosis (the right cause, the lines that show it, the
asks), not what the diagnosis says.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudadoctor.api import diagnose_text
from github_stub import FakeGitHub, User
from helpers import cli, corpus_right_today

OWNER, REPO = "acme", "trainer"
BOT = "bot-token"  # the workflow's GITHUB_TOKEN: github-actions[bot]
MAINTAINER = "maintainer-token"


RIGHT = corpus_right_today()
HOLDS = [c for c in RIGHT if c[3] == "holds"][:3]
LIKELY = [c for c in RIGHT if c[3] != "holds" and "collect_env" in " ".join(c[4])][:3]
PICKED = HOLDS + LIKELY


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    stub = FakeGitHub(tokens={BOT: User("github-actions[bot]", "Bot"),
                              MAINTAINER: User("maya", "User", "OWNER")}).start()
    yield stub
    stub.stop()


@pytest.fixture(autouse=True)
def no_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GH_TOKEN", "GITHUB_TOKEN", "GITHUB_API_URL"):
        monkeypatch.delenv(name, raising=False)


def _triage(github: FakeGitHub, capsys: pytest.CaptureFixture[str], number: int, *args: str,
            token: str = "") -> Tuple[int, Dict[str, Any], str]:
    import os

    if token:
        os.environ["GH_TOKEN"] = token
    try:
        code, out, err = cli(["triage", f"{OWNER}/{REPO}#{number}", "--api-url", github.url, "--json", *args], capsys)
    finally:
        os.environ.pop("GH_TOKEN", None)
    return code, (json.loads(out) if out.strip() else {}), err


def _label_of(category: str) -> str:
    from cudadoctor.diagnosis.causes import label
    from cudadoctor.model import Category

    return label(Category(category))


# ---------------------------------------------------------------------------- the reply names the cause


def test_enough_corpus_cases_are_right_today() -> None:
    """The cases below are picked among those the diagnosis gets right: there must be some of each kind."""
    assert len(HOLDS) >= 2 and len(LIKELY) >= 2, [c[0] for c in RIGHT]


@pytest.mark.parametrize("slug,category,text,verdict,asks", PICKED, ids=[c[0] for c in PICKED])
def test_the_reply_names_the_confirmed_cause(github: FakeGitHub, capsys: pytest.CaptureFixture[str], slug: str,
                                             category: str, text: str, verdict: str, asks: Tuple[str, ...]) -> None:
    github.add_issue(OWNER, REPO, 7, text, title="CUDA does not work")
    code, doc, err = _triage(github, capsys, 7)
    assert code == 1, err
    assert doc["format"] == "cudadoctor.triage"
    assert doc["causes"][0]["category"] == category
    assert doc["causes"][0]["verdict"] == verdict
    reply = doc["reply"]
    assert reply.startswith("<!-- cudadoctor-triage -->\n")
    assert f"**{_label_of(category)}**" in reply.replace("\\", "")
    # the lines quoted are lines of the issue, each named as the issue numbers them
    lines = text.split("\n")
    assert doc["quoted"]
    for quote in doc["quoted"]:
        m = re.fullmatch(r"body line (\d+)", quote["where"])
        assert m, quote
        written = lines[int(m.group(1)) - 1]
        assert quote["text"].rstrip("…")[:40] in written or "<" in quote["text"], (quote, written)
        assert f"{quote['where']}:" in reply
    if verdict == "holds":
        assert doc["ask"] == [] and "please paste" not in reply
    else:
        assert doc["ask"] == list(asks) and all(a in reply for a in asks)
    assert github.requests("POST") == [] and github.requests("PATCH") == []  # no --post: nothing written
    assert [s.authorization for s in github.seen] == [None]  # anonymous, one call (no comments)


def test_a_low_confidence_reply_asks_for_collect_env_and_nvidia_smi(
        github: FakeGitHub, capsys: pytest.CaptureFixture[str]) -> None:
    slug, category, text, verdict, asks = LIKELY[0]
    github.add_issue(OWNER, REPO, 8, text)
    code, out, err = cli(["triage", f"{OWNER}/{REPO}#8", "--api-url", github.url], capsys)
    assert code == 1, err
    assert "not enough to be sure" in out
    wanted = "To tell, please paste (in a comment, or by editing the issue):\n\n" + "\n".join(f"- {a}" for a in asks)
    assert wanted in out
    assert "`python -m torch.utils.collect_env`" in out


def test_a_reply_with_a_fix_gives_its_commands(github: FakeGitHub, capsys: pytest.CaptureFixture[str]) -> None:
    with_fix = [c for c in HOLDS if diagnose_text(c[2]).findings and any(f.fix and f.fix.commands
                                                                          for f in diagnose_text(c[2]).findings)]
    if not with_fix:
        pytest.skip("no corpus case whose first cause holds comes with a fix today")
    slug, category, text, _, _ = with_fix[0]
    github.add_issue(OWNER, REPO, 9, text)
    code, doc, _ = _triage(github, capsys, 9)
    assert doc["fix"] and doc["fix"]["commands"]
    for command in doc["fix"]["commands"]:
        assert f"\n{command}\n" in doc["reply"]
    assert "\n```sh\n" in doc["reply"]


# ---------------------------------------------------------------------------- posting


def test_the_second_run_edits_the_first_reply(github: FakeGitHub, capsys: pytest.CaptureFixture[str]) -> None:
    slug, category, text, _, _ = LIKELY[0]
    key = github.add_issue(OWNER, REPO, 11, text)
    code, doc, err = _triage(github, capsys, 11, "--post", token=BOT)
    assert code == 1, err
    assert doc["posted"]["action"] == "created"
    assert len(github.comments[key]) == 1
    first = github.comments[key][0]
    assert first["user"]["login"] == "github-actions[bot]" and first["body"] == doc["reply"]

    # the same issue again: the reply says the same, nothing is written
    code, doc, err = _triage(github, capsys, 11, "--post", token=BOT)
    assert doc["posted"] == {"action": "unchanged", "comment_id": first["id"], "url": first["html_url"]}
    assert len(github.requests("POST")) == 1 and github.requests("PATCH") == []
    # triage's own reply is not part of what is diagnosed
    assert doc["read"]["left_out"] == [{"who": f"@github-actions[bot] (comment {first['id']})",
                                        "why": "a reply of cudadoctor triage"}]

    # the reporter adds their machine's facts: the reply changes, and the first comment is edited
    github.add_comment(key, "reporter", "Here it is:\n```\nPyTorch version: 2.5.1+cu124\nCUDA used to build "
                       "PyTorch: 12.4\nNvidia driver version: 470.82.01\n```")
    code, doc, err = _triage(github, capsys, 11, "--post", token=BOT)
    assert doc["posted"]["action"] == "edited" and doc["posted"]["comment_id"] == first["id"]
    assert len(github.comments[key]) == 2  # the reply and the reporter's comment: no second reply
    (patch,) = github.requests("PATCH")
    assert patch.path == f"/repos/{OWNER}/{REPO}/issues/comments/{first['id']}"
    assert github.comments[key][0]["body"] == doc["reply"]
    assert any(p["origin"] == "comment" and p["author"] == "reporter" for p in doc["read"]["parts"])


def test_a_maintainer_token_finds_its_reply_even_on_its_own_issue(
        github: FakeGitHub, capsys: pytest.CaptureFixture[str]) -> None:
    """The reporter is the maintainer who runs triage: their reply is theirs by the marker, and it
    is not diagnosed as one of the reporter's comments."""
    slug, category, text, _, _ = HOLDS[0]
    key = github.add_issue(OWNER, REPO, 12, text, author="maya")
    _triage(github, capsys, 12, "--post", token=MAINTAINER)
    code, doc, err = _triage(github, capsys, 12, "--post", token=MAINTAINER)
    assert doc["posted"]["action"] == "unchanged", err
    assert len(github.comments[key]) == 1
    assert [p["origin"] for p in doc["read"]["parts"]] == ["body"]


def test_a_comment_that_copies_the_marker_is_not_taken_for_the_reply(
        github: FakeGitHub, capsys: pytest.CaptureFixture[str]) -> None:
    slug, category, text, _, _ = HOLDS[0]
    key = github.add_issue(OWNER, REPO, 13, text)
    github.add_comment(key, "stranger", "<!-- cudadoctor-triage -->\nmine now")
    code, doc, _ = _triage(github, capsys, 13, "--post", token=BOT)
    assert doc["posted"]["action"] == "created"
    assert github.comments[key][0]["body"] == "<!-- cudadoctor-triage -->\nmine now"
    assert github.requests("PATCH") == []


def test_nothing_found_is_not_posted_unless_asked(github: FakeGitHub, capsys: pytest.CaptureFixture[str]) -> None:
    key = github.add_issue(OWNER, REPO, 14, "It would be nice to have a dark theme.", title="Feature request")
    code, out, err = cli(["triage", f"{OWNER}/{REPO}#14", "--api-url", github.url, "--post"], capsys)
    assert code == 0, err
    assert "found no GPU error message or machine output" in out
    assert "not posted: nothing found" in err
    assert github.requests("POST") == [] and github.comments[key] == []

    import os

    os.environ["GH_TOKEN"] = BOT
    try:
        code, out, err = cli(["triage", f"{OWNER}/{REPO}#14", "--api-url", github.url, "--post-always"], capsys)
    finally:
        del os.environ["GH_TOKEN"]
    assert code == 0, err
    assert len(github.comments[key]) == 1
    assert "python -m torch.utils.collect_env" in github.comments[key][0]["body"]


def test_label_adds_one_label_for_the_cause(github: FakeGitHub, capsys: pytest.CaptureFixture[str]) -> None:
    slug, category, text, _, _ = HOLDS[0]
    key = github.add_issue(OWNER, REPO, 15, text)
    code, doc, err = _triage(github, capsys, 15, "--label", token=BOT)
    assert doc["labels"] == [f"cudadoctor: {category}"], err
    assert github.labels[key] == [f"cudadoctor: {category}"]
    assert github.requests("POST")[0].body == {"labels": [f"cudadoctor: {category}"]}
    assert doc["posted"]["action"] == "none"  # --label alone does not post
    code, doc, _ = _triage(github, capsys, 15, "--label", "--label-prefix", "gpu/", token=BOT)
    assert github.labels[key] == [f"cudadoctor: {category}", f"gpu/{category}"]


def test_label_is_not_added_when_nothing_was_found(github: FakeGitHub, capsys: pytest.CaptureFixture[str]) -> None:
    key = github.add_issue(OWNER, REPO, 16, "Thanks for the library!")
    code, doc, _ = _triage(github, capsys, 16, "--label", token=BOT)
    assert doc["labels"] == [] and key not in github.labels


# ---------------------------------------------------------------------------- what is read


def test_the_reporters_comments_are_read_on_every_page_and_others_are_not(
        github: FakeGitHub, capsys: pytest.CaptureFixture[str]) -> None:
    github.page_size = 2
    key = github.add_issue(OWNER, REPO, 20, "My training script fails, see below.", title="help")
    github.add_comment(key, "helper", "Have you tried turning it off and on again?")
    github.add_comment(key, "ci-bot[bot]", "RuntimeError: CUDA error: no kernel image is available for execution "
                       "on the device", type="Bot")
    github.add_comment(key, "stranger", "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    github.add_comment(key, "helper", "Please post the error.")
    github.add_comment(key, "reporter", "Sorry, here:\n\n```\nTraceback (most recent call last):\n"
                       "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA "
                       "GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n```")
    code, doc, err = _triage(github, capsys, 20)
    assert code == 1, err
    gets = [s.path for s in github.requests("GET")]
    assert gets[1:] == [f"/repos/{OWNER}/{REPO}/issues/20/comments?per_page=100",
                        f"/repos/{OWNER}/{REPO}/issues/20/comments?per_page=2&page=2",
                        f"/repos/{OWNER}/{REPO}/issues/20/comments?per_page=2&page=3"]
    assert [p["origin"] for p in doc["read"]["parts"]] == ["title", "body", "comment"]
    assert sorted(x["why"] for x in doc["read"]["left_out"]) == ["a bot", "not the reporter", "not the reporter",
                                                                 "not the reporter"]
    top = doc["causes"][0]
    assert top["category"] == "no_driver"
    assert re.fullmatch(r"comment by @reporter, line \d+", top["where"]), top
    assert doc["quoted"][0]["where"] == top["where"]
    categories = {c["category"] for c in doc["causes"]}
    assert "out_of_memory" not in categories and "arch_unsupported" not in categories


def test_no_comments_reads_the_body_alone(github: FakeGitHub, capsys: pytest.CaptureFixture[str]) -> None:
    key = github.add_issue(OWNER, REPO, 21, "It fails.")
    github.add_comment(key, "reporter", "RuntimeError: Found no NVIDIA driver on your system.")
    code, doc, _ = _triage(github, capsys, 21, "--no-comments")
    assert code == 0 and doc["found"] is False
    assert len(github.seen) == 1  # the comments were not even asked for


def test_a_token_goes_to_github_and_gh_token_comes_first(
        github: FakeGitHub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    github.add_issue(OWNER, REPO, 22, "hello")
    monkeypatch.setenv("GITHUB_TOKEN", "wrong")
    monkeypatch.setenv("GH_TOKEN", BOT)
    code, _, err = cli(["triage", f"{OWNER}/{REPO}#22", "--api-url", github.url], capsys)
    assert code == 0, err
    assert github.seen[0].authorization == f"Bearer {BOT}"
    headers_ok = github.seen[0].path == f"/repos/{OWNER}/{REPO}/issues/22"
    assert headers_ok


def test_the_api_url_comes_from_the_workflows_environment(
        github: FakeGitHub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    github.add_issue(OWNER, REPO, 23, "hello")
    monkeypatch.setenv("GITHUB_API_URL", github.url)
    code, out, err = cli(["triage", f"https://github.com/{OWNER}/{REPO}/issues/23#issuecomment-1"], capsys)
    assert code == 0, err
    assert len(github.seen) == 1


# ---------------------------------------------------------------------------- files


def test_a_workflow_event_file_is_read_and_its_comments_fetched(
        github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a workflow, GITHUB_API_URL names the API: the comments are read from there."""
    monkeypatch.setenv("GITHUB_API_URL", github.url)
    key = github.add_issue(OWNER, REPO, 30, "Fails since the update.")
    github.add_comment(key, "reporter", "RuntimeError: Found no NVIDIA driver on your system.")
    event = {"action": "edited", "issue": dict(github.issues[key]),
             "repository": {"full_name": f"{OWNER}/{REPO}", "url": f"{github.url}/repos/{OWNER}/{REPO}"}}
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    code, out, err = cli(["triage", str(path), "--json"], capsys)
    assert code == 1, err
    doc = json.loads(out)
    assert doc["issue"]["repository"] == f"{OWNER}/{REPO}" and doc["issue"]["number"] == 30
    assert doc["causes"][0]["category"] == "no_driver"
    assert [s.path for s in github.seen] == [f"/repos/{OWNER}/{REPO}/issues/30/comments?per_page=100"]


def test_gh_issue_json_and_plain_text_are_read_offline(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    gh = {"title": "x", "body": "It fails", "author": {"login": "reporter"},
          "comments": [{"author": {"login": "reporter"}, "body": "RuntimeError: Found no NVIDIA driver on your system."},
                       {"author": {"login": "other"}, "body": "CUDA out of memory. Tried to allocate 2.00 GiB"}]}
    path = tmp_path / "gh.json"
    path.write_text(json.dumps(gh))
    code, out, _ = cli(["triage", str(path), "--json"], capsys)
    doc = json.loads(out)
    assert code == 1 and doc["causes"][0]["category"] == "no_driver"
    assert doc["causes"][0]["where"].startswith("comment by @reporter")
    text = tmp_path / "issue.md"
    text.write_text("RuntimeError: Found no NVIDIA driver on your system.\n")
    code, out, _ = cli(["triage", str(text)], capsys)
    assert code == 1 and "body line 1: RuntimeError: Found no NVIDIA driver" in out


@pytest.mark.parametrize("content,message", [
    ('{"labels": []}', "not an issue"),
    ("\x00\x01binary", "binary data"),
])
def test_a_file_that_is_not_an_issue_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str,
                                                 message: str) -> None:
    path = tmp_path / "x"
    path.write_text(content)
    code, out, err = cli(["triage", str(path)], capsys)
    assert code == 2 and out == ""
    assert err.startswith("cudadoctor: error: ") and message in err.splitlines()[0]


def test_posting_needs_to_know_the_issue(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "issue.md"
    path.write_text("RuntimeError: Found no NVIDIA driver on your system.\n")
    code, _, err = cli(["triage", str(path), "--post"], capsys)
    assert code == 2 and "need to know which issue" in err


# ---------------------------------------------------------------------------- GitHub's failures


def _error(capsys: pytest.CaptureFixture[str], args: List[str]) -> Tuple[int, str]:
    code, out, err = cli(args, capsys)
    lines = err.splitlines()
    assert out == "" and lines and lines[0].startswith("cudadoctor: error: "), err
    assert len(lines) <= 2 and all(line.startswith(("cudadoctor: error: ", "  hint: ")) for line in lines), err
    assert "Traceback" not in err
    return code, err


@pytest.mark.parametrize("failure,words", [
    ("rate-403", r"rate limit is reached, until \d{4}-\d\d-\d\d \d\d:\d\d UTC \(403: API rate limit exceeded"),
    ("rate-429", r"rate limit is reached, retry in 30 s \(429"),
    ("secondary", r"rate limit is reached, retry in 60 s \(403: You have exceeded a secondary rate limit"),
    ("500", r"GitHub answered 502 Bad Gateway; try again later"),
    ("html", r"something other than JSON \(text/html\)"),
    ("loop", r"too many redirects"),
    ("elsewhere", r"redirected to another host \(https://evil.example.com\); not following it with the token"),
])
def test_githubs_failures_are_one_line(github: FakeGitHub, capsys: pytest.CaptureFixture[str], failure: str,
                                       words: str) -> None:
    github.add_issue(OWNER, REPO, 40, "hello")
    github.failure = failure
    code, err = _error(capsys, ["triage", f"{OWNER}/{REPO}#40", "--api-url", github.url])
    assert code == 2
    assert re.search(words, err), err
    if failure.startswith("rate"):
        assert "hint: set GH_TOKEN or GITHUB_TOKEN" in err
    assert len(github.seen) <= 6  # no retry storm: a loop stops after a few redirects


def test_not_found_and_a_bad_token(github: FakeGitHub, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    code, err = _error(capsys, ["triage", f"{OWNER}/{REPO}#404", "--api-url", github.url])
    assert code == 2 and f"{OWNER}/{REPO}#404 was not found (404: Not Found)" in err and "private" in err
    github.add_issue(OWNER, REPO, 41, "hello")
    monkeypatch.setenv("GITHUB_TOKEN", "expired")
    code, err = _error(capsys, ["triage", f"{OWNER}/{REPO}#41", "--api-url", github.url])
    assert code == 2 and "GitHub refused the token (401: Bad credentials)" in err and "GITHUB_TOKEN" in err


def test_writing_without_a_token_is_refused_in_one_line(github: FakeGitHub, capsys: pytest.CaptureFixture[str]) -> None:
    github.add_issue(OWNER, REPO, 42, HOLDS[0][2])
    code, err = _error(capsys, ["triage", f"{OWNER}/{REPO}#42", "--api-url", github.url, "--post"])
    assert code == 2 and "commenting on" in err and "(401: Requires authentication)" in err


def test_a_token_without_issues_write_is_one_line(github: FakeGitHub, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    github.add_issue(OWNER, REPO, 45, HOLDS[0][2])
    github.failure = "read-only"
    monkeypatch.setenv("GITHUB_TOKEN", BOT)
    code, err = _error(capsys, ["triage", f"{OWNER}/{REPO}#45", "--api-url", github.url, "--post"])
    assert code == 2 and "(403: Resource not accessible by integration)" in err
    assert "the token in GITHUB_TOKEN needs the permission 'issues: write'" in err


def test_a_slow_github_times_out(github: FakeGitHub, capsys: pytest.CaptureFixture[str]) -> None:
    github.add_issue(OWNER, REPO, 43, "hello")
    github.failure, github.slow_s = "slow", 1.5
    code, err = _error(capsys, ["triage", f"{OWNER}/{REPO}#43", "--api-url", github.url, "--timeout", "0.3"])
    assert code == 2 and "did not answer within 0.3 s" in err


def test_no_server_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, err = _error(capsys, ["triage", f"{OWNER}/{REPO}#1", "--api-url", f"http://127.0.0.1:{port}"])
    assert code == 2 and f"cannot reach http://127.0.0.1:{port}" in err


def test_a_renamed_repository_is_followed(github: FakeGitHub, capsys: pytest.CaptureFixture[str]) -> None:
    """GitHub answers 301 to a GET and 307 to a write under the old name: both are followed, the
    write with its method and body."""
    slug, category, text, _, _ = HOLDS[0]
    key = github.add_issue(OWNER, "trainer-ng", 44, text)
    github.renamed[(OWNER, REPO)] = (OWNER, "trainer-ng")
    code, doc, err = _triage(github, capsys, 44, "--post", token=BOT)
    assert code == 1, err
    assert doc["causes"][0]["category"] == category
    assert doc["posted"]["action"] == "created" and len(github.comments[key]) == 1
    assert [s.method for s in github.seen] == ["GET", "GET", "POST", "POST"]
    assert all(s.authorization == f"Bearer {BOT}" for s in github.seen)


def test_the_token_never_travels_in_clear_to_another_host(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GH_TOKEN", "secret")
    code, err = _error(capsys, ["triage", "a/b#1", "--api-url", "http://ghe.example.com/api/v3"])
    assert code == 2 and "the token would travel in clear over http" in err


@pytest.mark.parametrize("arg,message", [
    ("a/b#0", "not an issue of a GitHub repository"),
    ("https://github.com/a/b/wiki/Home", "not an issue's URL"),
    ("https://user:pw@github.com/a/b/issues/1", "not an issue's URL"),
    ("no-such-file.md", "no-such-file.md: "),
])
def test_bad_arguments_are_one_line(capsys: pytest.CaptureFixture[str], arg: str, message: str) -> None:
    code, err = _error(capsys, ["triage", arg])
    assert code == 2 and message in err and "hint: give OWNER/REPO#N, an issue's URL" in err


def test_a_bad_api_url_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _error(capsys, ["triage", "a/b#1", "--api-url", "ftp://x"])
    assert code == 2 and "give an http(s) URL" in err


# ---------------------------------------------------------------------------- safety


def test_the_reply_is_redacted_escaped_and_quotes_only_the_cause(
        github: FakeGitHub, capsys: pytest.CaptureFixture[str]) -> None:
    body = (
        "Hi @maintainer-team, my config: HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz012345 host 203.0.113.7\n"
        "<img src=x onerror=alert(1)> [click](https://evil.example.com)\n"
        "```\n"
        "  File \"/home/maya/secret-project/train.py\", line 3\n"
        "RuntimeError: Found no NVIDIA driver on your system. /home/maya/secret-project ``` @everyone "
        "\x1b]52;c;cm0gLXJmIH4=\x07 ghp_abcdefghijklmnopqrstuvwxyz0123456789\n"
        "```\n"
    )
    github.add_issue(OWNER, REPO, 50, body)
    code, doc, err = _triage(github, capsys, 50)
    assert code == 1, err
    reply = doc["reply"]
    assert doc["causes"][0]["category"] == "no_driver"
    (quote,) = [q for q in doc["quoted"] if "Found no NVIDIA driver" in q["text"]]
    assert quote["where"] == "body line 5"
    for private in ("maya", "ghp_", "hf_abc", "203.0.113.7", "\x1b", "\x07"):
        assert private not in reply, private
    # the terminal escape (an OSC 52 clipboard write) is taken out of the line before it is read or quoted
    assert "/home/<user>/" in quote["text"] and "<redacted>" in quote["text"]
    assert "\x1b" not in quote["text"] and "\x07" not in quote["text"] and "]52;c;" not in quote["text"]
    # only the line that shows the cause is repeated: not the token line, the link or the image
    assert "onerror" not in reply and "evil.example.com" not in reply and "@maintainer-team" not in reply
    # the quoted line's ``` cannot close its block: the fence is longer
    fence = re.search(r"^(`{3,})text$", reply, re.M)
    assert fence and len(fence.group(1)) >= 4
    outside = re.sub(r"^(`{3,})[^\n]*\n.*?^\1$", "", reply, flags=re.S | re.M)
    assert "@everyone" not in outside


def test_markdown_from_facts_is_inert() -> None:
    from cudadoctor.triage.reply import fenced, md

    assert md("a <b> [x](y) @someone *z* `c` & \x1b[2J") == (
        "a \\<b\\> \\[x\\](y) `@someone` \\*z\\* \\`c\\` &amp; \\\\x1b\\[2J")
    block = fenced(["````x", "y"])
    assert block[0] == "`````" and block[-1] == "`````"


def test_the_reply_is_size_capped(github: FakeGitHub, capsys: pytest.CaptureFixture[str]) -> None:
    from cudadoctor.render.report_fit import size
    from cudadoctor.triage.issue import Issue, join
    from cudadoctor.triage.reply import MAX_LINE, build_reply

    line = "RuntimeError: Found no NVIDIA driver on your system. " + "x" * 5000
    joined = join(Issue(ref=None, title="", author="r", body=line + "\n"))
    reply = build_reply(diagnose_text(joined.text), joined)
    assert all(len(q.text) <= MAX_LINE for q in reply.quotes)
    assert size(reply.markdown) < 4000
    small = build_reply(diagnose_text(joined.text), joined, budget=300)
    assert size(small.markdown) <= 300 and small.markdown.endswith("… (cut to fit a comment)\n")
    assert small.markdown.count("```") % 2 == 0


@settings(deadline=None, max_examples=40)
@given(st.lists(st.one_of(
    st.sampled_from(["RuntimeError: Found no NVIDIA driver on your system.", "PyTorch version: 2.5.1+cu124",
                     "Nvidia driver version: 470.82.01", "CUDA used to build PyTorch: 12.4", "```", "> quoted",
                     "<details>", "NVIDIA GeForce RTX 5080 with CUDA capability sm_120 is not compatible with the "
                     "current PyTorch installation.", "export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz"]),
    st.text(max_size=60)), max_size=12))
def test_any_issue_gives_a_safe_reply(lines: List[str]) -> None:
    """Whatever an issue holds, the reply has no control character but its newlines, every code
    block closed, and no line of the issue outside the ones quoted."""
    from cudadoctor.triage.issue import Issue, join
    from cudadoctor.triage.reply import build_reply

    joined = join(Issue(ref=None, title="", author="r", body="\n".join(lines)))
    reply = build_reply(diagnose_text(joined.text), joined)
    text = reply.markdown
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]", text)
    fences = re.findall(r"^(`{3,})", text, re.M)
    assert len(fences) % 2 == 0
    assert "hf_abc" not in text
