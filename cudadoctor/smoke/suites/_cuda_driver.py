"""The CUDA driver API through ctypes, as the driver suite uses it: loading ``libcuda.so.1``,
the entry points' signatures, :class:`Driver` (each call raises :class:`_curesult.CudaError` on
failure) and :class:`Resources`, which frees what a test allocated.

Part of the driver smoke suite (``driver_suite.py``); standard library only.
"""

from __future__ import annotations

import array
import ctypes
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

try:  # imported as cudadoctor.smoke.suites._cuda_driver
    from . import _curesult, _protocol, _ptx
except ImportError:  # run by path: the suite's folder is sys.path[0]
    import _curesult  # type: ignore[no-redef,import-not-found]
    import _protocol  # type: ignore[no-redef,import-not-found]
    import _ptx  # type: ignore[no-redef,import-not-found]

_P = ctypes.POINTER
_c_uint64 = ctypes.c_uint64
_c_size_t = ctypes.c_size_t
_c_void_p = ctypes.c_void_p
_c_int = ctypes.c_int
_c_uint = ctypes.c_uint

# Symbol -> argument types. The names are the ABI symbols cuda.h maps its API names to
# (cuMemAlloc -> cuMemAlloc_v2, ...); each has been exported since CUDA 3.2 or the version noted
# in FALLBACKS, which lists the older symbol to use when a driver lacks the newer one.
SIGNATURES: Dict[str, Tuple[Any, ...]] = {
    "cuInit": (_c_uint,),
    "cuDriverGetVersion": (_P(_c_int),),
    "cuGetErrorName": (_c_int, _P(ctypes.c_char_p)),
    "cuGetErrorString": (_c_int, _P(ctypes.c_char_p)),
    "cuDeviceGetCount": (_P(_c_int),),
    "cuDeviceGet": (_P(_c_int), _c_int),
    "cuDeviceGetName": (ctypes.c_char_p, _c_int, _c_int),
    "cuDeviceGetAttribute": (_P(_c_int), _c_int, _c_int),
    "cuDeviceTotalMem_v2": (_P(_c_size_t), _c_int),
    "cuDeviceGetPCIBusId": (ctypes.c_char_p, _c_int, _c_int),
    "cuDeviceGetUuid_v2": (ctypes.c_char_p, _c_int),  # CUDA 11.4
    "cuDeviceGetUuid": (ctypes.c_char_p, _c_int),
    "cuDevicePrimaryCtxRetain": (_P(_c_void_p), _c_int),
    "cuDevicePrimaryCtxRelease_v2": (_c_int,),  # CUDA 11.0
    "cuDevicePrimaryCtxRelease": (_c_int,),
    "cuCtxSetCurrent": (_c_void_p,),
    "cuCtxSynchronize": (),
    "cuMemGetInfo_v2": (_P(_c_size_t), _P(_c_size_t)),
    "cuModuleLoadDataEx": (_P(_c_void_p), ctypes.c_char_p, _c_uint, _P(_c_int), _P(_c_void_p)),
    "cuModuleGetFunction": (_P(_c_void_p), _c_void_p, ctypes.c_char_p),
    "cuModuleUnload": (_c_void_p,),
    "cuMemAlloc_v2": (_P(_c_uint64), _c_size_t),
    "cuMemFree_v2": (_c_uint64,),
    "cuMemAllocHost_v2": (_P(_c_void_p), _c_size_t),
    "cuMemFreeHost": (_c_void_p,),
    "cuMemcpyHtoD_v2": (_c_uint64, _c_void_p, _c_size_t),
    "cuMemcpyDtoH_v2": (_c_void_p, _c_uint64, _c_size_t),
    "cuMemcpyDtoD_v2": (_c_uint64, _c_uint64, _c_size_t),
    "cuMemcpyHtoDAsync_v2": (_c_uint64, _c_void_p, _c_size_t, _c_void_p),
    "cuMemcpyDtoHAsync_v2": (_c_void_p, _c_uint64, _c_size_t, _c_void_p),
    "cuMemcpyDtoDAsync_v2": (_c_uint64, _c_uint64, _c_size_t, _c_void_p),
    "cuMemsetD32_v2": (_c_uint64, _c_uint, _c_size_t),
    "cuLaunchKernel": (_c_void_p, _c_uint, _c_uint, _c_uint, _c_uint, _c_uint, _c_uint, _c_uint, _c_void_p,
                       _P(_c_void_p), _P(_c_void_p)),
    "cuEventCreate": (_P(_c_void_p), _c_uint),
    "cuEventRecord": (_c_void_p, _c_void_p),
    "cuEventSynchronize": (_c_void_p,),
    "cuEventElapsedTime_v2": (_P(ctypes.c_float), _c_void_p, _c_void_p),  # CUDA 12.8
    "cuEventElapsedTime": (_P(ctypes.c_float), _c_void_p, _c_void_p),
    "cuEventDestroy_v2": (_c_void_p,),  # CUDA 4.0
}
FALLBACKS: Dict[str, str] = {
    "cuDeviceGetUuid_v2": "cuDeviceGetUuid",
    "cuDevicePrimaryCtxRelease_v2": "cuDevicePrimaryCtxRelease",
    "cuEventElapsedTime_v2": "cuEventElapsedTime",
}

