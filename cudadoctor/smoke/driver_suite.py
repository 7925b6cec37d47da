"""The driver smoke suite: the CUDA driver API through ctypes, no framework needed.

Loads ``libcuda.so.1`` (``nvcuda.dll`` on Windows), initialises the driver, lists the devices
and their attributes, retains each selected GPU's primary context, has the driver JIT-compile
an embedded PTX module (:data:`PTX`), launches its kernels (vector add, saxpy, a block
reduction) and checks their results on the host, times a device-to-device copy, and frees
everything. ``standard`` adds a memory pattern test over a large share of free memory and
pinned host<->device bandwidths; ``stress`` repeats kernels and pattern passes for
``--duration`` seconds on every selected GPU at once. Only the standard library is used, so it
proves a machine with a driver and nothing else can run CUDA work; if this suite passes and a
framework's suite fails, the framework's install is at fault, not the driver.

Run as a script (``python driver_suite.py --tier quick``) it prints one JSON line
(``_protocol``). Besides the protocol's arguments it takes ``--expect-gpu``: the parent saw
NVIDIA GPUs (NVML, PCI), so no ``libcuda.so.1`` or ``CUDA_ERROR_NO_DEVICE`` is a failure, not a
skip. Without it, a machine with no driver or no visible GPU gives ``skipped``.
"""

from __future__ import annotations

import array
import ctypes
import os
import random
import struct
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

try:  # imported as cudadoctor.smoke.driver_suite (tests)
    from . import _protocol
except ImportError:  # run by path: this folder is sys.path[0]
    import _protocol  # type: ignore[no-redef,import-not-found]

SUITE = "driver"

# --------------------------------------------------------------------------- CUresult names

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


# --------------------------------------------------------------------------- the PTX module

# Written by hand. `.version 6.0` (PTX ISA 6.0, CUDA 9.0, drivers >= 384) and `.target sm_50`
# (Maxwell, the oldest architecture a current driver still runs): the driver JITs PTX for any
# GPU whose compute capability is at least the target, and every driver since CUDA 9.0 reads
# ISA 6.0, so this module loads on every GPU and driver that a framework could use. A newer ISA
# would turn an old driver into CUDA_ERROR_UNSUPPORTED_PTX_VERSION, which is a toolchain/driver
# mismatch this suite must not create itself. Nothing here needs more than sm_50 (atom.min.u64
# needs sm_32). ptxas 13.0 assembles it for sm_75 (tests/test_smoke_driver.py), proving it valid.
# Every kernel takes a grid-stride loop, so any grid size covers any n. reduce_sum_u32 needs a
# power-of-two block of at most 256 threads (REDUCE_BLOCK).
# pattern_word(i, seed): x = lo32(i) * 0x9E3779B1 + (seed ^ hi32(i)), then lowbias32 (xor-shift
# 16, * 0x7FEB352D, xor-shift 15, * 0x846CA68B, xor-shift 16); :func:`pattern_word` mirrors it.
PTX = r"""
.version 6.0
.target sm_50
.address_size 64

// c[i] = a[i] + b[i] (u32, wrapping)
.visible .entry vec_add_u32(
    .param .u64 p_a,
    .param .u64 p_b,
    .param .u64 p_c,
    .param .u32 p_n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [p_a];
    ld.param.u64 %rd2, [p_b];
    ld.param.u64 %rd3, [p_c];
    ld.param.u32 %r1, [p_n];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    cvta.to.global.u64 %rd3, %rd3;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.u32 %r5, %r2, %r3, %r4;
    mov.u32 %r6, %nctaid.x;
    mul.lo.u32 %r7, %r6, %r3;
VA_LOOP:
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra VA_DONE;
    mul.wide.u32 %rd4, %r5, 4;
    add.u64 %rd5, %rd1, %rd4;
    add.u64 %rd6, %rd2, %rd4;
    add.u64 %rd7, %rd3, %rd4;
    ld.global.u32 %r8, [%rd5];
    ld.global.u32 %r9, [%rd6];
    add.u32 %r8, %r8, %r9;
    st.global.u32 [%rd7], %r8;
    add.u32 %r5, %r5, %r7;
    bra.uni VA_LOOP;
VA_DONE:
    ret;
}

// y[i] = fma(alpha, x[i], y[i]) (f32, round to nearest even)
.visible .entry saxpy_f32(
    .param .f32 p_alpha,
    .param .u64 p_x,
    .param .u64 p_y,
    .param .u32 p_n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .f32 %f<5>;
    .reg .b64 %rd<6>;

    ld.param.f32 %f1, [p_alpha];
    ld.param.u64 %rd1, [p_x];
    ld.param.u64 %rd2, [p_y];
    ld.param.u32 %r1, [p_n];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.u32 %r5, %r2, %r3, %r4;
    mov.u32 %r6, %nctaid.x;
    mul.lo.u32 %r7, %r6, %r3;
SX_LOOP:
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra SX_DONE;
    mul.wide.u32 %rd3, %r5, 4;
    add.u64 %rd4, %rd1, %rd3;
    add.u64 %rd5, %rd2, %rd3;
    ld.global.f32 %f2, [%rd4];
    ld.global.f32 %f3, [%rd5];
    fma.rn.f32 %f4, %f1, %f2, %f3;
    st.global.f32 [%rd5], %f4;
    add.u32 %r5, %r5, %r7;
    bra.uni SX_LOOP;
SX_DONE:
    ret;
}

// out[blockIdx.x] = sum (u64) of the in[i] (u32) this block's threads visit in a grid-stride
// loop, reduced through shared memory; blockDim.x a power of two <= 256
.visible .entry reduce_sum_u32(
    .param .u64 p_in,
    .param .u64 p_out,
    .param .u32 p_n
)
{
    .reg .pred %p<3>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<12>;
    .shared .align 8 .b64 sdata[256];

    ld.param.u64 %rd1, [p_in];
    ld.param.u64 %rd2, [p_out];
    ld.param.u32 %r1, [p_n];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.u32 %r5, %r2, %r3, %r4;
    mov.u32 %r6, %nctaid.x;
    mul.lo.u32 %r7, %r6, %r3;
    mov.u64 %rd3, 0;
RS_LOOP:
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra RS_LOADED;
    mul.wide.u32 %rd4, %r5, 4;
    add.u64 %rd5, %rd1, %rd4;
    ld.global.u32 %r8, [%rd5];
    cvt.u64.u32 %rd6, %r8;
    add.u64 %rd3, %rd3, %rd6;
    add.u32 %r5, %r5, %r7;
    bra.uni RS_LOOP;
RS_LOADED:
    mov.u64 %rd7, sdata;
    mul.wide.u32 %rd8, %r4, 8;
    add.u64 %rd9, %rd7, %rd8;
    st.shared.u64 [%rd9], %rd3;
    bar.sync 0;
    shr.u32 %r9, %r3, 1;
RS_TREE:
    setp.eq.u32 %p1, %r9, 0;
    @%p1 bra RS_WRITE;
    setp.lt.u32 %p2, %r4, %r9;
    @!%p2 bra RS_NEXT;
    mul.wide.u32 %rd10, %r9, 8;
    add.u64 %rd10, %rd9, %rd10;
    ld.shared.u64 %rd11, [%rd10];
    ld.shared.u64 %rd6, [%rd9];
    add.u64 %rd6, %rd6, %rd11;
    st.shared.u64 [%rd9], %rd6;
RS_NEXT:
    bar.sync 0;
    shr.u32 %r9, %r9, 1;
    bra.uni RS_TREE;
RS_WRITE:
    setp.ne.u32 %p1, %r4, 0;
    @%p1 bra RS_DONE;
    ld.shared.u64 %rd6, [sdata];
    mul.wide.u32 %rd4, %r2, 8;
    add.u64 %rd5, %rd2, %rd4;
    st.global.u64 [%rd5], %rd6;
RS_DONE:
    ret;
}

// p[i] = pattern_word(i, seed) for i < n (u64 count of u32 words)
.visible .entry pattern_fill(
    .param .u64 p_ptr,
    .param .u64 p_n,
    .param .u32 p_seed
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<10>;

    ld.param.u64 %rd1, [p_ptr];
    ld.param.u64 %rd2, [p_n];
    ld.param.u32 %r1, [p_seed];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mul.wide.u32 %rd3, %r2, %r3;
    cvt.u64.u32 %rd4, %r4;
    add.u64 %rd3, %rd3, %rd4;
    mov.u32 %r5, %nctaid.x;
    mul.wide.u32 %rd5, %r5, %r3;
PF_LOOP:
    setp.ge.u64 %p1, %rd3, %rd2;
    @%p1 bra PF_DONE;
    cvt.u32.u64 %r6, %rd3;
    shr.u64 %rd6, %rd3, 32;
    cvt.u32.u64 %r7, %rd6;
    xor.b32 %r7, %r7, %r1;
    mad.lo.u32 %r8, %r6, 0x9E3779B1, %r7;
    shr.u32 %r9, %r8, 16;
    xor.b32 %r8, %r8, %r9;
    mul.lo.u32 %r8, %r8, 0x7FEB352D;
    shr.u32 %r9, %r8, 15;
    xor.b32 %r8, %r8, %r9;
    mul.lo.u32 %r8, %r8, 0x846CA68B;
    shr.u32 %r9, %r8, 16;
    xor.b32 %r8, %r8, %r9;
    shl.b64 %rd7, %rd3, 2;
    add.u64 %rd8, %rd1, %rd7;
    st.global.u32 [%rd8], %r8;
    add.u64 %rd3, %rd3, %rd5;
    bra.uni PF_LOOP;
PF_DONE:
    ret;
}

// for every i < n with p[i] != pattern_word(i, seed): err[0] += 1, err[1] = min(err[1], i)
.visible .entry pattern_check(
    .param .u64 p_ptr,
    .param .u64 p_n,
    .param .u32 p_seed,
    .param .u64 p_err
)
{
    .reg .pred %p<3>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<12>;

    ld.param.u64 %rd1, [p_ptr];
    ld.param.u64 %rd2, [p_n];
    ld.param.u32 %r1, [p_seed];
    ld.param.u64 %rd9, [p_err];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd9, %rd9;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mul.wide.u32 %rd3, %r2, %r3;
    cvt.u64.u32 %rd4, %r4;
    add.u64 %rd3, %rd3, %rd4;
    mov.u32 %r5, %nctaid.x;
    mul.wide.u32 %rd5, %r5, %r3;
PC_LOOP:
    setp.ge.u64 %p1, %rd3, %rd2;
    @%p1 bra PC_DONE;
    cvt.u32.u64 %r6, %rd3;
    shr.u64 %rd6, %rd3, 32;
    cvt.u32.u64 %r7, %rd6;
    xor.b32 %r7, %r7, %r1;
    mad.lo.u32 %r8, %r6, 0x9E3779B1, %r7;
    shr.u32 %r9, %r8, 16;
    xor.b32 %r8, %r8, %r9;
    mul.lo.u32 %r8, %r8, 0x7FEB352D;
    shr.u32 %r9, %r8, 15;
    xor.b32 %r8, %r8, %r9;
    mul.lo.u32 %r8, %r8, 0x846CA68B;
    shr.u32 %r9, %r8, 16;
    xor.b32 %r8, %r8, %r9;
    shl.b64 %rd7, %rd3, 2;
    add.u64 %rd8, %rd1, %rd7;
    ld.global.u32 %r10, [%rd8];
    setp.eq.u32 %p2, %r10, %r8;
    @%p2 bra PC_NEXT;
    atom.global.add.u64 %rd10, [%rd9], 1;
    atom.global.min.u64 %rd11, [%rd9+8], %rd3;
PC_NEXT:
    add.u64 %rd3, %rd3, %rd5;
    bra.uni PC_LOOP;
PC_DONE:
    ret;
}
"""

