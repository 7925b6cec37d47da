"""What a container base image carries, read from its reference (``container_images.json``): the
tag patterns that name their CUDA (``nvidia/cuda:12.4.1-devel-ubuntu22.04``,
``pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime``), NGC releases (``nvcr.io/nvidia/pytorch:24.05-py3``)
with what their release notes say, and the Docker facts the container rules use. An image the
data does not know is :data:`UNKNOWN`'s kind: its CUDA cannot be told, and the answer says so."""

from __future__ import annotations

import re
from typing import Any, List, Mapping, Optional, Pattern, Tuple

from cudadoctor.record import frozen
from cudadoctor.matrix._ecocommon import Checker, Fact, facts_of, find_fact, prov, strs

__all__ = ["TABLES", "ImagePattern", "NgcRelease", "ImageFacts", "ImageData", "build", "invariants", "split_reference"]

TABLES = ("container_images.json",)
FILE = TABLES[0]
_MAX_REFERENCE = 512  # an image reference longer than this is no reference (docker caps a tag at 128)


@frozen
class ImagePattern:
    id: str
    repositories: Tuple[str, ...]
    regex: str
    framework: Optional[str]
    gpu: bool
    nvcc_flavours: Optional[Tuple[str, ...]]  # flavours with nvcc; None: unknown
    forward_compat: Optional[bool]
    source: str
    confidence: str
    note: Optional[str] = None

    @property
    def compiled(self) -> Pattern[str]:
        return re.compile(self.regex)


@frozen
class NgcRelease:
    repository: str
    release: str  # "23.01"
    cuda: Optional[str]
    cudnn: Optional[str]
    nccl: Optional[str]
    framework_version: Optional[str]
    python: Optional[str]
    os: Optional[str]
    min_driver: Optional[str]
    forward_compat: Optional[bool]
    forward_compat_drivers: Optional[Tuple[str, ...]]  # the lowest driver of each branch it supports
    source: str
    confidence: str
    note: Optional[str] = None


@frozen
class ImageFacts:
    """What is known of one image reference. ``known`` is False when no pattern matched: then
    nothing else here is a fact (``gpu`` None: not told)."""

    reference: str
    repository: str
    tag: str
    known: bool
    gpu: Optional[bool] = None
    cuda: Optional[str] = None
    cuda_from: str = ""  # how the CUDA was told: "the tag", "NGC release notes", ...
    flavour: Optional[str] = None
    nvcc: Optional[bool] = None  # the image has nvcc; None: unknown
    framework: Optional[str] = None
    framework_version: Optional[str] = None
    cudnn: Optional[str] = None
    nccl: Optional[str] = None
    python: Optional[str] = None
    min_driver: Optional[str] = None
    forward_compat: Optional[bool] = None
    forward_compat_drivers: Optional[Tuple[str, ...]] = None
    source: Tuple[str, ...] = ()
    note: str = ""


def split_reference(reference: str) -> Tuple[str, str]:
    """'nvcr.io/nvidia/pytorch:24.05-py3@sha256:..' -> ('nvcr.io/nvidia/pytorch', '24.05-py3');
    no tag: 'latest', as docker pulls it. The repository is lower-cased (registries are)."""
    ref = reference.strip().split("@", 1)[0]
    name, tag = ref, "latest"
    colon = ref.rfind(":")
    if colon > ref.rfind("/"):
        name, tag = ref[:colon], ref[colon + 1:]
    name = name.lower()
    if name.startswith("docker.io/library/"):
        name = name[len("docker.io/library/"):]
    elif name.startswith("docker.io/"):
        name = name[len("docker.io/"):]
    return name, tag


@frozen
class ImageData:
    patterns: Tuple[ImagePattern, ...]
    releases: Tuple[NgcRelease, ...]
    facts: Tuple[Fact, ...]

    def fact(self, fact_id: str) -> Optional[Fact]:
        return find_fact(self.facts, fact_id)

    def words(self, fact_id: str) -> Tuple[str, ...]:
        """A fact whose value is a comma-separated list."""
        f = self.fact(fact_id)
        return tuple(w.strip() for w in f.value.split(",") if w.strip()) if f else ()

    def release(self, repository: str, release: str) -> Optional[NgcRelease]:
        return next((r for r in self.releases if r.repository == repository and r.release == release), None)

    def image(self, reference: str) -> ImageFacts:
        """What ``reference`` carries, as far as the data and the tag's own pattern tell."""
        if len(reference) > _MAX_REFERENCE:
            return ImageFacts(reference[:_MAX_REFERENCE], "", "", False, note="too long to be an image reference")
        repository, tag = split_reference(reference)
        for p in self.patterns:
            if repository not in p.repositories:
                continue
            m = p.compiled.match(tag)
            if m is None:
                continue
            return _from_match(self, p, repository, tag, reference, {k: v for k, v in m.groupdict().items() if v})
        return ImageFacts(reference, repository, tag, False)


