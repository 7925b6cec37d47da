"""`install --verify` against a small fake package index served on 127.0.0.1.

The fake index (http.server in a thread, ephemeral port) serves one route per situation a user
can meet: a PEP 691 JSON page, an HTML-only PEP 503 page, a version without a wheel for the
Python asked for, a missing project, a server error that clears on retry, a slow or trickling
server, a closed port, a redirect loop and an oversized page. Every test asserts the one line a
user would read, and the slow ones that it comes back within a bound.

The filenames on the fake pages are fixtures for the matcher; they claim nothing about what any
real index publishes.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import pytest

from cudadoctor.planner import verify as pv
from cudadoctor.errors import CudadoctorError
from cudadoctor.planner.verify import WheelStatus, verify

TORCH_FILES = [
    *(f"torch-2.5.1+cu124-cp3{m}-cp3{m}-linux_x86_64.whl" for m in (9, 10, 11, 12)),
    "torch-2.5.1+cu124-cp311-cp311-win_amd64.whl",
    "torch-2.5.0+cu124-cp311-cp311-linux_x86_64.whl",
    "torch-2.4.1+cu124-cp311-cp311-linux_x86_64.whl",
    "torch-2.5.1+cu124.tar.gz",
]
VISION_FILES = [
    "torchvision-0.20.1+cu124-cp311-cp311-linux_x86_64.whl",
    "torchvision-0.20.1+cu124-cp312-cp312-linux_x86_64.whl",
]

Route = Callable[[BaseHTTPRequestHandler], None]


def json_page(files: List[str], extra: Optional[Dict[str, Dict[str, str]]] = None) -> Route:
    """A PEP 691 page; ``extra`` adds keys (requires-python, yanked) to some files' entries."""

    def serve(h: BaseHTTPRequestHandler) -> None:
        entries = [{"filename": f, "url": f"../../files/{f}", "hashes": {}, **(extra or {}).get(f, {})} for f in files]
        body = json.dumps({"meta": {"api-version": "1.1"}, "name": "x", "files": entries}).encode()
        send(h, 200, body, pv.JSON_TYPE)

    return serve


def html_page(files: List[str], attrs: str = "") -> Route:
    """A PEP 503 page served as text/html whatever the client accepts; hrefs percent-encode '+'."""

    def serve(h: BaseHTTPRequestHandler) -> None:
        links = "".join(f'<a href="/files/{f.replace("+", "%2B")}#sha256=00"{attrs}>{f}</a><br>' for f in files)
        send(h, 200, f"<!DOCTYPE html><html><body>{links}</body></html>".encode(), "text/html")

    return serve


def send(h: BaseHTTPRequestHandler, status: int, body: bytes = b"", content_type: str = "text/plain", **headers: str) -> None:
    h.send_response(status)
    h.send_header("Content-Type", content_type)
    h.send_header("Content-Length", headers.pop("length", str(len(body))))
    for key, value in headers.items():
        h.send_header(key, value)
    h.end_headers()
    h.wfile.write(body)


class FakeIndex:
    """A threaded HTTP server on an ephemeral port; ``routes`` maps a path to its behaviour and
    ``hits`` counts requests per path. Handlers that wait do so in short steps, bounded, and stop
    when the fixture ends."""

    def __init__(self) -> None:
        self.routes: Dict[str, Route] = {}
        self.hits: Counter[str] = Counter()
        self.accept: Dict[str, str] = {}
        self.stop = threading.Event()
        index = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                path = self.path.split("?")[0]
                index.hits[path] += 1
                index.accept[path] = self.headers.get("Accept", "")
                route = index.routes.get(path)
                if route is None:
                    send(self, 404, b"not found")
                else:
                    route(self)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/simple/"

    def wait(self, seconds: float) -> None:
        """Sleep up to ``seconds``, or less if the test is over."""
        self.stop.wait(seconds)


@pytest.fixture
def index(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeIndex]:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setattr(pv, "BACKOFF_S", 0.05)
    fake = FakeIndex()
    fake.routes["/simple/torch/"] = json_page(TORCH_FILES)
    fake.routes["/simple/torchvision/"] = html_page(VISION_FILES)
    fake.thread.start()
    yield fake
    fake.stop.set()
    fake.server.shutdown()
    fake.server.server_close()


def timed(call: Callable[[], pv.VerifyResult]) -> Tuple[pv.VerifyResult, float]:
    start = time.monotonic()
    result = call()
    return result, time.monotonic() - start


# --------------------------------------------------------------------------- found


