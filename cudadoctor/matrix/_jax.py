"""JAX: how each jax/jaxlib release range ships CUDA support, and what each CUDA build needs."""

from __future__ import annotations

import re
from typing import Any, List, Mapping, Optional, Tuple
from cudadoctor.record import frozen

from cudadoctor.matrix._ecocommon import (
    Checker,
    Fact,
    build_for,
    facts_of,
    find_fact,
    in_range,
    norm_dist,
    prov,
    span,
    strs,
)
from cudadoctor.matrix.versions import major

FILE = "jax.json"


@frozen
class JaxBuild:
    """The CUDA ``cuda_major`` build of a release range: how to install it and what it needs."""

    cuda_major: int
    min_cuda: Optional[str]
    min_cudnn: Optional[str]
    min_driver: Optional[str]
    min_compute_capability: Optional[str]
    min_nccl: Optional[str]
    extras: Tuple[str, ...]  # 'cuda12' for jax[cuda12]
    plugins: Tuple[str, ...]  # PyPI distributions: jax-cuda12-plugin, jax-cuda12-pjrt
    jaxlib_local_versions: Tuple[str, ...]  # 'cuda12.cudnn89' for jaxlib==X+cuda12.cudnn89
    index_url: Optional[str]  # the page serving the monolithic jaxlib wheels (pip -f)

    @property
    def cudnn_major(self) -> Optional[int]:
        """cuDNN is ABI-stable within a major only: the build needs this major."""
        return major(self.min_cudnn) if self.min_cudnn else None

    def extra_requirements(self, version: str = "") -> List[str]:
        pin = f"=={version}" if version else ""
        return [f"jax[{extra}]{pin}" for extra in self.extras]


@frozen
class JaxRelease:
    first: Optional[str]
    last: Optional[str]
    scheme: str  # monolithic | monolithic+plugin | plugin
    python: Optional[Tuple[str, ...]]
    builds: Tuple[JaxBuild, ...]
    source: str
    confidence: str
    note: Optional[str] = None

    @property
    def cuda_majors(self) -> Tuple[int, ...]:
        return tuple(b.cuda_major for b in self.builds)

    def build(self, cuda_major: int) -> Optional[JaxBuild]:
        found: Optional[JaxBuild] = build_for(self.builds, cuda_major)
        return found

    def contains(self, version: str) -> bool:
        return in_range(version, self.first, self.last)


@frozen
class JaxData:
    releases: Tuple[JaxRelease, ...]
    facts: Tuple[Fact, ...]

    def release(self, version: str) -> Optional[JaxRelease]:
        """The range a jax or jaxlib version ('0.4.28', '0.4.28+cuda12.cudnn89') falls in."""
        for rel in self.releases:
            if rel.contains(version):
                return rel
        return None

    def build(self, version: str, cuda_major: int) -> Optional[JaxBuild]:
        rel = self.release(version)
        return rel.build(cuda_major) if rel else None

    def plugin_cuda_major(self, distribution: str) -> Optional[int]:
        """The CUDA major a plugin distribution serves: 'jax-cuda12-plugin' -> 12."""
        name = norm_dist(distribution)
        for rel in self.releases:
            for b in rel.builds:
                if name in b.plugins:
                    return b.cuda_major
        return None

    def fact(self, fact_id: str) -> Optional[Fact]:
        return find_fact(self.facts, fact_id)


def build(doc: Mapping[str, Any]) -> JaxData:
    releases = tuple(
        JaxRelease(
            first=r.get("first"), last=r.get("last"), scheme=r["scheme"],
            python=strs(r["python"]) if r.get("python") is not None else None,
            builds=tuple(
                JaxBuild(cuda_major=b["cuda_major"], min_cuda=b.get("min_cuda"), min_cudnn=b.get("min_cudnn"),
                         min_driver=b.get("min_driver"), min_compute_capability=b.get("min_compute_capability"),
                         min_nccl=b.get("min_nccl"), extras=strs(b["extras"]), plugins=strs(b["plugins"]),
                         jaxlib_local_versions=strs(b["jaxlib_local_versions"]), index_url=b.get("index_url"))
                for b in r["builds"]
            ),
            **prov(r),
        )
        for r in doc["records"]
    )
    return JaxData(releases, facts_of(doc))