def _from_match(data: ImageData, p: ImagePattern, repository: str, tag: str, reference: str,
                groups: Mapping[str, str]) -> ImageFacts:
    flavour = groups.get("flavour")
    nvcc = (flavour in p.nvcc_flavours) if p.nvcc_flavours is not None and flavour else None
    base = dict(reference=reference, repository=repository, tag=tag, known=True, gpu=p.gpu, flavour=flavour, nvcc=nvcc,
                framework=p.framework, framework_version=groups.get("framework_version"),
                cudnn=groups.get("cudnn") or groups.get("cudnn_after"), forward_compat=p.forward_compat,
                source=(f"{FILE}#{p.id}",))
    if "release" in groups:
        rel = data.release(repository, groups["release"])
        if rel is None:
            return ImageFacts(**base, note=f"NGC release {groups['release']} is not in the data")  # type: ignore[arg-type]
        base.update(cuda=rel.cuda, cuda_from=f"NGC {groups['release']} release notes", cudnn=rel.cudnn, nccl=rel.nccl,
                    framework_version=rel.framework_version, python=rel.python, min_driver=rel.min_driver,
                    forward_compat=rel.forward_compat, forward_compat_drivers=rel.forward_compat_drivers,
                    source=(f"{FILE}#{repository}:{rel.release}",))
        return ImageFacts(**base, note=rel.note or "")  # type: ignore[arg-type]
    if "cuda" in groups:
        base.update(cuda=groups["cuda"], cuda_from="the tag")
    return ImageFacts(**base, note=p.note or "")  # type: ignore[arg-type]


def build(docs: Mapping[str, Mapping[str, Any]]) -> ImageData:
    doc = docs[FILE]
    patterns = tuple(
        ImagePattern(id=r["id"], repositories=strs(r["repositories"]), regex=r["regex"], framework=r["framework"],
                     gpu=r["gpu"], nvcc_flavours=strs(r["nvcc_flavours"]) if r["nvcc_flavours"] is not None else None,
                     forward_compat=r["forward_compat"], **prov(r))
        for r in doc["patterns"])
    releases = tuple(
        NgcRelease(repository=r["repository"], release=r["release"], cuda=r["cuda"], cudnn=r["cudnn"], nccl=r["nccl"],
                   framework_version=r["framework_version"], python=r["python"], os=r["os"],
                   min_driver=r["min_driver"], forward_compat=r["forward_compat"],
                   forward_compat_drivers=strs(r["forward_compat_drivers"])
                   if r["forward_compat_drivers"] is not None else None, **prov(r))
        for r in doc["records"])
    return ImageData(patterns, releases, facts_of(doc))


def invariants(data: ImageData, matrix: Any) -> List[str]:
    """Each regex compiles and names what it claims (a CUDA, or an NGC release whose repository it
    serves); releases are unique, their CUDA a release of cuda_toolkits.json; the facts the rules
    read are there."""
    c = Checker(FILE, matrix)
    for p in data.patterns:
        try:
            groups = set(re.compile(p.regex).groupindex)
        except re.error as exc:
            c.add(p.id, f"regex does not compile: {exc}")
            continue
        if "release" in groups and not any(r.repository in p.repositories for r in data.releases):
            c.add(p.id, "names an NGC release, and no release of its repositories is listed")
        if p.nvcc_flavours and "flavour" not in groups:
            c.add(p.id, "lists flavours with nvcc, and its regex has no flavour group")
    seen = set()
    for r in data.releases:
        key = (r.repository, r.release)
        if key in seen:
            c.add(f"{r.repository}:{r.release}", "listed twice")
        seen.add(key)
        c.cuda(f"{r.repository}:{r.release}", r.cuda)
        if r.forward_compat_drivers and not r.forward_compat:
            c.add(f"{r.repository}:{r.release}", "lists forward-compatibility drivers without forward_compat")
    c.facts(data.facts, ("docker_default_shm_mib", "shm_needed_by", "visible_devices_hiding", "extension_builds",
                         "driver_capabilities_cuda"))
    return c.problems
