"""``install --verify``: ask the package index whether it really serves the planned wheels.

For each (name, version) of a plan (an exact version, or a release series such as ``15.*``,
resolved to the newest release the index serves), :func:`verify` fetches the project's page from the
simple repository API, in JSON (PEP 691) when the index offers it and in HTML (PEP 503)
otherwise, and looks for a wheel of that version whose tags this Python and platform accept
(rules in :mod:`cudadoctor.planner.wheel_tags`). A plan that pins ``torch==2.5.1`` matches PyTorch's
``torch-2.5.1+cu124-...`` files: a public version matches its local versions (PEP 440).

Every failure becomes a one-line message in the result, never an exception or a hang: each
request has connect and read timeouts and a whole-page deadline, connection errors and 5xx
answers are retried a few times with backoff, redirects are bounded and pages are size-capped.
A failure of the index itself (down, slow, redirect loop, oversized or unreadable page) stops the
run and fills ``VerifyResult.error``; a missing project or wheel is reported per package.

``requests`` is imported only inside :func:`verify`: nothing that ``check`` loads imports this
module, and this module imports no HTTP code at import time.
"""

from __future__ import annotations

import enum
import json
import math
import posixpath
import time
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple, Union
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit
from cudadoctor.record import frozen

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudadoctor.version import __version__
from cudadoctor.errors import CudadoctorError
from cudadoctor.planner.wheel_tags import (
    TagTarget,
    WheelName,
    describe_interpreters,
    normalize_name,
    parse_wheel_filename,
    tag_target,
)

if TYPE_CHECKING:
    import requests

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
ACCEPT = f"{JSON_TYPE}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
MAX_BYTES = 32 * 1024 * 1024  # one project page: generous, yet no index can fill memory
MAX_REDIRECTS = 5
RETRIES = 2  # after the first attempt, for connection errors, 429 and 5xx
BACKOFF_S = 0.25  # doubled after each retry
PAGE_DEADLINE_FACTOR = 3  # a whole page must arrive within 3 x timeout, however slowly it trickles
CHUNK = 64 * 1024


class WheelStatus(str, enum.Enum):
    FOUND = "found"
    NO_PROJECT = "no_project"  # the index answered 404/410 for the project
    NO_VERSION = "no_version"  # the project has no file of the pinned version
    NO_COMPATIBLE_WHEEL = "no_compatible_wheel"  # the version exists, not for this Python/platform
    NOT_CHECKED = "not_checked"  # an index-level failure stopped the run first


@frozen
class WheelFile:
    filename: str
    url: str
    yanked: bool = False  # PEP 592: pip still installs a yanked file for an exact == pin


@frozen
class PackageVerdict:
    name: str
    version: str
    status: WheelStatus
    wheel: Optional[WheelFile] = None  # when FOUND: the file pip would choose (highest version, best tag)
    reason: Optional[str] = None  # one line, when it is not


@frozen
class VerifyResult:
    ok: bool  # every package has a wheel and the index answered
    index_url: str  # as shown (credentials removed)
    python: str  # the interpreter tag checked: cp311
    platform: str  # the platform in wheel-tag words: linux_x86_64
    packages: Tuple[PackageVerdict, ...]
    error: Optional[str] = None  # one line, for a failure of the index itself
    not_checked: Tuple[str, ...] = ()  # what this check did not reach, one line each (install --verify says it)

    @property
    def problems(self) -> Tuple[str, ...]:
        """One line per thing that is wrong, in order; empty when ok."""
        lines = [self.error] if self.error else []
        return tuple(lines + [p.reason for p in self.packages if p.reason])


@frozen
class _File:
    filename: str
    url: str
    requires_python: Optional[str]
    yanked: bool


class _IndexFailure(Exception):
    """The index itself failed: the message is the whole story, and the run stops."""


class _NoProject(Exception):
    pass


