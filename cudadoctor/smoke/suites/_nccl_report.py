"""Pure parts of the multi-node NCCL check (``python -m cudadoctor.smoke.nccl``): who a rank is,
which ranks are late, the node-pair tournament, outliers, the diagnosis of a wrong all-reduce,
the JSON document and its text rendering. Standard library only, so all of it is tested without
torch and without a second machine.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from . import _compare

PREFIX = "cudadoctor.smoke.nccl"
FORMAT = "cudadoctor.nccl"
FORMAT_VERSION = 1
MAX_LINES = 20  # late or failed ranks named one per line; the rest are counted

# Exit codes (docs/fleet-nccl.md). A hang gets its own code so a scheduler's log tells it apart
# from a wrong result at a glance.
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_HANG = 4

STATES = ("start", "running", "done", "failed")


@dataclasses.dataclass(frozen=True)
class RankInfo:
    """Who one rank is: published to the store right after the rendezvous."""

    rank: int
    local_rank: int
    node: int  # torchrun's GROUP_RANK (the agent's node rank); -1 when the launcher set none
    hostname: str
    slurm_node: Optional[str]
    backend: str
    gpu: Optional[int]  # torch's CUDA index (after CUDA_VISIBLE_DEVICES); None on the CPU
    gpu_name: Optional[str]
    gpu_uuid: Optional[str]
    pci_bus_id: Optional[str]
    pid: int

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> "RankInfo":
        data = json.loads(text)
        fields = {f.name for f in dataclasses.fields(RankInfo)}
        return RankInfo(**{k: v for k, v in data.items() if k in fields})


@dataclasses.dataclass(frozen=True)
class Progress:
    """Where one rank is: the stage (its index ``seq`` in the order every rank follows), the
    step inside it, and the state; ``error`` when it failed."""

    seq: int
    stage: str
    step: int = 0
    what: str = ""
    state: str = "start"
    error: Optional[str] = None

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> "Progress":
        data = json.loads(text)
        fields = {f.name for f in dataclasses.fields(Progress)}
        return Progress(**{k: v for k, v in data.items() if k in fields})

    def position(self) -> Tuple[int, int, int]:
        """How far the rank got, comparable between ranks (a failed rank counts as stopped)."""
        order = {"start": 0, "running": 1, "failed": 1, "done": 2}
        return (self.seq, self.step, order.get(self.state, 0))

    def label(self) -> str:
        """``allreduce-start``, ``allreduce: all_reduce of 1021 elements``, ``allreduce-done``."""
        if self.state == "running" and self.what:
            return f"{self.stage}: {self.what}"
        return f"{self.stage}-{self.state}"


def node_label(info: RankInfo) -> str:
    """``node 1 'gpu-node-b'`` (plus Slurm's node name when it differs from the hostname)."""
    slurm = f" (slurm '{info.slurm_node}')" if info.slurm_node and info.slurm_node != info.hostname else ""
    number = f"node {info.node} " if info.node >= 0 else "node "
    return f"{number}'{info.hostname}'{slurm}"


def device_label(info: RankInfo) -> str:
    """``GPU 1 NVIDIA H200 00000000:19:00.0`` or ``CPU (gloo)``."""
    if info.gpu is None:
        return f"CPU ({info.backend})"
    parts = [f"GPU {info.gpu}", info.gpu_name or "", info.pci_bus_id or ""]
    return " ".join(p for p in parts if p)


def describe(rank: int, info: Optional[RankInfo]) -> str:
    """``rank 3 (node 1 'gpu-node-b', local rank 1, GPU 1 NVIDIA H200 00000000:19:00.0)``."""
    if info is None:
        return f"rank {rank} (it never published who it is)"
    return f"rank {rank} ({node_label(info)}, local rank {info.local_rank}, {device_label(info)})"


# --------------------------------------------------------------------------- hangs and failures


@dataclasses.dataclass(frozen=True)
class RankError:
    """One line of the error list: a rank that failed or did not finish its stage in time."""

    rank: int
    kind: str  # "failed" | "late"
    stage: Optional[str]
    last_reported: Optional[str]
    error: Optional[str]
    message: str


def late_errors(world: int, progress: Mapping[int, Progress], infos: Mapping[int, RankInfo],
                timeout_of: Mapping[str, float]) -> List[RankError]:
    """The ranks behind the others: every rank whose position is below the furthest one (they
    hold the others up). When every rank is at the same place, all of them are stuck in the same
    call: one entry per rank, each saying so. ``timeout_of`` gives each stage's deadline."""
    known = [p.position() for p in progress.values()]
    front = max(known) if known else (0, 0, 0)
    together = len(known) == world and all(pos == front for pos in known)
    out: List[RankError] = []
    for rank in range(world):
        p = progress.get(rank)
        if p is not None and p.state == "failed":
            continue  # reported by failed_errors
        if p is None:
            out.append(RankError(rank, "late", None, None, None,
                                 f"{describe(rank, infos.get(rank))} never reported any progress"))
            continue
        if p.position() >= front and not together:
            continue
        stage = p.stage
        within = f" within {timeout_of.get(stage, 0):g} s" if stage in timeout_of else ""
        said = f"; it last reported '{p.label()}'"
        if together:
            said += " like every other rank (the call itself hung: suspect the network or the collective library)"
        out.append(RankError(rank, "late", stage, p.label(), None,
                             f"{describe(rank, infos.get(rank))} did not finish '{stage}'{within}{said}"))
    return out


def failed_errors(order: Sequence[int], progress: Mapping[int, Progress],
                  infos: Mapping[int, RankInfo]) -> List[RankError]:
    """The ranks that raised, in the order they reported it (the first is usually the cause:
    the others often fail because it went away)."""
    out: List[RankError] = []
    for i, rank in enumerate(order):
        p = progress.get(rank)
        stage = p.stage if p else "?"
        error = (p.error if p else None) or "an error it could not publish"
        after = f" (after rank {order[0]} failed)" if i > 0 and order[0] != rank else ""
        out.append(RankError(rank, "failed", stage, p.label() if p else None, error,
                             f"{describe(rank, infos.get(rank))} failed in '{stage}': {error}{after}"))
    return out


def error_lines(errors: Sequence[RankError]) -> List[str]:
    """One stderr line per error, at most MAX_LINES, then a count of the rest."""
    lines = [f"{PREFIX}: {e.message}" for e in errors[:MAX_LINES]]
    if len(errors) > MAX_LINES:
        lines.append(f"{PREFIX}: ... and {len(errors) - MAX_LINES} more ranks (the JSON document lists them all)")
    return lines


# --------------------------------------------------------------------------- node pairs


def tournament(nodes: int) -> List[List[Tuple[int, int]]]:
    """Round-robin rounds (the circle method): every pair of ``nodes`` meets exactly once, the
    pairs of a round are disjoint so they run at the same time; n-1 rounds (n when n is odd)."""
    if nodes < 2:
        return []
    seats: List[Optional[int]] = list(range(nodes)) + ([None] if nodes % 2 else [])
    m = len(seats)
    rounds: List[List[Tuple[int, int]]] = []
    for _ in range(m - 1):
        pairs = []
        for i in range(m // 2):
            a, b = seats[i], seats[m - 1 - i]
            if a is not None and b is not None:
                pairs.append((min(a, b), max(a, b)))
        rounds.append(sorted(pairs))
        seats = [seats[0], seats[-1]] + seats[1:-1]  # seat 0 stays, the others turn by one
    return rounds


def outliers(pairs: Sequence[Mapping[str, Any]], ratio: float) -> Tuple[Optional[float], List[Dict[str, Any]]]:
    """(median GB/s of the pairs, the pairs below ``ratio`` x median, slowest first)."""
    figures = [float(p["gbs"]) for p in pairs if p.get("gbs") is not None]
    if not figures:
        return None, []
    median = statistics.median(figures)
    slow = [dict(p, ratio=round(float(p["gbs"]) / median, 3) if median > 0 else 0.0)
            for p in pairs if p.get("gbs") is not None and float(p["gbs"]) < ratio * median]
    return median, sorted(slow, key=lambda p: float(p["gbs"]))


# --------------------------------------------------------------------------- wrong results


def diagnose_wrong(got: float, pattern: float, world: int) -> str:
    """What a wrong element says: each rank r contributed ``(r + 1) * pattern``, so the sum is
    ``S * pattern`` with S = n(n+1)/2; a shortfall of exactly ``(r + 1) * pattern`` is rank r's
    contribution missing, an excess of it is rank r counted twice."""
    if pattern == 0:
        return "the element should be 0"
    total = world * (world + 1) // 2
    off = (got - total * pattern) / pattern
    if off == int(off) and 1 <= -off <= world:
        return f"consistent with rank {int(-off) - 1}'s contribution missing"
    if off == int(off) and 1 <= off <= world:
        return f"consistent with rank {int(off) - 1}'s contribution counted twice"
    return f"off by {off:g} x the pattern value (not one rank's contribution missing)"


# --------------------------------------------------------------------------- merging the ranks' notes


def merge_allreduce(got: Mapping[int, Mapping[str, Any]], world: int) -> List[Dict[str, Any]]:
    """One entry per size from every rank's notes: correct only when every rank saw the exact
    sum; the first wrong element of the lowest rank that saw one, and what it suggests."""
    sizes: Dict[int, Dict[str, Any]] = {}
    for rank in sorted(got):
        for note in got[rank].get("allreduce", []):
            entry = sizes.setdefault(int(note["elements"]), {
                "elements": int(note["elements"]), "bytes": int(note["bytes"]), "dtype": note["dtype"],
                "correct": True, "wrong_elements": 0, "ranks_checked": 0, "ranks_wrong": [], "first_wrong": None,
                "diagnosis": None})
            entry["ranks_checked"] += 1
            if note.get("wrong"):
                entry["correct"] = False
                entry["ranks_wrong"].append(rank)
                entry["wrong_elements"] = max(entry["wrong_elements"], int(note["wrong"]))
                if entry["first_wrong"] is None and note.get("first"):
                    first = note["first"]
                    entry["first_wrong"] = {"rank": rank, "index": first["index"], "got": first["got"],
                                            "expected": first["expected"]}
                    entry["diagnosis"] = diagnose_wrong(float(first["got"]), float(first["pattern"]), world)
    for entry in sizes.values():
        if entry["ranks_checked"] < world:  # a rank's notes are missing: not proven correct
            entry["correct"] = False
    return [sizes[n] for n in sorted(sizes)]


def merge_bandwidth(got: Mapping[int, Mapping[str, Any]], world: int) -> Optional[Dict[str, Any]]:
    """The slowest rank's time per all-reduce, with nccl-tests' algbw and busbw."""
    notes = [got[r]["bandwidth"] for r in sorted(got) if got[r].get("bandwidth")]
    if not notes:
        return None
    slowest = max(float(n["time_s"]) for n in notes)
    algbw, busbw = _compare.allreduce_bandwidth(int(notes[0]["bytes"]), slowest, world)
    return {"bytes": int(notes[0]["bytes"]), "iterations": int(notes[0]["iterations"]),
            "warmup": int(notes[0]["warmup"]), "time_s": slowest, "algbw_gbs": algbw, "busbw_gbs": busbw}


def merge_pairs(got: Mapping[int, Mapping[str, Any]], infos: Mapping[int, RankInfo]) -> List[Dict[str, Any]]:
    """One entry per node pair from both leaders' notes: the slower side's time, the bytes
    intact only when both sides received what was sent."""
    merged: Dict[Tuple[int, int, int], Dict[str, Any]] = {}
    for rank in sorted(got):
        for note in got[rank].get("pairs", []):
            key = (int(note["round"]), int(note["nodes"][0]), int(note["nodes"][1]))
            entry = merged.setdefault(key, {
                "round": key[0], "nodes": [key[1], key[2]], "ranks": list(note["ranks"]),
                "names": [node_label(infos[r]) if r in infos else f"node {n}"
                          for r, n in zip(note["ranks"], key[1:])],
                "bytes": int(note["bytes"]), "time_s": 0.0, "intact": True})
            entry["time_s"] = max(entry["time_s"], float(note["time_s"]))
            entry["intact"] = entry["intact"] and bool(note["intact"])
    out = []
    for key in sorted(merged):
        entry = merged[key]
        entry["gbs"] = _compare.gbs(entry["bytes"], entry["time_s"])
        out.append(entry)
    return out


# --------------------------------------------------------------------------- the document


def nodes_of(infos: Sequence[RankInfo]) -> List[Dict[str, Any]]:
    """The nodes, by node number then hostname, each with its ranks and devices."""
    groups: Dict[Tuple[int, str], List[RankInfo]] = {}
    for info in infos:
        groups.setdefault((info.node, info.hostname), []).append(info)
    out = []
    for (node, host), members in sorted(groups.items()):
        members = sorted(members, key=lambda i: i.rank)
        out.append({"node": node, "hostname": host, "slurm_node": members[0].slurm_node,
                    "ranks": [m.rank for m in members], "devices": [device_label(m) for m in members]})
    return out


def status_of(allreduce: Sequence[Mapping[str, Any]], pairs: Sequence[Mapping[str, Any]],
              found_outliers: Sequence[Any], errors: Sequence[RankError]) -> str:
    """failed (an error, a wrong sum, bytes changed between nodes), warning (slow pairs), passed."""
    if errors or any(not a.get("correct") for a in allreduce) or any(not p.get("intact", True) for p in pairs):
        return "failed"
    return "warning" if found_outliers else "passed"


def exit_code(status: str, fail_on_warning: bool) -> int:
    """0 passed (and warning unless --fail-on warning), else 1."""
    if status == "passed" or (status == "warning" and not fail_on_warning):
        return EXIT_OK
    return EXIT_FAILED


def document(*, backend: str, world: int, torch_version: str, infos: Sequence[RankInfo],
             allreduce: Sequence[Mapping[str, Any]], bandwidth: Optional[Mapping[str, Any]],
             pairs: Sequence[Mapping[str, Any]], pairs_note: Optional[str], ratio: float,
             errors: Sequence[RankError]) -> Dict[str, Any]:
    """The JSON document (``format`` cudadoctor.nccl, ``format_version`` 1)."""
    median, slow = outliers(pairs, ratio)
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "status": status_of(allreduce, pairs, slow, errors),
        "backend": backend,
        "torch": torch_version,
        "world_size": world,
        "nodes": nodes_of(infos),
        "ranks": [dataclasses.asdict(i) for i in sorted(infos, key=lambda i: i.rank)],
        "allreduce": [dict(a) for a in allreduce],
        "bandwidth": dict(bandwidth) if bandwidth else None,
        "pairs": [dict(p) for p in pairs],
        "pairs_note": pairs_note,
        "median_pair_gbs": median,
        "outlier_ratio": ratio,
        "outliers": slow,
        "errors": [dataclasses.asdict(e) for e in errors],
    }


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _size(nbytes: int) -> str:
    if nbytes < 1 << 20:
        return f"{nbytes} B"
    return f"{nbytes >> 20} MiB" if nbytes % (1 << 20) == 0 else f"{nbytes / (1 << 20):.2f} MiB"


def render_text(doc: Mapping[str, Any]) -> str:
    """The human summary rank 0 prints: facts, checks, figures, then the verdict."""
    nodes = doc["nodes"]
    lines = [f"{PREFIX} · torch {doc['torch']} · backend {doc['backend']} · "
             f"{doc['world_size']} ranks on {len(nodes)} node{'s' if len(nodes) != 1 else ''}", "", "Nodes"]
    for n in nodes:
        devices = sorted(set(n["devices"]))
        slurm = f" (slurm '{n['slurm_node']}')" if n["slurm_node"] and n["slurm_node"] != n["hostname"] else ""
        lines.append(f"  node {n['node']} '{n['hostname']}'{slurm}: ranks {','.join(map(str, n['ranks']))}; "
                     + "; ".join(devices))
    lines += ["", "All-reduce correctness (sum; rank r sends (r+1) x (i mod 251 + 1); every rank checks the exact sum)"]
    for a in doc["allreduce"]:
        what = f"  {_count(a['elements'], 'element')} {a['dtype']} ({_size(a['bytes'])})"
        if a["correct"]:
            lines.append(f"{what}: ok on every rank")
        else:
            w = a["first_wrong"] or {}
            lines.append(f"{what}: all-reduce result wrong on ranks {','.join(map(str, a['ranks_wrong']))}: "
                         f"{_count(a['wrong_elements'], 'wrong element')}, first at index {w.get('index')}: got "
                         f"{w.get('got')}, expected {w.get('expected')} ({a.get('diagnosis')})")
    bw = doc.get("bandwidth")
    if bw:
        lines += ["", f"All-reduce bandwidth  {_size(bw['bytes'])} per rank: {bw['time_s'] * 1e3:.3f} ms per call "
                      f"(slowest rank, mean of {bw['iterations']} after {bw['warmup']} warm-up); "
                      f"algbw {bw['algbw_gbs']:.2f} GB/s, busbw {bw['busbw_gbs']:.2f} GB/s (nccl-tests convention)"]
    lines += ["", "Node pairs (local rank 0 of each node; GB/s sent each way, both ways at once)"]
    if not doc["pairs"]:
        lines.append(f"  {doc['pairs_note'] or 'not measured'}")
    for p in doc["pairs"]:
        flag = "" if p["intact"] else "  BYTES CHANGED"
        slow = any(o["nodes"] == p["nodes"] for o in doc["outliers"])
        lines.append(f"  round {p['round']}: {p['names'][0]} <-> {p['names'][1]}  {p['gbs']:.2f} GB/s"
                     + ("  SLOW" if slow else "") + flag)
    if doc["median_pair_gbs"] is not None:
        slow_pairs = [f"{o['names'][0]} <-> {o['names'][1]} {o['gbs']:.2f} GB/s ({o['ratio']:.2f} x median)"
                      for o in doc["outliers"]]
        lines.append(f"  median {doc['median_pair_gbs']:.2f} GB/s; below {doc['outlier_ratio']:g} x median: "
                     + ("; ".join(slow_pairs) if slow_pairs else "none"))
    for e in doc["errors"]:
        lines.append(f"error: {e['message']}")
    lines += ["", f"Verdict: {doc['status']}"]
    return "\n".join(lines) + "\n"
