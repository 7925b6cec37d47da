"""The GPU proof kit (tools/gpu_proof.sh, docs/gpu-proof.md): the whole kit on a machine without a
GPU, so it cannot rot between GPU runs, and its step runner's limits with tiny fake steps."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

import gpu_proof  # noqa: E402
from gpu_proof_failures import CASES, Case, case_step, compare, judge  # noqa: E402
from gpu_proof_procs import Command  # noqa: E402
from gpu_proof_runner import (  # noqa: E402
    ARCHIVE_NAME, FAIL, PASS, SKIP, SUMMARY_NAME, TIMEOUT, Outcome, Runner, Step, StepContext, write_archive)
from gpu_proof_steps import FIND_RECORDER, Kit, machine_name, pci_nvidia_gpus  # noqa: E402



def _kit(cases: str = "") -> Kit:
    kit = Kit(sys.executable, str(REPO), "installed", str(REPO / "cudadoctor"), "0", dict(os.environ), "cudadoctor")
    if cases:
        kit.repo = cases  # the kit reads its cases from <repo>/tools/gpu_proof_cases
    return kit


def _members(archive: Path) -> Dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


# --------------------------------------------------------------------------- the whole kit, no GPU


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None or pci_nvidia_gpus() > 0,
                    reason="this machine has a GPU: there the kit is the GPU check itself (minutes)")
def test_the_whole_kit_runs_every_step_without_a_gpu(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run([str(REPO / "tools" / "gpu_proof.sh"), str(out)], env=dict(os.environ, PYTHON=sys.executable),
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(os.listdir(out)) == [ARCHIVE_NAME, SUMMARY_NAME]
    archive = out / ARCHIVE_NAME
    assert archive.stat().st_size <= 15 << 20

    names = [s.name for s in gpu_proof.steps(_kit())]
    files = _members(archive)
    manifest = json.loads(files["gpu-proof/manifest.json"])
    assert [s["name"] for s in manifest["steps"]] == names
    assert {s["status"] for s in manifest["steps"]} <= {PASS, SKIP}
    assert all("no GPU" in s["note"] for s in manifest["steps"] if s["status"] == SKIP)

    summary = (out / SUMMARY_NAME).read_text(encoding="utf-8").splitlines()
    step_lines = [line for line in summary if line.split()[:1] and line.split()[0] in (PASS, FAIL, SKIP, TIMEOUT)]
    assert [line.split()[1] for line in step_lines] == names
    assert summary[-1].startswith(f"archive {ARCHIVE_NAME}:")

    # the recording is a tests/machines/<name>/ folder as it is, with its golden files
    name = manifest["machine_name"]
    assert f"gpu-proof/machine/{name}/machine.json" in files
    assert files[f"gpu-proof/golden/{name}.txt"].startswith(b"cudadoctor ")
    assert b"[no-nvidia-gpu]" in files[f"gpu-proof/golden/{name}.txt"]
    assert any(n.startswith("gpu-proof/steps/pytest_gpu/") for n in files)
    header = files["gpu-proof/steps/pytest_gpu/pytest-header.txt"].decode()
    assert header.startswith("cudadoctor: ") and "no-nvidia-gpu" in header


# --------------------------------------------------------------------------- the runner


HANG = textwrap.dedent("""
    import subprocess, sys, time
    # a grandchild in a session of its own, as cudadoctor smoke starts its suites
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    open(sys.argv[1], "w").write(str(child.pid))
    time.sleep(60)