PTX_ISA = "6.0"
PTX_TARGET = "sm_50"
KERNELS: Tuple[str, ...] = ("vec_add_u32", "saxpy_f32", "reduce_sum_u32", "pattern_fill", "pattern_check")
BLOCK = 256  # threads per block for every launch
REDUCE_BLOCK = 256  # reduce_sum_u32's shared array holds 256 partial sums
NO_ERROR_INDEX = 0xFFFFFFFFFFFFFFFF  # err[1] before any mismatch

# --------------------------------------------------------------------------- pure helpers

MASK32 = 0xFFFFFFFF
GIB = 1 << 30
MIB = 1 << 20


def pattern_word(index: int, seed: int) -> int:
    """The u32 that ``pattern_fill`` writes at word ``index`` for ``seed`` (a mirror of the PTX)."""
    x = ((index & MASK32) * 0x9E3779B1 + ((seed ^ (index >> 32)) & MASK32)) & MASK32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & MASK32
    x ^= x >> 15
    x = (x * 0x846CA68B) & MASK32
    x ^= x >> 16
    return x


def pattern_seed(pass_index: int, chunk_index: int) -> int:
    """A distinct seed per pass and chunk, so a chunk aliasing another one (an addressing
    fault) reads the other's pattern and fails the check."""
    return pattern_word(pass_index * 0x10001 + chunk_index + 1, 0x5EED5EED) | 1


