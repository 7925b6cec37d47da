"""ONNX Runtime (onnxruntime-gpu): the CUDA/cuDNN each build targets and the index serving it."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple
from cudadoctor.record import frozen

from cudadoctor.matrix._ecocommon import Checker, Fact, facts_of, find_fact, in_range, prov, span
from cudadoctor.matrix.versions import major, vkey

FILE = "onnxruntime.json"


@frozen
class OrtBuild:
    """The CUDA ``cuda_major`` build of onnxruntime-gpu for releases first..last."""

    first: str
    last: str
    package: str
    cuda_major: int
    cuda: str  # '11.8', or '12' for any 12.x
    cudnn: str  # '8.2.4', or '9' for any 9.x
    cudnn_windows: Optional[str]
    pypi_default: bool  # what 'pip install onnxruntime-gpu' from PyPI gives
    index_url: str  # where pip finds this build (--extra-index-url unless it is PyPI's)
    source: str
    confidence: str
    note: Optional[str] = None

    @property
    def cudnn_major(self) -> Optional[int]:
        return major(self.cudnn)

    def contains(self, version: str) -> bool:
        return in_range(version, self.first, self.last)


@frozen
class OrtData:
    builds: Tuple[OrtBuild, ...]
    facts: Tuple[Fact, ...]

    def requirements(self, version: str) -> List[OrtBuild]:
        """Every CUDA build of release ``version``, by CUDA major."""
        return sorted((b for b in self.builds if b.contains(version)), key=lambda b: b.cuda_major)

    def pypi_build(self, version: str) -> Optional[OrtBuild]:
        for b in self.requirements(version):
            if b.pypi_default:
                return b
        return None

    def build(self, version: str, cuda_major: int) -> Optional[OrtBuild]:
        for b in self.requirements(version):
            if b.cuda_major == cuda_major:
                return b
        return None

    def fact(self, fact_id: str) -> Optional[Fact]:
        return find_fact(self.facts, fact_id)


def build(doc: Mapping[str, Any]) -> OrtData:
    builds = tuple(
        OrtBuild(first=r["first"], last=r["last"], package=r["package"], cuda_major=r["cuda_major"], cuda=r["cuda"],
                 cudnn=r["cudnn"], cudnn_windows=r.get("cudnn_windows"), pypi_default=bool(r["pypi_default"]),
                 index_url=r["index_url"], **prov(r))
        for r in doc["records"]
    )
    return OrtData(builds, facts_of(doc))


def invariants(data: OrtData, matrix: Any) -> List[str]:
    c = Checker(FILE, matrix)
    labels = [f"{span(b.first, b.last)} CUDA {b.cuda_major}" for b in data.builds]
    c.sorted_unique([(vkey(b.first), b.cuda_major) for b in data.builds], labels,
                    "records (by first version, then CUDA major)")
    for cuda_major in sorted({b.cuda_major for b in data.builds}):
        same = [(b.first, b.last) for b in data.builds if b.cuda_major == cuda_major]
        c.ranges(same, f"CUDA {cuda_major} ranges")
    pypi = {b.index_url for b in data.builds if b.pypi_default}
    if len(pypi) > 1:
        c.add("", "the PyPI-default builds name different indexes")
    for b, where in zip(data.builds, labels):
        c.cuda_of_major(where, b.cuda, b.cuda_major)
        if not b.pypi_default and b.index_url in pypi:
            c.add(where, "not the PyPI default but served from the PyPI-default index")
        defaults = [x for x in data.requirements(b.first) if x.pypi_default]
        if len(defaults) != 1:
            c.add(where, f"release {b.first} has {len(defaults)} PyPI-default builds, not 1")
    c.facts(data.facts, ("pypi_default_cuda12_first", "pypi_default_cuda13_first"),
            versions=("pypi_default_cuda12_first", "pypi_default_cuda13_first"))
    for fact_id, cuda_major in (("pypi_default_cuda12_first", 12), ("pypi_default_cuda13_first", 13)):
        fact = data.fact(fact_id)
        if fact is None:
            continue
        at = data.pypi_build(fact.value)
        earlier = [b for b in data.builds if b.pypi_default and b.cuda_major == cuda_major
                   and vkey(b.first) < vkey(fact.value)[: len(vkey(b.first))]]
        if at is None or at.cuda_major != cuda_major or earlier:
            c.add(f"facts: {fact_id}", f"does not match the first PyPI-default CUDA {cuda_major} build")
    return c.problems
