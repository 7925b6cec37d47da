"""One choke point for NVML, as nvitop's ``libnvml`` does it.

Every NVML call goes through :meth:`Nvml.system` or :meth:`Nvml.device` by function name. The
real implementation initialises lazily, turns ctypes structures into plain dicts, bytes into
str, and every failure into :class:`NvmlError` carrying NVML's own error name
(``NVML_ERROR_DRIVER_NOT_LOADED``...). A recorded machine answers the same names from JSON, so
the probes cannot tell the difference.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Mapping, Optional, Protocol


class NvmlError(Exception):
    """An NVML call failed. ``name`` is NVML's error constant, e.g. NVML_ERROR_NOT_SUPPORTED."""

    def __init__(self, name: str, detail: str = "") -> None:
        super().__init__(f"{name}: {detail}" if detail else name)
        self.name = name
        self.detail = detail


# NVML's errors that mean "this machine cannot answer at all", as opposed to "this field is
# not supported on this GPU". https://docs.nvidia.com/deploy/nvml-api/group__nvmlConstants.html
LIBRARY_NOT_FOUND = "NVML_ERROR_LIBRARY_NOT_FOUND"
DRIVER_NOT_LOADED = "NVML_ERROR_DRIVER_NOT_LOADED"
LIB_RM_VERSION_MISMATCH = "NVML_ERROR_LIB_RM_VERSION_MISMATCH"
NO_PERMISSION = "NVML_ERROR_NO_PERMISSION"
NOT_SUPPORTED = "NVML_ERROR_NOT_SUPPORTED"
GPU_IS_LOST = "NVML_ERROR_GPU_IS_LOST"
PYNVML_MISSING = "PYNVML_NOT_INSTALLED"


# Human wording of the NVML errors people meet at start-up (nvml.h, nvmlReturn_t).
_NVML_TEXT = {
    LIBRARY_NOT_FOUND: "libnvidia-ml.so.1 not found (no NVIDIA driver installed, or not mounted into this container)",
    DRIVER_NOT_LOADED: "the NVIDIA driver is not loaded",
    LIB_RM_VERSION_MISMATCH: "driver/library version mismatch (the kernel module and libnvidia-ml differ)",
    NO_PERMISSION: "insufficient permissions to talk to the driver",
    PYNVML_MISSING: "the pynvml module (nvidia-ml-py) is not importable",
}


def nvml_error_text(name: str) -> str:
    """A sentence for one of NVML's error names."""
    return _NVML_TEXT.get(name, name)


class Nvml(Protocol):
    def init(self) -> None:
        """Initialise NVML; raise :class:`NvmlError` when it cannot be."""

    def system(self, fn: str) -> Any:
        """Call a system-level function such as ``nvmlSystemGetDriverVersion``."""

    def device_count(self) -> int: ...

    def device(self, index: int, fn: str, *args: int) -> Any:
        """Call a device function such as ``nvmlDeviceGetName`` on GPU ``index``."""


def _plain(value: Any) -> Any:
    """ctypes structures, bytes and sequences as plain JSON-able values."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    fields = getattr(value, "_fields_", None)
    if fields is not None:
        return {name: _plain(getattr(value, name)) for name, *_ in fields}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class RealNvml:
    """NVML through the ``pynvml`` module of nvidia-ml-py, imported on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._mod: Any = None
        self._names: Dict[int, str] = {}
        self._handles: Dict[int, Any] = {}
        self._init_error: Optional[NvmlError] = None
        self._initialised = False

    def init(self) -> None:
        with self._lock:
            if self._initialised:
                return
            if self._init_error is not None:
                raise self._init_error
            missing = _library_missing()
            if missing is not None:
                self._init_error = NvmlError(LIBRARY_NOT_FOUND, missing)
                raise self._init_error
            try:
                import pynvml
            except Exception as exc:  # ImportError, or a broken install
                self._init_error = NvmlError(PYNVML_MISSING, f"cannot import pynvml: {exc}")
                raise self._init_error from None
            self._mod = pynvml
            self._names = {
                getattr(pynvml, n): n
                for n in dir(pynvml)
                if n.startswith("NVML_ERROR_") and isinstance(getattr(pynvml, n), int)
            }
            try:
                pynvml.nvmlInit()
            except Exception as exc:
                self._init_error = self._error(exc)
                raise self._init_error from None
            self._initialised = True

    def _error(self, exc: Exception) -> NvmlError:
        value = getattr(exc, "value", None)
        if isinstance(value, int):
            return NvmlError(self._names.get(value, f"NVML_ERROR_{value}"), str(exc))
        return NvmlError("NVML_ERROR_UNKNOWN", f"{type(exc).__name__}: {exc}")

    def _call(self, fn: str, *args: Any) -> Any:
        self.init()
        func = getattr(self._mod, fn, None)
        if func is None:
            raise NvmlError("NVML_ERROR_FUNCTION_NOT_FOUND", f"{fn} is not in this pynvml")
        try:
            return _plain(func(*args))
        except Exception as exc:
            raise self._error(exc) from None

    def system(self, fn: str) -> Any:
        return self._call(fn)

    def device_count(self) -> int:
        return int(self._call("nvmlDeviceGetCount"))

    def device(self, index: int, fn: str, *args: int) -> Any:
        handle = self._handles.get(index)
        if handle is None:
            self.init()
            try:
                handle = self._mod.nvmlDeviceGetHandleByIndex(index)
            except Exception as exc:
                raise self._error(exc) from None
            self._handles[index] = handle
        return self._call(fn, handle, *args)


