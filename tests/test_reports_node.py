"""The node a report names, and ``report -o DIR/{host}.json`` (docs/fleet.md)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path

import pytest

from cudadoctor.cli.app import run
from cudadoctor.model import HostInfo, Snapshot
from cudadoctor.reports.node import expand, file_part, node_name, pseudonym

H200 = "h200-driver580-torch211-cu130"


def snapshot(hostname: str = "gpu-017.cluster.example") -> Snapshot:
    return Snapshot(host=HostInfo(hostname=hostname))


def test_the_node_name_prefers_the_explicit_name_then_slurm_then_the_hostname() -> None:
    assert node_name(snapshot(), {"CUDADOCTOR_NODE_NAME": "k8s-node-3", "SLURMD_NODENAME": "gpu017"}) == "k8s-node-3"
    assert node_name(snapshot(), {"SLURMD_NODENAME": "gpu017", "CUDADOCTOR_NODE_NAME": "  "}) == "gpu017"
    assert node_name(snapshot(), {}) == "gpu-017.cluster.example"
    assert node_name(Snapshot(), {}) is None


def test_the_pseudonym_is_the_documented_hash_stable_and_case_blind() -> None:
    want = "host-" + hmac.new(b"tests-pseudonym-key", b"gpu017", hashlib.sha256).hexdigest()[:8]  # conftest's key
    assert pseudonym("gpu017") == pseudonym("GPU017") == pseudonym(" gpu017\n") == want
    assert pseudonym("gpu017") != pseudonym("gpu018")


@pytest.mark.parametrize("node, part", [
    ("gpu017", "gpu017"), ("a/b c", "a_b_c"), ("../../etc", "etc"), ("", "unknown-host"), (None, "unknown-host"),
    ("gpu-017.cluster", "gpu-017.cluster"),
])
def test_a_node_name_becomes_a_safe_file_name(node: str, part: str) -> None:
    assert file_part(node) == part
    assert expand("out/{host}.json", node) == f"out/{part}.json"


def _report(tmp_path: Path, capsys: pytest.CaptureFixture[str], machines_dir: str, *args: str) -> Path:
    out = tmp_path / "reports" / "{host}.json"
    code = run(["report", "--format", "json", "--machine", os.path.join(machines_dir, H200), "-o", str(out), *args])
    assert code == 0, capsys.readouterr().err
    files = list((tmp_path / "reports").iterdir())
    assert len(files) == 1
    return files[0]


def test_report_writes_under_the_pseudonym_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      machines_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURMD_NODENAME", "gpu017")
    path = _report(tmp_path, capsys, machines_dir)
    assert path.name == pseudonym("gpu017") + ".json"
    text = path.read_text()
    assert "gpu017" not in text
    envelope = json.loads(text)
    assert envelope["node"] == pseudonym("gpu017")
    assert "wrote the report to" in capsys.readouterr().err and not list(path.parent.glob(".cudadoctor-*"))


def test_keep_hostname_keeps_the_node_name(tmp_path: Path, capsys: pytest.CaptureFixture[str], machines_dir: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDADOCTOR_NODE_NAME", "k8s-node-3")
    path = _report(tmp_path, capsys, machines_dir, "--keep-hostname")
    assert path.name == "k8s-node-3.json"
    assert json.loads(path.read_text())["node"] == "k8s-node-3"


def test_without_a_scheduler_the_node_is_the_recorded_hostname(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                machines_dir: str) -> None:
    path = _report(tmp_path, capsys, machines_dir, "--no-redact")
    envelope = json.loads(path.read_text())
    assert envelope["node"] == envelope["snapshot"]["host"]["hostname"] == path.stem


def test_an_output_path_through_a_file_is_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         machines_dir: str) -> None:
    (tmp_path / "afile").write_text("")
    code = run(["report", "--machine", os.path.join(machines_dir, H200), "-o", str(tmp_path / "afile" / "{host}.md")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("cudadoctor: error: -o ") and "is not a folder" in err