def test_json_page_finds_the_wheel_and_pins_match_local_versions(index: FakeIndex) -> None:
    result = verify([("torch", "2.5.1"), ("torchvision", "0.20.1")], index.url, "3.11", "linux-x86_64")
    assert result.ok and result.error is None and result.problems == ()
    torch, vision = result.packages
    assert torch.status == WheelStatus.FOUND and torch.wheel is not None
    assert torch.wheel.filename == "torch-2.5.1+cu124-cp311-cp311-linux_x86_64.whl"
    assert torch.wheel.url == index.url.replace("/simple/", "/files/") + torch.wheel.filename
    assert pv.JSON_TYPE in index.accept["/simple/torch/"]
    assert (result.python, result.platform) == ("cp311", "linux_x86_64")


def test_a_series_pin_resolves_to_its_newest_release_with_a_wheel_here(index: FakeIndex) -> None:
    # plans pin a series where the data names only the series (cupy-cuda12x==14.*): --verify
    # resolves it against the index as pip would, instead of leaving it unchecked
    result = verify([("torch", "2.5.*"), ("torch", "2.4.*")], index.url, "3.11", "linux-x86_64")
    newest, older = result.packages
    assert result.ok and newest.wheel is not None and older.wheel is not None
    assert newest.wheel.filename == "torch-2.5.1+cu124-cp311-cp311-linux_x86_64.whl"
    assert older.wheel.filename == "torch-2.4.1+cu124-cp311-cp311-linux_x86_64.whl"


def test_a_series_the_index_does_not_serve_is_said(index: FakeIndex) -> None:
    (torch,) = verify([("torch", "2.6.*")], index.url, "3.11", "linux-x86_64").packages
    assert torch.status == WheelStatus.NO_VERSION
    assert torch.reason is not None and torch.reason.startswith("no torch 2.6.* wheel on ")


def test_html_only_page_is_read_with_percent_encoded_hrefs(index: FakeIndex) -> None:
    result = verify([("TorchVision", "0.20.1")], index.url, "3.12", "linux-x86_64")
    (vision,) = result.packages
    assert result.ok and vision.wheel is not None
    assert vision.wheel.filename == "torchvision-0.20.1+cu124-cp312-cp312-linux_x86_64.whl"
    assert vision.wheel.url.endswith("/files/torchvision-0.20.1%2Bcu124-cp312-cp312-linux_x86_64.whl#sha256=00")
    assert index.hits["/simple/torchvision/"] == 1


def test_project_names_are_normalised(index: FakeIndex) -> None:
    index.routes["/simple/onnxruntime-gpu/"] = html_page(["onnxruntime_gpu-1.20.1-cp311-cp311-win_amd64.whl"])
    result = verify([("onnxruntime_GPU", "1.20.1")], index.url, "3.11", "windows-x86_64")
    assert result.ok
    assert index.hits["/simple/onnxruntime-gpu/"] == 1


def test_a_local_label_in_the_pin_must_match(index: FakeIndex) -> None:
    assert verify([("torch", "2.5.1+cu124")], index.url, "3.11", "linux-x86_64").ok
    result = verify([("torch", "2.5.1+cu121")], index.url, "3.11", "linux-x86_64")
    (torch,) = result.packages
    assert torch.status == WheelStatus.NO_VERSION
    assert torch.reason == f"no torch 2.5.1+cu121 wheel on {index.url}: newest there: 2.5.1+cu124, 2.5.0+cu124, 2.4.1+cu124"


def test_requires_python_and_yanked_are_honoured(index: FakeIndex) -> None:
    files = ["pkg-1.0-py3-none-any.whl"]
    index.routes["/simple/pkg/"] = json_page(files, {files[0]: {"requires-python": ">=3.12"}})
    (pkg,) = verify([("pkg", "1.0")], index.url, "3.11", "linux-x86_64").packages
    assert pkg.status == WheelStatus.NO_COMPATIBLE_WHEEL
    assert pkg.reason == f"no pkg 1.0 wheel for cp311 linux_x86_64 on {index.url}: its linux_x86_64 wheels require Python >=3.12"
    index.routes["/simple/yanked/"] = html_page(["yanked-1.0-py3-none-any.whl"], attrs=' data-yanked=""')
    (yanked,) = verify([("yanked", "1.0")], index.url, "3.11", "linux-x86_64").packages
    assert yanked.wheel is not None and yanked.wheel.yanked  # an exact pin still installs it (PEP 592)