def verify(
    packages: Sequence[Tuple[str, str]],
    index_url: str,
    python_version: str,
    platform_tag: str,
    timeout: float = 10.0,
    *,
    libc: Optional[str] = None,
) -> VerifyResult:
    """Check that ``index_url`` serves a wheel of each ``(name, version)`` for ``python_version``
    ("3.11") on ``platform_tag`` ("linux-x86_64"). ``libc`` ("glibc 2.28") also rules out
    manylinux wheels that need a newer glibc; by default any manylinux wheel counts.

    Network and index failures come back in the result. Bad arguments (a version that is not
    PEP 440, an unreadable Python or platform, a non-HTTP URL) raise CudadoctorError."""
    target = tag_target(python_version, platform_tag, libc)
    shown = _redact(index_url)
    if _scheme(index_url) not in ("http", "https"):
        raise CudadoctorError(f"--verify needs an http(s) index URL, not {shown!r}")
    if not (timeout > 0 and math.isfinite(timeout)):
        raise CudadoctorError(f"the --verify timeout must be a positive number of seconds, not {timeout!r}")
    pins = [(name, version, _read_pin(name, version)) for name, version in packages]
    verdicts: List[PackageVerdict] = []
    error: Optional[str] = None
    import requests  # only here: the HTTP stack costs import time nothing else should pay

    with requests.Session() as session:
        session.headers["User-Agent"] = f"cudadoctor/{__version__} (install --verify)"
        index = _Index(session, index_url, shown, timeout)
        for name, version, pin in pins:
            if error is None:
                try:
                    verdicts.append(_check(index, name, version, pin, target))
                    continue
                except _IndexFailure as exc:
                    error = str(exc)
            verdicts.append(PackageVerdict(name, version, WheelStatus.NOT_CHECKED))
    ok = error is None and all(v.status == WheelStatus.FOUND for v in verdicts)
    return VerifyResult(ok, shown, target.interpreter, target.platform_label, tuple(verdicts), error)


Pinned = Union[Version, SpecifierSet]  # '2.5.1', or a series '15.*' (==15.*)


def _check(index: _Index, name: str, version: str, pin: Pinned, target: TagTarget) -> PackageVerdict:
    """One package's verdict. Raises _IndexFailure."""
    try:
        files = index.files(name)
    except _NoProject as exc:
        return PackageVerdict(name, version, WheelStatus.NO_PROJECT, reason=str(exc))
    return _match(name, version, pin, files, target, index.shown)


def _read_pin(name: str, version: str) -> Pinned:
    """An exact version, or a release series ('15.*', '0.11.*': a plan's pin where the data names
    the series only), which the index resolves to its newest matching release."""
    try:
        return SpecifierSet(f"=={version}") if version.endswith(".*") else Version(version)
    except (InvalidVersion, InvalidSpecifier):
        raise CudadoctorError(f"cannot verify {name}=={version}: not a PEP 440 version") from None


# --------------------------------------------------------------------------- matching


def _version_matches(have: Version, pin: Pinned) -> bool:
    """PEP 440 '==': a pin without a local label matches any local label (2.5.1 ~ 2.5.1+cu124);
    a pin with one matches only that label; a series matches its final releases ('15.*': 15.0.1)."""
    if isinstance(pin, SpecifierSet):
        return pin.contains(Version(have.public), prereleases=False)
    return have == pin if pin.local is not None else Version(have.public) == pin


def _requires_python_ok(spec: Optional[str], target: TagTarget) -> bool:
    if not spec:
        return True
    try:
        return SpecifierSet(spec).contains(Version("%d.%d" % target.python), prereleases=True)
    except (InvalidSpecifier, ValueError):
        return True  # pip ignores a requires-python it cannot read


