"""A program error: ``.numpy()`` of a CUDA tensor."""

from __future__ import annotations

import _case


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    torch = _case.cuda_torch()
    values = torch.arange(4, device="cuda:0").numpy()
    _case.no_failure(f"numpy() of a CUDA tensor gave {values}")


if __name__ == "__main__":
    main()
