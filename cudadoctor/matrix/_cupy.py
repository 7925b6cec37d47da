"""CuPy: which distribution serves which CUDA, and each major version's compatibility matrix."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple
from cudadoctor.record import frozen

from cudadoctor.matrix._ecocommon import Checker, Fact, facts_of, find_fact, in_range, norm_dist, prov, strs
from cudadoctor.matrix.versions import major, vkey

FILE = "cupy.json"
_KIND_ORDER = {"cuda": 0, "rocm": 1, "meta": 2, "sdist": 3}


@frozen
class CupyDistribution:
    """A PyPI distribution of CuPy: 'cupy-cuda12x' serves CUDA 12.0 ... 12.x."""

    distribution: str
    kind: str  # cuda | rocm | meta | sdist
    cuda_min: Optional[str]
    cuda_max: Optional[str]  # inclusive; '12' = any 12.x
    rocm_min: Optional[str]
    rocm_max: Optional[str]
    first_cupy: Optional[str]  # may be a major only ('9' = some 9.x; see note)
    last_cupy: Optional[str]  # None: still published
    source: str
    confidence: str
    note: Optional[str] = None

    def serves_cuda(self, cuda: str) -> bool:
        return self.kind == "cuda" and in_range(cuda, self.cuda_min, self.cuda_max)

    def shipped_in(self, cupy_version: str) -> bool:
        return in_range(cupy_version, self.first_cupy, self.last_cupy)

    def cupy_majors(self, known: Tuple[int, ...]) -> Tuple[int, ...]:
        """The CuPy majors (of ``known``) that published this distribution."""
        low = major(self.first_cupy) if self.first_cupy else None
        high = major(self.last_cupy) if self.last_cupy else None
        return tuple(m for m in known if (low is None or m >= low) and (high is None or m <= high))


@frozen
class CupyMajor:
    """A row of CuPy's compatibility matrix."""

    version: str  # '14'
    min_compute_capability: Optional[str]
    max_compute_capability: Optional[str]
    cuda_min: Optional[str]
    cuda_max: Optional[str]
    rocm_min: Optional[str]
    rocm_max: Optional[str]
    cudnn_min: Optional[str]
    cudnn_max: Optional[str]
    nccl_min: Optional[str]
    nccl_max: Optional[str]
    python: Tuple[str, ...]
    source: str
    confidence: str
    note: Optional[str] = None

    def supports_cuda(self, cuda: str) -> bool:
        return self.cuda_min is not None and in_range(cuda, self.cuda_min, self.cuda_max)


@frozen
class CupyData:
    distributions: Tuple[CupyDistribution, ...]
    majors: Tuple[CupyMajor, ...]
    facts: Tuple[Fact, ...]

    def package_for(self, cuda: str, cupy_version: Optional[str] = None) -> List[CupyDistribution]:
        """The binary distributions serving CUDA ``cuda`` (optionally: published in
        ``cupy_version``), newest scheme first: 11.7 -> [cupy-cuda11x, cupy-cuda117]."""
        found = [d for d in self.distributions if d.serves_cuda(cuda)
                 and (cupy_version is None or d.shipped_in(cupy_version))]
        return sorted(found, key=lambda d: vkey(d.first_cupy or ""), reverse=True)

    def cuda_for(self, distribution: str) -> Optional[CupyDistribution]:
        name = norm_dist(distribution)
        for d in self.distributions:
            if d.distribution == name:
                return d
        return None

    def major_of(self, cupy_version: str) -> Optional[CupyMajor]:
        number = major(cupy_version)
        for m in self.majors:
            if int(m.version) == number:
                return m
        return None

    def min_compute_capability(self, cupy_version: str) -> Optional[str]:
        row = self.major_of(cupy_version)
        return row.min_compute_capability if row else None

    def fact(self, fact_id: str) -> Optional[Fact]:
        return find_fact(self.facts, fact_id)


def build(doc: Mapping[str, Any]) -> CupyData:
    dists = tuple(
        CupyDistribution(distribution=r["distribution"], kind=r["kind"], cuda_min=r.get("cuda_min"),
                         cuda_max=r.get("cuda_max"), rocm_min=r.get("rocm_min"), rocm_max=r.get("rocm_max"),
                         first_cupy=r.get("first_cupy"), last_cupy=r.get("last_cupy"), **prov(r))
        for r in doc["records"]
    )
    keys = ("min_compute_capability", "max_compute_capability", "cuda_min", "cuda_max", "rocm_min", "rocm_max",
            "cudnn_min", "cudnn_max", "nccl_min", "nccl_max")
    majors = tuple(
        CupyMajor(version=r["version"], python=strs(r["python"]), **{k: r.get(k) for k in keys}, **prov(r))
        for r in doc["majors"]
    )
    return CupyData(dists, majors, facts_of(doc))


def invariants(data: CupyData, matrix: Any) -> List[str]:
    c = Checker(FILE, matrix)
    order = [(_KIND_ORDER.get(d.kind, 9), vkey(d.cuda_min or d.rocm_min or ""), d.distribution)
             for d in data.distributions]
    if order != sorted(order):
        c.add("", "records (by kind, then lowest version served, then name) are not in order")
    names = [d.distribution for d in data.distributions]
    for name in sorted({n for n in names if names.count(n) > 1}):
        c.add(name, "listed twice")
    known = tuple(int(m.version) for m in data.majors)
    for d in data.distributions:
        where = d.distribution
        if norm_dist(where) != where:
            c.add(where, "not a normalised distribution name")
        ranges = {"cuda": (d.cuda_min, d.cuda_max), "rocm": (d.rocm_min, d.rocm_max)}
        for kind, (low, high) in ranges.items():
            if (low is not None or high is not None) != (d.kind == kind):
                c.add(where, f"{kind}_min/{kind}_max must be set exactly for kind '{kind}'")
            c.ordered(where, low, high, f"{kind}_min")
        if d.kind == "cuda":
            if not where.startswith("cupy-cuda"):
                c.add(where, "a CUDA distribution not named cupy-cuda*")
            c.cuda(where, d.cuda_min)
            c.cuda(where, d.cuda_max)
            for number in d.cupy_majors(known):
                row = data.major_of(str(number))
                if row is not None and d.cuda_min is not None and not row.supports_cuda(d.cuda_min):
                    c.add(where, f"serves CUDA {d.cuda_min}, which CuPy v{number} does not support")
        c.ordered(where, d.first_cupy, d.last_cupy, "first_cupy")
    c.sorted_unique([int(m.version) for m in data.majors], [f"v{m.version}" for m in data.majors],
                    "majors (by version)")
    for m in data.majors:
        where = f"v{m.version}"
        c.python(where, m.python)
        c.cuda(where, m.cuda_min)
        c.cuda(where, m.cuda_max)
        for what, low, high in (("cuda_min", m.cuda_min, m.cuda_max), ("rocm_min", m.rocm_min, m.rocm_max),
                                ("cudnn_min", m.cudnn_min, m.cudnn_max), ("nccl_min", m.nccl_min, m.nccl_max),
                                ("min_compute_capability", m.min_compute_capability, m.max_compute_capability)):
            c.ordered(where, low, high, what)
    c.facts(data.facts, ())
    return c.problems
