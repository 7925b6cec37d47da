"""The invariants of ``toolkit_archs.json``, ``host_compilers.json`` and ``cudnn.json``: sorted
unique keys, version windows in order, every CUDA version a toolkit the CUDA tables list, host
compiler limits that never go down. Run by ``cudadoctor data validate`` and the tests, never by a
diagnosis, so :mod:`.toolchain` loads this module only when asked.
"""

from __future__ import annotations

from typing import AbstractSet, Any, List, Optional, Sequence, Tuple

from cudadoctor.matrix._toolchain_parse import cc_of_sm, mm
from cudadoctor.matrix.toolchain import ArchRow, ToolchainData
from cudadoctor.matrix.versions import VersionKey, major, vkey

ARCHS = "toolkit_archs.json"
COMPILERS = "host_compilers.json"
CUDNN = "cudnn.json"


def invariants(data: ToolchainData, matrix: Any) -> List[str]:
    """Sorted unique keys; first <= deprecated <= last; every CUDA version named is a toolkit the
    CUDA tables list (by major.minor; an architecture's first toolkit may predate them); GCC
    limits never go down; cuDNN builds reference CUDA majors the CUDA tables know."""
    toolkits = {mm(t.cuda) for t in matrix.cuda.toolkits}
    oldest = min(toolkits) if toolkits else ()
    floors = {f.cuda_major for f in matrix.cuda.floors}
    problems: List[str] = []
    problems += _arch_problems(data, toolkits, oldest)
    problems += _compiler_problems(data, toolkits)
    problems += _cudnn_problems(data, toolkits, floors | {k[0] for k in toolkits})
    return problems


def _known(version: Optional[str], toolkits: AbstractSet[VersionKey]) -> bool:
    return version is None or mm(version) in toolkits


def _not_a_toolkit(where: str, name: str, value: Optional[str]) -> str:
    return f"{where}: {name} {value} is not a CUDA toolkit in cuda_toolkits.json"


def _unknown_toolkits(where: str, fields: Sequence[Tuple[str, Optional[str]]],
                      toolkits: AbstractSet[VersionKey]) -> List[str]:
    return [_not_a_toolkit(where, name, value) for name, value in fields if not _known(value, toolkits)]


def _strictly_increasing(keys: Sequence[Any]) -> bool:
    """Sorted and unique."""
    return list(keys) == sorted(keys) and len(set(keys)) == len(keys)


def _key_problems(f: str, keys: Sequence[VersionKey], what: str) -> List[str]:
    """A table's records sorted by ``what``, none listed twice."""
    problems: List[str] = []
    if keys != sorted(keys):
        problems.append(f"{f}: records are not sorted by {what}")
    if len(set(keys)) != len(keys):
        problems.append(f"{f}: a {what} is listed twice")
    return problems


# ---------------------------------------------------------------------------- toolkit_archs.json


def _arch_problems(data: ToolchainData, toolkits: AbstractSet[VersionKey], oldest: VersionKey) -> List[str]:
    problems: List[str] = []
    keys = [int(r.sm[3:]) for r in data.archs]
    if keys != sorted(keys):
        problems.append(f"{ARCHS}: records are not sorted by sm number")
    seen = set()
    for row in data.archs:
        if row.sm in seen:
            problems.append(f"{ARCHS}: {row.sm}: listed twice")
        seen.add(row.sm)
        problems.extend(_arch_row_problems(row, toolkits, oldest))
    return problems + _link_problems(data)


def _arch_row_problems(row: ArchRow, toolkits: AbstractSet[VersionKey], oldest: VersionKey) -> List[str]:
    problems: List[str] = []
    where = f"{ARCHS}: {row.sm}"
    if cc_of_sm(row.sm) != row.compute_capability:
        problems.append(f"{where}: compute_capability {row.compute_capability} does not match the sm number")
    if mm(row.first_cuda) not in toolkits and not (oldest and mm(row.first_cuda) < oldest):
        problems.append(_not_a_toolkit(where, "first_cuda", row.first_cuda))
    problems += _unknown_toolkits(where, (("deprecated_in", row.deprecated_in), ("last_cuda", row.last_cuda)), toolkits)
    chain = [v for v in (row.first_cuda, row.deprecated_in, row.last_cuda) if v is not None]
    if [mm(v) for v in chain] != sorted(mm(v) for v in chain):
        problems.append(f"{where}: first_cuda <= deprecated_in <= last_cuda does not hold")
    if not _strictly_increasing([v.sm for v in row.variants]):
        problems.append(f"{where}: variants are not sorted and unique")
    for v in row.variants:
        vwhere = f"{where}: variant {v.sm}"
        if v.sm[:-1] != row.sm:
            problems.append(f"{vwhere}: is not a variant of {row.sm}")
        problems += _unknown_toolkits(vwhere, (("first_cuda", v.first_cuda), ("last_cuda", v.last_cuda)), toolkits)
        if mm(v.first_cuda) < mm(row.first_cuda):
            problems.append(f"{vwhere}: first_cuda {v.first_cuda} is before {row.sm}'s {row.first_cuda}")
        if v.last_cuda is not None and mm(v.last_cuda) < mm(v.first_cuda):
            problems.append(f"{vwhere}: last_cuda {v.last_cuda} is before its first_cuda {v.first_cuda}")
        if row.last_cuda is not None and (v.last_cuda is None or mm(v.last_cuda) > mm(row.last_cuda)):
            problems.append(f"{vwhere}: outlives {row.sm} (last_cuda {row.last_cuda})")
    return problems