def test_a_redirect_is_followed_and_relative_links_resolve_against_the_final_page(index: FakeIndex) -> None:
    index.routes["/simple/moved/"] = lambda h: send(h, 301, Location="/mirror/moved/")
    index.routes["/mirror/moved/"] = lambda h: send(
        h, 200, b'<a href="moved-2.0-py3-none-any.whl">moved-2.0-py3-none-any.whl</a>', "text/html; charset=utf-8"
    )
    (moved,) = verify([("moved", "2.0")], index.url, "3.11", "linux-aarch64").packages
    assert moved.wheel is not None
    assert moved.wheel.url == index.url.replace("/simple/", "/mirror/moved/") + "moved-2.0-py3-none-any.whl"


# --------------------------------------------------------------------------- missing


def test_missing_wheel_for_this_python_says_what_exists(index: FakeIndex) -> None:
    result = verify([("torch", "2.5.1"), ("torchvision", "0.20.1")], index.url, "3.13", "linux-x86_64")
    assert not result.ok and result.error is None
    torch, vision = result.packages
    assert torch.status == vision.status == WheelStatus.NO_COMPATIBLE_WHEEL
    assert torch.reason == f"no torch 2.5.1 wheel for cp313 linux_x86_64 on {index.url}: found cp39–cp312"
    assert result.problems == (torch.reason, vision.reason)


def test_missing_wheel_for_this_platform_names_the_platforms_there(index: FakeIndex) -> None:
    (torch,) = verify([("torch", "2.5.1")], index.url, "3.11", "macos-arm64").packages
    assert torch.reason == (
        f"no torch 2.5.1 wheel for cp311 macosx_arm64 on {index.url}: found only linux_x86_64, win_amd64 wheels"
    )


def test_404_is_a_missing_project_and_the_next_package_is_still_checked(index: FakeIndex) -> None:
    result = verify([("nosuchpkg", "1.0"), ("torch", "2.5.1")], index.url, "3.11", "linux-x86_64")
    missing, torch = result.packages
    assert missing.status == WheelStatus.NO_PROJECT
    assert missing.reason == f"index {index.url} returned HTTP 404 for nosuchpkg: no such project"
    assert torch.status == WheelStatus.FOUND and not result.ok and result.error is None


# --------------------------------------------------------------------------- a failing index


def test_a_500_is_retried_until_it_succeeds(index: FakeIndex) -> None:
    serve = json_page(["flaky-1.0-py3-none-any.whl"])
    index.routes["/simple/flaky/"] = lambda h: send(h, 500) if index.hits["/simple/flaky/"] == 1 else serve(h)
    assert verify([("flaky", "1.0")], index.url, "3.11", "linux-x86_64").ok
    assert index.hits["/simple/flaky/"] == 2


def test_a_lasting_500_gives_up_after_a_few_attempts(index: FakeIndex) -> None:
    index.routes["/simple/broken/"] = lambda h: send(h, 503)
    result = verify([("broken", "1.0"), ("torch", "2.5.1")], index.url, "3.11", "linux-x86_64")
    assert result.error == f"index {index.url} returned HTTP 503 for broken ({pv.RETRIES + 1} attempts)"
    assert index.hits["/simple/broken/"] == pv.RETRIES + 1
    assert [p.status for p in result.packages] == [WheelStatus.NOT_CHECKED] * 2
    assert index.hits["/simple/torch/"] == 0  # an index that failed is not asked again
    assert result.problems == (result.error,)


def test_a_slow_server_times_out_without_hanging(index: FakeIndex) -> None:
    index.routes["/simple/slow/"] = lambda h: index.wait(30)
    result, elapsed = timed(lambda: verify([("slow", "1.0")], index.url, "3.11", "linux-x86_64", timeout=0.5))
    assert result.error == f"index {index.url} did not answer within 0.5 s"
    assert elapsed < 0.5 + 2


def test_a_trickling_server_hits_the_page_deadline(index: FakeIndex) -> None:
    def trickle(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.end_headers()  # no Content-Length, HTTP/1.1: the body runs until the connection closes
        h.close_connection = True
        for _ in range(300):
            if index.stop.is_set():
                return
            try:
                h.wfile.write(b"<!-- -->" * 2000)
                h.wfile.flush()
            except OSError:
                return
            index.wait(0.05)

    index.routes["/simple/trickle/"] = trickle
    result, elapsed = timed(lambda: verify([("trickle", "1.0")], index.url, "3.11", "linux-x86_64", timeout=0.5))
    assert result.error == f"index {index.url} did not send trickle's page within 1.5 s"
    assert elapsed < 1.5 + 2


def test_a_server_that_is_down_gives_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pv, "BACKOFF_S", 0.05)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed when the block ends: nothing listens there
    url = f"http://127.0.0.1:{port}/simple/"
    result, elapsed = timed(lambda: verify([("torch", "2.5.1")], url, "3.11", "linux-x86_64", timeout=1))
    assert result.error == f"index {url} is not reachable: connection refused"
    assert not result.ok and elapsed < 3


