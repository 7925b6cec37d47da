"""The recipes of docs/fleet.md, run for real on a single-host Slurm cluster (tests/slurm_cluster.py).

The recipes are read from the docs, their *settings* lines replaced, and the rest run as written:
if the docs change, these tests run the new text. Marked ``slurm``: they skip with the reason
where Slurm cannot run, and fail instead when CUDADOCTOR_REQUIRE_SLURM=1 (as .ci/run sets).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

import slurm_cluster
from cudadoctor.reports.node import pseudonym
from recipes import recipe

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "machines"
BIN = Path(sys.executable).parent  # the venv the tests run in: its cudadoctor console script
HEALTHY = "h200-driver580-torch211-cu130"
OLD_DRIVER = "laptop-rtx3060-driver470-torch25-cu124"


def with_settings(script: str, **values: str) -> str:
    """The recipe with each ``NAME=... # settings`` line replaced by ``NAME=<value>``; every name
    given must be a settings line of the recipe (so the docs and the tests cannot drift apart)."""
    lines = script.splitlines()
    for name, value in values.items():
        hits = [i for i, line in enumerate(lines) if line.startswith(f"{name}=") and "# settings" in line]
        assert len(hits) == 1, f"recipe has no single settings line for {name}"
        lines[hits[0]] = f"{name}={shlex.quote(value)}"
    return "\n".join(lines) + "\n"


def executable(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def replaying_cudadoctor(folder: Path, machines: Dict[str, str], broken_flag: Path) -> Path:
    """A ``cudadoctor`` in front of the real one that replays a recorded machine chosen by
    SLURMD_NODENAME (the hidden --machine option), and fails like a broken install while
    ``broken_flag`` exists. Absolute paths only: a HealthCheckProgram has no environment."""
    cases = "\n".join(f"    {node}) machine={shlex.quote(str(MACHINES / m))} ;;" for node, m in machines.items())
    real = shlex.quote(str(BIN / "cudadoctor"))
    return executable(folder / "cudadoctor", f"""#!/bin/bash
[ -e {shlex.quote(str(broken_flag))} ] && {{ echo "cudadoctor: internal error: simulated" >&2; exit 3; }}
machine=
case "$SLURMD_NODENAME" in
{cases}
esac
if [ -n "$machine" ] && {{ [ "$1" = report ] || [ "$1" = check ]; }}; then
    command=$1; shift
    exec {real} "$command" --machine "$machine" "$@"
fi
exec {real} "$@"
""")


@pytest.fixture(scope="module")
def cluster_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[List[slurm_cluster.Cluster]]:
    started: List[slurm_cluster.Cluster] = []
    yield started
    for cluster in started:
        cluster.stop()


def start(root: Path, started: List[slurm_cluster.Cluster], **kwargs: object) -> slurm_cluster.Cluster:
    try:
        cluster = slurm_cluster.start(str(root), **kwargs)  # type: ignore[arg-type]
    except slurm_cluster.SlurmUnavailable as exc:
        if os.environ.get("CUDADOCTOR_REQUIRE_SLURM") == "1":
            pytest.fail(f"Slurm is required here (CUDADOCTOR_REQUIRE_SLURM=1): {exc}")
        pytest.skip(str(exc).splitlines()[0])
    started.append(cluster)
    cluster.env["PATH"] = f"{BIN}{os.pathsep}{cluster.env.get('PATH', '')}"
    return cluster


def run_script(cluster: slurm_cluster.Cluster, script: str, path: Path, env: Dict[str, str] = {},
               timeout: float = 120) -> "subprocess.CompletedProcess[str]":
    executable(path, "#!/bin/bash\n" + script)
    return cluster.run(["bash", str(path)], env=env, timeout=timeout, check=False)


# --------------------------------------------------------------------------- collecting reports


def test_the_srun_recipe_writes_a_report_per_node_and_the_summary_gates(
        tmp_path: Path, cluster_factory: List[slurm_cluster.Cluster]) -> None:
    """This machine as it is (no GPU): both nodes report, under their pseudonyms, and the summary
    names the one configuration and the error finding every node has, exiting 1."""
    cluster = start(tmp_path / "slurm", cluster_factory, nodes=2)
    reports = tmp_path / "reports"
    script = with_settings(recipe("slurm-reports"), NODES="2", GPUS="", REPORTS=str(reports))
    proc = run_script(cluster, script, tmp_path / "recipe.sh")
    names = sorted(p.name for p in reports.iterdir())
    assert names == sorted(f"{pseudonym(n)}.json" for n in ("node1", "node2")), proc.stderr
    for path in reports.iterdir():
        envelope = json.loads(path.read_text())
        assert envelope["node"] == path.stem
        assert envelope["redaction"]  # redacted by default
        assert [f["code"] for f in envelope["findings"] if f["severity"] == "error"]
    assert proc.returncode == 1, proc.stdout + proc.stderr  # fleet summarize: a node has an error finding
    assert "2 nodes" in proc.stdout
    assert "no-nvidia-gpu" in proc.stdout


def test_an_odd_node_out_is_named_with_what_differs(tmp_path: Path,
                                                    cluster_factory: List[slurm_cluster.Cluster]) -> None:
    """Three nodes: two replay a healthy H200, the third a laptop whose driver is too old."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    replaying_cudadoctor(bin_dir, {"node1": HEALTHY, "node2": HEALTHY, "node3": OLD_DRIVER}, tmp_path / "broken")
    cluster = start(tmp_path / "slurm", cluster_factory, nodes=3)
    reports = tmp_path / "reports"
    script = with_settings(recipe("slurm-reports"), NODES="3", GPUS="", REPORTS=str(reports))
    proc = run_script(cluster, script, tmp_path / "recipe.sh",
                      env={"PATH": f"{bin_dir}{os.pathsep}{cluster.env['PATH']}"})
    assert len(list(reports.iterdir())) == 3, proc.stderr
    out = proc.stdout
    assert "3 nodes" in out
    assert pseudonym("node3") in out  # the odd node out, by its pseudonym
    assert re.search(r"driver\s+\S+\s*→\s*470\.", out), out
    assert proc.returncode == 1, out  # node3's driver is too old for its torch build: an error