# CUdevice_attribute values (cuda.h, CUDA 13.0)
ATTRIBUTES: Dict[str, int] = {
    "cc_major": 75,  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    "cc_minor": 76,  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
    "sm_count": 16,  # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
    "max_threads_per_block": 1,  # CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
    "clock_khz": 13,  # CU_DEVICE_ATTRIBUTE_CLOCK_RATE
    "memory_clock_khz": 36,  # CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE
    "memory_bus_width_bits": 37,  # CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH
    "l2_cache_bytes": 38,  # CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
    "ecc_enabled": 32,  # CU_DEVICE_ATTRIBUTE_ECC_ENABLED
    "integrated": 18,  # CU_DEVICE_ATTRIBUTE_INTEGRATED
    "kernel_exec_timeout": 17,  # CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT (a display watchdog)
    "compute_mode": 20,  # CU_DEVICE_ATTRIBUTE_COMPUTE_MODE
    "tcc_driver": 35,  # CU_DEVICE_ATTRIBUTE_TCC_DRIVER
}
CU_JIT_INFO_LOG_BUFFER = 3
CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
JIT_LOG_BYTES = 8192


class MissingSymbol(RuntimeError):
    """The loaded libcuda lacks an entry point (a driver older than the call)."""


def library_name() -> str:
    """The driver library's file name on this platform."""
    return "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"


def load_libcuda() -> Any:
    """``ctypes`` handle of the driver library; OSError when it cannot be loaded. Only the
    versioned ``libcuda.so.1`` (the driver's): a bare ``libcuda.so`` is usually the toolkit's
    link-time stub, which answers every call with CUDA_ERROR_STUB_LIBRARY."""
    if sys.platform == "win32":
        return ctypes.WinDLL(library_name())  # type: ignore[attr-defined]
    return ctypes.CDLL(library_name())


def load_failure_reason(exc: OSError) -> str:
    """One line on why the driver library did not load."""
    text = str(exc)
    name = library_name()
    if "No such file" in text or "cannot open shared object" in text or "could not find" in text.lower() \
            or "not found" in text.lower() or getattr(exc, "winerror", None) == 126:
        return f"{name} not found: no NVIDIA driver"
    return f"{name} could not be loaded: {_protocol.one_line(text, 200)}"


def driver_version_text(version: int) -> str:
    """cuDriverGetVersion's integer as text: 12040 -> ``"12.4"``."""
    return f"{version // 1000}.{(version % 1000) // 10}"


