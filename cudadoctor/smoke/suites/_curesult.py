"""What a CUresult means: the driver suite's table of CUDA driver API error codes, the hint a user
can act on for the codes that mean a broken stack, the codes after which a context is lost, and
:class:`CudaError`, raised by :class:`_cuda_driver.Driver` when a call fails.

Part of the driver smoke suite (``driver_suite.py``); standard library only.
"""

from __future__ import annotations

from typing import Dict, Optional

# CUresult codes and names, generated from the `CUresult` enum (`typedef enum cudaError_enum`)
# of cuda.h in the CUDA 13.0 toolkit (CUDA_VERSION 13000; /usr/local/cuda-13.0/include/cuda.h):
#   sed -n '/^typedef enum cudaError_enum {/,/^} CUresult;/p' cuda.h \
#     | grep -E '^\s+CUDA_[A-Z0-9_]+\s*=\s*[0-9]+' | sed -E 's/^\s+(CUDA_\w+)\s*=\s*([0-9]+).*/\2: "\1",/'
# tests/test_smoke_driver.py compares it with the header when the header is there. A newer
# driver may return a code missing here: cuGetErrorName (asked first) names it then.
CURESULT_NAMES: Dict[int, str] = {
    0: "CUDA_SUCCESS",
    1: "CUDA_ERROR_INVALID_VALUE",
    2: "CUDA_ERROR_OUT_OF_MEMORY",
    3: "CUDA_ERROR_NOT_INITIALIZED",
    4: "CUDA_ERROR_DEINITIALIZED",
    5: "CUDA_ERROR_PROFILER_DISABLED",
    6: "CUDA_ERROR_PROFILER_NOT_INITIALIZED",
    7: "CUDA_ERROR_PROFILER_ALREADY_STARTED",
    8: "CUDA_ERROR_PROFILER_ALREADY_STOPPED",
    34: "CUDA_ERROR_STUB_LIBRARY",
    36: "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER",
    46: "CUDA_ERROR_DEVICE_UNAVAILABLE",
    100: "CUDA_ERROR_NO_DEVICE",
    101: "CUDA_ERROR_INVALID_DEVICE",
    102: "CUDA_ERROR_DEVICE_NOT_LICENSED",
    200: "CUDA_ERROR_INVALID_IMAGE",
    201: "CUDA_ERROR_INVALID_CONTEXT",
    202: "CUDA_ERROR_CONTEXT_ALREADY_CURRENT",
    205: "CUDA_ERROR_MAP_FAILED",
    206: "CUDA_ERROR_UNMAP_FAILED",
    207: "CUDA_ERROR_ARRAY_IS_MAPPED",
    208: "CUDA_ERROR_ALREADY_MAPPED",
    209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
    210: "CUDA_ERROR_ALREADY_ACQUIRED",
    211: "CUDA_ERROR_NOT_MAPPED",
    212: "CUDA_ERROR_NOT_MAPPED_AS_ARRAY",
    213: "CUDA_ERROR_NOT_MAPPED_AS_POINTER",
    214: "CUDA_ERROR_ECC_UNCORRECTABLE",
    215: "CUDA_ERROR_UNSUPPORTED_LIMIT",
    216: "CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
    217: "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
    218: "CUDA_ERROR_INVALID_PTX",
    219: "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT",
    220: "CUDA_ERROR_NVLINK_UNCORRECTABLE",
    221: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
    222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
    223: "CUDA_ERROR_JIT_COMPILATION_DISABLED",
    224: "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY",
    225: "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC",
    226: "CUDA_ERROR_CONTAINED",
    300: "CUDA_ERROR_INVALID_SOURCE",
    301: "CUDA_ERROR_FILE_NOT_FOUND",
    302: "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND",
    303: "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
    304: "CUDA_ERROR_OPERATING_SYSTEM",
    400: "CUDA_ERROR_INVALID_HANDLE",
    401: "CUDA_ERROR_ILLEGAL_STATE",
    402: "CUDA_ERROR_LOSSY_QUERY",
    500: "CUDA_ERROR_NOT_FOUND",
    600: "CUDA_ERROR_NOT_READY",
    700: "CUDA_ERROR_ILLEGAL_ADDRESS",
    701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
    702: "CUDA_ERROR_LAUNCH_TIMEOUT",
    703: "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING",
    704: "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
    705: "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
    708: "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE",
    709: "CUDA_ERROR_CONTEXT_IS_DESTROYED",
    710: "CUDA_ERROR_ASSERT",
    711: "CUDA_ERROR_TOO_MANY_PEERS",
    712: "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
    713: "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
    714: "CUDA_ERROR_HARDWARE_STACK_ERROR",
    715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    716: "CUDA_ERROR_MISALIGNED_ADDRESS",
    717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
    718: "CUDA_ERROR_INVALID_PC",
    719: "CUDA_ERROR_LAUNCH_FAILED",
    720: "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
    721: "CUDA_ERROR_TENSOR_MEMORY_LEAK",
    800: "CUDA_ERROR_NOT_PERMITTED",
    801: "CUDA_ERROR_NOT_SUPPORTED",
    802: "CUDA_ERROR_SYSTEM_NOT_READY",
    803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
    804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
    805: "CUDA_ERROR_MPS_CONNECTION_FAILED",
    806: "CUDA_ERROR_MPS_RPC_FAILURE",
    807: "CUDA_ERROR_MPS_SERVER_NOT_READY",
    808: "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED",
    809: "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED",
    810: "CUDA_ERROR_MPS_CLIENT_TERMINATED",
    811: "CUDA_ERROR_CDP_NOT_SUPPORTED",
    812: "CUDA_ERROR_CDP_VERSION_MISMATCH",
    900: "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
    901: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    902: "CUDA_ERROR_STREAM_CAPTURE_MERGE",
    903: "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
    904: "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
    905: "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
    906: "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
    907: "CUDA_ERROR_CAPTURED_EVENT",
    908: "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
    909: "CUDA_ERROR_TIMEOUT",
    910: "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
    911: "CUDA_ERROR_EXTERNAL_DEVICE",
    912: "CUDA_ERROR_INVALID_CLUSTER_SIZE",
    913: "CUDA_ERROR_FUNCTION_NOT_LOADED",
    914: "CUDA_ERROR_INVALID_RESOURCE_TYPE",
    915: "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION",
    916: "CUDA_ERROR_KEY_ROTATION",
    999: "CUDA_ERROR_UNKNOWN",
}

