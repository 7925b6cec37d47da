"""The torch suite's multi-GPU tests: the peer-access (P2P) matrix with a checked copy between
every pair, and an all-reduce across all GPUs through torch.distributed in spawned processes
(NCCL on GPUs; gloo on the CPU device in CI), checked for correctness, with nccl-tests' algbw and
busbw. Each worker process is bounded by a deadline: the parent terminates what is left of it.
"""

from __future__ import annotations

import os
import queue as queues
import socket
import time
from typing import Any, Dict, List, Optional, Sequence

try:
    from . import _compare, _protocol
except ImportError:  # run by path
    import _compare  # type: ignore[no-redef,import-not-found]
    import _protocol  # type: ignore[no-redef,import-not-found]

MiB = 1 << 20
WARMUP = 3


# --------------------------------------------------------------------------- P2P


def p2p(t: _protocol.TestCase, gpus: Sequence[int], nbytes: int = 16 * MiB) -> None:
    """``torch.cuda.can_device_access_peer`` for every ordered pair, and a copy of ``nbytes``
    between every pair whose bytes must arrive intact (through P2P or staged via the host)."""
    import torch

    matrix: List[List[Optional[bool]]] = [[None] * len(gpus) for _ in gpus]
    broken: List[str] = []
    for i, src in enumerate(gpus):
        x = torch.randint(0, 2**31 - 1, (nbytes // 4,), dtype=torch.int32, device=f"cuda:{src}")
        want = int(x.sum(dtype=torch.int64).item())
        for j, dst in enumerate(gpus):
            if i == j:
                continue
            access = bool(torch.cuda.can_device_access_peer(src, dst))
            matrix[i][j] = access
            t.metrics[f"p2p_{src}_{dst}"] = access
            torch.cuda.synchronize(src)
            start = time.perf_counter()
            y = x.to(f"cuda:{dst}")
            torch.cuda.synchronize(dst)
            t.metrics[f"copy_gbs_{src}_{dst}"] = _compare.gbs(nbytes, time.perf_counter() - start)
            if int(y.sum(dtype=torch.int64).item()) != want:
                broken.append(f"{src}->{dst}")
    pairs = [ok for row in matrix for ok in row if ok is not None]
    t.metrics.update(pairs=len(pairs), pairs_with_p2p=sum(1 for ok in pairs if ok))
    said = f"peer access {_compare.p2p_message([[m for m in row] for row in matrix])}; {nbytes // MiB} MiB copies"
    if broken:
        raise _protocol.Fail(f"{said}: bytes changed on {', '.join(broken)}")
    t.message = f"{said} arrived intact between every pair (copy_gbs_* timed by perf_counter, one copy)"


# --------------------------------------------------------------------------- all-reduce


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the rendezvous of the workers)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def worker(rank: int, world: int, gpu: Optional[int], port: int, backend: str, nbytes: int, iterations: int,
           timeout: float, results: Any) -> None:
    """One rank: join the group, all-reduce a known pattern, check it, time ``iterations``
    all-reduces of ``nbytes``; put a dict on ``results`` (``error`` when something raised)."""
    try:
        os.dup2(2, 1)  # this process's chatter (NCCL_DEBUG...) must not reach the suite's stdout
    except OSError:
        pass
    out: Dict[str, Any] = {"rank": rank, "gpu": gpu}
    try:
        import datetime
        import inspect

        import torch
        import torch.distributed as dist

        device = torch.device("cuda", gpu) if gpu is not None else torch.device("cpu")
        kwargs: Dict[str, Any] = {}
        if gpu is not None:
            torch.cuda.set_device(device)
            if "device_id" in inspect.signature(dist.init_process_group).parameters:
                kwargs["device_id"] = device
        dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=timeout), **kwargs)
        try:
            out.update(_measure(torch, dist, device, rank, world, nbytes, iterations))
        finally:
            dist.destroy_process_group()
    except BaseException as exc:  # reported, never raised: the parent is waiting for this dict
        out["error"] = _protocol.format_error(exc)
    results.put(out)


