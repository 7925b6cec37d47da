"""Test-only wrapper run by torchrun instead of ``-m cudadoctor.smoke.nccl``: the rank named by
NCCL_FAULTY_RANK misbehaves as NCCL_FAULTY_MODE says, in the all-reduce correctness stage:

- ``hang``: it sleeps instead of taking part (the others wait in the collective);
- ``raise``: it raises ``RuntimeError("injected")``;
- ``wrong``: it sends zeros instead of its share (the sum comes out short of its contribution).

The product code has no hook for this: the wrapper replaces the module's functions.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from cudadoctor.smoke.suites import nccl

FAULTY = int(os.environ.get("NCCL_FAULTY_RANK", "-1"))
MODE = os.environ.get("NCCL_FAULTY_MODE", "")
RANK = int(os.environ.get("RANK", "-1"))

real_check = nccl.check_allreduce
real_contribution = nccl.contribution


def faulty_check(run: Any) -> None:
    if MODE == "hang":
        time.sleep(3600)
    if MODE == "raise":
        raise RuntimeError("injected")
    real_check(run)


def faulty_contribution(torch: Any, elements: int, rank: int, device: Any, dtype: Any) -> Any:
    return real_contribution(torch, elements, rank, device, dtype) * 0


if RANK == FAULTY:
    if MODE in ("hang", "raise"):
        nccl.check_allreduce = faulty_check
    elif MODE == "wrong":
        nccl.contribution = faulty_contribution
    else:
        sys.exit(f"nccl_faulty: unknown NCCL_FAULTY_MODE {MODE!r}")

if __name__ == "__main__":
    sys.exit(nccl.main())
