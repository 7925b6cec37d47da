"""A program error: CUDA started in the parent, then used in a forked worker.

torch raises "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing,
you must use the 'spawn' start method" in the worker; the pool re-raises it in the parent.
"""

from __future__ import annotations

import multiprocessing

import _case


def worker(_: int) -> float:
    import torch

    return float(torch.ones(1, device="cuda:0").sum())


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    torch = _case.cuda_torch()
    torch.zeros(1, device="cuda:0")
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got = pool.map(worker, [0])
    _case.no_failure(f"a forked worker used CUDA after the parent did: {got}")


if __name__ == "__main__":
    main()
