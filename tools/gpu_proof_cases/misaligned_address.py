"""A program error: a custom kernel reads a double from an address that is not 8-byte aligned."""

from __future__ import annotations

import _case

SOURCE = r'''
extern "C" __global__ void unaligned(const char* base, double* out) {
    out[threadIdx.x] = *reinterpret_cast<const double*>(base + 1 + threadIdx.x * 8);
}
'''


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    cupy = _case.cuda_cupy()
    kernel = _case.cupy_kernel(SOURCE, "unaligned")
    base = cupy.zeros(1024, dtype=cupy.uint8)
    out = cupy.zeros(32, dtype=cupy.float64)
    kernel((1,), (32,), (base, out))
    cupy.cuda.Device().synchronize()
    _case.no_failure("a misaligned 8-byte load did not fault")


if __name__ == "__main__":
    main()
