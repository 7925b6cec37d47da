"""The multi-node NCCL check: run it under torchrun on every node::

    torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=HEAD:29500 \\
        -m cudadoctor.smoke.nccl

Every rank joins one process group (NCCL on GPUs, gloo on the CPU), checks that all-reduce gives
the exact sum at several sizes, times the all-reduce (nccl-tests' algbw and busbw), and the local
rank 0 of every node exchanges a buffer with every other node in round-robin rounds (pairs of a
round at the same time), so a slow link shows up as a pair below the fleet's median. Each stage
has a deadline; a watchdog (``_nccl_watch``) names the ranks that hang or fail. Rank 0 prints
the summary, or with ``--json`` one JSON document. docs/fleet-nccl.md describes the output.

Nothing heavy is imported until ``main`` runs: ``--help`` works without torch.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import socket
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

from . import _nccl_report as report
from ._nccl_report import RankError, RankInfo
from ._nccl_watch import Channel, Watchdog
from ._protocol import format_error

MiB = 1 << 20
WARMUP = 3
MODULUS = 251  # the pattern repeats every 251 elements: a prime, so no power-of-two stride hides an error


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """The options; argparse exits 2 on a bad one (and 0 after ``--help``)."""
    p = argparse.ArgumentParser(
        prog="python -m cudadoctor.smoke.nccl",
        description="Check all-reduce correctness, all-reduce bandwidth and node-to-node bandwidth across "
                    "every rank of a torchrun job; name the ranks that hang or fail.",
        epilog="Run under torchrun on every node, e.g. torchrun --nnodes=2 --nproc-per-node=8 "
               "--rdzv-backend=c10d --rdzv-endpoint=HEAD:29500 -m cudadoctor.smoke.nccl")
    p.add_argument("--backend", choices=("auto", "nccl", "gloo"), default="auto",
                   help="auto: nccl when torch sees a GPU, else gloo on the CPU (default auto)")
    p.add_argument("--size-mib", type=float, default=None, help="bytes per rank of the largest all-reduce and "
                   "of each node-pair exchange, in MiB (default 256 on GPUs, 4 on the CPU)")
    p.add_argument("--iters", type=int, default=None, help="timed iterations (default 20 on GPUs, 5 on the CPU)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds each stage may take (default 60)")
    p.add_argument("--init-timeout", type=float, default=300.0,
                   help="seconds for every rank to join the process group (default 300: nodes start unevenly)")
    p.add_argument("--outlier-ratio", type=float, default=0.8,
                   help="flag node pairs below this fraction of the median pair bandwidth (default 0.8)")
    p.add_argument("--fail-on", choices=("error", "warning"), default="error",
                   help="warning: slow node pairs also make the exit code 1 (default error)")
    p.add_argument("--json", action="store_true", help="rank 0 prints one JSON document instead of the summary")
    p.add_argument("-o", "--output", metavar="FILE", default=None, help="rank 0 also writes the JSON document here")
    args = p.parse_args(argv)
    for name in ("size_mib", "iters", "timeout", "init_timeout", "outlier_ratio"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            p.error(f"--{name.replace('_', '-')} must be positive, not {value}")
    return args


def _usage(message: str) -> int:
    sys.stderr.write(f"{report.PREFIX}: {message}\n")
    return report.EXIT_USAGE


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the check in this rank; the exit code (docs/fleet-nccl.md)."""
    args = parse_args(argv)
    try:
        import torch
        import torch.distributed as dist
    except ImportError as exc:
        return _usage(f"torch is not installed in {sys.executable} ({exc}); install torch to run this check")
    if not dist.is_available():
        return _usage(f"this torch build ({torch.__version__}) has no torch.distributed")
    missing = [v for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if not os.environ.get(v)]
    if missing:
        return _usage(f"{', '.join(missing)} not set: run it under torchrun, e.g. torchrun --nproc-per-node=2 "
                      "-m cudadoctor.smoke.nccl")
    cuda = bool(torch.cuda.is_available())
    backend = args.backend if args.backend != "auto" else ("nccl" if cuda and dist.is_nccl_available() else "gloo")
    if backend == "nccl" and not (cuda and dist.is_nccl_available()):
        return _usage("--backend nccl needs a GPU and a torch built with NCCL; use --backend gloo on the CPU")
    if backend == "gloo" and not dist.is_gloo_available():
        return _usage(f"this torch build ({torch.__version__}) has no gloo backend")
    out = _claim_stdout()  # libraries' chatter (NCCL_DEBUG) must not mix with rank 0's document
    try:
        return Run(args, torch, dist, backend, out).run()
    except Exception as exc:  # outside a stage: a bug of this check, or a GPU that cannot be used at all
        sys.stderr.write(f"{report.PREFIX}: rank {os.environ.get('RANK')}: internal error: {format_error(exc)}\n")
        return report.EXIT_INTERNAL