def f32(x: float) -> float:
    """``x`` rounded to the nearest float32 (overflow gives an infinity)."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", x))[0])
    except OverflowError:
        return float("inf") if x > 0 else float("-inf")


def random_u32(n: int, seed: int) -> "array.array[int]":
    """``n`` deterministic pseudo-random u32 values."""
    out = array.array("I")
    out.frombytes(random.Random(seed).randbytes(4 * n))
    if sys.byteorder != "little":
        out.byteswap()
    return out


def random_f32(n: int, seed: int) -> "array.array[float]":
    """``n`` deterministic float32 values of either sign, magnitudes in [1/8, 2) with random
    23-bit mantissas (no NaN, infinity or denormal): random bits with the exponent's top six
    bits forced to 011111 (masked as one big integer, so it takes milliseconds)."""
    raw = random.Random(seed).randbytes(4 * n)
    keep = int.from_bytes(struct.pack("<I", 0x81FFFFFF) * n, "little")
    force = int.from_bytes(struct.pack("<I", 0x3E000000) * n, "little")
    bits = (int.from_bytes(raw, "little") & keep) | force
    out = array.array("f")
    out.frombytes(bits.to_bytes(4 * n, "little"))
    if sys.byteorder != "little":
        out.byteswap()
    return out


def vector_add_reference(a: Sequence[int], b: Sequence[int]) -> "array.array[int]":
    """``(a + b) mod 2**32`` element-wise: what vec_add_u32 computes."""
    return array.array("I", ((x + y) & MASK32 for x, y in zip(a, b)))


def saxpy_reference(alpha: float, x: Sequence[float], y: Sequence[float]) -> "array.array[float]":
    """``alpha*x + y`` in double (the product of two float32 is exact there), rounded to float32."""
    return array.array("f", (alpha * xi + yi for xi, yi in zip(x, y)))


SAXPY_RTOL = 1e-6
"""Saxpy bound: ``|gpu - ref| <= SAXPY_RTOL * (|alpha*x| + |y|)``. fma.rn.f32 and the host's
double-then-float32 value are each within half a float32 ulp (2**-24 relative) of the exact
``alpha*x + y``, itself at most ``|alpha*x| + |y|``: they differ by at most ~1.2e-7 of that, so
1e-6 leaves an 8x margin and still catches any wrong bit above the last few."""


def reduction_partials(values: Sequence[int], grid: int, block: int) -> List[int]:
    """The per-block u64 sums reduce_sum_u32 writes for ``values`` with ``grid`` x ``block``
    threads: block ``b`` visits runs of ``block`` elements starting at ``(b + k*grid) * block``."""
    partial = [0] * grid
    for run, start in enumerate(range(0, len(values), block)):
        partial[run % grid] += sum(values[start:start + block])
    return [p & 0xFFFFFFFFFFFFFFFF for p in partial]


class Mismatch:
    """How ``got`` differs from ``expected``: count, first index and both values there, and for
    floats the largest absolute error."""

    def __init__(self, count: int, first: int, got: Any, expected: Any, max_abs_error: float = 0.0) -> None:
        self.count = count
        self.first = first
        self.got = got
        self.expected = expected
        self.max_abs_error = max_abs_error

    def describe(self, total: int) -> str:
        return (f"{self.count} of {total} elements differ; first at [{self.first}]: "
                f"got {self.got!r}, expected {self.expected!r}")


def compare_exact(got: Sequence[Any], expected: Sequence[Any]) -> Optional[Mismatch]:
    """None when equal element by element (and in length), else the :class:`Mismatch`."""
    if len(got) == len(expected) and got == expected:
        return None
    if len(got) != len(expected):
        return Mismatch(abs(len(got) - len(expected)), min(len(got), len(expected)),
                        f"length {len(got)}", f"length {len(expected)}")
    count, first = 0, -1
    for i, (g, e) in enumerate(zip(got, expected)):
        if g != e:
            count += 1
            if first < 0:
                first = i
    return Mismatch(count, first, got[first], expected[first])


def compare_saxpy(alpha: float, x: Sequence[float], y0: Sequence[float], got: Sequence[float],
                  rtol: float = SAXPY_RTOL) -> Tuple[Optional[Mismatch], float]:
    """Check saxpy output ``got`` against ``alpha*x + y0`` within :data:`SAXPY_RTOL`:
    (the mismatch or None, the largest relative error seen). NaN/inf never pass."""
    expected = saxpy_reference(alpha, x, y0)
    if len(got) != len(expected):
        return Mismatch(abs(len(got) - len(expected)), 0, f"length {len(got)}", f"length {len(expected)}"), 0.0
    if got == expected:  # fma.rn and the double-then-float value agree almost always
        return None, 0.0
    count, first, max_abs, max_rel = 0, -1, 0.0, 0.0
    for i, (g, e) in enumerate(zip(got, expected)):
        scale = abs(alpha * x[i]) + abs(y0[i])
        err = abs(g - e)
        if not err <= rtol * scale:  # also catches NaN
            count += 1
            if first < 0:
                first = i
        if err == err:
            max_abs = max(max_abs, err)
            if scale > 0:
                max_rel = max(max_rel, err / scale)
    if count == 0:
        return None, max_rel
    return Mismatch(count, first, got[first], expected[first], max_abs), max_rel


def bandwidth_gbs(nbytes: float, seconds: float) -> float:
    """``nbytes`` moved in ``seconds`` as GB/s (10**9 bytes per second)."""
    if seconds <= 0 or nbytes < 0:
        raise ValueError(f"cannot compute a bandwidth from {nbytes} bytes in {seconds} s")
    return nbytes / seconds / 1e9


def theoretical_bandwidth_gbs(memory_clock_khz: int, bus_width_bits: int) -> Optional[float]:
    """The peak DRAM bandwidth from the device attributes, as NVIDIA's deviceQuery computes it:
    2 (double data rate) x memory clock x bus width. None when either attribute is 0 (unknown)."""
    if memory_clock_khz <= 0 or bus_width_bits <= 0:
        return None
    return 2.0 * memory_clock_khz * 1e3 * (bus_width_bits / 8) / 1e9


def grid_for(n: int, sm_count: int, block: int = BLOCK, per_sm: int = 8) -> int:
    """Blocks for ``n`` elements: enough to cover them, at most ``per_sm`` per SM (grid-stride
    loops cover the rest), at least 1."""
    return max(1, min((n + block - 1) // block, max(1, sm_count) * per_sm))


def plan_chunks(free_bytes: int, share: float, chunk_bytes: int, min_chunk: int = 16 * MIB) -> List[int]:
    """Sizes of the chunks that cover ``share`` of ``free_bytes`` (each a multiple of 4 bytes,
    at most ``chunk_bytes``; a last, smaller chunk when at least ``min_chunk``)."""
    target = int(max(0, free_bytes) * share) & ~3
    chunk_bytes = max(4, chunk_bytes & ~3)
    sizes = [chunk_bytes] * (target // chunk_bytes)
    rest = target - sum(sizes)
    if rest >= min_chunk or (not sizes and rest >= 4):
        sizes.append(rest & ~3)
    return sizes


def fit_to_budget(sizes: List[int], bytes_per_second: float, passes: int, budget_s: Optional[float]) -> List[int]:
    """The leading chunks of ``sizes`` a pattern test can write and read ``passes`` times within
    ``budget_s`` at ``bytes_per_second`` (all of them when there is no budget; at least one)."""
    if budget_s is None or bytes_per_second <= 0:
        return list(sizes)
    allowed = budget_s * bytes_per_second / (2.0 * max(1, passes))
    out: List[int] = []
    for size in sizes:
        if out and sum(out) + size > allowed:
            break
        out.append(size)
    return out


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


# --------------------------------------------------------------------------- ctypes bindings

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


class Driver:
    """The driver API calls the suite uses, over a loaded library (a real ctypes handle, or any
    object with the same callables, for tests). Each call raises :class:`CudaError` on failure."""

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

    def error_name(self, code: int) -> str:
        """The CUresult's name: cuGetErrorName when it knows it, else the cuda.h table."""
        try:
            out = ctypes.c_char_p()
            if self.fn("cuGetErrorName")(code, ctypes.byref(out)) == 0 and out.value:
                return out.value.decode("ascii", "replace")
        except Exception:
            pass
        return curesult_name(code)

    def error_text(self, code: int) -> Optional[str]:
        """cuGetErrorString's description, None when unavailable."""
        try:
            out = ctypes.c_char_p()
            if self.fn("cuGetErrorString")(code, ctypes.byref(out)) == 0 and out.value:
                return out.value.decode("utf-8", "replace")
        except Exception:
            pass
        return None

    def check(self, name: str, code: int, detail: str = "") -> None:
        if code != 0:
            raise CudaError(name, int(code), self.error_name(int(code)), self.error_text(int(code)), detail)

    def call(self, name: str, *args: Any) -> None:
        self.check(name, self.fn(name)(*args))

    # -- initialisation and devices

    def init(self) -> None:
        self.call("cuInit", 0)

    def driver_version(self) -> int:
        v = ctypes.c_int()
        self.call("cuDriverGetVersion", ctypes.byref(v))
        return v.value

    def device_count(self) -> int:
        v = ctypes.c_int()
        self.call("cuDeviceGetCount", ctypes.byref(v))
        return v.value

    def device(self, ordinal: int) -> int:
        v = ctypes.c_int()
        self.call("cuDeviceGet", ctypes.byref(v), ordinal)
        return v.value

    def device_name(self, dev: int) -> str:
        buf = ctypes.create_string_buffer(256)
        self.call("cuDeviceGetName", buf, 256, dev)
        return buf.value.decode("utf-8", "replace")

    def attribute(self, dev: int, attribute: int) -> int:
        v = ctypes.c_int()
        self.call("cuDeviceGetAttribute", ctypes.byref(v), attribute, dev)
        return v.value

    def total_memory(self, dev: int) -> int:
        v = ctypes.c_size_t()
        self.call("cuDeviceTotalMem_v2", ctypes.byref(v), dev)
        return v.value

    def pci_bus_id(self, dev: int) -> str:
        buf = ctypes.create_string_buffer(64)
        self.call("cuDeviceGetPCIBusId", buf, 64, dev)
        return buf.value.decode("ascii", "replace")

    def uuid(self, dev: int) -> str:
        buf = ctypes.create_string_buffer(16)
        self.call("cuDeviceGetUuid_v2", buf, dev)
        h = bytes(buf.raw[:16]).hex()
        return f"GPU-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"

    # -- contexts and memory

    def retain_primary_context(self, dev: int) -> int:
        ctx = ctypes.c_void_p()
        self.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        return ctx.value or 0

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
        ptr = ctypes.c_uint64()
        self.call("cuMemAlloc_v2", ctypes.byref(ptr), nbytes)
        return ptr.value

    def free(self, ptr: int) -> None:
        self.call("cuMemFree_v2", ptr)

    def alloc_host(self, nbytes: int) -> int:
        ptr = ctypes.c_void_p()
        self.call("cuMemAllocHost_v2", ctypes.byref(ptr), nbytes)
        return ptr.value or 0

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
        self.call("cuMemsetD32_v2", ptr, value & MASK32, count)

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
        fn = ctypes.c_void_p()
        self.call("cuModuleGetFunction", ctypes.byref(fn), ctypes.c_void_p(module), name.encode("ascii"))
        return fn.value or 0

    def launch(self, function: int, grid: int, block: int, args: Sequence[Any], shared: int = 0) -> None:
        """Launch ``function`` on the null stream; ``args`` are ctypes scalars (c_uint64 for a
        device pointer, c_uint32, c_float), kept alive through the call."""
        params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
        self.call("cuLaunchKernel", ctypes.c_void_p(function), grid, 1, 1, block, 1, 1, shared, None, params, None)

    # -- events

    def event(self) -> int:
        ev = ctypes.c_void_p()
        self.call("cuEventCreate", ctypes.byref(ev), 0)
        return ev.value or 0

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

    def device(self, nbytes: int) -> int:
        ptr = self.drv.alloc(nbytes)
        self._release.append(("cuMemFree_v2", lambda: self.drv.free(ptr)))
        return ptr

    def host(self, nbytes: int) -> int:
        ptr = self.drv.alloc_host(nbytes)
        self._release.append(("cuMemFreeHost", lambda: self.drv.free_host(ptr)))
        return ptr

    def event(self) -> int:
        ev = self.drv.event()
        self._release.append(("cuEventDestroy_v2", lambda: self.drv.destroy_event(ev)))
        return ev

    def release(self) -> None:
        while self._release:
            _, fn = self._release.pop()
            try:
                fn()
            except Exception as exc:
                self.errors.append(exc)


