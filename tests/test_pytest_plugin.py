"""The pytest plugin (docs/pytest.md), driven through pytester on recorded machines: the header, the
``gpu`` marker's skips, strict mode, the replay options, and staying inert when not turned on."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from cudadoctor import api
from cudadoctor.model import FrameworkBuild, Gpu, Report, Snapshot
from cudadoctor.pytest_plugin.marker import (
    GpuRequirement,
    RequirementError,
    parse_requirement,
    unmet,
    visible_gpus,
)
from cudadoctor.pytest_plugin import STRICT_EXIT_CODE
from cudadoctor.host.recorded import RecordedHost
from cudadoctor.model.serialize import snapshot_to_json
from helpers import MACHINES

pytest_plugins = ["pytester"]

DEV = "dev-debian12-cuda13-nodriver-torch213cpu"
H200 = "h200-driver580-torch211-cu130"
H100 = "h100-driver580-torch211-cu130"  # the proof kit's real H100: CUDA torch, JAX, CuPy and the CPU onnxruntime
H200_REAL = "h200-proofkit-driver580-torch211-cu130"  # the kit's real H200, with torch's version.py
LAPTOP = "laptop-rtx3060-driver470-torch25-cu124"
DEV_LINE = "cudadoctor: no NVIDIA driver · no GPU · torch 2.13.0+cpu (CPU-only) · ✗ no-nvidia-gpu: this machine has no NVIDIA GPU"

TESTS = '''
import pytest

def test_cpu():
    pass

@pytest.mark.gpu
def test_any_gpu():
    pass

@pytest.mark.gpu(count=2)
def test_two():
    pass

@pytest.mark.gpu(min_cc="10.0")
def test_blackwell():
    pass

@pytest.mark.gpu(min_memory_gb=200)
def test_big():
    pass

@pytest.mark.gpu(framework="tensorflow")
def test_tf():
    pass

@pytest.mark.gpu(framework="torch", min_cc=9.0, min_memory_gb=80)
def test_torch_hopper():
    pass
'''


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    """Diagnose once out here, so the inner sessions find cudadoctor's modules and data loaded
    (pytester drops the modules an inner session imports; re-importing them is most of its time)."""
    import cudadoctor.render.oneline  # noqa: F401

    _report(_snapshot(DEV))


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """An in-process session without hypothesis's plugin, which imports hypothesis at its end."""
    return pytester.runpytest("-p", "no:hypothesispytest", "-p", "no:cacheprovider", *args)


def machine(name: str) -> str:
    # the "=" form: pytest reads a separate value as a path when it looks for its rootdir
    return f"--cudadoctor-machine={os.path.join(MACHINES, name)}"


def skips(result: pytest.RunResult) -> Dict[str, str]:
    """test name -> skip reason, from ``-rs`` lines like ``SKIPPED [1] test_x.py:10: reason``."""
    out: Dict[str, str] = {}
    lines = result.outlines
    source = [line.strip() for line in TESTS.splitlines()]
    for line in lines:
        if line.startswith("SKIPPED [1] "):
            where, reason = line[len("SKIPPED [1] "):].split(": ", 1)
            lineno = int(where.rsplit(":", 1)[1])
            name = next(s for s in source[lineno:] if s.startswith("def "))[4:].split("(")[0]
            out[name] = reason
    return out


def header(result: pytest.RunResult) -> List[str]:
    return [line for line in result.outlines if line.startswith("cudadoctor:")]


# --------------------------------------------------------------------------- off unless asked


def test_without_flags_the_plugin_does_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    result = run(pytester, "-rs")
    result.assert_outcomes(passed=7)  # this machine has no GPU: turned on, the plugin would skip six
    assert header(result) == []


def test_when_off_it_imports_nothing_heavy(pytester: pytest.Pytester) -> None:
    pytester.makepyfile('''
        import sys

        def test_loaded_but_inert():
            assert "cudadoctor.pytest_plugin" in sys.modules  # the entry point did load it
            heavy = {"click", "torch", "pynvml", "cudadoctor.api", "cudadoctor.probes", "cudadoctor.model"}
            assert heavy.isdisjoint(sys.modules), heavy & set(sys.modules)
    ''')
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.mark.parametrize("flag", [["--cudadoctor"], ["-p", "cudadoctor"], ["-pcudadoctor"]])
def test_a_flag_turns_it_on(pytester: pytest.Pytester, flag: List[str]) -> None:
    pytester.makepyfile(TESTS)
    result = run(pytester, *flag, machine(DEV), "-rs")
    assert header(result) == [DEV_LINE]


