"""Provoke an out-of-memory error: ask torch for twice the GPU's memory in one allocation.

A plain device allocation (``torch.empty`` on ``cuda:0``), never managed memory, which could
oversubscribe and succeed. torch raises ``torch.OutOfMemoryError: CUDA out of memory. Tried to
allocate ...``.
"""

from __future__ import annotations

import _case


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    torch = _case.cuda_torch()
    total = torch.cuda.get_device_properties(0).total_memory
    block = torch.empty(2 * total, dtype=torch.uint8, device="cuda:0")
    _case.no_failure(f"torch allocated {block.numel()} bytes on a GPU of {total} bytes")


if __name__ == "__main__":
    main()
