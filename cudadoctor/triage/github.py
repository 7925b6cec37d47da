"""The few calls of GitHub's REST API that triage makes, through ``requests``: read an issue and
its comments (every page), create and edit a comment, add labels.

Every failure becomes one :class:`GitHubError` line (a ``CudadoctorError``: exit 2): a rate limit
(403 with ``X-RateLimit-Remaining: 0``, a secondary limit, 429), a refused or missing token (401,
403), an issue not found (404) or gone (410), a refused write (422), a server error, a timeout,
no connection, an answer that is not JSON. Redirects are followed by hand: a renamed repository
answers 301 to a GET and 307 to a write (the method is kept); a redirect to another host or
scheme, a 301-303 answer to a write (the method would turn into a GET) and a loop are errors.
The token goes only to the API's own host, and never in clear over http except to this machine.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple
from urllib.parse import urljoin, urlsplit

from cudadoctor.errors import CudadoctorError
from cudadoctor.triage.refs import IssueRef, is_loopback
from cudadoctor.version import __version__

if TYPE_CHECKING:
    import requests

DEFAULT_TIMEOUT_S = 15.0
MAX_REDIRECTS = 5
PER_PAGE = 100
MAX_PAGES = 50  # 5,000 comments: more is a thread no one reads to the end either
API_VERSION = "2022-11-28"
TOKEN_VARIABLES = ("GH_TOKEN", "GITHUB_TOKEN")  # gh's order: GH_TOKEN first


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


class GitHub:
    """A client of one API (``https://api.github.com``, or a GitHub Enterprise server's
    ``https://HOST/api/v3``) with an optional token."""

    def __init__(self, api_url: str, token: Optional[str] = None, token_name: str = "",
                 timeout_s: float = DEFAULT_TIMEOUT_S, session: Optional["requests.Session"] = None) -> None:
        import requests

        self.api_url = api_url.rstrip("/")
        parts = urlsplit(self.api_url)
        self.origin = (parts.scheme.lower(), (parts.netloc or "").lower())
        if token and parts.scheme.lower() != "https" and not is_loopback(self.api_url):
            raise GitHubError(f"--api-url {self.api_url}: the token would travel in clear over http",
                              hint="use the https URL of the API")
        self.token = token
        self.token_name = token_name
        self.timeout_s = timeout_s
        self.session = session or requests.Session()
        self.session.headers.update({
            "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": f"cudadoctor/{__version__} (triage)",
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
        while url:
            if pages == MAX_PAGES:
                return out, True
            response = self._call("GET", url, f"reading the comments of {ref}", ref=ref)
            value = _decode(response, f"reading the comments of {ref}")
            if not isinstance(value, list):
                raise GitHubError(f"reading the comments of {ref}: GitHub answered with something other than a list")
            out.extend(c for c in value if isinstance(c, dict))
            pages += 1
            url = _next_link(response)
            if url is not None:
                url = urljoin(response.url, url)
                if not self._same_origin(url):
                    raise GitHubError(f"reading the comments of {ref}: the next page is on another host "
                                      f"({_origin_text(url)}); not following it with the token")
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
              ref: Optional[IssueRef] = None) -> "requests.Response":
        import requests

        seen: List[str] = []
        while True:
            headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
            try:
                response = self.session.request(method, url, json=body, headers=headers, timeout=self.timeout_s,
                                                allow_redirects=False)
            except requests.Timeout:
                raise GitHubError(f"{what}: {_origin_text(url)} did not answer within {self.timeout_s:g} s",
                                  hint="try again, or give more time with --timeout") from None
            except requests.ConnectionError as exc:
                raise GitHubError(f"{what}: cannot reach {_origin_text(url)} ({_reason(exc)})",
                                  hint="check the network, or --api-url for GitHub Enterprise") from None
            except requests.RequestException as exc:
                raise GitHubError(f"{what}: the request failed ({type(exc).__name__}: {_reason(exc)})") from None
            if response.status_code in (301, 302, 303, 307, 308):
                url = self._redirect(response, method, url, what, seen)
                continue
            if response.status_code >= 400:
                raise self._error(response, method, what, ref)
            return response

    def _redirect(self, response: "requests.Response", method: str, url: str, what: str, seen: List[str]) -> str:
        location = response.headers.get("Location")
        if not location:
            raise GitHubError(f"{what}: GitHub answered {response.status_code} without saying where to")
        target = urljoin(url, location)
        if not self._same_origin(target):
            raise GitHubError(f"{what}: redirected to another host ({_origin_text(target)}); not following it "
                              "with the token", hint="give the API of that host with --api-url")
        if method != "GET" and response.status_code in (301, 302, 303):
            raise GitHubError(f"{what}: GitHub answered {response.status_code} (moved): the repository was "
                              "renamed or transferred", hint="give the issue under the repository's new name")
        seen.append(url)
        if target in seen or len(seen) > MAX_REDIRECTS:
            raise GitHubError(f"{what}: too many redirects ({len(seen)}, the last to {target})")
        return target

    def _same_origin(self, url: str) -> bool:
        parts = urlsplit(url)
        return (parts.scheme.lower(), (parts.netloc or "").lower()) == self.origin

    def _error(self, response: "requests.Response", method: str, what: str, ref: Optional[IssueRef]) -> GitHubError:
        code = response.status_code
        message = _message(response)
        said = f" ({code}{': ' + message if message else ''})"
        anonymous = self.token is None
        name = self.token_name or "the environment"
        remaining = response.headers.get("X-RateLimit-Remaining")
        if code == 429 or (code == 403 and (remaining == "0" or "rate limit" in message.lower())):
            return GitHubError(f"{what}: GitHub's rate limit is reached{_when(response)}{said}",
                               hint="set GH_TOKEN or GITHUB_TOKEN (anonymous callers get 60 requests an hour)"
                               if anonymous else "wait, or use another token", status=code)
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
            return GitHubError(f"{what}: GitHub answered {code} {response.reason or ''}".rstrip()
                               + "; try again later", status=code)
        return GitHubError(f"{what}: GitHub answered{said}", status=code)


def _decode(response: "requests.Response", what: str) -> Any:
    try:
        return response.json()
    except ValueError:
        kind = response.headers.get("Content-Type", "no content type")
        raise GitHubError(f"{what}: GitHub answered {response.status_code} with something other than JSON "
                          f"({kind[:60]})", hint="check --api-url: it must be the API, not the web site") from None


def _next_link(response: "requests.Response") -> Optional[str]:
    link = response.links.get("next") if response.headers.get("Link") else None
    return str(link["url"]) if link and link.get("url") else None


def _message(response: "requests.Response") -> str:
    """GitHub's own words on an error (``message``, and the first of ``errors``), one short line."""
    try:
        value = response.json()
    except ValueError:
        return ""
    if not isinstance(value, dict):
        return ""
    text = str(value.get("message") or "")
    errors = value.get("errors")
    if isinstance(errors, list) and errors:
        first = errors[0]
        detail = first.get("message") or first.get("code") if isinstance(first, dict) else first
        if detail:
            text = f"{text}: {detail}" if text else str(detail)
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:199] + "…"


def _when(response: "requests.Response") -> str:
    """', retry in 60 s' (Retry-After) or ', until 14:05 UTC' (X-RateLimit-Reset), or nothing."""
    retry = response.headers.get("Retry-After", "").strip()
    if retry.isdigit():
        return f", retry in {int(retry)} s"
    reset = response.headers.get("X-RateLimit-Reset", "").strip()
    if reset.isdigit():
        try:
            at = datetime.datetime.fromtimestamp(int(reset), tz=datetime.timezone.utc)
        except (OverflowError, OSError, ValueError):
            return ""
        return f", until {at:%Y-%m-%d %H:%M} UTC"
    return ""


def _origin_text(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else url[:80]


def _reason(exc: BaseException) -> str:
    """The innermost reason of a requests error, short ('Connection refused')."""
    text = str(exc)
    for marker in ("] ", "): "):
        if marker in text:
            text = text.rsplit(marker, 1)[-1]
    text = " ".join(text.strip("()'\" ").split())
    return text[:120] or type(exc).__name__
