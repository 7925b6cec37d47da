"""What the provoked-failure cases share: how they say "cannot provoke this here" (exit 77) and
"the failure did not happen" (exit 3), and a minimal ctypes binding of the CUDA driver API.

A case either raises the GPU error uncaught (so ``cudadoctor run`` and the excepthook see the
real traceback), or exits 77 or 3 with one line that the kit reads. Standard library only.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
from typing import Any, NoReturn, Optional, Tuple

SKIP_CODE = 77  # automake's "skipped", so a shell reader recognises it
NO_FAILURE_CODE = 3


def skip(reason: str) -> NoReturn:
    sys.stderr.write(f"gpu-proof-skip: {reason}\n")
    sys.exit(SKIP_CODE)


def no_failure(what: str) -> NoReturn:
    sys.stderr.write(f"gpu-proof-no-failure: {what}\n")
    sys.exit(NO_FAILURE_CODE)


def parser(doc: Optional[str]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0])
    p.add_argument("--gpus", type=int, default=-1,
                   help="GPUs the kit saw through NVML or nvidia-smi (0: skip with 'no GPU'; -1: unknown)")
    return p


def require_gpu(gpus: int) -> None:
    if gpus == 0:
        skip("no GPU: the driver lists none")


def cuda_torch() -> Any:
    """torch, when it is a CUDA build; else skip."""
    try:
        import torch
    except ImportError as exc:
        skip(f"needs torch with CUDA; torch is not installed ({exc})")
    if not getattr(torch.version, "cuda", None):
        skip(f"needs a CUDA build of torch; torch {torch.__version__} is CPU-only")
    return torch


class Driver:
    """The few driver API calls the cases need; errors raise RuntimeError naming the CUresult."""

    def __init__(self) -> None:
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise FileNotFoundError(f"libcuda.so.1 not found ({exc})") from exc

    def error(self, rc: int) -> Tuple[str, str]:
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        self.lib.cuGetErrorName(rc, ctypes.byref(name))
        self.lib.cuGetErrorString(rc, ctypes.byref(text))
        return (name.value or b"CUDA_ERROR_UNKNOWN").decode(), (text.value or b"").decode()

    def rc(self, fn: str, *args: Any) -> int:
        return int(getattr(self.lib, fn)(*args))

    def check(self, fn: str, *args: Any) -> None:
        rc = self.rc(fn, *args)
        if rc:
            raise self.failure(fn, rc)

    def failure(self, fn: str, rc: int, context: str = "") -> RuntimeError:
        name, text = self.error(rc)
        return RuntimeError(f"{fn}{context} failed: {name} ({rc}): {text}")

    def compute_capability(self, ordinal: int = 0) -> Tuple[int, int]:
        dev, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        self.check("cuDeviceGet", ctypes.byref(dev), ordinal)
        self.check("cuDeviceGetAttribute", ctypes.byref(major), 75, dev)  # COMPUTE_CAPABILITY_MAJOR
        self.check("cuDeviceGetAttribute", ctypes.byref(minor), 76, dev)  # COMPUTE_CAPABILITY_MINOR
        return major.value, minor.value

    def make_current(self, ordinal: int = 0) -> None:
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        self.check("cuDeviceGet", ctypes.byref(dev), ordinal)
        self.check("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        self.check("cuCtxSetCurrent", ctx)


def cuda_cupy() -> Any:
    """cupy, when it imports and sees a GPU runtime; else skip."""
    try:
        import cupy
    except ImportError as exc:
        skip(f"needs CuPy; it is not installed ({exc})")
    return cupy


def cuda_jax() -> Any:
    """jax, when a CUDA plugin is installed; else skip (the backend itself is what a case provokes)."""
    try:
        import jax
    except ImportError as exc:
        skip(f"needs JAX; it is not installed ({exc})")
    try:
        from importlib import metadata

        if not any(d.metadata["Name"].startswith(("jax-cuda", "jax_cuda")) for d in metadata.distributions()):
            skip("needs JAX with a CUDA plugin (jax-cuda1x-plugin); only the CPU backend is installed")
    except Exception:  # metadata of one broken distribution: try anyway
        pass
    return jax


def cupy_kernel(source: str, name: str, options: Tuple[str, ...] = ()) -> Any:
    """A CuPy RawKernel compiled by NVRTC from ``source``."""
    cupy = cuda_cupy()
    return cupy.RawKernel(source, name, options=options)
