"""How each Linux distribution installs an NVIDIA driver branch, per kernel-module flavour and kind
of GPU (``driver_packages.json``), and the facts that choose the flavour (open modules by default
from R560; Blackwell needs them, Maxwell/Pascal/Volta cannot use them) and the WSL2 rule (the
Windows driver only)."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple

from cudadoctor.record import frozen
from cudadoctor.matrix._ecocommon import Checker, Fact, facts_of, find_fact, prov, strs

__all__ = ["TABLES", "DriverPackage", "DriverData", "build", "invariants"]

TABLES = ("driver_packages.json",)
FILE = TABLES[0]


def _major(branch: Optional[str]) -> Optional[int]:
    return int(branch[1:]) if branch else None


@frozen
class DriverPackage:
    distribution: str  # ubuntu | debian | rhel
    ids: Tuple[str, ...]  # os-release IDs it applies to
    versions: Optional[Tuple[str, ...]]  # os-release VERSION_IDs (major); None: every version
    flavour: str  # open | proprietary
    segment: str  # any | datacenter
    first_branch: Optional[str]
    last_branch: Optional[str]
    commands: Tuple[str, ...]  # with {branch}
    source: str
    confidence: str
    note: Optional[str] = None

    def serves(self, distro_id: str, version: Optional[str], branch: int) -> bool:
        if distro_id not in self.ids:
            return False
        if self.versions is not None and version is not None and version.split(".")[0] not in self.versions:
            return False
        low, high = _major(self.first_branch), _major(self.last_branch)
        return (low is None or branch >= low) and (high is None or branch <= high)

    def for_branch(self, branch: int) -> Tuple[str, ...]:
        return tuple(c.replace("{branch}", str(branch)) for c in self.commands)


@frozen
class DriverData:
    packages: Tuple[DriverPackage, ...]
    facts: Tuple[Fact, ...]

    def install(self, distro_id: str, version: Optional[str], flavour: str, datacenter: bool,
                branch: int) -> Optional[DriverPackage]:
        """The record installing ``branch`` on this distribution: the data-centre packaging when the
        GPU is a data-centre one and the distribution has it, else the ordinary one."""
        fits = [p for p in self.packages if p.flavour == flavour and p.serves(distro_id, version, branch)]
        return next((p for p in fits if datacenter and p.segment == "datacenter"), None) or \
            next((p for p in fits if p.segment == "any"), None)

    @property
    def distributions(self) -> Tuple[str, ...]:
        return tuple(dict.fromkeys(p.distribution for p in self.packages))

    def fact(self, fact_id: str) -> Optional[Fact]:
        return find_fact(self.facts, fact_id)


def build(docs: Mapping[str, Mapping[str, Any]]) -> DriverData:
    doc = docs[FILE]
    packages = tuple(
        DriverPackage(distribution=r["distribution"], ids=strs(r["ids"]),
                      versions=strs(r["versions"]) if r["versions"] is not None else None, flavour=r["flavour"],
                      segment=r["segment"], first_branch=r["first_branch"], last_branch=r["last_branch"],
                      commands=strs(r["commands"]), **prov(r))
        for r in doc["records"]
    )
    return DriverData(packages, facts_of(doc))


def invariants(data: DriverData, matrix: Any) -> List[str]:
    """Every command names {branch}; each distribution can install both flavours; the facts the
    advice needs are there; branches named are branches of driver_branches.json."""
    c = Checker(FILE, matrix)
    known = {b.branch for b in matrix.cuda.branches} if matrix is not None else set()
    for p in data.packages:
        where = f"{p.distribution} {p.flavour} {p.segment}"
        if not any("{branch}" in cmd for cmd in p.commands):
            c.add(where, "no command names {branch}")
        for b in (p.first_branch, p.last_branch):
            if b and known and b not in known:
                c.add(where, f"{b} is not a branch of driver_branches.json")
    for dist in data.distributions:
        flavours = {p.flavour for p in data.packages if p.distribution == dist}
        if flavours != {"open", "proprietary"}:
            c.add(dist, f"installs only {', '.join(sorted(flavours))} modules")
    c.facts(data.facts, ("open_default_branch", "wsl_windows_driver_only", "windows_driver_download"))
    return c.problems
