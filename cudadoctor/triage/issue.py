"""An issue as triage reads it, from the API or from a file (an issue's JSON from the API, a
workflow's event payload, ``gh issue view --json``, or plain text), and the one text that is
diagnosed: the title, the body and the reporter's own comments, joined, with a map from each line
of the joined text back to where it was written ("body line 12", "comment by @maya, line 3").

Left out of the text: comments by anyone but the reporter, by bots (``type: Bot``, a
``[bot]`` login, a comment made through a GitHub App) and triage's own earlier replies (they
start with :data:`MARKER`), whoever posted them. Pure: nothing here asks the network.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple
from cudadoctor.record import frozen

from cudadoctor.triage.refs import OWNER, REPO, IssueRef, normalize_api_url

MARKER = "<!-- cudadoctor-triage -->"  # the first line of every reply: how a later run finds it
MAX_TEXT = 1 << 20  # characters of the joined text diagnosed (a GitHub body holds at most 65,536)
# Who may have posted triage's reply: a bot (the workflow's token), or someone with write access
# (a maintainer's own token). A comment of anyone else that starts with the marker is not ours.
REPLY_AUTHORS = ("OWNER", "MEMBER", "COLLABORATOR")
MAX_URL = 2048  # a longer repository URL is no API's
_REPOSITORY_URL = re.compile(rf"(.*)/repos/({OWNER})/({REPO})/?")


@frozen
class Comment:
    id: Optional[int]  # None: a comment of a file that has no ids (gh's JSON has node ids only)
    author: str
    body: str
    bot: bool = False
    association: str = ""  # OWNER | MEMBER | COLLABORATOR | CONTRIBUTOR | NONE ...
    url: str = ""

    @property
    def is_reply(self) -> bool:
        """Whether this is a reply of triage (it starts with the marker)."""
        return self.body.lstrip().startswith(MARKER)

    @property
    def is_own_reply(self) -> bool:
        """A reply of triage that a later run may edit: posted by a bot or by someone with write access."""
        return self.is_reply and self.id is not None and (self.bot or self.association in REPLY_AUTHORS)


@frozen
class Issue:
    ref: Optional[IssueRef]  # None: a file that does not say which issue it is
    title: str
    author: str
    body: str
    comments: Tuple[Comment, ...] = ()
    comment_count: int = 0  # what the issue says it has (its comments may not have been read)
    url: str = ""
    source: str = ""  # where it was read: "OWNER/REPO#N", a file's name, "standard input"


@frozen
class Part:
    """One piece of the joined text: the title, the body, or a comment, and its lines there."""

    origin: str  # title | body | comment
    author: str
    first: int  # 1-based, inclusive, in the joined text
    last: int
    comment_id: Optional[int] = None


@frozen
class Joined:
    text: str
    parts: Tuple[Part, ...]
    left_out: Tuple[Tuple[str, str], ...]  # (who, why) of each comment not read
    truncated: bool = False

    def where(self, line: Optional[int]) -> str:
        """Where line ``line`` of the joined text was written, in words."""
        if line is None:
            return ""
        for part in self.parts:
            if part.first <= line <= part.last:
                n = line - part.first + 1
                if part.origin == "title":
                    return "the title"
                if part.origin == "body":
                    return f"body line {n}"
                return f"comment by @{part.author}, line {n}"
        return f"line {line}"


def join(issue: Issue) -> Joined:
    """The title, the body and the reporter's comments as one text, with its map."""
    pieces: List[Tuple[str, str, str, Optional[int]]] = []  # (origin, author, text, comment id)
    left_out: List[Tuple[str, str]] = []
    if issue.title.strip():
        pieces.append(("title", issue.author, " ".join(issue.title.split()), None))
    if issue.body.strip():
        pieces.append(("body", issue.author, issue.body, None))
    for c in issue.comments:
        who = f"@{c.author}" + (f" (comment {c.id})" if c.id is not None else "")
        if c.is_reply:
            left_out.append((who, "a reply of cudadoctor triage"))
        elif c.bot:
            left_out.append((who, "a bot"))
        elif not issue.author or c.author != issue.author:
            left_out.append((who, "not the reporter"))
        elif c.body.strip():
            pieces.append(("comment", c.author, c.body, c.id))
    lines: List[str] = []
    parts: List[Part] = []
    size = 0
    truncated = False
    for origin, author, text, comment_id in pieces:
        own = text.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n").split("\n")
        if size + len(text) > MAX_TEXT:
            truncated = True
            left_out.append((f"@{author}" + (f" (comment {comment_id})" if comment_id else ""),
                             "past the size read"))
            continue
        size += len(text)
        if lines:
            lines.append("")  # a blank line between the pieces: one never runs into the next
        first = len(lines) + 1
        lines.extend(own)
        parts.append(Part(origin, author, first, len(lines), comment_id))
    return Joined("\n".join(lines) + ("\n" if lines else ""), tuple(parts), tuple(left_out), truncated)


