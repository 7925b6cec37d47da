"""The fleet summary: configurations, findings across nodes, hardware signals, bandwidth outliers,
and the reports that are missing or could not be read.

Built in one pass over the nodes' compact records (:mod:`cudadoctor.fleet.record`); only one
representative report per configuration is read in full, to say what differs from the majority
with ``cudadoctor diff``'s own comparison (:func:`cudadoctor.reports.diff.compare`). No node is compared
with every other.
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import Dict, Iterable, List, Optional, Sequence, Tuple
from cudadoctor.record import frozen

from cudadoctor.fleet.fingerprint import Change, Fingerprint
from cudadoctor.fleet.record import NodeRecord, Result, Unreadable

MAX_COMPARED = 50  # configurations compared with the majority; the others are counted
OUTLIER = 0.8  # of the fleet's median for the same metric and GPU model
MIN_SAMPLES = 3  # a median of fewer figures says nothing about the fleet
RANK = {"crashed": 0, "error": 0, "warning": 1, "info": 2, "ok": 3}  # crashed checks count as errors
SIGNAL_ORDER = {"memory": 0, "smoke": 1, "pcie": 2, "clocks": 3}


@frozen
class Configuration:
    fingerprint: Fingerprint
    nodes: Tuple[str, ...]
    representative: str  # the path of the report compared (the first node's)
    changes: Optional[Tuple[Change, ...]]  # None: the majority itself, or not compared (beyond the cap)
    other_differences: int = 0  # differences between the two representatives outside the fingerprint
    note: str = ""  # why the changes are the fingerprint's only (a representative could not be loaded)


@frozen
class FindingCount:
    code: str
    severity: str  # the most severe seen
    title: str  # the first node's title
    nodes: Tuple[str, ...]


@frozen
class HardwareLine:
    node: str
    gpu: Optional[int]
    kind: str
    detail: str


@frozen
class Outlier:
    node: str
    gpu: int
    model: str
    metric: str
    gbs: float
    median_gbs: float
    samples: int


@frozen
class FleetSummary:
    reported: int  # nodes with a usable report
    configurations: Tuple[Configuration, ...]  # most nodes first; the first is the majority
    not_compared: int
    findings: Tuple[FindingCount, ...]  # errors first, then by number of nodes
    hardware: Tuple[HardwareLine, ...]
    outliers: Tuple[Outlier, ...]
    problems: Tuple[Unreadable, ...]  # unreadable, not reports, newer format, duplicates
    missing: Tuple[str, ...]  # named by --nodes
    missing_count: int  # also counts what --expected says is missing
    expected: Optional[int]
    nodes_with_errors: int
    nodes_with_warnings: int
    not_checked: int  # reports without findings (probe only)
    unexpected: Tuple[str, ...] = ()  # nodes that reported but are not among --nodes

    @property
    def unreadable(self) -> Tuple[Unreadable, ...]:
        """The reports that count as failures (duplicates of a node that did report do not)."""
        return tuple(p for p in self.problems if p.kind != "duplicate")


def summarize(results: Iterable[Result], expected: Optional[int] = None, nodes: Optional[Sequence[str]] = None,
              max_compared: int = MAX_COMPARED) -> FleetSummary:
    """Aggregate the records of every report (in a stable order) into a :class:`FleetSummary`.
    ``nodes`` (the nodes that should have reported) also names the nodes of redacted reports:
    a pseudonym ``host-1a2b3c4d`` is the hash of one of them (cudadoctor/reports/node.py)."""
    if nodes is not None:
        from cudadoctor.reports.node import pseudonym

        alias = {pseudonym(n): n for n in nodes}
        results = (dataclasses.replace(r, node=alias[r.node]) if r.node in alias else r for r in results)
    groups: Dict[Fingerprint, List[str]] = {}  # node names; the first is the representative
    first: Dict[Fingerprint, NodeRecord] = {}
    findings: Dict[str, Tuple[str, str, List[str]]] = {}
    hardware: List[HardwareLine] = []
    samples: Dict[Tuple[str, str], List[Tuple[float, str, int]]] = {}
    problems: List[Unreadable] = []
    seen: Dict[str, str] = {}  # node -> the path of its report
    worst = [0, 0, 0]  # nodes with errors, with warnings, not checked
    for r in results:
        if isinstance(r, Unreadable):
            problems.append(r)
            continue
        if r.node in seen:
            problems.append(Unreadable(r.node, r.path, "duplicate", f"a second report of node {r.node} "
                                                                    f"(the first, {seen[r.node]}, is used)"))
            continue
        seen[r.node] = r.path
        names = groups.get(r.fingerprint)
        if names is None:
            groups[r.fingerprint] = names = []
            first[r.fingerprint] = _slim(r)
        names.append(r.node)
        _count_findings(r, findings, worst)
        hardware.extend(HardwareLine(r.node, s.gpu, s.kind, s.detail) for s in r.signals)
        for metric, model, gpu, gbs in r.samples:
            samples.setdefault((metric, model), []).append((gbs, r.node, gpu))
    ordered = sorted(groups.items(), key=lambda g: (-len(g[1]), g[1][0]))
    configurations, not_compared = _configurations([(first[fp], names) for fp, names in ordered], max_compared)
    missing, missing_count = _missing(seen, problems, expected, nodes)
    return FleetSummary(
        reported=len(seen), configurations=configurations, not_compared=not_compared,
        findings=tuple(sorted((FindingCount(code, sev, title, tuple(names)) for code, (sev, title, names) in findings.items()),
                              key=lambda f: (RANK.get(f.severity, 9), -len(f.nodes), f.code))),
        hardware=tuple(sorted(hardware, key=lambda h: (SIGNAL_ORDER.get(h.kind, 9), h.node, h.gpu if h.gpu is not None else -1))),
        outliers=_outliers(samples), problems=tuple(problems), missing=missing, missing_count=missing_count,
        expected=expected, nodes_with_errors=worst[0], nodes_with_warnings=worst[1], not_checked=worst[2],
        unexpected=_unexpected(seen, nodes),
    )


def _slim(r: NodeRecord) -> NodeRecord:
    """What a configuration keeps of its representative: name, path, fingerprint."""
    return NodeRecord(r.node, r.path, r.fingerprint, (), (), (), r.checked)


def _count_findings(r: NodeRecord, findings: Dict[str, Tuple[str, str, List[str]]], worst: List[int]) -> None:
    node_rank = 9
    for code, severity, title in r.findings:
        rank = RANK.get(severity, 9)
        node_rank = min(node_rank, rank)
        known = findings.get(code)
        if known is None:
            findings[code] = (severity, title, [r.node])
            continue
        if rank < RANK.get(known[0], 9):  # the most severe occurrence names the finding
            findings[code] = (severity, title, known[2])
        names = findings[code][2]
        if names[-1] != r.node:  # a code a node reports twice (two GPUs) counts the node once
            names.append(r.node)
    if node_rank == 0:
        worst[0] += 1
    elif node_rank == 1:
        worst[1] += 1
    if not r.checked:
        worst[2] += 1


def _configurations(ordered: List[Tuple[NodeRecord, List[str]]],
                    max_compared: int) -> Tuple[Tuple[Configuration, ...], int]:
    """The configurations, most nodes first, each but the majority compared with it (up to
    ``max_compared`` of them): only the representatives are read again, in full."""
    if not ordered:
        return (), 0
    from cudadoctor.fleet.compare import describe_changes, load_report

    majority, names = ordered[0]
    out = [Configuration(majority.fingerprint, tuple(names), majority.path, None)]
    base = load_report(majority.path) if len(ordered) > 1 else None
    for i, (representative, names) in enumerate(ordered[1:]):
        if i >= max_compared:
            out.append(Configuration(representative.fingerprint, tuple(names), representative.path, None))
            continue
        changes, other, note = describe_changes(base, majority, representative)
        out.append(Configuration(representative.fingerprint, tuple(names), representative.path, changes, other, note))
    return tuple(out), max(0, len(ordered) - 1 - max_compared)


def _missing(seen: Dict[str, str], problems: Sequence[Unreadable], expected: Optional[int],
             nodes: Optional[Sequence[str]]) -> Tuple[Tuple[str, ...], int]:
    """The nodes named by --nodes without any report (a file that could not be read is listed as
    unreadable instead), and how many --expected says are missing."""
    if nodes is not None:
        from cudadoctor.fleet.read import stem

        present = set(seen) | {p.node for p in problems}
        present |= {stem(path) for path in seen.values()} | {stem(p.path) for p in problems}
        missing = tuple(n for n in nodes if n not in present)
        return missing, len(missing)
    if expected is not None:
        reports = len(seen) + sum(1 for p in problems if p.kind != "duplicate")
        return (), max(0, expected - reports)
    return (), 0


def _unexpected(seen: Dict[str, str], nodes: Optional[Sequence[str]]) -> Tuple[str, ...]:
    if nodes is None:
        return ()
    listed = set(nodes)
    return tuple(n for n in seen if n not in listed)


def _outliers(samples: Dict[Tuple[str, str], List[Tuple[float, str, int]]]) -> Tuple[Outlier, ...]:
    """Figures below :data:`OUTLIER` × the fleet's median of the same metric on the same GPU model."""
    out: List[Outlier] = []
    for (metric, model), values in samples.items():
        if len(values) < MIN_SAMPLES:
            continue
        median = statistics.median(v for v, _, _ in values)
        out.extend(Outlier(node, gpu, model, metric, v, median, len(values))
                   for v, node, gpu in values if v < OUTLIER * median)
    return tuple(sorted(out, key=lambda o: (o.gbs / o.median_gbs if o.median_gbs else 0.0, o.node, o.gpu)))


def exit_code(summary: FleetSummary, fail_on: str) -> int:
    """1 when a node has a finding at or above ``fail_on`` (error | warning | never; a crashed
    check counts as an error), or a report is missing or unreadable (unless ``never``); else 0."""
    if fail_on == "never":
        return 0
    if summary.unreadable or summary.missing_count or summary.nodes_with_errors:
        return 1
    return 1 if fail_on == "warning" and summary.nodes_with_warnings else 0