def _link_problems(data: ToolchainData) -> List[str]:
    """renamed_to/formerly pairs that point at each other; nvcc 13.0's list equal to the records'."""
    problems: List[str] = []
    by_sm = {r.sm: r for r in data.archs}
    for row in data.archs:
        links = (("renamed_to", row.renamed_to, "formerly"), ("formerly", row.formerly, "renamed_to"))
        for name, target, back in links:
            if target is None:
                continue
            other = by_sm.get(target)
            if other is None:
                problems.append(f"{ARCHS}: {row.sm}: {name} {target} has no record")
            elif getattr(other, back) != row.sm:
                problems.append(f"{ARCHS}: {row.sm}: {name} {target}, but {target}'s {back} is not {row.sm}")
    for sm in data.nvcc_13_0_gpu_code:
        if sm not in by_sm:
            problems.append(f"{ARCHS}: nvcc_13_0: {sm} has no record")
    listed = set(data.nvcc_13_0_gpu_code)
    if listed and set(data.archs_for("13.0")) != listed:
        problems.append(f"{ARCHS}: nvcc_13_0: the records' CUDA 13.0 targets {sorted(data.archs_for('13.0'))} differ "
                        f"from nvcc 13.0's list {sorted(listed)}")
    return problems


# ---------------------------------------------------------------------------- host_compilers.json


def _compiler_problems(data: ToolchainData, toolkits: AbstractSet[VersionKey]) -> List[str]:
    problems = _key_problems(COMPILERS, [mm(r.cuda) for r in data.compilers], "cuda version")
    for row in data.compilers:
        where = f"{COMPILERS}: {row.cuda}"
        if mm(row.cuda) not in toolkits:
            problems.append(f"{where}: not a CUDA toolkit in cuda_toolkits.json")
        for name, low, high in (("gcc", row.gcc_min, row.gcc_max), ("clang", row.clang_min, row.clang_max)):
            if low is not None and high is not None and low > high:
                problems.append(f"{where}: {name}_min {low} is above {name}_max {high}")
        if row.msvc is not None and row.msvc.msc_ver_min > row.msvc.msc_ver_max:
            problems.append(f"{where}: msvc range is empty")
        if not _strictly_increasing([vkey(u.cuda) for u in row.updates]):
            problems.append(f"{where}: updates are not sorted and unique")
        for u in row.updates:
            if mm(u.cuda) != mm(row.cuda):
                problems.append(f"{where}: update {u.cuda} is not an update of {row.cuda}")
    return problems + _limit_problems(data)


def _limit_problems(data: ToolchainData) -> List[str]:
    """GCC and Clang limits that go down from one CUDA release (or update) to a later one."""
    problems: List[str] = []
    for name in ("gcc_max", "clang_max"):
        newest: Optional[Tuple[str, int]] = None
        for row in data.compilers:
            for cuda, value in [(row.cuda, getattr(row, name))] + [(u.cuda, getattr(u, name)) for u in row.updates]:
                if value is None:
                    continue
                if newest is not None and value < newest[1]:
                    problems.append(f"{COMPILERS}: {cuda}: {name} {value} is below {newest[0]}'s {newest[1]} "
                                    "(NVIDIA has not lowered a host-compiler limit)")
                newest = (cuda, value) if newest is None or value >= newest[1] else newest
    return problems


# ---------------------------------------------------------------------------- cudnn.json


def _cudnn_problems(data: ToolchainData, toolkits: AbstractSet[VersionKey], majors: AbstractSet[int]) -> List[str]:
    problems = _key_problems(CUDNN, [vkey(r.version) for r in data.cudnns], "version")
    for row in data.cudnns:
        where = f"{CUDNN}: {row.version}"
        if not _strictly_increasing([c.major for c in row.cuda]):
            problems.append(f"{where}: cuda majors are not sorted and unique")
        for c in row.cuda:
            cwhere = f"{where}: CUDA {c.major}"
            if c.major not in majors:
                problems.append(f"{cwhere}: no CUDA toolkit or minor-compatibility row for this major")
            for name, value in (("min", c.min), ("max", c.max)):
                if value is None:
                    continue
                if major(value) != c.major:
                    problems.append(f"{cwhere}: {name} {value} is not a CUDA {c.major} version")
                elif not _known(value, toolkits):
                    problems.append(_not_a_toolkit(cwhere, name, value))
            if c.min is not None and c.max is not None and vkey(c.min)[:2] > vkey(c.max)[:2]:
                problems.append(f"{cwhere}: min {c.min} is above max {c.max}")
    return problems