def _library_missing() -> Optional[str]:
    """On Linux pynvml's nvmlInit dlopens 'libnvidia-ml.so.1'. Trying that first costs a
    fraction of importing pynvml (which pulls in ctypes.util, shutil, tempfile, ...) and gives
    the same answer on the many machines that have no driver at all. Where the library is in
    none of the places the dynamic loader looks, not even ctypes is imported."""
    import sys

    if not sys.platform.startswith("linux"):
        return None
    if not _loader_may_find(NVML_SONAME):
        return f"{NVML_SONAME}: cannot open shared object file: No such file or directory"
    import ctypes

    try:
        ctypes.CDLL(NVML_SONAME)
    except OSError as exc:
        return str(exc)
    return None


NVML_SONAME = "libnvidia-ml.so.1"


def _loader_may_find(soname: str) -> bool:
    """Whether glibc's dlopen could find ``soname``: it looks in LD_LIBRARY_PATH, the executable's
    run paths, /etc/ld.so.cache and the trusted directories. Any doubt (an unreadable cache, a
    name in it) is a yes: only a certain no skips the real attempt."""
    import os
    import sys

    places = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    places += [os.path.join(p, "lib") for p in {sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(
        os.path.realpath(sys.executable)))}]  # a run path of $ORIGIN/../lib (pyenv, conda)
    places += ["/lib", "/usr/lib", "/lib64", "/usr/lib64"]
    if any(os.path.exists(os.path.join(d, soname)) for d in places):
        return True
    try:
        with open("/etc/ld.so.cache", "rb") as fh:
            return soname.encode() in fh.read(64 << 20)
    except OSError:
        return True


class RecordedNvml:
    """NVML answers replayed from a recorded machine's ``nvml`` JSON object.

    Shape: ``{"init_error": null | NAME, "system": {fn: value}, "devices": [{fn: value}]}``.
    A device function with arguments is keyed ``fn(a,b)``. A value ``{"$error": NAME}`` raises
    that error; ``{"$hang": seconds}`` sleeps first (to test timeouts). A function that was not
    recorded raises NVML_ERROR_NOT_SUPPORTED, which is what old drivers do.
    """

    def __init__(self, data: Optional[Mapping[str, Any]]) -> None:
        self._data: Mapping[str, Any] = data or {"init_error": LIBRARY_NOT_FOUND}

    def init(self) -> None:
        error = self._data.get("init_error")
        hang = self._data.get("init_hang_s")
        if hang:
            time.sleep(float(hang))
        if error:
            raise NvmlError(str(error), "recorded")

    @staticmethod
    def _answer(table: Mapping[str, Any], key: str) -> Any:
        if key not in table:
            raise NvmlError(NOT_SUPPORTED, f"{key} not recorded")
        value = table[key]
        if isinstance(value, Mapping) and "$hang" in value:
            time.sleep(float(value["$hang"]))
            value = value.get("value")
        if isinstance(value, Mapping) and "$error" in value:
            raise NvmlError(str(value["$error"]), "recorded")
        return value

    def system(self, fn: str) -> Any:
        self.init()
        return self._answer(self._data.get("system", {}), fn)

    def device_count(self) -> int:
        self.init()
        system = self._data.get("system", {})
        if "nvmlDeviceGetCount" in system:
            return int(self._answer(system, "nvmlDeviceGetCount"))
        return len(self._devices())

    def _devices(self) -> List[Mapping[str, Any]]:
        return list(self._data.get("devices", []))

    def device(self, index: int, fn: str, *args: int) -> Any:
        self.init()
        devices = self._devices()
        if not 0 <= index < len(devices):
            raise NvmlError("NVML_ERROR_INVALID_ARGUMENT", f"no device {index}")
        key = f"{fn}({','.join(str(a) for a in args)})" if args else fn
        return self._answer(devices[index], key)
