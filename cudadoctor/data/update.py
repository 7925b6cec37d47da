"""``cudadoctor data update``: fetch a data bundle over HTTP, verify it, install it.

A bundle is a manifest JSON (``format`` ``cudadoctor-data-bundle``) at a URL; its files are
fetched relative to the manifest's folder. Everything is checked before anything changes: the
bundle format and versions, each file's size and SHA-256, then the staged folder is validated as
compatibility data (schemas and invariants). Only then does :func:`cudadoctor.data.store.install_bundle`
switch to it. Any failure raises :class:`UpdateError` with one line and leaves the store as it was.

``requests`` is imported only when an update runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import threading
import time
from typing import Any, Callable, Dict, Optional, Tuple
from urllib.parse import urljoin, urlparse
from cudadoctor.record import frozen

from cudadoctor.version import __version__

# The project publishes no bundle yet: give --url, CUDADOCTOR_DATA_URL or data_url in the config file.
DEFAULT_DATA_URL: Optional[str] = None

BUNDLE_FORMAT = "cudadoctor-data-bundle"
BUNDLE_VERSION = 1
MAX_MANIFEST_BYTES = 1 << 20
MAX_FILE_BYTES = 16 << 20
MAX_TOTAL_BYTES = 64 << 20
MAX_REDIRECTS = 5
ATTEMPTS = 3
BACKOFF_S = 0.5

# A table or its schema, nothing else: no other folder, no "..", no control characters. fullmatch,
# because "$" also matches before a trailing newline ("evil.json\n" passed, issue 16).
_FILE_RE = re.compile(r"(?:[a-z0-9_]{1,64}\.json|schemas/[a-z0-9_]{1,64}\.schema\.json)")
_SHA_RE = re.compile(r"[0-9a-f]{64}")


class UpdateError(Exception):
    """A failed update, as one line (control characters escaped); nothing was changed."""

    def __init__(self, message: str) -> None:
        from cudadoctor.model.printable import printable

        super().__init__(printable(message))


@frozen
class UpdateResult:
    url: str
    data_version: str
    previous: Optional[str]  # the data version in use before (installed or shipped)
    installed: bool  # False: already up to date, nothing changed


def version_tuple(text: str) -> Tuple[int, ...]:
    """'2026.12.0' -> (2026, 12, 0): the store's ordering of data and tool versions."""
    from cudadoctor.data.versions import version_key

    return version_key(text)


def config_dir() -> str:
    """The user configuration folder for cudadoctor (XDG on Linux, the platform equivalents elsewhere)."""
    if sys.platform == "win32":
        base = os.environ.get("APPDATA") or os.path.join(os.path.expanduser("~"), "AppData", "Roaming")
    elif sys.platform == "darwin":
        base = os.path.join(os.path.expanduser("~"), "Library", "Application Support")
    else:
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "cudadoctor")


def resolve_url(option: Optional[str] = None) -> str:
    """--url, else CUDADOCTOR_DATA_URL, else ``data_url`` in config.json, else the package default."""
    if option:
        return option
    env = os.environ.get("CUDADOCTOR_DATA_URL")
    if env:
        return env
    path = os.path.join(config_dir(), "config.json")
    try:
        with open(path, encoding="utf-8") as fh:
            config = json.load(fh)
    except FileNotFoundError:
        config = {}
    except (OSError, ValueError) as exc:
        raise UpdateError(f"cannot read {path}: {exc}") from None
    if isinstance(config, dict) and isinstance(config.get("data_url"), str) and config["data_url"]:
        return str(config["data_url"])
    if DEFAULT_DATA_URL:
        return DEFAULT_DATA_URL
    raise UpdateError(f"no data URL: give --url, set CUDADOCTOR_DATA_URL, or set data_url in {path}")


class _Retryable(Exception):
    pass


class _Cancelled(Exception):
    """The main thread gave up on this download (its deadline passed)."""


def _reason(exc: Exception) -> str:
    text = str(exc.args[0]) if exc.args else type(exc).__name__
    text = text.splitlines()[0] if text else type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."


_LENGTH_RE = re.compile(r"[0-9]{1,18}")  # more digits than that is over any cap (and int() of 5000 digits raises)