""")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _hanging_step(pid_file: Path) -> Any:
    def step(ctx: StepContext) -> Outcome:
        ctx.run("hang", [sys.executable, "-c", HANG, str(pid_file)])
        return Outcome(PASS, "finished")
    return step


def _passing(ctx: StepContext) -> Outcome:
    cmd = ctx.run("echo", [sys.executable, "-c", "print('hello')"])
    return Outcome(PASS if ctx.read(cmd).strip() == "hello" else FAIL, "", {"answer": 42})


def _runner(tmp_path: Path, budget: float) -> Runner:
    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir()
    work.mkdir()
    return Runner(str(out), str(work), budget, lambda: ["header"], dict(os.environ), lambda: {})


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="the kill of a process tree reads /proc")
def test_a_hanging_step_is_killed_with_its_descendants_and_the_archive_is_written(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    runner = _runner(tmp_path, budget=4.0)
    start = time.monotonic()
    results = runner.run_all([
        Step("hangs", _hanging_step(pid_file), timeout_s=100, min_s=1, what="sleeps"),
        Step("after", _passing, timeout_s=10, min_s=1, what="prints"),
        Step("too_late", _passing, timeout_s=10, min_s=100, what="needs more than the budget"),
    ])
    code = runner.finish()
    assert time.monotonic() - start < 12
    # the budget (4 s) less the minimum kept for the later steps (1 + 100) leaves the hang nothing
    # beyond its own minimum: it got at least 1 s and was killed
    assert [r.status for r in results] == [TIMEOUT, PASS, SKIP]
    assert "hang ran past its limit" in results[0].note
    assert "budget" in results[2].note
    assert not _alive(int(pid_file.read_text()))
    assert code == 1
    summary = (tmp_path / "out" / SUMMARY_NAME).read_text()
    assert "TIMEOUT hangs" in summary and "PASS    after" in summary and "answer=42" in summary
    files = _members(tmp_path / "out" / ARCHIVE_NAME)
    assert "gpu-proof/steps/after/echo.stdout" in files
    assert json.loads(files["gpu-proof/manifest.json"])["steps"][0]["commands"][0]["timed_out"] is True


def test_finishing_leaves_the_signal_handlers_as_they_were(tmp_path: Path) -> None:
    # an ignored SIGTERM would be inherited by every program this process starts later
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    runner = _runner(tmp_path, budget=30.0)
    runner.run_all([Step("after", _passing, 10, 1, "")])
    assert runner.finish() == 0
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_a_step_that_raises_fails_alone(tmp_path: Path) -> None:
    def broken(ctx: StepContext) -> Outcome:
        raise KeyError("gpus")

    runner = _runner(tmp_path, budget=30.0)
    results = runner.run_all([Step("broken", broken, 10, 1, ""), Step("after", _passing, 10, 1, "")])
    assert runner.finish() == 1
    assert [r.status for r in results] == [FAIL, PASS]
    assert "KeyError" in results[0].note
    assert "gpu-proof/steps/broken/kit-error.txt" in _members(tmp_path / "out" / ARCHIVE_NAME)


SIGNALLED = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    from gpu_proof_runner import Outcome, Runner, Step
    def hang(ctx):
        ctx.run("hang", [sys.executable, "-c", "import time; open(%r, 'w').close(); time.sleep(60)" % sys.argv[3]])
        return Outcome("PASS")
    runner = Runner(sys.argv[2], sys.argv[2], 100.0, lambda: ["header"], dict(os.environ), lambda: {})
    runner.install_signals()
    runner.run_all([Step("hangs", hang, 60, 1, ""), Step("next", hang, 60, 1, "")])
    sys.exit(runner.finish())
""")


def test_sigterm_stops_the_kit_and_still_writes_the_archive(tmp_path: Path) -> None:
    started = tmp_path / "started"
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", SIGNALLED, str(REPO / "tools"), str(work), str(started)])
    deadline = time.monotonic() + 20
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 130
    summary = (work / SUMMARY_NAME).read_text()
    assert "FAIL    hangs" in summary and "interrupted by SIGTERM" in summary
    assert "SKIP    next" in summary and "stopped by SIGTERM" in summary
    assert (work / ARCHIVE_NAME).exists()


ORPHANING = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, sys.argv[1])
    from gpu_proof_procs import become_subreaper
    from gpu_proof_runner import Outcome, Runner, Step
    LEAVES = ("import subprocess, sys; child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], "
              "start_new_session=True); open(sys.argv[1], 'w').write(str(child.pid))")
    def leaves_an_orphan(ctx):
        ctx.run("parent", [sys.executable, "-c", LEAVES, sys.argv[3]])
        return Outcome("PASS")
    runner = Runner(sys.argv[2], sys.argv[2], 30.0, lambda: ["header"], dict(os.environ), lambda: {})
    runner.reap = become_subreaper()
    runner.run_all([Step("orphans", leaves_an_orphan, 20, 1, "")])
    sys.exit(runner.finish() if runner.reap else 77)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux's")
def test_what_a_finished_step_leaves_running_is_ended(tmp_path: Path) -> None:
    """A smoke suite outliving a killed `cudadoctor smoke` would hold the GPU for the next steps."""
    work, pid_file = tmp_path / "work", tmp_path / "orphan.pid"
    work.mkdir()
    done = subprocess.run([sys.executable, "-c", ORPHANING, str(REPO / "tools"), str(work), str(pid_file)], timeout=60)
    assert done.returncode == 0
    assert not _alive(int(pid_file.read_text()))
    files = _members(work / ARCHIVE_NAME)
    assert b"killed" in files["gpu-proof/steps/orphans/strays.txt"]


