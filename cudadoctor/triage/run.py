"""``cudadoctor triage``'s pipeline (docs/triage.md): read the issue (from GitHub, or from a
file), join the text of its title, body and the reporter's comments, diagnose it with
:func:`cudadoctor.api.diagnose_text` (the one diagnosis of pasted text), build the reply, and on
request post it (editing triage's earlier reply when there is one) and label the issue.

It wraps the API (tests/test_architecture.py lists it with the wrappers). Nothing from the issue
is ever run: its text is only read, matched and quoted.
"""

from __future__ import annotations

from dataclasses import field, replace
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple
from urllib.parse import urlsplit

from cudadoctor.errors import CudadoctorError
from cudadoctor.model.printable import printable
from cudadoctor.record import frozen
from cudadoctor.triage.issue import Issue, Joined, from_api, from_file, join
from cudadoctor.triage.refs import PUBLIC_API, IssueRef, RefError, normalize_api_url, parse_ref

if TYPE_CHECKING:
    from cudadoctor.diagnosis.paste import PasteDiagnosis
    from cudadoctor.triage.github import GitHub
    from cudadoctor.triage.reply import Reply

DEFAULT_LABEL_PREFIX = "cudadoctor: "
LABEL_VERDICTS = ("holds", "likely")  # a label says what the reply says; a mere possibility gets none


@frozen
class Options:
    source: str  # OWNER/REPO#N, an issue's URL, a file, or "-"
    api_url: Optional[str] = None  # --api-url; else $GITHUB_API_URL, else what the reference implies
    timeout_s: float = 15.0
    post: bool = False
    post_always: bool = False  # post even when nothing was found
    label: bool = False
    label_prefix: str = DEFAULT_LABEL_PREFIX
    comments: bool = True  # diagnose the reporter's comments too
    environ: Mapping[str, str] = field(default_factory=dict)


@frozen
class Outcome:
    issue: Issue
    joined: Joined
    diagnosis: PasteDiagnosis
    reply: Reply
    posted: Dict[str, Any]  # {"action": created | edited | unchanged | none, ...}
    labels: Tuple[str, ...] = ()
    notes: Tuple[str, ...] = ()  # what the user should know (comments cut short ...), for stderr
    secrets: Tuple[str, ...] = ()  # never shown (the token): scrubbed from the document

    def document(self) -> Dict[str, Any]:
        from cudadoctor.triage.reply import reply_document

        ref = self.issue.ref
        issue = {"repository": ref.repository if ref else None, "number": ref.number if ref else None,
                 "api_url": ref.api_url if ref else None, "url": self.issue.url or None, "source": self.issue.source}
        document = reply_document(self.reply, self.joined, self.diagnosis, issue, self.posted, self.labels)
        return _scrubbed(document, self.secrets)  # type: ignore[no-any-return]


def triage(options: Options) -> Outcome:
    """Read, diagnose, reply; post and label when asked. Every expected failure is a CudadoctorError.
    The token never appears in what comes back: not in the reply, its document, a note or an error."""
    from cudadoctor.triage.github import scrub, token_from

    token, _ = token_from(options.environ)
    try:
        outcome = _triage(options, token)
    except CudadoctorError as exc:
        if token and (token in exc.message or token in (exc.hint or "")):
            raise CudadoctorError(scrub(exc.message, token), scrub(exc.hint or "", token) or None,
                                  exc.exit_code) from None
        raise
    return replace(outcome, notes=tuple(scrub(n, token) for n in outcome.notes), secrets=(token,) if token else ())


