"""Provoke a CUDA extension build with no nvcc: torch's JIT build with CUDA_HOME at a folder that
holds no toolkit (as on a machine with pip's CUDA wheels and no toolkit installed)."""

from __future__ import annotations

import os
import shutil
import tempfile

import _case

CUDA = "__global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\nvoid launch(float* x) { k<<<1, 32>>>(x); }\n"


def main() -> None:
    args = _case.parser(__doc__).parse_args()
    _case.require_gpu(args.gpus)
    os.environ["CUDA_HOME"] = "/opt/cuda-not-installed"
    torch = _case.cuda_torch()
    if not shutil.which("ninja") and not os.path.exists(os.path.join(os.path.dirname(torch.__file__), "..", "ninja")):
        try:
            import ninja  # noqa: F401
        except ImportError:
            _case.skip("needs ninja for torch's JIT extension build")
    from torch.utils.cpp_extension import load_inline

    build = tempfile.mkdtemp(prefix="cd-ext-")
    ext = load_inline(name="cd_no_nvcc", cpp_sources="void launch(float* x);", cuda_sources=CUDA,
                      functions=None, build_directory=build, verbose=False)
    _case.no_failure(f"a CUDA extension built without nvcc: {ext}")


if __name__ == "__main__":
    main()
