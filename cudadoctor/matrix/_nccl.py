"""NCCL: the CUDA builds (redistributables, pip wheels per CUDA major) of each release."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple
from cudadoctor.record import frozen

from cudadoctor.matrix._ecocommon import Checker, cu_suffix, in_range, prov
from cudadoctor.matrix.versions import matches, vkey

FILE = "nccl.json"


@frozen
class NcclBuild:
    cuda_major: int
    cuda: Optional[str]  # the toolkit of a redistributable build; None for a per-major wheel
    pip: Optional[str]  # nvidia-nccl-cu12, ...
    pypi_date: Optional[str]


@frozen
class NcclRelease:
    version: str
    builds: Tuple[NcclBuild, ...]
    source: str
    confidence: str
    note: Optional[str] = None

    @property
    def cuda_majors(self) -> Tuple[int, ...]:
        return tuple(sorted({b.cuda_major for b in self.builds}))

    def pip_for(self, cuda_major: int) -> Optional[str]:
        for b in self.builds:
            if b.cuda_major == cuda_major and b.pip:
                return b.pip
        return None

    def has_build_for(self, cuda: str) -> bool:
        """A build of the same CUDA major (minor-version compatibility covers the minors)."""
        return vkey(cuda)[:1] in {(m,) for m in self.cuda_majors}


@frozen
class NcclData:
    releases: Tuple[NcclRelease, ...]

    def release(self, version: str) -> Optional[NcclRelease]:
        """Exactly ``version`` ('2.21.5'), else the newest release of a partial one ('2.21')."""
        for rel in self.releases:
            if rel.version == version:
                return rel
        found = [r for r in self.releases if matches(r.version, version)]
        return found[-1] if found else None

    def releases_at_least(self, minimum: str) -> List[NcclRelease]:
        return [r for r in self.releases if in_range(r.version, minimum, None)]


def build(doc: Mapping[str, Any]) -> NcclData:
    return NcclData(tuple(
        NcclRelease(version=r["version"],
                    builds=tuple(NcclBuild(cuda_major=b["cuda_major"], cuda=b.get("cuda"), pip=b.get("pip"),
                                           pypi_date=b.get("pypi_date")) for b in r["builds"]),
                    **prov(r))
        for r in doc["records"]
    ))


def invariants(data: NcclData, matrix: Any) -> List[str]:
    c = Checker(FILE, matrix)
    c.sorted_unique([vkey(r.version) for r in data.releases], [r.version for r in data.releases],
                    "records (by version)")
    for rel in data.releases:
        order = [(b.cuda_major, vkey(b.cuda or "")) for b in rel.builds]
        if order != sorted(order):
            c.add(rel.version, "builds are not sorted by CUDA version")
        seen = set()
        for b in rel.builds:
            where = f"{rel.version}: CUDA {b.cuda_major}"
            c.cuda(where, str(b.cuda_major))
            c.cuda_of_major(where, b.cuda, b.cuda_major)
            if b.pip is not None and cu_suffix(b.pip) != b.cuda_major:
                c.add(where, f"{b.pip} is not a CUDA {b.cuda_major} wheel")
            key = (b.cuda_major, b.cuda, b.pip)
            if key in seen:
                c.add(where, "build listed twice")
            seen.add(key)
    return c.problems