def test_logs_are_cut_to_keep_the_archive_small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpu_proof_runner

    work, out = tmp_path / "work", tmp_path / "out"
    (work / "steps" / "s").mkdir(parents=True)
    out.mkdir()
    (work / "steps" / "s" / "big.stderr").write_bytes(b"head\n" + os.urandom(300_000) + b"\ntail")
    (work / "machine.json").write_bytes(b"x" * 5000)
    monkeypatch.setattr(gpu_proof_runner, "ARCHIVE_LIMIT", 100_000)
    monkeypatch.setattr(gpu_proof_runner, "LOG_CAPS", (1 << 20, 10_000))
    size = write_archive(str(out), str(work), lambda: {"steps": []})
    assert size <= 100_000
    files = _members(out / ARCHIVE_NAME)
    log = files["gpu-proof/steps/s/big.stderr"]
    assert log.startswith(b"head") and log.endswith(b"tail") and b"bytes cut by the GPU proof kit" in log
    assert files["gpu-proof/machine.json"] == b"x" * 5000  # not a log: never cut
    assert json.loads(files["gpu-proof/manifest.json"])["log_cap_bytes"] == 10_000


def test_a_recorded_venv_under_a_dot_folder_reaches_the_archive_and_caches_do_not(tmp_path: Path) -> None:
    """A recorded machine's torch lives at /opt/torch/.venv/...: its files are the evidence of the
    framework build (version.py), unlike the caches a step leaves."""
    work, out = tmp_path / "work", tmp_path / "out"
    version = work / "machine" / "m" / "fs" / "opt" / "torch" / ".venv" / "lib" / "torch" / "version.py"
    version.parent.mkdir(parents=True)
    version.write_text("cuda = '13.0'\n")
    (work / "steps" / "s" / ".hypothesis").mkdir(parents=True)
    (work / "steps" / "s" / ".hypothesis" / "db").write_text("cache")
    out.mkdir()
    write_archive(str(out), str(work), lambda: {"steps": []})
    files = _members(out / ARCHIVE_NAME)
    assert files["gpu-proof/machine/m/fs/opt/torch/.venv/lib/torch/version.py"] == b"cuda = '13.0'\n"
    assert not [name for name in files if ".hypothesis" in name]


# --------------------------------------------------------------------------- the provoked failures


def _cmd(code: int) -> Command:
    return Command("run", ["x"], returncode=code)


def test_judging_a_provoked_failure() -> None:
    oom = next(c for c in CASES if c.name == "oom")
    hidden = next(c for c in CASES if c.name == "hidden_gpu")
    assert judge(oom, "run", _cmd(1), "cudadoctor: 'python3 oom.py' failed (exit 1) with a known GPU error: "
                                      "cuda-out-of-memory") == (PASS, "run: cuda-out-of-memory")
    assert judge(oom, "excepthook", _cmd(1), 'cudadoctor: this looks like "cuda-out-of-memory" (...)')[0] == PASS
    assert judge(oom, "run", _cmd(77), "gpu-proof-skip: no GPU: the driver lists none") == (SKIP, "no GPU: the driver lists none")
    status, what = judge(oom, "run", _cmd(3), "gpu-proof-no-failure: torch allocated 10 bytes")
    assert status == FAIL and "did not happen: torch allocated 10 bytes" in what
    assert judge(oom, "run", _cmd(1), "RuntimeError: something else")[0] == FAIL
    status, what = judge(hidden, "run", _cmd(1), "known GPU error: torch-no-cuda-gpus-available")
    assert status == FAIL and "cuda-visible-devices-hides-all" in what


PROVOKED = Path(__file__).parent / "corpus" / "provoked"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_case_expects_what_its_recorded_gpu_output_is_named(case: Case) -> None:
    """`cudadoctor run` names the first known error of the output: on what the case printed on
    an H200 (tests/corpus/provoked) that is one of the names the kit accepts."""
    from cudadoctor.data.source import default_matrix
    from cudadoctor.diagnosis.matching import match

    data = default_matrix()
    assert all(data.signatures.by_id(s) is not None for s in case.signatures), case.signatures
    recorded = [p for p in PROVOKED.iterdir()
                if json.loads((p / "case.json").read_text())["script"].endswith("/" + case.script)]
    if not recorded:
        pytest.skip(f"no recorded output of {case.script} yet")
    for folder in recorded:
        matches = match((folder / "paste.md").read_text(encoding="utf-8"), data)
        assert matches and matches[0].signature.id in case.signatures, (folder.name, [m.signature.id for m in matches])


