"""The few calls of GitHub's REST API that triage makes, through ``requests``: read an issue and
its comments (every page), create and edit a comment, add labels.

Every failure becomes one :class:`GitHubError` line (a ``CudadoctorError``: exit 2): a rate limit
(403 with ``X-RateLimit-Remaining: 0``, a secondary limit, 429), a refused or missing token (401,
403), an issue not found (404) or gone (410), a refused write (422), a server error, a timeout,
no connection, an answer that is not JSON. Redirects are followed by hand: a renamed repository
answers 301 to a GET and 307 to a write (the method is kept); a redirect to another host or
scheme, a 301-303 answer to a write (the method would turn into a GET) and a loop are errors.
The token goes only to the API's own host, and never in clear over http except to this machine.

A server cannot hold triage up or fill its memory: all the calls of one client share one time
budget (``timeout_s``: connecting, every page, every write; an answer that trickles in byte by
byte ends with it), each answer is read up to :data:`MAX_ANSWER` bytes, decompressed (a gzip
bomb ends there), all of them together up to :data:`MAX_TOTAL`, a JSON nested deeper than
Python's recursion limit is an error, and the numbers of ``Retry-After`` and
``X-RateLimit-Reset`` are read only when they are short. The token is never quoted back: GitHub's
words on an error are scrubbed of it.
"""

from __future__ import annotations

import datetime
import json
import threading
import time
import zlib
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Tuple
from urllib.parse import urljoin, urlsplit

from cudadoctor.errors import CudadoctorError
from cudadoctor.record import frozen
from cudadoctor.triage.refs import IssueRef, is_loopback
from cudadoctor.version import __version__

if TYPE_CHECKING:
    import requests

DEFAULT_TIMEOUT_S = 15.0
MAX_REDIRECTS = 5
PER_PAGE = 100
MAX_PAGES = 50  # 5,000 comments: more is a thread no one reads to the end either
MAX_ANSWER = 16 << 20  # bytes of one answer, decompressed: a page of 100 comments of 65,536 characters is ~7 MB
MAX_TOTAL = 64 << 20  # bytes of all the answers of one triage
CHUNK = 64 << 10
MAX_HEADER_NUMBER = 12  # digits of Retry-After or X-RateLimit-Reset read (a 5,000-digit one is no time)
API_VERSION = "2022-11-28"
TOKEN_VARIABLES = ("GH_TOKEN", "GITHUB_TOKEN")  # gh's order: GH_TOKEN first
REDACTED = "<redacted>"
NESTED = "nested too deep"


class GitHubError(CudadoctorError):
    """A call to GitHub that failed, said in one line (and a hint)."""

    def __init__(self, message: str, hint: Optional[str] = None, status: Optional[int] = None) -> None:
        super().__init__(message, hint)
        self.status = status


def token_from(environ: Mapping[str, str]) -> Tuple[Optional[str], str]:
    """(the token, the variable it came from): ``GH_TOKEN``, else ``GITHUB_TOKEN``; (None, "") when
    neither is set (or both are empty): anonymous."""
    for name in TOKEN_VARIABLES:
        value = environ.get(name, "").strip()
        if value:
            return value, name
    return None, ""


def scrub(text: str, token: Optional[str]) -> str:
    """``text`` without ``token`` (whatever its form) anywhere in it."""
    return text.replace(token, REDACTED) if token and text else text


@frozen
class Answer:
    """One answer of the API, read whole (within the budgets)."""

    status: int
    reason: str
    headers: Mapping[str, str]  # case-insensitive (requests' own mapping)
    url: str
    body: bytes
    links: Mapping[str, Mapping[str, str]]

    def json(self) -> Any:
        """The body as JSON; ValueError for anything else (not JSON, not UTF-8, nested too deep)."""
        try:
            return json.loads(self.body.decode("utf-8-sig"))
        except RecursionError:
            raise ValueError(NESTED) from None
        except UnicodeDecodeError as exc:
            raise ValueError(str(exc)) from None