class _Download:
    """Every request of one update under one deadline, ``timeout`` seconds from the start.

    requests' timeouts bound each socket read, not a download: a server sending one byte a second
    never trips them (an update ran past 130 s with ``--timeout 5``), nor does one trickling its
    headers, nor a slow name lookup. So each request runs in a worker thread that the caller waits
    for until the deadline, then abandons (it stops at its next read). The worker records how far
    it got, so the message can say what happened."""

    def __init__(self, session: Any, timeout: float) -> None:
        self.session = session
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.cancelled = threading.Event()
        # progress of the request under way (written by the worker, read after the deadline)
        self.responded = False
        self.received = 0
        self.expected: Optional[int] = None
        self.last_progress = time.monotonic()

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def fetch(self, url: str, cap: int) -> bytes:
        """GET ``url`` (at most ``cap`` bytes) before the deadline, or :class:`UpdateError`."""
        outcome: Dict[str, Any] = {}

        def work() -> None:
            try:
                outcome["body"] = self._fetch(url, cap)
            except BaseException as exc:  # handed to the caller's thread
                outcome["error"] = exc

        self.responded, self.received, self.expected = False, 0, None
        self.last_progress = time.monotonic()
        worker = threading.Thread(target=work, name="cudadoctor-download", daemon=True)
        worker.start()
        worker.join(max(0.0, self.remaining()))
        if worker.is_alive():
            self.cancelled.set()
            raise UpdateError(self._late(url))
        if "error" in outcome:
            raise outcome["error"]
        body: bytes = outcome["body"]
        return body

    def _late(self, url: str) -> str:
        """What happened to a request still under way at the deadline."""
        if not self.responded:
            return f"{url}: timed out: the server sent no complete response within {self.timeout:g} s"
        idle = time.monotonic() - self.last_progress
        if idle >= min(self.timeout / 2, 5.0):  # nothing for a while: stalled, not slow
            return self._stalled(url)
        of = f" of {self.expected}" if self.expected is not None else ""
        return (f"{url}: timed out: the download took longer than {self.timeout:g} s"
                f" (the server is sending slowly: {self.received}{of} bytes so far)")

    def _stalled(self, url: str) -> str:
        return (f"{url}: timed out: the server stopped sending after {self.received} bytes"
                f" (nothing for {time.monotonic() - self.last_progress:.0f} s)")

    def _fetch(self, url: str, cap: int) -> bytes:
        """GET url: retried with backoff on connection errors and 5xx while time is left; never
        after a timeout (a server that stalled once will stall again)."""
        import requests

        last = ""
        for attempt in range(ATTEMPTS):
            if attempt:
                pause = BACKOFF_S * 2 ** (attempt - 1)
                if pause >= self.remaining():
                    raise UpdateError(f"{last} (after {attempt} attempt{'s' if attempt > 1 else ''}, out of time)")
                time.sleep(pause)
            try:
                return self._get_once(url, cap)
            except _Retryable as exc:
                last = str(exc)
            except requests.exceptions.TooManyRedirects:
                raise UpdateError(f"{url}: too many redirects") from None
            except requests.exceptions.ConnectTimeout:
                raise UpdateError(f"{url}: timed out: cannot connect to {urlparse(url).netloc} within {self.timeout:g} s") from None
            except requests.exceptions.Timeout:  # waiting for the status line and headers
                raise UpdateError(f"{url}: timed out: the server sent no complete response within {self.timeout:g} s") from None
            except requests.exceptions.ConnectionError as exc:
                if "aborted" in str(exc).lower():  # connected, then the answer broke off or was malformed
                    last = f"{url}: the connection broke ({_reason(exc)})"
                else:
                    reason = "connection refused" if "refused" in str(exc).lower() else "offline or unreachable"
                    last = f"{url}: cannot connect to {urlparse(url).netloc} ({reason})"
            except requests.exceptions.RequestException as exc:
                raise UpdateError(f"{url}: {_reason(exc)}") from None
        raise UpdateError(f"{last} (after {ATTEMPTS} attempts)")

    def _get_once(self, url: str, cap: int) -> bytes:
        import socket

        import urllib3.exceptions

        left = max(0.05, self.remaining())
        wait = min(self.timeout, left)  # no single wait past the deadline
        with self.session.get(url, timeout=(wait, wait), stream=True) as response:
            self.responded = True
            self.last_progress = time.monotonic()
            if response.status_code >= 500:
                raise _Retryable(f"{url}: HTTP {response.status_code}")
            if response.status_code != 200:
                raise UpdateError(f"{url}: HTTP {response.status_code}")
            length = response.headers.get("Content-Length")
            if length is not None and _LENGTH_RE.fullmatch(length.strip()):
                self.expected = int(length.strip())
                if self.expected > cap:
                    raise UpdateError(f"{url}: {self.expected} bytes is over the {cap} byte limit")
            elif length is not None and length.strip().isdigit():
                raise UpdateError(f"{url}: the declared size is over the {cap} byte limit")
            raw = response.raw
            # read1 (urllib3 2) returns what one read brought, so progress is counted as it
            # comes; read() (urllib3 1) waits for the whole block.
            read = getattr(raw, "read1", None) or raw.read
            chunks = []
            size = 0
            while True:
                if self.cancelled.is_set():
                    raise _Cancelled()
                try:
                    chunk = read(64 * 1024, decode_content=True)
                except (urllib3.exceptions.ReadTimeoutError, socket.timeout):
                    raise UpdateError(self._stalled(url)) from None
                except urllib3.exceptions.ProtocolError as exc:
                    raise UpdateError(f"{url}: the connection broke after {size} bytes ({_reason(exc)})") from None
                except (urllib3.exceptions.HTTPError, OSError) as exc:
                    raise UpdateError(f"{url}: {_reason(exc)}") from None
                if not chunk:
                    break
                size += len(chunk)
                self.received = size
                self.last_progress = time.monotonic()
                if size > cap:
                    raise UpdateError(f"{url}: over the {cap} byte limit")
                chunks.append(chunk)
            return b"".join(chunks)


