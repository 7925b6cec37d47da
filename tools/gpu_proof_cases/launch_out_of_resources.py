"""A program error: a kernel whose registers per thread times 1024 threads exceed the SM's file.

Compiled with ``--maxrregcount=255`` and enough live values to use them, a 1024-thread block asks
for about 255 x 1024 registers where an SM has 65,536: the launch fails with
CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch".
"""

from __future__ import annotations

import _case

SOURCE = r'''
extern "C" __global__ void heavy(const float* in, float* out, int n) {
    float v[160];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    #pragma unroll
    for (int k = 0; k < 160; ++k) v[k] = in[(t * 7 + k * 13) % n];
    float acc = 0.f;
    #pragma unroll
    for (int r = 0; r < 4; ++r) {
        #pragma unroll
        for (int k = 0; k < 160; ++k) { v[k] = v[k] * v[(k + r + 1) % 160] + 1.0f; acc += v[k]; }
    }
    if (t < n) out[t] = acc;
}
'''


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    cupy = _case.cuda_cupy()
    kernel = _case.cupy_kernel(SOURCE, "heavy", ("--maxrregcount=255",))
    n = 1 << 16
    src = cupy.ones(n, dtype=cupy.float32)
    out = cupy.zeros(n, dtype=cupy.float32)
    regs = kernel.attributes.get("num_regs")
    kernel((n // 1024,), (1024,), (src, out, cupy.int32(n)))
    cupy.cuda.Device().synchronize()
    _case.no_failure(f"a 1024-thread block of a kernel with {regs} registers a thread launched")


if __name__ == "__main__":
    main()
