"""`cudadoctor fleet summarize`: many nodes' reports in, one summary out.

The fleets are built from the reports of recorded machines (a healthy H200, a laptop whose driver
is too old for its torch), copied under other node names and edited the way nodes drift apart: an
older driver, a degraded PCIe link, uncorrected ECC errors, a slow memory copy; plus the files a
real collection holds: a truncated report, an empty file, someone else's JSON, a report from a
newer cudadoctor, a Markdown report, the same node twice.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest

from cudadoctor.api import collect, diagnose, make_report
from cudadoctor.cli.app import run
from cudadoctor.errors import CudadoctorError
from cudadoctor.fleet import read as fleet_read
from cudadoctor.fleet.nodes import expand, expected_nodes
from cudadoctor.fleet.read import read_all, read_one
from cudadoctor.fleet.record import NodeRecord, Unreadable
from cudadoctor.host.recorded import RecordedHost
from cudadoctor.render.jsonout import envelope
from cudadoctor.render.report_fit import fit_markdown
from helpers import MACHINES

H200 = "h200-driver580-torch211-cu130"
LAPTOP = "laptop-rtx3060-driver470-torch25-cu124"
Report = Dict[str, Any]


@pytest.fixture(scope="module")
def reports() -> Dict[str, Report]:
    """The JSON envelope of each recorded machine used here, as `cudadoctor report --format json` writes it."""
    out = {}
    for name in (H200, LAPTOP):
        snapshot = collect(host=RecordedHost.load(str(MACHINES / name)))
        out[name] = envelope(make_report(snapshot, diagnose(snapshot)))
    return out


def node(base: Report, name: Optional[str], edit: Optional[Callable[[Report], None]] = None) -> Report:
    """A copy of ``base`` as node ``name`` (None: the report names no node), edited by ``edit``."""
    report = copy.deepcopy(base)
    if name is not None:
        report["node"] = name
    if edit is not None:
        edit(report)
    return report


def write(folder: Path, file: str, content: Any) -> Path:
    path = folder / file
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2), encoding="utf-8")
    return path


def older_driver(report: Report) -> None:
    report["snapshot"]["driver"]["driver_version"] = "550.54.15"


def pcie_x8(report: Report) -> None:
    gpu = report["snapshot"]["gpus"][0]
    gpu["pcie_width_current"] = 8


def ecc_errors(report: Report) -> None:
    report["snapshot"]["gpus"][0]["ecc_uncorrected_volatile"] = 3
    report["findings"].append({"code": "ecc-uncorrected-volatile", "severity": "error", "category": "hardware_fault",
                               "title": "GPU 0 (NVIDIA H200) has had 3 uncorrected ECC errors since the driver was loaded"})


def both(*edits: Callable[[Report], None]) -> Callable[[Report], None]:
    def edit(report: Report) -> None:
        for e in edits:
            e(report)
    return edit


def smoke(gbs: float) -> Callable[[Report], None]:
    def edit(report: Report) -> None:
        report["snapshot"]["smoke"] = [{"suite": "driver", "status": "passed", "tests": [
            {"name": "cu_init", "status": "passed", "gpu": None, "metrics": {}},
            {"name": "d2d_bandwidth", "status": "passed", "gpu": 0, "metrics": {"bandwidth_gbs": gbs, "traffic_gbs": 2 * gbs}},
        ]}]
    return edit


def summarize(capsys: pytest.CaptureFixture[str], *args: str) -> "tuple[int, str, str]":
    code = run(["fleet", "summarize", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def fleet(tmp_path: Path, reports: Dict[str, Report]) -> Path:
    """Five healthy H200 nodes, two on an older driver, a laptop whose driver is too old for its
    torch, and four files that are not usable reports."""
    h200, laptop = reports[H200], reports[LAPTOP]
    for i in range(1, 6):
        write(tmp_path, f"n0{i}.json", node(h200, f"n0{i}"))
    write(tmp_path, "n06.json", node(h200, "n06", older_driver))
    write(tmp_path, "n07.json", node(h200, "n07", older_driver))
    write(tmp_path, "n08.json", node(laptop, "n08"))
    write(tmp_path, "n09.json", json.dumps(node(h200, "n09"), indent=2)[:900])  # died while writing
    write(tmp_path, "n10.json", "")
    write(tmp_path, "n11.json", {"hostname": "n11", "gpus": 8})
    write(tmp_path, "n12.json", node(h200, "n12", lambda r: r.update(format_version=99)))
    return tmp_path


# --------------------------------------------------------------------------- the summary


def test_majority_other_configurations_findings_and_unreadable(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = summarize(capsys, str(fleet), "--no-color")
    lines = out.splitlines()
    assert lines[0] == ("Fleet: 8 nodes reported, 4 unreadable · 3 configurations · 1 node with errors")
    assert lines[1].startswith("Majority (5 nodes of 8): driver 580.159.03 · 1× NVIDIA H200 · CUDA ")
    assert "  2 nodes (n06, n07): driver 580.159.03 → 550.54.15" in lines
    assert any(line.startswith("  1 node (n08): driver 580.159.03 → 470.82.01") for line in lines)
    finding = lines.index(next(line for line in lines if "driver-too-old-for-build" in line))
    assert lines[finding].startswith("  ✗ driver-too-old-for-build  1 node: torch 2.5.1+cu124 needs a newer NVIDIA driver")
    assert lines[finding + 1].strip() == "n08"
    unreadable = lines[lines.index("Unreadable:") + 1:]
    assert unreadable[0].startswith(f"  {fleet / 'n09.json'}: not JSON (line ")
    assert unreadable[1] == f"  {fleet / 'n10.json'}: empty file"
    assert unreadable[2] == f"  {fleet / 'n11.json'}: not a cudadoctor report (no \"format\" key)"
    assert unreadable[3] == (f"  {fleet / 'n12.json'}: written by a newer cudadoctor (format_version 99; this one "
                             "reads 1): upgrade cudadoctor")
    assert code == 1


def test_hardware_signals_and_bandwidth_outliers(tmp_path: Path, reports: Dict[str, Report],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    h200 = reports[H200]
    for i, gbs in enumerate((2000.0, 2010.0, 1990.0, 2005.0, 800.0)):
        write(tmp_path, f"g{i}.json", node(h200, f"g{i}", smoke(gbs)))
    write(tmp_path, "g5.json", node(h200, "g5", both(smoke(2000.0), pcie_x8)))
    write(tmp_path, "g6.json", node(h200, "g6", both(smoke(1995.0), ecc_errors)))
    write(tmp_path, "g7.json", node(h200, "g7", lambda r: r["snapshot"].update(smoke=[
        {"suite": "torch", "status": "failed", "reason": "matmul_bf16 on GPU 0: max relative error 3.1e-01"}])))
    code, out, _ = summarize(capsys, str(tmp_path))
    hardware = out.splitlines()[out.splitlines().index("Hardware:") + 1:]
    assert hardware == [
        "  g6 GPU 0: 3 uncorrected ECC errors since the driver loaded",
        "  g7: smoke torch failed: matmul_bf16 on GPU 0: max relative error 3.1e-01",
        "  g5 GPU 0: PCIe Gen5 x8 (max Gen5 x16)",
        "  g4 GPU 0: d2d_bandwidth 800 GB/s, fleet median 2,000 GB/s (0.40×) on NVIDIA H200",
    ]
    assert "  ✗ ecc-uncorrected-volatile  1 node: GPU 0 (NVIDIA H200) has had 3 uncorrected ECC errors" in out
    assert code == 1


def test_the_same_signal_on_many_nodes_is_one_line(tmp_path: Path, reports: Dict[str, Report],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(8):
        write(tmp_path, f"p{i}.json", node(reports[H200], f"p{i}", pcie_x8))
    _, out, _ = summarize(capsys, str(tmp_path))
    assert "  PCIe Gen5 x8 (max Gen5 x16): 8 GPUs on 8 nodes: p0 GPU 0, p1 GPU 0, p2 GPU 0, p3 GPU 0, p4 GPU 0, +3 more" in out
    _, verbose, _ = summarize(capsys, str(tmp_path), "-v")
    assert "p7 GPU 0" in verbose and "+3 more" not in verbose


def test_findings_errors_first_then_by_number_of_nodes(tmp_path: Path, reports: Dict[str, Report],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    def warn(report: Report) -> None:
        report["findings"].append({"code": "gpu-clocks-throttled", "severity": "warning", "title": "clocks slowed"})

    for i in range(3):
        write(tmp_path, f"w{i}.json", node(reports[H200], f"w{i}", warn))
    write(tmp_path, "e0.json", node(reports[H200], "e0", ecc_errors))
    _, out, _ = summarize(capsys, str(tmp_path))
    findings = [line for line in out.splitlines() if line.startswith("  ✗ ") or line.startswith("  ! ")]
    assert [line.split()[1] for line in findings] == ["ecc-uncorrected-volatile", "gpu-clocks-throttled"]
    assert "  ! gpu-clocks-throttled  3 nodes: clocks slowed" in findings


# --------------------------------------------------------------------------- exit codes


@pytest.mark.parametrize("fail_on, expected", [("error", 0), ("warning", 1), ("never", 0)])
def test_fail_on_warnings(tmp_path: Path, reports: Dict[str, Report], capsys: pytest.CaptureFixture[str],
                          fail_on: str, expected: int) -> None:
    write(tmp_path, "a.json", node(reports[H200], "a"))
    write(tmp_path, "b.json", node(reports[H200], "b", lambda r: r["findings"].append(
        {"code": "pcie-link-width-reduced", "severity": "warning", "title": "GPU 0: PCIe link at x8 of x16 lanes"})))
    assert summarize(capsys, str(tmp_path), "--fail-on", fail_on)[0] == expected


def test_healthy_fleet_exits_0_and_unreadable_or_missing_exit_1(tmp_path: Path, reports: Dict[str, Report],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("a", "b"):
        write(tmp_path, f"{name}.json", node(reports[H200], name))
    code, out, _ = summarize(capsys, str(tmp_path))
    assert (code, out.splitlines()[0]) == (0, "Fleet: 2 nodes reported · 1 configuration · no errors or warnings")
    code, out, _ = summarize(capsys, str(tmp_path), "--nodes", "a,b,c")
    assert code == 1 and "Missing (no report): c" in out
    code, out, _ = summarize(capsys, str(tmp_path), "--nodes", "a")
    assert out.splitlines()[0].startswith("Fleet: 2 nodes reported of 1 expected, 1 not in --nodes · ")
    assert "Not in --nodes: b" in out and code == 0
    assert summarize(capsys, str(tmp_path), "--nodes", "a,b,c", "--fail-on", "never")[0] == 0
    write(tmp_path, "c.json", "{")
    code, out, _ = summarize(capsys, str(tmp_path), "--nodes", "a,b,c")
    assert code == 1 and "Missing" not in out and f"{tmp_path / 'c.json'}: not JSON" in out


def test_expected_counts_the_missing(tmp_path: Path, reports: Dict[str, Report], capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "a.json", node(reports[H200], "a"))
    code, out, _ = summarize(capsys, str(tmp_path), "--expected", "3")
    assert out.splitlines()[0].startswith("Fleet: 1 node reported of 3 expected, 2 missing · ")
    assert "Missing: 2 nodes of the 3 expected sent no report (--nodes names them)" in out
    assert code == 1


def test_usage_errors_exit_2_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = summarize(capsys, str(tmp_path / "nowhere"))
    assert (code, out) == (2, "")
    assert err.splitlines()[0] == f"cudadoctor: error: {tmp_path / 'nowhere'}: No such file or directory"
    code, _, err = summarize(capsys, str(tmp_path))
    assert code == 2 and "no reports in" in err
    assert run(["fleet", "summarize"]) == 2
    write(tmp_path, "a.json", "{}")
    code, _, err = summarize(capsys, str(tmp_path), "--expected", "2", "--nodes", "a,b")
    assert code == 2 and "not both" in err
    code, _, err = summarize(capsys, str(tmp_path), "--nodes", "gpu-[3-1]")
    assert code == 2 and "the range 3-1 is empty" in err


# --------------------------------------------------------------------------- node names and inputs


def test_node_name_from_the_report_else_the_file(tmp_path: Path, reports: Dict[str, Report]) -> None:
    named = read_one(str(write(tmp_path, "x.json", node(reports[H200], "gpu-7"))))
    unnamed = read_one(str(write(tmp_path, "gpu-8.json", node(reports[H200], None))))
    assert isinstance(named, NodeRecord) and isinstance(unnamed, NodeRecord)
    assert (named.node, unnamed.node) == ("gpu-7", "gpu-8")


def test_markdown_reports_and_duplicates(tmp_path: Path, reports: Dict[str, Report], capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = collect(host=RecordedHost.load(str(MACHINES / LAPTOP)))
    (tmp_path / "laptop.md").write_text(fit_markdown(make_report(snapshot, diagnose(snapshot)))[0], encoding="utf-8")
    write(tmp_path, "a.json", node(reports[H200], "a"))
    write(tmp_path, "a-again.json", node(reports[H200], "a"))
    code, out, _ = summarize(capsys, str(tmp_path))
    assert out.splitlines()[0].startswith("Fleet: 2 nodes reported · 2 configurations")
    assert "driver-too-old-for-build  1 node" in out and "      laptop" in out
    assert f"  {tmp_path / 'a.json'}: a second report of node a (the first, {tmp_path / 'a-again.json'}, is used)" in out
    assert code == 1  # the laptop's error; the duplicate alone would not fail


def test_files_and_directories_together(tmp_path: Path, reports: Dict[str, Report], capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "rack1").mkdir()
    write(tmp_path / "rack1", "a.json", node(reports[H200], "a"))
    other = write(tmp_path, "b.json", node(reports[H200], "b"))
    write(tmp_path / "rack1", "notes.txt", "not a report")
    _, out, _ = summarize(capsys, str(tmp_path / "rack1"), str(other))
    assert out.startswith("Fleet: 2 nodes reported · 1 configuration")


def test_nodes_lists_and_files() -> None:
    assert expand("gpu-[08-10,12],login1") == ["gpu-08", "gpu-09", "gpu-10", "gpu-12", "login1"]
    assert expand("r[1-2]n[1-2]") == ["r1n1", "r1n2", "r2n1", "r2n2"]
    with pytest.raises(CudadoctorError, match="not closed"):
        expand("gpu-[1-3")
    with pytest.raises(CudadoctorError, match="not a list of numbers"):
        expand("gpu-[a-c]")


def test_nodes_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "nodes.txt"
    path.write_text("# rack 1\ngpu-[1-2]\ngpu-3, gpu-4  # spare\n\n", encoding="utf-8")
    assert expected_nodes(str(path)) == ["gpu-1", "gpu-2", "gpu-3", "gpu-4"]
    with pytest.raises(CudadoctorError, match="no such file"):
        expected_nodes(str(tmp_path / "missing.txt"))


# --------------------------------------------------------------------------- configurations


def test_configurations_beyond_the_cap_are_counted(tmp_path: Path, reports: Dict[str, Report],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    def driver(version: str) -> Callable[[Report], None]:
        return lambda r: r["snapshot"]["driver"].update(driver_version=version)

    for i, version in enumerate(("580.159.03", "580.159.03", "550.54.15", "535.183.01", "535.183.01")):
        write(tmp_path, f"n{i}.json", node(reports[H200], f"n{i}", driver(version)))
    _, out, _ = summarize(capsys, str(tmp_path), "--compare", "1")
    assert "  2 nodes (n3, n4): driver 580.159.03 → 535.183.01" in out
    assert "  +1 more configuration (1 node) not compared (--compare N compares more)" in out
    assert "550.54.15" not in out


def test_a_representative_the_strict_loader_refuses_falls_back_to_the_fingerprint(
        tmp_path: Path, reports: Dict[str, Report], capsys: pytest.CaptureFixture[str]) -> None:
    def newer_field(report: Report) -> None:
        older_driver(report)
        report["snapshot"]["driver"]["open_source"] = True  # a field a later cudadoctor might add

    for name in ("a", "b"):
        write(tmp_path, f"{name}.json", node(reports[H200], name))
    write(tmp_path, "c.json", node(reports[H200], "c", newer_field))
    _, out, _ = summarize(capsys, str(tmp_path))
    assert "  1 node (c): driver 580.159.03 → 550.54.15" in out
    assert "    c's report could not be compared (driver.open_source: unknown field): fingerprint only" in out


# --------------------------------------------------------------------------- formats


def test_json_document(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = summarize(capsys, str(fleet), "--json")
    doc = json.loads(out)
    assert list(doc) == ["format", "format_version", "tool_version", "nodes", "configurations",
                         "configurations_not_compared", "findings", "hardware", "bandwidth_outliers", "unreadable",
                         "missing", "unexpected", "fail_on", "exit_code"]
    assert (doc["format"], doc["format_version"], doc["exit_code"], code) == ("cudadoctor.fleet", 1, 1, 1)
    assert doc["nodes"] == {"reported": 8, "unreadable": 4, "missing": 0, "expected": None, "with_errors": 1,
                            "with_warnings": 0, "not_checked": 0}
    majority, older = doc["configurations"][0], doc["configurations"][1]
    assert (majority["majority"], majority["count"], majority["changes"]) == (True, 5, None)
    assert majority["fingerprint"]["driver"] == "580.159.03"
    assert older["nodes"] == ["n06", "n07"]
    assert older["changes"][0] == {"section": "driver", "key": "version", "majority": "580.159.03", "this": "550.54.15",
                                   "phrase": "driver 580.159.03 → 550.54.15", "follows": False}
    assert [(f["code"], f["nodes"]) for f in doc["findings"]] == [("driver-too-old-for-build", ["n08"])]
    assert [(u["node"], u["kind"]) for u in doc["unreadable"]] == [
        ("n09", "unreadable"), ("n10", "unreadable"), ("n11", "not_report"), ("n12", "newer")]


def test_markdown(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = summarize(capsys, str(fleet), "--format", "markdown")
    lines = out.splitlines()
    assert lines[:3] == ["## Fleet summary", "", "**8 nodes reported, 4 unreadable · 3 configurations · 1 node with errors**"]
    assert "| 2 nodes: n06, n07 | driver 580.159.03 → 550.54.15 |" in lines
    assert any(line.startswith("| ✗ error | `driver-too-old-for-build` torch 2.5.1+cu124 needs") and line.endswith("| 1: n08 |")
               for line in lines)
    assert f"- `{fleet / 'n10.json'}`: empty file" in lines


def test_colour_only_when_asked(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "\x1b[" not in summarize(capsys, str(fleet))[1]  # captured output is not a terminal
    assert "\x1b[31m✗\x1b[0m driver-too-old-for-build" in summarize(capsys, str(fleet), "--color")[1]


# --------------------------------------------------------------------------- reading


def test_parallel_reading_gives_the_same_records(fleet: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = sorted(str(p) for p in fleet.iterdir())
    monkeypatch.setattr(fleet_read, "PARALLEL_MIN", 2)
    monkeypatch.setattr(fleet_read, "CHUNK", 3)
    parallel = list(read_all(paths, jobs=2))
    assert parallel == [read_one(p) for p in paths]
    assert [type(r).__name__ for r in parallel].count("Unreadable") == 4


def test_a_named_pipe_is_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "stuck.json"
    os.mkfifo(fifo)
    result = read_one(str(fifo))
    assert isinstance(result, Unreadable) and result.reason == "not a regular file"
    with pytest.raises(CudadoctorError, match="no reports in"):
        fleet_read.discover([str(tmp_path)])


def test_a_wrong_type_names_its_path(tmp_path: Path, reports: Dict[str, Report]) -> None:
    cases: List[Callable[[Report], None]] = [
        lambda r: r["snapshot"]["gpus"][0].update(pcie_width_current="16"),
        lambda r: r["snapshot"].update(gpus={"0": {}}),
        lambda r: r["findings"].append({"code": "x", "severity": "fatal"}),
    ]
    reasons = [getattr(read_one(str(write(tmp_path, f"{i}.json", node(reports[H200], "n", edit)))), "reason", None)
               for i, edit in enumerate(cases)]
    assert reasons == ["snapshot.gpus[0].pcie_width_current: expected an integer, got a string",
                       "snapshot.gpus: expected a list, got an object",
                       "findings[0].severity: 'fatal' is not one of crashed, error, info, ok, warning"]


def test_nodes_names_the_pseudonyms_of_redacted_reports(tmp_path: Path, reports: Dict[str, Report],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from cudadoctor.reports.node import pseudonym

    for name in ("gpu-01", "gpu-02"):
        write(tmp_path, f"{pseudonym(name)}.json", node(reports[H200], pseudonym(name)))
    write(tmp_path, f"{pseudonym('gpu-03')}.json", node(reports[LAPTOP], pseudonym("gpu-03")))
    _, out, _ = summarize(capsys, str(tmp_path), "--nodes", "gpu-[01-04]")
    assert out.splitlines()[0].startswith("Fleet: 3 nodes reported of 4 expected, 1 missing · ")
    assert "  1 node (gpu-03): driver 580.159.03 → 470.82.01" in out
    assert "Missing (no report): gpu-04" in out
    _, out, _ = summarize(capsys, str(tmp_path))
    assert f"  1 node ({pseudonym('gpu-03')}): driver" in out
