"""GPUs' datasheet peaks (``gpu_peaks.json``): dense bf16, fp16, tf32 and fp32 TFLOPS per model,
and with gpus.json's memory bandwidth the figure a smoke measurement is a fraction of.

A peak is looked up by the GPU's name as gpus.json resolves it (so NVML's name, an alias or a
name without 'NVIDIA ' all find it); a GPU the table does not list has no peak, and callers say
so rather than guess from a similar model."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from cudadoctor.matrix.load import provenance
from cudadoctor.record import frozen

TABLES = ("gpu_peaks.json",)
PRECISIONS = ("bf16", "fp16", "tf32", "fp32")


@frozen
class GpuPeaks:
    name: str  # as gpus.json records it
    tflops: Tuple[Tuple[str, float], ...]  # (precision, dense TFLOPS) for those the datasheet gives
    source: str
    confidence: str
    note: Optional[str] = None

    def of(self, precision: str) -> Optional[float]:
        """Dense TFLOPS at ``precision`` (bf16, fp16, tf32, fp32), None where the datasheet gives none."""
        return dict(self.tflops).get(precision)


@frozen
class PeakData:
    rows: Tuple[GpuPeaks, ...]
    _by_name: Dict[str, GpuPeaks]

    def by_name(self, name: str) -> Optional[GpuPeaks]:
        """The peaks of the model recorded under this exact gpus.json name."""
        return self._by_name.get(name)


def datasheet(matrix: Any, name: Optional[str]) -> Tuple[Optional[str], Optional[GpuPeaks], Optional[float]]:
    """(the gpus.json name, its compute peaks, its peak memory bandwidth in GB/s) of the GPU NVML
    calls ``name``; Nones for what the data does not know."""
    model = matrix.gpus.by_name(name) if name else None
    if model is None:
        return None, None, None
    return model.name, matrix.peaks.by_name(model.name), model.memory_bandwidth_gbs


def build(docs: Mapping[str, Mapping[str, Any]]) -> PeakData:
    rows = tuple(GpuPeaks(name=r["name"], tflops=tuple((p, float(r[f"{p}_tflops"])) for p in PRECISIONS
                                                       if f"{p}_tflops" in r), **provenance(r))
                 for r in docs["gpu_peaks.json"]["records"])
    return PeakData(rows, {r.name: r for r in rows})


def invariants(data: PeakData, matrix: Any) -> List[str]:
    """Sorted by name and unique; every name is a GPU of gpus.json (not a laptop part) and has a
    memory bandwidth there; tensor-core bf16/fp16 are not below the GPU's own fp32."""
    problems: List[str] = []
    names = [r.name for r in data.rows]
    if names != sorted(names) or len(set(names)) != len(names):
        problems.append("gpu_peaks.json: records are not sorted by name and unique")
    models = {m.name: m for m in matrix.gpus.models if m.segment != "laptop"} if matrix is not None else {}
    for r in data.rows:
        model = models.get(r.name)
        if matrix is not None and model is None:
            problems.append(f"gpu_peaks.json: {r.name}: no such GPU in gpus.json")
        elif model is not None and not model.memory_bandwidth_gbs:
            problems.append(f"gpu_peaks.json: {r.name}: gpus.json gives no memory_bandwidth_gbs for it")
        fp32 = r.of("fp32")
        for precision in ("bf16", "fp16"):
            tensor = r.of(precision)
            if fp32 is not None and tensor is not None and tensor < fp32:
                problems.append(f"gpu_peaks.json: {r.name}: {precision} {tensor:g} below fp32 {fp32:g}")
    return problems
