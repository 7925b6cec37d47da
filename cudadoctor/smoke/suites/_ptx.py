"""The driver suite's PTX module: the kernels the driver JIT-compiles and launches, and the
host's mirror of the pattern they write (:func:`pattern_word`).

Part of the driver smoke suite (``driver_suite.py``); standard library only.
"""

from __future__ import annotations

from typing import Tuple

MASK32 = 0xFFFFFFFF

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

# Code that several kernels share is written once below and spliced into PTX: above all the
# pattern hash, which must not drift between the kernel that writes a pattern and the one that
# checks it.

# The 1-D launch's global thread index in %r5 and the grid's stride in %r7 (u32); %r2, %r3, %r4
# and %r6 keep ctaid, ntid, tid and nctaid. vec_add_u32, saxpy_f32 and reduce_sum_u32 start so.
_THREAD_INDEX_U32 = """\
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.u32 %r5, %r2, %r3, %r4;
    mov.u32 %r6, %nctaid.x;
    mul.lo.u32 %r7, %r6, %r3;"""


def _pattern_loop(label: str) -> str:
    """The head of the grid-stride loop pattern_fill and pattern_check share, its labels
    prefixed with ``label``: word index i in %rd3 (u64, stepping by %rd5) up to n in %rd2; in
    the body, pattern_word(i, seed) (seed in %r1) is in %r8 and the word's address (from the base
    in %rd1) in %rd8."""
    return f"""\
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mul.wide.u32 %rd3, %r2, %r3;
    cvt.u64.u32 %rd4, %r4;
    add.u64 %rd3, %rd3, %rd4;
    mov.u32 %r5, %nctaid.x;
    mul.wide.u32 %rd5, %r5, %r3;
{label}_LOOP:
    setp.ge.u64 %p1, %rd3, %rd2;
    @%p1 bra {label}_DONE;
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
    add.u64 %rd8, %rd1, %rd7;"""


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
""" + _THREAD_INDEX_U32 + r"""
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
""" + _THREAD_INDEX_U32 + r"""
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
""" + _THREAD_INDEX_U32 + r"""
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
""" + _pattern_loop("PF") + r"""
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
""" + _pattern_loop("PC") + r"""
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
