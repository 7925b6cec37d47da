"""The build toolchain: which GPU architectures a CUDA toolkit's nvcc can compile for, which host
compilers it accepts, and which CUDA versions (and drivers, and GPUs) each cuDNN release supports.

Three tables:

- ``toolkit_archs.json``: one record per compute capability (sm_XX) with the first CUDA toolkit
  that compiles for it, the release that deprecated it and the last toolkit before NVIDIA removed
  it. The architecture-specific ``a`` and family ``f`` targets (sm_90a, sm_100f) are variants of
  their compute capability's record, so every lookup by compute capability finds one row.
- ``host_compilers.json``: per CUDA minor, the newest GCC and Clang majors ``crt/host_config.h``
  accepts (nvcc checks the major version only), with changes inside a minor's updates.
- ``cudnn.json``: per cuDNN release, the CUDA majors it ships builds for, with the minors, drivers
  and minimum compute capability where NVIDIA's support matrix gives them.

Versions compare as numbers, by major.minor for CUDA toolkits. Queries that cannot answer from
the data say so (``None`` or ``status == "unknown"``) rather than guess.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, List, Mapping, Optional, Tuple
from cudadoctor.record import frozen

from cudadoctor.matrix._toolchain_parse import cc_of_sm as cc_of_sm
from cudadoctor.matrix._toolchain_parse import cudnn_version as cudnn_version
from cudadoctor.matrix._toolchain_parse import mm
from cudadoctor.matrix._toolchain_parse import sm_of as sm_of
from cudadoctor.matrix.load import provenance
from cudadoctor.matrix.versions import VersionKey, major, vkey

TABLES = ("toolkit_archs.json", "host_compilers.json", "cudnn.json")

# can_compile statuses
SUPPORTED = "supported"
DEPRECATED = "deprecated"
DROPPED = "dropped"
TOO_NEW = "too_new"
UNKNOWN = "unknown"


@frozen
class ArchVariant:
    sm: str  # "sm_90a"
    first_cuda: str
    last_cuda: Optional[str]


@frozen
class ArchRow:
    sm: str  # "sm_90"
    compute_capability: str  # "9.0"
    architecture: Optional[str]  # "hopper"; None where the sources do not name it (sm_88)
    first_cuda: str  # "11.8": the first toolkit whose nvcc compiles for it
    deprecated_in: Optional[str]  # the toolkit that deprecated it
    last_cuda: Optional[str]  # the last toolkit that compiles for it offline; None: still supported
    variants: Tuple[ArchVariant, ...]
    renamed_to: Optional[str]  # sm_101 -> "sm_110"
    formerly: Optional[str]  # sm_110 -> "sm_101"
    source: str
    confidence: str
    note: Optional[str] = None

    def variant(self, sm: str) -> Optional[ArchVariant]:
        return next((v for v in self.variants if v.sm == sm), None)


@frozen
class ArchSupport:
    """Can a CUDA toolkit's nvcc compile for a GPU architecture?

    ``status``: ``supported``; ``deprecated`` (still compiles; NVIDIA announced its removal);
    ``dropped`` (the toolkit is newer than ``last_cuda``); ``too_new`` (the architecture is newer
    than the toolkit: it needs ``first_cuda``); ``unknown`` (no row for the architecture, or a
    version that does not parse)."""

    status: str
    sm: Optional[str]
    first_cuda: Optional[str]
    last_cuda: Optional[str]
    deprecated_in: Optional[str]
    row: Optional[ArchRow]

    @property
    def ok(self) -> bool:
        """The toolkit can compile for it (possibly with a deprecation warning)."""
        return self.status in (SUPPORTED, DEPRECATED)


@frozen
class MsvcRange:
    msc_ver_min: int  # 1920
    msc_ver_max: int  # 1949
    visual_studio: Optional[str]  # "2019-2022"


@frozen
class CompilerUpdate:
    cuda: str  # "12.2.2": from this update on
    gcc_max: Optional[int]
    clang_max: Optional[int]


@frozen
class HostCompilerRow:
    cuda: str  # "12.4" (major.minor)
    gcc_max: Optional[int]  # newest GCC major nvcc accepts; None: not established
    gcc_min: Optional[int]
    clang_max: Optional[int]
    clang_min: Optional[int]
    msvc: Optional[MsvcRange]
    updates: Tuple[CompilerUpdate, ...]
    source: str
    confidence: str
    note: Optional[str] = None


@frozen
class CudnnCuda:
    """One CUDA major a cuDNN release ships a build for."""

    major: int
    min: Optional[str]  # oldest CUDA version the matrix lists for this build; None: not stated
    max: Optional[str]  # newest CUDA version the matrix lists; None: not stated
    linux_min_driver: Optional[str]
    windows_min_driver: Optional[str]
    min_compute_capability: Optional[str]


@frozen
class CudnnRow:
    version: str  # "9.1.0"
    prerelease: bool
    cuda: Tuple[CudnnCuda, ...]
    cuda_partial: bool  # True: a CUDA major not listed is unknown, not unsupported
    min_compute_capability: Optional[str]
    source: str
    confidence: str
    note: Optional[str] = None

    def for_cuda(self, cuda_major: int) -> Optional[CudnnCuda]:
        return next((entry for entry in self.cuda if entry.major == cuda_major), None)

    def min_cc(self, cuda_major: Optional[int] = None) -> Optional[str]:
        """The lowest compute capability the build for ``cuda_major`` supports (the record's
        value where the build has none of its own)."""
        entry = self.for_cuda(cuda_major) if cuda_major is not None else None
        if entry is not None and entry.min_compute_capability:
            return entry.min_compute_capability
        return self.min_compute_capability


# ---------------------------------------------------------------------------- the data


@frozen
class ToolchainData:
    archs: Tuple[ArchRow, ...]
    compilers: Tuple[HostCompilerRow, ...]
    cudnns: Tuple[CudnnRow, ...]
    nvcc_13_0_gpu_code: Tuple[str, ...] = ()

    # ------------------------------------------------------------------ architectures

    def cuda_floor(self, cuda_major: int) -> Optional[str]:
        """The lowest compute capability CUDA ``cuda_major``'s toolkits still build for: a build made
        with them has nothing for older GPUs (CUDA 13 dropped everything below sm_75). None when
        the data has no row for that major."""
        supported = [row for row in self.archs if (major(row.first_cuda) or 0) <= cuda_major
                     and (row.last_cuda is None or (major(row.last_cuda) or 0) >= cuda_major)]
        return min((row.compute_capability for row in supported), key=vkey, default=None)

    def arch(self, sm_or_cc: str) -> Optional[ArchRow]:
        """The row of 'sm_90', 'sm_90a', 'compute_90', '90', '9.0'; None when the data has none."""
        parsed = sm_of(sm_or_cc)
        if parsed is None:
            return None
        return next((row for row in self.archs if row.sm == parsed[0]), None)

    def can_compile(self, cuda: str, compute_capability: str) -> ArchSupport:
        """Can the nvcc of CUDA ``cuda`` ('12.4', '12.4.1') compile for ``compute_capability``
        ('9.0', 'sm_90', 'sm_90a')? For an 'a'/'f' target, that variant's own first/last toolkit."""
        row = self.arch(compute_capability)
        parsed = sm_of(compute_capability)
        have = mm(cuda)
        if row is None or parsed is None or len(have) < 2:
            return ArchSupport(UNKNOWN, parsed[0] if parsed else None, None, None, None, row)
        first, last, deprecated = row.first_cuda, row.last_cuda, row.deprecated_in
        sm = row.sm
        if parsed[1]:
            variant = row.variant(row.sm + parsed[1])
            if variant is None:
                return ArchSupport(UNKNOWN, row.sm + parsed[1], None, None, None, row)
            sm, first, last = variant.sm, variant.first_cuda, variant.last_cuda
        if have < mm(first):
            status = TOO_NEW
        elif last is not None and have > mm(last):
            status = DROPPED
        elif deprecated is not None and have >= mm(deprecated):
            status = DEPRECATED
        else:
            status = SUPPORTED
        return ArchSupport(status, sm, first, last, deprecated, row)

    def archs_for(self, cuda: str, variants: bool = False) -> List[str]:
        """The sm targets the nvcc of ``cuda`` can compile for (deprecated ones included), oldest
        first; with ``variants``, the 'a'/'f' targets too."""
        have = mm(cuda)
        if len(have) < 2:
            return []
        out: List[str] = []
        for row in self.archs:
            if _compiles(have, row.first_cuda, row.last_cuda):
                out.append(row.sm)
            if variants:
                out.extend(v.sm for v in row.variants if _compiles(have, v.first_cuda, v.last_cuda))
        return out

    # ------------------------------------------------------------------ host compilers

    def compiler_limit(self, cuda: str) -> Optional[HostCompilerRow]:
        """The host-compiler limits of ``cuda`` ('12.4', '12.2.2'): the row of its major.minor,
        with the changes of the updates up to ``cuda`` applied ('12.2.2' accepts Clang 16,
        '12.2' and '12.2.1' do not). None for a minor the data has no row for."""
        have = vkey(cuda)
        for row in self.compilers:
            if mm(row.cuda) == have[:2] and len(have) >= 2:
                effective = row
                for update in row.updates:
                    if have >= vkey(update.cuda):
                        effective = replace(
                            effective,
                            gcc_max=update.gcc_max if update.gcc_max is not None else effective.gcc_max,
                            clang_max=update.clang_max if update.clang_max is not None else effective.clang_max,
                        )
                return effective
        return None

    def gcc_supported(self, cuda: str, gcc_version: str) -> Optional[bool]:
        """Does nvcc of ``cuda`` accept GCC ``gcc_version`` ('13.2.0', '13')? None: unknown."""
        row = self.compiler_limit(cuda)
        return _within(_int(gcc_version), row.gcc_min if row else None, row.gcc_max if row else None)

    def clang_supported(self, cuda: str, clang_version: str) -> Optional[bool]:
        """Does nvcc of ``cuda`` accept Clang ``clang_version`` ('18.1.8')? None: unknown."""
        row = self.compiler_limit(cuda)
        return _within(_int(clang_version), row.clang_min if row else None, row.clang_max if row else None)

    def msvc_supported(self, cuda: str, msc_ver: int) -> Optional[bool]:
        """Does nvcc of ``cuda`` accept the MSVC whose ``_MSC_VER`` is ``msc_ver`` (1939)?"""
        row = self.compiler_limit(cuda)
        if row is None or row.msvc is None:
            return None
        return row.msvc.msc_ver_min <= msc_ver <= row.msvc.msc_ver_max

    # ------------------------------------------------------------------ cuDNN

    def cudnn(self, version: str) -> Optional[CudnnRow]:
        """The release ``version`` names: '9.1.0', '9.1.0.70', '8.9.7.29', the integer cuDNN
        reports ('90100', '8907'), or 'major.minor' ('9.1' -> 9.1.0, the first of that minor)."""
        wanted = cudnn_version(version)
        if wanted is None:
            return None
        key = vkey(wanted)
        same = [r for r in self.cudnns if vkey(r.version)[: len(key)] == key]
        return same[0] if same else None

    def cudnn_supports(self, cudnn_version: str, cuda_version: str) -> Optional[bool]:
        """Does cuDNN ``cudnn_version`` ship a build for CUDA ``cuda_version`` ('12.4', '12')?

        False: no build for that CUDA major (where the data lists all the release's builds), or a
        CUDA older than the build's oldest listed version. None: unknown release or major, or a
        CUDA newer than the matrix lists for the build (minor-version compatibility may cover it)."""
        row = self.cudnn(cudnn_version)
        have = vkey(cuda_version)
        if row is None or not have:
            return None
        entry = row.for_cuda(have[0])
        if entry is None:
            return None if row.cuda_partial else False
        if entry.min is not None and have < vkey(entry.min)[: len(have)]:
            return False
        if entry.max is not None and len(have) >= 2 and have[:2] > mm(entry.max):
            return None
        return True

    def cudnn_min_driver(self, cudnn_version: str, cuda_major: Any, os: str = "linux") -> Optional[str]:
        """The minimum driver NVIDIA's cuDNN matrix gives for the release's CUDA ``cuda_major``
        build (12 or '12'); None where it gives none (then the CUDA toolkit's own rule applies)."""
        row = self.cudnn(cudnn_version)
        number = cuda_major if isinstance(cuda_major, int) else major(str(cuda_major))
        if row is None or number is None:
            return None
        entry = row.for_cuda(number)
        if entry is None:
            return None
        return entry.windows_min_driver if os == "windows" else entry.linux_min_driver

    def cudnn_min_compute_capability(self, cudnn_version: str, cuda_major: Optional[int] = None) -> Optional[str]:
        row = self.cudnn(cudnn_version)
        return row.min_cc(cuda_major) if row else None


