"""A program error: a Triton kernel whose tiles need more shared memory than the GPU has.

Two 256 x 256 fp16 tiles of ``tl.dot`` take 256 KiB of shared memory (an H100 has 227 KiB a
block): Triton raises OutOfResources, "out of resource: shared memory, Required: ..., Hardware
limit: ...".
"""

from __future__ import annotations

import _case


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    torch = _case.cuda_torch()
    try:
        import triton
        import triton.language as tl
    except ImportError as exc:
        _case.skip(f"needs Triton ({exc})")

    @triton.jit
    def tile_dot(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
        rows = tl.arange(0, BLOCK)[:, None]
        cols = tl.arange(0, BLOCK)[None, :]
        a = tl.load(a_ptr + rows * BLOCK + cols)
        b = tl.load(b_ptr + rows * BLOCK + cols)
        tl.store(c_ptr + rows * BLOCK + cols, tl.dot(a, b))

    block = 256
    a = torch.ones(block, block, device="cuda:0", dtype=torch.float16)
    b = torch.ones(block, block, device="cuda:0", dtype=torch.float16)
    c = torch.empty(block, block, device="cuda:0", dtype=torch.float32)
    tile_dot[(1,)](a, b, c, BLOCK=block, num_stages=3)
    torch.cuda.synchronize()
    _case.no_failure(f"a {block}x{block} Triton tile ran")


if __name__ == "__main__":
    main()
