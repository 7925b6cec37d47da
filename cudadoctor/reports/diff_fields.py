"""The pieces every section of ``cudadoctor diff`` is built from: a :class:`Difference`, and
comparisons of fields, of name → value mappings and of items matched by name (cudadoctor/reports/diff.py)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, TypeVar
from cudadoctor.record import frozen

T = TypeVar("T")
UNKNOWN = "unknown"


@frozen
class Difference:
    """One fact that differs. ``a``/``b`` are ``None`` where the item is absent on that side
    (a package not installed, a variable not set); a fact present but unreadable is ``"unknown"``."""

    section: str  # driver | gpus | toolkits | libraries | frameworks | packages | env | python | host | ...
    item: str  # what is compared within the section: "GPU 0", "torch", "CUDA_HOME"; "" for the section itself
    field: str  # which fact of the item: "version", "CUDA"; "" when the item is one value
    a: Optional[str]
    b: Optional[str]
    noise: bool = False

    @property
    def key(self) -> str:
        """The item and field in one string: ``GPU 0: name``, ``torch: CUDA``, ``CUDA_HOME``."""
        if self.item and self.field:
            return f"{self.item}: {self.field}"
        return self.item or self.field

    @property
    def kind(self) -> str:
        """``added`` (only in B), ``removed`` (only in A) or ``changed``."""
        if self.a is None:
            return "added"
        if self.b is None:
            return "removed"
        return "changed"


def fmt(value: Any) -> str:
    """A fact as the string a difference shows."""
    if value is None:
        return UNKNOWN
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (tuple, list)):
        return ", ".join(str(v) for v in value) if value else "none"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items())) if value else "none"
    return str(value)


Field = Tuple[str, Callable[[T], Any], bool]  # label, getter, noise


def compare_fields(section: str, item: str, a: Optional[T], b: Optional[T], fields: Sequence[Field[T]]) -> List[Difference]:
    """Every field whose value differs between ``a`` and ``b`` (both present)."""
    out = []
    for label, get, noise in fields:
        va = fmt(get(a)) if a is not None else UNKNOWN
        vb = fmt(get(b)) if b is not None else UNKNOWN
        if va != vb:
            out.append(Difference(section, item, label, va, vb, noise))
    return out


def compare_keyed(section: str, a: Mapping[str, str], b: Mapping[str, str], noise: bool = False) -> List[Difference]:
    """Items added, removed or changed between two name → value mappings, in name order."""
    return [Difference(section, key, "", a.get(key), b.get(key), noise)
            for key in sorted(set(a) | set(b), key=str.lower) if a.get(key) != b.get(key)]


def compare_items(section: str, a: Mapping[str, T], b: Mapping[str, T], summary: Callable[[T], str],
                  fields: Sequence[Field[T]]) -> List[Difference]:
    """Items matched by key: one difference for an item on one side only (its summary), the
    differing fields of an item on both."""
    out: List[Difference] = []
    for key in union(a, b):
        if key not in b:
            out.append(Difference(section, key, "", summary(a[key]), None))
        elif key not in a:
            out.append(Difference(section, key, "", None, summary(b[key])))
        else:
            out.extend(compare_fields(section, key, a[key], b[key], fields))
    return out


def union(a: Iterable[str], b: Iterable[str]) -> List[str]:
    """Keys of ``a`` in their order, then those only in ``b``."""
    seen = list(a)
    return seen + [k for k in b if k not in seen]


def whole_section(section: str, a: Optional[Sequence[Any]], b: Optional[Sequence[Any]], absent: str = UNKNOWN) -> Optional[List[Difference]]:
    """For a list section that is unknown on one side: one difference saying so, instead of an item
    by item comparison with nothing. ``None`` when both sides are known (compare them)."""
    if a is None and b is None:
        return []
    if a is None or b is None:
        return [Difference(section, "", "items", _count(a, absent), _count(b, absent))]
    return None


def _count(items: Optional[Sequence[Any]], absent: str) -> str:
    if items is None:
        return absent
    return str(len(items)) if items else "none"


def mib(value: Optional[int]) -> Optional[str]:
    return f"{value} MiB" if value is not None else None


def by_name(items: Iterable[T], name: Callable[[T], str]) -> Dict[str, T]:
    """Items by name; the first of two with the same name wins (the loader's order)."""
    out: Dict[str, T] = {}
    for item in items:
        out.setdefault(name(item), item)
    return out
