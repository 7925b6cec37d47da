"""`check` runs the quick smoke tier when a driver answers for a GPU, unless --no-smoke."""

from __future__ import annotations

import json
from typing import Any, List

import pytest

import cudadoctor.api
import cudadoctor.smoke.runner
from cudadoctor.cli.app import run
from cudadoctor.model import SmokeResult, SmokeTest
from cudadoctor.probes import collect
from cudadoctor.host.recorded import RecordedHost
from helpers import MACHINES



@pytest.fixture
def h200(monkeypatch: pytest.MonkeyPatch) -> List[Any]:
    """`check` on this box sees the recorded H200; the suites it would run are recorded."""
    snapshot = collect(RecordedHost.load(str(MACHINES / "h200-driver580-torch211-cu130")))
    monkeypatch.setattr(cudadoctor.api, "collect", lambda **_: snapshot)
    calls: List[Any] = []

    def fake_run_suites(suites: Any, **kwargs: Any) -> Any:
        calls.append((tuple(suites), kwargs["tier"]))
        return (
            SmokeResult("driver", "passed", tier="quick", tests=(SmokeTest("saxpy", "passed", gpu=0),)),
            SmokeResult("torch", "failed", reason="matmul_bf16 on GPU 0 failed", tier="quick",
                        tests=(SmokeTest("matmul_bf16", "failed", gpu=0, error="RuntimeError: CUDA error: an illegal "
                                         "memory access was encountered"),)),
        )

    monkeypatch.setattr(cudadoctor.smoke.runner, "run_suites", fake_run_suites)
    return calls


def test_check_runs_the_quick_tier_and_reports_a_failure(h200: List[Any], capsys: pytest.CaptureFixture[str]) -> None:
    code = run(["check", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    suites, tier = h200[0]
    assert tier == "quick" and suites[0] == "driver" and "torch" in suites
    assert [r["suite"] for r in out["snapshot"]["smoke"]] == ["driver", "torch"]
    assert any(f["category"] == "smoke_failed" for f in out["findings"])


def test_no_smoke_skips_it(h200: List[Any], capsys: pytest.CaptureFixture[str]) -> None:
    code = run(["check", "--no-smoke", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and h200 == [] and out["snapshot"]["smoke"] is None
