"""Packages built against one torch release: Triton (the torch -> triton pins and Triton's minimum
compute capability per release, ``triton.json``), flash-attn (its generations' compute capability
and how a wheel names its build, ``flash_attn.json``), xformers and vLLM (the torch each release's
wheels pin, ``xformers.json``, ``vllm.json``)."""

from __future__ import annotations

import re
from typing import Any, List, Mapping, Optional, Tuple
from cudadoctor.record import frozen

from cudadoctor.matrix._ecocommon import Checker, Fact, facts_of, find_fact, in_range, prov, span, spec_problems
from cudadoctor.matrix.versions import vkey

__all__ = ["TABLES", "AddonData", "TritonPin", "TritonRelease", "FlashAttnGeneration", "TorchPin", "build",
           "invariants", "spec_allows"]

TABLES = ("triton.json", "flash_attn.json", "xformers.json", "vllm.json")
NAMES = ("triton", "flash-attn", "xformers", "vllm")  # the packages of TABLES, as probes/addons.py reads them


@frozen
class TritonPin:
    torch: str
    triton: str
    spec: str  # as the torch wheel writes it: '==3.4.0', '~=3.8.0'
    source: str
    confidence: str
    note: Optional[str] = None


@frozen
class TritonRelease:
    first: str
    last: Optional[str]
    min_compute_capability: str
    source: str
    confidence: str
    note: Optional[str] = None

    def contains(self, version: str) -> bool:
        return in_range(version, self.first, self.last)


@frozen
class FlashAttnGeneration:
    package: str  # flash-attn | flash-attn-3
    first: str
    last: Optional[str]
    min_compute_capability: str
    max_compute_capability: Optional[str]
    source: str
    confidence: str
    note: Optional[str] = None

    def contains(self, version: str) -> bool:
        return in_range(version, self.first, self.last)


@frozen
class TorchPin:
    """The torch a release of xformers or vLLM pins in its wheels' METADATA, and (vLLM) the
    Python versions the wheels accept."""

    version: str
    torch: str  # '==2.8.0', '>=2.10'
    source: str
    confidence: str
    note: Optional[str] = None
    requires_python: Optional[str] = None  # '<3.15,>=3.11' as the wheels' Requires-Python says; None: not recorded


@frozen
class AddonData:
    triton_pins: Tuple[TritonPin, ...]
    triton_releases: Tuple[TritonRelease, ...]
    triton_facts: Tuple[Fact, ...]
    flash_attn: Tuple[FlashAttnGeneration, ...]
    flash_attn_facts: Tuple[Fact, ...]
    xformers: Tuple[TorchPin, ...]
    vllm: Tuple[TorchPin, ...]
    vllm_facts: Tuple[Fact, ...]

    # ------------------------------------------------------------------ Triton

    def triton_pin(self, torch_version: str) -> Optional[TritonPin]:
        """The triton a torch release's Linux wheels require ('2.8.0+cu128' -> ==3.4.0)."""
        base = vkey(torch_version)
        return next((p for p in self.triton_pins if vkey(p.torch) == base), None)

    def triton_release(self, triton_version: str) -> Optional[TritonRelease]:
        return next((r for r in self.triton_releases if r.contains(triton_version)), None)

    @property
    def inductor_min_compute_capability(self) -> Optional[str]:
        fact = find_fact(self.triton_facts, "inductor_min_compute_capability")
        return fact.value if fact else None

    # ------------------------------------------------------------------ flash-attn

    def flash_attn_generation(self, package: str, version: str) -> Optional[FlashAttnGeneration]:
        """The generation of distribution ``package`` at ``version``; flash-attn-3's own versions
        start at 3.0 whatever the distribution calls them."""
        for gen in self.flash_attn:
            if gen.package == package and (package != "flash-attn" or gen.contains(version)):
                return gen
        return None

    # ------------------------------------------------------------------ xformers, vLLM

    def xformers_torch(self, version: str) -> Optional[TorchPin]:
        return _pin(self.xformers, version)

    def vllm_torch(self, version: str) -> Optional[TorchPin]:
        return _pin(self.vllm, version)

    @property
    def vllm_min_compute_capability(self) -> Optional[Fact]:
        return find_fact(self.vllm_facts, "min_compute_capability")

    def vllm_python(self, version: str) -> Optional[str]:
        """The Requires-Python of a vLLM release's wheels ('0.32.0' -> '<3.15,>=3.11'), if recorded."""
        pin = self.vllm_torch(version)
        return pin.requires_python if pin else None

    def vllm_supports_python(self, version: str, python: str) -> Optional[bool]:
        """Whether a vLLM release's wheels accept that Python ('3.10'); None when not recorded."""
        spec = self.vllm_python(version)
        return spec_allows(spec, python) if spec else None

    @property
    def vllm_pypi_wheel_cuda_major(self) -> Optional[Fact]:
        """The CUDA major of vLLM's PyPI wheels (13), with the sources that say so."""
        return find_fact(self.vllm_facts, "pypi_wheel_cuda_major")

    @property
    def vllm_pypi_wheel_min_compute_capability(self) -> Optional[Fact]:
        """The lowest compute capability vLLM's (CUDA 13) PyPI wheels run on in practice (7.5)."""
        return find_fact(self.vllm_facts, "pypi_wheel_min_compute_capability")

    @property
    def vllm_platforms(self) -> Optional[Fact]:
        """The operating systems vLLM supports ('linux'), with the docs that say so."""
        return find_fact(self.vllm_facts, "platforms")

    def newest(self, name: str) -> Optional[str]:
        rows = {"xformers": self.xformers, "vllm": self.vllm}.get(name, ())
        return max((r.version for r in rows), key=_pkey, default=None)


