"""`import cudadoctor` as a framework or a script uses it: every API function against recorded
machines, the same results the CLI prints, one-line errors (CudadoctorError), a light import, and
the excepthook in a real interpreter (docs/api.md)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict

import pytest

import cudadoctor
from cudadoctor.errors import CudadoctorError
from cudadoctor.model import Category, Finding, Report, SmokeResult, Snapshot
from cudadoctor.planner.install import InstallResult
from cudadoctor.host.recorded import RecordedHost
from helpers import MACHINES, cli

H200 = str(MACHINES / "h200-driver580-torch211-cu130")
LAPTOP = str(MACHINES / "laptop-rtx3060-driver470-torch25-cu124")  # driver 470, torch 2.5.1+cu124
DEV = str(MACHINES / "dev-debian12-cuda13-nodriver-torch213cpu")  # no GPU, no driver
MISMATCH_MACHINE = str(MACHINES / "nvml-mismatch-after-upgrade")
NO_KERNEL_IMAGE = "CUDA error: no kernel image is available for execution on the device"
INSUFFICIENT = "CUDA driver version is insufficient for CUDA runtime version"
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch"
REPO = Path(__file__).resolve().parent.parent


def chained() -> BaseException:
    """A framework's own error raised from the CUDA error, as loaders do."""
    try:
        try:
            raise OSError(INSUFFICIENT)
        except OSError as exc:
            raise RuntimeError("the model could not be loaded") from exc
    except RuntimeError as exc:
        return exc


def python(code: str, *args: str, env: Any = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          timeout=120, cwd=str(REPO), env=env)


# ---------------------------------------------------------------------------- the names


def test_the_names_are_exactly_all_and_each_is_documented() -> None:
    public = [n for n in dir(cudadoctor) if not n.startswith("_")]
    assert sorted(public) == sorted(cudadoctor.__all__)
    for name in cudadoctor.__all__:
        value = getattr(cudadoctor, name)
        assert callable(value), name
        assert (value.__doc__ or "").strip(), f"{name} has no docstring"
    with pytest.raises(AttributeError):
        getattr(cudadoctor, "no_such_name")


def test_the_names_survive_imports_of_same_named_modules() -> None:
    """`cudadoctor.smoke` is also the suites' package, imported by `check`: it must stay callable."""
    import cudadoctor.diagnosis.explanation  # noqa: F401
    import cudadoctor.smoke.runner  # noqa: F401

    assert callable(cudadoctor.smoke) and cudadoctor.smoke.runner.run_suite  # type: ignore[attr-defined]
    assert cudadoctor.explain is cudadoctor.api.explain
    assert cudadoctor.CudadoctorError is CudadoctorError


