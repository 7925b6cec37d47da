"""CUDA.jl (JuliaGPU): the CUDA toolkits, driver, GPU and Julia each release range needs."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple
from cudadoctor.record import frozen

from cudadoctor.matrix._ecocommon import Checker, Fact, facts_of, find_fact, in_range, prov, span
from cudadoctor.matrix.versions import vkey

FILE = "julia.json"


@frozen
class CudaJlToolkit:
    """The CUDA runtimes of one major a CUDA.jl release can use; the requirement fields override
    the release's when set."""

    cuda_major: int
    cuda_min: Optional[str]
    cuda_max: Optional[str]  # None: any later minor of the major
    min_compute_capability: Optional[str]
    min_driver_for_cuda: Optional[str]


@frozen
class CudaJlRelease:
    first: str
    last: str
    toolkits: Tuple[CudaJlToolkit, ...]
    min_driver_for_cuda: Optional[str]  # the driver must support this CUDA version
    max_driver_cuda_major: Optional[int]  # drivers for a newer CUDA major are rejected
    min_compute_capability: Optional[str]
    min_julia: Optional[str]
    source: str
    confidence: str
    note: Optional[str] = None

    @property
    def cuda_majors(self) -> Tuple[int, ...]:
        return tuple(t.cuda_major for t in self.toolkits)

    def toolkit(self, cuda_major: int) -> Optional[CudaJlToolkit]:
        for t in self.toolkits:
            if t.cuda_major == cuda_major:
                return t
        return None

    def supports_cuda(self, cuda: str) -> bool:
        t = self.toolkit(vkey(cuda)[0]) if vkey(cuda) else None
        return t is not None and in_range(cuda, t.cuda_min, t.cuda_max)

    def min_compute_capability_for(self, cuda_major: int) -> Optional[str]:
        t = self.toolkit(cuda_major)
        return (t.min_compute_capability if t and t.min_compute_capability else None) or self.min_compute_capability

    def driver_cuda_for(self, cuda_major: int) -> Optional[str]:
        """The CUDA version the driver must support to use a runtime of ``cuda_major``
        (``matrix.cuda.min_driver`` of it gives the driver number)."""
        t = self.toolkit(cuda_major)
        return (t.min_driver_for_cuda if t and t.min_driver_for_cuda else None) or self.min_driver_for_cuda

    def contains(self, version: str) -> bool:
        return in_range(version, self.first, self.last)


@frozen
class CudaJlData:
    releases: Tuple[CudaJlRelease, ...]
    facts: Tuple[Fact, ...]

    def requirements(self, version: str) -> Optional[CudaJlRelease]:
        for rel in self.releases:
            if rel.contains(version):
                return rel
        return None

    def fact(self, fact_id: str) -> Optional[Fact]:
        return find_fact(self.facts, fact_id)


def build(doc: Mapping[str, Any]) -> CudaJlData:
    releases = tuple(
        CudaJlRelease(
            first=r["first"], last=r["last"],
            toolkits=tuple(CudaJlToolkit(cuda_major=t["cuda_major"], cuda_min=t.get("cuda_min"),
                                         cuda_max=t.get("cuda_max"),
                                         min_compute_capability=t.get("min_compute_capability"),
                                         min_driver_for_cuda=t.get("min_driver_for_cuda")) for t in r["toolkits"]),
            min_driver_for_cuda=r.get("min_driver_for_cuda"), max_driver_cuda_major=r.get("max_driver_cuda_major"),
            min_compute_capability=r.get("min_compute_capability"), min_julia=r.get("min_julia"), **prov(r),
        )
        for r in doc["records"]
    )
    return CudaJlData(releases, facts_of(doc))


def invariants(data: CudaJlData, matrix: Any) -> List[str]:
    c = Checker(FILE, matrix)
    c.ranges([(r.first, r.last) for r in data.releases])
    julias = [vkey(r.min_julia) for r in data.releases if r.min_julia]
    if julias != sorted(julias):
        c.add("", "the minimum Julia goes down in a later release")
    for rel in data.releases:
        where = span(rel.first, rel.last)
        c.cuda(where, rel.min_driver_for_cuda)
        majors = list(rel.cuda_majors)
        if majors != sorted(set(majors)):
            c.add(where, "toolkits are not sorted and unique by cuda_major")
        if rel.max_driver_cuda_major is not None and majors and rel.max_driver_cuda_major < max(majors):
            c.add(where, f"rejects drivers above CUDA {rel.max_driver_cuda_major} but lists CUDA {max(majors)} runtimes")
        for t in rel.toolkits:
            tw = f"{where}: CUDA {t.cuda_major}"
            c.cuda(tw, str(t.cuda_major))
            c.cuda_of_major(tw, t.cuda_min, t.cuda_major)
            c.cuda_of_major(tw, t.cuda_max, t.cuda_major)
            c.ordered(tw, t.cuda_min, t.cuda_max, "cuda_min")
            c.cuda(tw, t.min_driver_for_cuda)
    c.facts(data.facts, ())
    return c.problems
