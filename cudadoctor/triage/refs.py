"""Which issue: ``OWNER/REPO#N`` or an issue's (or pull request's) URL, read into an
:class:`IssueRef`; and which API serves it (``api.github.com``, or ``https://HOST/api/v3`` of a
GitHub Enterprise server). Pure: nothing here asks the network."""

from __future__ import annotations

import re
from typing import Optional
from urllib.parse import urlsplit
from cudadoctor.record import frozen

from cudadoctor.model.printable import printable

PUBLIC_HOST = "github.com"
PUBLIC_API = "https://api.github.com"
MAX_NUMBER = 2**31 - 1  # GitHub's issue numbers are 32-bit
# GitHub's rules: an owner is 1-39 letters, digits and inner hyphens; a repository name is letters,
# digits, '.', '-' and '_' (not '.' or '..').
OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?"
REPO = r"[A-Za-z0-9._-]{1,100}"
SHORT = re.compile(rf"({OWNER})/({REPO})#([0-9]{{1,10}})")
URL_PATH = re.compile(rf"/({OWNER})/({REPO})/(?:issues|pull)/([0-9]{{1,10}})/?")
API_PATH = re.compile(rf"(/api/v3)?/repos/({OWNER})/({REPO})/(?:issues|pulls)/([0-9]{{1,10}})/?")


@frozen
class IssueRef:
    """One issue: its repository, its number, and the API that serves it (no trailing slash)."""

    owner: str
    repo: str
    number: int
    api_url: str = PUBLIC_API

    @property
    def repository(self) -> str:
        return f"{self.owner}/{self.repo}"

    def __str__(self) -> str:
        return f"{self.owner}/{self.repo}#{self.number}"

    def path(self, tail: str = "") -> str:
        """The API URL of the issue (``tail``: ``/comments``, ``/labels``)."""
        return f"{self.api_url}/repos/{self.owner}/{self.repo}/issues/{self.number}{tail}"


class RefError(ValueError):
    """An argument that looks like an issue reference but is not a valid one."""


def _valid(owner: str, repo: str, number: str) -> bool:
    return repo not in (".", "..") and "--" not in owner and 0 < int(number) <= MAX_NUMBER


def parse_ref(text: str, api_url: Optional[str] = None) -> Optional[IssueRef]:
    """``OWNER/REPO#N`` or ``https://HOST/OWNER/REPO/issues/N`` (``/pull/N``, an anchor or a
    query after it; ``https://HOST/api/v3/repos/...`` and ``https://api.github.com/repos/...``
    too) as an :class:`IssueRef`; None when ``text`` is neither shape (a file's name, then).
    Raises :class:`RefError` for a reference that has the shape but cannot name an issue
    (number 0, a URL of another kind). ``api_url`` (``--api-url``) overrides the API the host
    implies."""
    text = text.strip()
    short = SHORT.fullmatch(text)
    if short:
        owner, repo, number = short.groups()
        if not _valid(owner, repo, number):
            raise RefError(f"{_shown(text)}: not an issue of a GitHub repository (OWNER/REPO#N, N from 1)")
        return IssueRef(owner, repo, int(number), normalize_api_url(api_url or PUBLIC_API))
    if not re.match(r"(?i)https?://", text):
        return None
    try:
        parts = urlsplit(text)
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        raise RefError(f"{_shown(text)}: not a valid URL") from None
    if not host or parts.username or parts.password:
        raise RefError(f"{_shown(text)}: not an issue's URL (https://HOST/OWNER/REPO/issues/N)")
    netloc = host if port is None else f"{host}:{port}"
    scheme = parts.scheme.lower()
    api = API_PATH.fullmatch(parts.path)
    if api and (host == "api.github.com") != bool(api.group(1)):
        prefix, owner, repo, number = api.groups()
        implied = f"{scheme}://{netloc}{prefix or ''}"
    else:
        page = URL_PATH.fullmatch(parts.path)
        if page is None:
            raise RefError(f"{_shown(text)}: not an issue's URL (https://HOST/OWNER/REPO/issues/N)")
        owner, repo, number = page.groups()
        implied = PUBLIC_API if host in (PUBLIC_HOST, "www.github.com") else f"{scheme}://{netloc}/api/v3"
    if not _valid(owner, repo, number):
        raise RefError(f"{_shown(text)}: not an issue's URL (the number starts at 1)")
    return IssueRef(owner, repo, int(number), normalize_api_url(api_url or implied))


def normalize_api_url(url: str) -> str:
    """``--api-url`` checked: an http(s) URL without credentials, query or anchor; no trailing slash."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 (raises for a port out of range)
    except ValueError:
        raise RefError(f"--api-url {url}: not a valid URL") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise RefError(f"--api-url {url}: give an http(s) URL, e.g. https://ghe.example.com/api/v3")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise RefError(f"--api-url {url}: no credentials, query or anchor in it (the token comes from GH_TOKEN)")
    return text.rstrip("/")


def is_loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine (a test server, an SSH tunnel)."""
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


def _shown(text: str) -> str:
    """The argument as an error line quotes it: control characters escaped, at most 80 characters."""
    shown = printable(text)
    return shown if len(shown) <= 80 else shown[:77] + "..."