# --------------------------------------------------------------------------- sizes per tier


class Plan:
    """How much work each test does. The defaults suit the tier; tests shrink them."""

    def __init__(self, tier: str = "quick") -> None:
        self.tier = tier
        self.n = 1 << 20  # elements for vector add, saxpy, reduction
        self.d2d_bytes = 256 * MIB if tier == "quick" else GIB
        self.d2d_reps = 20
        self.h2d_bytes = 256 * MIB
        self.h2d_reps = 10
        self.pattern_share = 0.85  # of free memory, standard tier
        self.pattern_chunk = GIB
        self.pattern_passes = 2
        self.pattern_sample_words = 1 << 14  # words read back and checked on the host
        self.stress_share = 0.5  # of free memory per pattern pass, stress tier
        self.stress_duration = 60.0  # seconds, when --duration is not given
        self.stress_pattern_s = 2.0  # seconds of pattern passes between rounds of the kernels
        self.assumed_gbs = 50.0  # device bandwidth to size work by before one is measured

    @property
    def standard(self) -> bool:
        return self.tier in ("standard", "stress")


# --------------------------------------------------------------------------- one GPU


class Gpu:
    """What the suite knows about one selected GPU as it goes."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.device = -1
        self.name = ""
        self.attrs: Dict[str, int] = {}
        self.context = 0
        self.module = 0
        self.functions: Dict[str, int] = {}
        self.broken: Optional[str] = None  # why the remaining tests are skipped
        self.d2d_gbs: Optional[float] = None  # measured device copy bandwidth (bytes copied per s)

    @property
    def sm_count(self) -> int:
        return self.attrs.get("sm_count", 0) or 1


def _u64(v: int) -> ctypes.c_uint64:
    return ctypes.c_uint64(v)


def _u32(v: int) -> ctypes.c_uint32:
    return ctypes.c_uint32(v & MASK32)


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


def run_vector_add(drv: Driver, gpu: Gpu, n: int, seed: int = 1) -> Tuple[Optional[str], Dict[str, float]]:
    """Launch vec_add_u32 on ``n`` random u32 pairs; (failure text or None, metrics)."""
    a, b = random_u32(n, seed), random_u32(n, seed + 1)
    with Resources(drv) as res:
        da, db, dc = res.device(4 * n), res.device(4 * n), res.device(4 * n)
        upload(drv, da, a)
        upload(drv, db, b)
        drv.memset32(dc, 0xDEADBEEF, n)
        grid = grid_for(n, gpu.sm_count)
        drv.launch(gpu.functions["vec_add_u32"], grid, BLOCK, [_u64(da), _u64(db), _u64(dc), _u32(n)])
        drv.synchronize()
        got = download(drv, dc, "I", n)
    bad = compare_exact(got, vector_add_reference(a, b))
    return (bad.describe(n) if bad else None), {"elements": n, "mismatches": bad.count if bad else 0}


def run_saxpy(drv: Driver, gpu: Gpu, n: int, seed: int = 3) -> Tuple[Optional[str], Dict[str, float]]:
    """Launch saxpy_f32 on ``n`` random floats; (failure text or None, metrics)."""
    alpha = f32(1.7182817)
    x, y = random_f32(n, seed), random_f32(n, seed + 1)
    with Resources(drv) as res:
        dx, dy = res.device(4 * n), res.device(4 * n)
        upload(drv, dx, x)
        upload(drv, dy, y)
        drv.launch(gpu.functions["saxpy_f32"], grid_for(n, gpu.sm_count), BLOCK,
                   [ctypes.c_float(alpha), _u64(dx), _u64(dy), _u32(n)])
        drv.synchronize()
        got = download(drv, dy, "f", n)
    bad, max_rel = compare_saxpy(alpha, x, y, got)
    metrics = {"elements": n, "max_rel_error": max_rel, "rtol": SAXPY_RTOL, "mismatches": bad.count if bad else 0}
    if bad:
        return f"{bad.describe(n)} (tolerance {SAXPY_RTOL:g} x (|a*x|+|y|))", metrics
    return None, metrics


def run_reduction(drv: Driver, gpu: Gpu, n: int, seed: int = 5) -> Tuple[Optional[str], Dict[str, float]]:
    """Launch reduce_sum_u32 over ``n`` random u32 (the total overflows 32 bits, so the u64
    accumulation is tested); every block's partial and the total must match exactly."""
    values = random_u32(n, seed)
    grid = grid_for(n, gpu.sm_count, REDUCE_BLOCK, per_sm=4)
    with Resources(drv) as res:
        din, dout = res.device(4 * n), res.device(8 * grid)
        upload(drv, din, values)
        drv.memset32(dout, 0xFFFFFFFF, 2 * grid)
        drv.launch(gpu.functions["reduce_sum_u32"], grid, REDUCE_BLOCK, [_u64(din), _u64(dout), _u32(n)])
        drv.synchronize()
        got = list(download(drv, dout, "Q", grid))
    expected = reduction_partials(values, grid, REDUCE_BLOCK)
    total, want = sum(got), sum(values)
    metrics: Dict[str, float] = {"elements": n, "blocks": grid}
    bad = compare_exact(got, expected)
    if bad:
        return f"block partial sums: {bad.describe(grid)}; total {total}, expected {want}", metrics
    if total != want:  # cannot happen when every partial matches; kept as the stated invariant
        return f"total {total}, expected {want}", metrics
    return None, metrics


