"""The integrations as a user meets them: the wheel built from this checkout, installed offline
into a fresh virtual environment, used from a folder outside the source tree. The library API, the
excepthook, `cudadoctor run`, the pytest plugin (its entry point) and the NCCL check's entry."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest

NO_KERNEL = "RuntimeError: CUDA error: no kernel image is available for execution on the device"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, wheelhouse: Tuple[Path, Path]) -> Iterator[Path]:
    house, wheel = wheelhouse
    root = tmp_path_factory.mktemp("installed") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True, timeout=120)
    pip = subprocess.run([str(root / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", "--find-links",
                          str(house), str(wheel), "pytest"], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    yield root


def _env() -> Dict[str, str]:
    drop = ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PYTHONHOME", "CUDADOCTOR_DATA_DIR", "PYTEST_ADDOPTS",
            "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    return {k: v for k, v in os.environ.items() if k not in drop}


def _run(venv: Path, argv: List[str], cwd: Path, stdin: str = "") -> "subprocess.CompletedProcess[str]":
    return subprocess.run(argv, cwd=str(cwd), env=_env(), input=stdin, capture_output=True, text=True, timeout=240)


def test_the_package_and_its_data_come_from_the_wheel(venv: Path, tmp_path: Path) -> None:
    python = str(venv / "bin" / "python")
    proc = _run(venv, [python, "-c", "import cudadoctor; print(cudadoctor.__file__)"], tmp_path)
    assert proc.stdout.strip().startswith(str(venv)), proc.stdout + proc.stderr
    version = _run(venv, [str(venv / "bin" / "cudadoctor"), "--version"], tmp_path)
    assert version.returncode == 0 and "shipped" in version.stdout, version.stdout + version.stderr


def test_the_library_api(venv: Path, tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import json, cudadoctor
        e = cudadoctor.explain(RuntimeError({NO_KERNEL.split(': ', 1)[1]!r}), check=False)
        print("headline:", e.headline())
        findings = cudadoctor.diagnose({{"driver_version": "470.82.01", "gpu_name": "RTX 3060", "torch_version": "2.5.1+cu124"}})
        print("codes:", ",".join(sorted(f.code for f in findings)))
        report = json.loads(cudadoctor.report("json"))
        print("report:", report["format"], bool(report["redaction"]), report["node"].startswith("host-"))
        print("snapshot:", type(cudadoctor.collect()).__name__)
    """)
    proc = _run(venv, [str(venv / "bin" / "python"), "-c", script], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = dict(line.split(": ", 1) for line in proc.stdout.splitlines())
    assert "no-kernel-image" in lines["headline"] or "kernel image" in lines["headline"], proc.stdout
    assert "driver-too-old-for-build" in lines["codes"].split(","), proc.stdout
    assert lines["report"] == "cudadoctor.report True True"
    assert lines["snapshot"] == "Snapshot"


def test_the_excepthook_explains_an_uncaught_gpu_error(venv: Path, tmp_path: Path) -> None:
    script = ("import cudadoctor; cudadoctor.install_excepthook(check=False); "
              f"raise RuntimeError({NO_KERNEL.split(': ', 1)[1]!r})")
    proc = _run(venv, [str(venv / "bin" / "python"), "-c", script], tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.index("Traceback") < proc.stderr.index("cudadoctor: this looks like"), proc.stderr


def test_run_passes_the_command_through_and_diagnoses_a_gpu_error(venv: Path, tmp_path: Path) -> None:
    cudadoctor, python = str(venv / "bin" / "cudadoctor"), str(venv / "bin" / "python")
    ok = _run(venv, [cudadoctor, "run", "--", python, "-c", "import sys; print(sys.stdin.read().upper())"],
              tmp_path, stdin="abc")
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "ABC\n", "")
    failing = f"import sys; sys.stderr.write({NO_KERNEL!r} + '\\n'); sys.exit(3)"
    proc = _run(venv, [cudadoctor, "run", "--", python, "-c", failing], tmp_path)
    assert proc.returncode == 3
    assert proc.stderr.startswith(NO_KERNEL + "\n"), proc.stderr
    assert "failed (exit 3) with a known GPU error" in proc.stderr, proc.stderr


def test_the_pytest_plugin_is_installed_and_off_until_asked(venv: Path, tmp_path: Path) -> None:
    (tmp_path / "test_gpu.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.mark.gpu(min_cc="8.0")
        def test_needs_a_gpu():
            pass
    """))
    python = str(venv / "bin" / "python")
    off = _run(venv, [python, "-m", "pytest", "-p", "no:cacheprovider", "-rs"], tmp_path)
    assert off.returncode == 0 and "cudadoctor:" not in off.stdout and "1 passed" in off.stdout, off.stdout
    on = _run(venv, [python, "-m", "pytest", "-p", "no:cacheprovider", "-p", "cudadoctor", "-rs"], tmp_path)
    assert on.returncode == 0, on.stdout + on.stderr
    assert any(line.startswith("cudadoctor: ") for line in on.stdout.splitlines()), on.stdout
    assert "no usable GPU stack" in on.stdout and "1 skipped" in on.stdout, on.stdout


def test_the_nccl_check_is_a_module_of_the_wheel(venv: Path, tmp_path: Path) -> None:
    proc = _run(venv, [str(venv / "bin" / "python"), "-m", "cudadoctor.smoke.nccl", "--help"], tmp_path)
    assert proc.returncode == 0 and "torchrun" in proc.stdout, proc.stdout + proc.stderr
