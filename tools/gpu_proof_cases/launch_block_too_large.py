"""A program error: a kernel launched with 2048 threads per block (the limit is 1024)."""

from __future__ import annotations

import _case

SOURCE = r'''
extern "C" __global__ void fill(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 1.0f;
}
'''


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    cupy = _case.cuda_cupy()
    kernel = _case.cupy_kernel(SOURCE, "fill")
    out = cupy.zeros(4096, dtype=cupy.float32)
    kernel((2,), (2048,), (out, cupy.int32(out.size)))
    cupy.cuda.Device().synchronize()
    _case.no_failure("a block of 2048 threads launched")


if __name__ == "__main__":
    main()
