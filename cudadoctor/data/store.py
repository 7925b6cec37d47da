"""Installed data bundles in the user data directory, and which compatibility data to use.

Layout of :func:`user_data_dir`::

    bundles/<data_version>/     a complete compat_data folder (manifest.json, tables, schemas/)
    bundles/.staging-<random>/  a bundle being placed; renamed to its final name in one step
    state.json                  {"current": ..., "previous": ..., "bundles": {<version>: marker}}
    lock                        held (flock) by whoever changes bundles/ or state.json

``state.json`` is replaced atomically (temporary file + ``os.replace``), and a bundle folder is
complete before ``state.json`` names it, so a crash at any point leaves either the old or the new
data in use, never a mix. Each bundle is validated in full (schemas + invariants) once, at
install time; the marker recorded then (file sizes and SHA-256) is what load time checks, so
that ``cudadoctor check`` reads only ``state.json`` and the bundle's ``manifest.json``.

Installs and rollbacks hold ``lock`` while they read and rewrite the store: two at once renamed
folders under each other, pruned the bundle the other had just made current, and let an older
bundle become current after a newer one (issue 16). Under the lock an install checks again that
its data is not older than the current bundle, so the newest data wins whatever the order.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple
from cudadoctor.record import frozen

from cudadoctor.version import __version__
from cudadoctor.data.location import shipped_data_dir, shipped_origin
from cudadoctor.data.versions import is_data_version as is_data_version
from cudadoctor.data.versions import is_tool_version as is_tool_version
from cudadoctor.data.versions import shown as shown
from cudadoctor.data.versions import tool_is_new_enough as tool_is_new_enough
from cudadoctor.data.versions import version_key as version_key
from cudadoctor.matrix.load import SCHEMA_VERSION, DataError, read_manifest

ENV_HOME = "CUDADOCTOR_DATA_HOME"  # overrides user_data_dir() (tests, sandboxes)
ENV_DATA_DIR = "CUDADOCTOR_DATA_DIR"  # use this compat_data folder, whatever else there is
ENV_PAUSE = "CUDADOCTOR_INSTALL_PAUSE"  # tests: "<point>:<flag file>" pauses install_bundle there
STATE_FILE = "state.json"
LOCK_FILE = "lock"
LOCK_WAIT_S = 60.0  # how long an install or rollback waits for another one before giving up
BUNDLES = "bundles"
STAGING_PREFIX = ".staging-"


class StoreError(Exception):
    """The store cannot do what was asked; the message says why in one line (escaped)."""

    def __init__(self, message: str) -> None:
        # here, not at the top: importing cudadoctor.model builds its dataclasses, and `--version`
        # reads the store without needing them
        from cudadoctor.model.printable import printable

        super().__init__(printable(message))


class NewerDataInstalled(StoreError):
    """The bundle to install is older than the current installed one (which another update may
    have installed meanwhile); nothing was changed."""

    def __init__(self, data_version: str, current: str) -> None:
        super().__init__(f"data {data_version} is older than the installed data {current}; it was not made current")
        self.data_version = data_version
        self.current = current


@frozen
class InstallResult:
    data_version: str
    directory: str
    previous: Optional[str]
    pruned: Tuple[str, ...]


@frozen
class InstalledBundle:
    data_version: str
    directory: str
    previous: Optional[str]
    problem: Optional[str]  # None when the bundle may be used


@frozen
class DataChoice:
    directory: str
    data_version: str
    origin: str  # "shipped" (in the wheel), "source" (beside a checkout), "installed", "env", "option"
    warning: Optional[str]


# ------------------------------------------------------------------------------- locations


def user_data_dir() -> str:
    """Where installed bundles live: ``$CUDADOCTOR_DATA_HOME``, else the platform's user data
    folder (XDG_DATA_HOME on Linux, Application Support on macOS, LOCALAPPDATA on Windows)."""
    override = os.environ.get(ENV_HOME)
    if override:
        return os.path.abspath(override)
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
    elif sys.platform == "darwin":
        base = os.path.join(home, "Library", "Application Support")
    else:
        xdg = os.environ.get("XDG_DATA_HOME", "")
        base = xdg if os.path.isabs(xdg) else os.path.join(home, ".local", "share")
    return os.path.join(base, "cudadoctor")


def bundles_dir() -> str:
    return os.path.join(user_data_dir(), BUNDLES)


def new_staging_dir() -> str:
    """An empty ``bundles/.staging-<random>`` folder to download a bundle into (same file system
    as its final place, so that :func:`install_bundle` only renames it)."""
    import tempfile

    os.makedirs(bundles_dir(), exist_ok=True)
    return tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=bundles_dir())


# ------------------------------------------------------------------------------- state.json


def _read_state() -> Dict[str, Any]:
    try:
        with open(os.path.join(user_data_dir(), STATE_FILE), encoding="utf-8") as fh:
            state = json.load(fh)
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _write_state(state: Dict[str, Any]) -> None:
    from cudadoctor.host.files import write_atomically

    write_atomically(os.path.join(user_data_dir(), STATE_FILE), json.dumps(state, indent=1, sort_keys=True) + "\n")


def _markers(state: Dict[str, Any]) -> Dict[str, Any]:
    markers = state.get("bundles")
    return markers if isinstance(markers, dict) else {}


# ------------------------------------------------------------------------------- checks


def file_hashes(directory: str) -> Dict[str, Dict[str, Any]]:
    """{relative path (with /): {"sha256", "size"}} of every file under ``directory``."""
    import hashlib

    out: Dict[str, Dict[str, Any]] = {}
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, directory).replace(os.sep, "/")
            digest = hashlib.sha256()
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 16), b""):
                    digest.update(block)
            out[rel] = {"sha256": digest.hexdigest(), "size": os.path.getsize(path)}
    return out


def validate_bundle(directory: str, data_version: Optional[str] = None) -> List[str]:
    """Every problem of a compat_data folder as a bundle: manifest, schemas, invariants."""
    from cudadoctor.matrix import Matrix

    try:
        matrix = Matrix(directory)
    except DataError as exc:
        return [str(exc)]
    if data_version is not None and matrix.data_version != data_version:
        return [f"manifest.json: data_version {matrix.data_version} is not the {data_version} expected"]
    return matrix.validate()


def _load_problem(version: str, directory: str, marker: Any) -> Optional[str]:
    """Why an installed bundle cannot be used now; cheap (stat + the manifest only)."""
    if not os.path.isdir(directory):
        return "its folder is missing"
    if not isinstance(marker, dict) or marker.get("validated") is not True:
        return "it was not validated when installed"
    min_tool = marker.get("min_tool_version")
    if min_tool is not None and (not is_tool_version(min_tool) or not tool_is_new_enough(min_tool)):
        return f"it needs cudadoctor >= {min_tool} (this is {__version__})"
    files = marker.get("files")
    if not isinstance(files, dict) or not files:
        return "its validation record lists no files"
    for rel, info in files.items():
        try:
            size = os.path.getsize(os.path.join(directory, *str(rel).split("/")))
        except OSError:
            return f"{rel} is missing"
        if not isinstance(info, dict) or info.get("size") != size:
            return f"{rel} changed since it was installed"
    try:
        manifest = read_manifest(directory)  # also checks schema_version
    except DataError as exc:
        return str(exc)
    if manifest.data_version != version:
        return f"its manifest says {manifest.data_version}"
    return None


def installed() -> Optional[InstalledBundle]:
    """The current installed bundle (with why it cannot be used, if so), or None."""
    state = _read_state()
    current = state.get("current")
    if not isinstance(current, str) or not is_data_version(current):
        return None
    previous = state.get("previous")
    directory = os.path.join(bundles_dir(), current)
    problem = _load_problem(current, directory, _markers(state).get(current))
    return InstalledBundle(current, directory, previous if isinstance(previous, str) else None, problem)


# ------------------------------------------------------------------------------- the lock


def _try_lock(fd: int) -> bool:
    """Take the lock on ``fd`` without waiting: True when taken, False when another process holds it."""
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except PermissionError:  # EACCES: locked by another process
            return False
        return True
    import errno
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


@contextlib.contextmanager
def store_lock(on_wait: Optional[Callable[[str], None]] = None) -> Iterator[None]:
    """Hold the store's lock file (``<user data dir>/lock``) for the block.

    When another process holds it, ``on_wait`` gets one line saying so, and this waits up to
    :data:`LOCK_WAIT_S` seconds; then :class:`StoreError`. The lock goes with the open file, so a
    process that dies (even by SIGKILL) releases it; the file itself stays (removing it would let
    two processes lock two different files)."""
    folder = user_data_dir()
    path = os.path.join(folder, LOCK_FILE)
    try:
        os.makedirs(folder, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise StoreError(f"cannot open the lock file {path}: {exc.strerror or exc}") from None
    try:
        try:
            taken = _try_lock(fd)
            if not taken:
                if on_wait is not None:
                    on_wait(f"waiting for another cudadoctor data update or rollback to finish (up to {LOCK_WAIT_S:g} s)")
                deadline = time.monotonic() + LOCK_WAIT_S
                while not taken and time.monotonic() < deadline:
                    time.sleep(0.1)
                    taken = _try_lock(fd)
        except OSError as exc:  # e.g. ENOLCK on a network file system without locks
            raise StoreError(f"cannot lock {path}: {exc.strerror or exc}") from None
        if not taken:
            raise StoreError(
                f"another cudadoctor data update or rollback still holds {path} after {LOCK_WAIT_S:g} s; "
                "try again when it has finished"
            )
        yield
    finally:
        os.close(fd)  # releases the lock


# ------------------------------------------------------------------------------- install, rollback


def _pause(point: str) -> None:
    """Tests only: with CUDADOCTOR_INSTALL_PAUSE=<point>:<flag file>, create the flag file and
    wait here until it is removed (or the process is killed), at most 600 s."""
    spec = os.environ.get(ENV_PAUSE, "")
    if spec.partition(":")[0] != point:
        return
    flag = spec.partition(":")[2]
    with open(flag, "w", encoding="utf-8") as fh:
        fh.write(str(os.getpid()))
    deadline = time.monotonic() + 600
    while os.path.exists(flag) and time.monotonic() < deadline:
        time.sleep(0.05)


def install_bundle(
    staged_dir: str,
    data_version: str,
    min_tool_version: Optional[str] = None,
    *,
    allow_downgrade: bool = False,
    on_wait: Optional[Callable[[str], None]] = None,
) -> InstallResult:
    """Install the compat_data folder ``staged_dir`` as ``data_version`` and make it current.

    Validates it in full first (raises :class:`StoreError`, nothing changed). A folder made by
    :func:`new_staging_dir` is moved into place; any other one is copied. The previous current
    bundle is kept as ``previous``; every other bundle is removed.

    The store is changed under :func:`store_lock` (``on_wait`` is told when this waits for
    another install or rollback). Unless ``allow_downgrade``, data older than the current usable
    bundle raises :class:`NewerDataInstalled` and changes nothing: with two updates at once, the
    newer data ends up current whichever finishes first."""
    import shutil
    import uuid

    if not is_data_version(data_version):
        raise StoreError(f"{shown(data_version)} is not a data version (YYYY.MM.N)")
    if min_tool_version is not None and not is_tool_version(min_tool_version):
        raise StoreError(f"{shown(min_tool_version)} is not a cudadoctor version")
    if not tool_is_new_enough(min_tool_version):
        raise StoreError(f"data {data_version} needs cudadoctor >= {min_tool_version} (this is {__version__})")
    staged_dir = os.path.abspath(staged_dir)
    # Validation and hashing take the longest; they read only the staged folder, so they run
    # before the lock and two updates do not wait on each other for them.
    problems = validate_bundle(staged_dir, data_version)
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        raise StoreError(f"data {data_version} is not valid: {problems[0]}{more}")
    files = file_hashes(staged_dir)

    root = bundles_dir()
    os.makedirs(root, exist_ok=True)
    in_store = os.path.dirname(staged_dir) == root and os.path.basename(staged_dir).startswith(STAGING_PREFIX)
    staging = staged_dir if in_store else os.path.join(root, STAGING_PREFIX + uuid.uuid4().hex)
    if not in_store:
        shutil.copytree(staged_dir, staging)
    try:
        with store_lock(on_wait):
            _pause("staged")
            if not allow_downgrade:
                _refuse_older(data_version)
            final = os.path.join(root, data_version)
            if os.path.isdir(final):
                old = _markers(_read_state()).get(data_version)
                if isinstance(old, dict) and old.get("files") == files:
                    shutil.rmtree(staging, ignore_errors=True)  # the same bundle is already in place
                else:
                    aside = os.path.join(root, STAGING_PREFIX + uuid.uuid4().hex)
                    os.replace(final, aside)
                    os.replace(staging, final)
                    shutil.rmtree(aside, ignore_errors=True)
            else:
                os.replace(staging, final)
            _pause("placed")

            state = _read_state()
            current = state.get("current") if isinstance(state.get("current"), str) else None
            previous = state.get("previous") if isinstance(state.get("previous"), str) else None
            new_previous = current if current != data_version else previous
            markers = dict(_markers(state))
            markers[data_version] = {
                "validated": True,
                "schema_version": SCHEMA_VERSION,
                "min_tool_version": min_tool_version,
                "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "files": files,
            }
            keep = {data_version} | ({new_previous} if new_previous else set())
            markers = {v: m for v, m in markers.items() if v in keep}
            _write_state({"current": data_version, "previous": new_previous, "bundles": markers})
            pruned = _prune(keep)
    except BaseException:
        if not in_store:  # our own copy; a caller's staging folder is the caller's to remove
            shutil.rmtree(staging, ignore_errors=True)
        raise
    return InstallResult(data_version, final, new_previous, tuple(pruned))


def _refuse_older(data_version: str) -> None:
    """Raise :class:`NewerDataInstalled` when the current bundle is usable and newer than
    ``data_version``. Called under the lock, so it sees what another update installed meanwhile."""
    bundle = installed()
    if bundle is not None and bundle.problem is None and version_key(bundle.data_version) > version_key(data_version):
        raise NewerDataInstalled(data_version, bundle.data_version)


def _prune(keep: set[str]) -> List[str]:
    """Remove bundles not kept, and staging folders left by runs that died over an hour ago."""
    import shutil

    root = bundles_dir()
    pruned = []
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if not os.path.isdir(path):
            continue
        if name.startswith(STAGING_PREFIX):
            try:
                stale = time.time() - os.path.getmtime(path) > 3600
            except OSError:
                continue
            if stale:
                shutil.rmtree(path, ignore_errors=True)
        elif name not in keep:
            shutil.rmtree(path, ignore_errors=True)
            pruned.append(name)
    return pruned


def rollback(on_wait: Optional[Callable[[str], None]] = None) -> str:
    """Make the previous installed bundle current again (the current one becomes previous); after
    the first update there is no previous bundle, and rolling back returns to the shipped data.
    Returns the data version now in use; raises :class:`StoreError` when there is nothing to undo.
    Runs under :func:`store_lock` (``on_wait`` as for :func:`install_bundle`)."""
    if not os.path.isdir(user_data_dir()):  # nothing was ever installed: do not create the folder
        raise StoreError("no previous data bundle to roll back to")
    with store_lock(on_wait):
        state = _read_state()
        current, previous = state.get("current"), state.get("previous")
        if not (isinstance(previous, str) and is_data_version(previous)) and isinstance(current, str):
            _write_state({"current": None, "previous": current, "bundles": _markers(state)})
            return "shipped"
        if not (isinstance(previous, str) and is_data_version(previous)):
            raise StoreError("no previous data bundle to roll back to")
        directory = os.path.join(bundles_dir(), previous)
        problem = _load_problem(previous, directory, _markers(state).get(previous))
        if problem:
            raise StoreError(f"the previous data bundle {previous} cannot be used: {problem}")
        _write_state({"current": previous, "previous": current if isinstance(current, str) else None,
                      "bundles": _markers(state)})
        return previous


# ------------------------------------------------------------------------------- which data


def _manifest_version(directory: str) -> str:
    try:
        with open(os.path.join(directory, "manifest.json"), encoding="utf-8") as fh:
            manifest = json.load(fh)
    except (OSError, ValueError):
        return "unknown"
    version = manifest.get("data_version") if isinstance(manifest, dict) else None
    return version if isinstance(version, str) else "unknown"


def choose_data_dir(option_dir: Optional[str] = None) -> DataChoice:
    """Which compat_data folder to use: ``option_dir`` (``--data DIR``), else ``$CUDADOCTOR_DATA_DIR``, else the
    newer of the shipped data and a usable installed bundle (the shipped data on a tie). An
    installed bundle that cannot be used is skipped with a one-line warning. Raises
    :class:`DataError` when there is no data at all."""
    if option_dir:
        option_dir = os.path.abspath(option_dir)
        return DataChoice(option_dir, _manifest_version(option_dir), "option", None)
    env = os.environ.get(ENV_DATA_DIR)
    if env:
        env = os.path.abspath(env)
        return DataChoice(env, _manifest_version(env), "env", None)
    shipped = shipped_data_dir()
    shipped_choice = (
        DataChoice(shipped, _manifest_version(shipped), shipped_origin(shipped), None) if shipped else None
    )
    bundle = installed()
    if bundle is not None and bundle.problem is None:
        if shipped_choice is None or version_key(bundle.data_version) > version_key(shipped_choice.data_version):
            return DataChoice(bundle.directory, bundle.data_version, "installed", None)
    warning = None
    if bundle is not None and bundle.problem is not None:
        warning = f"installed data {bundle.data_version} ignored: {bundle.problem}; using the shipped data"
    if shipped_choice is None:
        raise DataError("compat_data", ["not found beside or inside the cudadoctor package"])
    return DataChoice(shipped_choice.directory, shipped_choice.data_version, shipped_choice.origin, warning)
