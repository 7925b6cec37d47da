"""The multi-node NCCL check (``python -m cudadoctor.smoke.nccl``), on the CPU with gloo: real
torchrun launches on 127.0.0.1 (two launches stand for two nodes), and faults injected by
tests/nccl_faulty.py. The pure parts (tournament, outliers, late ranks) are tested directly."""

from __future__ import annotations

import functools
import importlib.util
import itertools
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import pytest

from cudadoctor.smoke.suites import _nccl_report as report
from cudadoctor.smoke.suites._nccl_report import Progress, RankInfo
from cudadoctor.smoke.suites._torch_dist import free_port
from helpers import HERE

FAULTY = str(HERE / "nccl_faulty.py")
HOST = socket.gethostname()
LAUNCH_TIMEOUT = 90  # seconds for one torchrun launch, start-up of a loaded 2-core box included


@functools.lru_cache(maxsize=None)
def _gloo_missing() -> Optional[str]:
    if importlib.util.find_spec("torch") is None:
        return "torch is not installed"
    import torch.distributed as dist

    if not dist.is_available():
        return "this torch has no torch.distributed"
    if not dist.is_gloo_available():
        return "this torch has no gloo backend"
    return None


@pytest.fixture
def gloo() -> None:
    """Skips a test where torch.distributed has no gloo; asked when the test runs, so collecting this
    module (in every xdist worker) does not import torch."""
    missing = _gloo_missing()
    if missing:
        pytest.skip(missing)


needs_gloo = pytest.mark.usefixtures("gloo")


def _torchrun_cmd(port: int, nnodes: int, nproc: int, target: Sequence[str], args: Sequence[str]) -> List[str]:
    return [sys.executable, "-m", "torch.distributed.run", f"--nnodes={nnodes}", f"--nproc-per-node={nproc}",
            "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", *target,
            "--size-mib", "0.25", "--iters", "2", "--timeout", "6", "--init-timeout", "60", *args]


def _env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", **(extra or {}))
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK", "GROUP_RANK"):
        env.pop(name, None)
    return env


def launch(nodes: int, nproc: int, args: Sequence[str], faulty: Optional[Tuple[int, str]] = None
           ) -> List[subprocess.CompletedProcess[str]]:
    """``nodes`` torchrun launches on this host (one per "node") of ``nproc`` ranks each; their
    results once all have ended (each bounded by LAUNCH_TIMEOUT)."""
    port = free_port()
    target = [FAULTY] if faulty else ["-m", "cudadoctor.smoke.nccl"]
    extra = {"NCCL_FAULTY_RANK": str(faulty[0]), "NCCL_FAULTY_MODE": faulty[1]} if faulty else {}
    cmd = _torchrun_cmd(port, nodes, nproc, target, args)
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(extra))
             for _ in range(nodes)]
    results = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=LAUNCH_TIMEOUT)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail(f"torchrun did not end within {LAUNCH_TIMEOUT} s: {cmd}")
        results.append(subprocess.CompletedProcess(cmd, p.returncode, out, err))
    return results


# --------------------------------------------------------------------------- real launches


@needs_gloo
def test_one_node_three_ranks_passes(tmp_path: Path) -> None:
    out = tmp_path / "nccl.json"
    [r] = launch(1, 3, ["-o", str(out)])
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Verdict: passed" in r.stdout
    assert "not measured: needs at least 2 nodes (this job has 1)" in r.stdout
    doc = json.loads(out.read_text())
    assert {"format", "format_version", "status", "backend", "world_size", "nodes", "ranks", "allreduce", "pairs",
            "median_pair_gbs", "outliers", "errors"} <= set(doc)
    assert (doc["format"], doc["format_version"], doc["status"]) == ("cudadoctor.nccl", 1, "passed")
    assert (doc["backend"], doc["world_size"], len(doc["nodes"]), len(doc["ranks"])) == ("gloo", 3, 1, 3)
    assert [a["elements"] for a in doc["allreduce"]] == [1, 1021, 65536]
    assert all(a["correct"] and a["ranks_checked"] == 3 for a in doc["allreduce"])
    assert doc["bandwidth"]["busbw_gbs"] > 0
    assert (doc["pairs"], doc["median_pair_gbs"], doc["errors"]) == ([], None, [])


