"""Provoke a device-side assert: index a CUDA tensor out of range.

torch checks the index inside the kernel (IndexKernel's "index out of bounds" assert); the error
surfaces at the next synchronisation as "CUDA error: device-side assert triggered".
"""

from __future__ import annotations

import _case


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    torch = _case.cuda_torch()
    values = torch.zeros(8, device="cuda:0")
    index = torch.tensor([1 << 20], device="cuda:0")
    picked = values[index]
    torch.cuda.synchronize()
    _case.no_failure(f"indexing 8 elements at {1 << 20} gave {picked.tolist()} without an assert")


if __name__ == "__main__":
    main()
