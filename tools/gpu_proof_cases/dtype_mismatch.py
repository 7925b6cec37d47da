"""A program error: a GPU matrix product of float32 and float16 tensors."""

from __future__ import annotations

import _case


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    torch = _case.cuda_torch()
    a = torch.ones(8, 8, device="cuda:0", dtype=torch.float32)
    b = torch.ones(8, 8, device="cuda:0", dtype=torch.float16)
    c = torch.mm(a, b)
    _case.no_failure(f"mm of float32 and float16 gave {c.dtype}")


if __name__ == "__main__":
    main()