@needs_gloo
def test_two_nodes_measure_one_pair(tmp_path: Path) -> None:
    out = tmp_path / "nccl.json"
    results = launch(2, 2, ["-o", str(out)])
    assert [r.returncode for r in results] == [0, 0], [r.stderr[-3000:] for r in results]
    summary = "".join(r.stdout for r in results)  # rank 0 is in whichever launch got node 0
    assert f"round 1: node 0 '{HOST}' <-> node 1 '{HOST}'" in summary
    doc = json.loads(out.read_text())
    assert (doc["status"], doc["world_size"], [n["ranks"] for n in doc["nodes"]]) == ("passed", 4, [[0, 1], [2, 3]])
    [pair] = doc["pairs"]
    assert (pair["nodes"], pair["ranks"], pair["intact"]) == ([0, 1], [0, 2], True)
    assert doc["median_pair_gbs"] == pair["gbs"] > 0
    assert doc["outliers"] == []


@needs_gloo
def test_hanging_rank_is_named_and_every_rank_stops(tmp_path: Path) -> None:
    out = tmp_path / "nccl.json"
    [r] = launch(1, 3, ["-o", str(out)], faulty=(2, "hang"))
    assert r.returncode != 0
    assert (f"cudadoctor.smoke.nccl: rank 2 (node 0 '{HOST}', local rank 2, CPU (gloo)) did not finish "
            "'allreduce' within 6 s; it last reported 'allreduce-start'") in r.stderr
    assert "rank 0 (" not in r.stderr and "rank 1 (" not in r.stderr  # they waited; they are not the cause
    assert "exitcode  : 4" in r.stderr  # torchrun's summary shows the check's hang code
    doc = json.loads(out.read_text())
    assert doc["status"] == "failed"
    assert [(e["rank"], e["kind"], e["stage"]) for e in doc["errors"]] == [(2, "late", "allreduce")]


@needs_gloo
def test_raising_rank_is_named_not_its_peers() -> None:
    [r] = launch(1, 3, ["--json"], faulty=(1, "raise"))
    assert r.returncode != 0
    assert (f"rank 1 (node 0 '{HOST}', local rank 1, CPU (gloo)) failed in 'allreduce': "
            "RuntimeError: injected") in r.stderr
    assert "rank 0 (" not in r.stderr and "rank 2 (" not in r.stderr
    doc = json.loads(r.stdout)
    assert (doc["status"], [e["message"] for e in doc["errors"]]) == (
        "failed", [f"rank 1 (node 0 '{HOST}', local rank 1, CPU (gloo)) failed in 'allreduce': RuntimeError: injected"])


@needs_gloo
def test_wrong_contribution_fails_and_names_the_rank() -> None:
    [r] = launch(1, 3, [], faulty=(2, "wrong"))
    assert r.returncode != 0
    assert ("1021 elements float32 (4084 B): all-reduce result wrong on ranks 0,1,2: 1021 wrong elements, first at "
            "index 0: got 3.0, expected 6.0 (consistent with rank 2's contribution missing)") in r.stdout
    assert "Verdict: failed" in r.stdout


# --------------------------------------------------------------------------- without torchrun


