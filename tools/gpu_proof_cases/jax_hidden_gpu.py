"""Provoke JAX's "no GPU visible": ask for the CUDA backend while CUDA_VISIBLE_DEVICES hides every GPU.

The kit sets CUDA_VISIBLE_DEVICES="" and JAX_PLATFORMS=cuda for the command.
"""

from __future__ import annotations

import os

import _case


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) != "":
        _case.skip("CUDA_VISIBLE_DEVICES must be empty")
    jax = _case.cuda_jax()
    devices = jax.devices()
    _case.no_failure(f"JAX found {devices} with CUDA_VISIBLE_DEVICES empty")


if __name__ == "__main__":
    main()