def _claim_stdout() -> Any:
    """The real stdout, kept for rank 0's summary; fd 1 then points to stderr."""
    sys.stdout.flush()
    try:
        out = os.fdopen(os.dup(1), "w", encoding="utf-8")
        os.dup2(2, 1)
    except OSError:
        return sys.stdout
    sys.stdout = sys.stderr
    return out


def contribution(torch: Any, elements: int, rank: int, device: Any, dtype: Any) -> Any:
    """What ``rank`` sends: ``(rank + 1) * pattern``; the pattern is ``i mod 251 + 1``."""
    return _pattern(torch, elements, device, dtype) * (rank + 1)


def _pattern(torch: Any, elements: int, device: Any, dtype: Any) -> Any:
    return (torch.arange(elements, device=device, dtype=torch.int64) % MODULUS + 1).to(dtype)


class Run:
    """One rank's run: the stages in the order every rank follows."""

    def __init__(self, args: argparse.Namespace, torch: Any, dist: Any, backend: str, out: Any) -> None:
        self.args, self.torch, self.dist, self.backend, self.out = args, torch, dist, backend, out
        self.rank = int(os.environ["RANK"])
        self.world = int(os.environ["WORLD_SIZE"])
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        if backend == "nccl":
            self.device = torch.device("cuda", self.local_rank % torch.cuda.device_count())
            torch.cuda.set_device(self.device)
        else:
            self.device = torch.device("cpu")
        gpu = backend == "nccl"
        self.nbytes = int((args.size_mib if args.size_mib is not None else (256 if gpu else 4)) * MiB) // 4 * 4
        self.iters = args.iters if args.iters is not None else (20 if gpu else 5)
        self.infos: Dict[int, RankInfo] = {}
        self.results: Dict[str, Any] = {"allreduce": [], "bandwidth": None, "pairs": []}
        self.nodes: List[int] = []
        self.watchdog: Optional[Watchdog] = None

    # ------------------------------------------------------------------ plumbing

    def run(self) -> int:
        try:
            store, rank, world = next(self.dist.rendezvous(
                "env://", timeout=datetime.timedelta(seconds=self.args.init_timeout)))
        except Exception as exc:
            where = f"{os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}"
            sys.stderr.write(f"{report.PREFIX}: rank {self.rank} could not join the rendezvous store at {where}: "
                             f"{type(exc).__name__}: {exc}\n")
            return report.EXIT_FAILED
        self.store = store
        channel = Channel(self.dist.PrefixStore("cudadoctor/nccl", store), rank, world)
        channel.set(f"id/{rank}", self._identity().to_json())
        self.channel = channel
        self.watchdog = Watchdog(channel, self.local_rank, self._abort_document)
        self.watchdog.start()
        self._stage("init", self.args.init_timeout, self._init)
        self._stage("identity", self.args.timeout, self._gather_identities)
        self._stage("allreduce", self.args.timeout, check_allreduce, self)
        self._stage("bandwidth", self.args.timeout, measure_bandwidth, self)
        for number, pairs in enumerate(report.tournament(len(self.nodes)), start=1):
            self._stage(f"pairs-{number}", self.args.timeout, measure_pairs, self, number, pairs)
        code = self._stage("report", self.args.timeout, self._report)
        self.watchdog.close()
        self.dist.destroy_process_group()
        return int(code)

    def _stage(self, name: str, timeout: float, fn: Any, *args: Any) -> Any:
        """Run one stage under the watchdog; a raise stops the whole run (never returns)."""
        assert self.watchdog is not None
        self.watchdog.enter(name, timeout)
        try:
            value = fn(*args)
        except Exception as exc:
            # A collective's or the store's error says something about the fleet (exit 1);
            # anything else is a bug in this check (exit 3).
            code = report.EXIT_FAILED if isinstance(exc, (RuntimeError, OSError)) else report.EXIT_INTERNAL
            self.watchdog.fail(format_error(exc), code)
        self.watchdog.leave()
        return value

    def step(self, what: str, number: Optional[int] = None) -> None:
        if self.watchdog is not None:
            self.watchdog.step(what, number)

    def sync(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def _identity(self) -> RankInfo:
        name = uuid = bus = None
        gpu: Optional[int] = None
        if self.device.type == "cuda":
            gpu = int(self.device.index)
            props = self.torch.cuda.get_device_properties(self.device)
            name = str(props.name)
            uuid = str(getattr(props, "uuid", "")) or None
            if hasattr(props, "pci_bus_id"):
                bus = (f"{int(getattr(props, 'pci_domain_id', 0)):08X}:{int(props.pci_bus_id):02X}:"
                       f"{int(getattr(props, 'pci_device_id', 0)):02X}.0")
        return RankInfo(rank=self.rank, local_rank=self.local_rank, node=int(os.environ.get("GROUP_RANK", "-1")),
                        hostname=socket.gethostname(), slurm_node=os.environ.get("SLURMD_NODENAME"),
                        backend=self.backend, gpu=gpu, gpu_name=name, gpu_uuid=uuid, pci_bus_id=bus, pid=os.getpid())

    def _init(self) -> None:
        import inspect

        kwargs: Dict[str, Any] = {}
        if self.device.type == "cuda" and "device_id" in inspect.signature(self.dist.init_process_group).parameters:
            kwargs["device_id"] = self.device  # NCCL connects now, inside this stage's deadline
        # The library's own timeout is a backstop: well after the watchdog's, so the watchdog
        # (which can name the late ranks) speaks first.
        backstop = datetime.timedelta(seconds=2 * max(self.args.timeout, self.args.init_timeout) + 30)
        self.dist.init_process_group(self.backend, store=self.dist.PrefixStore("cudadoctor/pg", self.store),
                                     rank=self.rank, world_size=self.world, timeout=backstop, **kwargs)

    def _gather_identities(self) -> None:
        infos = {r: RankInfo.from_json(v) for r, v in self.channel.wait_all("id", range(self.world)).items()}
        if any(i.node < 0 for i in infos.values()):  # not torchrun: number the nodes by hostname
            hosts = sorted({i.hostname for i in infos.values()})
            infos = {r: dataclasses.replace(i, node=hosts.index(i.hostname)) for r, i in infos.items()}
        self.infos = infos
        self.nodes = sorted({i.node for i in infos.values()})
        self.leaders = {n: min(r for r, i in infos.items() if i.node == n) for n in self.nodes}
        self.my_node = infos[self.rank].node

    def _report(self) -> int:
        self.channel.set(f"result/{self.rank}", json.dumps(self.results))
        if self.rank != 0:
            code = int(self.channel.wait_all("verdict", [0])[0])
        else:
            got = {r: json.loads(v) for r, v in self.channel.wait_all("result", range(self.world)).items()}
            doc = self._document(got, [])
            code = report.exit_code(doc["status"], self.args.fail_on == "warning")
            self._write(doc)
            self.channel.set("verdict/0", str(code))
        self.channel.store.add("finished", 1)
        if self.rank == 0:  # rank 0 may host the store (a launcher without an agent store): stay a bit
            end = time.monotonic() + 10
            while int(self.channel.store.add("finished", 0)) < self.world and time.monotonic() < end:
                time.sleep(0.1)
        return code

    def _document(self, got: Dict[int, Dict[str, Any]], errors: List[RankError],
                  note: Optional[str] = None) -> Dict[str, Any]:
        pairs = report.merge_pairs(got, self.infos)
        if note is None and len(self.nodes) < 2:
            note = "not measured: needs at least 2 nodes (this job has 1)"
        return report.document(
            backend=self.backend, world=self.world, torch_version=str(self.torch.__version__),
            infos=list(self.infos.values()), allreduce=report.merge_allreduce(got, self.world),
            bandwidth=report.merge_bandwidth(got, self.world), pairs=pairs, pairs_note=note,
            ratio=self.args.outlier_ratio, errors=errors)

    def _abort_document(self, errors: List[RankError], infos: Dict[int, RankInfo]) -> None:
        """Rank 0's document of a run that did not finish (called by the watchdog)."""
        if not (self.args.json or self.args.output):
            return
        self.infos = self.infos or infos
        self._write(self._document({}, errors, note="not measured: the run stopped before"), summary=False)

    def _write(self, doc: Dict[str, Any], summary: bool = True) -> None:
        text = json.dumps(doc, indent=2, sort_keys=False) + "\n"
        if self.args.output:
            with open(self.args.output, "w", encoding="utf-8") as f:
                f.write(text)
        if self.args.json:
            self.out.write(text)
        elif summary:
            self.out.write(report.render_text(doc))
        self.out.flush()



# --------------------------------------------------------------------------- the stages


def _exact_dtype(torch: Any, total: int) -> Any:
    """A dtype in which every sum of the check is exact: float32 (the usual training dtype)
    while 251 * n(n+1)/2 < 2**24, then int32, then int64."""
    biggest = MODULUS * total
    return torch.float32 if biggest < 2 ** 24 else torch.int32 if biggest < 2 ** 31 else torch.int64


def check_allreduce(run: Run) -> None:
    """All-reduce (sum) at several sizes, one of them odd, each rank sending its own multiple of
    the pattern; every rank compares the result with the exact sum and notes the first wrong
    element (rank 0 merges the notes into the document)."""
    torch, dist = run.torch, run.dist
    total = run.world * (run.world + 1) // 2
    dtype = _exact_dtype(torch, total)
    full = max(1, run.nbytes // 4)
    for n in sorted({1, min(1021, full), min(262147, full), full}):
        run.step(f"all_reduce of {n} elements")
        x = contribution(torch, n, run.rank, run.device, dtype)
        dist.all_reduce(x)
        pattern = _pattern(torch, n, run.device, dtype)
        wrong = x != pattern * total
        count = int(wrong.sum().item())
        first = None
        if count:
            i = int(wrong.nonzero()[0][0].item())
            first = {"index": i, "got": x[i].item(), "expected": (pattern[i] * total).item(),
                     "pattern": pattern[i].item()}
        run.results["allreduce"].append({"elements": n, "bytes": n * x.element_size(),
                                         "dtype": str(dtype).replace("torch.", ""), "wrong": count, "first": first})


def measure_bandwidth(run: Run) -> None:
    """Mean time of ``--iters`` all-reduces of ``--size-mib`` after WARMUP, between barriers."""
    torch, dist = run.torch, run.dist
    n = max(1, run.nbytes // 4)
    buf = torch.zeros(n, device=run.device, dtype=torch.float32)  # zeros: the sums stay finite
    run.step(f"{WARMUP} warm-up all_reduce of {n * 4} bytes")
    for _ in range(WARMUP):
        dist.all_reduce(buf)
    run.sync()
    run.step("barrier before the timed loop")
    dist.barrier()
    run.step(f"{run.iters} timed all_reduce of {n * 4} bytes")
    start = time.perf_counter()
    for _ in range(run.iters):
        dist.all_reduce(buf)
    run.sync()
    run.results["bandwidth"] = {"bytes": n * 4, "iterations": run.iters, "warmup": WARMUP,
                                "time_s": (time.perf_counter() - start) / run.iters}


def measure_pairs(run: Run, number: int, pairs: Sequence[Any]) -> None:
    """Round ``number`` of the node tournament: the local rank 0 of each paired node sends and
    receives ``--size-mib`` to and from the other's at once, checks the bytes and times
    ``--iters`` exchanges; then every rank meets at a barrier, so rounds never overlap."""
    torch, dist = run.torch, run.dist
    mine = next((p for p in pairs if run.my_node in p), None)
    if mine is not None and run.rank == run.leaders[run.my_node]:
        other = mine[1] if mine[0] == run.my_node else mine[0]
        peer = run.leaders[other]
        run.step(f"exchange with {report.node_label(run.infos[peer])} (rank {peer})", 1)
        n = max(1, run.nbytes // 4)
        send = torch.full((n,), float(run.rank + 1), device=run.device, dtype=torch.float32)
        recv = torch.zeros(n, device=run.device, dtype=torch.float32)

        def exchange() -> None:
            ops = [dist.P2POp(dist.isend, send, peer), dist.P2POp(dist.irecv, recv, peer)]
            for request in dist.batch_isend_irecv(ops):
                request.wait()

        exchange()
        run.sync()
        intact = bool((recv == float(peer + 1)).all().item())
        recv.zero_()
        for _ in range(WARMUP - 1):
            exchange()
        run.sync()
        start = time.perf_counter()
        for _ in range(run.iters):
            exchange()
        run.sync()
        elapsed = (time.perf_counter() - start) / run.iters
        intact = intact and bool((recv == float(peer + 1)).all().item())
        a, b = sorted((run.my_node, other))
        run.results["pairs"].append({"round": number, "nodes": [a, b], "ranks": [run.leaders[a], run.leaders[b]],
                                     "bytes": n * 4, "time_s": elapsed, "intact": intact})
    run.step(f"barrier after round {number}", 2)
    dist.barrier()


if __name__ == "__main__":
    sys.exit(main())
