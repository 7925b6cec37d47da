"""The build checks as a user meets them: recorded machines and the facts of bug reports."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List

import pytest

from cudadoctor.checks import run_checks
from cudadoctor.checks.builds import CHECKS
from cudadoctor.model.facts import snapshot_from_facts
from cudadoctor.matrix import Matrix
from cudadoctor.data.source import default_matrix
from cudadoctor.model import Category, Finding, Gpu, Library, LibraryCopy, Package, Severity, Snapshot
from cudadoctor.probes import collect
from cudadoctor.host.recorded import RecordedHost

Loader = Callable[[str], RecordedHost]
E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO

RTX4090 = {"os": "linux", "python": "3.11", "gpu_name": "NVIDIA GeForce RTX 4090", "driver_version": "550.54.14"}


@pytest.fixture(scope="module")
def m() -> Matrix:
    return default_matrix()


def check(m: Matrix, snap: Snapshot) -> List[Finding]:
    return list(run_checks(snap, m, CHECKS))


def facts(m: Matrix, **values: Any) -> List[Finding]:
    return check(m, snapshot_from_facts(values))


def one(found: List[Finding], code: str) -> Finding:
    hits = [f for f in found if f.code == code]
    assert len(hits) == 1, [(f.code, f.title) for f in found]
    return hits[0]


def commands(f: Finding) -> List[str]:
    return [c.run for c in f.fix.commands] if f.fix else []


def codes(found: List[Finding]) -> List[str]:
    return [f.code for f in found]


# --------------------------------------------------------------------------- recorded machines


@pytest.mark.parametrize("name", [
    "h200-driver580-torch211-cu130", "dgx-h100x8-driver570-torch27-cu128", "wsl2-rtx4090-driver566",
    "conda-forge-pytorch-cuda12", "two-toolkits-ldpath-cudnn8-shadow", "docker-nogpu-torch-cu126",
    "dev-debian12-cuda13-nodriver-torch213cpu", "nvml-mismatch-after-upgrade",
])
def test_healthy_machines_stay_silent(m: Matrix, load_machine: Loader, name: str) -> None:
    assert check(m, collect(load_machine(name))) == []


def test_the_laptop_driver_is_too_old_for_its_torch(m: Matrix, load_machine: Loader) -> None:
    found = check(m, collect(load_machine("laptop-rtx3060-driver470-torch25-cu124")))
    assert codes(found) == ["driver-too-old-for-build"]
    f = found[0]
    assert (f.severity, f.category) == (E, Category.DRIVER_TOO_OLD)
    assert f.why.startswith("torch 2.5.1+cu124 needs a driver that supports CUDA 12.x (>= 525.60.13); "
                            "this driver is 470.82.01 (CUDA 11.4).")
    assert "550.54.14" in f.why and "found version 11040" in f.why
    assert f.fix is not None and "Upgrade the NVIDIA driver to 550.54.14 or newer" in f.fix.text
    assert "install branch R580" in f.fix.text
    assert commands(f)[0].startswith("sudo apt install nvidia-driver-580-open")
    assert commands(f)[1].startswith("pip uninstall -y torch torchvision torchaudio")
    assert commands(f)[2] == ("pip install torch==2.5.1 torchvision==0.20.1 torchaudio==2.5.1 "
                              "--index-url https://download.pytorch.org/whl/cu118")
    assert "cuda_minor_compat.json#12" in f.source and "cuda_toolkits.json#12.4.0" in f.source


# --------------------------------------------------------------------------- CPU-only builds


def test_cpu_torch_next_to_a_gpu(m: Matrix) -> None:
    found = facts(m, **RTX4090, torch_version="2.5.1+cpu", torch_cuda=None, torchvision_version="0.20.1+cpu")
    f = one(found, "cpu-only-build")
    assert (f.severity, f.category) == (E, Category.CPU_ONLY_BUILD)
    assert "torch 2.5.1+cpu is a CPU-only build" in f.title and "RTX 4090" in f.title
    assert "torch.cuda.is_available() is False" in f.why
    assert commands(f) == ["pip uninstall -y torch torchvision",
                           "pip install torch==2.5.1 torchvision==0.20.1 --index-url https://download.pytorch.org/whl/cu124"]


def test_cpu_torch_without_a_gpu_or_driver_is_fine(m: Matrix) -> None:
    assert facts(m, os="linux", python="3.12", gpu_count=0, torch_version="2.5.1+cpu", torch_cuda=None) == []
    assert facts(m, os="linux", python="3.12", gpu_name="NVIDIA GeForce RTX 4090", driver_loaded=False,
                 torch_version="2.5.1+cpu", torch_cuda=None) == []


def test_windows_pypi_torch_is_cpu_only(m: Matrix) -> None:
    f = one(facts(m, os="windows", python="3.12", gpu_name="NVIDIA GeForce RTX 4090", driver_version="566.36",
                  torch_version="2.5.1", torch_cuda=None), "cpu-only-build")
    assert "plain 'pip install torch' on windows-x86_64 gets the CPU build" in f.why
    assert commands(f)[-1].endswith("--index-url https://download.pytorch.org/whl/cu124")


@pytest.mark.parametrize("values, title, command", [
    ({"tensorflow_version": "2.15.0", "tensorflow_cuda": None}, "tensorflow 2.15.0 is a CPU-only build",
     'pip install "tensorflow[and-cuda]==2.15.*"'),
    ({"jax_version": "0.4.30", "jaxlib_version": "0.4.30", "jax_cuda_plugin": None}, "jax 0.4.30 is a CPU-only build",
     'pip install "jax[cuda12]==0.4.30"'),
    ({"onnxruntime_package": "onnxruntime==1.20.1"}, "onnxruntime 1.20.1 is a CPU-only build",
     'pip install "onnxruntime-gpu==1.20.1"'),
])
def test_cpu_builds_of_other_frameworks(m: Matrix, values: Dict[str, Any], title: str, command: str) -> None:
    f = one(facts(m, **RTX4090, **values), "cpu-only-build")
    assert title in f.title and command in commands(f)


# --------------------------------------------------------------------------- driver vs the build's CUDA


def test_minor_version_compat_with_sass_is_a_warning(m: Matrix) -> None:
    found = facts(m, **dict(RTX4090, driver_version="535.104.05"), torch_version="2.6.0+cu124", torch_cuda="12.4")
    f = one(found, "driver-minor-version-compat")
    assert (f.severity, f.category) == (W, Category.DRIVER_TOO_OLD)
    assert "own minimum driver is 550.54.14" in f.why and ">= 525.60.13" in f.why
    assert "Every GPU has SASS" in f.why and "cudaErrorCallRequiresNewerDriver" in f.why
    # R550 is past its end of life in the data: the oldest supported production/LTS branch at or
    # above it, with Ada's default modules (open from R560), on Ubuntu and the RHEL family
    assert "install branch R580 (a long-term-support branch" in (f.fix.text if f.fix else "")
    assert commands(f) == ["sudo apt install nvidia-driver-580-open    # Ubuntu; then reboot",
                           "sudo dnf module enable nvidia-driver:580-open",
                           "sudo dnf install nvidia-open    # RHEL/Rocky/Alma; then reboot"]


def test_minor_version_compat_that_needs_ptx_jit_is_an_error(m: Matrix) -> None:
    found = facts(m, os="linux", python="3.11", gpu_name="NVIDIA H100 80GB HBM3", driver_version="550.54.14",
                  torch_version="2.8.0+cu128", torch_cuda="12.8", torch_arch_list="sm_80 compute_80")
    f = one(found, "driver-too-old-for-ptx-jit")
    assert f.severity is E and "sm_90" in f.title
    assert "unsupported toolchain" in f.why and "570.26" in (f.fix.text if f.fix else "")
    assert one(found, "arch-ptx-jit").severity is INFO


def test_a_native_driver_is_silent(m: Matrix) -> None:
    assert facts(m, **RTX4090, torch_version="2.5.1+cu124", torch_cuda="12.4") == []


def test_a_kepler_gpu_is_not_told_to_upgrade_past_its_last_branch(m: Matrix) -> None:
    found = facts(m, os="linux", python="3.10", gpu_name="Tesla K80", driver_version="470.82.01",
                  torch_version="2.5.1+cu124", torch_cuda="12.4")
    f = one(found, "driver-too-old-for-build")
    assert f.fix is not None and "up to driver branch R470 only" in f.fix.text
    assert not any(c.startswith("sudo apt") for c in commands(f))
    assert commands(f)[-1].endswith("whl/cu118")


# --------------------------------------------------------------------------- kernels for every GPU


def test_rtx_5090_with_a_cu124_build(m: Matrix) -> None:
    f = one(facts(m, os="linux", python="3.11", gpu_name="NVIDIA GeForce RTX 5090", driver_version="570.124.06",
                  torch_version="2.5.1+cu124", torch_cuda="12.4"), "arch-unsupported")
    assert (f.severity, f.category) == (E, Category.ARCH_UNSUPPORTED)
    assert f.title == "torch 2.5.1+cu124 cannot run on NVIDIA GeForce RTX 5090 (sm_120)"
    assert "sm_50, sm_60, sm_70, sm_75, sm_80, sm_86, sm_90 and PTX for none" in f.why
    assert "no kernel image is available" in f.why and "exist from 2.7.0+cu128" in f.why
    assert "--index-url https://download.pytorch.org/whl/cu128" in commands(f)[-1]


def test_the_snapshots_own_arch_list_wins(m: Matrix) -> None:
    found = facts(m, os="linux", python="3.11", gpu_name="NVIDIA GeForce RTX 5090", driver_version="570.124.06",
                  torch_version="2.7.1+cu128", torch_cuda="12.8", torch_arch_list=["sm_80", "sm_90"])
    f = one(found, "arch-unsupported")
    assert "torch.cuda.get_arch_list() of this build" in f.why


def test_gtx_1080_with_a_cu128_build(m: Matrix) -> None:
    f = one(facts(m, os="linux", python="3.12", gpu_name="NVIDIA GeForce GTX 1080", driver_version="580.95.05",
                  torch_version="2.8.0+cu128", torch_cuda="12.8"), "arch-unsupported")
    assert "sm_61" in f.title and "The newest torch build with SASS for sm_61" in f.why
    assert commands(f)[-1] == "pip install torch==2.8.0 --index-url https://download.pytorch.org/whl/cu126"


def test_a_heterogeneous_box_names_only_the_unsupported_gpu(m: Matrix) -> None:
    snap = snapshot_from_facts(dict(RTX4090, driver_version="580.95.05", torch_version="2.8.0+cu128", torch_cuda="12.8"))
    snap = dataclasses.replace(snap, gpus=(Gpu(0, "NVIDIA GeForce RTX 4090", compute_capability="8.9"),
                                           Gpu(1, "NVIDIA GeForce GTX 1080", compute_capability="6.1")))
    f = one(check(m, snap), "arch-unsupported")
    assert f.title == "torch 2.8.0+cu128 cannot run on GPU 1 (NVIDIA GeForce GTX 1080, sm_61)"
    assert "RTX 4090" not in f.title
    assert commands(f)[-1].startswith("export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0")


def test_ptx_only_is_info(m: Matrix) -> None:
    f = one(facts(m, os="linux", python="3.11", gpu_name="NVIDIA GeForce RTX 5090", driver_version="570.124.06",
                  torch_version="2.7.0+cu128", torch_cuda="12.8", torch_arch_list="sm_80 sm_90 compute_90"), "arch-ptx-jit")
    assert f.severity is INFO and "compute_90" in f.why and "slow" in f.why


@pytest.mark.parametrize("values, gpu, words", [
    ({"tensorflow_version": "2.17.0", "tensorflow_cuda": "12.3"}, "NVIDIA GeForce GTX 970", "compute capability 6.0"),
    ({"cupy_package": "cupy-cuda11x==14.0.0"}, "Tesla K80", "compute capability 5.0"),
])
def test_minimum_compute_capability_of_other_frameworks(m: Matrix, values: Dict[str, Any], gpu: str, words: str) -> None:
    f = one(facts(m, **dict(RTX4090, gpu_name=gpu, driver_version="470.82.01" if "K80" in gpu else "550.54.14"),
                  **values), "arch-unsupported")
    assert words in f.why and gpu in f.title and commands(f)


def test_supported_gpus_are_silent(m: Matrix) -> None:
    assert facts(m, **RTX4090, torch_version="2.5.1+cu124", torch_cuda="12.4", tensorflow_version="2.17.0",
                 tensorflow_cuda="12.3") == []


# --------------------------------------------------------------------------- Python wheels


def test_python_without_wheels_is_a_warning(m: Matrix) -> None:
    f = one(facts(m, **dict(RTX4090, python="3.14.0"), torch_version="2.5.1+cu124", torch_cuda="12.4"),
            "python-unsupported")
    assert (f.severity, f.category) == (W, Category.PYTHON_UNSUPPORTED)
    assert "Python 3.9–3.13" in f.why and "Python 3.14.0" in f.why
    assert f.fix is not None and "Use Python 3.13" in f.fix.text and "wheels for Python 3.14" in f.fix.text
    assert commands(f)[-1].startswith("pip install torch==")


def test_python_with_wheels_is_silent(m: Matrix, load_machine: Loader) -> None:
    assert "python-unsupported" not in codes(facts(m, **RTX4090, torch_version="2.5.1+cu124", torch_cuda="12.4"))


# --------------------------------------------------------------------------- companions


def test_torchvision_of_another_release(m: Matrix) -> None:
    f = one(facts(m, **RTX4090, torch_version="2.5.1+cu124", torch_cuda="12.4", torchvision_version="0.19.0"),
            "companion-version-mismatch")
    assert (f.severity, f.category) == (E, Category.COMPANION_VERSION_MISMATCH)
    assert "needs torchvision 0.20.1" in f.title and "built for torch 2.4.0" in f.why
    assert commands(f) == ["pip uninstall -y torchvision",
                           "pip install torch==2.5.1 torchvision==0.20.1 --index-url https://download.pytorch.org/whl/cu124"]


def test_companions_of_another_variant(m: Matrix) -> None:
    found = facts(m, **RTX4090, torch_version="2.5.1+cu124", torch_cuda="12.4", torchvision_version="0.20.1+cu121",
                  torchaudio_version="2.5.1+cpu")
    mismatches = [f for f in found if f.code == "companion-version-mismatch"]
    assert [f.severity for f in mismatches] == [W, W]
    assert "CUDA 12.1" in mismatches[0].title and "cpu build" in mismatches[1].title


def test_matching_companions_are_silent(m: Matrix) -> None:
    assert facts(m, **RTX4090, torch_version="2.5.1+cu124", torch_cuda="12.4", torchvision_version="0.20.1+cu124",
                 torchaudio_version="2.5.1+cu124") == []


# --------------------------------------------------------------------------- TensorFlow on native Windows


def test_tensorflow_gpu_on_native_windows(m: Matrix) -> None:
    f = one(facts(m, os="windows", python="3.11", gpu_name="NVIDIA GeForce RTX 4090", driver_version="566.36",
                  tensorflow_version="2.15.0"), "tensorflow-windows-gpu")
    assert (f.severity, f.category) == (E, Category.PLATFORM_UNSUPPORTED)
    assert "2.10" in f.why and any("wsl --install" in c for c in commands(f))


def test_tensorflow_in_wsl_or_2_10_on_windows_is_fine(m: Matrix) -> None:
    assert "tensorflow-windows-gpu" not in codes(facts(m, os="linux", wsl=True, python="3.11",
                                                       gpu_name="NVIDIA GeForce RTX 4090", driver_version="566.36",
                                                       tensorflow_version="2.16.1", tensorflow_cuda="12.3"))
    assert "tensorflow-windows-gpu" not in codes(facts(m, os="windows", python="3.10", gpu_name="NVIDIA GeForce RTX 4090",
                                                       driver_version="566.36", tensorflow_version="2.10.0"))


# --------------------------------------------------------------------------- wrong package variants


def test_cupy_for_cuda_11_on_a_cuda_12_stack(m: Matrix) -> None:
    f = one(facts(m, **RTX4090, cupy_package="cupy-cuda11x==13.3.0", torch_version="2.5.1+cu124", torch_cuda="12.4"),
            "cupy-wrong-cuda-major")
    assert (f.severity, f.category) == (W, Category.WRONG_PACKAGE_VARIANT)
    assert "torch uses CUDA 12" in f.why
    assert commands(f) == ["pip uninstall -y cupy-cuda11x", "pip install cupy-cuda12x==13.3.0"]


def test_cupy_for_a_cuda_major_the_driver_cannot_run(m: Matrix) -> None:
    found = facts(m, **dict(RTX4090, driver_version="570.124.06"), cupy_package="cupy-cuda13x==14.0.0")
    f = one(found, "cupy-wrong-cuda-major")
    assert f.severity is E and "cupy-cuda12x" in f.why
    assert "driver-too-old-for-build" not in codes(found)
    assert commands(f)[-1] == "pip install cupy-cuda12x==14.0.0"


def test_two_cupy_distributions(m: Matrix) -> None:
    f = one(facts(m, **RTX4090, cupy_package="cupy-cuda12x==13.3.0",
                  pip_packages=["cupy-cuda12x==13.3.0", "cupy-cuda11x==13.3.0"]), "cupy-multiple-distributions")
    assert f.severity is E and "cupy-cuda12x, cupy-cuda11x" in f.title
    assert commands(f)[0] == "pip uninstall -y cupy-cuda12x cupy-cuda11x"


def test_jax_plugin_for_a_cuda_major_the_driver_cannot_run(m: Matrix) -> None:
    found = facts(m, os="linux", python="3.12", gpu_name="NVIDIA H100 80GB HBM3", driver_version="570.124.06",
                  jax_version="0.8.0", jaxlib_version="0.8.0", jax_cuda_plugin="jax-cuda13-plugin")
    f = one(found, "jax-plugin-wrong-cuda-major")
    assert (f.severity, f.category) == (E, Category.WRONG_PACKAGE_VARIANT)
    assert ">= 580.65.06" in f.why
    assert commands(f) == ["pip uninstall -y jax-cuda13-plugin", 'pip install "jax[cuda12]==0.8.0"']
    assert "driver-too-old-for-build" not in codes(found)


def test_onnxruntime_for_another_cuda_major_than_torch(m: Matrix) -> None:
    f = one(facts(m, **RTX4090, onnxruntime_package="onnxruntime-gpu==1.20.1", torch_version="2.5.1+cu118",
                  torch_cuda="11.8"), "onnxruntime-wrong-cuda-major")
    assert f.severity is W and "torch uses CUDA 11" in f.title
    assert "onnxruntime-cuda-11" in commands(f)[-1]


def test_onnxruntime_on_the_stacks_major_is_silent(m: Matrix) -> None:
    assert facts(m, **RTX4090, onnxruntime_package="onnxruntime-gpu==1.20.1", torch_version="2.5.1+cu124",
                 torch_cuda="12.4") == []


def _tf(m: Matrix, **changes: Any) -> List[Finding]:
    snap = snapshot_from_facts(dict(RTX4090, tensorflow_version="2.16.1", tensorflow_cuda="12.3",
                                    pip_packages=["tensorflow==2.16.1"]))
    return check(m, dataclasses.replace(snap, **dict({"libraries": ()}, **changes)))


def test_tensorflow_without_and_cuda(m: Matrix) -> None:
    f = one(_tf(m), "tensorflow-without-and-cuda")
    assert (f.severity, f.category) == (E, Category.WRONG_PACKAGE_VARIANT)
    assert "nvidia-cudnn-cu12" in f.why and "cuDNN 8" in f.why
    assert commands(f) == ["pip install 'tensorflow[and-cuda]==2.16.1'"]


@pytest.mark.parametrize("changes", [
    {"packages": (Package("tensorflow", "2.16.1"), Package("nvidia-cudnn-cu12", "8.9.7.29"))},
    {"libraries": (Library("libcudnn", (LibraryCopy("/usr/lib/x86_64-linux-gnu/libcudnn.so.8", "8.9.7"),)),)},
    {"libraries": None},
])
def test_tensorflow_with_its_libraries_or_unknown_is_silent(m: Matrix, changes: Dict[str, Any]) -> None:
    assert "tensorflow-without-and-cuda" not in codes(_tf(m, **changes))


def test_every_code_is_listed_by_its_check() -> None:
    listed = {code for c in CHECKS for code in c.codes}
    assert listed >= {"cpu-only-build", "driver-too-old-for-build", "arch-unsupported", "python-unsupported",
                      "companion-version-mismatch", "tensorflow-windows-gpu", "cupy-wrong-cuda-major",
                      "jax-plugin-wrong-cuda-major", "onnxruntime-wrong-cuda-major", "tensorflow-without-and-cuda"}