def test_import_is_light() -> None:
    done = python("""
        import sys, cudadoctor
        heavy = ("click", "torch", "pynvml", "cudadoctor.api", "cudadoctor.matrix", "cudadoctor.probes")
        print([m for m in heavy if m in sys.modules])
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# ---------------------------------------------------------------------------- collect, diagnose


def test_collect_a_recorded_machine() -> None:
    snap = cudadoctor.collect(host=RecordedHost.load(H200))
    assert isinstance(snap, Snapshot)
    assert [g.name for g in snap.gpus or ()] == ["NVIDIA H200"]
    assert snap.driver is not None and snap.driver.driver_version == "580.159.03"


def test_diagnose_gives_the_findings_check_prints(capsys: pytest.CaptureFixture[str]) -> None:
    findings = cudadoctor.diagnose(cudadoctor.collect(host=RecordedHost.load(LAPTOP)))
    assert all(isinstance(f, Finding) for f in findings)
    code, out, _ = cli(["check", "--machine", LAPTOP, "--json"], capsys)
    assert code == 1
    assert [f.code for f in findings] == [f["code"] for f in json.loads(out)["findings"]]
    assert "driver-too-old-for-build" in [f.code for f in findings]


def test_diagnose_a_dict_of_facts() -> None:
    findings = cudadoctor.diagnose({"driver_version": "470.82.01", "torch_version": "2.5.1", "torch_cuda": "12.4"})
    assert [f.code for f in findings] == ["driver-too-old-for-build"]
    assert findings[0].category is Category.DRIVER_TOO_OLD


def test_diagnose_a_saved_report_as_dict_file_markdown_or_report(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    expected = [f.code for f in cudadoctor.diagnose(cudadoctor.collect(host=RecordedHost.load(LAPTOP)))]
    saved = tmp_path / "report.json"
    saved.write_text(cudadoctor.report("json", host=RecordedHost.load(LAPTOP)), encoding="utf-8")
    markdown = tmp_path / "report.md"
    markdown.write_text(cudadoctor.report("markdown", host=RecordedHost.load(LAPTOP)), encoding="utf-8")
    document = json.loads(saved.read_text(encoding="utf-8"))
    for given in (document, str(saved), saved, str(markdown)):
        assert [f.code for f in cudadoctor.diagnose(given)] == expected, given
    report = cudadoctor.make_report(cudadoctor.collect(host=RecordedHost.load(LAPTOP)))
    assert isinstance(report, Report) and not report.checked
    assert [f.code for f in cudadoctor.diagnose(report)] == expected
    assert [f.code for f in cudadoctor.diagnose(document, only=["driver-too-old-for-build"])] == [
        "driver-too-old-for-build"]


@pytest.mark.parametrize("given, words", [
    (42, "not int"),
    ({"gpu_nmae": "RTX 4090"}, "gpu_nmae"),
    ({"driver_version": 550}, None),  # a number is read as the version: no error
    ("/nonexistent/report.json", "/nonexistent/report.json"),
])
def test_diagnose_bad_input_is_a_cudadoctor_error(given: Any, words: Any) -> None:
    if words is None:
        assert isinstance(cudadoctor.diagnose(given), tuple)
        return
    with pytest.raises(CudadoctorError) as info:
        cudadoctor.diagnose(given)
    assert words in info.value.message


def test_diagnose_an_unknown_check_is_an_error() -> None:
    with pytest.raises(CudadoctorError, match="no check or finding code 'nope'"):
        cudadoctor.diagnose({"driver_version": "550.54.15"}, only=["nope"])


# ---------------------------------------------------------------------------- explain


def test_explain_an_exception_without_checking() -> None:
    e = cudadoctor.explain(RuntimeError(NO_KERNEL_IMAGE), check=False)
    assert isinstance(e, cudadoctor.Explanation) and e.matched and e.checked is None
    first = e.matches[0]
    assert first.signature == "cuda-no-kernel-image"
    assert (first.line_number, first.line) == (1, f"RuntimeError: {NO_KERNEL_IMAGE}")
    assert first.categories[0] is Category.ARCH_UNSUPPORTED
    assert "sm_" in first.meaning or "SASS" in first.meaning
    assert first.title.startswith('the error "') and "a build without code for the GPU's architecture" in first.title
    assert all(c.verdict == "not_checked" for c in first.causes)
    assert "Known error: cuda-no-kernel-image" in str(e)
    assert e.headline() == ('cudadoctor: this looks like "cuda-no-kernel-image" '
                            "(most likely a build without code for the GPU's architecture)")


def test_explain_finds_the_cuda_error_in_a_chained_cause() -> None:
    e = cudadoctor.explain(chained(), host=RecordedHost.load(LAPTOP))
    assert e.matches[0].signature == "cuda-driver-insufficient"
    assert e.matches[0].line == f"OSError: {INSUFFICIENT}"  # quoted from the cause, not from the source line
    verdicts = {c.category: c.verdict for c in e.matches[0].causes}
    assert verdicts[Category.DRIVER_TOO_OLD] == "holds"  # driver 470 under a cu124 build
    assert verdicts[Category.CONTAINER_NO_GPU] == "ruled_out"
    assert "here: a driver too old for the CUDA version in use" in (e.headline() or "")
    assert "driver-too-old-for-build" in [f.code for f in e.findings or ()]


def test_explain_text_is_the_cli_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "snapshot.json"
    saved.write_text(cudadoctor.report("json", redact=False, host=RecordedHost.load(MISMATCH_MACHINE)))
    code, out, _ = cli(["explain", "--snapshot", str(saved), MISMATCH], capsys)
    assert code == 0
    e = cudadoctor.explain(MISMATCH, snapshot=str(saved))
    assert e.text() == out
    assert e.matches[0].causes[0].verdict == "holds"
    code, out, _ = cli(["explain", "--snapshot", str(saved), "--json", MISMATCH], capsys)
    assert e.to_dict() == json.loads(out)


def test_explain_on_a_given_snapshot_object() -> None:
    snap = cudadoctor.collect(host=RecordedHost.load(H200))
    e = cudadoctor.explain(MISMATCH, snapshot=snap)
    assert e.matches[0].causes[0].verdict == "ruled_out"  # NVML answers on this machine
    assert "Checked against the snapshot given:" in e.text()


def test_explain_text_that_matches_nothing() -> None:
    e = cudadoctor.explain("Segmentation fault (core dumped)", check=False)
    assert not e.matched and e.headline() is None
    assert "No known error signature matches this text" in e.text()


@pytest.mark.parametrize("error, kwargs, words", [
    (42, {}, "not int"),
    ("  ", {}, "no error text"),
    ("x", {"snapshot": {"driver_version": "550.54.15"}, "host": object()}, "does not go with"),
    ("x", {"python": "/nonexistent/python"}, "/nonexistent/python"),
])
def test_explain_bad_input_is_a_cudadoctor_error(error: Any, kwargs: Dict[str, Any], words: str) -> None:
    with pytest.raises(CudadoctorError) as info:
        cudadoctor.explain(error, **kwargs)
    assert words in info.value.message


# ---------------------------------------------------------------------------- plan_install


def test_plan_install_for_a_described_machine_is_the_cli_plan(capsys: pytest.CaptureFixture[str]) -> None:
    result = cudadoctor.plan_install("torch", {"driver": "550.54.15", "gpus": ["RTX 4090"], "python": "3.11"})
    assert isinstance(result, InstallResult) and result.ok
    assert result.target.described and result.target.compute_capabilities == ("8.9",)
    code, out, _ = cli(["install", "torch", "--driver", "550.54.15", "--gpu", "RTX 4090", "--python", "3.11",
                        "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert result.commands == doc["commands"]
    assert result.results[0].plan is not None
    assert f"torch {result.results[0].plan.version}" in doc["results"][0]["plan"]["label"]


def test_plan_install_for_a_recorded_machine_and_a_target_object() -> None:
    result = cudadoctor.plan_install(["torch"], host=RecordedHost.load(LAPTOP), python="3.11")
    assert not result.target.described and result.target.driver == "470.82.01"
    assert result.target.python == "3.11"
    again = cudadoctor.plan_install("torch", result.target)
    assert again.commands == result.commands


@pytest.mark.parametrize("packages, target, words", [
    ("torch", {"drvier": "550.54.15"}, "unknown key 'drvier'"),
    ("torch", {"gpus": ["RTX 9999 Ultra"]}, "RTX 9999 Ultra"),
    ("torch", {"driver": 550}, "expected a string"),
    ("torch", {"os": "beos"}, "beos"),
    ("torch", 12, "not int"),
    ("tensorflow-nightly", {"driver": "550.54.15"}, "tensorflow-nightly"),
    ([], None, "package names"),
])
def test_plan_install_bad_input_is_a_cudadoctor_error(packages: Any, target: Any, words: str) -> None:
    with pytest.raises(CudadoctorError) as info:
        cudadoctor.plan_install(packages, target)
    assert words in info.value.message


# ---------------------------------------------------------------------------- smoke


def test_smoke_runs_the_driver_suite_for_a_machine_without_frameworks() -> None:
    snap = dataclasses.replace(cudadoctor.collect(host=RecordedHost.load(DEV)), frameworks=())
    results = cudadoctor.smoke(snapshot=snap, python=sys.executable, timeout=60)
    assert [r.suite for r in results] == ["driver"]
    assert all(isinstance(r, SmokeResult) and r.tier == "quick" for r in results)
    # run here, in a child of this interpreter: passed where a driver answers, skipped (saying why) elsewhere
    assert results[0].status in ("passed", "skipped"), results[0]
    assert results[0].status == "passed" or "driver" in results[0].reason


@pytest.mark.parametrize("kwargs, words", [
    ({"suites": ["driver", "pytorch"]}, "no smoke suite named 'pytorch'"),
    ({"tier": "quik"}, "no smoke tier 'quik'"),
    ({"gpus": [-1]}, "GPU indexes"),
    ({"duration": 60}, "stress tier"),
    ({"python": "/nonexistent/python"}, "/nonexistent/python"),
])
def test_smoke_bad_input_is_a_cudadoctor_error(kwargs: Dict[str, Any], words: str) -> None:
    with pytest.raises(CudadoctorError) as info:
        cudadoctor.smoke(**kwargs)
    assert words in info.value.message


# ---------------------------------------------------------------------------- report


def _steady(document: Dict[str, Any]) -> Dict[str, Any]:
    """The report without what changes from one run to the next (the time, probe durations)."""
    snap = document["snapshot"]
    snap.pop("created_at", None)
    snap.pop("probe_durations_s", None)
    return document


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_report_is_what_cudadoctor_report_writes(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = cudadoctor.report(fmt, host=RecordedHost.load(H200))
    code, out, _ = cli(["report", "--machine", H200, "--format", fmt], capsys)
    assert code == 0
    if fmt == "json":
        assert _steady(json.loads(text)) == _steady(json.loads(out))
    else:
        assert text == out


def test_report_is_redacted_by_default() -> None:
    recorded = json.loads((Path(H200) / "machine.json").read_text(encoding="utf-8"))
    hostname = recorded["host"]["hostname"] if "host" in recorded else "h200-node-01"
    redacted = cudadoctor.report(host=RecordedHost.load(H200))
    assert redacted.startswith("<!--") or "cudadoctor" in redacted.splitlines()[0]
    assert hostname not in redacted and "Redacted by cudadoctor" in redacted
    assert hostname in cudadoctor.report("json", redact=False, host=RecordedHost.load(H200))
    assert hostname in cudadoctor.report("json", keep_hostname=True, host=RecordedHost.load(H200))


def test_report_of_a_given_snapshot() -> None:
    text = cudadoctor.report("json", snapshot={"driver_version": "470.82.01", "torch_version": "2.5.1",
                                               "torch_cuda": "12.4"})
    doc = json.loads(text)
    assert doc["format"] == "cudadoctor.report"
    assert [f["code"] for f in doc["findings"]] == ["driver-too-old-for-build"]


@pytest.mark.parametrize("kwargs, words", [
    ({"format": "html"}, "report format 'html'"),
    ({"redact": False, "keep_hostname": True}, "does not go with"),
    ({"patterns": ["("]}, "not a regular expression"),
    ({"max_length": 10}, "max_length"),
])
def test_report_bad_input_is_a_cudadoctor_error(kwargs: Dict[str, Any], words: str) -> None:
    with pytest.raises(CudadoctorError) as info:
        cudadoctor.report(host=RecordedHost.load(H200), **kwargs)
    assert words in info.value.message


# ---------------------------------------------------------------------------- the excepthook

RAISE = """
    import sys, threading, cudadoctor
    cudadoctor.install_excepthook(check=False)
    cudadoctor.install_excepthook(check=False)  # idempotent: one diagnosis
    if sys.argv[1] == "thread":
        t = threading.Thread(target=lambda: exec("raise RuntimeError(sys.argv[2])"), name="loader")
        t.start(); t.join()
        sys.exit(0)
    if sys.argv[1] == "uninstalled":
        cudadoctor.uninstall_excepthook()
    raise RuntimeError(sys.argv[2])
"""


def test_the_excepthook_diagnoses_a_known_gpu_error_after_the_traceback() -> None:
    done = python(RAISE, "main", NO_KERNEL_IMAGE)
    assert done.returncode == 1
    err = done.stderr
    assert err.startswith("Traceback (most recent call last):")
    headline = 'cudadoctor: this looks like "cuda-no-kernel-image"'
    assert err.index(f"RuntimeError: {NO_KERNEL_IMAGE}") < err.index(headline)
    assert err.count("cudadoctor: this looks like") == 1
    assert "possible causes, most likely first:" in err and "verify:" in err
    assert done.stdout == ""


def test_the_excepthook_adds_nothing_to_other_errors() -> None:
    done = python(RAISE, "main", "ValueError-ish: the batch has the wrong shape")
    assert done.returncode == 1
    assert "cudadoctor" not in done.stderr
    assert done.stderr.rstrip().endswith("RuntimeError: ValueError-ish: the batch has the wrong shape")


def test_the_excepthook_covers_threads_and_uninstalls() -> None:
    done = python(RAISE, "thread", NO_KERNEL_IMAGE)
    assert done.returncode == 0
    assert "Exception in thread loader" in done.stderr
    assert 'cudadoctor: this looks like "cuda-no-kernel-image"' in done.stderr
    done = python(RAISE, "uninstalled", NO_KERNEL_IMAGE)
    assert done.returncode == 1 and "cudadoctor" not in done.stderr


def test_a_failing_doctor_prints_one_line_after_the_traceback() -> None:
    env = dict(os.environ, CUDADOCTOR_DATA_DIR=str(REPO / "no-such-data"))
    done = python(RAISE, "main", NO_KERNEL_IMAGE, env=env)
    assert done.returncode == 1
    assert f"RuntimeError: {NO_KERNEL_IMAGE}" in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("cudadoctor")]
    assert len(lines) == 1 and lines[0].startswith("cudadoctor: could not diagnose this error (")


def test_the_excepthook_checks_this_machine() -> None:
    done = python("""
        import cudadoctor
        cudadoctor.install_excepthook()
        raise RuntimeError("CUDA error: no kernel image is available for execution on the device")
    """)
    assert done.returncode == 1
    assert "Checked against this machine (target " in done.stderr
