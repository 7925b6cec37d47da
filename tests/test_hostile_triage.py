"""``cudadoctor triage`` against a hostile GitHub stand-in and hostile issue files (issue 27).

A file or a paste names the API it came from; triage sends the token only to api.github.com or
to the API given with ``--api-url``/``GITHUB_API_URL``, and never contacts a host a file names.
Whatever the server does (trickles headers or a body byte by byte, never ends, sends a gzip
bomb, JSON nested 100,000 deep, a 5,000-digit ``Retry-After``, quotes the token back, says
nothing), triage ends within ``--timeout`` + 2 s, in bounded memory, with one line and exit 2,
and the token appears nowhere: not on stdout, stderr, in the JSON or in a posted comment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, Tuple

import pytest

from github_stub import FakeGitHub, User, _bomb
from helpers import cli

OWNER, REPO = "acme", "trainer"
TOKEN = "ghp_" + "T0k3n" * 8  # a token of GitHub's shape
CLASSIC = "0123456789abcdef0123456789abcdef01234567"  # a classic token: 40 hex digits, no prefix
BODY = "RuntimeError: Found no NVIDIA driver on your system."
TIMEOUT_S = 2.0
SLACK_S = 2.0
MEMORY_BYTES = 200 << 20


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    stub = FakeGitHub(tokens={TOKEN: User("maya", "User", "OWNER"), CLASSIC: User("maya", "User", "OWNER")}).start()
    yield stub
    stub.stop()


@pytest.fixture
def elsewhere() -> Iterator[FakeGitHub]:
    """Another host (an attacker's), which must never see the token."""
    stub = FakeGitHub(tokens={TOKEN: User("mallory")}).start()
    yield stub
    stub.stop()


@pytest.fixture(autouse=True)
def no_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GH_TOKEN", "GITHUB_TOKEN", "GITHUB_API_URL"):
        monkeypatch.delenv(name, raising=False)


def _one_line(code: int, out: str, err: str) -> None:
    lines = err.splitlines()
    assert code == 2 and out == "", (code, out, err)
    assert lines and lines[0].startswith("cudadoctor: error: ") and len(lines) <= 2, err
    assert "Traceback" not in err


def _event(stub: FakeGitHub, tmp_path: Path, number: int = 7) -> Path:
    """A workflow's event payload whose repository is served by ``stub``."""
    key = stub.add_issue(OWNER, REPO, number, BODY)
    stub.add_comment(key, "reporter", "Still failing.")
    event = {"action": "opened", "issue": dict(stub.issues[key]),
             "repository": {"full_name": f"{OWNER}/{REPO}", "url": f"{stub.url}/repos/{OWNER}/{REPO}"}}
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    return path


# ---------------------------------------------------------------------------- where the token goes


def test_a_file_naming_another_host_gets_no_request(elsewhere: FakeGitHub, capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    code, out, err = cli(["triage", str(_event(elsewhere, tmp_path)), "--json"], capsys)
    assert code == 1, err
    assert elsewhere.seen == []
    assert "the comments were not read: the file names the API" in err
    assert json.loads(out)["causes"][0]["category"] == "no_driver"


def test_a_paste_naming_another_host_gets_no_request(elsewhere: FakeGitHub, capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    monkeypatch.setattr("sys.stdin", open(_event(elsewhere, tmp_path)))
    code, _, err = cli(["triage", "-", "--json"], capsys)
    assert code == 1, err
    assert elsewhere.seen == []


def test_posting_for_a_file_naming_another_host_is_refused(elsewhere: FakeGitHub, capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    code, out, err = cli(["triage", str(_event(elsewhere, tmp_path)), "--post", "--label"], capsys)
    _one_line(code, out, err)
    assert "contacts only when it is given on the command line" in err and "--api-url" in err
    assert elsewhere.seen == []


def test_the_api_given_wins_over_the_host_a_file_names(github: FakeGitHub, elsewhere: FakeGitHub,
                                                       capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """GITHUB_API_URL (a workflow's) is the API; the file's host is never asked."""
    path = _event(elsewhere, tmp_path)
    key = github.add_issue(OWNER, REPO, 7, BODY)
    github.add_comment(key, "reporter", "Still failing.")
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_API_URL", github.url)
    code, _, err = cli(["triage", str(path), "--post"], capsys)
    assert code == 1, err
    assert elsewhere.seen == []
    assert [s.method for s in github.seen] == ["GET", "POST"]
    assert all(s.authorization == f"Bearer {TOKEN}" for s in github.seen)


def test_an_issue_url_of_another_host_is_read_without_the_token(
        elsewhere: FakeGitHub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A URL implies its host's API; the token goes there only when that API is given explicitly."""
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    elsewhere.add_issue(OWNER, REPO, 3, BODY)
    code, _, err = cli(["triage", f"{elsewhere.url}/api/v3/repos/{OWNER}/{REPO}/issues/3"], capsys)
    assert elsewhere.seen and all(s.authorization is None for s in elsewhere.seen), err
    assert "the token in GH_TOKEN was not sent to" in err and "give --api-url" in err
    code, out, err = cli(["triage", f"{elsewhere.url}/api/v3/repos/{OWNER}/{REPO}/issues/3", "--post"], capsys)
    _one_line(code, out, err)
    assert all(s.authorization is None for s in elsewhere.seen)


def test_the_token_goes_to_the_api_given(github: FakeGitHub, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    github.add_issue(OWNER, REPO, 4, BODY)
    code, _, err = cli(["triage", f"{github.url}/api/v3/repos/{OWNER}/{REPO}/issues/4", "--api-url", github.url],
                       capsys)
    assert code == 1, err
    assert [s.authorization for s in github.seen] == [f"Bearer {TOKEN}"]


# ---------------------------------------------------------------------------- the token is never shown


@pytest.mark.parametrize("token", [TOKEN, CLASSIC, "s3cr3t-of-any-form"])
def test_a_token_the_api_echoes_is_not_printed(github: FakeGitHub, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch, token: str) -> None:
    monkeypatch.setenv("GH_TOKEN", token)
    github.add_issue(OWNER, REPO, 5, BODY)
    github.failure = "echo-token"
    code, out, err = cli(["triage", f"{OWNER}/{REPO}#5", "--api-url", github.url], capsys)
    _one_line(code, out, err)
    assert "Bad credentials" in err and token not in err and "<redacted>" in err


@pytest.mark.parametrize("token", [TOKEN, CLASSIC])
def test_a_token_the_issue_quotes_is_neither_printed_nor_posted(
        github: FakeGitHub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, token: str) -> None:
    monkeypatch.setenv("GH_TOKEN", token)
    key = github.add_issue(OWNER, REPO, 6, f"{BODY}\nmy token is {token}\ncurl -H 'x: {token}' {token}",
                           title=f"driver {token}")
    code, out, err = cli(["triage", f"{OWNER}/{REPO}#6", "--api-url", github.url, "--post", "--json"], capsys)
    assert code == 1, err
    doc = json.loads(out)
    assert doc["posted"]["action"] == "created"
    posted = github.comments[key][-1]["body"]
    for text in (out, err, posted):
        assert token not in text
    assert token not in json.dumps(doc)


# ---------------------------------------------------------------------------- a server that misbehaves


@pytest.mark.parametrize("failure,said", [
    ("drip-body", "did not answer within 2 s"),
    ("drip-headers", "did not answer within 2 s"),
    ("silent", "did not answer within 2 s"),
    ("endless", "larger than 16 MiB"),
    ("gzip-bomb", "larger than 16 MiB"),
    ("deep-json", "nested too deep"),
    ("huge-retry-after", "rate limit is reached (429"),
    ("huge-reset", "rate limit is reached (403"),
    ("echo-token", "refused the token"),
])
def test_a_hostile_server_ends_in_time_in_one_line(github: FakeGitHub, failure: str, said: str) -> None:
    github.add_issue(OWNER, REPO, 8, BODY)
    github.failure = failure
    if failure == "gzip-bomb":
        _bomb()  # made before the clock starts
    code, out, err, seconds = _run_measured(github, 8)
    assert code == 2 and out == "", (code, err)
    lines = err.splitlines()
    assert lines[0].startswith("cudadoctor: error: ") and len(lines) <= 2 and said in lines[0], err
    assert seconds <= TIMEOUT_S + SLACK_S, seconds
    assert TOKEN not in err


# Runs the command and says its peak memory (RUSAGE_CHILDREN of a parent that has no other child).
WRAPPER = ("import resource, subprocess, sys\n"
           "code = subprocess.run(sys.argv[1:]).returncode\n"
           "sys.stderr.write('\\npeak-rss-kib %d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
           "sys.exit(code)\n")


def _run_measured(stub: FakeGitHub, number: int) -> Tuple[int, str, str, float]:
    """``cudadoctor triage`` as a child process: (exit code, stdout, stderr, seconds from its first
    request to its end: its own start is no part of the budget); its peak memory must stay under
    :data:`MEMORY_BYTES`."""
    env = {**os.environ, "GH_TOKEN": TOKEN, "NO_COLOR": "1"}
    env.pop("GITHUB_API_URL", None)
    done = subprocess.run([sys.executable, "-c", WRAPPER, sys.executable, "-m", "cudadoctor", "triage",
                           f"{OWNER}/{REPO}#{number}", "--api-url", stub.url, "--timeout", str(TIMEOUT_S)],
                          capture_output=True, env=env, timeout=60)
    seconds = time.monotonic() - stub.seen[0].at if stub.seen else 0.0
    err, _, peak = done.stderr.decode("utf-8", "replace").rstrip("\n").rpartition("\npeak-rss-kib ")
    assert int(peak) * 1024 <= MEMORY_BYTES, f"peak memory {int(peak) >> 10} MiB"
    return done.returncode, done.stdout.decode("utf-8", "replace"), err.strip("\n") + "\n", seconds


def test_the_budget_is_for_all_the_calls_together(github: FakeGitHub) -> None:
    """Each answer comes in time, all of them do not: the issue and 40 pages of comments at 0.1 s
    each stop at the one deadline."""
    key = github.add_issue(OWNER, REPO, 9, BODY)
    for i in range(40):
        github.add_comment(key, "reporter", f"comment {i}")
    github.page_size = 1
    github.failure, github.slow_s = "slow", 0.1
    code, _, err, seconds = _run_measured(github, 9)
    assert code == 2 and "did not answer within 2 s" in err, err
    assert seconds <= TIMEOUT_S + SLACK_S, seconds


def test_a_gzip_answer_in_bounds_is_read(github: FakeGitHub, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Compression itself is fine: GitHub sends gzip."""
    github.add_issue(OWNER, REPO, 10, BODY)
    github.gzip = True
    code, out, err = cli(["triage", f"{OWNER}/{REPO}#10", "--api-url", github.url, "--json"], capsys)
    assert code == 1, err
    assert json.loads(out)["causes"][0]["category"] == "no_driver"


def test_a_deeply_nested_issue_file_is_read_as_text(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"issue": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, out, err = cli(["triage", str(path)], capsys)
    assert code == 0 and "Traceback" not in err and "internal error" not in err, err
    assert out.startswith("<!-- cudadoctor-triage -->")