def _match(name: str, version: str, pin: Pinned, files: List[_File], target: TagTarget, shown: str) -> PackageVerdict:
    project = normalize_name(name)
    wheels = [(f, w) for f in files for w in [parse_wheel_filename(f.filename)] if w and w.project == project]
    same = [(f, w) for f, w in wheels if _version_matches(w.version, pin)]
    if not same:
        newest = sorted({w.version for _, w in wheels}, reverse=True)[:3]
        has = f"newest there: {', '.join(map(str, newest))}" if newest else "it lists no wheels"
        reason = f"no {name} {version} wheel on {shown}: {has}"
        return PackageVerdict(name, version, WheelStatus.NO_VERSION, reason=reason)
    candidates = []
    for f, w in same:
        rank = target.rank(w.tags)
        if rank is not None and _requires_python_ok(f.requires_python, target):
            candidates.append((w.version, rank, f))
    if not candidates:
        reason = f"no {name} {version} wheel for {target.interpreter} {target.platform_label} on {shown}: "
        return PackageVerdict(name, version, WheelStatus.NO_COMPATIBLE_WHEEL, reason=reason + _found(same, target))
    top = max(v for v, _, _ in candidates)  # pip takes the highest matching version, then the best tag
    _, _, best = min((c for c in candidates if c[0] == top), key=lambda c: (c[2].yanked, c[1], c[2].filename))
    return PackageVerdict(name, version, WheelStatus.FOUND, WheelFile(best.filename, best.url, best.yanked))


def _found(same: List[Tuple[_File, WheelName]], target: TagTarget) -> str:
    """What the version does have, phrased against what was wanted."""
    on_platform = [t for _, w in same for t in w.tags if target.rank([("py3", "none", t[2])]) is not None]
    if on_platform:
        for_python = [t for t in on_platform if target.rank([t]) is not None]
        if for_python:  # tags fit, requires-python does not
            specs = sorted({f.requires_python or "" for f, _ in same} - {""})
            return f"its {target.platform_label} wheels require Python {' or '.join(specs)}"
        return f"found {describe_interpreters(on_platform)}"
    platforms = sorted({t[2] for _, w in same for t in w.tags})
    return f"found only {', '.join(platforms[:6])}{', ...' if len(platforms) > 6 else ''} wheels"


# --------------------------------------------------------------------------- fetching


def _scheme(url: str) -> str:
    try:
        return urlsplit(url).scheme.lower()
    except ValueError:
        return ""


def _redact(url: str) -> str:
    """The URL without user:password@ (tokens of private mirrors must not reach a log)."""
    try:
        parts = urlsplit(url)
        if parts.username is None and parts.password is None:
            return url
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        return urlunsplit((parts.scheme, f"***@{host}{port}", parts.path, parts.query, parts.fragment))
    except ValueError:
        return "<unreadable URL>"


