"""One node's compact record, extracted from its report's raw JSON: what the fleet summary keeps
of each report (fingerprint, findings, hardware signals, bandwidth figures), and the rest dropped.

:func:`extract` never raises: a report of the wrong shape, a newer format or a value of the
wrong type anywhere it looks becomes an :class:`Unreadable` with a one-line reason.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, Tuple, Union
from cudadoctor.record import frozen

from cudadoctor.checks.hardware import IDLE, SLOWDOWNS
from cudadoctor.model import SCHEMA_VERSION, Severity
from cudadoctor.render.jsonout import ENVELOPE_VERSION
from cudadoctor.model.serialize import ENVELOPE_FORMAT
from cudadoctor.fleet.fields import (
    BOOL_OR_NONE,
    INT_OR_NONE,
    BadField,
    flag,
    integer,
    items,
    kind,
    number,
    obj,
    strings,
    text,
)
from cudadoctor.fleet.fingerprint import Fingerprint, fingerprint, gpu_name

SEVERITIES = frozenset(s.value for s in Severity)
FAILED_SMOKE = ("failed", "error", "timeout", "crashed")
# The copy rate a bandwidth test reports (bytes copied per second): driver suite, torch suite.
COPY_METRICS = ("bandwidth_gbs", "gbs")


@frozen
class Signal:
    """A hardware fact worth a look: ``kind`` is memory | smoke | pcie | clocks."""

    kind: str
    gpu: Optional[int]
    detail: str


# One bandwidth figure: (metric, GPU model, GPU index, GB/s); the metric is the test's name, and
# the metric's when it is not the test's copy rate. A plain tuple, not a dataclass: there are ten
# per node, and they cross from the worker processes, where pickling dataclasses costs more than
# extracting them.
Sample = Tuple[str, str, int, float]


@frozen
class NodeRecord:
    node: str
    path: str
    fingerprint: Fingerprint
    findings: Tuple[Tuple[str, str, str], ...]  # (code, severity, title)
    signals: Tuple[Signal, ...]
    samples: Tuple[Sample, ...]
    checked: bool  # the report carries findings (a probe-only report has none)


@frozen
class Unreadable:
    """A report that could not be used. ``kind``: unreadable | not_report | newer | duplicate."""

    node: str
    path: str
    kind: str
    reason: str


Result = Union[NodeRecord, Unreadable]


def extract(data: Any, path: str, stem: str) -> Result:
    """The record of one parsed report (``stem``: the file's name without its suffix, the node's
    name when the report does not carry one). Never raises."""
    if not isinstance(data, dict):
        return Unreadable(stem, path, "not_report", f"not a cudadoctor report (the JSON is {kind(data)})")
    fmt = data.get("format")
    if fmt != ENVELOPE_FORMAT:
        what = f"format {str(fmt)[:40]!r}" if fmt is not None else "no \"format\" key"
        return Unreadable(stem, path, "not_report", f"not a cudadoctor report ({what})")
    node = data.get("node")
    name = node if isinstance(node, str) and node.strip() else stem
    version = data.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        return Unreadable(name, path, "unreadable", f"format_version: expected an integer, got {kind(version)}")
    if version > ENVELOPE_VERSION:
        return Unreadable(name, path, "newer", f"written by a newer cudadoctor (format_version {version}; this one "
                                               f"reads {ENVELOPE_VERSION}): upgrade cudadoctor")
    try:
        return _record(data, name, path)
    except BadField as exc:
        return Unreadable(name, path, "unreadable", str(exc))
    except Exception as exc:  # noqa: BLE001 - a shape no accessor foresaw: one line, never a traceback
        return Unreadable(name, path, "unreadable", f"unexpected content ({type(exc).__name__}: {str(exc)[:80]})")


def _record(data: Dict[str, Any], name: str, path: str) -> NodeRecord:
    snapshot = obj(data, "snapshot", "report")
    if snapshot is None:
        raise BadField("report.snapshot: missing")
    schema = integer(snapshot, "schema_version", "snapshot")
    if schema is not None and schema > SCHEMA_VERSION:
        raise BadField(f"snapshot.schema_version {schema} is newer than this cudadoctor reads ({SCHEMA_VERSION}): "
                       "upgrade cudadoctor")
    findings = _findings(data)
    gpus = items(snapshot, "gpus", "snapshot") or []
    signals = _gpu_signals(gpus)
    smoke = items(snapshot, "smoke", "snapshot") or []
    signals.extend(_smoke_signals(smoke))
    return NodeRecord(name, path, fingerprint(data, snapshot), tuple(findings or ()), tuple(signals),
                      tuple(_samples(smoke, gpus)), findings is not None)


def _findings(data: Dict[str, Any]) -> Optional[List[Tuple[str, str, str]]]:
    found = items(data, "findings", "report")
    if found is None:
        return None
    out = []
    for i, f in enumerate(found):
        where = f"findings[{i}]"
        code, severity = text(f, "code", where), text(f, "severity", where)
        if not code:
            raise BadField(f"{where}.code: missing")
        if severity not in SEVERITIES:
            raise BadField(f"{where}.severity: {str(severity)[:20]!r} is not one of {', '.join(sorted(SEVERITIES))}")
        out.append((code, severity, text(f, "title", where) or code))
    return out


INT_FIELDS = ("index", "ecc_uncorrected_volatile", "ecc_uncorrected_aggregate", "pcie_gen_current", "pcie_gen_max",
              "pcie_width_current", "pcie_width_max")
FLAG_FIELDS = ("remapped_rows_failure", "remapped_rows_pending", "retired_pages_pending")
MEMORY = ("a row remap failed: the GPU needs service", "a row remap waits for a GPU reset",
          "a page retirement waits for a GPU reset")
SLOW = frozenset(SLOWDOWNS)


def _gpu_signals(gpus: List[Dict[str, Any]]) -> List[Signal]:
    """Uncorrected ECC errors, memory repairs pending or failed, a PCIe link below its maximum
    (a lower generation only while busy: an idle GPU slows its link to save power), and clocks
    held back by heat or the power supply (the reasons of cudadoctor/checks/hardware.py)."""
    out: List[Signal] = []
    for i, g in enumerate(gpus):
        # Read in bulk and type-check in C (the common case); the accessors name a bad field.
        ints = list(map(g.get, INT_FIELDS))
        if not INT_OR_NONE.issuperset(map(type, ints)):
            ints = [integer(g, k, f"snapshot.gpus[{i}]") for k in INT_FIELDS]
        flags = list(map(g.get, FLAG_FIELDS))
        if not BOOL_OR_NONE.issuperset(map(type, flags)):
            flags = [flag(g, k, f"snapshot.gpus[{i}]") for k in FLAG_FIELDS]
        reasons = g.get("clocks_event_reasons")
        if reasons is not None:
            reasons = strings(g, "clocks_event_reasons", f"snapshot.gpus[{i}]")
        index, volatile, aggregate, gen, gen_max, width, width_max = ints
        narrow = bool(width and width_max and width < width_max)
        slow = bool(gen and gen_max and gen < gen_max and reasons is not None and IDLE not in reasons)
        slowed = reasons is not None and not SLOW.isdisjoint(reasons)
        if not (volatile or aggregate or narrow or slow or slowed or any(flags)):
            continue  # a healthy GPU: most of them
        gpu = index if index is not None else i
        if volatile is not None and volatile > 0:
            out.append(Signal("memory", gpu, f"{volatile} uncorrected ECC error{_s(volatile)} since the driver loaded"))
        elif aggregate is not None and aggregate > 0:
            out.append(Signal("memory", gpu, f"{aggregate} uncorrected ECC error{_s(aggregate)} in its lifetime"))
        out.extend(Signal("memory", gpu, detail) for detail, on in zip(MEMORY, flags) if on)
        if narrow or slow:
            out.append(Signal("pcie", gpu, f"PCIe Gen{gen or '?'} x{width or '?'} (max Gen{gen_max or '?'} x{width_max or '?'})"))
        if slowed:
            out.append(Signal("clocks", gpu, "clocks slowed: " + ", ".join(r for r in SLOWDOWNS if r in (reasons or ()))))
    return out


def _smoke_signals(smoke: List[Dict[str, Any]]) -> List[Signal]:
    out = []
    for i, r in enumerate(smoke):
        where = f"snapshot.smoke[{i}]"
        status = text(r, "status", where)
        if status in FAILED_SMOKE:
            reason = " ".join((text(r, "reason", where) or "").split())
            detail = f"smoke {text(r, 'suite', where) or '?'} {status}" + (f": {reason[:120]}" if reason else "")
            out.append(Signal("smoke", None, detail))
    return out


def _samples(smoke: List[Dict[str, Any]], gpus: List[Dict[str, Any]]) -> List[Sample]:
    """Bandwidth figures of passed tests: a test named ``*bandwidth*`` gives its copy rate
    (``bandwidth_gbs``, else ``gbs``); any metric named ``*bandwidth*`` is a figure of its own."""
    out: List[Sample] = []
    models: Optional[Dict[int, str]] = None
    for i, r in enumerate(smoke):
        for j, t in enumerate(items(r, "tests", f"snapshot.smoke[{i}]") or ()):
            name, metrics = t.get("name"), t.get("metrics")
            if not metrics:
                continue
            if type(metrics) is not dict:
                raise BadField(f"snapshot.smoke[{i}].tests[{j}].metrics: expected an object, got {kind(metrics)}")
            copy_test = type(name) is str and "bandwidth" in name
            # Most tests measure no bandwidth: skip them before reading anything else.
            if not copy_test and not any("bandwidth" in key for key in metrics):
                continue
            gpu = t.get("gpu")
            if type(gpu) is not int:
                integer(t, "gpu", f"snapshot.smoke[{i}].tests[{j}]")  # raises for a wrong type; null: no GPU
                continue
            if t.get("status") != "passed":
                continue
            if models is None:
                models = _models(gpus)
            model = sys.intern(models.get(gpu) or _suite_model(obj(r, "details", f"snapshot.smoke[{i}]") or {}, gpu))
            test = sys.intern(name if type(name) is str else text(t, "name", f"snapshot.smoke[{i}].tests[{j}]") or "?")
            if copy_test:
                copied = metrics.get(COPY_METRICS[0])
                rate = number(copied if copied is not None else metrics.get(COPY_METRICS[1]))
                if rate is not None:
                    out.append((test, model, gpu, rate))
            for key, value in metrics.items():
                if "bandwidth" in key and not (copy_test and key in COPY_METRICS):
                    figure = number(value)
                    if figure is not None:
                        out.append((sys.intern(f"{test} {key}"), model, gpu, figure))
    return out


def _models(gpus: List[Dict[str, Any]]) -> Dict[int, str]:
    """GPU index → model name, from the snapshot."""
    out = {}
    for i, g in enumerate(gpus):
        index = g.get("index")
        out[index if type(index) is int else i] = gpu_name(g, i)
    return out


def _suite_model(details: Dict[str, Any], gpu: int) -> str:
    """The GPU's name as the smoke suite saw it (``gpu.<i>.name``, or ``gpu<i>`` = "name, ...")."""
    name = details.get(f"gpu.{gpu}.name")
    if not isinstance(name, str):
        alt = details.get(f"gpu{gpu}")
        name = alt.split(",")[0] if isinstance(alt, str) else None
    return name.strip() if name and name.strip() else "unknown GPU"


def _s(n: int) -> str:
    return "" if n == 1 else "s"
