"""What each throughput figure of the smoke suites is as a fraction of the GPU's datasheet peak.

The suites measure; they cannot know what the GPU should reach (they run under any interpreter,
without the data). This check puts each figure beside the datasheet: device-memory copies (their
memory traffic, bytes read plus written) against the peak memory bandwidth of gpus.json, and the
stress tier's GEMM rate against the dense tensor-core (bf16) or fp32 peak of gpu_peaks.json. A GPU
the tables do not list, or a MIG slice (which gets a share of the GPU), gets no fraction, and the
note says why. Host<->device copies measure the PCIe or NVLink-C2C link, not the GPU, and are
not compared here (docs/smoke.md, "Reading bandwidth figures")."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, List, Optional, Tuple

from cudadoctor.checks.base import Check, finding, ref
from cudadoctor.checks.smoke import BANDWIDTH_TESTS, _model_gpu, _suite_gpu_name, _uniform_name, traffic_gbs
from cudadoctor.model import Category, Finding, Severity, SmokeResult, SmokeTest, Snapshot

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

GEMM_TESTS = ("stress_gemm",)
GEMM_KIND = re.compile(r"GEMMs \d+x\d+ (bf16|fp16|tf32|fp32)\b")


def figure(snap: Snapshot, matrix: "Matrix", r: SmokeResult, t: SmokeTest) -> Optional[Tuple[str, List[str]]]:
    """('GPU 0 (NVIDIA H100 80GB HBM3): torch bandwidth_d2d 2972 GB/s of memory traffic, 0.89 of the
    datasheet's 3350 GB/s', sources), or None when ``t`` is not a throughput figure."""
    from cudadoctor.matrix.peaks import datasheet

    if t.status != "passed" or t.gpu is None:
        return None
    if t.name in BANDWIDTH_TESTS:
        value, unit, what, precision = traffic_gbs(t), "GB/s", "of memory traffic", None
    elif t.name in GEMM_TESTS and t.metrics.get("tflops"):
        kind = GEMM_KIND.search(t.message or "")
        value, unit, precision = t.metrics["tflops"], "TFLOPS", kind.group(1) if kind else None
        what = f"{precision} GEMM" if precision else "GEMM"
    else:
        return None
    if value is None:
        return None
    name = _suite_gpu_name(r, t.gpu) or _uniform_name(snap)
    said = f"GPU {t.gpu} ({name}): {r.suite} {t.name} {value:.0f} {unit} {what}" if name else \
        f"GPU {t.gpu}: {r.suite} {t.name} {value:.0f} {unit} {what}"
    gpu = _model_gpu(snap, r, t.gpu)
    if gpu is not None and gpu.mig_mode == "enabled":
        return f"{said}; a MIG slice gets a share of the GPU: no datasheet fraction", []
    known, peaks, bandwidth = datasheet(matrix, name)
    if known is None:
        return f"{said}; no datasheet peak: the data does not know this GPU", []
    if unit == "GB/s":
        if not bandwidth:
            return f"{said}; no datasheet peak: gpus.json gives no memory bandwidth for the {known}", []
        return (f"{said}, {value / bandwidth:.2f} of the {known}'s {bandwidth:g} GB/s datasheet peak",
                [ref("gpus.json", known)])
    peak = peaks.of(precision) if peaks is not None and precision else None
    if peak is None:
        return f"{said}; no datasheet peak: gpu_peaks.json gives no {precision or 'such'} figure for the {known}", []
    return (f"{said}, {value / peak:.2f} of the {known}'s {peak:g} TFLOPS dense {precision} datasheet peak",
            [ref("gpu_peaks.json", known)])


def check_smoke_figures(snap: Snapshot, matrix: "Matrix") -> List[Finding]:
    """One note listing every throughput figure of the smoke suites with its datasheet fraction."""
    lines: List[str] = []
    sources: List[str] = []
    evidence: List[str] = []
    for i, r in enumerate(snap.smoke or ()):
        for t in r.tests:
            found = figure(snap, matrix, r, t)
            if found is None:
                continue
            lines.append(found[0])
            sources += [s for s in found[1] if s not in sources]
            if f"smoke[{i}].tests" not in evidence:
                evidence.append(f"smoke[{i}].tests")
    if not lines:
        return []
    return [finding(
        "smoke-figures", Severity.INFO, Category.OTHER,
        f"GPU figures against the datasheet: {lines[0]}" + (f" (+{len(lines) - 1} more)" if len(lines) > 1 else ""),
        why="Each throughput figure the smoke suites measured, as a fraction of the GPU's datasheet peak (dense, "
            "no sparsity; memory copies as traffic, bytes read plus written): " + "; ".join(lines) + ". A healthy GPU "
            "reaches about 0.7-0.9 of its memory bandwidth in a large copy and 0.6-0.9 of its dense tensor peak in a "
            "large GEMM; datasheet clocks are boost clocks, so a GPU held back by power or heat reaches less.",
        evidence=evidence, source=sources,
    )]


CHECKS = (
    Check("smoke-figures", check_smoke_figures, ("smoke-figures",), 6,
          "the smoke suites' throughput figures, each as a fraction of the GPU's datasheet peak"),
)