class GitHub:
    """A client of one API (``https://api.github.com``, or a GitHub Enterprise server's
    ``https://HOST/api/v3``) with an optional token. ``timeout_s`` is the time all its calls may
    take together."""

    def __init__(self, api_url: str, token: Optional[str] = None, token_name: str = "",
                 timeout_s: float = DEFAULT_TIMEOUT_S, session: Optional["requests.Session"] = None,
                 withheld: str = "") -> None:
        import requests

        self.api_url = api_url.rstrip("/")
        parts = urlsplit(self.api_url)
        self.origin = (parts.scheme.lower(), (parts.netloc or "").lower())
        if token and parts.scheme.lower() != "https" and not is_loopback(self.api_url):
            raise GitHubError(f"--api-url {self.api_url}: the token would travel in clear over http",
                              hint="use the https URL of the API")
        self.token = token
        self.token_name = token_name
        self.withheld = withheld  # the variable of a token not sent to this API (not one given explicitly)
        self.timeout_s = timeout_s
        self.spent_s = 0.0  # time the calls took so far
        self.read_bytes = 0  # bytes of every answer so far, decompressed
        self.session = session or requests.Session()
        self.session.headers.update({
            "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": f"cudadoctor/{__version__} (triage)", "Accept-Encoding": "gzip, deflate",
        })

    # ------------------------------------------------------------------ the calls

    def issue(self, ref: IssueRef) -> Dict[str, Any]:
        value = self._json("GET", ref.path(), f"reading {ref}", ref=ref)
        if not isinstance(value, dict):
            raise GitHubError(f"reading {ref}: GitHub answered with something other than an issue")
        return value

    def comments(self, ref: IssueRef) -> Tuple[List[Dict[str, Any]], bool]:
        """Every comment, oldest first, following the ``Link: rel="next"`` pages; and whether
        :data:`MAX_PAGES` stopped the reading early."""
        url: Optional[str] = ref.path(f"/comments?per_page={PER_PAGE}")
        out: List[Dict[str, Any]] = []
        pages = 0
        what = f"reading the comments of {ref}"
        while url:
            if pages == MAX_PAGES:
                return out, True
            answer = self._call("GET", url, what, ref=ref)
            value = _decode(answer, what)
            if not isinstance(value, list):
                raise GitHubError(f"{what}: GitHub answered with something other than a list")
            out.extend(c for c in value if isinstance(c, dict))
            pages += 1
            url = _next_link(answer)
            if url is not None:
                url = _joined(answer.url, url)
                if url is None or not self._same_origin(url):
                    raise GitHubError(f"{what}: the next page is on another host "
                                      f"({_origin_text(url or '')}); not following it with the token")
        return out, False

    def create_comment(self, ref: IssueRef, body: str) -> Dict[str, Any]:
        value = self._json("POST", ref.path("/comments"), f"commenting on {ref}", {"body": body}, ref=ref)
        return value if isinstance(value, dict) else {}

    def edit_comment(self, ref: IssueRef, comment_id: int, body: str) -> Dict[str, Any]:
        url = f"{ref.api_url}/repos/{ref.owner}/{ref.repo}/issues/comments/{comment_id}"
        value = self._json("PATCH", url, f"editing comment {comment_id} of {ref}", {"body": body}, ref=ref)
        return value if isinstance(value, dict) else {}

    def add_labels(self, ref: IssueRef, labels: List[str]) -> List[str]:
        value = self._json("POST", ref.path("/labels"), f"labelling {ref}", {"labels": labels}, ref=ref)
        return [str(x.get("name")) for x in value if isinstance(x, dict)] if isinstance(value, list) else []

    # ------------------------------------------------------------------ the plumbing

    def _json(self, method: str, url: str, what: str, body: Optional[Dict[str, Any]] = None,
              ref: Optional[IssueRef] = None) -> Any:
        return _decode(self._call(method, url, what, body, ref), what)

    def _call(self, method: str, url: str, what: str, body: Optional[Dict[str, Any]] = None,
              ref: Optional[IssueRef] = None) -> Answer:
        seen: List[str] = []
        while True:
            answer = self._exchange(method, url, what, body)
            if answer.status in (301, 302, 303, 307, 308):
                url = self._redirect(answer, method, url, what, seen)
                continue
            if answer.status >= 400:
                raise self._error(answer, method, what, ref)
            return answer

    def _exchange(self, method: str, url: str, what: str, body: Optional[Dict[str, Any]]) -> Answer:
        """One request and its whole answer, within what is left of the time budget. The request
        runs in a thread of its own, so that nothing the server does (headers or a body that
        trickle in, a connection that never closes) outlasts the budget."""
        left = self.timeout_s - self.spent_s
        if left <= 0:
            raise self._timeout(url, what)
        box: Dict[str, Any] = {}
        done = threading.Event()
        cancelled = threading.Event()

        def run() -> None:
            try:
                box["answer"] = self._request(method, url, body, left, cancelled, box)
            except BaseException as exc:  # noqa: BLE001 (raised again in the caller's thread)
                box["error"] = exc
            finally:
                done.set()

        start = time.monotonic()
        threading.Thread(target=run, name="cudadoctor-github", daemon=True).start()
        finished = done.wait(left)
        self.spent_s += time.monotonic() - start
        if not finished:
            cancelled.set()
            _close(box.get("response"))
            raise self._timeout(url, what)
        if "error" in box:
            raise self._failure(box["error"], url, what)
        answer: Answer = box["answer"]
        return answer

    def _request(self, method: str, url: str, body: Optional[Dict[str, Any]], left: float,
                 cancelled: threading.Event, box: Dict[str, Any]) -> Answer:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        response = self.session.request(method, url, json=body, headers=headers, timeout=(left, left),
                                        allow_redirects=False, stream=True)
        box["response"] = response
        try:
            data = _read_body(response, min(MAX_ANSWER, MAX_TOTAL - self.read_bytes), cancelled.is_set)
        finally:
            response.close()
        self.read_bytes += len(data)
        links = response.links if response.headers.get("Link") else {}
        return Answer(response.status_code, response.reason or "", response.headers, response.url or url, data, links)

    def _timeout(self, url: str, what: str) -> GitHubError:
        return GitHubError(f"{what}: {_origin_text(url)} did not answer within {self.timeout_s:g} s (the time "
                           "all of triage's calls may take)", hint="try again, or give more time with --timeout")

    def _failure(self, exc: BaseException, url: str, what: str) -> BaseException:
        """The exception of a request's thread, as its caller raises it."""
        import requests

        if isinstance(exc, GitHubError):
            return GitHubError(f"{what}: {exc.message}", exc.hint, exc.status)
        if isinstance(exc, requests.Timeout):
            return self._timeout(url, what)
        if isinstance(exc, requests.ConnectionError):
            return GitHubError(f"{what}: cannot reach {_origin_text(url)} ({scrub(_reason(exc), self.token)})",
                               hint="check the network, or --api-url for GitHub Enterprise")
        if isinstance(exc, (requests.RequestException, OSError, ValueError)):
            return GitHubError(f"{what}: the request failed ({type(exc).__name__}: "
                               f"{scrub(_reason(exc), self.token)})")
        return exc

    def _redirect(self, answer: Answer, method: str, url: str, what: str, seen: List[str]) -> str:
        location = answer.headers.get("Location")
        if not location:
            raise GitHubError(f"{what}: GitHub answered {answer.status} without saying where to")
        target = _joined(url, location)
        if target is None or not self._same_origin(target):
            raise GitHubError(f"{what}: redirected to another host ({_origin_text(target or location)}); not "
                              "following it with the token", hint="give the API of that host with --api-url")
        if method != "GET" and answer.status in (301, 302, 303):
            raise GitHubError(f"{what}: GitHub answered {answer.status} (moved): the repository was "
                              "renamed or transferred", hint="give the issue under the repository's new name")
        seen.append(url)
        if target in seen or len(seen) > MAX_REDIRECTS:
            raise GitHubError(f"{what}: too many redirects ({len(seen)}, the last to {_origin_text(target)})")
        return target

    def _same_origin(self, url: str) -> bool:
        try:
            parts = urlsplit(url)
        except ValueError:
            return False
        return (parts.scheme.lower(), (parts.netloc or "").lower()) == self.origin

    def _error(self, answer: Answer, method: str, what: str, ref: Optional[IssueRef]) -> GitHubError:
        code = answer.status
        message = scrub(_message(answer), self.token)
        said = f" ({code}{': ' + message if message else ''})"
        anonymous = self.token is None
        name = self.token_name or "the environment"
        remaining = answer.headers.get("X-RateLimit-Remaining")
        if code == 429 or (code == 403 and (remaining == "0" or "rate limit" in message.lower())):
            return GitHubError(f"{what}: GitHub's rate limit is reached{_when(answer.headers)}{said}",
                               hint="set GH_TOKEN or GITHUB_TOKEN (anonymous callers get 60 requests an hour)"
                               if anonymous else "wait, or use another token", status=code)
        if anonymous and self.withheld and code in (401, 403, 404):
            return GitHubError(f"{what}: {ref if ref else 'it'} cannot be read without a token{said}",
                               hint=f"the token in {self.withheld} was not sent to {_origin_text(self.api_url)}: give "
                               f"--api-url {self.api_url} to send it there", status=code)
        if code == 401:
            return GitHubError(f"{what}: GitHub refused the token{said}",
                               hint=f"check {self.token_name or 'GH_TOKEN'}: it may be expired or revoked", status=code)
        if code == 403:
            writing = method != "GET"
            if writing:
                hint = ("set GH_TOKEN or GITHUB_TOKEN to a token with" if anonymous else f"the token in {name} needs") \
                    + " the permission 'issues: write'"
            else:
                hint = ("set GH_TOKEN or GITHUB_TOKEN to a token that can read the repository" if anonymous
                        else f"the token in {name} cannot read the repository")
            return GitHubError(f"{what}: GitHub refused it{said}", hint=hint, status=code)
        if code == 404:
            return GitHubError(f"{what}: {ref if ref else 'it'} was not found{said}",
                               hint="it may be private: set GH_TOKEN or GITHUB_TOKEN to a token that can read it"
                               if anonymous
                               else "check the name; a private repository needs a token that can read it",
                               status=code)
        if code == 410:
            return GitHubError(f"{what}: it is gone{said}: the issue was deleted or the repository has issues "
                               "turned off", status=code)
        if code == 422:
            return GitHubError(f"{what}: GitHub refused the request{said}", status=code)
        if code >= 500:
            reason = scrub(_one_line(answer.reason)[:60], self.token)
            return GitHubError(f"{what}: GitHub answered {code} {reason}".rstrip() + "; try again later", status=code)
        return GitHubError(f"{what}: GitHub answered{said}", status=code)


