"""What a configuration changes against the majority, in the words of ``cudadoctor diff``.

Only the two representatives are read in full (the majority's first node and the configuration's
first node) and compared with :func:`cudadoctor.reports.diff.compare`. The differences shown are those of
the sections the fingerprint is made of, so they hold for every node of the configuration; the
others (packages, environment variables, ...) may be one node's own and are only counted.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple, Union

from cudadoctor.reports.diff import IMPORTANCE, Side, compare, phrase
from cudadoctor.reports.diff_fields import Difference
from cudadoctor.model import Report
from cudadoctor.fleet.fingerprint import KEY_LIBRARIES, SECTION, Change, changes, phrase as fingerprint_phrase
from cudadoctor.fleet.record import NodeRecord

FINGERPRINT_SECTIONS = frozenset(s for s in SECTION.values() if s is not None)
KEY_LIBRARY_NAMES = frozenset(name for name, _ in KEY_LIBRARIES)
NOT_COUNTED = frozenset({"findings"})  # shown across the fleet in their own section


def load_report(path: str) -> Union[Report, str]:
    """The full Report of one file, or why it cannot be loaded (e.g. a field this version does
    not know: the compact record read it, the strict loader does not)."""
    from cudadoctor.fleet.read import parse_file
    from cudadoctor.model.reader import report_parts
    from cudadoctor.model.serialize import SnapshotError
    from cudadoctor.reports.build import make_report, with_versions

    data, reason = parse_file(path)
    if reason is not None or not isinstance(data, dict):
        return reason or "not a report"
    try:
        snapshot, findings, versions = report_parts(data)
    except (SnapshotError, TypeError, RecursionError) as exc:
        return str(exc)[:160]
    return with_versions(make_report(snapshot, findings or ()), versions)


def describe_changes(base: Union[Report, str, None], base_record: NodeRecord,
                     other: NodeRecord) -> Tuple[Tuple[Change, ...], int, str]:
    """(the changes from the majority to ``other``'s configuration, how many other differences its
    representative has, a note when the comparison fell back to the fingerprint)."""
    fp_changes = changes(base_record.fingerprint, other.fingerprint)
    loaded = load_report(other.path)
    if base is None or isinstance(base, str) or isinstance(loaded, str):
        who, why = (base_record, base) if isinstance(base, str) or base is None else (other, loaded)
        note = f"{who.node}'s report could not be compared ({why}): fingerprint only"
        return tuple(_fingerprint_change(c, a, b) for c, a, b in fp_changes), 0, note
    comparison = compare(Side(base_record.path, base), Side(other.path, loaded))
    inside = [d for d in comparison.differences if _in_fingerprint(d)]
    outside = sum(1 for d in comparison.differences if not _in_fingerprint(d) and d.section not in NOT_COUNTED)
    shown = [Change(d.section, d.key, d.a, d.b, phrase(d)) for d in _merge_gpus(inside)]
    covered = {d.section for d in inside}
    shown.extend(_fingerprint_change(c, a, b) for c, a, b in fp_changes if SECTION.get(c) not in covered)
    order = {name: i for i, name in enumerate(IMPORTANCE)}
    shown.sort(key=lambda c: order.get(c.section, len(order)))  # stable: diff's order within a section
    return tuple(_mark_follows(shown)), outside, ""


def _in_fingerprint(d: Difference) -> bool:
    """Of the libraries, only those of the fingerprint: another library's version may be one node's own."""
    return d.section in FINGERPRINT_SECTIONS and (d.section != "libraries" or d.item in KEY_LIBRARY_NAMES)


def _fingerprint_change(component: str, a: str, b: str) -> Change:
    return Change(SECTION.get(component) or component, component, a, b, fingerprint_phrase(component, a, b))


def _merge_gpus(found: List[Difference]) -> List[Difference]:
    """Several GPUs changed the same way (8 × H100 → 8 × A100) read as one difference."""
    groups: Dict[Tuple[str, Optional[str], Optional[str]], List[Difference]] = {}
    for d in found:
        if d.section == "gpus" and d.item.startswith("GPU "):
            groups.setdefault((d.field, d.a, d.b), []).append(d)
    out: List[Difference] = []
    for d in found:
        group = groups.get((d.field, d.a, d.b)) if d.section == "gpus" and d.item.startswith("GPU ") else None
        if group is None or len(group) == 1:
            out.append(d)
        elif group[0] is d:
            out.append(dataclasses.replace(d, item=f"{len(group)} GPUs"))
    return out


def _mark_follows(shown: List[Change]) -> List[Change]:
    """A change whose values contain an earlier one's (the kernel module's 570.124.06 → 550.54.15
    after the driver's, libcuda's too) follows from it: kept, marked so the text can fold it."""
    out: List[Change] = []
    for c in shown:
        follows = any(p.a and p.b and not p.follows and c.a is not None and c.b is not None
                      and p.a in c.a and p.b in c.b for p in out)
        out.append(dataclasses.replace(c, follows=follows) if follows else c)
    return out