def _compiles(have: VersionKey, first: str, last: Optional[str]) -> bool:
    """Whether the toolkit ``have`` (major.minor) lies in [first, last] (last None: no end)."""
    return mm(first) <= have and (last is None or have <= mm(last))


def _int(text: str) -> Optional[int]:
    return major(text or "")


def _within(have: Optional[int], low: Optional[int], high: Optional[int]) -> Optional[bool]:
    if have is None or high is None:
        return None
    if have > high:
        return False
    if low is not None and have < low:
        return False
    return True


# ---------------------------------------------------------------------------- build


def build(docs: Mapping[str, Mapping[str, Any]]) -> ToolchainData:
    archs = tuple(
        ArchRow(
            sm=r["sm"], compute_capability=r["compute_capability"], architecture=r.get("architecture"),
            first_cuda=r["first_cuda"], deprecated_in=r.get("deprecated_in"), last_cuda=r.get("last_cuda"),
            variants=tuple(ArchVariant(v["sm"], v["first_cuda"], v.get("last_cuda")) for v in r.get("variants", [])),
            renamed_to=r.get("renamed_to"), formerly=r.get("formerly"), **provenance(r),
        )
        for r in docs["toolkit_archs.json"]["records"]
    )
    compilers = tuple(
        HostCompilerRow(
            cuda=r["cuda"], gcc_max=r.get("gcc_max"), gcc_min=r.get("gcc_min"), clang_max=r.get("clang_max"),
            clang_min=r.get("clang_min"),
            msvc=MsvcRange(r["msvc"]["msc_ver_min"], r["msvc"]["msc_ver_max"], r["msvc"].get("visual_studio"))
            if r.get("msvc") else None,
            updates=tuple(CompilerUpdate(u["cuda"], u.get("gcc_max"), u.get("clang_max"))
                          for u in r.get("updates", [])),
            **provenance(r),
        )
        for r in docs["host_compilers.json"]["records"]
    )
    cudnns = tuple(
        CudnnRow(
            version=r["version"], prerelease=bool(r.get("prerelease", False)),
            cuda=tuple(
                CudnnCuda(c["major"], c.get("min"), c.get("max"), c.get("linux_min_driver"),
                          c.get("windows_min_driver"), c.get("min_compute_capability"))
                for c in r["cuda"]
            ),
            cuda_partial=bool(r.get("cuda_partial", False)), min_compute_capability=r.get("min_compute_capability"),
            **provenance(r),
        )
        for r in docs["cudnn.json"]["records"]
    )
    nvcc = docs["toolkit_archs.json"].get("nvcc_13_0") or {}
    return ToolchainData(archs, compilers, cudnns, tuple(nvcc.get("list_gpu_code", ())))


# ---------------------------------------------------------------------------- invariants