def test_a_redirect_loop_stops(index: FakeIndex) -> None:
    index.routes["/simple/loop/"] = lambda h: send(h, 302, Location="/simple/loop2/")
    index.routes["/simple/loop2/"] = lambda h: send(h, 302, Location=index.url + "loop/")
    result = verify([("loop", "1.0")], index.url, "3.11", "linux-x86_64")
    assert result.error == f"index {index.url} redirected more than {pv.MAX_REDIRECTS} times for loop"
    assert index.hits["/simple/loop/"] + index.hits["/simple/loop2/"] == pv.MAX_REDIRECTS + 1


def test_an_oversized_page_is_refused(index: FakeIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pv, "MAX_BYTES", 100_000)
    index.routes["/simple/declared/"] = lambda h: send(h, 200, b"", "text/html", length=str(10**9))

    def undeclared(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.end_headers()
        h.close_connection = True
        try:
            h.wfile.write(b"<p>" * 200_000)
        except OSError:
            pass

    index.routes["/simple/undeclared/"] = undeclared
    declared = verify([("declared", "1.0")], index.url, "3.11", "linux-x86_64")
    assert declared.error == f"index {index.url} sent a declared page of 1000000000 bytes, over the 100000-byte cap"
    undeclared_result = verify([("undeclared", "1.0")], index.url, "3.11", "linux-x86_64")
    assert undeclared_result.error == f"index {index.url} sent a undeclared page over the 100000-byte cap"


@pytest.mark.parametrize(
    ("body", "content_type", "error"),
    [
        (b"{not json", pv.JSON_TYPE, "sent a bad page that is not valid JSON"),
        (b'{"files": 3}', pv.JSON_TYPE, "sent a bad page without a files list"),
        (b'{"meta": {"api-version": "2.0"}, "files": []}', pv.JSON_TYPE, "speaks simple API 2.0, which cudadoctor does not read"),
        (b"[" * 100_000, "application/json", "sent a bad page that is not valid JSON"),
    ],
)
def test_an_unreadable_page_is_an_index_error(index: FakeIndex, body: bytes, content_type: str, error: str) -> None:
    index.routes["/simple/bad/"] = lambda h: send(h, 200, body, content_type)
    assert verify([("bad", "1.0")], index.url, "3.11", "linux-x86_64").error == f"index {index.url} {error}"


def test_credentials_in_the_index_url_stay_out_of_messages(index: FakeIndex) -> None:
    index.routes["/simple/private/"] = lambda h: send(h, 401)
    url = index.url.replace("http://", "http://alice:s3cret@")
    result = verify([("private", "1.0")], url, "3.11", "linux-x86_64")
    assert result.error == f"index {index.url.replace('http://', 'http://***@')} returned HTTP 401 for private (credentials needed?)"
    assert "s3cret" not in json.dumps([result.index_url, result.error])


# --------------------------------------------------------------------------- bad arguments


@pytest.mark.parametrize(
    ("packages", "url", "python", "platform", "message"),
    [
        ([("torch", "latest")], "http://127.0.0.1:9/", "3.11", "linux-x86_64", "cannot verify torch==latest"),
        ([("torch", "2.5.1")], "ftp://127.0.0.1/simple/", "3.11", "linux-x86_64", "needs an http(s) index URL"),
        ([("torch", "2.5.1")], "http://127.0.0.1:9/", "three", "linux-x86_64", "cannot read Python version"),
        ([("torch", "2.5.1")], "http://127.0.0.1:9/", "3.11", "solaris-sparc", "cannot read platform"),
    ],
)
def test_bad_arguments_are_usage_errors(
    packages: List[Tuple[str, str]], url: str, python: str, platform: str, message: str
) -> None:
    with pytest.raises(CudadoctorError, match=re.escape(message)) as info:
        verify(packages, url, python, platform)
    assert info.value.exit_code == 2


def test_importing_the_module_does_not_import_requests() -> None:
    code = "import sys, cudadoctor.planner.verify, cudadoctor.cli.check; print('requests' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"