@pytest.mark.parametrize("case, error", [
    (next(c for c in CASES if c.name == "oom"), "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 280.00 GiB"),
    (next(c for c in CASES if c.name == "hidden_gpu"), "RuntimeError: No CUDA GPUs are available"),
])
def test_a_case_is_diagnosed_through_run_and_the_excepthook(tmp_path: Path, case: Case, error: str) -> None:
    """The real plumbing, with a stand-in script that raises the error a GPU would give."""
    cases = tmp_path / "tools" / "gpu_proof_cases"
    cases.mkdir(parents=True)
    kind, _, message = error.partition(": ")
    (cases / case.script).write_text(f"import sys\nassert sys.argv[1:] == ['--gpus', '1']\n"
                                     f"class {kind.split('.')[-1]}(Exception): pass\n"
                                     f"raise {kind.split('.')[-1]}({message!r})\n")
    folder = tmp_path / "step"
    folder.mkdir()
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    ctx = StepContext(case.name, str(folder), time.monotonic() + 60, env, {"gpus": 1})
    outcome = case_step(_kit(str(tmp_path)), case)(ctx)
    assert outcome.status == PASS, outcome.note
    assert outcome.note == f"diagnosed run: {case.signatures[0]}; excepthook: {case.signatures[0]}"


def test_the_wrong_arch_cubin_is_for_another_family() -> None:
    sys.path.insert(0, str(REPO / "tools" / "gpu_proof_cases"))
    import wrong_arch

    assert wrong_arch.other_family((9, 0)) == "sm_80"
    assert wrong_arch.other_family((10, 0)) == "sm_80"
    assert wrong_arch.other_family((8, 6)) == "sm_90"
    assert wrong_arch.other_family(None) == "sm_80"


