"""tools/refresh_data.py, offline: a local http.server replays PyPI's JSON API from tests/refresh/
(recorded 2026-11-27, trimmed: see tests/refresh/README.md), and serves constructed pages where the
real index could not be recorded (PyTorch's wheel index) or a case needs one (a wheel without a
PEP 658 file, read with range requests)."""

from __future__ import annotations

import io
import json
import shutil
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(__file__).resolve().parent / "refresh"
sys.path.insert(0, str(ROOT / "tools"))

import refresh_data  # noqa: E402

PACKAGES = ["jax", "onnxruntime-gpu", "nvidia-nccl-cu13", "cuda-toolkit", "torch", "vllm"]  # the recorded subset


class Replay:
    """PyPI's JSON API and files from tests/refresh/, plus extra routes a test adds."""

    def __init__(self) -> None:
        self.routes: Dict[str, bytes] = {}
        for doc in (RECORDED / "pypi").glob("*.json"):
            self.routes[f"/pypi/{doc.stem}/json"] = doc.read_bytes()
        for meta in (RECORDED / "files").iterdir():
            self.routes[f"/files/{meta.name}"] = meta.read_bytes()
        routes = self.routes

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                body = routes.get(self.path)
                if body is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                wanted = self.headers.get("Range")
                if wanted:
                    first, last = (int(x) for x in wanted.split("=")[1].split("-"))
                    part = body[first:last + 1]
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {first}-{first + len(part) - 1}/{len(body)}")
                    body = part
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def replay(monkeypatch: pytest.MonkeyPatch) -> Iterator[Replay]:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    r = Replay()
    thread = threading.Thread(target=r.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield r
    r.server.shutdown()
    r.server.server_close()


def _config(tmp_path: Path, names: List[str]) -> str:
    doc = json.loads((ROOT / "tools" / "refresh_packages.json").read_text(encoding="utf-8"))
    doc["packages"] = [p for p in doc["packages"] if p["name"] in names]
    path = tmp_path / "packages.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


def _run(replay: Replay, tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str,
         data: str = str(ROOT / "compat_data"), names: List[str] = PACKAGES) -> Any:
    code = refresh_data.main(["--data", data, "--config", _config(tmp_path, names), "--pypi-json",
                              replay.url + "/pypi/{project}/json", "--no-pytorch-index", "--today", "2026-11-27",
                              "--timeout", "5", *args])
    return code, capsys.readouterr().out


def _data_without(tmp_path: Path, table: str, keep: Any) -> str:
    data = tmp_path / "data"
    shutil.copytree(ROOT / "compat_data", data)
    doc = json.loads((data / table).read_text(encoding="utf-8"))
    doc["records"] = [r for r in doc["records"] if keep(r)]
    (data / table).write_text(json.dumps(doc), encoding="utf-8")
    return str(data)


def test_the_data_lacks_nothing_the_recorded_index_has(replay: Replay, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    # the acceptance of issue 17: today's index (the recorded subset) against today's data
    code, out = _run(replay, tmp_path, capsys, "--check")
    assert code == 0, out
    # torch counts twice: its releases in pytorch.json and the triton pin of each in triton.json
    assert out.startswith("nothing missing: 7 packages compared")


def test_check_fails_when_a_release_older_than_the_window_is_missing(replay: Replay, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    data = _data_without(tmp_path, "jax.json", lambda r: r["first"] != "0.12.0")
    code, out = _run(replay, tmp_path, capsys, "--check", "--days", "38", data=data, names=["jax"])
    assert code == 1
    assert out.splitlines() == [  # 39 and 37 days old on 2026-11-27
        "STALE jax.json: jax 0.12.0 (release, uploaded 2026-10-19): no record covers it",
        "jax.json: jax 0.12.0.1 (release, uploaded 2026-10-21): no record covers it",
    ]
    code, out = _run(replay, tmp_path, capsys, "--check", "--days", "60", data=data, names=["jax"])
    assert code == 0 and "STALE" not in out and "jax 0.12.0 (release" in out  # said, but within the window


def test_a_missing_release_comes_with_a_draft_read_from_its_metadata(replay: Replay, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    data = _data_without(tmp_path, "jax.json", lambda r: r["first"] != "0.12.0")
    code, out = _run(replay, tmp_path, capsys, data=data, names=["jax"])
    assert code == 0
    drafts = json.loads(out[out.index("["):])
    newest = next(d for d in drafts if d["version"] == "0.12.0.1")
    assert newest["requires_python"] == ">=3.12" and newest["confidence"] == "primary"
    assert 'jax-cuda13-plugin[with-cuda]<=0.12.0.1,>=0.12.0.1; extra == "cuda13"' in newest["requires"]
    assert newest["source"] == "https://pypi.org/project/jax/0.12.0.1/ (jax-0.12.0.1-py3-none-any.whl: METADATA)"


def test_metadata_without_a_pep658_file_is_read_with_range_requests(replay: Replay, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # constructed: a project whose only release has a small wheel and no .metadata file
    wheel = io.BytesIO()
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("demo/__init__.py", "x = 1\n" * 5000)
        z.writestr("demo-1.0.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.0.0\n"
                   "Requires-Python: >=3.11\nRequires-Dist: nvidia-nccl-cu13>=2.27.7\n")
    name = "demo-1.0.0-cp312-cp312-manylinux_2_27_x86_64.whl"
    replay.routes[f"/files/{name}"] = wheel.getvalue()
    replay.routes["/pypi/demo/json"] = json.dumps({"releases": {"1.0.0": [
        {"filename": name, "url": f"/files/{name}", "upload_time": "2026-11-01T00:00:00", "size": 0,
         "yanked": False}]}}).encode()
    doc = refresh_data.Indexes(replay.url + "/pypi/{project}/json", None, 5).pypi("demo")
    meta = refresh_data.Indexes(replay.url + "/pypi/{project}/json", None, 5).metadata(doc.files["1.0.0"][0])
    assert "Requires-Dist: nvidia-nccl-cu13>=2.27.7" in meta


def test_pytorch_variants_the_data_lacks_are_listed(replay: Replay, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # constructed (PyTorch's index cannot be reached from here to be recorded): a PEP 503 page with
    # a cu129 build of 2.14.0 and the cu130 build the data has
    files = ["torch-2.14.0%2Bcu129-cp312-cp312-manylinux_2_28_x86_64.whl",
             "torch-2.14.0%2Bcu130-cp312-cp312-manylinux_2_28_x86_64.whl"]
    replay.routes["/whl/torch/"] = ("<html><body>" + "".join(
        f'<a href="/whl/{f}#sha256=00">{f.replace("%2B", "+")}</a>' for f in files) + "</body></html>").encode()
    indexes = refresh_data.Indexes(replay.url + "/pypi/{project}/json", replay.url + "/whl", 5)
    doc = json.loads((ROOT / "compat_data" / "pytorch.json").read_text(encoding="utf-8"))
    gaps = refresh_data.variant_gaps(indexes, doc, {"name": "torch", "table": "pytorch.json"}, (1, 12))
    assert [g.line() for g in gaps] == [
        "pytorch.json: torch 2.14.0+cu129 (variant, uploaded ): on PyTorch's index for linux-x86_64; "
        "pytorch.json has no cu129 variant of 2.14.0"]


def test_an_index_that_does_not_answer_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    server.server_close()
    code = refresh_data.main(["--config", _config(tmp_path, ["jax"]), "--pypi-json", url + "/pypi/{project}/json",
                              "--no-pytorch-index", "--check", "--timeout", "2"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("refresh_data: http://127.0.0.1:") and len(err.splitlines()) == 1


def test_the_index_urls_come_from_the_data() -> None:
    pypi, torch = refresh_data.index_urls(str(ROOT / "compat_data"))
    assert pypi == "https://pypi.org/pypi/{project}/json" and torch == "https://download.pytorch.org/whl"


def test_a_torch_patch_release_without_its_triton_pin_is_reported(replay: Replay, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    data = _data_without(tmp_path, "triton.json", lambda r: r["torch"] != "2.14.1")
    code, out = _run(replay, tmp_path, capsys, "--check", data=data, names=["torch"])
    assert code == 1  # uploaded 2026-09-30, more than 30 days before 2026-11-27
    assert out.splitlines() == [
        "STALE triton.json: torch 2.14.1 (release, uploaded 2026-09-30): no triton pin recorded for this torch release"]


def test_a_vllm_python_floor_the_record_lacks_or_gets_wrong_is_reported(replay: Replay, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    def edit(r: Dict[str, Any]) -> bool:
        if r["version"] == "0.32.0":
            r.pop("requires_python")
        if r["version"] == "0.33.0":
            r["requires_python"] = "<3.15,>=3.10"  # the floor before 0.32
        return True
    data = _data_without(tmp_path, "vllm.json", edit)
    code, out = _run(replay, tmp_path, capsys, "--check", data=data, names=["vllm"])
    assert code == 1
    assert out.splitlines() == [
        "STALE vllm.json: vllm 0.32.0 (python, uploaded 2026-10-18): Requires-Python <3.15,>=3.11 on the index; "
        "the record says nothing (requires_python)",
        "vllm.json: vllm 0.33.0 (python, uploaded 2026-11-02): Requires-Python <3.15,>=3.11 on the index; "
        "the record says <3.15,>=3.10 (requires_python)"]


def test_a_cuda_toolkit_re_release_is_reported(replay: Replay, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    # 13.4.3 re-releases the 13.4 Update 1 meta-package: no new CUDA, but a wheel the data must list
    def edit(r: Dict[str, Any]) -> bool:
        if r["cuda"] == "13.4.2":
            r["pypi"] = ["13.4.2"]
        return True
    data = _data_without(tmp_path, "cuda_toolkits.json", edit)
    code, out = _run(replay, tmp_path, capsys, "--check", "--days", "60", data=data, names=["cuda-toolkit"])
    assert code == 0  # uploaded 2026-10-14: within 60 days
    assert out.splitlines() == [
        "cuda_toolkits.json: cuda-toolkit 13.4.3 (release, uploaded 2026-10-14): no record covers it"]
    known = refresh_data.Known(json.loads((ROOT / "compat_data" / "cuda_toolkits.json").read_text(encoding="utf-8")),
                               {"name": "cuda-toolkit", "match": "field", "key": "pypi"})
    assert known.covers("13.4.1.0") and known.covers("12.8.2.0") and not known.covers("13.6.0")
