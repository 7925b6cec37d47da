"""PyTorch releases and their wheel variants, and the package indexes install commands name.

A release (``2.5.1``) has one build on PyPI per platform (``linux_default_variant`` on Linux
x86_64: ``cu124`` for 2.5.1) and several variants on PyTorch's own index (``cu118``, ``cu121``,
``cu124``, ``cpu``, ``rocm6.2``). Each CUDA variant lists the SASS targets of torch's own kernels
(``archs``) and the targets also shipped as PTX (``ptx``).

Which GPUs a build runs on follows CUDA's rules in :mod:`.archs`, applied by
:meth:`PytorchData.arch_support` (``sass``, ``ptx_jit``, ``unsupported`` or ``no_build``).
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any, List, Mapping, Optional, Sequence, Tuple
from cudadoctor.record import frozen

from cudadoctor.matrix.archs import (
    PTX_JIT,
    SASS,
    ComputeCapability,
    parse_arch,
    parse_compute_capability,
    support_of,
)
from cudadoctor.matrix.load import provenance
from cudadoctor.matrix.versions import major_minor, vkey

TABLES = ("pytorch.json", "package_indexes.json")
FILE = "pytorch.json"
INDEX_FILE = "package_indexes.json"
WHEEL_INDEX = "pytorch-wheels"  # the package_indexes.json record of download.pytorch.org/whl/{variant}
DEFAULT_PLATFORM = "linux-x86_64"  # platforms: linux-x86_64, linux-aarch64, windows-x86_64, macos-arm64, macos-x86_64

NO_BUILD = "no_build"  # arch_support: this variant has no wheel for the platform

_VERSION = re.compile(r"^\s*v?(\d+(?:\.\d+)*)(?:\+([0-9A-Za-z.]+))?\s*$")
_VARIANT = re.compile(r"^(cu\d{3}|cpu|rocm\d+\.\d+(?:\.\d+)?)$")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def _variant_name(name_or_tag: str) -> str:
    """'+cu124', 'CU124', ' cu124 ' -> 'cu124'."""
    return name_or_tag.strip().lstrip("+").lower()


def _split_version(version: str) -> Optional[Tuple[Tuple[int, ...], Optional[str]]]:
    """'2.5.1+cu124' -> ((2, 5, 1), 'cu124'); pre-releases and dev builds ('2.6.0a0+git...') -> None:
    they are not the release of the same number."""
    m = _VERSION.match(version or "")
    return (vkey(m.group(1)), m.group(2).lower() if m.group(2) else None) if m else None


@frozen
class PlatformArchs:
    """A variant's arch lists on a platform other than Linux x86_64; archs None: not known."""

    archs: Optional[Tuple[str, ...]]
    ptx: Optional[Tuple[str, ...]]
    confidence: str
    note: Optional[str] = None


@frozen
class Variant:
    name: str  # "cu124", "cpu", "rocm6.2"
    cuda: Optional[str]  # "12.4"
    rocm: Optional[str]
    cudnn: Optional[str]
    nccl: Optional[str]
    archs: Tuple[str, ...]  # SASS targets on Linux x86_64
    ptx: Tuple[str, ...]  # targets also shipped as PTX
    platforms: Tuple[str, ...]
    per_platform: Tuple[Tuple[str, PlatformArchs], ...]
    source: str
    confidence: str
    note: Optional[str] = None

    @property
    def kind(self) -> str:
        return "cuda" if self.cuda else "rocm" if self.rocm else "cpu"

    @property
    def local_tag(self) -> str:
        """What follows '+' in torch.__version__ for this build: '+cu124'."""
        return f"+{self.name}"

    def arch_lists(self, platform: str = DEFAULT_PLATFORM) -> Tuple[Tuple[str, ...], Tuple[str, ...], str, str]:
        """(archs, ptx, confidence, platform the lists belong to). A platform whose own lists are
        unknown gets the Linux x86_64 lists with confidence 'unverified'."""
        own = dict(self.per_platform).get(platform)
        if own is None:
            return self.archs, self.ptx, self.confidence, DEFAULT_PLATFORM
        if own.archs is None:
            return self.archs, self.ptx, "unverified", DEFAULT_PLATFORM
        return own.archs, own.ptx or (), own.confidence, platform


@frozen
class CondaInfo:
    channel: str
    extra_channels: Tuple[str, ...]
    cuda_package: str  # "cudatoolkit", "pytorch-cuda", "cuda-version"
    cuda_versions: Tuple[str, ...]
    cpu_package: Optional[str]
    archs: Tuple[Tuple[str, Tuple[str, ...]], ...]  # CUDA version -> SASS targets of that conda build
    confidence: str
    note: Optional[str] = None

    @property
    def channels(self) -> Tuple[str, ...]:
        """Channels in the order of the `-c` options."""
        return (self.channel,) + self.extra_channels


