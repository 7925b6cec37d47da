"""The fleet's report extractor on arbitrary JSON: it never raises, and a malformed report is
explained by the path of the value it could not use (not by the catch-all "unexpected content")."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Dict, List, Union

from hypothesis import HealthCheck, given, settings, strategies as st

from cudadoctor.api import collect, diagnose, make_report
from cudadoctor.fleet.record import NodeRecord, Unreadable, extract
from cudadoctor.host.recorded import RecordedHost
from cudadoctor.render.jsonout import envelope

MACHINE = Path(__file__).resolve().parent / "machines" / "dgx-h100x8-driver570-torch27-cu128"

scalars = st.none() | st.booleans() | st.integers(min_value=-(2 ** 70), max_value=2 ** 70) | \
    st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
SNAPSHOT_KEYS = ("schema_version", "driver", "gpus", "toolkits", "libraries", "frameworks", "smoke", "host", "env")


def _base() -> Dict[str, Any]:
    snapshot = collect(host=RecordedHost.load(str(MACHINE)))
    report: Dict[str, Any] = json.loads(json.dumps(envelope(make_report(snapshot, diagnose(snapshot)))))
    report["node"] = "gpu-1"
    # What `cudadoctor smoke` adds on a node with GPUs: the bandwidth and failure paths get fuzzed too.
    report["snapshot"]["smoke"] = [{"suite": "driver", "status": "failed", "reason": "saxpy differs", "details": {},
                                    "tests": [{"name": "d2d_bandwidth", "status": "passed", "gpu": 0,
                                               "metrics": {"bandwidth_gbs": 1400.0, "h2d_bandwidth": 50.0}}]}]
    return report


BASE = _base()


def _paths(value: Any, prefix: List[Union[str, int]]) -> List[List[Union[str, int]]]:
    """Every path to a value inside ``value`` (the places a fuzzed value can go)."""
    out = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            out.extend(_paths(inner, prefix + [key]))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            out.extend(_paths(inner, prefix + [i]))
    return out


PATHS = [p for p in _paths(BASE, []) if p]


def _check(result: Any) -> None:
    assert isinstance(result, (NodeRecord, Unreadable))
    if isinstance(result, Unreadable):
        assert result.reason and "\n" not in result.reason
        assert not result.reason.startswith("unexpected content"), result.reason


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_any_json_document(value: Any) -> None:
    _check(extract(value, "x.json", "x"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(SNAPSHOT_KEYS), json_values, max_size=5), json_values)
def test_any_snapshot_in_an_envelope(snapshot: Dict[str, Any], findings: Any) -> None:
    _check(extract({"format": "cudadoctor.report", "format_version": 1, "snapshot": snapshot, "findings": findings},
                   "x.json", "x"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PATHS), json_values)
def test_a_real_report_with_one_value_replaced(path: List[Union[str, int]], value: Any) -> None:
    report = copy.deepcopy(BASE)
    target: Any = report
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    _check(extract(report, "x.json", "x"))
