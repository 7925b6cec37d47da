"""``cudadoctor data update`` against a local HTTP server on 127.0.0.1.

Each failure must leave the user data store exactly as it was (compared file by file).
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, Iterator, Optional

import pytest

from cudadoctor.data import update as data_update
from cudadoctor.cli.app import run
from cudadoctor.data.location import shipped_data_dir

SHIPPED = shipped_data_dir() or ""


def _build_bundle(out: str, version: str, min_tool: str = "0.1.0", mutate: Optional[Callable[[str], None]] = None) -> None:
    """A bundle like tools/build_data_bundle.py makes: the compat_data JSON files + bundle.json."""
    shutil.copytree(SHIPPED, out, ignore=shutil.ignore_patterns("*.md"))
    path = os.path.join(out, "manifest.json")
    with open(path, encoding="utf-8") as fh:
        manifest = json.load(fh)
    manifest["data_version"] = version
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
    if mutate:
        mutate(out)
    files: Dict[str, Any] = {}
    for name in ["manifest.json", *manifest["files"]] + [f"schemas/{s}" for s in sorted(os.listdir(os.path.join(out, "schemas")))]:
        with open(os.path.join(out, name), "rb") as fh:
            body = fh.read()
        files[name] = {"sha256": hashlib.sha256(body).hexdigest(), "size": len(body)}
    bundle = {
        "format": "cudadoctor-data-bundle",
        "bundle_version": 1,
        "data_version": version,
        "schema_version": 1,
        "min_tool_version": min_tool,
        "files": files,
    }
    with open(os.path.join(out, "bundle.json"), "w", encoding="utf-8") as fh:
        json.dump(bundle, fh, indent=1)


def _edit_bundle(out: str, change: Callable[[Dict[str, Any]], None]) -> None:
    path = os.path.join(out, "bundle.json")
    with open(path, encoding="utf-8") as fh:
        bundle = json.load(fh)
    change(bundle)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(bundle, fh)


def _break_gpus_schema(folder: str) -> None:
    path = os.path.join(folder, "gpus.json")
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    doc["records"][0]["not_a_field"] = True
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)


class _Handler(http.server.BaseHTTPRequestHandler):
    root = ""
    hits: Dict[str, int] = {}
    stop = threading.Event()

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        self.hits[path] = self.hits.get(path, 0) + 1
        parts = path.strip("/").split("/", 1)
        if parts[0] == "loop":
            self.send_response(302)
            self.send_header("Location", "/loop")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if parts[0] == "error":
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if parts[0] == "slow":
            time.sleep(2)
        if parts[0] in ("trickle", "stall", "trickleheaders"):
            self._hostile(parts[0], path)
            return
        file = os.path.join(self.root, *path.strip("/").split("/"))
        if not os.path.isfile(file):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(file, "rb") as fh:
            body = fh.read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if parts[0] == "truncated" and path.endswith("gpus.json"):
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        try:
            self.wfile.write(body)
        except OSError:  # the client gave up (the slow case)
            pass


    def _hostile(self, kind: str, path: str) -> None:
        """trickle: one byte every 0.2 s of a 100 kB body; stall: headers and 10 bytes, then nothing;
        trickleheaders: the status line and headers one byte every 0.2 s. Each ends when the
        client goes away or the test module's server stops (``stop``)."""
        body = b"{" + b" " * 100_000 + b"}"
        head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n" + "X-Pad: x\r\n" * 20 + "\r\n"
        try:
            if kind == "trickleheaders":
                for byte in head.encode():
                    if self.stop.wait(0.2):
                        return
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                return
            self.wfile.write(head.encode())
            self.wfile.write(body[:10])
            self.wfile.flush()
            for byte in body[10:]:
                if self.stop.wait(0.2):
                    return
                if kind == "trickle":
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
        except OSError:  # the client gave up
            pass
        finally:
            self.close_connection = True


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = str(tmp_path_factory.mktemp("served"))
    _build_bundle(os.path.join(root, "v2026.12.0"), "2026.12.0")
    _build_bundle(os.path.join(root, "v2027.1.0"), "2027.1.0")
    _build_bundle(os.path.join(root, "v2026.10.0"), "2026.10.0")
    _build_bundle(os.path.join(root, "checksum"), "2026.12.0")
    _edit_bundle(os.path.join(root, "checksum"), lambda b: b["files"]["gpus.json"].update(sha256="0" * 64))
    _build_bundle(os.path.join(root, "truncated"), "2026.12.0")
    _build_bundle(os.path.join(root, "schema"), "2026.12.0", mutate=_break_gpus_schema)
    _build_bundle(os.path.join(root, "newtool"), "2026.12.0", min_tool="99.0.0")
    _build_bundle(os.path.join(root, "slow"), "2026.12.0")
    _build_bundle(os.path.join(root, "hugeversion"), "2026.12.0")
    _edit_bundle(os.path.join(root, "hugeversion"), lambda b: b.update(data_version="2026.12." + "9" * 5000))
    stop = threading.Event()
    handler = type("Handler", (_Handler,), {"root": root, "hits": {}, "stop": stop})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        stop.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def store(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    home = str(tmp_path / "data-home")
    monkeypatch.setenv("CUDADOCTOR_DATA_HOME", home)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.delenv("CUDADOCTOR_DATA_URL", raising=False)
    monkeypatch.delenv("CUDADOCTOR_DATA_DIR", raising=False)
    monkeypatch.setattr(data_update, "BACKOFF_S", 0.01)
    return home


def _snapshot(folder: str) -> Dict[str, str]:
    state: Dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for d in dirnames:
            state[os.path.relpath(os.path.join(dirpath, d), folder) + "/"] = "dir"
        for f in filenames:
            with open(os.path.join(dirpath, f), "rb") as fh:
                state[os.path.relpath(os.path.join(dirpath, f), folder)] = hashlib.sha256(fh.read()).hexdigest()
    return state


def _current(store: str) -> Optional[str]:
    with open(os.path.join(store, "state.json"), encoding="utf-8") as fh:
        value = json.load(fh)["current"]
    return value if isinstance(value, str) else None


def _update(capsys: pytest.CaptureFixture[str], *args: str) -> "tuple[int, str, str]":
    code = run(["data", "update", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _fails(capsys: pytest.CaptureFixture[str], store: str, *args: str) -> str:
    """Run an update that must fail: exit 1, one error line, store unchanged."""
    before = _snapshot(store)
    existed = os.path.isdir(store)
    code, out, err = _update(capsys, *args)
    assert code == 1, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cudadoctor: error: data update failed: "), err
    assert _snapshot(store) == before
    assert os.path.isdir(store) == existed
    return lines[0]


def test_good_bundle_installs(server: str, store: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _update(capsys, "--url", f"{server}/v2026.12.0/bundle.json")
    assert code == 0, err
    assert "installed data 2026.12.0" in out
    assert _current(store) == "2026.12.0"
    bundle = os.path.join(store, "bundles", "2026.12.0")
    assert os.path.isfile(os.path.join(bundle, "manifest.json"))
    assert os.path.isfile(os.path.join(bundle, "schemas", "gpus.schema.json"))
    assert not [n for n in os.listdir(store) if n.startswith(".download-")]
    # the same bundle again: nothing to do, nothing changed
    before = _snapshot(store)
    code, out, _ = _update(capsys, "--url", f"{server}/v2026.12.0/bundle.json")
    assert code == 0 and "already in use" in out
    assert _snapshot(store) == before


def test_newer_then_older(server: str, store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _update(capsys, "--url", f"{server}/v2026.12.0/bundle.json")[0] == 0
    code, out, err = _update(capsys, "--url", f"{server}/v2027.1.0/bundle.json")
    assert code == 0, err
    assert "installed data 2027.1.0 (was 2026.12.0)" in out
    assert _current(store) == "2027.1.0"
    line = _fails(capsys, store, "--url", f"{server}/v2026.12.0/bundle.json")
    assert "older than the data in use (2027.1.0)" in line and "--allow-downgrade" in line
    code, out, err = _update(capsys, "--url", f"{server}/v2026.12.0/bundle.json", "--allow-downgrade")
    assert code == 0, err
    assert _current(store) == "2026.12.0"


def test_older_than_shipped_is_refused(server: str, store: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = _fails(capsys, store, "--url", f"{server}/v2026.10.0/bundle.json")
    assert "older than the data in use" in line


def test_wrong_checksum(server: str, store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _update(capsys, "--url", f"{server}/v2026.12.0/bundle.json")[0] == 0
    assert "gpus.json: SHA-256 does not match" in _fails(capsys, store, "--url", f"{server}/checksum/bundle.json", "--allow-downgrade")


def test_truncated_body(server: str, store: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = _fails(capsys, store, "--url", f"{server}/truncated/bundle.json")
    assert "gpus.json" in line


def test_invalid_schema(server: str, store: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = _fails(capsys, store, "--url", f"{server}/schema/bundle.json")
    assert "not valid" in line and "gpus.json" in line


def test_needs_newer_tool(server: str, store: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = _fails(capsys, store, "--url", f"{server}/newtool/bundle.json")
    assert "needs cudadoctor >= 99.0.0" in line


def test_slow_server_times_out(server: str, store: str, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    line = _fails(capsys, store, "--url", f"{server}/slow/bundle.json", "--timeout", "0.3")
    assert "timed out" in line
    assert time.monotonic() - started < 2


def test_server_error_is_retried_then_fails(server: str, store: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = _fails(capsys, store, "--url", f"{server}/error/bundle.json")
    assert "HTTP 500" in line and f"after {data_update.ATTEMPTS} attempts" in line


def test_redirect_loop(server: str, store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert "too many redirects" in _fails(capsys, store, "--url", f"{server}/loop")


def test_not_found_and_not_a_bundle(server: str, store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert "HTTP 404" in _fails(capsys, store, "--url", f"{server}/nothing/bundle.json")
    assert "not a cudadoctor data bundle" in _fails(capsys, store, "--url", f"{server}/v2026.12.0/manifest.json")


def test_offline(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert "cannot connect" in _fails(capsys, store, "--url", f"http://127.0.0.1:{port}/bundle.json", "--timeout", "1")


def test_url_from_env_and_config(server: str, store: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert "no data URL" in _fails(capsys, store)
    config = tmp_path / "config" / "cudadoctor"
    config.mkdir(parents=True)
    (config / "config.json").write_text(json.dumps({"data_url": f"{server}/v2026.12.0/bundle.json"}))
    assert data_update.resolve_url() == f"{server}/v2026.12.0/bundle.json"
    monkeypatch.setenv("CUDADOCTOR_DATA_URL", f"{server}/v2027.1.0/bundle.json")
    assert data_update.resolve_url() == f"{server}/v2027.1.0/bundle.json"
    assert data_update.resolve_url("http://x/b.json") == "http://x/b.json"
    code, out, err = _update(capsys)
    assert code == 0, err
    assert _current(store) == "2027.1.0"


def test_bad_file_names_are_refused() -> None:
    good = {"sha256": "0" * 64, "size": 1}
    base = {"format": "cudadoctor-data-bundle", "bundle_version": 1, "data_version": "2026.12.0", "schema_version": 1, "min_tool_version": "0.1.0"}
    for name in ("../evil.json", "/etc/passwd", "schemas/../x.json", "a/b.json"):
        with pytest.raises(data_update.UpdateError, match="bad name"):
            data_update.check_bundle_manifest({**base, "files": {"manifest.json": good, name: good}})
    with pytest.raises(data_update.UpdateError, match="limit"):
        data_update.check_bundle_manifest({**base, "files": {"manifest.json": {"sha256": "0" * 64, "size": data_update.MAX_FILE_BYTES + 1}}})
    with pytest.raises(data_update.UpdateError, match="schema_version"):
        data_update.check_bundle_manifest({**base, "schema_version": 2, "files": {"manifest.json": good}})


def _bundle_manifest(**change: Any) -> Dict[str, Any]:
    good = {"sha256": "0" * 64, "size": 1}
    base: Dict[str, Any] = {"format": "cudadoctor-data-bundle", "bundle_version": 1, "data_version": "2026.12.0",
                            "schema_version": 1, "min_tool_version": "0.1.0", "files": {"manifest.json": good}}
    base.update(change)
    return base


@pytest.mark.parametrize("field, value", [
    ("data_version", "2026.12." + "9" * 5000),  # int() of over 4300 digits raises ValueError (issue 16, item 14)
    ("data_version", "2026.12.0\n"),
    ("data_version", "2026.12.0/../x"),
    ("min_tool_version", "9" * 5000),
    ("min_tool_version", "0." + "1" * 5000),
    ("min_tool_version", "0.1.0\n"),
])
def test_bad_versions_are_refused_in_one_line(field: str, value: str) -> None:
    with pytest.raises(data_update.UpdateError, match=f"bad {field}") as caught:
        data_update.check_bundle_manifest(_bundle_manifest(**{field: value}))
    message = str(caught.value)
    assert "\n" not in message and len(message) < 200


@pytest.mark.parametrize("name", ["evil.json\n", "gpus.json\x1b]52;c;x\x07", "schemas/gpus.schema.json\n", "x" * 300 + ".json",
                                  ".json", "schemas/.json", "..json"])
def test_file_names_with_control_characters_or_no_stem_are_refused(name: str) -> None:
    good = {"sha256": "0" * 64, "size": 1}
    with pytest.raises(data_update.UpdateError, match="bad name") as caught:
        data_update.check_bundle_manifest(_bundle_manifest(files={"manifest.json": good, name: good}))
    message = str(caught.value)
    assert "\n" not in message and "\x1b" not in message and "\x07" not in message and len(message) < 300


def test_huge_data_version_from_a_server_is_a_clean_failure(server: str, store: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = _fails(capsys, store, "--url", f"{server}/hugeversion/bundle.json")
    assert "bad data_version" in line and len(line) < 300


# ---------------------------------------------------------------- two updates at once (issue 16, item 2)


def _child_update(store: str, url: str, pause: Optional[str] = None) -> "subprocess.Popen[str]":
    """``cudadoctor data update --url URL`` in a child process on the same store."""
    env = dict(os.environ, CUDADOCTOR_DATA_HOME=store)
    env.pop("CUDADOCTOR_INSTALL_PAUSE", None)
    if pause:
        env["CUDADOCTOR_INSTALL_PAUSE"] = pause
    return subprocess.Popen([sys.executable, "-m", "cudadoctor", "data", "update", "--url", url],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _first_line(stream: Any, wait_s: float) -> str:
    """The first line of a child's stream, or "" when none came within ``wait_s`` seconds."""
    lines: "queue.Queue[str]" = queue.Queue()
    threading.Thread(target=lambda: lines.put(stream.readline()), daemon=True).start()
    try:
        return lines.get(timeout=wait_s)
    except queue.Empty:
        return ""


def _wait_for(path: str, child: "subprocess.Popen[str]", wait_s: float = 60) -> None:
    deadline = time.monotonic() + wait_s
    while not os.path.exists(path) and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.path.exists(path), f"the child never reached its pause point: {child.communicate()}"


@pytest.mark.parametrize("first, second", [("2026.12.0", "2027.1.0"), ("2027.1.0", "2026.12.0")])
def test_two_updates_at_once_end_with_the_newest_data(server: str, store: str, tmp_path: Any,
                                                      first: str, second: str) -> None:
    """The first update is held inside the store (after placing its folder, before switching
    state.json); the second must wait for it, and the newer data must end up current whatever
    the order. Before the lock the second ran through, and an older first one then became current."""
    from cudadoctor.data import store as data_store

    flag = str(tmp_path / "first-paused")
    one = _child_update(store, f"{server}/v{first}/bundle.json", pause=f"placed:{flag}")
    two: "Optional[subprocess.Popen[str]]" = None
    try:
        _wait_for(flag, one)
        two = _child_update(store, f"{server}/v{second}/bundle.json")
        waiting = _first_line(two.stderr, 60)
        assert "waiting for another cudadoctor data update or rollback to finish" in waiting
        assert two.poll() is None, "the second update finished while the first held the store"
        os.remove(flag)  # let the first one go on
        out_one, err_one = one.communicate(timeout=120)
        out_two, err_two = two.communicate(timeout=120)
    finally:
        for child in (one, two):
            if child is not None and child.poll() is None:
                child.kill()
                child.communicate()
    assert one.returncode == 0, err_one
    assert f"installed data {first}" in out_one
    newest = max(first, second, key=data_update.version_tuple)
    if second == newest:
        assert two.returncode == 0, err_two
        assert f"installed data {second} (was {first})" in out_two
        assert (_current(store), data_store.installed().previous) == (second, first)  # type: ignore[union-attr]
    else:  # refused in one line, as an older bundle is when run alone
        assert two.returncode == 1
        assert err_two.count("\n") == 1 and f"older than the data in use ({first}, installed meanwhile" in err_two
        assert _current(store) == first
    choice = data_store.choose_data_dir()
    assert (choice.origin, choice.data_version, choice.warning) == ("installed", newest, None)
    assert sorted(n for n in os.listdir(os.path.join(store, "bundles")) if not n.startswith(".")) == sorted({first, second} if second == newest else {first})
    assert not [n for n in os.listdir(os.path.join(store, "bundles")) if n.startswith(".staging-")]


def test_rollback_waits_for_an_update_then_gives_up_in_one_line(server: str, store: str, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from cudadoctor.data import store as data_store

    assert _update(capsys, "--url", f"{server}/v2026.12.0/bundle.json")[0] == 0
    before = _snapshot(store)
    monkeypatch.setattr(data_store, "LOCK_WAIT_S", 0.5)
    with data_store.store_lock():  # as an update in another process would hold it
        started = time.monotonic()
        code = run(["data", "rollback"])
        elapsed = time.monotonic() - started
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.splitlines() == [
        "cudadoctor: waiting for another cudadoctor data update or rollback to finish (up to 0.5 s)",
        f"cudadoctor: error: another cudadoctor data update or rollback still holds {os.path.join(store, 'lock')} after 0.5 s; try again when it has finished",
        "  hint: cudadoctor data info",
    ]
    assert elapsed < 30
    assert _snapshot(store) == before
    assert run(["data", "rollback"]) == 0  # the lock is free again


# ---------------------------------------------------------------- slow and stalled servers (issue 16, item 13)


@pytest.mark.parametrize("kind, says", [
    ("trickle", "the download took longer than 2 s"),
    ("stall", "the server stopped sending after 10 bytes"),
    ("trickleheaders", "the server sent no complete response within 2 s"),
])
def test_timeout_bounds_the_whole_download(server: str, store: str, capsys: pytest.CaptureFixture[str],
                                           kind: str, says: str) -> None:
    """--timeout is a deadline over the whole download: a server sending one byte at a time never
    trips a per-read timeout (it ran past 130 s with --timeout 5), and one that stalls after its
    headers is not retried nor called offline (92 s, "offline or unreachable")."""
    started = time.monotonic()
    line = _fails(capsys, store, "--url", f"{server}/{kind}/bundle.json", "--timeout", "2")
    elapsed = time.monotonic() - started
    assert says in line, line
    assert "timed out" in line and "attempts" not in line and "offline" not in line
    assert elapsed < 2 + 8, f"took {elapsed:.1f} s with --timeout 2"


def test_control_characters_in_the_url_are_escaped_in_the_error_line(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    line = _fails(capsys, store, "--url", f"http://127.0.0.1:{port}/x\x1b]52;c;eA==\x07.json", "--timeout", "1")
    assert "\x1b" not in line and "\x07" not in line and "\\x1b]52;c;eA==\\x07" in line


def test_control_characters_in_the_url_are_escaped_in_the_success_line(server: str, store: str,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _update(capsys, "--url", f"{server}/v2026.12.0/bundle.json?x=\x1b[2J")
    assert code == 0, err
    assert "\x1b" not in out and "?x=\\x1b[2J" in out