def test_without_nvcc_or_a_gpu_the_wrong_arch_case_says_no_gpu_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A CI machine with neither: the no-GPU run must still read as "no GPU"."""
    sys.path.insert(0, str(REPO / "tools" / "gpu_proof_cases"))
    import wrong_arch

    monkeypatch.setattr(wrong_arch, "find_nvcc", lambda: None)
    with pytest.raises(SystemExit) as stop:
        wrong_arch.build("sm_80", str(tmp_path), "no GPU: the driver lists none")
    assert stop.value.code == 77
    assert capsys.readouterr().err == ("gpu-proof-skip: no GPU: the driver lists none; nvcc not found "
                                       "(PATH, CUDA_HOME, /usr/local/cuda*): cannot build a cubin\n")


# --------------------------------------------------------------------------- the side-by-side check


TORCH = {"d2d": {"bytes": 268435456.0, "reps": 20.0, "gbs": 1800.0},
         "matmul": {"bf16": {"tflops": 700.0}, "fp32": {"tflops": 50.0}}, "stress_step": {"tflops": 560.0}}


def _metrics(**values: float) -> Dict[str, Any]:
    return {"metrics": values}


def test_smoke_figures_within_10_percent_of_torch_pass() -> None:
    out = compare(TORCH, _metrics(bandwidth_gbs=1700.0), _metrics(gbs=1850.0), _metrics(tflops=650.0), "bf16")
    assert out.status == PASS
    assert out.figures["driver_d2d_ratio"] == pytest.approx(0.944, abs=1e-3)
    assert out.figures["stress_gemm_ratio"] == pytest.approx(0.929, abs=1e-3)
    assert compare(TORCH, _metrics(bandwidth_gbs=1580.0), None, None, "bf16").status == FAIL  # 0.88: beyond 10 %


def test_a_smoke_figure_far_from_torch_fails_and_says_which() -> None:
    out = compare(TORCH, _metrics(bandwidth_gbs=1000.0), None, _metrics(tflops=560.0), "bf16")
    assert out.status == FAIL
    assert "driver_d2d 1000.0 vs torch 1800.0" in out.note and "stress_gemm 560.0 vs torch 700.0" in out.note
    # the stress step (GEMM and comparison) in torch's own loop matches the figure: the note says so
    assert "stress step, GEMM and comparison: 560.0" in out.note
    assert out.figures["torch_suite_d2d_ratio"] == "n/a"


# --------------------------------------------------------------------------- small pieces


def test_machine_names_follow_the_house_style() -> None:
    report = {"snapshot": {"gpus": [{"name": "NVIDIA H200"}], "driver": {"driver_version": "580.159.03"},
                           "frameworks": [{"name": "torch", "version": "2.11.0+cu130"}]}}
    assert machine_name(report) == "h200-driver580-torch211-cu130"
    two = {"snapshot": {"gpus": [{"name": "NVIDIA H100 80GB HBM3"}] * 2, "driver": {}}}
    assert machine_name(two) == "2xh100"
    assert machine_name({}) == "nogpu"


def test_the_kit_finds_the_recorder_and_the_pytest_plugin() -> None:
    import importlib

    found = subprocess.run([sys.executable, "-c", FIND_RECORDER], capture_output=True, text=True, timeout=60)
    assert found.stdout.strip() in ("cudadoctor.host.recorder", "cudadoctor.recorder")
    assert hasattr(importlib.import_module(gpu_proof.plugin_module(str(REPO))), "pytest_addoption")


def test_every_step_has_a_limit_and_the_kit_fits_seven_minutes() -> None:
    table: List[Step] = gpu_proof.steps(_kit())
    assert len({s.name for s in table}) == len(table)
    assert all(0 < s.min_s <= s.timeout_s for s in table)
    assert sum(s.min_s for s in table) < gpu_proof.DEFAULT_BUDGET_S
    # the budget, the kills of a last hanging step (2 x 2 s per process, two processes at most)
    # and the archive end before tools/gpu_proof.sh's timeout(1) backstop, and that within 7 minutes
    script = (REPO / "tools" / "gpu_proof.sh").read_text()
    assert "GPU_PROOF_LIMIT_S:-410}" in script and "--kill-after=5" in script
    assert gpu_proof.DEFAULT_BUDGET_S + 2 * 2 * 2 + 10 <= 410 and 410 + 5 <= 420


# --------------------------------------------------------------------------- the GPU paths, on made-up results


def _suite(name: str, status: str, *tests: Dict[str, Any], duration: float = 1.0) -> Dict[str, Any]:
    return {"suite": name, "status": status, "reason": f"{name} {status}", "duration_s": duration, "tests": list(tests)}


def _passed(name: str, message: str = "", **metrics: float) -> Dict[str, Any]:
    return {"name": name, "status": "passed", "message": message, "metrics": metrics}


def _report(*suites: Dict[str, Any]) -> Dict[str, Any]:
    return {"snapshot": {"smoke": list(suites)}}


QUICK_ON_A_GPU = _report(_suite("driver", "passed", _passed("d2d_bandwidth", bytes=268435456, reps=20, bandwidth_gbs=1700.0)),
                         _suite("torch", "passed", _passed("bandwidth_d2d", gbs=1750.0), duration=5.0),
                         _suite("julia", "skipped"))
STRESS_ON_A_GPU = dict(_report(_suite("torch", "passed", _passed(
    "stress_gemm", "900 GEMMs 8192x8192 bf16 in 30.0 s: 650.0 TFLOPS over the GEMMs' own 15.2 s", tflops=650.0))),
    findings=[{"code": "smoke-figures", "why": "Each throughput figure ...: GPU 0 (NVIDIA H200): torch stress_gemm 650 "
                                               "TFLOPS bf16 GEMM, 0.66 of the NVIDIA H200's 989.5 TFLOPS dense bf16 "
                                               "datasheet peak. A healthy GPU ..."}])


def _ctx(tmp_path: Path, gpus: int, **facts: Any) -> StepContext:
    folder = tmp_path / "step"
    folder.mkdir(exist_ok=True)
    return StepContext("s", str(folder), time.monotonic() + 60, dict(os.environ), dict(facts, gpus=gpus))


def test_smoke_results_on_a_gpu_give_their_status_and_figures(tmp_path: Path) -> None:
    from gpu_proof_steps import _smoke_outcome

    ctx = _ctx(tmp_path, gpus=1)
    quick = _smoke_outcome(ctx, "quick", Command("smoke", [], 1, seconds=7.5), QUICK_ON_A_GPU["snapshot"]["smoke"])
    assert (quick.status, quick.note) == (PASS, "2 suites passed in 7.5 s (target <= 10 s)")
    assert quick.figures["driver_d2d_gbs"] == 1700.0 and quick.figures["torch_d2d_gbs"] == 1750.0
    assert quick.figures["julia"] == "skipped:1.0s"
    slow = _smoke_outcome(ctx, "quick", Command("smoke", [], 1, seconds=12.0), QUICK_ON_A_GPU["snapshot"]["smoke"])
    assert slow.status == FAIL and "12.0 s > the 10 s target" in slow.note
    stress = _smoke_outcome(ctx, "stress", Command("smoke", [], 1, seconds=80.0), STRESS_ON_A_GPU["snapshot"]["smoke"])
    assert stress.status == PASS and stress.figures["torch_stress_tflops"] == 650.0
    broken = _smoke_outcome(ctx, "quick", Command("smoke", [], 1, seconds=3.0), [_suite("driver", "crashed")])
    assert (broken.status, broken.note) == (FAIL, "driver crashed: driver crashed")
    nothing = _smoke_outcome(ctx, "quick", Command("smoke", [], 1, seconds=3.0), [_suite("driver", "skipped")])
    assert nothing.status == FAIL and nothing.note.startswith("no suite ran")


def test_the_side_by_side_step_measures_torch_on_the_smoke_suites_sizes(tmp_path: Path) -> None:
    cases = tmp_path / "tools" / "gpu_proof_cases"
    cases.mkdir(parents=True)
    (cases / "side_by_side.py").write_text(
        "import json, sys\n"
        "assert sys.argv[1:] == ['--gpus', '1', '--bytes', '268435456', '--reps', '20', '--n', '8192'], sys.argv\n"
        f"print(json.dumps({TORCH!r}))\n")
    ctx = _ctx(tmp_path, gpus=1, smoke_quick=QUICK_ON_A_GPU, smoke_stress=STRESS_ON_A_GPU)
    from gpu_proof_failures import side_by_side

    outcome = side_by_side(_kit(str(tmp_path)))(ctx)
    assert outcome.status == PASS, outcome.note
    assert outcome.note == "within 10%: driver_d2d, torch_suite_d2d, stress_gemm"
    assert json.loads(Path(ctx.path("comparison.json")).read_text())["torch"] == TORCH
    assert outcome.figures["of_peak_torch_stress_gemm"] == 0.66


# --------------------------------------------------------------------------- check against collect_env


H100_RECORDED = REPO / "benchmarks" / "recorded" / "h100-2026-11-28.json"


def test_the_speed_step_says_both_ratios_against_their_budgets() -> None:
    from gpu_proof_texts import ratios, verdict

    recorded = json.loads(H100_RECORDED.read_text())["seconds"]
    before = ratios(recorded)  # the H100 of 2026-11-28: suites one after the other
    assert (before["check_ratio"], before["no_smoke_ratio"]) == (pytest.approx(2.697, abs=1e-3), pytest.approx(0.0951, abs=1e-4))
    out = verdict(before)
    assert out.status == FAIL
    assert out.note.startswith("check/collect_env 2.697 (> 1); check --no-smoke/collect_env 0.0951 (> 0.05)")
    fast = verdict(ratios({"check": [5.0, 5.4], "collect_env": [5.5, 6.1, 7.2], "check_no_smoke": [0.2, 0.25, 0.3]}))
    assert fast.status == PASS and fast.note.startswith("check/collect_env 0.852 (<= 1); check --no-smoke/collect_env")
    assert verdict(ratios({"check": [5.0]})).status == FAIL  # no collect_env: nothing shows the budget holds


def test_the_phase_benchmark_reads_recorded_timings_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import check_phases
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    assert check_phases.main(["--recorded", str(H100_RECORDED)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("RECORDED timings, not measured here: NVIDIA H100 80GB HBM3")
    assert "check --no-smoke --json / collect_env     0.095  MISS <= 0.05" in out
    assert "check (quick smoke) / collect_env         2.697  MISS <= 1" in out
    rounds = [{"phases": {"start": 0.05, "import": 0.04, "probes": 0.1, "checks": 0.02, "render": 0.01},
               "probes": {"gpus": 0.08}, "calls": [("nvml init", 0.06), ("read_bytes", 0.01), ("read_bytes", 0.02)],
               "peak_mib": 20.0}] * 3
    summary = check_phases.summarize(rounds, {"python_pass": [0.02], "collect_env": [5.0, 6.0, 7.0],
                                              "check": [0.2, 0.25, 0.3]})
    assert summary["total_s"] == pytest.approx(0.22)  # the instrumented run's phases
    assert summary["ratio_no_smoke"] == pytest.approx(0.25 / 6.0)  # the command's own time decides
    assert summary["calls_s"] == [("nvml init", 0.06), ("read_bytes", pytest.approx(0.03))]