def invariants(data: JaxData, matrix: Any) -> List[str]:
    c = Checker(FILE, matrix)
    c.ranges([(r.first, r.last) for r in data.releases])
    for rel in data.releases:
        where = span(rel.first, rel.last)
        c.python(where, rel.python)
        majors = list(rel.cuda_majors)
        if majors != sorted(set(majors)):
            c.add(where, "builds are not sorted and unique by cuda_major")
        has_plugins = any(b.plugins for b in rel.builds)
        has_local = any(b.jaxlib_local_versions or b.index_url for b in rel.builds)
        if rel.scheme == "plugin" and (has_local or not all(b.plugins for b in rel.builds)):
            c.add(where, "scheme 'plugin' but a build lacks plugins or names jaxlib local versions")
        if rel.scheme == "monolithic" and has_plugins:
            c.add(where, "scheme 'monolithic' but a build names plugins")
        if rel.scheme == "monolithic+plugin" and not (has_plugins and has_local):
            c.add(where, "scheme 'monolithic+plugin' needs both plugins and jaxlib local versions")
        for b in rel.builds:
            bw = f"{where}: CUDA {b.cuda_major}"
            c.cuda(bw, str(b.cuda_major))
            c.cuda_of_major(bw, b.min_cuda, b.cuda_major)
            for name in b.plugins:
                if f"-cuda{b.cuda_major}-" not in name + "-":
                    c.add(bw, f"plugin {name} is not a CUDA {b.cuda_major} distribution")
            for local in b.jaxlib_local_versions:
                if not local.startswith(f"cuda{b.cuda_major}"):
                    c.add(bw, f"jaxlib local version +{local} is not a CUDA {b.cuda_major} build")
            for extra in b.extras:
                m = re.match(r"^cuda(\d+)", extra)
                if m and int(m.group(1)) != b.cuda_major:
                    c.add(bw, f"extra jax[{extra}] is not a CUDA {b.cuda_major} extra")
    c.facts(data.facts, ("cuda11_last", "cuda12_first", "cuda13_first", "monolithic_cuda_jaxlib_last"),
            versions=("cuda11_last", "cuda12_first", "cuda12_pip_extra_removed", "cuda13_first",
                      "extras_dashed_first", "kepler_removed", "monolithic_cuda_jaxlib_last"))
    _fact_problems(data, c)
    return c.problems


def _fact_problems(data: JaxData, c: Checker) -> None:
    """The range facts must agree with the records they summarise."""
    rels = list(data.releases)

    def index(fact_id: str) -> Optional[int]:
        fact = data.fact(fact_id)
        if fact is None:
            return None
        for i, rel in enumerate(rels):
            if rel.contains(fact.value):
                return i
        c.add(f"facts: {fact_id}", f"{fact.value} is in no release range")
        return None

    for fact_id, cuda_major in (("cuda12_first", 12), ("cuda13_first", 13)):
        i = index(fact_id)
        if i is not None and (cuda_major not in rels[i].cuda_majors
                              or any(cuda_major in r.cuda_majors for r in rels[:i])):
            c.add(f"facts: {fact_id}", f"does not match the first range with a CUDA {cuda_major} build")
    i = index("cuda11_last")
    if i is not None and (11 not in rels[i].cuda_majors or any(11 in r.cuda_majors for r in rels[i + 1:])):
        c.add("facts: cuda11_last", "does not match the last range with a CUDA 11 build")
    i = index("monolithic_cuda_jaxlib_last")
    if i is not None and (rels[i].scheme == "plugin" or any(r.scheme != "plugin" for r in rels[i + 1:])):
        c.add("facts: monolithic_cuda_jaxlib_last", "does not match the last range with monolithic jaxlib wheels")
