"""CUDA toolkits and drivers: the minimum driver of each release, the minor-version
compatibility floor of each major, and the newest CUDA of each driver branch.

NVIDIA publishes two rules and tools tend to pick one silently (shared/USERS.md #5):
- the per-release minimum ("CUDA 12.4 GA needs >= 550.54.14"): with it, everything works,
  PTX JIT of the release's PTX included;
- the minor-version-compatibility floor ("any 12.x runs on >= 525.60.13"): above it a 12.x build
  runs, but PTX newer than the driver cannot be JIT-compiled and some new APIs fail.
:meth:`CudaData.driver_support` says which of the two applies.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple
from cudadoctor.record import frozen

from cudadoctor.matrix.load import provenance
from cudadoctor.matrix.versions import at_least, major, matches, vkey

TABLES = ("cuda_toolkits.json", "cuda_minor_compat.json", "driver_branches.json")
FILE_OF = {"toolkits": "cuda_toolkits.json", "floors": "cuda_minor_compat.json", "branches": "driver_branches.json"}


class _PerOs:
    """Rows with a minimum driver per OS."""

    linux_min_driver: Optional[str]
    windows_min_driver: Optional[str]

    def min_driver(self, os: str) -> Optional[str]:
        return self.windows_min_driver if os == "windows" else self.linux_min_driver


@frozen
class ToolkitRelease(_PerOs):
    cuda: str  # "12.4.0"
    label: str
    linux_min_driver: Optional[str]
    windows_min_driver: Optional[str]
    driver_branch: Optional[str]
    prerelease: bool
    source: str
    confidence: str
    note: Optional[str] = None
    pypi: Tuple[str, ...] = ()  # PyPI's cuda-toolkit meta-package versions that install it ('13.4.2', '13.4.3')


@frozen
class MinorCompatFloor(_PerOs):
    cuda_major: int
    minor_version_compatibility: bool
    linux_min_driver: Optional[str]
    windows_min_driver: Optional[str]
    source: str
    confidence: str
    note: Optional[str] = None


@frozen
class DriverBranch:
    branch: str  # "R535"
    major: int
    max_cuda: str  # "12.2"
    designation: Optional[str]
    source: str
    confidence: str
    note: Optional[str] = None
    end_of_life: Optional[str] = None  # as NVIDIA's table says it: "June 2028"


@frozen
class DriverSupport:
    """Can a driver run code built for a CUDA version, and by which rule?

    ``kind``: ``native`` (at or above the release's own minimum), ``minor_compat`` (above the
    major's floor only: no PTX JIT of newer PTX), ``too_old`` (below the floor), or ``unknown``
    (a version the data has no row for)."""

    kind: str
    required: Optional[str]  # the release's own minimum driver
    floor: Optional[str]  # the major's minor-version-compatibility floor
    release: Optional[ToolkitRelease]
    floor_record: Optional[MinorCompatFloor]


@frozen
class CudaData:
    toolkits: Tuple[ToolkitRelease, ...]
    floors: Tuple[MinorCompatFloor, ...]
    branches: Tuple[DriverBranch, ...]

    # ------------------------------------------------------------------ queries

    def release(self, cuda: str) -> Optional[ToolkitRelease]:
        """The release ``cuda`` names: exact ('12.4.1'), or the GA of a minor ('12.4' -> 12.4.0,
        the lowest update, whose minimum driver is the lowest of that minor)."""
        exact = [t for t in self.toolkits if t.cuda == cuda]
        if exact:
            return exact[0]
        if len(vkey(cuda)) < 3:
            same = [t for t in self.toolkits if matches(t.cuda, cuda) and not t.prerelease]
            return same[0] if same else None
        return None

    def release_of_pypi(self, version: str) -> Optional[ToolkitRelease]:
        """The CUDA release a version of PyPI's cuda-toolkit meta-package installs ('13.4.3' ->
        13.4.2: a re-release of the same components; '12.8.2.0' -> 12.8.1)."""
        key = vkey(version)
        return next((t for t in self.toolkits if any(vkey(p) == key[:len(vkey(p))] and not any(key[len(vkey(p)):])
                                                     for p in t.pypi)), None)

    def min_driver(self, cuda: str, os: str = "linux") -> Optional[str]:
        """The lowest driver NVIDIA lists for ``cuda`` on ``os``; for a release without its own
        row, the nearest earlier update of the same minor (updates share a driver branch)."""
        release = self.release(cuda)
        if release is not None and release.min_driver(os):
            return release.min_driver(os)
        earlier = [t for t in self.toolkits if matches(t.cuda, ".".join(map(str, vkey(cuda)[:2])))
                   and vkey(t.cuda) <= vkey(cuda) and t.min_driver(os)]
        return earlier[-1].min_driver(os) if earlier else None

    def floor(self, cuda_major: int) -> Optional[MinorCompatFloor]:
        for rec in self.floors:
            if rec.cuda_major == cuda_major:
                return rec
        return None

    def driver_support(self, driver: str, cuda: str, os: str = "linux") -> DriverSupport:
        release = self.release(cuda)
        required = self.min_driver(cuda, os)
        floor_rec = self.floor(major(cuda) or -1)
        floor = floor_rec.min_driver(os) if floor_rec and floor_rec.minor_version_compatibility else None
        branch = release.driver_branch if release else None
        if required and at_least(driver, required):
            kind = "native"
        elif required is None and branch and (major(driver) or 0) >= int(branch[1:]):
            kind = "native"  # NVIDIA names only a branch for this release (CUDA 13.4: R615)
        elif floor and at_least(driver, floor):
            kind = "minor_compat"
        elif required or floor:
            kind = "too_old"
        else:
            kind = "unknown"
        return DriverSupport(kind, required, floor, release, floor_rec)

    def branch_of(self, driver: str) -> Optional[DriverBranch]:
        """The branch a driver version belongs to: 535.104.05 -> R535 (or the newest branch
        below it, for a branch the data does not list)."""
        number = major(driver)
        if number is None:
            return None
        below = [b for b in self.branches if b.major <= number]
        return max(below, key=lambda b: b.major) if below else None

    def newest_cuda_for_driver(self, driver: str) -> Optional[str]:
        """What nvidia-smi prints as 'CUDA Version' for this driver."""
        branch = self.branch_of(driver)
        return branch.max_cuda if branch else None


def build(docs: Mapping[str, Mapping[str, Any]]) -> CudaData:
    toolkits = tuple(
        ToolkitRelease(
            cuda=r["cuda"], label=r["label"], linux_min_driver=r.get("linux_min_driver"),
            windows_min_driver=r.get("windows_min_driver"), driver_branch=r.get("driver_branch"),
            prerelease=bool(r.get("prerelease", False)), **provenance(r), pypi=tuple(r.get("pypi", ())),
        )
        for r in docs["cuda_toolkits.json"]["records"]
    )
    floors = tuple(
        MinorCompatFloor(
            cuda_major=r["cuda_major"], minor_version_compatibility=r["minor_version_compatibility"],
            linux_min_driver=r.get("linux_min_driver"), windows_min_driver=r.get("windows_min_driver"), **provenance(r),
        )
        for r in docs["cuda_minor_compat.json"]["records"]
    )
    branches = tuple(
        DriverBranch(branch=r["branch"], major=r["major"], max_cuda=r["max_cuda"],
                     designation=r.get("designation"), end_of_life=r.get("end_of_life"), **provenance(r))
        for r in docs["driver_branches.json"]["records"]
    )
    return CudaData(toolkits, floors, branches)


def invariants(data: CudaData, matrix: Any) -> List[str]:
    """Sorted tables, unique keys, and minimum drivers that never go down within a minor."""
    problems: List[str] = []
    keys = [vkey(t.cuda) for t in data.toolkits]
    if keys != sorted(keys):
        problems.append("cuda_toolkits.json: records are not sorted by cuda version")
    if len(set(keys)) != len(keys):
        problems.append("cuda_toolkits.json: a cuda version is listed twice")
    for prev, cur in zip(data.toolkits, data.toolkits[1:]):
        same_minor = vkey(prev.cuda)[:2] == vkey(cur.cuda)[:2]
        for os in ("linux", "windows"):
            before, now = prev.min_driver(os), cur.min_driver(os)
            if same_minor and before and now and not at_least(now, before):
                problems.append(f"cuda_toolkits.json: {cur.cuda}: {os} minimum {now} is below {prev.cuda}'s {before}")
    pypi = [vkey(v) for t in data.toolkits for v in t.pypi]
    if len(set(pypi)) != len(pypi):
        problems.append("cuda_toolkits.json: a cuda-toolkit meta-package version (pypi) is listed under two releases")
    for t in data.toolkits:
        if t.pypi and vkey(t.pypi[0])[:2] != vkey(t.cuda)[:2]:
            problems.append(f"cuda_toolkits.json: {t.cuda}: pypi {t.pypi[0]} is of another minor")
    majors = [b.major for b in data.branches]
    if majors != sorted(majors) or len(set(majors)) != len(majors):
        problems.append("driver_branches.json: branches are not sorted and unique")
    for b in data.branches:
        if b.branch != f"R{b.major}":
            problems.append(f"driver_branches.json: {b.branch}: major {b.major} does not match the name")
    maxima = [vkey(b.max_cuda) for b in data.branches]
    if maxima != sorted(maxima):
        problems.append("driver_branches.json: a newer branch supports an older CUDA than its predecessor")
    floors = [f.cuda_major for f in data.floors]
    if floors != sorted(set(floors)):
        problems.append("cuda_minor_compat.json: majors are not sorted and unique")
    for f in data.floors:
        if f.minor_version_compatibility and not f.linux_min_driver:
            problems.append(f"cuda_minor_compat.json: CUDA {f.cuda_major}: compatibility without a Linux floor")
    return problems