@frozen
class Release:
    version: str
    release_date: str
    git_version: Optional[str]  # torch.version.git_version of the official builds
    python: Tuple[str, ...]  # Linux x86_64 wheels, GIL builds
    python_freethreaded: Tuple[str, ...]
    python_by_platform: Tuple[Tuple[str, Tuple[str, ...]], ...]
    linux_default_variant: str
    pypi_variant_by_platform: Tuple[Tuple[str, str], ...]
    variants: Tuple[Variant, ...]
    torchvision: Optional[str]
    torchaudio: Optional[str]
    conda: CondaInfo
    source: str
    confidence: str
    note: Optional[str] = None

    def variant(self, name: str) -> Optional[Variant]:
        wanted = _variant_name(name)
        return next((v for v in self.variants if v.name == wanted), None)

    @property
    def default_variant(self) -> Optional[Variant]:
        """What plain `pip install torch==X` gets from PyPI on Linux x86_64 (None only in data
        that breaks the invariants)."""
        return self.variant(self.linux_default_variant)

    def pythons(self, platform: str = DEFAULT_PLATFORM) -> Tuple[str, ...]:
        return dict(self.python_by_platform).get(platform, self.python)


@frozen
class PackageIndex:
    id: str
    kind: str  # "pip" | "conda" | "json" (an API a maintainer tool reads, never printed)
    url_pattern: str
    placeholders: Tuple[str, ...]
    channel: Optional[str]
    source: str
    confidence: str
    note: Optional[str] = None

    def url(self, **values: str) -> str:
        """The URL with every placeholder filled; KeyError names a missing one."""
        missing = [p for p in self.placeholders if p not in values]
        if missing:
            raise KeyError(f"{self.id}: no value for {', '.join(missing)}")
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], self.url_pattern)


@frozen
class ArchSupport:
    """Can a build run its kernels on a GPU, and through which target?

    ``kind``: ``sass`` (``arch`` names the cubin, e.g. sm_86 for an 8.9 GPU), ``ptx_jit`` (only
    PTX: ``arch`` is compute_XY), ``unsupported``, or ``no_build`` (no wheel for ``platform``).
    ``list_platform`` is the platform whose arch lists were used: it differs from ``platform``
    when that platform's own lists are not known (confidence is then 'unverified')."""

    kind: str
    arch: Optional[str]
    compute_capability: Tuple[int, int]
    platform: str
    list_platform: str
    archs: Tuple[str, ...]
    ptx: Tuple[str, ...]
    confidence: str

    @property
    def runs(self) -> bool:
        return self.kind in (SASS, PTX_JIT)


@frozen
class ArchMatch:
    version: str
    variant: str
    support: ArchSupport