def test_help_needs_no_torch() -> None:
    code = ("import sys; sys.modules['torch'] = None; from cudadoctor.smoke.suites import nccl; "
            "sys.exit(nccl.main(['--timeout', '5']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=_env())
    assert r.returncode == 2
    assert r.stderr.startswith("cudadoctor.smoke.nccl: torch is not installed in ")
    assert len(r.stderr.strip().splitlines()) == 1
    h = subprocess.run([sys.executable, "-c", "import sys; sys.modules['torch'] = None; import runpy; "
                        "runpy.run_module('cudadoctor.smoke.nccl', run_name='__main__')", "--help"],
                       capture_output=True, text=True, timeout=60, env=_env())
    assert h.returncode == 0 and "--outlier-ratio" in h.stdout


@needs_gloo
def test_outside_torchrun_is_a_usage_error(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from cudadoctor.smoke.suites import nccl

    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    assert nccl.main([]) == 2
    assert "RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT not set: run it under torchrun" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--timeout", "0"], ["--backend", "mpi"], ["--iters", "x"]])
def test_bad_options_exit_2(argv: List[str]) -> None:
    from cudadoctor.smoke.suites import nccl

    with pytest.raises(SystemExit) as exc:
        nccl.parse_args(argv)
    assert exc.value.code == 2


# --------------------------------------------------------------------------- pure parts


@pytest.mark.parametrize("nodes", [2, 3, 4, 7, 8])
def test_tournament_meets_every_pair_once_in_disjoint_rounds(nodes: int) -> None:
    rounds = report.tournament(nodes)
    assert len(rounds) == (nodes - 1 if nodes % 2 == 0 else nodes)
    met = [pair for r in rounds for pair in r]
    assert sorted(met) == list(itertools.combinations(range(nodes), 2))
    for r in rounds:
        busy = [n for pair in r for n in pair]
        assert len(busy) == len(set(busy))  # a node is in at most one pair per round


def test_single_node_has_no_rounds() -> None:
    assert report.tournament(1) == []


def test_outliers_name_the_slow_pairs() -> None:
    pairs = [{"nodes": [a, b], "gbs": g} for (a, b), g in
             {(0, 1): 24.0, (0, 2): 23.5, (1, 2): 24.2, (0, 3): 9.0, (1, 3): 24.1, (2, 3): 23.9}.items()]
    median, slow = report.outliers(pairs, 0.8)
    assert median == pytest.approx(23.95)
    assert [(p["nodes"], p["ratio"]) for p in slow] == [([0, 3], 0.376)]


@pytest.mark.parametrize("got, said", [(6.0, "consistent with rank 3's contribution missing"),
                                       (13.0, "consistent with rank 2's contribution counted twice"),
                                       (15.5, "off by 5.5 x the pattern value (not one rank's contribution missing)")])
def test_wrong_sum_diagnosis(got: float, said: str) -> None:
    assert report.diagnose_wrong(got, 1.0, 4) == said  # 4 ranks: the sum is 10 x the pattern


def _info(rank: int) -> RankInfo:
    return RankInfo(rank=rank, local_rank=rank % 2, node=rank // 2, hostname=f"gpu-node-{rank // 2}",
                    slurm_node=None, backend="nccl", gpu=rank % 2, gpu_name="NVIDIA H200",
                    gpu_uuid=None, pci_bus_id=f"00000000:{0x19 + rank % 2:02X}:00.0", pid=100 + rank)


def test_late_rank_is_the_one_behind() -> None:
    progress = {0: Progress(2, "allreduce", 1, "all_reduce of 1 elements", "running"),
                1: Progress(2, "allreduce", 1, "all_reduce of 1 elements", "running"),
                2: Progress(2, "allreduce", 1, "all_reduce of 1 elements", "running"),
                3: Progress(2, "allreduce")}
    errors = report.late_errors(4, progress, {r: _info(r) for r in range(4)}, {"allreduce": 60})
    assert [e.message for e in errors] == [
        "rank 3 (node 1 'gpu-node-1', local rank 1, GPU 1 NVIDIA H200 00000000:1A:00.0) did not finish "
        "'allreduce' within 60 s; it last reported 'allreduce-start'"]


def test_every_rank_stuck_in_the_same_call_says_so() -> None:
    same = Progress(3, "bandwidth", 2, "barrier before the timed loop", "running")
    errors = report.late_errors(2, {0: same, 1: same}, {}, {"bandwidth": 60})
    assert [e.rank for e in errors] == [0, 1]
    assert errors[0].message == (
        "rank 0 (it never published who it is) did not finish 'bandwidth' within 60 s; it last reported "
        "'bandwidth: barrier before the timed loop' like every other rank (the call itself hung: suspect the "
        "network or the collective library)")


def test_rank_that_never_reported() -> None:
    errors = report.late_errors(2, {0: Progress(1, "identity", state="done")}, {0: _info(0)}, {})
    assert [e.message for e in errors] == ["rank 1 (it never published who it is) never reported any progress"]