def run_d2d(drv: Driver, gpu: Gpu, nbytes: int, reps: int) -> Tuple[Optional[str], Dict[str, float]]:
    """Time ``reps`` device-to-device copies of ``nbytes`` with events; check the copy."""
    nbytes &= ~3
    words = nbytes // 4
    with Resources(drv) as res:
        src, dst = res.device(nbytes), res.device(nbytes)
        start, end = res.event(), res.event()
        drv.memset32(src, 0xA5C3F00F, words)
        drv.memset32(dst, 0, words)
        drv.dtod_async(dst, src, nbytes)  # warm-up
        drv.synchronize()
        drv.record(start)
        for _ in range(reps):
            drv.dtod_async(dst, src, nbytes)
        drv.record(end)
        seconds = drv.elapsed_s(start, end)
        sample = min(words, 1024)
        head = download(drv, dst, "I", sample)
        tail = download(drv, dst + nbytes - 4 * sample, "I", sample)
    metrics: Dict[str, float] = {"bytes": nbytes, "reps": reps, "seconds": seconds}
    if any(w != 0xA5C3F00F for w in head) or any(w != 0xA5C3F00F for w in tail):
        return "the copied data differs from the source", metrics
    if seconds <= 0:
        return "the events measured no time for the copies", metrics
    gbs = bandwidth_gbs(nbytes * reps, seconds)
    gpu.d2d_gbs = gbs
    metrics["bandwidth_gbs"] = gbs  # bytes copied per second
    metrics["traffic_gbs"] = 2 * gbs  # each byte is read and written: DRAM traffic
    peak = theoretical_bandwidth_gbs(gpu.attrs.get("memory_clock_khz", 0), gpu.attrs.get("memory_bus_width_bits", 0))
    if peak:
        metrics["theoretical_gbs"] = peak
        metrics["fraction_of_theoretical"] = 2 * gbs / peak
    return None, metrics


def run_host_copy(drv: Driver, gpu: Gpu, nbytes: int, reps: int, to_device: bool) -> Tuple[Optional[str], Dict[str, float]]:
    """Time ``reps`` pinned host<->device copies of ``nbytes``; check the data round-trips."""
    nbytes &= ~3
    with Resources(drv) as res:
        host_src, host_dst = res.host(nbytes), res.host(nbytes)
        dev = res.device(nbytes)
        start, end = res.event(), res.event()
        seed_words = random_u32(1024, 7 if to_device else 8).tobytes()
        for offset in range(0, nbytes, len(seed_words)):
            ctypes.memmove(host_src + offset, seed_words, min(len(seed_words), nbytes - offset))
        ctypes.memset(host_dst, 0, nbytes)
        drv.htod_async(dev, host_src, nbytes)  # warm-up, and the data for the device->host run
        drv.synchronize()
        drv.record(start)
        for _ in range(reps):
            if to_device:
                drv.htod_async(dev, host_src, nbytes)
            else:
                drv.dtoh_async(host_dst, dev, nbytes)
        drv.record(end)
        seconds = drv.elapsed_s(start, end)
        if to_device:
            drv.dtoh_async(host_dst, dev, nbytes)
            drv.synchronize()
        same = _host_equal(host_src, host_dst, nbytes)
    metrics: Dict[str, float] = {"bytes": nbytes, "reps": reps, "seconds": seconds}
    if not same:
        return "the data read back differs from what was written", metrics
    if seconds <= 0:
        return "the events measured no time for the copies", metrics
    metrics["bandwidth_gbs"] = bandwidth_gbs(nbytes * reps, seconds)
    return None, metrics


def _host_equal(a: int, b: int, nbytes: int, step: int = 16 * MIB) -> bool:
    for offset in range(0, nbytes, step):
        size = min(step, nbytes - offset)
        if ctypes.string_at(a + offset, size) != ctypes.string_at(b + offset, size):
            return False
    return True


class PatternOutcome:
    """What pattern passes found: mismatching words, where the first was, what it held."""

    def __init__(self) -> None:
        self.errors = 0
        self.first: Optional[Tuple[int, int, int]] = None  # (pass, chunk, word index)
        self.observed: Optional[Tuple[int, int]] = None  # (word read back, word expected) there
        self.bytes_checked = 0

    def where(self, chunks: Sequence[int]) -> str:
        """``first in pass P, chunk C, word I (device address A): read X, expected Y (bits Z)``."""
        if self.first is None:
            return ""
        p, c, i = self.first
        text = f"first in pass {p}, chunk {c}, word {i} (device address {chunks[c] + 4 * i:#x})"
        if self.observed is not None:
            got, want = self.observed
            text += f": read {got:#010x}, expected {want:#010x} (bits {got ^ want:#010x} differ)"
        return text