def library_path(fragment: str) -> Optional[str]:
    """The path of the mapped library whose file name contains ``fragment`` (Linux)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) == 6 and fragment in os.path.basename(parts[5].strip()):
                    return parts[5].strip()
    except OSError:
        return None
    return None


class Driver:
    """The driver API calls the suite uses, over a loaded library (a real ctypes handle, or any
    object with the same callables, for tests). Each call raises :class:`_curesult.CudaError`
    on failure."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        self._fns: Dict[str, Any] = {}

    def fn(self, name: str) -> Any:
        """The callable for symbol ``name`` (or its fallback), with argument types set."""
        if name in self._fns:
            return self._fns[name]
        found = None
        for symbol in (name, FALLBACKS.get(name)):
            if symbol is None:
                continue
            try:
                found = getattr(self.lib, symbol)
            except AttributeError:
                continue
            if isinstance(found, ctypes._CFuncPtr):  # type: ignore[attr-defined]
                found.restype = ctypes.c_int
                found.argtypes = list(SIGNATURES[symbol])
            break
        if found is None:
            raise MissingSymbol(f"{library_name()} has no {name}: the driver is older than this call")
        self._fns[name] = found
        return found

    def _error_string(self, symbol: str, code: int, encoding: str) -> Optional[str]:
        """What ``symbol`` (cuGetErrorName or cuGetErrorString) says of ``code``; None when it
        says nothing (a code it does not know, a driver without the symbol)."""
        try:
            out = ctypes.c_char_p()
            if self.fn(symbol)(code, ctypes.byref(out)) == 0 and out.value:
                return out.value.decode(encoding, "replace")
        except Exception:
            pass
        return None

    def error_name(self, code: int) -> str:
        """The CUresult's name: cuGetErrorName when it knows it, else the cuda.h table."""
        return self._error_string("cuGetErrorName", code, "ascii") or _curesult.curesult_name(code)

    def error_text(self, code: int) -> Optional[str]:
        """cuGetErrorString's description, None when unavailable."""
        return self._error_string("cuGetErrorString", code, "utf-8")

    def check(self, name: str, code: int, detail: str = "") -> None:
        if code != 0:
            raise _curesult.CudaError(name, int(code), self.error_name(int(code)), self.error_text(int(code)), detail)

    def call(self, name: str, *args: Any) -> None:
        self.check(name, self.fn(name)(*args))

    def _out(self, name: str, ctype: Any, *args: Any) -> int:
        """Call ``name`` with a pointer to a new ``ctype`` (an integer or a pointer) before
        ``args``: the value the call wrote there (0 for a NULL pointer)."""
        out = ctype()
        self.call(name, ctypes.byref(out), *args)
        return int(out.value or 0)

    def _text(self, name: str, size: int, dev: int, encoding: str) -> str:
        """Call ``name`` with a ``size``-byte buffer, its size and ``dev``: the string written."""
        buf = ctypes.create_string_buffer(size)
        self.call(name, buf, size, dev)
        return buf.value.decode(encoding, "replace")

    # -- initialisation and devices

    def init(self) -> None:
        self.call("cuInit", 0)

    def driver_version(self) -> int:
        return self._out("cuDriverGetVersion", ctypes.c_int)

    def device_count(self) -> int:
        return self._out("cuDeviceGetCount", ctypes.c_int)

    def device(self, ordinal: int) -> int:
        return self._out("cuDeviceGet", ctypes.c_int, ordinal)

    def device_name(self, dev: int) -> str:
        return self._text("cuDeviceGetName", 256, dev, "utf-8")

    def attribute(self, dev: int, attribute: int) -> int:
        return self._out("cuDeviceGetAttribute", ctypes.c_int, attribute, dev)

    def total_memory(self, dev: int) -> int:
        return self._out("cuDeviceTotalMem_v2", ctypes.c_size_t, dev)

    def pci_bus_id(self, dev: int) -> str:
        return self._text("cuDeviceGetPCIBusId", 64, dev, "ascii")

    def uuid(self, dev: int) -> str:
        buf = ctypes.create_string_buffer(16)
        self.call("cuDeviceGetUuid_v2", buf, dev)
        h = bytes(buf.raw[:16]).hex()
        return f"GPU-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"

    # -- contexts and memory

    def retain_primary_context(self, dev: int) -> int:
        return self._out("cuDevicePrimaryCtxRetain", ctypes.c_void_p, dev)

    def release_primary_context(self, dev: int) -> None:
        self.call("cuDevicePrimaryCtxRelease_v2", dev)

    def set_current(self, ctx: int) -> None:
        self.call("cuCtxSetCurrent", ctypes.c_void_p(ctx))

    def synchronize(self) -> None:
        self.call("cuCtxSynchronize")

    def memory_info(self) -> Tuple[int, int]:
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        self.call("cuMemGetInfo_v2", ctypes.byref(free), ctypes.byref(total))
        return free.value, total.value

    def alloc(self, nbytes: int) -> int:
        return self._out("cuMemAlloc_v2", ctypes.c_uint64, nbytes)

    def free(self, ptr: int) -> None:
        self.call("cuMemFree_v2", ptr)

    def alloc_host(self, nbytes: int) -> int:
        return self._out("cuMemAllocHost_v2", ctypes.c_void_p, nbytes)

    def free_host(self, ptr: int) -> None:
        self.call("cuMemFreeHost", ctypes.c_void_p(ptr))

    def htod(self, dst: int, src: Any, nbytes: int) -> None:
        self.call("cuMemcpyHtoD_v2", dst, src, nbytes)

    def dtoh(self, dst: Any, src: int, nbytes: int) -> None:
        self.call("cuMemcpyDtoH_v2", dst, src, nbytes)

    def dtod(self, dst: int, src: int, nbytes: int) -> None:
        self.call("cuMemcpyDtoD_v2", dst, src, nbytes)

    def htod_async(self, dst: int, src: int, nbytes: int) -> None:
        self.call("cuMemcpyHtoDAsync_v2", dst, ctypes.c_void_p(src), nbytes, None)

    def dtoh_async(self, dst: int, src: int, nbytes: int) -> None:
        self.call("cuMemcpyDtoHAsync_v2", ctypes.c_void_p(dst), src, nbytes, None)

    def dtod_async(self, dst: int, src: int, nbytes: int) -> None:
        self.call("cuMemcpyDtoDAsync_v2", dst, src, nbytes, None)

    def memset32(self, ptr: int, value: int, count: int) -> None:
        self.call("cuMemsetD32_v2", ptr, value & _ptx.MASK32, count)

    # -- modules and launches

    def load_module(self, image: str) -> Tuple[int, str]:
        """Load a PTX module (JIT): (module handle, the JIT's info log). On failure the
        CudaError carries the JIT's error log."""
        module = ctypes.c_void_p()
        info = ctypes.create_string_buffer(JIT_LOG_BYTES)
        err = ctypes.create_string_buffer(JIT_LOG_BYTES)
        options = (ctypes.c_int * 4)(CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                     CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        values = (ctypes.c_void_p * 4)(ctypes.cast(info, ctypes.c_void_p).value, JIT_LOG_BYTES,
                                       ctypes.cast(err, ctypes.c_void_p).value, JIT_LOG_BYTES)
        code = self.fn("cuModuleLoadDataEx")(ctypes.byref(module), image.encode("ascii"), 4, options, values)
        log = err.value.decode("utf-8", "replace").strip()
        self.check("cuModuleLoadDataEx", code, f"JIT log: {_protocol.one_line(log, 300)}" if log else "")
        return module.value or 0, info.value.decode("utf-8", "replace").strip()

    def unload_module(self, module: int) -> None:
        self.call("cuModuleUnload", ctypes.c_void_p(module))

    def function(self, module: int, name: str) -> int:
        return self._out("cuModuleGetFunction", ctypes.c_void_p, ctypes.c_void_p(module), name.encode("ascii"))

    def launch(self, function: int, grid: int, block: int, args: Sequence[Any], shared: int = 0) -> None:
        """Launch ``function`` on the null stream; ``args`` are ctypes scalars (c_uint64 for a
        device pointer, c_uint32, c_float), kept alive through the call."""
        params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
        self.call("cuLaunchKernel", ctypes.c_void_p(function), grid, 1, 1, block, 1, 1, shared, None, params, None)

    # -- events

    def event(self) -> int:
        return self._out("cuEventCreate", ctypes.c_void_p, 0)

    def record(self, event: int) -> None:
        self.call("cuEventRecord", ctypes.c_void_p(event), None)

    def elapsed_s(self, start: int, end: int) -> float:
        """Seconds between two recorded events (waits for ``end``)."""
        self.call("cuEventSynchronize", ctypes.c_void_p(end))
        ms = ctypes.c_float()
        self.call("cuEventElapsedTime_v2", ctypes.byref(ms), ctypes.c_void_p(start), ctypes.c_void_p(end))
        return ms.value / 1e3

    def destroy_event(self, event: int) -> None:
        self.call("cuEventDestroy_v2", ctypes.c_void_p(event))


class Resources:
    """Device and pinned allocations and events, released in reverse order on exit. A failure
    to release is raised when the block itself succeeded (freeing is part of what is tested);
    after an error in the block (a sticky error makes every free fail too) it is only kept in
    ``errors``, so the first error is the one reported."""

    def __init__(self, drv: Driver) -> None:
        self.drv = drv
        self._release: List[Tuple[str, Callable[[], None]]] = []
        self.errors: List[Exception] = []

    def __enter__(self) -> "Resources":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.release()
        if exc_type is None and self.errors:
            raise self.errors[0]

    def _hold(self, handle: int, call: str, release: Callable[[int], None]) -> int:
        """Keep ``handle`` for ``release`` (the driver's ``call``) on exit; return it."""
        self._release.append((call, lambda: release(handle)))
        return handle

    def device(self, nbytes: int) -> int:
        return self._hold(self.drv.alloc(nbytes), "cuMemFree_v2", self.drv.free)

    def host(self, nbytes: int) -> int:
        return self._hold(self.drv.alloc_host(nbytes), "cuMemFreeHost", self.drv.free_host)

    def event(self) -> int:
        return self._hold(self.drv.event(), "cuEventDestroy_v2", self.drv.destroy_event)

    def release(self) -> None:
        while self._release:
            _, fn = self._release.pop()
            try:
                fn()
            except Exception as exc:
                self.errors.append(exc)


def upload(drv: Driver, dst: int, data: "array.array[Any]") -> None:
    """Copy a host array to device memory."""
    nbytes = len(data) * data.itemsize
    if nbytes:
        drv.htod(dst, ctypes.c_void_p(data.buffer_info()[0]), nbytes)


def download(drv: Driver, src: int, typecode: str, count: int) -> "array.array[Any]":
    """Copy ``count`` elements of type ``typecode`` from device memory into a new host array."""
    out = array.array(typecode, bytes(array.array(typecode).itemsize * count))
    if count:
        drv.dtoh(ctypes.c_void_p(out.buffer_info()[0]), src, count * out.itemsize)
    return out