def test_the_ini_option_turns_it_on(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncudadoctor = true\n")
    pytester.makepyfile(TESTS)
    result = run(pytester, machine(DEV), "-rs")
    assert header(result) == [DEV_LINE]
    pytester.makeini("[pytest]\ncudadoctor = false\n")
    result = run(pytester, "-rs")
    assert header(result) == [] and result.ret == 0


def test_p_cudadoctor_loads_it_with_autoload_disabled(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(TESTS)
    assert header(run(pytester, "-p", "cudadoctor", machine(DEV))) == [DEV_LINE]
    result = run(pytester, "--cudadoctor")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_p_no_cudadoctor_removes_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    result = run(pytester, "-p", "no:cudadoctor", "-rs")
    result.assert_outcomes(passed=7)
    assert header(result) == []
    result = run(pytester, "-p", "no:cudadoctor", "--cudadoctor")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unrecognized arguments: --cudadoctor*"])


# --------------------------------------------------------------------------- header and marker


def test_verbose_header_lists_the_findings(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    result = run(pytester, "--cudadoctor", machine(LAPTOP), "-v")
    lines = header(result)
    assert lines[0].startswith("cudadoctor: driver 470.82.01 (CUDA 11.4) · ")
    assert result.outlines[result.outlines.index(lines[0]) + 1] == (
        "  ✗ torch 2.5.1+cu124 needs a newer NVIDIA driver than 470.82.01  [driver-too-old-for-build]")


def test_no_gpu_skips_every_gpu_test_with_the_diagnosis(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    result = run(pytester, "--cudadoctor", machine(DEV), "-rs")
    result.assert_outcomes(passed=1, skipped=6)
    reasons = set(skips(result).values())
    assert reasons == {"no usable GPU stack: this machine has no NVIDIA GPU [no-nvidia-gpu]; fix: Run GPU work on a "
                       "machine with an NVIDIA GPU, or install the CPU builds of your frameworks."}


def test_requirements_on_the_h200(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    result = run(pytester, "--cudadoctor", machine(H200), "-rs")
    result.assert_outcomes(passed=3, skipped=4)
    assert skips(result) == {
        "test_two": "needs 2 GPUs; 1 visible",
        "test_blackwell": "needs compute capability ≥ 10.0; GPU 0 NVIDIA H200 is 9.0",
        "test_big": "needs 200 GB of GPU memory; GPU 0 NVIDIA H200 has 150.8 GB",
        "test_tf": "needs tensorflow; it is not installed in this environment",
    }


def _saved(tmp: Path, name: str, **changes: Any) -> str:
    snapshot = dataclasses.replace(_snapshot(name), **changes)
    path = tmp / f"{name}.json"
    path.write_text(snapshot_to_json(snapshot), encoding="utf-8")
    return f"--cudadoctor-snapshot={path}"


def _snapshot(name: str) -> Snapshot:
    return api.collect(host=RecordedHost.load(os.path.join(MACHINES, name)))


def test_a_cpu_only_torch_on_a_gpu_machine_from_a_saved_snapshot(pytester: pytest.Pytester, tmp_path: Path) -> None:
    cpu_torch = (FrameworkBuild(name="torch", version="2.11.0+cpu", variant="cpu"),)
    pytester.makepyfile(TESTS)
    result = run(pytester, _saved(tmp_path, H200, frameworks=cpu_torch), "-rs")
    assert header(result)[0].endswith("· ✗ cpu-only-build: torch 2.11.0+cpu is a CPU-only build: it cannot use the NVIDIA H200")
    # the GPU itself is usable: a plain gpu test runs; one that names torch is skipped with the diagnosis
    result.assert_outcomes(passed=2, skipped=5)
    assert "test_any_gpu" not in skips(result)
    assert skips(result)["test_torch_hopper"].startswith(
        "no usable GPU stack: torch 2.11.0+cpu is a CPU-only build: it cannot use the NVIDIA H200 [cpu-only-build]; fix: ")


@pytest.mark.parametrize("name", [H100, H200_REAL])
def test_the_cpu_onnxruntime_beside_working_frameworks_skips_nothing(pytester: pytest.Pytester, name: str) -> None:
    """The real H100 and H200 of the proof kit: a note about the CPU onnxruntime, and every gpu
    test the GPU can run runs (before, every gpu test was skipped there for "no usable GPU stack")."""
    pytester.makepyfile(TESTS + "\n@pytest.mark.gpu(framework='onnxruntime')\ndef test_ort():\n    pass\n")
    result = run(pytester, "--cudadoctor", machine(name), "-rs")
    assert "✗" not in header(result)[0]
    reasons = [line.split(": ", 1)[1] for line in result.outlines if line.startswith("SKIPPED [1] ")]
    assert not [r for r in reasons if r.startswith("no usable GPU stack")]
    assert "needs a CUDA build of onnxruntime; onnxruntime 1.30.0 is a CPU-only build" in reasons
    result.assert_outcomes(passed=3, skipped=5)  # test_cpu, test_any_gpu and test_torch_hopper run


def test_cuda_visible_devices_counts(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(TESTS)
    env = {"CUDA_VISIBLE_DEVICES": "3"}
    result = run(pytester, _saved(tmp_path, "dgx-h100x8-driver570-torch27-cu128", env=env), "-rs")
    assert skips(result)["test_two"] == "needs 2 GPUs; 1 visible (CUDA_VISIBLE_DEVICES='3')"


BAD_MARKERS = {
    'min_cc="eight"': "gpu marker: min_cc='eight': give a compute capability such as \"8.0\" or \"9.0\"",
    "count=0": "gpu marker: count=0: give a whole number of GPUs, 1 or more",
    '"a100"': "gpu marker: takes keyword arguments only (min_cc, min_memory_gb, count, framework), got ('a100',)",
    "min_vram=8": "gpu marker: unknown argument 'min_vram' (known: min_cc, min_memory_gb, count, framework)",
    'framework="pytorch"': "gpu marker: framework='pytorch': give one of torch, tensorflow, jax, cupy, onnxruntime, "
                           "tensorrt, numba, julia",
}


def test_bad_marker_arguments_are_collection_errors(pytester: pytest.Pytester) -> None:
    for n, args in enumerate(BAD_MARKERS):
        pytester.makepyfile(**{f"test_bad{n}": f"import pytest\n\n@pytest.mark.gpu({args})\ndef test_bad{n}():\n    pass\n"})
    result = run(pytester, "--cudadoctor", machine(H200))
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*5 errors during collection*"])
    for n, message in enumerate(BAD_MARKERS.values()):
        result.stdout.fnmatch_lines([f"*ERROR collecting test_bad{n}.py*", f"test_bad{n}: {message}"])


def test_a_failed_diagnosis_is_said_and_skips_nothing(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("gpus")

    monkeypatch.setattr(api, "diagnose", broken)
    pytester.makepyfile(TESTS)
    result = run(pytester, "--cudadoctor-strict", machine(DEV))
    assert header(result) == ["cudadoctor: could not diagnose this machine (KeyError: 'gpus'); no test is skipped by it"]
    result.assert_outcomes(passed=7)


# --------------------------------------------------------------------------- strict


def test_strict_stops_a_broken_machine_before_the_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    result = pytester.runpytest_subprocess("--cudadoctor-strict", machine(LAPTOP))
    assert result.ret == STRICT_EXIT_CODE == 6
    result.stdout.fnmatch_lines(["cudadoctor: driver 470.82.01*", "*no tests ran*"])
    result.stdout.fnmatch_lines([
        "*Exit: cudadoctor: the GPU stack is broken (1 error):",
        "  ✗ torch 2.5.1+cu124 needs a newer NVIDIA driver than 470.82.01  [driver-too-old-for-build]",
        "    fix  Upgrade the NVIDIA driver to *",
    ])
    # the fix is never cut between the uninstall and its install (issue 16, item 18)
    result.stdout.fnmatch_lines([
        "         pip uninstall -y torch torchvision torchaudio*",
        "         pip install torch==2.5.1 * --index-url https://download.pytorch.org/whl/cu118",
        "  details: cudadoctor check*",
    ])


def test_strict_runs_the_tests_on_a_healthy_machine(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    result = run(pytester, "--cudadoctor-strict", machine(H200))
    result.assert_outcomes(passed=3, skipped=4)
    assert result.ret == 0


# --------------------------------------------------------------------------- replay options


def test_a_bad_snapshot_or_machine_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    missing = run(pytester, "--cudadoctor-snapshot=nope.json")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["ERROR: --cudadoctor-snapshot nope.json: No such file or directory"])
    pytester.makefile(".json", broken='{"gpus": "many"}')
    wrong = run(pytester, "--cudadoctor-snapshot=broken.json")
    wrong.stderr.fnmatch_lines(["ERROR: --cudadoctor-snapshot broken.json: gpus*"])
    folder = run(pytester, f"--cudadoctor-machine={pytester.path}")
    folder.stderr.fnmatch_lines(["ERROR: --cudadoctor-machine *: no machine.json in that folder"])


def test_xdist_workers_use_the_controllers_snapshot(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(TESTS)
    result = pytester.runpytest_subprocess("-p", "xdist", "-n", "2", "--cudadoctor", machine(H200), "-rs")
    result.assert_outcomes(passed=3, skipped=4)


# --------------------------------------------------------------------------- the requirement logic


def _report(snapshot: Snapshot) -> Report:
    return api.make_report(snapshot, api.diagnose(snapshot))


def test_visible_gpus_follow_cuda_visible_devices() -> None:
    gpus = tuple(Gpu(index=i, uuid=f"GPU-{i}aaa", name="NVIDIA A100") for i in range(4))
    snap = Snapshot(gpus=gpus, gpus_source="nvml")

    def visible(value: str) -> Any:
        found = visible_gpus(dataclasses.replace(snap, env={"CUDA_VISIBLE_DEVICES": value}))
        return None if found is None else [g.index for g in found]

    assert visible("2,0") == [2, 0]
    assert visible("GPU-3,1") == [3, 1]  # a UUID prefix is enough, as for CUDA
    assert visible("1,7,2") == [1]  # CUDA stops at the first entry that names no GPU
    assert visible("") == [] and visible("-1") == []
    assert visible("MIG-0123") is None  # unknown: never a reason to skip
    assert visible_gpus(Snapshot(gpus=gpus, gpus_source="pci")) == []
    assert visible_gpus(Snapshot()) is None


def test_unknown_facts_never_skip() -> None:
    report = _report(Snapshot(gpus=(Gpu(index=0),), gpus_source="nvml"))
    assert unmet(GpuRequirement(min_cc=(9, 0), min_memory_gb=80, framework="torch"), report) is None
    assert unmet(GpuRequirement(count=2), _report(Snapshot())) is None


def test_mixed_gpus_count_only_those_that_qualify() -> None:
    gpus = (Gpu(index=0, name="NVIDIA T4", compute_capability="7.5", memory_total_mib=15360),
            Gpu(index=1, name="NVIDIA A100", compute_capability="8.0", memory_total_mib=40960))
    report = _report(Snapshot(gpus=gpus, gpus_source="nvml"))
    assert unmet(GpuRequirement(min_cc=(8, 0)), report) is None
    assert unmet(GpuRequirement(count=2, min_cc=(8, 0)), report) == (
        "needs 2 GPUs with compute capability ≥ 8.0; 1 of 2 visible (GPU 0 NVIDIA T4 is 7.5)")


def test_an_error_about_another_framework_does_not_skip_a_framework_test() -> None:
    cpu_tf = FrameworkBuild(name="tensorflow", version="2.18.0", variant="cpu")
    cuda_torch = FrameworkBuild(name="torch", version="2.11.0+cu130", variant="cuda", cuda="13.0")
    snapshot = dataclasses.replace(_snapshot(H200), frameworks=(cuda_torch, cpu_tf))
    report = _report(snapshot)
    assert [f.severity.value for f in report.findings if f.code == "cpu-only-build"] == ["info"]  # torch uses the GPU
    assert unmet(GpuRequirement(framework="torch"), report) is None
    assert unmet(GpuRequirement(), report) is None
    assert unmet(GpuRequirement(framework="tensorflow"), report) == (
        "needs a CUDA build of tensorflow; tensorflow 2.18.0 is a CPU-only build")


def test_closest_marker_wins_argument_by_argument() -> None:
    markers: List[Tuple[Tuple[Any, ...], Dict[str, Any]]] = [((), {"min_cc": "9.0"}), ((), {"count": 2, "min_cc": 8})]
    # the function's own marker first, then its class's
    assert parse_requirement(markers) == GpuRequirement(count=2, min_cc=(9, 0))
    with pytest.raises(RequirementError):
        parse_requirement([((), {"count": True})])

