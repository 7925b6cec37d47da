"""Provoke "no kernel image for this GPU": load a cubin built for another GPU family.

A cubin runs only on GPUs of its own major compute capability (and a minor at least its own), so
a kernel built with ``nvcc -cubin -arch=sm_80`` cannot load on a Hopper (sm_90) or Blackwell GPU,
and one built for sm_90 cannot load on an Ampere (sm_8x). The driver API's ``cuModuleLoadData``
then returns CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the
device", the error a framework build without this GPU's architecture gives.

``--build-only DIR`` compiles the cubin into DIR and exits (the kit does that once, so both ways
of running the case load the same file); ``--cubin-dir DIR`` loads it from there.
"""

from __future__ import annotations

import ctypes
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Optional, Tuple

import _case

KERNEL = 'extern "C" __global__ void scale(float *x, float a, int n) {\n' \
         '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] *= a;\n}\n'


def find_nvcc() -> Optional[str]:
    found = shutil.which("nvcc")
    if found:
        return found
    homes = [os.environ.get(v, "") for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    homes += sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    for home in homes:
        path = os.path.join(home, "bin", "nvcc") if home else ""
        if path and os.access(path, os.X_OK):
            return path
    return None


def other_family(cc: Optional[Tuple[int, int]]) -> str:
    """An architecture whose cubin this GPU cannot run (sm_80 unless the GPU is an sm_8x)."""
    return "sm_90" if cc is not None and cc[0] == 8 else "sm_80"


def gpu_capability() -> Tuple[Optional[_case.Driver], Optional[Tuple[int, int]], str]:
    """(driver, compute capability of GPU 0, why either is missing)."""
    try:
        drv = _case.Driver()
    except FileNotFoundError as exc:
        return None, None, f"no GPU: {exc}"
    rc = drv.rc("cuInit", 0)
    if rc:
        name, text = drv.error(rc)
        return None, None, f"no GPU: cuInit returned {name} ({text})"
    return drv, drv.compute_capability(0), ""


def build(arch: str, folder: str, no_gpu: str) -> str:
    """The cubin for ``arch`` in ``folder``, built when missing; skip when it cannot be (saying
    ``no_gpu`` first when there is no GPU either)."""
    cubin = os.path.join(folder, f"scale_{arch}.cubin")
    if os.path.exists(cubin):
        return cubin
    prefix = f"{no_gpu}; " if no_gpu else ""
    nvcc = find_nvcc()
    if nvcc is None:
        _case.skip(f"{prefix}nvcc not found (PATH, CUDA_HOME, /usr/local/cuda*): cannot build a cubin")
    source = os.path.join(folder, "scale.cu")
    with open(source, "w", encoding="utf-8") as fh:
        fh.write(KERNEL)
    done = subprocess.run([nvcc, "-cubin", f"-arch={arch}", "-o", cubin, source], capture_output=True, text=True,
                          timeout=120)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        _case.skip(f"{prefix}{nvcc} -cubin -arch={arch} failed (exit {done.returncode})")
    return cubin


def main() -> None:
    p = _case.parser(__doc__)
    p.add_argument("--build-only", metavar="DIR", help="build the cubin into DIR and exit")
    p.add_argument("--cubin-dir", metavar="DIR", help="where the cubin is (built there when missing)")
    args = p.parse_args()
    drv, cc, why = gpu_capability() if args.gpus != 0 else (None, None, "no GPU: the driver lists none")
    arch = other_family(cc)
    folder = args.build_only or args.cubin_dir or tempfile.mkdtemp(prefix="gpu-proof-cubin-")
    os.makedirs(folder, exist_ok=True)
    cubin = build(arch, folder, why)
    if args.build_only:
        print(f"{cubin} ({os.path.getsize(cubin)} bytes, {arch}; GPU 0: {'sm_%d%d' % cc if cc else why})")
        return
    if drv is None or cc is None:
        _case.skip(f"{why} (the {arch} cubin was built: {os.path.getsize(cubin)} bytes)")
    drv.make_current(0)
    with open(cubin, "rb") as fh:
        image = fh.read()
    module = ctypes.c_void_p()
    rc = drv.rc("cuModuleLoadData", ctypes.byref(module), ctypes.c_char_p(image))
    if rc == 0:
        _case.no_failure(f"the driver loaded a {arch} cubin on this sm_{cc[0]}{cc[1]} GPU")
    raise drv.failure("cuModuleLoadData", rc, f" of a {arch} cubin on this sm_{cc[0]}{cc[1]} GPU")


if __name__ == "__main__":
    main()
