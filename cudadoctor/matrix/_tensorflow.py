"""TensorFlow: tested GPU configurations, tensorflow[and-cuda] pins, compute-capability floors."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple
from cudadoctor.record import frozen

from cudadoctor.matrix._ecocommon import Checker, Fact, facts_of, find_fact, in_range, lower_bound, prov, strs
from cudadoctor.matrix.versions import at_least, major, vkey

FILE = "tensorflow.json"


@frozen
class TfConfig:
    """One row of TensorFlow's 'tested build configurations' (Linux, or native Windows up to 2.10)."""

    version: str
    platform: str  # linux | windows
    package: str
    python: Tuple[str, ...]
    cuda: str
    cudnn: str
    compiler: Optional[str]
    build_tool: Optional[str]
    and_cuda_extra: bool
    source: str
    confidence: str
    note: Optional[str] = None

    @property
    def cuda_major(self) -> Optional[int]:
        return major(self.cuda)

    @property
    def cudnn_major(self) -> Optional[int]:
        return major(self.cudnn)


@frozen
class TfPins:
    """What ``pip install tensorflow[and-cuda]==<version>`` pulls (Linux)."""

    version: str
    cuda_major: int
    pins: Tuple[Tuple[str, str], ...]  # (distribution, specifier)
    source: str
    confidence: str
    note: Optional[str] = None

    def requirements(self) -> List[str]:
        return [f"{name}{spec}" for name, spec in self.pins]

    def pin(self, distribution: str) -> Optional[str]:
        for name, spec in self.pins:
            if name == distribution:
                return spec
        return None


@frozen
class TfCcFloor:
    first: Optional[str]
    last: Optional[str]
    min_compute_capability: str
    source: str
    confidence: str
    note: Optional[str] = None


@frozen
class TensorflowData:
    configs: Tuple[TfConfig, ...]
    pins: Tuple[TfPins, ...]
    cc_floors: Tuple[TfCcFloor, ...]
    facts: Tuple[Fact, ...]

    def config(self, version: str, platform: str = "linux") -> Optional[TfConfig]:
        """The tested configuration of the release series of ``version`` ('2.15.1' -> the 2.15.0
        row). ``platform``: linux, wsl (= linux) or windows. None: an unknown release, or native
        Windows after 2.10 (see :meth:`native_windows_gpu`)."""
        plat = "linux" if platform in ("linux", "wsl") else platform
        series = vkey(version)[:2]
        for row in self.configs:
            if row.platform == plat and len(series) == 2 and vkey(row.version)[:2] == series:
                return row
        return None

    def native_windows_gpu(self, version: str) -> bool:
        """Does this release support a GPU on native Windows (not WSL2)?"""
        last = find_fact(self.facts, "native_windows_gpu_last")
        return bool(last and vkey(version) and in_range(version, None, last.value))

    def and_cuda_pins(self, version: str) -> Optional[TfPins]:
        series = vkey(version)[:2]
        for row in self.pins:
            if len(series) == 2 and vkey(row.version)[:2] == series:
                return row
        return None

    def has_and_cuda_extra(self, version: str) -> bool:
        first = find_fact(self.facts, "and_cuda_first")
        return bool(first and vkey(version) and at_least(version, ".".join(first.value.split(".")[:2])))

    def min_compute_capability(self, version: str) -> Optional[str]:
        for row in self.cc_floors:
            if in_range(version, row.first, row.last):
                return row.min_compute_capability
        return None

    def fact(self, fact_id: str) -> Optional[Fact]:
        return find_fact(self.facts, fact_id)


def build(doc: Mapping[str, Any]) -> TensorflowData:
    configs = tuple(
        TfConfig(version=r["version"], platform=r["platform"], package=r["package"], python=strs(r["python"]),
                 cuda=r["cuda"], cudnn=r["cudnn"], compiler=r.get("compiler"), build_tool=r.get("build_tool"),
                 and_cuda_extra=bool(r["and_cuda_extra"]), **prov(r))
        for r in doc["records"]
    )
    pins = tuple(
        TfPins(version=r["version"], cuda_major=r["cuda_major"], pins=tuple(sorted(r["pins"].items())), **prov(r))
        for r in doc.get("and_cuda_pins", [])
    )
    floors = tuple(
        TfCcFloor(first=r.get("first"), last=r.get("last"), min_compute_capability=r["min_compute_capability"], **prov(r))
        for r in doc.get("min_compute_capability", [])
    )
    return TensorflowData(configs, pins, floors, facts_of(doc))


def invariants(data: TensorflowData, matrix: Any) -> List[str]:
    c = Checker(FILE, matrix)
    c.facts(data.facts, ("and_cuda_first", "native_windows_gpu_last"),
            versions=("and_cuda_first", "native_windows_gpu_last", "tensorflow_gpu_package_removed"))
    labels = [f"{r.version} ({r.platform})" for r in data.configs]
    c.sorted_unique([(r.platform, vkey(r.version)[:2]) for r in data.configs], labels, "records (by platform, then version)")
    for row, where in zip(data.configs, labels):
        c.python(where, row.python)
        c.cuda(where, row.cuda)
        if row.platform == "windows":
            if not data.native_windows_gpu(row.version):
                c.add(where, "a native-Windows GPU row after native_windows_gpu_last")
            if row.and_cuda_extra:
                c.add(where, "the [and-cuda] extra is Linux only")
        elif data.fact("and_cuda_first") and row.and_cuda_extra != data.has_and_cuda_extra(row.version):
            c.add(where, "and_cuda_extra disagrees with the fact and_cuda_first")
    c.sorted_unique([vkey(p.version)[:2] for p in data.pins], [p.version for p in data.pins], "and_cuda_pins (by version)")
    for pins in data.pins:
        where = f"and_cuda_pins {pins.version}"
        c.pins(where, pins.pins, pins.cuda_major)
        tested = data.config(pins.version)
        if tested is None or not tested.and_cuda_extra:
            c.add(where, "no Linux row with the [and-cuda] extra for this release")
            continue
        if tested.cuda_major != pins.cuda_major:
            c.add(where, f"cuda_major {pins.cuda_major} but the release is built with CUDA {tested.cuda}")
        for name, want, what in ((f"nvidia-cuda-runtime-cu{pins.cuda_major}", tested.cuda, "CUDA"),
                                 (f"nvidia-cudnn-cu{pins.cuda_major}", tested.cudnn, "cuDNN")):
            spec = pins.pin(name)
            low = lower_bound(spec) if spec else None
            if low is not None and vkey(low)[:2] != vkey(want)[:2]:
                c.add(where, f"{name}{spec} does not match the tested {what} {want}")
    c.ranges([(f.first, f.last) for f in data.cc_floors], "min_compute_capability ranges")
    floors = [vkey(f.min_compute_capability) for f in data.cc_floors]
    if floors != sorted(floors):
        c.add("min_compute_capability", "a later range has a lower floor")
    return c.problems
