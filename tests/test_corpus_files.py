"""The corpus of real public reports (tests/corpus/): every case is well formed, so the accuracy
benchmark and the verdict tests can trust it. reports/ holds failures with their confirmed root
cause; healthy/ holds working machines. Each case is the machine output as pasted (paste.md) and
where it came from (case.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from cudadoctor.model import Category

CORPUS = Path(__file__).parent / "corpus"
CASES = sorted(p for kind in ("reports", "healthy") for p in (CORPUS / kind).iterdir() if p.is_dir())
PROVOKED = sorted(p for p in (CORPUS / "provoked").iterdir() if p.is_dir())
KINDS = {"environment", "runtime", "program"}
BLOCKS = {"collect_env", "nvidia_smi", "nvidia_smi_q", "pip_list", "conda_list", "nvcc_version", "traceback",
          "log", "dmesg", "docker_cmd", "tf_build_info", "jax_env_info", "cupy_config", "ldd", "lspci",
          "os_release", "uname", "other"}


def _case(path: Path) -> Dict[str, Any]:
    data = json.loads((path / "case.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_the_corpus_is_large_enough() -> None:
    reports = [p for p in CASES if p.parent.name == "reports"]
    healthy = [p for p in CASES if p.parent.name == "healthy"]
    assert len(reports) >= 180 and len(healthy) >= 40


def test_the_validation_split_is_large_enough() -> None:
    """benchmarks/accuracy.py splits by a hash of the URL: validation holds >= 30 % and >= 40 failures."""
    import sys

    sys.path.insert(0, str(CORPUS.parent.parent / "benchmarks"))
    from accuracy import split_of

    reports = [_case(p) for p in CASES if p.parent.name == "reports"]
    validation = [c for c in reports if split_of(c["url"]) == "validation"]
    assert len(validation) >= 40 and len(validation) >= 0.30 * len(reports)
    kinds = {c["kind"] for c in validation}
    assert kinds == KINDS, kinds


@pytest.mark.parametrize("path", PROVOKED, ids=[p.name for p in PROVOKED])
def test_provoked_case_is_well_formed(path: Path) -> None:
    """A failure provoked on a real GPU by a script of tools/gpu_proof_cases/: its raw stderr."""
    case = _case(path)
    assert (path / "paste.md").read_text(encoding="utf-8").strip()
    assert (CORPUS.parent.parent / case["script"]).is_file()
    assert case["category"] in {c.value for c in Category} and case["kind"] in KINDS
    assert case["cause"] and case["confirmed_by"] and case["source"]


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_case_is_well_formed(path: Path) -> None:
    case = _case(path)
    paste = (path / "paste.md").read_text(encoding="utf-8")
    assert paste.strip(), "paste.md is empty"
    assert str(case["url"]).startswith("https://")
    assert case["cause"] and case["confirmed_by"]
    if path.parent.name == "healthy":
        assert case["category"] == "healthy" and case["kind"] == "healthy"
    else:
        assert case["category"] in {c.value for c in Category}, case["category"]
        assert case["kind"] in KINDS, case.get("kind")
    blocks: List[str] = case.get("blocks", [])
    assert set(blocks) <= BLOCKS, set(blocks) - BLOCKS


def test_no_thread_is_taken_twice() -> None:
    urls = [_case(p)["url"].split("#")[0].rstrip("/") for p in CASES]
    assert len(urls) == len(set(urls)), sorted(u for u in urls if urls.count(u) > 1)