# What a user can do about the codes that mean a broken stack rather than a broken kernel.
CURESULT_HINTS: Dict[str, str] = {
    "CUDA_ERROR_STUB_LIBRARY": "the libcuda loaded is the CUDA toolkit's stub, not the driver's: "
                               "remove the toolkit's lib64/stubs folder from the library path",
    "CUDA_ERROR_NO_DEVICE": "no CUDA GPU is visible to this process",
    "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH": "the user-space driver (libcuda) and the loaded kernel module "
                                         "are different versions: reboot, or reinstall one driver version",
    "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE": "a forward-compatibility libcuda (cuda-compat) is loaded on a "
                                                 "GPU that does not support forward compatibility",
    "CUDA_ERROR_SYSTEM_NOT_READY": "a driver daemon the system needs is not running "
                                   "(on NVSwitch systems: nvidia-fabricmanager)",
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": "the driver is older than the PTX ISA version of the module",
    "CUDA_ERROR_JIT_COMPILER_NOT_FOUND": "the driver's PTX JIT library (libnvidia-ptxjitcompiler) is missing: "
                                         "an incomplete driver install, or a container without it",
    "CUDA_ERROR_DEVICE_UNAVAILABLE": "the GPU is in exclusive-process or prohibited compute mode, "
                                     "or in use by another process",
    "CUDA_ERROR_OPERATING_SYSTEM": "an OS call failed: often /dev/nvidia* missing or not accessible",
    "CUDA_ERROR_INVALID_DEVICE": "the device index does not exist (check CUDA_VISIBLE_DEVICES)",
    "CUDA_ERROR_ECC_UNCORRECTABLE": "an uncorrectable ECC error: a hardware fault, see nvidia-smi -q -d ECC",
    "CUDA_ERROR_NVLINK_UNCORRECTABLE": "an uncorrectable NVLink error: a hardware fault",
    "CUDA_ERROR_UNKNOWN": "at cuInit this often means the nvidia-uvm kernel module is not loaded "
                          "(/dev/nvidia-uvm missing)",
}

# After these a context is unusable: the GPU's remaining tests are skipped, not re-failed.
STICKY_ERRORS = frozenset({
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_ASSERT", "CUDA_ERROR_LAUNCH_TIMEOUT",
    "CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_NVLINK_UNCORRECTABLE", "CUDA_ERROR_CONTEXT_IS_DESTROYED",
    "CUDA_ERROR_DEINITIALIZED", "CUDA_ERROR_CONTAINED", "CUDA_ERROR_UNKNOWN",
})


def curesult_name(code: int) -> str:
    """The name of CUresult ``code`` from :data:`CURESULT_NAMES` (``CUresult <n>`` if unknown)."""
    return CURESULT_NAMES.get(code, f"CUresult {code}")


class CudaError(RuntimeError):
    """A driver call returned an error: the call, the code and its name (``str`` carries the
    name, so the protocol's ``decode_cuda_error`` finds it)."""

    def __init__(self, call: str, code: int, name: str, text: Optional[str] = None, detail: str = "") -> None:
        self.call, self.code, self.name, self.text = call, code, name, text
        message = f"{call} returned {name} ({code})"
        if text:
            message += f": {text}"
        hint = CURESULT_HINTS.get(name)
        if hint:
            message += f" [{hint}]"
        if detail:
            message += f"; {detail}"
        super().__init__(message)