@frozen
class PytorchData:
    releases: Tuple[Release, ...]
    indexes: Tuple[PackageIndex, ...]

    # ------------------------------------------------------------------ releases and variants

    def release(self, version: str) -> Optional[Release]:
        """'2.5.1' or '2.5.1+cu124' -> 2.5.1; '2.5' -> the newest 2.5.x. Pre-releases and dev
        builds ('2.6.0a0+ecf3bae') are no release: None."""
        split = _split_version(version)
        if split is None or not split[0]:
            return None
        key = split[0]
        if len(key) >= 3:
            return next((r for r in self.releases if vkey(r.version) == key), None)
        same = [r for r in self.releases if vkey(r.version)[: len(key)] == key]
        return same[-1] if same else None

    def variant(self, version: str, name_or_tag: Optional[str] = None) -> Optional[Variant]:
        """A release's variant by name ('cu124') or local tag ('+cu124'). Without one, the tag of
        ``version`` ('2.5.1+cu124'), else the PyPI default on Linux x86_64."""
        rel = self.release(version)
        if rel is None:
            return None
        split = _split_version(version)
        tag = name_or_tag if name_or_tag is not None else (split[1] if split else None)
        return rel.default_variant if tag is None else rel.variant(tag)

    def pypi_variant(self, version: str, platform: str = DEFAULT_PLATFORM) -> Optional[Variant]:
        """The build `pip install torch==X` gets from PyPI on ``platform``."""
        rel = self.release(version)
        name = dict(rel.pypi_variant_by_platform).get(platform) if rel else None
        return rel.variant(name) if rel and name else None

    def variant_for_build(self, version: str, cuda: Optional[str]) -> Optional[Variant]:
        """The variant an installed build is, from torch.__version__ and torch.version.cuda:
        ('2.5.1', '12.4') -> cu124; cuda None -> cpu (or the ROCm variant its tag names).
        None: no official variant of that release has this CUDA (a source or custom build)."""
        rel = self.release(version)
        if rel is None:
            return None
        split = _split_version(version)
        tag = split[1] if split else None
        if not cuda:
            if tag and tag.startswith("rocm"):
                return rel.variant(tag)
            return rel.variant("cpu")
        wanted = major_minor(cuda)
        same = [v for v in rel.variants if v.cuda and major_minor(v.cuda) == wanted]
        named = [v for v in same if v.name == tag]
        return named[0] if named else same[0] if same else None

    def arch_support(self, version: str, variant: Optional[str], compute_capability: ComputeCapability,
                     platform: str = DEFAULT_PLATFORM) -> Optional[ArchSupport]:
        """Whether build ``version``/``variant`` (None: the PyPI default) has kernels for a GPU
        of ``compute_capability`` ('8.9', 'sm_89' or (8, 9)); None for an unknown release,
        variant or capability."""
        found = self.variant(version, variant)
        cc = parse_compute_capability(compute_capability)
        if found is None or cc is None:
            return None
        if platform not in found.platforms:
            return ArchSupport(NO_BUILD, None, cc, platform, platform, (), (), found.confidence)
        archs, ptx, confidence, list_platform = found.arch_lists(platform)
        kind, target = support_of(archs, ptx, cc)
        return ArchSupport(kind, target, cc, platform, list_platform, archs, ptx, confidence)

    def releases_with_arch(self, compute_capability: ComputeCapability,
                           platform: str = DEFAULT_PLATFORM) -> Tuple[ArchMatch, ...]:
        """Every (release, variant) whose kernels run on this GPU, by SASS or PTX, oldest first."""
        out: List[ArchMatch] = []
        for rel in self.releases:
            for var in rel.variants:
                support = self.arch_support(rel.version, var.name, compute_capability, platform)
                if support is not None and support.runs:
                    out.append(ArchMatch(rel.version, var.name, support))
        return tuple(out)

    def supported_pythons(self, version: str, platform: str = DEFAULT_PLATFORM,
                          freethreaded: bool = False) -> Optional[Tuple[str, ...]]:
        """CPython versions with wheels ('3.12'); with ``freethreaded``, also the 't' builds."""
        rel = self.release(version)
        if rel is None:
            return None
        return rel.pythons(platform) + (rel.python_freethreaded if freethreaded else ())

    def companions(self, version: str) -> Optional[Tuple[Optional[str], Optional[str]]]:
        """(torchvision, torchaudio) released for this torch; None inside: there is none."""
        rel = self.release(version)
        return (rel.torchvision, rel.torchaudio) if rel else None

    def torch_for_torchvision(self, torchvision: str) -> Optional[Release]:
        """The torch release a torchvision version ('0.20.1', '0.20.1+cu124', '0.20') was made for."""
        split = _split_version(torchvision)
        if split is None or not split[0]:
            return None
        key = split[0]
        same = [r for r in self.releases if r.torchvision and vkey(r.torchvision)[: len(key)] == key]
        return same[-1] if same else None

    def release_for_git_version(self, git_version: str) -> Optional[Release]:
        """The release whose official builds carry this torch.version.git_version (7+ hex digits)."""
        sha = (git_version or "").strip().lower()
        if not re.match(r"^[0-9a-f]{7,40}$", sha):
            return None
        return next((r for r in self.releases if r.git_version and r.git_version.startswith(sha)), None)

    def conda(self, version: str) -> Optional[CondaInfo]:
        return rel.conda if (rel := self.release(version)) else None

    # ------------------------------------------------------------------ package indexes

    def package_index(self, index_id: str) -> Optional[PackageIndex]:
        return next((i for i in self.indexes if i.id == index_id), None)

    def conda_channel(self, name: str) -> Optional[PackageIndex]:
        return next((i for i in self.indexes if i.kind == "conda" and i.channel == name), None)

    def index_url(self, variant: str, index_id: str = WHEEL_INDEX) -> Optional[str]:
        """The wheel index of a variant ('cu124' or '+cu124'): https://download.pytorch.org/whl/cu124."""
        name = _variant_name(variant)
        index = self.package_index(index_id)
        if index is None or not _VARIANT.match(name) or "variant" not in index.placeholders:
            return None
        return index.url(variant=name)


# ---------------------------------------------------------------------- building