def check_bundle_manifest(manifest: Any) -> Dict[str, Dict[str, Any]]:
    """The bundle manifest's files, or UpdateError naming what is wrong with it."""
    from cudadoctor.matrix.load import SCHEMA_VERSION

    from cudadoctor.data.versions import is_data_version, is_tool_version, shown

    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise UpdateError(f"not a cudadoctor data bundle (format is not {BUNDLE_FORMAT!r})")
    if manifest.get("bundle_version") != BUNDLE_VERSION:
        raise UpdateError(f"bundle_version {manifest.get('bundle_version')!r} is not the {BUNDLE_VERSION} this cudadoctor reads")
    version = manifest.get("data_version")
    if not isinstance(version, str) or not is_data_version(version):
        raise UpdateError(f"bad data_version {shown(version)} (expected YYYY.M.N)")
    if manifest.get("schema_version") != SCHEMA_VERSION:
        raise UpdateError(
            f"data {version} has schema_version {manifest.get('schema_version')!r}; this cudadoctor reads {SCHEMA_VERSION}: upgrade cudadoctor"
        )
    needed = manifest.get("min_tool_version")
    if not isinstance(needed, str) or not is_tool_version(needed):
        raise UpdateError(f"bad min_tool_version {shown(needed)} (expected a cudadoctor version such as 0.1.0)")
    if version_tuple(needed) > version_tuple(__version__):
        raise UpdateError(f"data {version} needs cudadoctor >= {needed} (this is {__version__}): upgrade cudadoctor")
    files = manifest.get("files")
    if not isinstance(files, dict) or "manifest.json" not in files:
        raise UpdateError("bundle lists no files (or no manifest.json)")
    total = 0
    for name, entry in files.items():
        if not isinstance(name, str) or not _FILE_RE.fullmatch(name):
            raise UpdateError(
                f"bundle lists a file with a bad name: {shown(name)} (only <table>.json and schemas/<table>.schema.json,"
                " with a-z, 0-9 and _)"
            )
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str) or not _SHA_RE.fullmatch(entry["sha256"]):
            raise UpdateError(f"{name}: bad sha256 in the bundle manifest")
        size = entry.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_FILE_BYTES:
            raise UpdateError(f"{name}: bad size {size!r} (limit {MAX_FILE_BYTES} bytes)")
        total += size
    if total > MAX_TOTAL_BYTES:
        raise UpdateError(f"bundle is {total} bytes, over the {MAX_TOTAL_BYTES} byte limit")
    return files