def _read_body(response: "requests.Response", limit: int, cancelled: Callable[[], bool]) -> bytes:
    """The answer's body, decompressed (gzip, deflate or none), at most ``limit`` bytes: a larger
    one is an error, whatever its compressed size."""
    encoding = (response.headers.get("Content-Encoding") or "").strip().lower()
    decoder: Any = None
    if encoding in ("gzip", "x-gzip"):
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        decoder = zlib.decompressobj()
    elif encoding not in ("", "identity"):
        raise GitHubError(f"GitHub answered in an encoding triage does not read ({_one_line(encoding)[:40]})")
    out = bytearray()
    try:
        for chunk in response.raw.stream(CHUNK, decode_content=False):
            if cancelled():
                break
            data = chunk
            while data:
                out += decoder.decompress(data, limit - len(out) + 1) if decoder is not None else data
                if len(out) > limit:
                    raise GitHubError(f"the answer is larger than {limit >> 20} MiB; not read further",
                                      hint="check --api-url: it must be GitHub's REST API")
                data = decoder.unconsumed_tail if decoder is not None else b""
    except zlib.error as exc:
        raise GitHubError(f"the answer could not be decompressed ({exc})") from None
    return bytes(out)


def _close(response: Any) -> None:
    """Cut the connection of an answer that ran out of time, so that its thread ends too."""
    import socket

    if response is None:
        return
    try:
        response.raw._fp.fp.raw._sock.shutdown(socket.SHUT_RDWR)  # http.client's socket under urllib3's response
    except (AttributeError, OSError):
        pass


