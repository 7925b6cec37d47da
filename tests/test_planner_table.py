"""The planners against what is publicly known about each framework's builds, one row per
(framework, GPU, driver, OS/platform). Each expected answer cites its public source; the data
rows behind them cite theirs in compat_data/.

Sources used below, by key:
- [pt]    https://pytorch.org/get-started/locally/ and pytorch.json (each release's variants and arch lists)
- [tfbi]  tensorflow/python/platform/build_info.py in the TensorFlow wheels (cuda_compute_capabilities,
          cuda_version), e.g. tensorflow-2.21.0: ['sm_60','sm_70','sm_80','sm_89','compute_90'], CUDA 12.5.1
- [tf101746] https://github.com/tensorflow/tensorflow/issues/101746 (pip TensorFlow on Blackwell:
          CUDA_ERROR_INVALID_PTX)
- [jaxw]  cuobjdump of jax_cuda12_plugin / jax_cuda13_plugin wheels (0.4.26 ... 0.12.0)
- [cupyw] cuobjdump of cupy-cuda11x/12x/13x wheels (12.0 ... 14.2)
- [ortw]  cuobjdump of onnxruntime-gpu's libonnxruntime_providers_cuda.so (1.21 ... 1.31)
- [ort22212] https://github.com/microsoft/onnxruntime/issues/22212 (driver 525.105.17, cudaErrorUnsupportedPtxVersion)
- [ortreq] https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements
- [compat] https://docs.nvidia.com/deploy/cuda-compatibility/ (minor-version compatibility: SASS only, no PTX JIT
          of a newer toolkit's PTX)
- [r570]  https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/ (CUDA 12.8 needs 570.26; Blackwell needs R570)
- [arch]  https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
          (Kepler's last branch R470)
- [jp]    https://github.com/pytorch/TensorRT/pull/3453 and NVIDIA's 'PyTorch for Jetson' thread
          https://forums.developer.nvidia.com/t/pytorch-for-jetson-version-1-9-0-now-available/72048
- [vllm]  each vLLM wheel's METADATA (torch pin, Requires-Python), vllm.json
- [fa]    https://github.com/Dao-AILab/flash-attention README (FA2: Ampere or newer; FA1 for Turing)
- [triton] https://github.com/triton-lang/triton README (compute capability 8.0+ from 3.3) and torch's METADATA
- [xf]    xformers 0.0.35 METADATA (torch>=2.10)
"""

from __future__ import annotations

import re
import shlex
from typing import Dict, List, Tuple

import pytest

from cudadoctor.matrix import Matrix
from cudadoctor.planner.install import PackageResult, plan_install
from cudadoctor.planner.target import described

NONE = "none"

