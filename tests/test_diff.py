"""`cudadoctor diff`: the differences that matter between two reports, and nothing else by default.

Pairs of recorded machines (one edited the way a user's machine changes: a driver upgrade, a
package upgrade, a variable set), the same machine twice, GPUs listed in another order, files
that are not reports, and each section's pure diff.

Regenerate the golden diff after an intended change of wording:
CUDADOCTOR_UPDATE_GOLDEN=1 python -m pytest tests/test_diff.py
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from cudadoctor.api import diagnose, make_report
from cudadoctor.reports.diff import (
    Comparison,
    Difference,
    Side,
    compare,
    diff_errors,
    diff_findings,
    diff_meta,
    diff_reports,
    diff_smoke,
    diff_snapshots,
    most_important,
    phrase,
    summary,
)
from cudadoctor.reports.diff_fields import compare_keyed
from cudadoctor.reports.diff_stack import (
    diff_driver,
    diff_frameworks,
    diff_gpus,
    diff_libraries,
    diff_packages,
    diff_toolkits,
    in_env,
    match_gpus,
    normalize_bus_id,
    where,
)
from cudadoctor.model import (
    Category,
    Compiler,
    DriverInfo,
    ErrorKind,
    Finding,
    FrameworkBuild,
    Gpu,
    HostInfo,
    Library,
    LibraryCopy,
    Package,
    ProbeError,
    PythonEnv,
    Severity,
    SmokeResult,
    Snapshot,
    Toolkit,
)
from cudadoctor.render.diff import render_diff_json
from cudadoctor.model.serialize import snapshot_to_dict
from helpers import HERE, MACHINES, cli, edited_machine

LAPTOP = "laptop-rtx3060-driver470-torch25-cu124"
DGX = "dgx-h100x8-driver570-torch27-cu128"


# --------------------------------------------------------------------------- helpers


machine = edited_machine


def laptop_new_driver(data: Dict[str, Any]) -> None:
    """The RTX 3060 laptop after upgrading to driver 550.120 (CUDA 12.4)."""
    data["nvml"]["system"]["nvmlSystemGetDriverVersion"] = "550.120"
    data["nvml"]["system"]["nvmlSystemGetCudaDriverVersion_v2"] = 12040
    data["nvml"]["system"].pop("nvmlSystemGetCudaDriverVersion", None)
    data.setdefault("files", {})["/proc/driver/nvidia/version"] = (
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.120  Fri Sep 13 10:10:01 UTC 2024\n")


def numpy_upgraded(data: Dict[str, Any]) -> None:
    data["dirs"] = [d.replace("numpy-2.1.3.dist-info", "numpy-2.2.1.dist-info") for d in data["dirs"]]


def visible_devices_set(data: Dict[str, Any]) -> None:
    data["env"]["CUDA_VISIBLE_DEVICES"] = "1"


def gpus_reversed(data: Dict[str, Any]) -> None:
    data["nvml"]["devices"] = list(reversed(data["nvml"]["devices"]))


def envelope(snapshot: Snapshot, findings: Optional[Tuple[Finding, ...]] = None) -> Dict[str, Any]:
    """What `cudadoctor check --json` writes (findings: today's unless given)."""
    from cudadoctor.render.jsonout import envelope as make

    return make(make_report(snapshot, diagnose(snapshot) if findings is None else findings))


def write(path: Path, doc: Any) -> str:
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return str(path)


def side(snapshot: Snapshot, name: str = "x.json") -> Side:
    return Side(name, make_report(snapshot, diagnose(snapshot)))


def rows(diffs: Any) -> List[Tuple[str, str, Optional[str], Optional[str]]]:
    return [(d.section, d.key, d.a, d.b) for d in diffs]


def fixed_time(snapshot: Snapshot, when: str) -> Snapshot:
    """Recorded at ``when``, with no probe durations (they are measured, so they vary from run to run)."""
    return dataclasses.replace(snapshot, created_at=when, probe_durations_s={})


def noise_of(snapshot: Snapshot) -> Snapshot:
    """The same machine a minute later: another timestamp, other probe durations, a warmer GPU with
    more memory used, other clock event reasons, device nodes listed in another order, a newer cudadoctor."""
    gpus = tuple(dataclasses.replace(g, temperature_c=(g.temperature_c or 40) + 7, memory_used_mib=(g.memory_used_mib or 0) + 900,
                                     power_limit_w=123.0, clocks_event_reasons=("gpu_idle", "sync_boost"), pcie_gen_current=1)
                 for g in snapshot.gpus or ())
    driver = snapshot.driver
    assert driver is not None and driver.device_nodes
    return dataclasses.replace(
        snapshot, created_at="2030-01-01T00:00:00Z", tool_version="9.9.9", gpus=gpus,
        probe_durations_s={k: v + 0.5 for k, v in snapshot.probe_durations_s.items()},
        driver=dataclasses.replace(driver, device_nodes=tuple(reversed(driver.device_nodes))))


# --------------------------------------------------------------------------- recorded pairs, end to end


@pytest.fixture
def laptop_pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tuple[str, str]:
    """A: the laptop with driver 470 as `check --json` saved it; B: the same laptop after the driver
    upgrade, as a bare snapshot (no findings)."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "works-not.json", envelope(fixed_time(machine(LAPTOP), "2026-11-20T09:00:00Z")))
    write(tmp_path / "works.json", snapshot_to_dict(fixed_time(machine(LAPTOP, laptop_new_driver), "2026-11-21T09:00:00Z")))
    return "works-not.json", "works.json"


def test_driver_upgrade_text(laptop_pair: Tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["diff", *laptop_pair, "--no-color"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("4 differences; the most important: driver 470.82.01 → 550.120")
    assert lines[0].endswith("(1 noise difference hidden: --all)")  # the time each was taken
    assert lines[1].startswith("A  works-not.json  ✗ 1 problem: torch 2.5.1+cu124 needs a newer NVIDIA driver")
    assert lines[2].startswith("B  works.json      ✓ No problems found.")
    assert "B: diagnosed with today's checks" in out and "the file has no findings" in out
    assert "    version         470.82.01 → 550.120" in lines
    assert "    CUDA supported  11.4 → 12.4" in lines
    assert "    kernel module   470.82.01 → 550.120" in lines
    assert any(line.startswith("  - driver-too-old-for-build  error:") for line in lines)
    for noise in ("created at", "probe duration", "memory used", "temperature"):
        assert noise not in out


def test_driver_upgrade_golden(laptop_pair: Tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = cli(["diff", *laptop_pair, "--no-color"], capsys)
    golden = HERE / "golden" / "diff-laptop-driver-upgrade.txt"
    if os.environ.get("CUDADOCTOR_UPDATE_GOLDEN"):
        golden.write_text(out, encoding="utf-8")
    assert out == golden.read_text(encoding="utf-8"), f"regenerate with CUDADOCTOR_UPDATE_GOLDEN=1 if intended: {golden}"


def test_driver_upgrade_json(laptop_pair: Tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["diff", *laptop_pair, "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert all(set(row) == {"section", "key", "a", "b"} for row in doc)
    assert doc == [
        {"section": "driver", "key": "version", "a": "470.82.01", "b": "550.120"},
        {"section": "driver", "key": "CUDA supported", "a": "11.4", "b": "12.4"},
        {"section": "driver", "key": "kernel module", "a": "470.82.01", "b": "550.120"},
        {"section": "findings", "key": "driver-too-old-for-build",
         "a": "error: torch 2.5.1+cu124 needs a newer NVIDIA driver than 470.82.01", "b": None},
    ]
    _, same, _ = cli(["diff", *laptop_pair, "--format", "json"], capsys)
    assert same == out


def test_driver_upgrade_markdown(laptop_pair: Tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["diff", *laptop_pair, "--format", "markdown"], capsys)
    assert code == 0
    assert out.startswith("**4 differences; the most important: driver 470.82.01 → 550.120")
    assert "| A | `works-not.json` | ✗ 1 problem:" in out
    assert "### Driver\n\n| | A | B |\n|---|---|---|\n| version | `470.82.01` | `550.120` |" in out
    assert "| driver-too-old-for-build | `error: torch 2.5.1+cu124 needs a newer NVIDIA driver than 470.82.01` | — |" in out
    assert "\x1b[" not in out


def test_same_machine_twice_has_no_differences(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = machine(DGX)
    a = write(tmp_path / "a.json", envelope(first))
    b = write(tmp_path / "b.json", envelope(noise_of(machine(DGX))))
    code, out, _ = cli(["diff", a, b, "--no-color"], capsys)
    assert code == 0
    assert out.splitlines()[0].startswith("No differences that matter (")
    assert len([line for line in out.splitlines() if line.strip() and not line.startswith("· ")]) == 3  # summary, A, B
    code, out, _ = cli(["diff", a, b, "--all", "--no-color"], capsys)
    assert code == 0
    assert out.splitlines()[0].startswith("No differences that matter and ")
    changes = [line for line in out.splitlines() if "→" in line]
    assert changes and all(line.endswith("(noise)") for line in changes)
    for noise in ("created at", "tool version", "probe duration", "temperature", "memory used", "power limit",
                  "clock event reasons", "device node order", "PCIe gen (current)"):
        assert noise in out, noise


def test_same_file_twice_even_with_all(laptop_pair: Tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["diff", laptop_pair[0], laptop_pair[0], "--all", "--json"], capsys)
    assert (code, json.loads(out)) == (0, [])


def test_gpus_in_another_order_are_the_same_gpus() -> None:
    a, b = machine(DGX), machine(DGX, gpus_reversed)
    assert a.gpus and b.gpus and [g.pci_bus_id for g in a.gpus] != [g.pci_bus_id for g in b.gpus]
    assert diff_gpus(a, b) == [] or all(d.noise for d in diff_gpus(a, b))
    assert [d for d in diff_reports(side(a).report, side(b).report) if not d.noise] == []


def test_package_upgraded() -> None:
    comparison = compare(side(machine(LAPTOP)), side(machine(LAPTOP, numpy_upgraded)))
    assert rows(comparison.differences) == [("packages", "numpy", "2.1.3", "2.2.1")]
    assert summary(comparison).startswith("1 difference; the most important: package numpy 2.1.3 → 2.2.1")


def test_env_var_added_and_the_finding_it_brings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a.json", envelope(machine(LAPTOP, laptop_new_driver)))
    b = write(tmp_path / "b.json", envelope(machine(LAPTOP, visible_devices_set)))
    code, out, _ = cli(["diff", a, b, "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert {"section": "env", "key": "CUDA_VISIBLE_DEVICES", "a": None, "b": "1"} in doc
    added = [row for row in doc if row["section"] == "findings" and row["a"] is None]
    assert added, "CUDA_VISIBLE_DEVICES=1 on a one-GPU machine hides the GPU: a finding appears"
    _, text, _ = cli(["diff", a, b, "--no-color"], capsys)
    assert "  + CUDA_VISIBLE_DEVICES  1" in text.splitlines()


def test_a_finding_gone_when_the_file_carries_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Findings recorded in the files are compared as recorded (not re-diagnosed): here B's file
    says it had none, although today's checks would find one."""
    broken = machine(LAPTOP)
    a = write(tmp_path / "a.json", envelope(broken))
    b = write(tmp_path / "b.json", envelope(broken, findings=()))
    code, out, _ = cli(["diff", a, b, "--json"], capsys)
    assert code == 0
    assert [(r["section"], r["key"], r["b"]) for r in json.loads(out)] == [("findings", "driver-too-old-for-build", None)]
    _, text, _ = cli(["diff", a, b, "--no-color"], capsys)
    assert "diagnosed with today's checks" not in text
    code, out, _ = cli(["diff", a, b, "--json", "--rediagnose"], capsys)
    assert (code, json.loads(out)) == (0, [])
    _, text, _ = cli(["diff", a, b, "--rediagnose", "--no-color"], capsys)
    assert "A: diagnosed with today's checks" in text and "(--rediagnose)" in text


def test_two_different_machines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a.json", envelope(machine(LAPTOP)))
    b = write(tmp_path / "b.json", envelope(machine("two-toolkits-ldpath-cudnn8-shadow")))
    code, out, _ = cli(["diff", a, b, "--json"], capsys)
    assert code == 0
    doc = {(r["section"], r["key"]): (r["a"], r["b"]) for r in json.loads(out)}
    assert doc[("gpus", "GPU 0 (01:00.0): name")] == ("NVIDIA GeForce RTX 3060 Laptop GPU", "NVIDIA GeForce RTX 4090")
    assert doc[("libraries", "libcudnn: version")] == ("9.1.0.70", "8.9.7")
    assert doc[("libraries", "libcudnn: found via")] == ("pip:nvidia-cudnn-cu12==9.1.0.70", "LD_LIBRARY_PATH")
    assert doc[("env", "LD_LIBRARY_PATH")] == (None, "/usr/local/cuda-11.8/lib64:/opt/cudnn8/lib")
    assert doc[("toolkits", "/usr/local/cuda-12.4")] == (None, "CUDA 12.4.1 (active)")
    assert ("libraries", "libnccl: path") not in doc  # the same wheel's file in two venvs is at the same place
    assert not any(section == "host" and key in ("hostname", "user") for section, key in doc)
    _, text, _ = cli(["diff", a, b, "--no-color"], capsys)
    assert "    PATH" in text and "      + /usr/local/cuda-11.8/bin" in text


def test_a_markdown_report_with_its_json_block_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = envelope(machine(LAPTOP))
    md = "## Environment\n\n<details><summary>JSON</summary>\n\n```json\n" + json.dumps(doc, indent=2) + "\n```\n</details>\n"
    a = write(tmp_path / "a.md", md)
    b = write(tmp_path / "b.json", doc)
    code, out, err = cli(["diff", a, b, "--json"], capsys)
    assert (code, json.loads(out)) == (0, []), err


def test_stdin(laptop_pair: Tuple[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(Path(laptop_pair[1]).read_text()))
    code, out, _ = cli(["diff", laptop_pair[0], "-", "--json"], capsys)
    assert code == 0 and json.loads(out)[0]["b"] == "550.120"


def test_redacted_by_default_and_comparable_with_a_redacted_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Both sides are redacted as `cudadoctor report` does: the output is safe to paste, and a
    report saved redacted compares with a raw one."""
    from cudadoctor.reports.redact import redact

    raw = dataclasses.replace(machine(LAPTOP), env={**(machine(LAPTOP).env or {}), "HF_TOKEN": "hf_secret_marker_123"})
    report = make_report(raw, diagnose(raw))
    a = write(tmp_path / "raw.json", envelope(raw))
    from cudadoctor.render.jsonout import envelope as make

    b = write(tmp_path / "redacted.json", make(redact(report)[0]))
    code, out, _ = cli(["diff", a, b, "--all", "--no-color"], capsys)
    assert code == 0
    assert out.startswith("No differences that matter") and "Both redacted as `cudadoctor report` does" in out
    assert "hf_secret_marker_123" not in out and "maya" not in out
    code, out, _ = cli(["diff", a, b, "--no-redact", "--json"], capsys)
    doc = {(r["section"], r["key"]): (r["a"], r["b"]) for r in json.loads(out)}
    assert ("env", "HF_TOKEN") not in doc  # "<redacted>" against a value: nothing says they differ (noise)
    assert doc[("env", "VIRTUAL_ENV")][0] == "/home/maya/proj/.venv"


def test_report_output_in_json_and_markdown_compares_with_check_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = str(MACHINES / LAPTOP)
    checked = write(tmp_path / "check.json", cli(["check", "--machine", folder, "--json"], capsys)[1])
    for fmt in ("json", "markdown"):
        code, out, err = cli(["report", "--machine", folder, "--format", fmt], capsys)
        assert code in (0, 1), err
        reported = write(tmp_path / f"report.{fmt}", out)
        code, out, err = cli(["diff", reported, checked, "--json"], capsys)
        assert (code, json.loads(out)) == (0, []), err


def test_a_value_redacted_on_one_side_only_is_noise() -> None:
    a = side(Snapshot(env={"API_TOKEN": "<redacted>", "X": "<home>/a"}))
    b = side(Snapshot(env={"API_TOKEN": "abc", "X": "/opt/a"}))
    assert [(d.key, d.noise) for d in compare(a, b, include_noise=True).differences] == [("API_TOKEN", True), ("X", False)]


# --------------------------------------------------------------------------- files that are not reports


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "No such file or directory"),
        ("not json at all", "not valid JSON (line 1, column 1"),
        ("", "not valid JSON"),
        ("[1, 2]", "not a cudadoctor snapshot or report (a JSON list, not an object)"),
        ('"text"', "not a cudadoctor snapshot or report (a JSON string, not an object)"),
        ("{}", "not a cudadoctor snapshot or report (no snapshot facts in it)"),
        ('{"schema_version": 1}', "no snapshot facts in it"),
        ('{"name": "my-project", "version": "1.0"}', "not a cudadoctor snapshot or report: name: unknown field"),
        ('{"format": "sarif", "runs": []}', "not a cudadoctor snapshot or report (format 'sarif')"),
        ('{"format": "cudadoctor.report", "snapshot": 3}', "no snapshot facts in it"),
        ('{"format": "cudadoctor.report", "snapshot": {"driver": {"driver_version": 5}}}',
         "driver.driver_version: expected a string"),
        ('{"format": "cudadoctor.report", "snapshot": {"driver": {}}, "findings": [{"code": "x"}]}',
         "not a cudadoctor snapshot or report: findings[0]"),
        ('{"format": "cudadoctor.report", "snapshot": {"driver": {}}, "findings": {"a": 1}}', "findings: expected a list"),
        ('{"schema_version": 99, "driver": {}}', "newer than this cudadoctor understands"),
    ],
)
def test_not_a_report_is_one_line_and_exit_2(tmp_path: Path, content: Optional[str], message: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path / "good.json", {"driver": {"driver_version": "550.120"}})
    bad = str(tmp_path / "bad.json") if content is None else write(tmp_path / "bad.json", content)
    for args in ([good, bad], [bad, good]):
        code, out, err = cli(["diff", *args], capsys)
        assert code == 2, (content, out)
        assert out == ""
        assert err.count("\n") == 1 and err.startswith("cudadoctor: error: ") and "bad.json" in err
        assert message in err
        assert "Traceback" not in err


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path / "good.json", {"driver": {"driver_version": "550.120"}})
    assert cli(["diff", good], capsys)[0] == 2
    code, _, err = cli(["diff", "-", "-"], capsys)
    assert code == 2 and "only one of A and B" in err
    code, _, err = cli(["diff", good, good, "--format", "yaml"], capsys)
    assert code == 2 and "Invalid value for '--format'" in err


def test_hand_written_snapshots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a.json", {"driver": {"driver_version": "535.183.01", "cuda_driver_version": "12.2"}})
    b = write(tmp_path / "b.json", {"driver": {"driver_version": "550.120", "cuda_driver_version": "12.4"},
                                    "env": {"CUDA_VISIBLE_DEVICES": "0"}})
    code, out, _ = cli(["diff", a, b, "--no-color"], capsys)
    assert code == 0
    assert out.startswith("3 differences; the most important: driver 535.183.01 → 550.120")
    assert "    items  unknown → 1" in out  # env: not given in A, one variable in B


# --------------------------------------------------------------------------- each section, pure


def test_driver_fields() -> None:
    a = DriverInfo(loaded=True, driver_version="470.82.01", cuda_driver_version="11.4", kernel_module_version="470.82.01",
                   device_nodes=("/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm"), source="nvml")
    b = dataclasses.replace(a, loaded=False, driver_version=None, cuda_driver_version=None,
                            nvml_error="NVML_ERROR_DRIVER_NOT_LOADED", device_nodes=("/dev/nvidiactl", "/dev/nvidia0"))
    assert rows(diff_driver(a, b)) == [
        ("driver", "version", "470.82.01", "unknown"),
        ("driver", "CUDA supported", "11.4", "unknown"),
        ("driver", "loaded", "yes", "no"),
        ("driver", "NVML error", "none", "NVML_ERROR_DRIVER_NOT_LOADED"),
        ("driver", "device nodes", "/dev/nvidia-uvm, /dev/nvidia0, /dev/nvidiactl", "/dev/nvidia0, /dev/nvidiactl"),
    ]
    shuffled = dataclasses.replace(a, device_nodes=tuple(reversed(a.device_nodes or ())))
    assert [(d.field, d.noise) for d in diff_driver(a, shuffled)] == [("device node order", True)]
    assert diff_driver(None, None) == [] and diff_driver(a, a) == []
    assert rows(diff_driver(None, DriverInfo(driver_version="550.120"))) == [("driver", "version", "unknown", "550.120")]


def test_gpus_matched_by_bus_id_then_facts_then_index() -> None:
    h100 = Gpu(index=0, name="NVIDIA H100 80GB HBM3", compute_capability="9.0", memory_total_mib=81559)
    a100 = Gpu(index=1, name="NVIDIA A100-SXM4-80GB", compute_capability="8.0", memory_total_mib=81920)
    # No bus ids: the same two GPUs in another order are matched by their facts.
    swapped = (dataclasses.replace(a100, index=0), dataclasses.replace(h100, index=1))
    assert [d for d in diff_gpus(Snapshot(gpus=(h100, a100)), Snapshot(gpus=swapped)) if not d.noise] == []
    # Bus ids in two spellings (NVML's 8-digit domain, sysfs's 4) are the same slot.
    assert normalize_bus_id("00000000:17:00.0") == normalize_bus_id("0000:17:00.0") == normalize_bus_id("17:00.0")
    slot_a = dataclasses.replace(h100, pci_bus_id="00000000:17:00.0", memory_used_mib=10, temperature_c=30)
    slot_b = dataclasses.replace(h100, index=3, pci_bus_id="0000:17:00.0", memory_used_mib=70000, temperature_c=80)
    diffs = diff_gpus(Snapshot(gpus=(slot_a,)), Snapshot(gpus=(slot_b,)))
    assert diffs and all(d.noise for d in diffs)
    assert {d.field for d in diffs} == {"index", "memory used", "temperature"}
    # Two machines: different slots, matched by index; what differs is the model.
    other = dataclasses.replace(a100, index=0, pci_bus_id="0000:41:00.0")
    assert rows(d for d in diff_gpus(Snapshot(gpus=(slot_a,)), Snapshot(gpus=(other,))) if not d.noise) == [
        ("gpus", "GPU 0 (17:00.0): name", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"),
        ("gpus", "GPU 0 (17:00.0): compute capability", "9.0", "8.0"),
        ("gpus", "GPU 0 (17:00.0): memory", "81559 MiB", "81920 MiB"),
    ]
    # A GPU gone: the other keeps its slot.
    second = dataclasses.replace(h100, index=1, pci_bus_id="0000:2a:00.0")
    assert rows(diff_gpus(Snapshot(gpus=(slot_a, second)), Snapshot(gpus=(slot_a,)))) == [
        ("gpus", "GPU 1 (2a:00.0)", "NVIDIA H100 80GB HBM3, CC 9.0, 81559 MiB", None)]
    assert len(match_gpus((slot_a, second), (second, slot_a))) == 2


def test_gpu_fields_that_matter() -> None:
    g = Gpu(index=0, pci_bus_id="0000:17:00.0", mig_mode="disabled", ecc_mode="enabled", pcie_gen_max=5, pcie_width_max=16,
            pcie_gen_current=5, pcie_width_current=16, ecc_uncorrected_volatile=0)
    worse = dataclasses.replace(g, mig_mode="enabled", ecc_mode="disabled", pcie_width_current=8, ecc_uncorrected_volatile=4,
                                pcie_gen_current=1)
    assert [(d.field, d.a, d.b, d.noise) for d in diff_gpus(Snapshot(gpus=(g,)), Snapshot(gpus=(worse,)))] == [
        ("MIG", "disabled", "enabled", False),
        ("ECC", "enabled", "disabled", False),
        ("PCIe width (current)", "x16", "x8", False),
        ("uncorrected ECC errors (volatile)", "0", "4", False),
        ("PCIe gen (current)", "5", "1", True),  # an idle GPU drops its link to gen 1
    ]
    assert rows(diff_gpus(Snapshot(gpus=None), Snapshot(gpus=(g,)))) == [("gpus", "items", "unknown", "1")]
    # No driver answers for the GPU on one side: its name (device id) and that fact, not a list of "→ unknown".
    seen = Gpu(index=0, pci_bus_id="0000:17:00.0", pci_device_id="0x2335", source="pci")
    assert rows(diff_gpus(Snapshot(gpus=(dataclasses.replace(g, name="NVIDIA H200", source="nvml"),)), Snapshot(gpus=(seen,)))) == [
        ("gpus", "GPU 0 (17:00.0): name", "NVIDIA H200", "PCI device 0x2335"),
        ("gpus", "GPU 0 (17:00.0): seen through", "nvml", "pci")]
    assert rows(diff_gpus(Snapshot(gpus=(g,), gpus_source="nvml"), Snapshot(gpus=(g,), gpus_source="pci"))) == [
        ("gpus", "listed by", "nvml", "pci")]


def test_toolkits_by_root() -> None:
    a = Snapshot(toolkits=(Toolkit("/usr/local/cuda-12.4/", version="12.4.1", active=True, found_via=("PATH",)),
                           Toolkit("/usr/local/cuda-11.8", version="11.8.89")))
    b = Snapshot(toolkits=(Toolkit("/usr/local/cuda-11.8", version="11.8.89", active=True, found_via=("CUDA_HOME",)),))
    assert [(d.key, d.a, d.b, d.noise) for d in diff_toolkits(a, b)] == [
        ("/usr/local/cuda-12.4", "CUDA 12.4.1 (active)", None, False),
        ("/usr/local/cuda-11.8: active", "unknown", "yes", False),
        ("/usr/local/cuda-11.8: found via", "none", "CUDA_HOME", True),
    ]
    conda_a = Snapshot(python=PythonEnv(prefix="/home/a/miniconda3/envs/x"), toolkits=(Toolkit("/home/a/miniconda3/envs/x", version="12.4"),))
    conda_b = Snapshot(python=PythonEnv(prefix="/opt/conda"), toolkits=(Toolkit("/opt/conda", version="12.6"),))
    assert rows(diff_toolkits(conda_a, conda_b)) == [("toolkits", "<env>: version", "12.4", "12.6")]


def test_libraries_compare_the_copy_that_loads_first() -> None:
    pip = LibraryCopy("/home/a/.venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9", "9.1.0",
                      "pip:nvidia-cudnn-cu12==9.1.0.70")
    old = LibraryCopy("/opt/cudnn8/lib/libcudnn.so.8", "8.9.7", "LD_LIBRARY_PATH")
    a = Snapshot(python=PythonEnv(prefix="/home/a/.venv"), libraries=(Library("libcudnn", (pip,)), Library("libcufft", ())))
    b = Snapshot(python=PythonEnv(prefix="/srv/b/env"), libraries=(Library("libcudnn", (old, dataclasses.replace(
        pip, path="/srv/b/env/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9"))),))
    assert [(d.key, d.a, d.b) for d in diff_libraries(a, b) if not d.noise] == [
        ("libcudnn: version", "9.1.0", "8.9.7"),
        ("libcudnn: found via", "pip:nvidia-cudnn-cu12==9.1.0.70", "LD_LIBRARY_PATH"),
        ("libcudnn: path", "<env>/lib/python3.x/site-packages/nvidia/cudnn/lib/libcudnn.so.9", "/opt/cudnn8/lib/libcudnn.so.8"),
    ]
    # The same wheel in two environments: no difference but the full path (noise).
    moved = Snapshot(python=PythonEnv(prefix="/srv/b/env"), libraries=(Library("libcudnn", (dataclasses.replace(
        pip, path="/srv/b/env/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9"),)),))
    assert [(d.field, d.noise) for d in diff_libraries(a, moved)] == [("full path", True)]
    assert in_env("/home/a/.venv", "/home/a/.venv/") == "<env>" and in_env("/home/a/.venv2/x", "/home/a/.venv") == "/home/a/.venv2/x"
    # The same file under another Python version, or under /lib instead of /usr/lib (merged /usr).
    assert where("/e/lib/python3.10/site-packages/nvidia/x.so", "/e") == where("/f/lib/python3.13t/site-packages/nvidia/x.so", "/f")
    assert where("/lib/x86_64-linux-gnu/libcuda.so.1", None) == "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
    gone = Snapshot(libraries=())
    assert rows(diff_libraries(b, gone)) == [("libraries", "libcudnn", "8.9.7 at /opt/cudnn8/lib/libcudnn.so.8 (LD_LIBRARY_PATH)", None)]


def test_frameworks_by_name() -> None:
    cu124 = FrameworkBuild("torch", "2.5.1+cu124", "cuda", "12.4", "9.1.0.70", "2.21.5", location="/a/torch")
    cpu = FrameworkBuild("torch", "2.5.1+cpu", "cpu", location="/b/torch")
    jax = FrameworkBuild("jax", "0.4.35")
    assert [(d.key, d.a, d.b, d.noise) for d in diff_frameworks(Snapshot(frameworks=(cu124, jax)), Snapshot(frameworks=(cpu,)))] == [
        ("torch: version", "2.5.1+cu124", "2.5.1+cpu", False),
        ("torch: variant", "cuda", "cpu", False),
        ("torch: CUDA", "12.4", "unknown", False),
        ("torch: cuDNN", "9.1.0.70", "unknown", False),
        ("torch: NCCL", "2.21.5", "unknown", False),
        ("torch: location", "/a/torch", "/b/torch", True),
        ("jax", "0.4.35", None, False),
    ]


def test_packages_added_removed_changed() -> None:
    a = Snapshot(packages=(Package("torch", "2.5.1"), Package("nvidia-cudnn-cu12", "9.1.0.70"),
                           Package("pytorch", "2.5.1", "conda", "py3.11_cuda12.4_cudnn9.1.0_0", "pytorch")))
    b = Snapshot(packages=(Package("torch", "2.6.0", location="/x"), Package("nvidia-cudnn-cu11", "8.9.2"),
                           Package("pytorch", "2.5.1", "conda", "cpu_py311h", "conda-forge")))
    assert rows(d for d in diff_packages(a, b) if not d.noise) == [
        ("packages", "nvidia-cudnn-cu11", None, "8.9.2"),
        ("packages", "nvidia-cudnn-cu12", "9.1.0.70", None),
        ("packages", "pytorch", "2.5.1 (conda, pytorch, py3.11_cuda12.4_cudnn9.1.0_0)", "2.5.1 (conda, conda-forge, cpu_py311h)"),
        ("packages", "torch", "2.5.1", "2.6.0"),
    ]
    order = Snapshot(packages=tuple(reversed(a.packages or ())))
    assert diff_packages(a, order) == []


def test_env_vars() -> None:
    a = Snapshot(env={"CUDA_HOME": "/usr/local/cuda", "LD_LIBRARY_PATH": "/a"})
    b = Snapshot(env={"CUDA_VISIBLE_DEVICES": "0", "LD_LIBRARY_PATH": "/b:/a"})
    assert rows(compare_keyed("env", a.env or {}, b.env or {})) == [
        ("env", "CUDA_HOME", "/usr/local/cuda", None),
        ("env", "CUDA_VISIBLE_DEVICES", None, "0"),
        ("env", "LD_LIBRARY_PATH", "/a", "/b:/a"),
    ]
    assert rows(diff_snapshots(a, b)) == rows(compare_keyed("env", a.env or {}, b.env or {}))


def test_python_host_compilers() -> None:
    a = Snapshot(python=PythonEnv(version="3.11.9", env_kind="venv", executable="/home/a/.venv/bin/python"),
                 host=HostInfo(os="linux", kernel="6.8.0", glibc="2.35", container="none", wsl=False, hostname="a", username="ann",
                               cpu_count=8),
                 compilers=(Compiler("gcc", "11.4.0", "/usr/bin/gcc"),))
    b = Snapshot(python=PythonEnv(version="3.12.4", env_kind="conda", executable="/opt/conda/bin/python"),
                 host=HostInfo(os="linux", kernel="5.15.153.1-microsoft-standard-WSL2", glibc="2.35", container="docker", wsl=True,
                               hostname="b", username="bob", cpu_count=32),
                 compilers=(Compiler("gcc", "13.2.0", "/usr/bin/gcc"), Compiler("clang", "18.1.3")))
    assert [(d.section, d.key, d.a, d.b) for d in diff_snapshots(a, b) if not d.noise] == [
        ("python", "version", "3.11.9", "3.12.4"),
        ("python", "environment", "venv", "conda"),
        ("host", "kernel", "6.8.0", "5.15.153.1-microsoft-standard-WSL2"),
        ("host", "container", "none", "docker"),
        ("host", "WSL", "no", "yes"),
        ("compilers", "gcc: version", "11.4.0", "13.2.0"),
        ("compilers", "clang", None, "18.1.3"),
    ]
    assert {d.key for d in diff_snapshots(a, b) if d.noise} == {"executable", "hostname", "user", "CPU count"}


def test_smoke_per_suite() -> None:
    a = Snapshot(smoke=(SmokeResult("driver", "passed", duration_s=1.0), SmokeResult("torch", "passed", duration_s=3.0)))
    b = Snapshot(smoke=(SmokeResult("torch", "failed", "no kernel image is available for execution on the device", duration_s=2.0),
                        SmokeResult("driver", "passed", duration_s=1.5)))
    assert [(d.key, d.a, d.b, d.noise) for d in diff_smoke(a, b)] == [
        ("torch", "passed", "failed: no kernel image is available for execution on the device", False),
        ("driver: duration", "1.0 s", "1.5 s", True),
        ("torch: duration", "3.0 s", "2.0 s", True),
    ]
    assert rows(diff_smoke(Snapshot(smoke=None), b)) == [("smoke", "items", "not run", "2")]


def _finding(code: str, severity: Severity, title: str = "t") -> Finding:
    return Finding(code, severity, Category.OTHER, title)


def test_findings_presence_and_severity() -> None:
    a = (_finding("driver-too-old-for-build", Severity.ERROR, "needs 525"), _finding("note", Severity.INFO),
         _finding("same", Severity.WARNING, "torch 2.5.1 ..."))
    b = (_finding("note", Severity.WARNING), _finding("new", Severity.ERROR, "new problem"),
         _finding("same", Severity.WARNING, "torch 2.6.0 ..."))
    assert [(d.key, d.a, d.b, d.noise) for d in diff_findings(a, b)] == [
        ("driver-too-old-for-build", "error: needs 525", None, False),
        ("note", "info: t", "warning: t", False),
        ("same", "warning: torch 2.5.1 ...", "warning: torch 2.6.0 ...", True),  # the same problem, other words
        ("new", None, "error: new problem", False),
    ]
    twice = (_finding("x", Severity.WARNING, "one"), _finding("x", Severity.ERROR, "two"))
    assert rows(diff_findings(twice, ())) == [("findings", "x", "error: one · two", None)]


def test_probe_errors_and_report_meta() -> None:
    err = ProbeError("gpus", ErrorKind.TIMEOUT, "nvidia-smi timed out after 5 s", duration_s=5.0)
    a = Snapshot(probe_durations_s={"gpus": 0.1}, created_at="2026-01-01T00:00:00Z")
    b = Snapshot(errors=(err,), probe_durations_s={"gpus": 5.0}, error_message="CUDA error: no kernel image", created_at="2026-01-02T00:00:00Z")
    assert rows(diff_errors(a, b)) == [("errors", "gpus probe", None, "timeout: nvidia-smi timed out after 5 s"),
                                       ("errors", "error message", None, "CUDA error: no kernel image")]
    meta = diff_meta(make_report(a), make_report(b))
    assert all(d.noise and d.section == "report" for d in meta)
    assert {d.key for d in meta} == {"created at", "gpus probe duration"} and {d.item for d in meta} == {""}


def test_summary_names_the_likeliest_cause() -> None:
    diffs = [Difference("findings", "x", "", "error: t", None), Difference("packages", "torch", "", "2.5.1", "2.6.0"),
             Difference("report", "", "created at", "1", "2", noise=True), Difference("driver", "", "version", "470.82.01", "550.120")]
    top = most_important(diffs)
    assert top is not None and phrase(top) == "driver 470.82.01 → 550.120"
    assert phrase(diffs[0]) == "finding x only in A (error: t)"
    assert phrase(Difference("env", "CUDA_VISIBLE_DEVICES", "", None, "0")) == "CUDA_VISIBLE_DEVICES only in B (0)"
    assert phrase(Difference("frameworks", "torch", "CUDA", "12.1", "12.4")) == "torch CUDA 12.1 → 12.4"
    s = Snapshot()
    empty = Comparison(side(s), side(s), (), hidden=2)
    assert summary(empty) == "No differences that matter (2 noise differences hidden: --all)."
    assert most_important([diffs[2]]) is None


def test_json_rows_are_the_four_keys() -> None:
    import io

    comparison = compare(side(Snapshot(env={"A": "1"})), side(Snapshot(env={"A": "2", "B": "3"})))
    stream = io.StringIO()
    render_diff_json(comparison, stream)
    assert json.loads(stream.getvalue()) == [{"section": "env", "key": "A", "a": "1", "b": "2"},
                                             {"section": "env", "key": "B", "a": None, "b": "3"}]


def test_markdown_cells_are_safe() -> None:
    import io

    from cudadoctor.render.diff import render_diff_markdown

    comparison = compare(side(Snapshot(env={"X_Y": "a|b"})), side(Snapshot(env={"X_Y": "`tick`"})))
    stream = io.StringIO()
    render_diff_markdown(comparison, stream)
    assert "| X\\_Y | `a\\|b` | `` `tick` `` |" in stream.getvalue()