class _Index:
    """One index as seen by one verify() run: its session, the pages already fetched, and the
    bounds every request to it keeps."""

    def __init__(self, session: requests.Session, url: str, shown: str, timeout: float) -> None:
        self.session, self.url, self.shown, self.timeout = session, url, shown, timeout
        self.pages: Dict[str, List[_File]] = {}

    def files(self, name: str) -> List[_File]:
        """The files on ``name``'s project page. Raises _IndexFailure or _NoProject."""
        project = normalize_name(name)
        if project not in self.pages:
            page_url, content_type, body = self._fetch(self.url.rstrip("/") + "/" + project + "/", name)
            kind = content_type.split(";")[0].strip().lower()
            text = _decode(body, content_type)
            if kind.endswith("json") or (not kind and text.lstrip().startswith("{")):
                self.pages[project] = _parse_json(text, page_url, self.shown, name)
            else:
                self.pages[project] = _parse_html(text, page_url)
        return self.pages[project]

    def _fetch(self, url: str, name: str) -> Tuple[str, str, bytes]:
        """GET ``url``: (final URL, Content-Type, body). Raises _IndexFailure or _NoProject.

        Redirects are followed here rather than by requests, so that each hop is bounded like
        the first (requests reads a redirect's whole body), and the page as a whole, retries and
        hops included, must arrive before one deadline."""
        import requests

        shown, timeout = self.shown, self.timeout
        deadline = time.monotonic() + PAGE_DEADLINE_FACTOR * timeout
        attempt = hops = 0
        while True:
            wait = min(timeout, deadline - time.monotonic())
            if wait <= 0:
                raise _IndexFailure(self._too_slow(name))
            try:
                response = self.session.get(
                    url, headers={"Accept": ACCEPT}, timeout=(wait, wait), stream=True, allow_redirects=False
                )
            except requests.Timeout:
                raise _IndexFailure(f"index {shown} did not answer within {timeout:g} s") from None
            except requests.exceptions.SSLError as exc:
                raise _IndexFailure(f"index {shown}: TLS error ({_first_line(exc)})") from None
            except requests.ConnectionError as exc:
                if attempt == RETRIES:
                    raise _IndexFailure(f"index {shown} is not reachable: {_connection_reason(exc)}") from None
                attempt = _backoff(attempt, deadline)
                continue
            except (requests.RequestException, ValueError) as exc:  # InvalidURL, InvalidSchema, ...
                raise _IndexFailure(f"index {shown}: cannot fetch {name}'s page ({type(exc).__name__})") from None
            with response:
                status = response.status_code
                location = self.session.get_redirect_target(response)
                if location is not None:
                    hops += 1
                    url = _join(response.url, location)
                    if hops > MAX_REDIRECTS:
                        raise _IndexFailure(f"index {shown} redirected more than {MAX_REDIRECTS} times for {name}")
                    if _scheme(url) not in ("http", "https"):
                        raise _IndexFailure(f"index {shown} redirected {name} to a non-HTTP URL")
                    continue
                if status >= 500 or status == 429:
                    if attempt == RETRIES:
                        raise _IndexFailure(f"index {shown} returned HTTP {status} for {name} ({RETRIES + 1} attempts)")
                    attempt = _backoff(attempt, deadline)
                    continue
                if status in (404, 410):
                    raise _NoProject(f"index {shown} returned HTTP {status} for {name}: no such project")
                if status != 200:
                    hint = " (credentials needed?)" if status in (401, 403) else ""
                    raise _IndexFailure(f"index {shown} returned HTTP {status} for {name}{hint}")
                body = self._read_capped(response, name, deadline)
                return response.url, response.headers.get("Content-Type", ""), body

    def _read_capped(self, response: requests.Response, name: str, deadline: float) -> bytes:
        import requests

        shown = self.shown
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and (len(declared) > 18 or int(declared) > MAX_BYTES):
            raise _IndexFailure(f"index {shown} sent a {name} page of {declared[:20]} bytes, over the {MAX_BYTES}-byte cap")
        chunks: List[bytes] = []
        size = 0
        try:
            for chunk in response.iter_content(CHUNK):
                size += len(chunk)
                if size > MAX_BYTES:
                    raise _IndexFailure(f"index {shown} sent a {name} page over the {MAX_BYTES}-byte cap")
                if time.monotonic() > deadline:
                    raise _IndexFailure(self._too_slow(name))
                chunks.append(chunk)
        except requests.ConnectionError as exc:  # a read timeout mid-body arrives wrapped in this
            if "timed out" in str(exc).lower():
                raise _IndexFailure(f"index {shown} did not answer within {self.timeout:g} s") from None
            raise _IndexFailure(f"index {shown} broke off {name}'s page: {_connection_reason(exc)}") from None
        except requests.RequestException as exc:  # ChunkedEncodingError, ContentDecodingError
            raise _IndexFailure(f"index {shown} sent an unreadable {name} page ({type(exc).__name__})") from None
        return b"".join(chunks)

    def _too_slow(self, name: str) -> str:
        return f"index {self.shown} did not send {name}'s page within {PAGE_DEADLINE_FACTOR * self.timeout:g} s"