# (package and flags, expected plan label or NONE, a phrase the answer must contain)
TABLE: List[Tuple[str, str, str]] = [
    # ---- torch
    ('torch --gpu "RTX 5090" --driver 570.124.06 --python 3.12', "torch 2.11.0+cu128", "natively"),  # [pt] [r570]
    ('torch --gpu "RTX 5090" --driver 560.35.03 --python 3.12', NONE, "R570"),  # [r570]: R560 predates Blackwell
    ('torch --gpu "GTX 1080" --driver 580.65.06 --python 3.12', "torch 2.14.1+cu126", "sm_61"),  # [pt]: cu128+ drop Pascal
    ("torch --gpu H100 --driver 535.104.05 --python 3.12", "torch 2.14.1+cu126", "minor-version"),  # [pt] [compat]
    ("torch --gpu A100 --driver 470.82.01 --python 3.10", "torch 2.7.1+cu118", "minor-version"),  # [pt] [compat]
    ("torch --gpu K80 --driver 535.104.05 --python 3.9", NONE, "R470"),  # [arch]
    ("torch --jetpack 6.2", "torch for JetPack 6.2", "jetson-ai-lab"),  # [jp]
    ("torch --jetpack 7.0", "torch 2.15.0+cu130", "Jetson Linux"),  # [pt]: JetPack 7 follows SBSA
    ("torch --l4t 35.4.1", "torch 2.1.0a0+41361538.nv23.06 (JetPack 5.1.2)", "redist"),  # [jp]
    ('torch --gpu "Jetson AGX Orin"', NONE, "--jetpack"),  # a Jetson without its JetPack: no guess
    ("torch --platform linux-aarch64 --driver 580.65.06 --gpu GH200 --python 3.12", "torch 2.15.0+cu130", "SASS"),  # [pt]
    ('torch --os wsl2 --driver 566.36 --gpu "RTX 4090" --python 3.12', "torch 2.14.1+cu126", "windows"),  # [pt]
    # ---- TensorFlow [tfbi]: TensorFlow's flags say sm_XY for SASS only and compute_XY for SASS and PTX; 2.21's
    #      libtensorflow_cc.so.2 has sm_60/70/80/89/90 cubins and compute_90 PTX in each of its 249 fatbins
    ("tensorflow --gpu H100 --driver 535.230.02 --python 3.11", "tensorflow 2.21.0 (CUDA 12.5)", "SASS"),
    # ^ CUDA 12.5 on R535 through minor-version compatibility [compat], which SASS for sm_90 makes safe
    ("tensorflow --gpu H100 --driver 580.65.06 --python 3.12", "tensorflow 2.21.0 (CUDA 12.5)", "natively"),
    ("tensorflow --gpu H100 --driver 535.230.02 --version 2.15.0", "tensorflow 2.15.0 (CUDA 12.2)", "only PTX"),
    # ^ 2.15 has compute_80 as its newest target: PTX JIT on sm_90, natively (CUDA 12.2 on 535.230.02)
    ("tensorflow --gpu H100 --driver 525.60.13 --version 2.15.0", NONE, "535.54.03"),
    # ^ ... which R525 (CUDA 12.0) cannot JIT-compile: CUDA 12.2 PTX needs 535.54.03 [compat]
    ("tensorflow --gpu A100 --driver 470.82.01 --python 3.10", "tensorflow 2.14.0 (CUDA 11.8)", "SASS"),
    # ^ 2.12-2.14 (CUDA 11.8) have sm_80 SASS (compute_80), so R470's minor-version compatibility holds
    ('tensorflow --gpu "RTX 5090" --driver 570.124.06 --python 3.12', NONE, "CUDA 12.8 or newer"),  # [tf101746]
    ('tensorflow --gpu "RTX 4090" --driver 535.104.05 --python 3.12', "tensorflow 2.21.0 (CUDA 12.5)", "SASS"),  # [tfbi]
    ('tensorflow --gpu "RTX 4090" --driver 560.35.03 --python 3.12', "tensorflow 2.21.0 (CUDA 12.5)", "natively"),
    ("tensorflow --cc 5.2 --driver 580.65.06 --python 3.11", "tensorflow 2.16.1 (CUDA 12.3)", "SASS"),  # [tfbi]: last sm_50
    ("tensorflow --gpu T4 --driver 535.104.05 --python 3.11", "tensorflow 2.21.0 (CUDA 12.5)", "SASS"),  # sm_70 runs on 7.5
    # ---- JAX [jaxw]
    ("jax --gpu H100 --driver 580.65.06 --python 3.12", "jax 0.12.* (cuda13)", "natively"),
    ('jax --gpu "RTX 4090" --driver 525.60.13 --python 3.12', "jax 0.12.* (cuda12)", "minor-version"),
    ('jax --gpu "GTX 1080" --driver 580.65.06 --python 3.12', "jax 0.12.* (cuda12)", "SASS"),  # cuda13: no sm_61
    ("jax --os windows --driver 576.88 --cc 8.9 --python 3.12", NONE, "WSL2"),
    ("jax --gpu B200 --driver 575.57.08 --python 3.12", "jax 0.12.* (cuda12)", "SASS"),
    # ---- CuPy [cupyw]
    ('cupy --gpu "RTX 5090" --driver 580.65.06 --python 3.12', "cupy 14.* (cupy-cuda13x)", "[ctk]"),
    ('cupy --gpu "GTX 1080" --driver 580.65.06 --python 3.12', "cupy 14.* (cupy-cuda12x)", "SASS"),
    ('cupy --gpu "RTX 4090" --driver 535.104.05 --python 3.12', "cupy 14.* (cupy-cuda12x)", "minor-version"),
    ("cupy --gpu K80 --driver 470.82.01 --python 3.10", "cupy 13.* (cupy-cuda11x)", "SASS"),
    ('cupy --gpu "RTX 5090" --driver 570.124.06 --python 3.12', "cupy 14.* (cupy-cuda12x)", "SASS"),
    # ---- ONNX Runtime [ortw] [ortreq]
    ('onnxruntime-gpu --gpu "RTX 4090" --driver 525.105.17 --python 3.12', "onnxruntime-gpu 1.26.* (CUDA 12)",
     "minor-version"),  # [ort22212]: SASS for 8.9 (sm_86), so no PTX JIT is needed under R525
    ("onnxruntime-gpu --gpu B200 --driver 580.65.06 --python 3.12", "onnxruntime-gpu 1.28.* (CUDA 13)", "SASS"),
    # ^ 1.29-1.31 carry no sm_100 SASS and no PTX [ortw]: the newest with kernels for B200 is 1.28
    ("onnxruntime-gpu --gpu A100 --driver 470.82.01 --python 3.10", "onnxruntime-gpu 1.18.* (CUDA 11)", "SASS"),
    # ^ CUDA 11.8 under R470's minor-version compatibility: SASS for sm_80 in the wheel [ortw], so no PTX JIT
    ('onnxruntime-gpu --gpu "RTX 5090" --driver 570.124.06 --python 3.12', "onnxruntime-gpu 1.26.* (CUDA 12)",
     "only PTX"),
    # ---- vLLM [vllm] with torch's builds [pt]
    ('vllm --gpu "RTX 5090" --driver 570.124.06', "vllm 0.19.1", "2.10.0+cu128"),
    ("vllm --gpu V100 --driver 535.104.05 --python 3.11", "vllm 0.19.1", "Triton"),
    ("vllm --gpu H100 --driver 580.65.06 --python 3.12", "vllm 0.33.0", "2.14.0+cu130"),
    ("vllm --gpu H100 --driver 580.65.06 --python 3.10", "vllm 0.31.0", "Requires-Python"),
    ('vllm --gpu "GTX 1080" --driver 580.65.06 --python 3.12', NONE, "7.0"),
    # ---- flash-attn [fa], triton [triton], xformers [xf]
    ("flash-attn --gpu H100 --driver 580.65.06 --python 3.12", "flash-attn 2.x", "flash-attn-3"),
    ("flash-attn --gpu T4 --driver 535.104.05 --python 3.11", "flash-attn 1.x", "7.5"),
    ('triton --gpu "RTX 2080" --driver 550.54.14 --python 3.12', NONE, "8.0"),
    ("triton --gpu A100 --driver 535.104.05 --python 3.12", "triton 3.8.0", "minor-version"),
    ('xformers --gpu "RTX 4090" --driver 550.54.14 --python 3.12', "xformers 0.0.35", ">=2.10"),
]