def _joined(base: str, location: str) -> Optional[str]:
    try:
        return urljoin(base, location)
    except ValueError:
        return None


def _decode(answer: Answer, what: str) -> Any:
    try:
        return answer.json()
    except ValueError as exc:
        if str(exc) == NESTED:
            raise GitHubError(f"{what}: GitHub answered with JSON nested too deep to read") from None
        kind = _one_line(answer.headers.get("Content-Type", "no content type"))
        raise GitHubError(f"{what}: GitHub answered {answer.status} with something other than JSON "
                          f"({kind[:60]})", hint="check --api-url: it must be the API, not the web site") from None


def _next_link(answer: Answer) -> Optional[str]:
    link = answer.links.get("next")
    return str(link["url"]) if link and link.get("url") else None


def _message(answer: Answer) -> str:
    """GitHub's own words on an error (``message``, and the first of ``errors``), one short line."""
    try:
        value = answer.json()
    except ValueError:
        return ""
    if not isinstance(value, dict):
        return ""
    text = str(value.get("message") or "")[:1000]
    errors = value.get("errors")
    if isinstance(errors, list) and errors:
        first = errors[0]
        detail = first.get("message") or first.get("code") if isinstance(first, dict) else first
        if detail:
            text = f"{text}: {str(detail)[:1000]}" if text else str(detail)[:1000]
    text = _one_line(text)
    return text if len(text) <= 200 else text[:199] + "…"


