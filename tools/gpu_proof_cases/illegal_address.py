"""A program error: a custom kernel writes through a pointer that is not device memory.

The write faults; the error surfaces at the next synchronisation as cudaErrorIllegalAddress, "an
illegal memory access was encountered".
"""

from __future__ import annotations

import _case

SOURCE = r'''
extern "C" __global__ void scribble(float* out, long long offset) {
    out[offset + threadIdx.x] = 1.0f;
}
'''


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    cupy = _case.cuda_cupy()
    kernel = _case.cupy_kernel(SOURCE, "scribble")
    out = cupy.zeros(32, dtype=cupy.float32)
    kernel((1,), (32,), (out, cupy.int64(1 << 40)))
    cupy.cuda.Device().synchronize()
    _case.no_failure("a write 4 TiB past a buffer did not fault")


if __name__ == "__main__":
    main()