# ---------------------------------------------------------------------------- reading


def from_api(ref: IssueRef, issue: Dict[str, Any], comments: Sequence[Dict[str, Any]] = ()) -> Issue:
    """The issue as the API gave it (``GET /repos/O/R/issues/N`` and its comments)."""
    return Issue(ref=ref, title=_str(issue.get("title")), author=_login(issue.get("user")),
                 body=_str(issue.get("body")), comments=tuple(_api_comment(c) for c in comments),
                 comment_count=_int(issue.get("comments")), url=_str(issue.get("html_url")), source=str(ref))


def _api_comment(c: Dict[str, Any]) -> Comment:
    user = c.get("user") if isinstance(c.get("user"), dict) else {}
    login = _login(user)
    bot = (isinstance(user, dict) and user.get("type") == "Bot") or login.endswith("[bot]") \
        or bool(c.get("performed_via_github_app"))
    cid = c.get("id")
    return Comment(id=cid if isinstance(cid, int) and not isinstance(cid, bool) else None, author=login,
                   body=_str(c.get("body")), bot=bot, association=_str(c.get("author_association")),
                   url=_str(c.get("html_url")))


class NotAnIssue(ValueError):
    """A JSON document that is neither an issue, an event payload nor gh's issue JSON."""


def from_file(text: str, name: str, api_url: Optional[str] = None) -> Issue:
    """What a file (or standard input) holds: an issue's JSON from the API, a workflow's event
    payload (``$GITHUB_EVENT_PATH``: ``issue`` and ``repository``), ``gh issue view --json
    title,body,author,comments``, or else the text of an issue. ``api_url`` (``--api-url``)
    overrides the API the JSON names."""
    stripped = text.lstrip("\ufeff \t\r\n")
    document: Any = None
    if stripped.startswith("{"):
        try:
            document = json.loads(stripped)
        except (ValueError, RecursionError):
            document = None  # a text that starts with a brace (or JSON nested too deep): read as text
    if not isinstance(document, dict):
        return Issue(ref=None, title="", author="", body=text, source=name)
    inner = document.get("issue")
    issue: Dict[str, Any] = inner if isinstance(inner, dict) else document
    if "body" not in issue and "title" not in issue:
        raise NotAnIssue(f"{name}: a JSON document that is not an issue (no title or body; give the issue's "
                         "JSON from the API, a workflow's event payload, `gh issue view --json "
                         "title,body,author,comments`, or its text)")
    ref = _ref_of(document, issue, api_url)
    comments: Tuple[Comment, ...] = ()
    raw = issue.get("comments")
    if isinstance(raw, list):  # gh issue view --json comments
        comments = tuple(_gh_comment(c) for c in raw if isinstance(c, dict))
    author = _login(issue.get("user")) or _login(issue.get("author"))
    return Issue(ref=ref, title=_str(issue.get("title")), author=author, body=_str(issue.get("body")),
                 comments=comments, comment_count=len(comments) if isinstance(raw, list) else _int(raw),
                 url=_str(issue.get("html_url") or issue.get("url")), source=name)


def _gh_comment(c: Dict[str, Any]) -> Comment:
    login = _login(c.get("author"))
    author = c.get("author")
    return Comment(id=None, author=login, body=_str(c.get("body")),
                   bot=login.endswith("[bot]") or login.startswith("app/")
                   or (isinstance(author, dict) and author.get("is_bot") is True),
                   association=_str(c.get("authorAssociation")), url=_str(c.get("url")))


def _ref_of(document: Dict[str, Any], issue: Dict[str, Any], api_url: Optional[str]) -> Optional[IssueRef]:
    number = issue.get("number")
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        return None
    repository = document.get("repository")
    for url in (repository.get("url") if isinstance(repository, dict) else None, issue.get("repository_url")):
        m = _REPOSITORY_URL.fullmatch(url) if isinstance(url, str) and len(url) <= MAX_URL else None
        if m:
            try:
                api = normalize_api_url(api_url or m.group(1))
            except ValueError:
                return None
            return IssueRef(m.group(2), m.group(3), number, api)
    return None


def _login(user: Any) -> str:
    login = user.get("login") if isinstance(user, dict) else None
    return login if isinstance(login, str) else ""


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