def _when(headers: Mapping[str, str]) -> str:
    """', retry in 60 s' (Retry-After) or ', until 14:05 UTC' (X-RateLimit-Reset), or nothing; a
    number too long to be a time says nothing."""
    retry = _header_number(headers.get("Retry-After"))
    if retry is not None:
        return f", retry in {retry} s"
    reset = _header_number(headers.get("X-RateLimit-Reset"))
    if reset is not None:
        try:
            at = datetime.datetime.fromtimestamp(reset, tz=datetime.timezone.utc)
        except (OverflowError, OSError, ValueError):
            return ""
        return f", until {at:%Y-%m-%d %H:%M} UTC"
    return ""


def _header_number(value: Optional[str]) -> Optional[int]:
    text = (value or "").strip()
    if not text or len(text) > MAX_HEADER_NUMBER or not (text.isascii() and text.isdigit()):
        return None
    return int(text)


def _origin_text(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return _one_line(url)[:80]
    return _one_line(f"{parts.scheme}://{parts.netloc}")[:120] if parts.netloc else _one_line(url)[:80]


def _one_line(text: str) -> str:
    from cudadoctor.model.printable import printable

    return printable(" ".join(str(text).split()))


def _reason(exc: BaseException) -> str:
    """The innermost reason of a requests error, short ('Connection refused')."""
    text = str(exc)
    for marker in ("] ", "): "):
        if marker in text:
            text = text.rsplit(marker, 1)[-1]
    text = _one_line(text.strip("()'\" "))
    return text[:120] or type(exc).__name__