def _current_version(installed_version: Optional[str] = None, look: bool = True) -> Optional[str]:
    """The newest data version at hand: the installed bundle's (when usable; ``installed_version``
    instead when ``look`` is False) or the shipped one."""
    from cudadoctor.data.store import installed
    from cudadoctor.data.location import shipped_data_dir
    from cudadoctor.matrix.load import DataError, read_manifest

    versions = []
    if look:
        bundle = installed()
        if bundle is not None and bundle.problem is None:
            versions.append(bundle.data_version)
    elif installed_version is not None:
        versions.append(installed_version)
    shipped = shipped_data_dir()
    if shipped:
        try:
            versions.append(read_manifest(shipped).data_version)
        except DataError:
            pass
    return max(versions, key=version_tuple) if versions else None


def update(
    url: Optional[str] = None,
    allow_downgrade: bool = False,
    timeout: float = 30.0,
    on_wait: Optional[Callable[[str], None]] = None,
) -> UpdateResult:
    """Fetch, verify and install the bundle at ``url`` (or the configured one). ``on_wait`` gets
    one line when the install waits for another update or rollback to finish."""
    import requests

    from cudadoctor.data import store as data_store
    url = resolve_url(url)
    if not url.startswith(("http://", "https://")):
        raise UpdateError(f"{url}: not an http(s) URL")
    with requests.Session() as session:
        session.max_redirects = MAX_REDIRECTS
        session.headers["User-Agent"] = f"cudadoctor/{__version__}"
        download = _Download(session, timeout)  # --timeout bounds everything fetched from here on
        raw = download.fetch(url, MAX_MANIFEST_BYTES)
        try:
            manifest = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise UpdateError(f"{url}: not a JSON bundle manifest") from None
        files = check_bundle_manifest(manifest)
        version: str = manifest["data_version"]
        previous = _current_version()
        if previous is not None and not allow_downgrade:
            if version_tuple(version) == version_tuple(previous):
                return UpdateResult(url, version, previous, installed=False)
            if version_tuple(version) < version_tuple(previous):
                raise UpdateError(f"bundle data {version} is older than the data in use ({previous}); --allow-downgrade to install it")

        store = data_store.user_data_dir()
        created = [d for d in (store, data_store.bundles_dir()) if not os.path.isdir(d)]
        staged = data_store.new_staging_dir()  # bundles/.staging-<random>: install_bundle only renames it
        ok = False
        try:
            os.makedirs(os.path.join(staged, "schemas"))
            for name, entry in sorted(files.items()):
                body = download.fetch(urljoin(url, name), entry["size"])
                if len(body) != entry["size"]:
                    raise UpdateError(f"{name}: {len(body)} bytes, the bundle says {entry['size']} (truncated?)")
                if hashlib.sha256(body).hexdigest() != entry["sha256"]:
                    raise UpdateError(f"{name}: SHA-256 does not match the bundle manifest")
                with open(os.path.join(staged, *name.split("/")), "wb") as fh:
                    fh.write(body)
            try:  # validates the staged data in full (schemas + invariants) before switching to it
                done = data_store.install_bundle(staged, version, min_tool_version=manifest["min_tool_version"],
                                                 allow_downgrade=allow_downgrade, on_wait=on_wait)
            except data_store.NewerDataInstalled as exc:  # another update installed it after the check above
                raise UpdateError(
                    f"bundle data {version} is older than the data in use ({exc.current}, installed meanwhile by"
                    " another update); --allow-downgrade to install it"
                ) from None
            except data_store.StoreError as exc:
                raise UpdateError(str(exc)) from None
            # what was in use when it switched, which another update may have changed since the check above
            previous = _current_version(done.previous, look=False)
            ok = True
        finally:
            if os.path.isdir(staged):
                shutil.rmtree(staged, ignore_errors=True)
            if not ok:
                for folder in reversed(created):  # leave no trace of a failed first update
                    try:
                        os.rmdir(folder)
                    except OSError:
                        pass
    return UpdateResult(url, version, previous, installed=True)
