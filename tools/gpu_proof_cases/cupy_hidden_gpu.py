"""Provoke CuPy's "no CUDA-capable device": an array while CUDA_VISIBLE_DEVICES hides every GPU."""

from __future__ import annotations

import os

import _case


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) != "":
        _case.skip("CUDA_VISIBLE_DEVICES must be empty")
    cupy = _case.cuda_cupy()
    x = cupy.zeros(1)
    _case.no_failure(f"CuPy made {x} with CUDA_VISIBLE_DEVICES empty")


if __name__ == "__main__":
    main()
