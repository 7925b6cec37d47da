"""What the ecosystem tables share: facts, version ranges, and the checks their invariants use.

Ranges are inclusive and ``last`` may be shorter than a full version: ``first='0.4.34',
last='0.5'`` covers 0.4.34 ... 0.5.x. ``None`` leaves that end open.
"""

from __future__ import annotations

import re
from typing import Any, List, Mapping, Optional, Sequence, Set, Tuple
from cudadoctor.record import frozen

from cudadoctor.matrix.load import provenance
from cudadoctor.matrix.versions import VersionKey, at_least, vkey

_CU_SUFFIX = re.compile(r"-cu(\d+)$")
_CLAUSE = re.compile(r"^(==|>=|<=|~=|!=|<|>)(.+)$")


@frozen
class Fact:
    """A single sourced statement of a table (``facts``), e.g. the last native-Windows GPU
    TensorFlow release."""

    id: str
    value: str
    source: str
    confidence: str
    note: Optional[str] = None


prov = provenance  # the fields every record carries (matrix.load.provenance)


def facts_of(doc: Mapping[str, Any]) -> Tuple[Fact, ...]:
    return tuple(Fact(id=f["id"], value=f["value"], **prov(f)) for f in doc.get("facts", []))


def find_fact(facts: Sequence[Fact], fact_id: str) -> Optional[Fact]:
    for item in facts:
        if item.id == fact_id:
            return item
    return None


def build_for(builds: Sequence[Any], cuda_major: int) -> Any:
    """The entry of ``builds`` (each with a ``cuda_major``) for that CUDA major, or None."""
    return next((b for b in builds if b.cuda_major == cuda_major), None)


def strs(items: Optional[Sequence[str]]) -> Tuple[str, ...]:
    return tuple(items or ())


def in_range(version: str, first: Optional[str], last: Optional[str]) -> bool:
    """``first <= version <= last``; ``last`` compares by its own length ('0.5' covers 0.5.3)."""
    key = vkey(version)
    if not key:
        return False
    if first is not None and not at_least(version, first):
        return False
    if last is not None:
        end = vkey(last)
        if key[: len(end)] > end:
            return False
    return True


def span(first: Optional[str], last: Optional[str]) -> str:
    """How a range is named in problems: '0.4.26-0.4.29', '..-0.1.49', '0.7.2-..'."""
    return f"{first or '..'}-{last or '..'}"


def norm_dist(name: str) -> str:
    """PyPI's normalised distribution name: 'jax_cuda12_plugin' -> 'jax-cuda12-plugin'."""
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def cu_suffix(name: str) -> Optional[int]:
    """The CUDA major a '-cuNN' distribution is built for: nvidia-nccl-cu12 -> 12."""
    m = _CU_SUFFIX.search(norm_dist(name))
    return int(m.group(1)) if m else None


def lower_bound(spec: str) -> Optional[str]:
    """The version a requirement starts from: '==12.2.140' -> 12.2.140, '>=9.3,<10' -> 9.3."""
    for clause in spec.split(","):
        m = _CLAUSE.match(clause.strip())
        if m and m.group(1) in ("==", ">=", "~="):
            return m.group(2)
    return None


def spec_problems(spec: str) -> List[str]:
    out = []
    for clause in spec.split(","):
        m = _CLAUSE.match(clause.strip())
        if not m or not vkey(m.group(2)):
            out.append(f"requirement '{spec}' is not a version specifier")
    return out