def _variant(v: Mapping[str, Any]) -> Variant:
    per = tuple(
        (platform, PlatformArchs(None if e["archs"] is None else tuple(e["archs"]),
                                 None if e["ptx"] is None else tuple(e["ptx"]), e["confidence"], e.get("note")))
        for platform, e in sorted(v.get("arch_lists_per_platform", {}).items())
    )
    return Variant(
        name=v["name"], cuda=v.get("cuda"), rocm=v.get("rocm"), cudnn=v.get("cudnn"), nccl=v.get("nccl"),
        archs=tuple(v["archs"]), ptx=tuple(v["ptx"]), platforms=tuple(v["platforms"]), per_platform=per, **provenance(v),
    )


def _conda(c: Mapping[str, Any]) -> CondaInfo:
    return CondaInfo(
        channel=c["channel"], extra_channels=tuple(c.get("extra_channels", ())), cuda_package=c["cuda_package"],
        cuda_versions=tuple(c.get("cuda_versions", ())), cpu_package=c.get("cpu_package"),
        archs=tuple((k, tuple(a)) for k, a in c.get("archs", {}).items()),
        confidence=c["confidence"], note=c.get("note"),
    )


def _release(r: Mapping[str, Any]) -> Release:
    return Release(
        version=r["version"], release_date=r["release_date"], git_version=r.get("git_version"),
        python=tuple(r["python"]), python_freethreaded=tuple(r.get("python_freethreaded", ())),
        python_by_platform=tuple((p, tuple(lst)) for p, lst in r.get("python_by_platform", {}).items()),
        linux_default_variant=r["linux_default_variant"],
        pypi_variant_by_platform=tuple(r["pypi_variant_by_platform"].items()),
        variants=tuple(_variant(v) for v in r["variants"]),
        torchvision=r["torchvision"], torchaudio=r["torchaudio"], conda=_conda(r["conda"]), **provenance(r),
    )


def build(docs: Mapping[str, Mapping[str, Any]]) -> PytorchData:
    releases = tuple(_release(r) for r in docs[FILE]["records"])
    indexes = tuple(
        PackageIndex(id=i["id"], kind=i["kind"], url_pattern=i["url_pattern"], placeholders=tuple(i["placeholders"]),
                     channel=i.get("channel"), **provenance(i))
        for i in docs[INDEX_FILE]["records"]
    )
    return PytorchData(releases, indexes)


# ---------------------------------------------------------------------- invariants


def _arch_list_problems(where: str, archs: Optional[Sequence[str]], ptx: Optional[Sequence[str]]) -> List[str]:
    problems: List[str] = []
    parsed = [parse_arch(a) for a in archs or ()]
    valid = [p for p in parsed if p is not None]
    if len(valid) != len(parsed):
        problems.append(f"{where}: an arch is not of the form sm_XY")
    elif valid != sorted(set(valid)):
        problems.append(f"{where}: archs are not sorted and unique")
    if ptx is not None and archs is None:
        problems.append(f"{where}: ptx listed without archs")
    for target in ptx or ():
        if target not in (archs or ()):
            problems.append(f"{where}: ptx {target} is not in archs")
    return problems


def _python_problems(where: str, versions: Sequence[str]) -> List[str]:
    keys = [vkey(v) for v in versions]
    if any(len(k) != 2 or k[0] != 3 for k in keys):
        return [f"{where}: a Python version is not of the form 3.N"]
    if keys != sorted(set(keys)):
        return [f"{where}: Python versions are not sorted and unique"]
    return []


def _variant_problems(where: str, var: Variant, toolkits: Sequence[str]) -> List[str]:
    problems = _arch_list_problems(where, var.archs, var.ptx)
    if var.cuda:
        if var.name != "cu" + var.cuda.replace(".", ""):
            problems.append(f"{where}: name does not match CUDA {var.cuda}")
        if not any(major_minor(t) == major_minor(var.cuda) for t in toolkits):
            problems.append(f"{where}: CUDA {var.cuda} has no row in cuda_toolkits.json")
        if not var.archs:
            problems.append(f"{where}: a CUDA variant without archs")
    elif var.archs or var.ptx or not _VARIANT.match(var.name) or var.name.startswith("cu"):
        problems.append(f"{where}: a non-CUDA variant must be cpu or rocmX.Y and list no archs")
    if var.rocm and var.name != "rocm" + var.rocm:
        problems.append(f"{where}: name does not match ROCm {var.rocm}")
    for platform, lists in var.per_platform:
        if platform not in var.platforms or platform == DEFAULT_PLATFORM:
            problems.append(f"{where}: arch lists for {platform}, which is not one of its other platforms")
        problems.extend(_arch_list_problems(f"{where} on {platform}", lists.archs, lists.ptx))
    return problems


