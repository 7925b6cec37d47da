"""Provoke CuPy's out-of-memory error: one allocation of twice the GPU's memory from its pool."""

from __future__ import annotations

import _case


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    cupy = _case.cuda_cupy()
    free, total = cupy.cuda.runtime.memGetInfo()
    block = cupy.empty(2 * total, dtype=cupy.uint8)
    _case.no_failure(f"CuPy allocated {block.size} bytes on a GPU of {total} ({free} free)")


if __name__ == "__main__":
    main()
