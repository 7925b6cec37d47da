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
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple
from urllib.parse import urljoin, urlparse

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
    """A failed update, as one line; nothing was changed."""


@dataclass(frozen=True)
class UpdateResult:
    url: str
    data_version: str
    previous: Optional[str]  # the data version in use before (installed or shipped)
    installed: bool  # False: already up to date, nothing changed


def version_tuple(text: str) -> Tuple[int, ...]:
    """'2026.12.0' -> (2026, 12, 0): the store's ordering of data and tool versions."""
    from cudadoctor.data.store import version_key

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


def _fetch(session: Any, url: str, cap: int, timeout: float) -> bytes:
    """GET url: retried with backoff on connection errors and 5xx; at most ``cap`` bytes."""
    import requests

    last = ""
    for attempt in range(ATTEMPTS):
        if attempt:
            time.sleep(BACKOFF_S * 2 ** (attempt - 1))
        try:
            return _get_once(session, url, cap, timeout)
        except _Retryable as exc:
            last = str(exc)
        except requests.exceptions.TooManyRedirects:
            raise UpdateError(f"{url}: too many redirects") from None
        except requests.exceptions.Timeout:
            raise UpdateError(f"{url}: timed out after {timeout:g} s") from None
        except requests.exceptions.ConnectionError as exc:
            reason = "connection refused" if "refused" in str(exc).lower() else "offline or unreachable"
            last = f"{url}: cannot connect to {urlparse(url).netloc} ({reason})"
        except requests.exceptions.RequestException as exc:
            raise UpdateError(f"{url}: {_reason(exc)}") from None
    raise UpdateError(f"{last} (after {ATTEMPTS} attempts)")


class _Retryable(Exception):
    pass


def _reason(exc: Exception) -> str:
    text = str(exc.args[0]) if exc.args else type(exc).__name__
    text = text.splitlines()[0] if text else type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def _get_once(session: Any, url: str, cap: int, timeout: float) -> bytes:
    deadline = time.monotonic() + max(timeout * 4, timeout + 5)  # a server that trickles bytes
    with session.get(url, timeout=(timeout, timeout), stream=True) as response:
        if response.status_code >= 500:
            raise _Retryable(f"{url}: HTTP {response.status_code}")
        if response.status_code != 200:
            raise UpdateError(f"{url}: HTTP {response.status_code}")
        length = response.headers.get("Content-Length")
        if length and length.isdigit() and int(length) > cap:
            raise UpdateError(f"{url}: {length} bytes is over the {cap} byte limit")
        chunks = []
        size = 0
        for chunk in response.iter_content(64 * 1024):
            size += len(chunk)
            if size > cap:
                raise UpdateError(f"{url}: over the {cap} byte limit")
            if time.monotonic() > deadline:
                raise UpdateError(f"{url}: timed out (download too slow)")
            chunks.append(chunk)
        return b"".join(chunks)


def check_bundle_manifest(manifest: Any) -> Dict[str, Dict[str, Any]]:
    """The bundle manifest's files, or UpdateError naming what is wrong with it."""
    from cudadoctor.matrix.load import SCHEMA_VERSION

    from cudadoctor.data.store import is_data_version, is_tool_version, shown

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
        raw = _fetch(session, url, MAX_MANIFEST_BYTES, timeout)
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
                body = _fetch(session, urljoin(url, name), entry["size"], timeout)
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