def _release_problems(rel: Release, toolkits: Sequence[str], channels: Sequence[str]) -> List[str]:
    where = f"{FILE}: {rel.version}"
    problems = _python_problems(where, rel.python)
    try:
        date.fromisoformat(rel.release_date)
    except ValueError:
        problems.append(f"{where}: release_date {rel.release_date} is not a date")
    for platform, versions in rel.python_by_platform:
        problems.extend(_python_problems(f"{where} on {platform}", versions))
    for ft in rel.python_freethreaded:
        if ft[:-1] not in rel.python and all(ft[:-1] not in v for _, v in rel.python_by_platform):
            problems.append(f"{where}: free-threaded {ft} without its GIL build")
    names = [v.name for v in rel.variants]
    if len(set(names)) != len(names):
        problems.append(f"{where}: a variant is listed twice")
    if rel.linux_default_variant not in names:
        problems.append(f"{where}: linux_default_variant {rel.linux_default_variant} is not one of its variants")
    pypi = dict(rel.pypi_variant_by_platform)
    if pypi.get(DEFAULT_PLATFORM) != rel.linux_default_variant:
        problems.append(f"{where}: pypi_variant_by_platform disagrees with linux_default_variant")
    for platform, name in rel.pypi_variant_by_platform:
        var = rel.variant(name)
        if var is None or platform not in var.platforms:
            problems.append(f"{where}: the PyPI build {name} for {platform} is not a variant on that platform")
    for var in rel.variants:
        problems.extend(_variant_problems(f"{where}: {var.name}", var, toolkits))
    conda = rel.conda
    for channel in conda.channels:
        if channel not in channels:
            problems.append(f"{where}: conda channel {channel} is not in {INDEX_FILE}")
    for cuda in conda.cuda_versions:
        if not any(major_minor(t) == major_minor(cuda) for t in toolkits):
            problems.append(f"{where}: conda CUDA {cuda} has no row in cuda_toolkits.json")
    for cuda, archs in conda.archs:
        if cuda not in conda.cuda_versions:
            problems.append(f"{where}: conda archs for CUDA {cuda}, which is not in cuda_versions")
        problems.extend(_arch_list_problems(f"{where}: conda CUDA {cuda}", archs, ()))
    return problems


def _index_problems(indexes: Sequence[PackageIndex]) -> List[str]:
    problems: List[str] = []
    for prev, cur in zip(indexes, indexes[1:]):
        if cur.id <= prev.id:
            problems.append(f"{INDEX_FILE}: {cur.id}: listed after {prev.id} (records go by id, each once)")
    for index in indexes:
        used = _PLACEHOLDER.findall(index.url_pattern)
        if sorted(set(used)) != sorted(index.placeholders) or "{" in _PLACEHOLDER.sub("", index.url_pattern):
            problems.append(f"{INDEX_FILE}: {index.id}: placeholders do not match url_pattern")
        if (index.kind == "conda") != bool(index.channel):
            problems.append(f"{INDEX_FILE}: {index.id}: a conda record needs a channel, a pip record none")
    if not any(i.id == WHEEL_INDEX and i.placeholders == ("variant",) for i in indexes):
        problems.append(f"{INDEX_FILE}: no {WHEEL_INDEX} record with the one placeholder 'variant'")
    return problems


def invariants(data: PytorchData, matrix: Any) -> List[str]:
    """Sorted unique releases; variants that resolve (default variant, CUDA toolkit rows, conda
    channels); well-formed arch and Python lists; torchvision paired with one torch each."""
    problems: List[str] = []
    for prev, cur in zip(data.releases, data.releases[1:]):
        if vkey(cur.version) <= vkey(prev.version):
            problems.append(f"{FILE}: {cur.version}: listed after {prev.version} (records go by version, each once)")
    toolkits = [t.cuda for t in matrix.cuda.toolkits]
    channels = [i.channel for i in data.indexes if i.kind == "conda" and i.channel]
    for rel in data.releases:
        problems.extend(_release_problems(rel, toolkits, channels))
    for field in ("torchvision", "torchaudio"):
        paired = [(getattr(r, field), r.version) for r in data.releases if getattr(r, field)]
        for (before, torch_before), (after, torch_after) in zip(paired, paired[1:]):
            if vkey(after) <= vkey(before):
                problems.append(f"{FILE}: {torch_after}: {field} {after} does not follow {torch_before}'s {before}"
                                " (each pairs with one torch, rising with it)")
    problems.extend(_index_problems(data.indexes))
    return problems
