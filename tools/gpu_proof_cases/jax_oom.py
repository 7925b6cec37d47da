"""Provoke JAX's out-of-memory error: one device array of twice the GPU's memory.

The kit sets XLA_PYTHON_CLIENT_PREALLOCATE=false; XLA's allocator then raises
``RESOURCE_EXHAUSTED: Out of memory while trying to allocate N bytes`` (wording of the JAX release).
"""

from __future__ import annotations

import _case


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    jax = _case.cuda_jax()
    import jax.numpy as jnp

    device = jax.devices("gpu")[0]
    stats = device.memory_stats() or {}
    total = int(stats.get("bytes_limit") or (80 << 30))
    block = jnp.zeros((2 * total,), dtype=jnp.uint8, device=device)
    block.block_until_ready()
    _case.no_failure(f"JAX allocated {block.size} bytes on a GPU with a limit of {total}")


if __name__ == "__main__":
    main()