def _measure(torch: Any, dist: Any, device: Any, rank: int, world: int, nbytes: int, iterations: int) -> Dict[str, Any]:
    n = max(1, nbytes // 4)
    pattern = (torch.arange(n, device=device, dtype=torch.int32) % 1000).float()
    x = pattern * float(rank + 1)
    dist.all_reduce(x)  # sum over ranks of pattern * (r + 1): exact in fp32 below 180 ranks
    wrong = int((x != pattern * float(world * (world + 1) // 2)).sum().item())
    buf = torch.zeros(n, device=device, dtype=torch.float32)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for _ in range(WARMUP):
        dist.all_reduce(buf)
    sync()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iterations):
        dist.all_reduce(buf)
    sync()
    return {"wrong": wrong, "elements": n, "time_s": (time.perf_counter() - start) / iterations}


def allreduce(gpus: Sequence[Optional[int]], nbytes: int, iterations: int, timeout: float,
              backend: str = "nccl") -> Dict[str, Any]:
    """All-reduce (sum) of ``nbytes`` of fp32 per rank across one spawned process per entry of
    ``gpus`` (None: the CPU), within ``timeout`` seconds. A dict: status, message, metrics,
    error."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    results: Any = ctx.Queue()
    world, port = len(gpus), free_port()
    procs = [ctx.Process(target=worker, name=f"cudadoctor-allreduce-{rank}", daemon=True,
                         args=(rank, world, gpu, port, backend, nbytes, iterations, timeout, results))
             for rank, gpu in enumerate(gpus)]
    deadline = time.monotonic() + timeout
    for p in procs:
        p.start()
    got: Dict[int, Dict[str, Any]] = {}
    try:
        while len(got) < world and time.monotonic() < deadline:
            try:
                item = results.get(timeout=max(0.05, min(0.5, deadline - time.monotonic())))
                got[int(item["rank"])] = item
            except queues.Empty:
                if all(p.exitcode is not None for p in procs) and results.empty():
                    break
    finally:
        exits = _reap(procs, deadline)
    return _summarize(gpus, backend, nbytes, iterations, timeout, got, exits, time.monotonic() >= deadline)


def _reap(procs: Sequence[Any], deadline: float) -> List[Optional[int]]:
    """Join the workers (until the deadline, at most 5 s), terminate and kill what is left;
    their exit codes (negative: the signal)."""
    for p in procs:
        p.join(timeout=max(0.0, min(5.0, deadline - time.monotonic())))
    for p in procs:
        if p.is_alive():
            p.terminate()
            p.join(timeout=2.0)
        if p.is_alive():
            p.kill()
            p.join(timeout=2.0)
    return [p.exitcode for p in procs]


def _summarize(gpus: Sequence[Optional[int]], backend: str, nbytes: int, iterations: int, timeout: float,
               got: Dict[int, Dict[str, Any]], exits: Sequence[Optional[int]], timed_out: bool) -> Dict[str, Any]:
    world = len(gpus)
    where = "GPUs " + ",".join(str(g) for g in gpus) if all(g is not None for g in gpus) else f"{world} CPU ranks"
    what = f"all-reduce (sum) of {nbytes // MiB} MiB fp32 per rank across {where} via {backend}"
    errors = [f"rank {r}: {got[r]['error']}" for r in sorted(got) if got[r].get("error")]
    missing = [r for r in range(world) if r not in got]
    for r in missing:
        code = exits[r]
        errors.append(f"rank {r}: " + ("no answer within the timeout" if code is None or timed_out and code < 0
                                       else f"exited with code {code} without a result"))
    if errors:
        head = f"{what}: timed out after {timeout:g} s; " if timed_out and missing else f"{what}: "
        return {"status": "failed", "message": head + "; ".join(errors)[:400], "error": errors[0], "metrics": {}}
    slowest = max(float(got[r]["time_s"]) for r in got)
    algbw, busbw = _compare.allreduce_bandwidth(nbytes, slowest, world)
    wrong = sum(int(got[r]["wrong"]) for r in got)
    metrics = {"ranks": world, "bytes": nbytes, "iterations": iterations, "time_s": slowest, "algbw_gbs": algbw,
               "busbw_gbs": busbw, "mismatched_elements": wrong}
    timing = (f"{slowest * 1e3:.3f} ms per call (slowest rank, mean of {iterations} after {WARMUP} warm-up); "
              f"algbw = bytes/time = {algbw:.1f} GB/s, busbw = algbw*2(n-1)/n = {busbw:.1f} GB/s (nccl-tests)")
    if wrong:
        return {"status": "failed", "message": f"{what}: {wrong} wrong elements; {timing}", "error": None,
                "metrics": metrics}
    return {"status": "passed", "message": f"{what}: every rank got the exact sum; {timing}", "error": None,
            "metrics": metrics}