def _scrubbed(value: Any, secrets: Tuple[str, ...]) -> Any:
    """``value`` (JSON: dicts, lists, strings) with every secret replaced in every string."""
    from cudadoctor.triage.github import scrub

    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = scrub(value, secret)
        return value
    if isinstance(value, dict):
        return {_scrubbed(k, secrets): _scrubbed(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrubbed(v, secrets) for v in value]
    return value


def _triage(options: Options, token: Optional[str]) -> Outcome:
    from cudadoctor.api import diagnose_text
    from cudadoctor.triage.reply import build_reply

    writes = options.post or options.post_always or options.label
    api_url = _api_url(options)
    notes: List[str] = []
    try:
        ref = parse_ref(options.source, api_url)
    except RefError as exc:
        raise CudadoctorError(str(exc), hint="give OWNER/REPO#N, an issue's URL, a file or '-'") from None
    client: Optional[GitHub] = None
    if ref is not None:
        client = _client(ref, options, api_url, writes, notes)
        document = client.issue(ref)
        raw_comments: Any = []
        count = document.get("comments")
        if isinstance(count, int) and count > 0 and (options.comments or writes):
            raw_comments, cut = client.comments(ref)
            if cut:
                notes.append(f"{ref} has more comments than triage reads; the first {len(raw_comments):,} were read")
        issue = from_api(ref, document, raw_comments)
    else:
        issue = _read_file(options.source, api_url)
        if writes and issue.ref is None:
            raise CudadoctorError(f"{options.source}: --post and --label need to know which issue this is, and "
                                  "the file does not say", hint="give OWNER/REPO#N or the issue's URL, or the "
                                  "issue's JSON from the API or a workflow's event payload")
        if issue.ref is not None and not _trusted(issue.ref.api_url, api_url):
            # a host a file names (its repository_url) is not contacted: the file could be anyone's
            if writes:
                raise CudadoctorError(f"{_shown(options.source)} names the API {_origin(issue.ref.api_url)}, which "
                                      "triage contacts only when it is given on the command line",
                                      hint=f"add --api-url {_origin(issue.ref.api_url)}/api/v3 (the API of that "
                                      "host) to read and write there")
            if issue.comment_count and not issue.comments and options.comments:
                notes.append(f"the comments were not read: the file names the API {_origin(issue.ref.api_url)}, "
                             "which triage contacts only when given with --api-url (or GITHUB_API_URL)")
        elif issue.ref is not None and issue.comment_count and not issue.comments and (options.comments or writes):
            client = _client(issue.ref, options, api_url, writes, notes)
            raw, cut = client.comments(issue.ref)
            if cut:
                notes.append(f"{issue.ref} has more comments than triage reads; the first {len(raw):,} were read")
            issue = _with_comments(issue, from_api(issue.ref, {}, raw).comments)
    read = issue if options.comments else _with_comments(issue, ())
    joined = join(read)
    if joined.truncated:
        notes.append("the issue's text is longer than triage reads; its end was left out")
    diagnosis = diagnose_text(joined.text, name=issue.source)
    reply = build_reply(diagnosis, joined, secrets=(token,) if token else ())
    posted: Dict[str, Any] = {"action": "none", "why": "not asked (--post)"}
    labels: Tuple[str, ...] = ()
    if writes:
        assert issue.ref is not None
        client = client or _client(issue.ref, options, api_url, writes, notes)
        if options.post or options.post_always:
            posted = _post(client, issue, reply, options.post_always)
        if options.label:
            labels = _label(client, issue.ref, reply, options.label_prefix)
    return Outcome(issue, joined, diagnosis, reply, posted, labels, tuple(notes))


def _api_url(options: Options) -> Optional[str]:
    given = options.api_url or options.environ.get("GITHUB_API_URL") or None
    if given is None:
        return None
    try:
        return normalize_api_url(given)
    except RefError as exc:
        raise CudadoctorError(str(exc)) from None


def _trusted(api_url: str, given: Optional[str]) -> bool:
    """Whether the token may go to ``api_url``: GitHub's own API, or the one given explicitly
    (``--api-url``, ``GITHUB_API_URL``). An API implied by an issue's URL or named by a file is not."""
    return _key(api_url) in (_key(PUBLIC_API), _key(given) if given else None)


def _key(url: str) -> Tuple[str, str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), (parts.netloc or "").lower(), parts.path.rstrip("/")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return printable(f"{parts.scheme}://{parts.netloc}")


def _shown(source: str) -> str:
    return "standard input" if source == "-" else printable(source)


def _client(ref: IssueRef, options: Options, given: Optional[str], writes: bool, notes: List[str]) -> GitHub:
    """The client of the issue's API; with the token only where :func:`_trusted` allows it."""
    from cudadoctor.triage.github import GitHub, token_from

    token, name = token_from(options.environ)
    if token and not _trusted(ref.api_url, given):
        where = _origin(ref.api_url)
        if writes:
            raise CudadoctorError(f"posting and labelling need the token, and triage sends it only to "
                                  f"api.github.com or the API given with --api-url, not to {where}",
                                  hint=f"add --api-url {ref.api_url} if that is your GitHub Enterprise server")
        notes.append(f"the token was not sent to {where}: triage sends it only to api.github.com or the API "
                     f"given with --api-url (or GITHUB_API_URL); the issue was read anonymously")
        return GitHub(ref.api_url, None, "", options.timeout_s, withheld=name)
    return GitHub(ref.api_url, token, name, options.timeout_s)


def _read_file(path: str, api_url: Optional[str]) -> Issue:
    import os

    from cudadoctor.model.reader import ReadError, read_text_file
    from cudadoctor.triage.issue import NotAnIssue

    try:
        text, _ = read_text_file(path)
    except ReadError as exc:
        raise CudadoctorError(f"{path}: {exc.describe()}",
                              hint="give OWNER/REPO#N, an issue's URL, a file or '-' (standard input)") from None
    if "\x00" in text[:65536]:
        raise CudadoctorError(f"{path}: binary data (NUL bytes), not an issue")
    name = "standard input" if path == "-" else os.path.basename(path)
    try:
        return from_file(text, name, api_url)
    except NotAnIssue as exc:
        raise CudadoctorError(str(exc)) from None


def _with_comments(issue: Issue, comments: Tuple[Any, ...]) -> Issue:
    return replace(issue, comments=comments)


def _post(client: GitHub, issue: Issue, reply: Reply, always: bool) -> Dict[str, Any]:
    assert issue.ref is not None
    if not reply.found and not always:
        return {"action": "none", "why": "nothing found (--post-always posts anyway)"}
    own = next((c for c in issue.comments if c.is_own_reply), None)
    if own is not None and own.id is not None:
        if _same(own.body, reply.markdown):
            return {"action": "unchanged", "comment_id": own.id, "url": own.url or None}
        answer = client.edit_comment(issue.ref, own.id, reply.markdown)
        return {"action": "edited", "comment_id": own.id, "url": answer.get("html_url") or own.url or None}
    answer = client.create_comment(issue.ref, reply.markdown)
    cid = answer.get("id")
    return {"action": "created", "comment_id": cid if isinstance(cid, int) else None, "url": answer.get("html_url")}


def _label(client: GitHub, ref: IssueRef, reply: Reply, prefix: str) -> Tuple[str, ...]:
    top = reply.top
    if top is None or top.verdict not in LABEL_VERDICTS:
        return ()
    name = f"{prefix}{top.category}"
    client.add_labels(ref, [name])
    return (name,)


def _same(old: str, new: str) -> bool:
    return old.replace("\r\n", "\n").strip() == new.replace("\r\n", "\n").strip()
