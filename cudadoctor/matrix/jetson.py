"""NVIDIA Jetson: Jetson Linux (L4T) releases with their JetPack, CUDA, cuDNN and TensorRT, the
newest CUDA their BSP driver runs, whether desktop aarch64 (SBSA) CUDA wheels run there and where
framework wheels come from; the Jetson SoCs and their GPUs; and why desktop driver-branch rules
do not apply (``jetson.json``)."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple
from cudadoctor.record import frozen

from cudadoctor.matrix._ecocommon import Checker, Fact, facts_of, find_fact, prov, strs
from cudadoctor.matrix.versions import VersionKey, at_least, vkey

__all__ = ["TABLES", "JetsonData", "JetsonRelease", "JetsonSoc", "JetsonMatch", "build", "invariants"]

TABLES = ("jetson.json",)
FILE = TABLES[0]


@frozen
class JetsonRelease:
    """One set of JetPack components, shared by the L4T releases in ``releases`` ((l4t, jetpack))."""

    releases: Tuple[Tuple[str, str], ...]
    ubuntu: str
    cuda: Optional[str]  # the CUDA toolkit JetPack installs; None: not recorded
    cudnn: Optional[str]
    tensorrt: Optional[str]
    driver_cuda: str  # the newest CUDA the BSP's driver runs (nvidia-smi's "CUDA Version")
    python: str  # the Python ("3.10") the JetPack's wheels are built for
    socs: Tuple[str, ...]
    sbsa: Optional[bool]  # desktop Linux aarch64 (SBSA) CUDA wheels run here; None: unknown
    wheel_index: Optional[str]  # where torch wheels for this JetPack come from
    wheels: str  # the same in words
    source: str
    confidence: str
    note: Optional[str] = None
    torch_wheel: Optional[str] = None  # a torch wheel file, where no pip index serves this JetPack

    def jetpack(self, l4t: str) -> Optional[str]:
        return next((jp for rel, jp in self.releases if rel == l4t), None)


@frozen
class JetsonSoc:
    soc: str  # tegra234
    family: str  # Jetson Orin
    compute_capability: str
    gpu_names: Tuple[str, ...]  # what NVML / nvidia-smi call its GPU
    source: str
    confidence: str
    note: Optional[str] = None


@frozen
class JetsonMatch:
    """What the data says about an L4T release: its record, the JetPack, and whether the match is
    exact or the nearest older release of the same L4T major.minor (``assumed_from``)."""

    release: JetsonRelease
    l4t: str
    jetpack: Optional[str]
    assumed_from: Optional[str] = None  # the L4T release whose record was taken, when not exact


@frozen
class JetsonData:
    releases: Tuple[JetsonRelease, ...]
    socs: Tuple[JetsonSoc, ...]
    facts: Tuple[Fact, ...]

    def l4t_releases(self) -> List[str]:
        return sorted((rel for r in self.releases for rel, _ in r.releases), key=vkey)

    @property
    def newest_l4t(self) -> Optional[str]:
        known = self.l4t_releases()
        return known[-1] if known else None

    def match(self, l4t: str) -> Optional[JetsonMatch]:
        """The record of an L4T release ('36.4.3'); else the newest known release of the same
        major.minor below it (a patch release the data does not list yet); else None."""
        key = vkey(l4t)
        if not key:
            return None
        for r in self.releases:
            jp = r.jetpack(l4t)
            if jp is not None:
                return JetsonMatch(r, l4t, jp)
        older = [rel for rel in self.l4t_releases() if vkey(rel)[:2] == key[:2] and vkey(rel) < key]
        if not older:
            return None
        base = self.match(older[-1])
        return JetsonMatch(base.release, l4t, base.jetpack, assumed_from=older[-1]) if base else None

    def by_jetpack(self, jetpack: str) -> Optional[JetsonMatch]:
        """The newest L4T release of a JetPack ('6.2'; '6' for the newest 6.x); None: unknown."""
        key = vkey(jetpack)
        pairs = [(vkey(l4t), l4t, jp, r) for r in self.releases for l4t, jp in r.releases]
        found = [p for p in pairs if key and vkey(p[2]) == key] or \
                [p for p in pairs if key and vkey(p[2])[:len(key)] == key]
        if not found:
            return None
        _, l4t, jp, r = max(found, key=lambda t: t[0])
        return JetsonMatch(r, l4t, jp)

    def soc(self, name: Optional[str]) -> Optional[JetsonSoc]:
        return next((s for s in self.socs if s.soc == name), None) if name else None

    def soc_of_gpu(self, gpu_name: Optional[str]) -> Optional[JetsonSoc]:
        """The SoC whose integrated GPU NVML / nvidia-smi calls ``gpu_name`` ('Orin (nvgpu)')."""
        return next((s for s in self.socs if gpu_name and gpu_name in s.gpu_names), None)

    def fact(self, fact_id: str) -> Optional[Fact]:
        return find_fact(self.facts, fact_id)


def build(docs: Mapping[str, Mapping[str, Any]]) -> JetsonData:
    doc = docs[FILE]
    releases = tuple(
        JetsonRelease(
            releases=tuple((p["l4t"], p["jetpack"]) for p in r["releases"]), ubuntu=r["ubuntu"], cuda=r["cuda"],
            cudnn=r["cudnn"], tensorrt=r["tensorrt"], driver_cuda=r["driver_cuda"], python=r["python"],
            socs=strs(r["socs"]), sbsa=r["sbsa"], wheel_index=r["wheel_index"], wheels=r["wheels"],
            torch_wheel=r.get("torch_wheel"), **prov(r),
        )
        for r in doc["records"]
    )
    socs = tuple(
        JetsonSoc(soc=s["soc"], family=s["family"], compute_capability=s["compute_capability"],
                  gpu_names=strs(s["gpu_names"]), **prov(s))
        for s in doc["socs"]
    )
    return JetsonData(releases, socs, facts_of(doc))


def invariants(data: JetsonData, matrix: Any) -> List[str]:
    """L4T releases sorted and unique across records; components ordered (the toolkit no newer than
    the driver's CUDA); SoCs known; every CUDA version a release of cuda_toolkits.json."""
    c = Checker(FILE, matrix)
    l4ts = [rel for r in data.releases for rel, _ in r.releases]
    c.sorted_unique([vkey(x) for x in l4ts], l4ts, "L4T releases")
    firsts: List[VersionKey] = [vkey(r.releases[0][0]) for r in data.releases]
    if firsts != sorted(firsts):
        c.add("records", "not sorted by their first L4T release")
    known_socs = {s.soc for s in data.socs}
    c.sorted_unique([vkey(s.compute_capability) + (0,) for s in data.socs], [s.soc for s in data.socs],
                    "socs (by compute capability)")
    names = [n for s in data.socs for n in s.gpu_names]
    if len(names) != len(set(names)):
        c.add("socs", "a GPU name belongs to two SoCs")
    for r in data.releases:
        where = f"L4T {r.releases[0][0]}"
        for soc in r.socs:
            if soc not in known_socs:
                c.add(where, f"SoC {soc} is not in socs")
        c.cuda(where, r.cuda)
        c.cuda(where, r.driver_cuda)
        if r.cuda and not at_least(r.driver_cuda, r.cuda):
            c.add(where, f"CUDA {r.cuda} is newer than the driver's CUDA {r.driver_cuda}")
        jetpacks = [vkey(jp) for _, jp in r.releases]
        if jetpacks != sorted(jetpacks):
            c.add(where, "JetPack versions are not in the order of their L4T releases")
        if r.sbsa is False and r.wheel_index and "download.pytorch.org" in r.wheel_index:
            c.add(where, "names the desktop PyTorch index for a JetPack that does not follow SBSA")
    c.facts(data.facts, ("driver_in_bsp", "cuda_upgrade_from_jetpack"), versions=("cuda_upgrade_from_jetpack",))
    return c.problems
