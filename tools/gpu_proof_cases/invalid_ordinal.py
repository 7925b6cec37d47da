"""Provoke "invalid device ordinal": a tensor on a GPU index past the GPUs this process sees."""

from __future__ import annotations

import _case


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    torch = _case.cuda_torch()
    index = torch.cuda.device_count() + 3
    t = torch.zeros(1, device=f"cuda:{index}")
    _case.no_failure(f"a tensor landed on cuda:{index}: {t}")


if __name__ == "__main__":
    main()