def pattern_pass(drv: Driver, gpu: Gpu, chunks: Sequence[int], sizes: Sequence[int], pass_index: int,
                 err_buf: int, out: PatternOutcome) -> None:
    """Fill every chunk with its pattern, then check every chunk (so a write that lands in
    another chunk is caught), adding mismatches to ``out``."""
    grid = gpu.sm_count * 8
    for c, (ptr, size) in enumerate(zip(chunks, sizes)):
        drv.launch(gpu.functions["pattern_fill"], grid, BLOCK, [_u64(ptr), _u64(size // 4), _u32(pattern_seed(pass_index, c))])
    drv.synchronize()
    for c, (ptr, size) in enumerate(zip(chunks, sizes)):
        count, first = check_chunk(drv, gpu, ptr, size // 4, pattern_seed(pass_index, c), err_buf)
        out.bytes_checked += size
        if count:
            out.errors += count
            if out.first is None:
                out.first = (pass_index, c, first)
                if 0 <= first < size // 4:
                    (got,) = download(drv, ptr + 4 * first, "I", 1)
                    out.observed = (got, pattern_word(first, pattern_seed(pass_index, c)))


def check_chunk(drv: Driver, gpu: Gpu, ptr: int, words: int, seed: int, err_buf: int) -> Tuple[int, int]:
    """Run pattern_check over one chunk: (mismatching words, first mismatching index)."""
    upload(drv, err_buf, array.array("Q", [0, NO_ERROR_INDEX]))
    drv.launch(gpu.functions["pattern_check"], gpu.sm_count * 8, BLOCK, [_u64(ptr), _u64(words), _u32(seed), _u64(err_buf)])
    drv.synchronize()
    count, first = download(drv, err_buf, "Q", 2)
    return int(count), int(first)


def allocate_chunks(drv: Driver, res: Resources, sizes: Sequence[int]) -> Tuple[List[int], List[int]]:
    """Allocate as many of ``sizes`` as the GPU gives (stopping at CUDA_ERROR_OUT_OF_MEMORY)."""
    ptrs: List[int] = []
    for size in sizes:
        try:
            ptrs.append(res.device(size))
        except CudaError as exc:
            if exc.name != "CUDA_ERROR_OUT_OF_MEMORY" or not ptrs:
                raise
            break
    return ptrs, list(sizes[: len(ptrs)])


def run_memory_pattern(drv: Driver, gpu: Gpu, plan: Plan, budget_s: Optional[float]) -> Tuple[Optional[str], Dict[str, float]]:
    """Write and verify pseudo-random patterns over ``plan.pattern_share`` of free memory in
    chunks, ``plan.pattern_passes`` times; then prove the checker catches a corrupted word and
    that the device's pattern equals the host's :func:`pattern_word` on a sample."""
    free, total = drv.memory_info()
    bw = (gpu.d2d_gbs or plan.assumed_gbs) * 1e9
    sizes = fit_to_budget(plan_chunks(free, plan.pattern_share, plan.pattern_chunk), bw, plan.pattern_passes, budget_s)
    if not sizes:
        raise _protocol.Skip(f"not enough free memory for a pattern test ({free} bytes free)")
    out = PatternOutcome()
    metrics: Dict[str, float] = {"free_bytes": free, "total_bytes": total}
    with Resources(drv) as res:
        err_buf = res.device(16)
        chunks, sizes = allocate_chunks(drv, res, sizes)
        start = time.perf_counter()
        for p in range(plan.pattern_passes):
            pattern_pass(drv, gpu, chunks, sizes, p, err_buf, out)
        seconds = time.perf_counter() - start
        tested = sum(sizes)
        metrics.update({"bytes_tested": tested, "share_of_free": tested / free if free else 0.0,
                        "chunks": len(chunks), "passes": plan.pattern_passes, "errors": out.errors})
        if seconds > 0:
            metrics["pattern_gbs"] = bandwidth_gbs(2 * out.bytes_checked, seconds)
        if out.errors:
            return (f"{out.errors} words differ from the pattern written over {tested / GIB:.2f} GiB; "
                    f"{out.where(chunks)}"), metrics
        # the device's hash is the host's: read back a sample of the last pass's first chunk
        last = plan.pattern_passes - 1
        sample = min(plan.pattern_sample_words, sizes[0] // 4)
        got = download(drv, chunks[0], "I", sample)
        want = array.array("I", (pattern_word(i, pattern_seed(last, 0)) for i in range(sample)))
        bad = compare_exact(got, want)
        if bad:
            return f"the device pattern differs from the host's: {bad.describe(sample)}", metrics
        # the checker sees a corrupted word
        victim = sizes[0] // 4 - 1
        drv.memset32(chunks[0] + 4 * victim, pattern_word(victim, pattern_seed(last, 0)) ^ 1, 1)
        count, first = check_chunk(drv, gpu, chunks[0], sizes[0] // 4, pattern_seed(last, 0), err_buf)
        if (count, first) != (1, victim):
            return (f"the checker missed an injected error: counted {count} (first at {first}), "
                    f"expected 1 at {victim}"), metrics
    return None, metrics


# --------------------------------------------------------------------------- the suite


def _expect_gpu(argv: Sequence[str]) -> Tuple[bool, List[str]]:
    """Take ``--expect-gpu`` out of ``argv`` (the protocol's parser does not know it)."""
    rest = [a for a in argv if a != "--expect-gpu"]
    return len(rest) != len(argv), rest


def _no_gpu(rec: _protocol.Recorder, expect_gpu: bool, name: str, reason: str, cuda_error: Optional[str] = None) -> None:
    """No driver or no visible GPU: a failed test when a GPU was expected, else a skipped suite."""
    if expect_gpu:
        rec.add(name, "failed", message=reason, cuda_error=cuda_error)
    else:
        rec.add(name, "skipped", message=reason, cuda_error=cuda_error)
        rec.skip_suite(reason)


def _visible_devices_note() -> str:
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    return f" (CUDA_VISIBLE_DEVICES={value!r})" if value is not None else ""


def gpu_test(rec: _protocol.Recorder, drv: Driver, gpu: Gpu, name: str, fn: Callable[[_protocol.TestCase], None],
             needs_module: bool = False) -> _protocol.TestCase:
    """Run ``fn(case)`` as test ``name`` on ``gpu`` with its context current; recorded skipped
    instead when an earlier test left the GPU unusable (or the module is needed and did not
    load). A sticky CUDA error (the context is lost) marks the GPU unusable for what follows."""
    if gpu.broken or (needs_module and not gpu.module):
        return rec.add(name, "skipped", gpu=gpu.index, message=gpu.broken or "the PTX module did not load on this GPU")
    with rec.test(name, gpu=gpu.index) as case:
        if gpu.context:
            drv.set_current(gpu.context)
        fn(case)
    if case.cuda_error in STICKY_ERRORS and gpu.broken is None:
        gpu.broken = f"skipped after {case.cuda_error} in {name} on this GPU (its context is unusable)"
    return case


def body(rec: _protocol.Recorder, args: _protocol.Args, loader: Callable[[], Any] = load_libcuda,
         expect_gpu: bool = False, plan: Optional[Plan] = None) -> None:
    """The suite: see the module's docstring. ``loader`` returns the driver library (tests pass
    an emulated one); ``plan`` overrides the tier's sizes."""
    plan = plan or Plan(args.tier)
    rec.details["ptx"] = f"PTX ISA {PTX_ISA}, .target {PTX_TARGET}, JIT-compiled by the driver"

    try:
        lib = loader()
    except OSError as exc:
        _no_gpu(rec, expect_gpu, "load_libcuda", load_failure_reason(exc))
        return
    drv = Driver(lib)
    path = library_path("libcuda") or library_path("nvcuda")
    if path:
        rec.details["libcuda"] = path

    count = _init(rec, drv)
    init = rec.tests[-1]
    if init.status != "passed":
        if init.cuda_error == "CUDA_ERROR_NO_DEVICE":
            rec.tests.pop()
            _no_gpu(rec, expect_gpu, "cu_init", "no CUDA GPU visible: cuInit returned CUDA_ERROR_NO_DEVICE"
                    + _visible_devices_note(), "CUDA_ERROR_NO_DEVICE")
        return
    if count == 0:
        _no_gpu(rec, expect_gpu, "devices", "no CUDA GPU visible: cuDeviceGetCount returned 0" + _visible_devices_note())
        return

    selected, missing = _protocol.select_gpus(args.gpus, count)
    for index in missing:
        rec.add("select_gpu", "failed", gpu=index,
                message=f"GPU {index} is not visible ({count} visible: 0..{count - 1}){_visible_devices_note()}")
    gpus = [Gpu(i) for i in selected]
    try:
        for gpu in gpus:
            _setup_gpu(rec, drv, gpu)
        for gpu in gpus:
            _quick(rec, drv, gpu, plan)
        if plan.standard:
            for gpu in gpus:
                _standard(rec, drv, gpu, plan, args, len(gpus))
        if args.tier == "stress":
            _stress_all(rec, drv, gpus, plan, args)
    finally:
        for gpu in gpus:
            _teardown_gpu(rec, drv, gpu)


def _init(rec: _protocol.Recorder, drv: Driver) -> int:
    """The cu_init test: cuInit, the driver's CUDA version, the device count."""
    count = 0
    with rec.test("cu_init") as t:
        drv.init()
        version = drv.driver_version()
        count = drv.device_count()
        rec.details["driver_cuda_version"] = driver_version_text(version)
        t.metrics.update({"driver_version": version, "device_count": count})
        t.message = f"driver supports CUDA {driver_version_text(version)}; {count} device(s) visible"
    return count


def _setup_gpu(rec: _protocol.Recorder, drv: Driver, gpu: Gpu) -> None:
    """device_info, context and module_load on one GPU."""

    def device_info(t: _protocol.TestCase) -> None:
        gpu.device = drv.device(gpu.index)
        gpu.name = drv.device_name(gpu.device)
        for key, attribute in ATTRIBUTES.items():
            try:
                gpu.attrs[key] = drv.attribute(gpu.device, attribute)
            except CudaError:
                pass  # an attribute this driver does not know
        total = drv.total_memory(gpu.device)
        t.metrics.update(gpu.attrs)
        t.metrics["total_memory_bytes"] = total
        peak = theoretical_bandwidth_gbs(gpu.attrs.get("memory_clock_khz", 0), gpu.attrs.get("memory_bus_width_bits", 0))
        if peak:
            t.metrics["theoretical_bandwidth_gbs"] = peak
        extra = []
        for getter in (drv.pci_bus_id, drv.uuid):
            try:
                extra.append(getter(gpu.device))
            except Exception:
                pass
        cc = f"{gpu.attrs.get('cc_major', '?')}.{gpu.attrs.get('cc_minor', '?')}"
        t.message = f"{gpu.name}: compute capability {cc}, {gpu.attrs.get('sm_count', '?')} SMs, {total / GIB:.1f} GiB"
        rec.details[f"gpu{gpu.index}"] = ", ".join([gpu.name, f"cc {cc}", f"{total // MIB} MiB"] + extra)

    def context(t: _protocol.TestCase) -> None:
        gpu.context = drv.retain_primary_context(gpu.device)
        drv.set_current(gpu.context)
        free, total = drv.memory_info()
        t.metrics.update({"free_bytes": free, "total_bytes": total})
        t.message = f"primary context; {free / GIB:.1f} of {total / GIB:.1f} GiB free"

    def module_load(t: _protocol.TestCase) -> None:
        start = time.perf_counter()
        module, info = drv.load_module(PTX)
        t.metrics["jit_s"] = time.perf_counter() - start
        gpu.module = module
        for name in KERNELS:
            gpu.functions[name] = drv.function(module, name)
        t.message = (f"PTX ISA {PTX_ISA} (.target {PTX_TARGET}) JIT-compiled for "
                     f"sm_{gpu.attrs.get('cc_major', '?')}{gpu.attrs.get('cc_minor', '?')}: {len(KERNELS)} kernels")
        if info:
            t.message += f"; JIT: {_protocol.one_line(info, 200)}"

    if gpu_test(rec, drv, gpu, "device_info", device_info).status != "passed":
        gpu.broken = gpu.broken or "skipped: device_info failed on this GPU"
        return
    if gpu_test(rec, drv, gpu, "context", context).status != "passed":
        gpu.broken = gpu.broken or "skipped: no context on this GPU"
        return
    gpu_test(rec, drv, gpu, "module_load", module_load)


def _apply(case: _protocol.TestCase, result: Tuple[Optional[str], Dict[str, float]], ok: str) -> None:
    """Put a ``run_*`` outcome on the test case: failed with its text, or passed with ``ok``."""
    failure, metrics = result
    case.metrics.update(metrics)
    if failure:
        case.fail(failure)
    else:
        case.message = ok
        if "bandwidth_gbs" in metrics:
            case.message += f" at {metrics['bandwidth_gbs']:.1f} GB/s"


def _copy_size(drv: Driver, wanted: int, fraction: int) -> int:
    """``wanted`` bytes, or 1/``fraction`` of free device memory when that is less; Skip when
    that leaves less than 64 KiB."""
    free, _ = drv.memory_info()
    nbytes = min(wanted, free // fraction) & ~3
    if nbytes < 64 << 10:
        raise _protocol.Skip(f"too little free device memory for a copy test ({free} bytes free)")
    return nbytes


def _quick(rec: _protocol.Recorder, drv: Driver, gpu: Gpu, plan: Plan) -> None:
    """The kernels and a device-to-device copy on one GPU."""
    n = plan.n
    gpu_test(rec, drv, gpu, "vector_add", lambda t: _apply(t, run_vector_add(drv, gpu, n), f"{n} u32 sums exact"),
             needs_module=True)
    gpu_test(rec, drv, gpu, "saxpy", lambda t: _apply(t, run_saxpy(drv, gpu, n),
                                                       f"{n} float32 fma within {SAXPY_RTOL:g} x (|a*x|+|y|)"),
             needs_module=True)
    gpu_test(rec, drv, gpu, "reduction", lambda t: _apply(t, run_reduction(drv, gpu, n),
                                                           f"{n} u32 summed in u64 per block, exact"),
             needs_module=True)

    def d2d(t: _protocol.TestCase) -> None:
        nbytes = _copy_size(drv, plan.d2d_bytes, 8)
        _apply(t, run_d2d(drv, gpu, nbytes, plan.d2d_reps),
               f"{plan.d2d_reps} x {nbytes / MIB:.1f} MiB copied device to device and checked")

    gpu_test(rec, drv, gpu, "d2d_bandwidth", d2d)


def _standard(rec: _protocol.Recorder, drv: Driver, gpu: Gpu, plan: Plan, args: _protocol.Args, n_gpus: int) -> None:
    """The memory pattern test and pinned host<->device bandwidths on one GPU."""

    def pattern(t: _protocol.TestCase) -> None:
        remaining = args.remaining(margin=10.0)
        budget = None if remaining is None else remaining * 0.5 / max(1, n_gpus)
        _apply(t, run_memory_pattern(drv, gpu, plan, budget), "")
        if t.status == "passed":
            t.message = (f"{t.metrics.get('bytes_tested', 0) / GIB:.2f} GiB "
                         f"({100 * t.metrics.get('share_of_free', 0):.0f}% of free) written and verified "
                         f"{plan.pattern_passes}x; the device pattern matches the host's; an injected error was caught")

    gpu_test(rec, drv, gpu, "memory_pattern", pattern, needs_module=True)
    for name, to_device in (("h2d_bandwidth", True), ("d2h_bandwidth", False)):

        def host_copy(t: _protocol.TestCase, to_device: bool = to_device) -> None:
            nbytes = _copy_size(drv, plan.h2d_bytes, 4)
            _apply(t, run_host_copy(drv, gpu, nbytes, plan.h2d_reps, to_device),
                   f"{plan.h2d_reps} x {nbytes / MIB:.1f} MiB pinned {'host to device' if to_device else 'device to host'}")

        gpu_test(rec, drv, gpu, name, host_copy)


def _stress_gpu(drv: Driver, gpu: Gpu, plan: Plan, deadline: float, result: Dict[str, Any]) -> None:
    """Until ``deadline`` (monotonic): the three kernels with fresh inputs, verified, then pattern
    passes over ``plan.stress_share`` of free memory for about ``plan.stress_pattern_s`` (the GPU
    stays busy while the host verifies little). Fills ``result`` (a test's fields)."""
    start = time.perf_counter()
    metrics: Dict[str, float] = {"iterations": 0, "pattern_passes": 0, "bytes_checked": 0, "pattern_errors": 0}
    result.update(status="passed", metrics=metrics, message=None, error=None, cuda_error=None)
    try:
        drv.set_current(gpu.context)
        free, _ = drv.memory_info()
        sizes = plan_chunks(free, plan.stress_share, plan.pattern_chunk)
        with Resources(drv) as res:
            err_buf = res.device(16)
            chunks, sizes = allocate_chunks(drv, res, sizes) if sizes else ([], [])
            iteration, passes = 0, 0
            while time.monotonic() < deadline:
                for name, fn in (("vector_add", run_vector_add), ("saxpy", run_saxpy), ("reduction", run_reduction)):
                    failure, _ = fn(drv, gpu, plan.n, 100 + 3 * iteration)
                    if failure:
                        result.update(status="failed", message=f"iteration {iteration}, {name}: {failure}")
                        return
                burst_end = min(deadline, time.monotonic() + plan.stress_pattern_s)
                while chunks:
                    out = PatternOutcome()
                    pattern_pass(drv, gpu, chunks, sizes, 1000 + passes, err_buf, out)
                    passes += 1
                    metrics["pattern_passes"] = passes
                    metrics["bytes_checked"] += out.bytes_checked
                    if out.errors:
                        metrics["pattern_errors"] += out.errors
                        result.update(status="failed", message=f"pattern pass {passes}: {out.errors} words differ "
                                      f"from the pattern; {out.where(chunks)}")
                        return
                    if time.monotonic() >= burst_end:
                        break
                iteration += 1
                metrics["iterations"] = iteration
    except Exception as exc:
        result.update(status="error", error=_protocol.format_error(exc),
                      cuda_error=getattr(exc, "name", None) or _protocol.decode_cuda_error(str(exc)))
    finally:
        result["duration_s"] = time.perf_counter() - start
        metrics["seconds"] = result["duration_s"]
        if result.get("status") == "passed":
            result["message"] = (f"{int(metrics['iterations'])} rounds of the kernels and "
                                 f"{int(metrics['pattern_passes'])} pattern passes "
                                 f"({metrics['bytes_checked'] / GIB:.1f} GiB checked), all verified")


def _stress_all(rec: _protocol.Recorder, drv: Driver, gpus: Sequence[Gpu], plan: Plan, args: _protocol.Args) -> None:
    """Stress every usable GPU at once (one thread each; ctypes releases the GIL in calls)."""
    duration = args.duration if args.duration is not None else plan.stress_duration
    remaining = args.remaining(margin=15.0)
    if remaining is not None:
        duration = min(duration, remaining * 0.8)
    deadline = time.monotonic() + max(0.0, duration)
    work: List[Tuple[Gpu, Dict[str, Any], threading.Thread]] = []
    for gpu in gpus:
        if gpu.broken or not gpu.module:
            rec.add("stress", "skipped", gpu=gpu.index, message=gpu.broken or "the PTX module did not load on this GPU")
            continue
        result: Dict[str, Any] = {}
        thread = threading.Thread(target=_stress_gpu, args=(drv, gpu, plan, deadline, result),
                                  name=f"stress-gpu{gpu.index}", daemon=True)
        work.append((gpu, result, thread))
        thread.start()
    for gpu, result, thread in work:
        thread.join()
        rec.add("stress", result.get("status", "error"), gpu=gpu.index, duration_s=result.get("duration_s", 0.0),
                message=result.get("message"), error=result.get("error"), cuda_error=result.get("cuda_error"),
                metrics=result.get("metrics"))


def _teardown_gpu(rec: _protocol.Recorder, drv: Driver, gpu: Gpu) -> None:
    problems = []
    if gpu.module:
        try:
            drv.set_current(gpu.context)
            drv.unload_module(gpu.module)
        except Exception as exc:
            problems.append(str(exc))
        gpu.module = 0
    if gpu.context:
        try:
            drv.release_primary_context(gpu.device)
        except Exception as exc:
            problems.append(str(exc))
        gpu.context = 0
    if problems and not gpu.broken:
        rec.add("cleanup", "failed", gpu=gpu.index, message="; ".join(problems))


def run(argv: Optional[Sequence[str]] = None, stream: Any = None, loader: Callable[[], Any] = load_libcuda,
        plan: Optional[Plan] = None, redirect: bool = True, seal: bool = False) -> int:
    """Run the suite with ``argv`` (default ``sys.argv[1:]``), print the line on ``stream``."""
    expect, rest = _expect_gpu(list(sys.argv[1:] if argv is None else argv))

    def suite_body(rec: _protocol.Recorder, args: _protocol.Args) -> None:
        body(rec, args, loader=loader, expect_gpu=expect, plan=plan)

    return _protocol.run(SUITE, suite_body, rest, stream=stream, seal=seal, redirect=redirect)


if __name__ == "__main__":
    sys.exit(run(seal=True))