def _pkey(version: str) -> Tuple[Any, ...]:
    """'0.6.4.post1' sorts after '0.6.4' and before '0.6.5'."""
    m = re.match(r"^([\d.]*\d)(?:\.post(\d+))?", version or "")
    if not m:
        return ((), -1)
    return (vkey(m.group(1)), int(m.group(2)) if m.group(2) else -1)


def _pin(rows: Tuple[TorchPin, ...], version: str) -> Optional[TorchPin]:
    want = _pkey(version)
    return next((r for r in rows if _pkey(r.version) == want), None)


def spec_allows(spec: str, version: str) -> Optional[bool]:
    """Whether ``version`` satisfies a simple pin ('==2.8.0', '>=2.10', '~=3.8.0', commas = and);
    None when the spec has a clause this does not read. Local versions ('+cu128') are ignored."""
    have = vkey(version.split("+", 1)[0])
    if not have:
        return None
    for clause in spec.split(","):
        m = re.match(r"^\s*(==|>=|~=|<=|<|>|!=)\s*(\d+(?:\.\d+)*)(\.\*)?\s*$", clause)
        if not m:
            return None
        op, want = m.group(1), vkey(m.group(2))
        padded = have + (0,) * max(0, len(want) - len(have))
        if op == "==" and (padded[: len(want)] != want if m.group(3) or len(want) < len(have) else padded != want):
            return False
        if op == "!=" and padded[: len(want)] == want:
            return False
        if op == ">=" and padded < want:
            return False
        if op == "<=" and padded[: len(want)] > want:
            return False
        if op == ">" and padded <= want:
            return False
        if op == "<" and padded >= want:
            return False
        if op == "~=" and (padded < want or padded[: len(want) - 1] != want[:-1]):
            return False
    return True


def build(docs: Mapping[str, Mapping[str, Any]]) -> AddonData:
    tri, fa, xf, vl = (docs[name] for name in TABLES)
    return AddonData(
        triton_pins=tuple(TritonPin(torch=r["torch"], triton=r["triton"], spec=r["spec"], **prov(r)) for r in tri["records"]),
        triton_releases=tuple(TritonRelease(first=r["first"], last=r["last"],
                                            min_compute_capability=r["min_compute_capability"], **prov(r))
                              for r in tri["releases"]),
        triton_facts=facts_of(tri),
        flash_attn=tuple(FlashAttnGeneration(package=r["package"], first=r["first"], last=r["last"],
                                             min_compute_capability=r["min_compute_capability"],
                                             max_compute_capability=r["max_compute_capability"], **prov(r))
                         for r in fa["records"]),
        flash_attn_facts=facts_of(fa),
        xformers=tuple(TorchPin(version=r["version"], torch=r["torch"], **prov(r)) for r in xf["records"]),
        vllm=tuple(TorchPin(version=r["version"], torch=r["torch"], requires_python=r.get("requires_python"), **prov(r))
                   for r in vl["records"]),
        vllm_facts=facts_of(vl),
    )


def invariants(data: AddonData, matrix: Any) -> List[str]:
    """Sorted and unique; each torch -> triton pin names a torch release that pytorch.json knows
    (where that table reaches) and is satisfied by its own triton version; ranges well formed."""
    problems: List[str] = []
    c = Checker("triton.json", matrix)
    c.sorted_unique([vkey(p.torch) for p in data.triton_pins], [f"torch {p.torch}" for p in data.triton_pins],
                    "records (by torch version)")
    known = {vkey(r.version) for r in matrix.pytorch.releases} if matrix is not None else set()
    for p in data.triton_pins:
        if spec_allows(p.spec, p.triton) is not True:
            c.add(f"torch {p.torch}", f"triton {p.triton} does not satisfy its own spec {p.spec}")
        if known and vkey(p.torch) not in known and vkey(p.torch) <= max(known):
            c.add(f"torch {p.torch}", "is not a release in pytorch.json")
    c.ranges([(r.first, r.last) for r in data.triton_releases], "releases")
    c.facts(data.triton_facts, ("inductor_min_compute_capability",), versions=("inductor_min_compute_capability",))
    problems += c.problems
    c = Checker("flash_attn.json", matrix)
    for package in sorted({g.package for g in data.flash_attn}):
        c.ranges([(g.first, g.last) for g in data.flash_attn if g.package == package], f"{package} ranges")
    for g in data.flash_attn:
        if g.max_compute_capability and vkey(g.max_compute_capability) < vkey(g.min_compute_capability):
            c.add(f"{g.package} {span(g.first, g.last)}", "maximum compute capability below the minimum")
    c.facts(data.flash_attn_facts, ("local_version_scheme",))
    problems += c.problems
    for file, rows in (("xformers.json", data.xformers), ("vllm.json", data.vllm)):
        c = Checker(file, matrix)
        c.sorted_unique([_pkey(r.version) for r in rows], [r.version for r in rows], "records (by version)")
        for r in rows:
            for problem in spec_problems(r.torch):
                c.add(r.version, problem)
        problems += c.problems
    c = Checker("vllm.json", matrix)
    c.facts(data.vllm_facts, ("min_compute_capability",),
            versions=("min_compute_capability", "pypi_wheel_cuda_major", "pypi_wheel_min_compute_capability"))
    for r in data.vllm:
        if r.requires_python and spec_allows(r.requires_python, "3.12") is None:
            c.add(r.version, f"requires_python {r.requires_python!r} is not a spec this reads")
    return problems + c.problems
