"""A program error: two NCCL ranks on one GPU (both call ``torch.cuda.set_device(0)``).

NCCL refuses the communicator with ncclInvalidUsage, "Duplicate GPU detected : rank 1 and rank 0
both on CUDA device ..."; torch.multiprocessing.spawn re-raises a rank's error in the parent.
"""

from __future__ import annotations

import datetime
import socket

import _case


def rank_main(rank: int, world: int, port: int) -> None:
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(0)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=30))
    t = torch.ones(4, device="cuda:0")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    torch = _case.cuda_torch()
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_nccl_available():
        _case.skip(f"torch {torch.__version__} has no NCCL backend")
    import torch.multiprocessing as mp

    mp.spawn(rank_main, args=(2, free_port()), nprocs=2, join=True)
    _case.no_failure("two NCCL ranks shared one GPU without an error")


if __name__ == "__main__":
    main()
