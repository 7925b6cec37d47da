"""The Kubernetes recipes of docs/fleet.md: no cluster runs here, so their container command is
run as the pod would run it (less the pip install), with the node name the manifest gives it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cudadoctor.reports.node import pseudonym
from recipes import recipe

BIN = Path(sys.executable).parent


@pytest.mark.parametrize("name", ["k8s-job", "k8s-daemonset"])
def test_the_pod_command_writes_the_node_report_to_the_volume(name: str, tmp_path: Path) -> None:
    manifest = recipe(name)
    command = json.loads(re.search(r"command: (\[.*\])", manifest).group(1))  # type: ignore[union-attr]
    assert command[:2] == ["sh", "-c"]
    install, _, check = command[2].partition(" && ")
    assert install == "python -m pip install --quiet cudadoctor"
    assert "fieldPath: spec.nodeName" in manifest and "name: CUDADOCTOR_NODE_NAME" in manifest
    assert "mountPath: /reports" in manifest
    env = dict(os.environ, CUDADOCTOR_NODE_NAME="gpu-node-7", PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(["sh", "-c", check.replace("/reports/", f"{tmp_path}/")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = tmp_path / f"{pseudonym('gpu-node-7')}.json"
    assert json.loads(report.read_text())["node"] == pseudonym("gpu-node-7")