# --------------------------------------------------------------------------- the health check


def test_the_health_check_drains_broken_nodes_and_resumes_its_own(
        tmp_path: Path, cluster_factory: List[slurm_cluster.Cluster]) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    broken = tmp_path / "broken"
    shim = replaying_cudadoctor(bin_dir, {"node1": HEALTHY, "node2": HEALTHY}, broken)  # node3: this machine
    root = tmp_path / "slurm"
    root.mkdir()
    script = with_settings(recipe("slurm-healthcheck"), CUDADOCTOR=str(shim))
    # scontrol and sinfo find the cluster from SLURM_CONF, which slurmd does not pass on
    script = script.replace("\nnode=", f"\nexport SLURM_CONF={shlex.quote(str(root / 'slurm.conf'))}\nnode=", 1)
    check = executable(tmp_path / "cudadoctor-healthcheck.sh", script)
    cluster = start(root, cluster_factory, nodes=3, health_check=str(check), health_interval=2)

    def state(states: Dict[str, str], node: str) -> str:
        return states.get(node, "").split("|")[0]

    # this machine has no GPU: drained, with cudadoctor's finding as the reason; the others stay up
    states = cluster.wait_for(lambda s: state(s, "node3") == "drained", timeout=40)
    assert states["node3"].split("|")[1].startswith("cudadoctor: no-nvidia-gpu: this machine has no NVIDIA GPU"), states
    assert state(states, "node1") == state(states, "node2") == "idle", states

    # a node an admin drained is left alone; one this check drained earlier is given back
    cluster.run(["scontrol", "update", "NodeName=node2", "State=DRAIN", "Reason=maintenance by admin"])
    cluster.run(["scontrol", "update", "NodeName=node1", "State=DRAIN", "Reason=cudadoctor: stale"])
    states = cluster.wait_for(lambda s: state(s, "node1") == "idle", timeout=40)
    assert states["node2"] == "drained|maintenance by admin", states

    # cudadoctor itself failing (not installed, crashed) drains nothing
    cluster.run(["scontrol", "update", "NodeName=node2", "State=RESUME"])
    broken.touch()
    cluster.run(["scontrol", "update", "NodeName=node3", "State=RESUME"])
    cluster.wait_for(lambda s: all(state(s, n) == "idle" for n in ("node1", "node2", "node3")), timeout=20)
    time.sleep(5)  # two intervals: a drain would show by now
    states = cluster.node_states()
    assert all(state(states, n) == "idle" for n in ("node1", "node2", "node3")), states


# --------------------------------------------------------------------------- multi-node NCCL


def test_the_nccl_recipe_runs_across_two_nodes_with_gloo(tmp_path: Path,
                                                         cluster_factory: List[slurm_cluster.Cluster]) -> None:
    """The recipe inside a two-node allocation: one torchrun per node, two ranks each, gloo on the
    CPU (the NCCL path needs GPUs); every rank finds the others and the node pair is measured."""
    pytest.importorskip("torch.distributed")
    cluster = start(tmp_path / "slurm", cluster_factory, nodes=2)
    script = with_settings(recipe("nccl-slurm"), GPUS_PER_NODE="2", PORT=str(slurm_cluster.free_port()),
                           HEAD="127.0.0.1")  # the test's nodes are names without DNS; both are this host
    out = tmp_path / "nccl.json"
    script = script.rstrip("\n") + f" --timeout 60 -o {shlex.quote(str(out))}\n"
    executable(tmp_path / "nccl.sh", "#!/bin/bash\n" + script)
    proc = cluster.run(["salloc", "--nodes=2", "--ntasks-per-node=1", "bash", str(tmp_path / "nccl.sh")],
                       timeout=240, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("Verdict: passed") == 1, proc.stdout  # rank 0 prints the summary
    doc = json.loads(out.read_text())
    assert (doc["status"], doc["backend"], doc["world_size"]) == ("passed", "gloo", 4)
    assert sorted(n["slurm_node"] for n in doc["nodes"]) == ["node1", "node2"]
    assert all(a["correct"] for a in doc["allreduce"])
    assert len(doc["pairs"]) == 1 and doc["pairs"][0]["intact"]
