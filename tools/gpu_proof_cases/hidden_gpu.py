"""Provoke "no GPU visible": start CUDA while CUDA_VISIBLE_DEVICES hides every GPU.

The kit sets CUDA_VISIBLE_DEVICES="" for the whole command, so cudadoctor's diagnosis sees the same
environment as this process. With a CUDA build of torch, ``torch.zeros(1).cuda()`` raises "No CUDA
GPUs are available"; without it the driver API's cuInit returns CUDA_ERROR_NO_DEVICE.
"""

from __future__ import annotations

import os

import _case

HIDING = ("", "-1", "none", "NoDevFiles")


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None or value.strip() not in HIDING:
        _case.skip(f"CUDA_VISIBLE_DEVICES must hide every GPU; it is {value!r}")
    try:
        import torch

        have_torch = bool(getattr(torch.version, "cuda", None))
    except ImportError:
        have_torch = False
    if have_torch:
        torch.zeros(1).cuda()
        _case.no_failure(f"torch reached a GPU with CUDA_VISIBLE_DEVICES={value!r}")
    try:
        drv = _case.Driver()
    except FileNotFoundError as exc:
        _case.skip(f"no GPU: {exc}")
    drv.check("cuInit", 0)
    _case.no_failure(f"cuInit succeeded with CUDA_VISIBLE_DEVICES={value!r}")


if __name__ == "__main__":
    main()
