"""`check` runs the quick smoke tier when a driver answers for a GPU, unless --no-smoke."""

from __future__ import annotations

import contextlib
import json
from typing import Any, Iterator, List

import pytest

import cudadoctor.api
import cudadoctor.probes
import cudadoctor.smoke.runner
from cudadoctor.cli.app import run
from cudadoctor.model import SmokeResult, SmokeTest
from cudadoctor.probes import collect
from cudadoctor.host.recorded import RecordedHost
from helpers import MACHINES



RESULTS = (
    SmokeResult("driver", "passed", tier="quick", tests=(SmokeTest("saxpy", "passed", gpu=0),)),
    SmokeResult("torch", "failed", reason="matmul_bf16 on GPU 0 failed", tier="quick",
                tests=(SmokeTest("matmul_bf16", "failed", gpu=0, error="RuntimeError: CUDA error: an illegal "
                                 "memory access was encountered"),)),
)


class FakeStarted:
    def __init__(self, result: SmokeResult) -> None:
        self._result = result

    def result(self) -> SmokeResult:
        return self._result


@pytest.fixture
def h200(monkeypatch: pytest.MonkeyPatch) -> List[Any]:
    """`check` on this box sees the recorded H200; the suites it would start are recorded, with the
    facts they were chosen from and whether the other probes were still to come."""
    snapshot = collect(RecordedHost.load(str(MACHINES / "h200-driver580-torch211-cu130")))
    calls: List[Any] = []

    def fake_collect(host: Any, **kwargs: Any) -> Any:
        when = kwargs.get("when")
        if when is not None:
            names, callback = when
            callback(collect(RecordedHost.load(str(MACHINES / "h200-driver580-torch211-cu130")), only=names))
        calls.append("probes done")
        return snapshot

    @contextlib.contextmanager
    def fake_start_suites(suites: Any, **kwargs: Any) -> Iterator[List[FakeStarted]]:
        calls.append((tuple(suites), kwargs["tier"]))
        yield [FakeStarted(r) for r in RESULTS]

    monkeypatch.setattr(cudadoctor.api, "collect", lambda **_: snapshot)
    monkeypatch.setattr(cudadoctor.probes, "collect", fake_collect)
    monkeypatch.setattr(cudadoctor.smoke.runner, "start_suites", fake_start_suites)
    return calls


def test_check_runs_the_quick_tier_and_reports_a_failure(h200: List[Any], capsys: pytest.CaptureFixture[str]) -> None:
    code = run(["check", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    (suites, tier), done = h200
    assert done == "probes done"  # the suites started before the probes had all answered
    assert tier == "quick" and suites[0] == "driver" and "torch" in suites
    assert [r["suite"] for r in out["snapshot"]["smoke"]] == ["driver", "torch"]
    assert any(f["category"] == "smoke_failed" for f in out["findings"])


def test_no_smoke_skips_it(h200: List[Any], capsys: pytest.CaptureFixture[str]) -> None:
    code = run(["check", "--no-smoke", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and h200 == [] and out["snapshot"]["smoke"] is None
