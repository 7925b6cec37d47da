"""Everything but PyTorch and the CUDA/driver/toolchain tables: TensorFlow, JAX, CuPy, ONNX
Runtime, TensorRT, CUDA.jl and NCCL.

Each framework's rows and queries live in a private module (``_tensorflow``, ``_jax``, ...);
:class:`EcosystemData` holds them as attributes and offers the queries the diagnosis and the
install planner use. Package indexes (JAX's wheel page, ONNX Runtime's CUDA feeds, NVIDIA's)
are data fields of the rows, never constants here.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional
from cudadoctor.record import frozen

from cudadoctor.matrix import _cupy
from cudadoctor.matrix import _jax
from cudadoctor.matrix import _julia
from cudadoctor.matrix import _nccl
from cudadoctor.matrix import _onnxruntime
from cudadoctor.matrix import _tensorflow
from cudadoctor.matrix import _tensorrt
from cudadoctor.matrix._cupy import CupyData, CupyDistribution, CupyMajor
from cudadoctor.matrix._ecocommon import Fact, lower_bound, norm_dist
from cudadoctor.matrix._jax import JaxBuild, JaxData, JaxRelease
from cudadoctor.matrix._julia import CudaJlData, CudaJlRelease
from cudadoctor.matrix._nccl import NcclData, NcclRelease
from cudadoctor.matrix._onnxruntime import OrtBuild, OrtData
from cudadoctor.matrix._tensorflow import TensorflowData, TfConfig, TfPins
from cudadoctor.matrix._tensorrt import TrtData, TrtRelease
from cudadoctor.matrix.load import DataError
from cudadoctor.matrix.versions import vkey

__all__ = [
    "TABLES", "EcosystemData", "build", "invariants", "Fact",
    "TfConfig", "TfPins", "JaxRelease", "JaxBuild", "CupyDistribution", "CupyMajor", "OrtBuild", "TrtRelease",
    "CudaJlRelease", "NcclRelease",
]

TABLES = ("tensorflow.json", "jax.json", "cupy.json", "onnxruntime.json", "tensorrt.json", "julia.json", "nccl.json")


@frozen
class EcosystemData:
    tensorflow: TensorflowData
    jax: JaxData
    cupy: CupyData
    onnxruntime: OrtData
    tensorrt: TrtData
    julia: CudaJlData
    nccl: NcclData

    # ------------------------------------------------------------------ horizon

    def horizon(self, framework: str) -> Optional[str]:
        """How far a framework's table reaches: the newest release or series it knows
        ('2.21' for tensorflow, '0.12' for jax, '14' for cupy, '1.31' for onnxruntime), the
        precision a newer release is judged at; None for a framework without a table."""
        if framework == "tensorflow":
            versions = [c.version for c in self.tensorflow.configs]
            return ".".join(map(str, max(vkey(v)[:2] for v in versions))) if versions else None
        if framework == "jax":
            return _newest([r.last or r.first for r in self.jax.releases])
        if framework == "cupy":
            return _newest([m.version for m in self.cupy.majors])
        if framework == "onnxruntime":
            return _newest([b.last or b.first for b in self.onnxruntime.builds])
        return None

    # ------------------------------------------------------------------ TensorFlow

    def tf_config(self, version: str, platform: str = "linux") -> Optional[TfConfig]:
        """Python versions, CUDA, cuDNN, compiler and the [and-cuda] flag of a release series on
        linux (or wsl) / windows; None on native Windows after 2.10 and for unknown releases."""
        return self.tensorflow.config(version, platform)

    def tf_native_windows_gpu(self, version: str) -> bool:
        return self.tensorflow.native_windows_gpu(version)

    def tf_and_cuda_pins(self, version: str) -> Optional[TfPins]:
        return self.tensorflow.and_cuda_pins(version)

    def tf_min_compute_capability(self, version: str) -> Optional[str]:
        return self.tensorflow.min_compute_capability(version)

    # ------------------------------------------------------------------ JAX

    def jax_release(self, version: str) -> Optional[JaxRelease]:
        """The CUDA scheme of a jax/jaxlib version: its builds per CUDA major (extras, plugin
        distributions, jaxlib local versions and index page, minimum CUDA/cuDNN/driver/CC) and
        the Python versions."""
        return self.jax.release(version)

    def jax_plugin_cuda_major(self, distribution: str) -> Optional[int]:
        return self.jax.plugin_cuda_major(distribution)

    # ------------------------------------------------------------------ CuPy

    def cupy_package_for(self, cuda: str, cupy_version: Optional[str] = None) -> List[CupyDistribution]:
        return self.cupy.package_for(cuda, cupy_version)

    def cupy_cuda_for(self, distribution: str) -> Optional[CupyDistribution]:
        return self.cupy.cuda_for(distribution)

    def cupy_min_compute_capability(self, cupy_version: str) -> Optional[str]:
        return self.cupy.min_compute_capability(cupy_version)

    # ------------------------------------------------------------------ the rest

    def ort_requirements(self, version: str) -> List[OrtBuild]:
        """Each CUDA build of an onnxruntime-gpu release: CUDA, cuDNN, and the index serving it
        (``pypi_default`` marks what plain PyPI gives)."""
        return self.onnxruntime.requirements(version)

    def trt_requirements(self, version: str) -> Optional[TrtRelease]:
        return self.tensorrt.requirements(version)

    def cudajl_requirements(self, version: str) -> Optional[CudaJlRelease]:
        return self.julia.requirements(version)

    def nccl_release(self, version: str) -> Optional[NcclRelease]:
        return self.nccl.release(version)


_BUILDERS: Dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "tensorflow.json": _tensorflow.build, "jax.json": _jax.build, "cupy.json": _cupy.build,
    "onnxruntime.json": _onnxruntime.build, "tensorrt.json": _tensorrt.build, "julia.json": _julia.build,
    "nccl.json": _nccl.build,
}


def build(docs: Mapping[str, Mapping[str, Any]]) -> EcosystemData:
    built: Dict[str, Any] = {}
    for name in TABLES:
        try:
            built[name] = _BUILDERS[name](docs[name])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DataError(name, [f"cannot be read: {type(exc).__name__}: {exc}"]) from None
    return EcosystemData(
        tensorflow=built["tensorflow.json"], jax=built["jax.json"], cupy=built["cupy.json"],
        onnxruntime=built["onnxruntime.json"], tensorrt=built["tensorrt.json"], julia=built["julia.json"],
        nccl=built["nccl.json"],
    )


def invariants(data: EcosystemData, matrix: Any) -> List[str]:
    """Each table's own invariants (sorted, unique, ranges well-formed, CUDA versions that
    cuda_toolkits.json knows, pins well-formed), then the references between them."""
    problems: List[str] = []
    problems += _tensorflow.invariants(data.tensorflow, matrix)
    problems += _jax.invariants(data.jax, matrix)
    problems += _cupy.invariants(data.cupy, matrix)
    problems += _onnxruntime.invariants(data.onnxruntime, matrix)
    problems += _tensorrt.invariants(data.tensorrt, matrix)
    problems += _julia.invariants(data.julia, matrix)
    problems += _nccl.invariants(data.nccl, matrix)
    problems += _cross_references(data)
    return problems


def _cross_references(data: EcosystemData) -> List[str]:
    """NCCL and TensorRT versions named by the other tables exist in nccl.json / tensorrt.json."""
    problems: List[str] = []
    for pins in data.tensorflow.pins:
        for name, spec in pins.pins:
            low = lower_bound(spec)
            if low is None:
                continue
            if name.startswith("nvidia-nccl-cu"):
                rel = data.nccl.release(low)
                if rel is None or rel.pip_for(pins.cuda_major) != name:
                    problems.append(f"tensorflow.json: and_cuda_pins {pins.version}: {name}{spec} has no such"
                                    f" release with a {name} wheel in nccl.json")
            if norm_dist(name) == "tensorrt" and spec.startswith("==") and data.tensorrt.requirements(low) is None:
                problems.append(f"tensorflow.json: and_cuda_pins {pins.version}: tensorrt{spec} is not a release"
                                " in tensorrt.json")
    for jax in data.jax.releases:
        for b in jax.builds:
            if b.min_nccl and data.nccl.release(b.min_nccl) is None:
                problems.append(f"jax.json: {jax.first or '..'}-{jax.last or '..'}: CUDA {b.cuda_major}: min_nccl"
                                f" {b.min_nccl} is not a release in nccl.json")
    for major in data.cupy.majors:
        for value in (major.nccl_min, major.nccl_max):
            if value and data.nccl.release(value) is None:
                problems.append(f"cupy.json: v{major.version}: NCCL {value} is not a release in nccl.json")
    return problems


def _newest(versions: List[Optional[str]]) -> Optional[str]:
    known = [v for v in versions if v]
    return max(known, key=vkey) if known else None

