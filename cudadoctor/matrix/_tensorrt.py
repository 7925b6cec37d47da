"""TensorRT: the CUDA builds of each release, its pip distributions and compute-capability floor."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple
from cudadoctor.record import frozen

from cudadoctor.matrix._ecocommon import (
    Checker,
    Fact,
    build_for,
    facts_of,
    find_fact,
    in_range,
    prov,
    span,
    strs,
)
from cudadoctor.matrix.versions import vkey

FILE = "tensorrt.json"


@frozen
class TrtBuild:
    cuda_major: int
    cuda_min: Optional[str]  # None: not recorded
    cuda_max: Optional[str]
    built_with: Optional[str]
    pip: Tuple[str, ...]  # distributions carrying this build: tensorrt-cu12, ...

    def covers(self, cuda: str) -> Optional[bool]:
        """Does the build support ``cuda``? None when the data does not bound it within the major."""
        if vkey(cuda)[:1] != (self.cuda_major,):
            return False
        if self.cuda_min is None and self.cuda_max is None:
            return None
        return in_range(cuda, self.cuda_min, self.cuda_max)


@frozen
class TrtRelease:
    first: str
    last: str
    builds: Tuple[TrtBuild, ...]  # () : CUDA versions not recorded
    cudnn: Optional[str]
    cudnn_optional: bool
    min_compute_capability: Optional[str]
    python: Optional[Tuple[str, ...]]
    pip: Tuple[str, ...]  # the distribution(s) 'pip install' names: tensorrt, or nvidia-tensorrt before 8.5
    index_url: Optional[str]  # None: PyPI
    pip_default_cuda_major: Optional[int]  # what the 'tensorrt' meta-package installs, where stated
    source: str
    confidence: str
    note: Optional[str] = None

    @property
    def cuda_majors(self) -> Tuple[int, ...]:
        return tuple(b.cuda_major for b in self.builds)

    def build(self, cuda_major: int) -> Optional[TrtBuild]:
        found: Optional[TrtBuild] = build_for(self.builds, cuda_major)
        return found

    def pip_for(self, cuda_major: int) -> Tuple[str, ...]:
        """The distributions to install for CUDA ``cuda_major``: the per-major ones where the
        release has them (10.0+: tensorrt-cu12), else the release's own."""
        b = self.build(cuda_major)
        if b is None:
            return ()
        return b.pip or self.pip

    def contains(self, version: str) -> bool:
        return in_range(version, self.first, self.last)


@frozen
class TrtData:
    releases: Tuple[TrtRelease, ...]
    facts: Tuple[Fact, ...]

    def requirements(self, version: str) -> Optional[TrtRelease]:
        """The release range of ``version`` ('10.14.1.48' -> the 10.14.1 record); a series given
        as major.minor ('10.1') also finds a range starting at one of its patches."""
        for rel in self.releases:
            if rel.contains(version):
                return rel
        series = vkey(version)
        if len(series) == 2:
            for rel in self.releases:
                if vkey(rel.first)[:2] == series:
                    return rel
        return None

    def fact(self, fact_id: str) -> Optional[Fact]:
        return find_fact(self.facts, fact_id)


def build(doc: Mapping[str, Any]) -> TrtData:
    releases = tuple(
        TrtRelease(
            first=r["first"], last=r["last"],
            builds=tuple(TrtBuild(cuda_major=b["cuda_major"], cuda_min=b.get("cuda_min"), cuda_max=b.get("cuda_max"),
                                  built_with=b.get("built_with"), pip=strs(b["pip"])) for b in r["builds"]),
            cudnn=r.get("cudnn"), cudnn_optional=bool(r["cudnn_optional"]),
            min_compute_capability=r.get("min_compute_capability"),
            python=strs(r["python"]) if r.get("python") is not None else None, pip=strs(r["pip"]),
            index_url=r.get("index_url"), pip_default_cuda_major=r.get("pip_default_cuda_major"), **prov(r),
        )
        for r in doc["records"]
    )
    return TrtData(releases, facts_of(doc))


def invariants(data: TrtData, matrix: Any) -> List[str]:
    c = Checker(FILE, matrix)
    c.ranges([(r.first, r.last) for r in data.releases])
    floors = [vkey(r.min_compute_capability) for r in data.releases if r.min_compute_capability]
    if floors != sorted(floors):
        c.add("", "the minimum compute capability goes down in a later release")
    for rel in data.releases:
        where = span(rel.first, rel.last)
        c.python(where, rel.python)
        majors = list(rel.cuda_majors)
        if majors != sorted(set(majors)):
            c.add(where, "builds are not sorted and unique by cuda_major")
        if rel.pip_default_cuda_major is not None and rel.builds and rel.pip_default_cuda_major not in majors:
            c.add(where, f"pip_default_cuda_major {rel.pip_default_cuda_major} has no build")
        for b in rel.builds:
            bw = f"{where}: CUDA {b.cuda_major}"
            c.cuda(bw, str(b.cuda_major))
            for version in (b.cuda_min, b.cuda_max, b.built_with):
                c.cuda_of_major(bw, version, b.cuda_major)
            c.ordered(bw, b.cuda_min, b.cuda_max, "cuda_min")
            for name in b.pip:
                if f"-cu{b.cuda_major}" not in name:
                    c.add(bw, f"pip distribution {name} is not a CUDA {b.cuda_major} one")
    c.facts(data.facts, ())
    return c.problems