def _target(matrix: Matrix, flags: List[str]):  # type: ignore[no-untyped-def]
    kw: Dict[str, str] = {}
    gpus: List[str] = []
    ccs: List[str] = []
    for flag, value in zip(flags[::2], flags[1::2]):
        if flag == "--gpu":
            gpus.append(value)
        elif flag == "--cc":
            ccs.append(value)
        else:
            kw[flag[2:]] = value
    return described(matrix, gpus=gpus, ccs=ccs, **kw)  # type: ignore[arg-type]


def _plan(matrix: Matrix, row: str) -> PackageResult:
    package, *flags = shlex.split(row)
    version = flags[flags.index("--version") + 1] if "--version" in flags else None
    if version is not None:
        flags = [f for i, f in enumerate(flags) if f != "--version" and (i == 0 or flags[i - 1] != "--version")]
    return plan_install(matrix, _target(matrix, flags), [package], version=version).results[0]


def _text(r: PackageResult) -> str:
    found = r.plan or r.nofit
    assert found is not None
    lines = [x.text for x in found.reasons] + list(getattr(found, "notes", ()))
    if r.nofit is not None:
        lines += r.nofit.what_would()
    return "\n".join(lines + ([r.steps.commands[-1]] if r.steps else []))


def test_the_table_has_forty_cases() -> None:
    assert len(TABLE) >= 40


@pytest.mark.parametrize("row,expected,phrase", TABLE, ids=[r[0] for r in TABLE])
def test_plan(matrix: Matrix, row: str, expected: str, phrase: str) -> None:
    r = _plan(matrix, row)
    assert (r.plan.label if r.plan else NONE) == expected, _text(r)
    assert phrase in _text(r)


@pytest.mark.parametrize("row", [r[0] for r in TABLE if r[1] != NONE])
def test_no_plan_relies_on_ptx_under_minor_compatibility(matrix: Matrix, row: str) -> None:
    """PTX newer than the driver cannot be JIT-compiled: a plan that needs PTX runs natively [compat]."""
    r = _plan(matrix, row)
    assert r.plan is not None
    ptx = any("only PTX" in x.text or "through PTX JIT" in x.text for x in r.plan.reasons)
    if ptx and r.plan.driver is not None:
        assert r.plan.driver.kind == "native" and r.plan.driver.exact


@pytest.mark.parametrize("row", [r[0] for r in TABLE if r[1] != NONE])
def test_natively_only_at_the_exact_minor(matrix: Matrix, row: str) -> None:
    """'runs CUDA 12.2 natively' names a CUDA minor, and the driver meets that minor's own minimum."""
    r = _plan(matrix, row)
    assert r.plan is not None
    for reason in r.plan.reasons:
        m = re.search(r"runs CUDA (\S+) natively \(>= (\S+)", reason.text)
        if m is None:
            continue
        assert re.fullmatch(r"\d+\.\d+", m.group(1)), reason.text
        driver = r.plan.driver
        assert driver is not None and driver.exact and driver.required == m.group(2)