def _backoff(attempt: int, deadline: float) -> int:
    """Sleep before retry ``attempt + 1`` (never past the deadline); the new attempt number."""
    time.sleep(max(0.0, min(BACKOFF_S * (2**attempt), deadline - time.monotonic())))
    return attempt + 1


def _connection_reason(exc: BaseException) -> str:
    """A few words for a requests ConnectionError, whose str() is a nested repr of urllib3's."""
    text = str(exc).lower()
    for needle, words in (
        ("refused", "connection refused"),
        ("name or service not known", "host name not found"),
        ("nodename nor servname", "host name not found"),
        ("name resolution", "host name not found"),
        ("getaddrinfo", "host name not found"),
        ("reset by peer", "connection reset"),
        ("network is unreachable", "network unreachable"),
        ("no route to host", "no route to host"),
        ("proxy", "proxy error"),
        ("remotedisconnected", "the server closed the connection"),
        ("connection aborted", "the server closed the connection"),
    ):
        if needle in text:
            return words
    return "connection failed"


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


def _decode(body: bytes, content_type: str) -> str:
    """The page as text, in its declared charset when that is a text encoding, else UTF-8."""
    for param in content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            try:
                return body.decode(value.strip().strip('"'), errors="replace")
            except (LookupError, UnicodeError, TypeError):  # unknown, or not a text codec
                break
    return body.decode("utf-8", errors="replace")


# --------------------------------------------------------------------------- pages


def _parse_json(text: str, page_url: str, shown: str, name: str) -> List[_File]:
    """A PEP 691 project page: {"meta": {"api-version": "1.x"}, "files": [{"filename", "url", ...}]}."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise _IndexFailure(f"index {shown} sent a {name} page that is not valid JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise _IndexFailure(f"index {shown} sent a {name} page without a files list")
    meta = data.get("meta")
    api = str(meta.get("api-version", "1.0")) if isinstance(meta, dict) else "1.0"
    if api.split(".")[0] != "1":
        raise _IndexFailure(f"index {shown} speaks simple API {api[:20]}, which cudadoctor does not read")
    files = []
    for entry in data["files"]:
        if not isinstance(entry, dict):
            continue
        filename, url = entry.get("filename"), entry.get("url")
        if not isinstance(filename, str) or not isinstance(url, str):
            continue
        requires = entry.get("requires-python")
        files.append(
            _File(
                filename,
                _join(page_url, url),
                requires if isinstance(requires, str) else None,
                bool(entry.get("yanked")),
            )
        )
    return files


def _parse_html(text: str, page_url: str) -> List[_File]:
    """A PEP 503 project page: one <a href> per file, data-requires-python and data-yanked on it."""
    parser = _Anchors()
    try:
        parser.feed(text)
        parser.close()
    except (AssertionError, ValueError):  # html.parser on hostile markup, older Pythons
        pass
    base = _join(page_url, parser.base) if parser.base else page_url
    files = []
    for href, attrs in parser.anchors:
        url = _join(base, href)
        try:
            filename = unquote(posixpath.basename(urlsplit(url).path))
        except ValueError:  # an unreadable href (bad IPv6 literal, ...): not a file of ours
            continue
        requires = attrs.get("data-requires-python")
        files.append(_File(filename, url, requires or None, "data-yanked" in attrs))
    return files


def _join(base: str, href: str) -> str:
    try:
        return urljoin(base, href.strip())
    except ValueError:  # an unreadable href (bad IPv6 literal, ...)
        return href


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.anchors: List[Tuple[str, Dict[str, str]]] = []
        self.base: Optional[str] = None

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        values = {key: value or "" for key, value in attrs}
        if tag == "a" and values.get("href"):
            self.anchors.append((values["href"], values))
        elif tag == "base" and values.get("href") and self.base is None:
            self.base = values["href"]
