"""A program error: an operation on a CUDA tensor and a CPU tensor.

torch raises "Expected all tensors to be on the same device, but found at least two devices,
cuda:0 and cpu!" (wording of the torch release).
"""

from __future__ import annotations

import _case


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    torch = _case.cuda_torch()
    weights = torch.nn.Linear(4, 2).to("cuda:0")
    out = weights(torch.ones(3, 4))  # the input stays on the CPU
    _case.no_failure(f"a CUDA layer took a CPU input: {tuple(out.shape)}")


if __name__ == "__main__":
    main()
