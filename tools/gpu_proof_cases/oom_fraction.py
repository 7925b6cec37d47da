"""Provoke an out-of-memory error below the GPU's size: torch's per-process memory fraction.

``torch.cuda.set_per_process_memory_fraction(0.01)`` caps the caching allocator at 1 % of the GPU;
an allocation of 5 % then fails with the "... allowed; ..." wording of the limit, although the GPU
has most of its memory free.
"""

from __future__ import annotations

import _case


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    torch = _case.cuda_torch()
    torch.cuda.set_per_process_memory_fraction(0.01, 0)
    total = torch.cuda.get_device_properties(0).total_memory
    block = torch.empty(total // 20, dtype=torch.uint8, device="cuda:0")
    _case.no_failure(f"torch allocated {block.numel()} bytes past a 1 % memory fraction")


if __name__ == "__main__":
    main()