class Checker:
    """Collects the problems of one file, each as 'file: record: what'."""

    def __init__(self, file: str, matrix: Any) -> None:
        self.file = file
        self.problems: List[str] = []
        toolkits = [vkey(t.cuda) for t in matrix.cuda.toolkits] if matrix is not None else []
        self.minors: Set[VersionKey] = {k[:2] for k in toolkits if k}
        self.majors: Set[int] = {k[0] for k in toolkits if k}
        self.oldest: VersionKey = min(self.minors) if self.minors else ()

    def add(self, where: str, what: str) -> None:
        self.problems.append(f"{self.file}: {where}: {what}" if where else f"{self.file}: {what}")

    def cuda(self, where: str, version: Optional[str]) -> None:
        """A CUDA version ('12', '12.4', '11.0.3') must be a release of cuda_toolkits.json (by
        major, or major.minor). Versions older than the oldest release there are not checked."""
        if version is None:
            return
        key = vkey(version)
        if not key:
            self.add(where, f"CUDA '{version}' is not a version")
        elif not self.minors or (key + (0,))[:2] < self.oldest:
            return
        elif len(key) == 1 and key[0] not in self.majors:
            self.add(where, f"CUDA {version} is not a major of cuda_toolkits.json")
        elif len(key) > 1 and key[:2] not in self.minors:
            self.add(where, f"CUDA {version} is not a release of cuda_toolkits.json")

    def cuda_of_major(self, where: str, version: Optional[str], cuda_major: int) -> None:
        self.cuda(where, version)
        if version is not None and vkey(version)[:1] != (cuda_major,):
            self.add(where, f"CUDA {version} is not of CUDA major {cuda_major}")

    def ordered(self, where: str, low: Optional[str], high: Optional[str], what: str) -> None:
        if low is not None and high is not None and not in_range(low, None, high):
            self.add(where, f"{what} {low} is above {high}")

    def python(self, where: str, versions: Optional[Sequence[str]]) -> None:
        if versions is None:
            return
        keys = [vkey(v) for v in versions]
        if keys != sorted(set(keys)):
            self.add(where, "python versions are not sorted and unique")

    def sorted_unique(self, keys: Sequence[Any], labels: Sequence[str], what: str) -> None:
        if list(keys) != sorted(keys):
            self.add("", f"{what} are not in order")
        seen: Set[Any] = set()
        for key, label in zip(keys, labels):
            if key in seen:
                self.add(label, "listed twice")
            seen.add(key)

    def ranges(self, items: Sequence[Tuple[Optional[str], Optional[str]]], what: str = "records") -> None:
        """Ranges sorted by their start, each well-formed, none overlapping the next; only the
        first may be open at the start and only the last at the end."""
        for i, (first, last) in enumerate(items):
            where = span(first, last)
            if first is None and i > 0:
                self.add(where, "only the first range may be open at the start")
            if last is None and i < len(items) - 1:
                self.add(where, "only the last range may be open at the end")
            if first is not None and last is not None and not in_range(first, first, last):
                self.add(where, f"first {first} is above last {last}")
            if i > 0:
                prev_first, prev_last = items[i - 1]
                if first is None or (prev_first is not None and vkey(first) < vkey(prev_first)):
                    self.add(where, f"{what} are not sorted by first version")
                elif in_range(first, prev_first, prev_last):
                    self.add(where, f"overlaps {span(prev_first, prev_last)}")

    def pins(self, where: str, pins: Sequence[Tuple[str, str]], cuda_major: int) -> None:
        for name, spec in pins:
            for problem in spec_problems(spec):
                self.add(where, f"{name}: {problem}")
            suffix = cu_suffix(name)
            if suffix is not None and suffix != cuda_major:
                self.add(where, f"{name} is a CUDA {suffix} wheel in a CUDA {cuda_major} set")
            if norm_dist(name) != name:
                self.add(where, f"{name} is not a normalised distribution name")

    def facts(self, facts: Sequence[Fact], required: Sequence[str], versions: Sequence[str] = ()) -> None:
        ids = [f.id for f in facts]
        if ids != sorted(set(ids)):
            self.add("facts", "not sorted by id, or an id is listed twice")
        for fid in required:
            if fid not in ids:
                self.add("facts", f"{fid} is missing")
        for item in facts:
            if item.id in versions and not re.match(r"^\d+(\.\d+)*$", item.value):
                self.add(f"facts: {item.id}", f"'{item.value}' is not a version")
