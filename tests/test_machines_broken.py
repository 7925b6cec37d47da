"""Four composed machines with broken or unusual stacks: a container without its GPU, a conda
env that is its own CUDA toolkit, two toolkits and an old cuDNN on LD_LIBRARY_PATH, and a driver
upgraded without a reboot. What is real and what composed in each: its README.md."""

from __future__ import annotations

import os
from typing import Callable, List, Tuple

import pytest

from cudadoctor.cli.app import run
from cudadoctor.model import ErrorKind, Library, Snapshot
from cudadoctor.probes import collect
from cudadoctor.host.recorded import RecordedHost

DOCKER = "docker-nogpu-torch-cu126"
CONDA = "conda-forge-pytorch-cuda12"
TWO_TOOLKITS = "two-toolkits-ldpath-cudnn8-shadow"
MISMATCH = "nvml-mismatch-after-upgrade"
MACHINES = (DOCKER, CONDA, TWO_TOOLKITS, MISMATCH)

CONDA_PREFIX = "/home/alice/miniforge3/envs/train"
BOB_SITE = "/home/bob/venvs/torch/lib/python3.10/site-packages"



@pytest.fixture
def probe(load_machine: Callable[[str], RecordedHost]) -> Callable[[str], Snapshot]:
    """``probe(name)``: the Snapshot the probes gather on a recorded machine."""

    def get(name: str) -> Snapshot:
        return collect(load_machine(name))

    return get


HEALTHY = {CONDA, TWO_TOOLKITS}  # two-toolkits has warnings only; the others have an error: exit 1


def check_text(machines_dir: str, name: str, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    code = run(["check", "--machine", os.path.join(machines_dir, name), "--no-color", *extra])
    out, err = capsys.readouterr()
    assert code == (0 if name in HEALTHY else 1), err
    return out


def library(snap: Snapshot, name: str) -> Library:
    lib = snap.library(name)
    assert lib is not None, f"{name} not found"
    return lib


def details(snap: Snapshot, probe_name: str) -> List[Tuple[ErrorKind, str]]:
    return [(e.kind, e.detail) for e in snap.errors_of(probe_name)]


@pytest.mark.parametrize("name", MACHINES)
def test_every_command_the_probes_run_was_recorded(name: str, load_machine: Callable[[str], RecordedHost]) -> None:
    host = load_machine(name)
    collect(host)
    assert host.unrecorded == []


# ---------------------------------------------------------------------------- docker, no --gpus


def test_docker_without_gpus_has_no_device_nodes_and_no_user_space_driver(probe: Callable[[str], Snapshot]) -> None:
    snap = probe(DOCKER)
    assert snap.host is not None and snap.host.container == "docker"
    driver = snap.driver
    assert driver is not None
    assert driver.device_nodes == ()
    assert driver.nvml_error == "NVML_ERROR_LIBRARY_NOT_FOUND"
    assert driver.driver_version is None and driver.cuda_driver_version is None
    # procfs is the host kernel's, and Docker does not mask /proc/driver: the host's module shows.
    assert (driver.loaded, driver.kernel_module_version, driver.source) == (True, "550.120", "proc")
    assert snap.library("libcuda") is None and snap.library("libnvidia-ml") is None
    assert "NVIDIA_VISIBLE_DEVICES" not in (snap.env or {})


def test_docker_without_gpus_says_why_nvml_and_nvidia_smi_are_missing(probe: Callable[[str], Snapshot]) -> None:
    snap = probe(DOCKER)
    assert details(snap, "driver") == [
        (ErrorKind.NOT_INSTALLED,
         "NVML: libnvidia-ml.so.1 not found (no NVIDIA driver installed, or not mounted into this container)"),
        (ErrorKind.NOT_INSTALLED, "nvidia-smi not found"),
    ]
    assert [e.probe for e in snap.errors] == ["driver", "driver"]


def test_docker_without_gpus_still_sees_the_hosts_gpu_on_the_pci_bus(probe: Callable[[str], Snapshot]) -> None:
    snap = probe(DOCKER)
    assert snap.gpus_source == "pci"
    assert [(g.pci_bus_id, g.pci_device_id, g.name, g.source) for g in snap.gpus or ()] == [
        ("0000:01:00.0", "0x2204", None, "pci")  # its HDMI audio function (class 0x0403) is not a GPU
    ]


def test_docker_torch_cu126_brings_its_own_cuda_libraries(probe: Callable[[str], Snapshot]) -> None:
    snap = probe(DOCKER)
    torch = snap.framework("torch")
    assert torch is not None
    assert (torch.version, torch.variant, torch.cuda, torch.cudnn, torch.nccl) == (
        "2.6.0+cu126", "cuda", "12.6", "9.5.1.17", "2.21.5")
    cudnn = library(snap, "libcudnn")
    assert [(c.path, c.version, c.found_via) for c in cudnn.copies] == [(
        "/opt/venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9", "9.5.1.17",
        "pip:nvidia-cudnn-cu12==9.5.1.17",
    )]
    assert snap.toolkits == () and snap.compilers == ()
    assert snap.python is not None and (snap.python.env_kind, snap.python.version) == ("venv", "3.11.11")


def test_docker_check_text(machines_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = check_text(machines_dir, DOCKER, capsys)
    assert "docker container" in out
    assert "NVML: libnvidia-ml.so.1 not found" in out
    assert "(NVML_ERROR_LIBRARY_NOT_FOUND)" in out
    assert "kernel module 550.120 (proprietary)" in out
    assert "nvidia-smi not found [not_installed]" in out
    assert "torch 2.6.0+cu126  CUDA 12.6 · cuDNN 9.5.1.17 · NCCL 2.21.5" in out
    assert "no CUDA toolkit found" in out


# ---------------------------------------------------------------------------- conda-forge


def test_conda_env_is_the_target_and_lists_conda_forge_packages(probe: Callable[[str], Snapshot]) -> None:
    snap = probe(CONDA)
    assert snap.python is not None
    assert (snap.python.env_kind, snap.python.env_name, snap.python.version) == ("conda", "train", "3.11.9")
    conda = {p.name: p for p in snap.packages or () if p.installer == "conda"}
    assert conda["pytorch"].version == "2.5.1"
    assert (conda["pytorch"].build or "").startswith("cuda126_py311")
    assert conda["pytorch"].channel == "conda-forge"
    assert (conda["cudnn"].version, conda["nccl"].version, conda["cuda-version"].version) == ("9.3.0.75", "2.23.4.1", "12.6")
    assert conda["cuda-nvcc"].version == "12.6.85"
    assert conda["python"].build == "hb806964_0_cpython"
    assert snap.errors == ()


def test_conda_env_with_cuda_nvcc_is_a_toolkit(probe: Callable[[str], Snapshot]) -> None:
    snap = probe(CONDA)
    assert [tk.root for tk in snap.toolkits or ()] == [CONDA_PREFIX]
    toolkit = snap.active_toolkit
    assert toolkit is not None
    assert (toolkit.version, toolkit.version_source, toolkit.nvcc) == ("12.6.85", "nvcc", f"{CONDA_PREFIX}/bin/nvcc")
    assert toolkit.found_via == (f"PATH ({CONDA_PREFIX}/bin/nvcc)", "conda")


def test_conda_libraries_come_from_the_env_and_the_driver_from_the_system(probe: Callable[[str], Snapshot]) -> None:
    snap = probe(CONDA)
    cudnn = library(snap, "libcudnn").copies
    assert [(c.path, c.version, c.found_via) for c in cudnn] == [(f"{CONDA_PREFIX}/lib/libcudnn.so.9", "9.3.0", "conda")]
    assert library(snap, "libnccl").copies[0].version == "2.23.4"
    libcuda = library(snap, "libcuda").copies[0]
    assert (libcuda.version, libcuda.found_via) == ("560.35.03", "ldconfig")
    torch = snap.framework("torch")
    assert torch is not None
    assert (torch.version, torch.variant, torch.cuda) == ("2.5.1", "cuda", "12.6")
    assert torch.details["conda_build"] == "pytorch-2.5.1-cuda126_py311hd1f8c6a_303"


def test_conda_machine_driver_and_gpu(probe: Callable[[str], Snapshot]) -> None:
    snap = probe(CONDA)
    assert snap.driver is not None
    assert (snap.driver.driver_version, snap.driver.cuda_driver_version, snap.driver.source) == ("560.35.03", "12.6", "nvml")
    assert snap.driver.kernel_module_version == "560.35.03"
    (gpu,) = snap.gpus or ()
    assert (gpu.name, gpu.compute_capability, gpu.pci_device_id, gpu.memory_total_mib) == (
        "NVIDIA RTX A6000", "8.6", "0x2230", 49140)
    assert gpu.ecc_mode == "disabled" and gpu.mig_mode is None


def test_conda_check_text(machines_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = check_text(machines_dir, CONDA, capsys)
    assert f"target {CONDA_PREFIX}/bin/python (3.11.9, conda train)" in out
    assert "560.35.03 (supports CUDA ≤ 12.6), read through nvml" in out
    assert "NVIDIA RTX A6000 · sm_86 (compute capability 8.6)" in out
    assert f"CUDA 12.6.85 at {CONDA_PREFIX} [active] · via PATH ({CONDA_PREFIX}/bin/nvcc), conda" in out
    assert f"libcudnn 9.3.0  {CONDA_PREFIX}/lib/libcudnn.so.9 (conda)" in out
    assert "torch 2.5.1  CUDA 12.6" in out
    assert "Could not read" not in out


# ---------------------------------------------------------------------------- two toolkits


def test_cuda_home_wins_over_the_nvcc_on_path(probe: Callable[[str], Snapshot]) -> None:
    snap = probe(TWO_TOOLKITS)
    toolkits = {tk.root: tk for tk in snap.toolkits or ()}
    assert sorted(toolkits) == ["/usr/local/cuda-11.8", "/usr/local/cuda-12.4"]
    new, old = toolkits["/usr/local/cuda-12.4"], toolkits["/usr/local/cuda-11.8"]
    assert snap.active_toolkit == new
    assert (new.version, new.version_source) == ("12.4.1", "version.json")
    assert new.found_via == ("CUDA_HOME", "/usr/local/cuda", "/usr/local/cuda-12", "/usr/local/cuda-12.4")
    # CUDA 11.8's version.json says 11.8.20220929 (a date): the release comes from its nvcc component.
    assert (old.version, old.active) == ("11.8.89", False)
    assert old.found_via[0] == "PATH (/usr/local/cuda-11.8/bin/nvcc)"


def test_ld_library_path_puts_cudnn8_before_the_wheels_cudnn9(probe: Callable[[str], Snapshot]) -> None:
    snap = probe(TWO_TOOLKITS)
    assert [(c.path, c.version, c.found_via) for c in library(snap, "libcudnn").copies] == [
        ("/opt/cudnn8/lib/libcudnn.so.8", "8.9.7", "LD_LIBRARY_PATH"),
        (f"{BOB_SITE}/nvidia/cudnn/lib/libcudnn.so.9", "9.1.0.70", "pip:nvidia-cudnn-cu12==9.1.0.70"),
    ]
    torch = snap.framework("torch")
    assert torch is not None and (torch.version, torch.cuda, torch.cudnn) == ("2.4.1+cu124", "12.4", "9.1.0.70")


def test_ld_library_path_shadows_sonames_both_toolkits_share(probe: Callable[[str], Snapshot]) -> None:
    snap = probe(TWO_TOOLKITS)
    cusolver = library(snap, "libcusolver").copies
    assert [(c.path, c.version, c.found_via) for c in cusolver] == [
        ("/usr/local/cuda-11.8/lib64/libcusolver.so.11", "11.4.1.48", "LD_LIBRARY_PATH"),
        ("/usr/local/cuda/targets/x86_64-linux/lib/libcusolver.so.11", "11.6.1.9", "ldconfig"),
        (f"{BOB_SITE}/nvidia/cusolver/lib/libcusolver.so.11", "11.6.0.99", "pip:nvidia-cusolver-cu12==11.6.0.99"),
    ]
    # The cache's /usr/local/cuda-11/... entry is the same file as LD_LIBRARY_PATH's: listed once.
    cudart = library(snap, "libcudart").copies
    assert [c.version for c in cudart] == ["11.8.89", "12.4.127", "12.4.99"]  # the last from its wheel
    assert cudart[1].realpath == "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12.4.127"


def test_two_toolkits_machine_is_otherwise_healthy(probe: Callable[[str], Snapshot]) -> None:
    snap = probe(TWO_TOOLKITS)
    assert snap.errors == ()
    assert snap.driver is not None and (snap.driver.driver_version, snap.driver.cuda_driver_version) == ("550.120", "12.4")
    (gpu,) = snap.gpus or ()
    assert (gpu.name, gpu.compute_capability, gpu.serial, gpu.ecc_mode) == ("NVIDIA GeForce RTX 4090", "8.9", None, None)
    assert [(c.name, c.version) for c in snap.compilers or ()] == [("gcc", "11.4.0"), ("g++", "11.4.0")]


def test_two_toolkits_check_text(machines_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = check_text(machines_dir, TWO_TOOLKITS, capsys, "-v")
    assert "CUDA 12.4.1 at /usr/local/cuda-12.4 [active] · via CUDA_HOME" in out
    assert "CUDA 11.8.89 at /usr/local/cuda-11.8 · via PATH (/usr/local/cuda-11.8/bin/nvcc)" in out
    assert "libcudnn 8.9.7  /opt/cudnn8/lib/libcudnn.so.8 (LD_LIBRARY_PATH)" in out
    assert f"also 9.1.0.70  {BOB_SITE}/nvidia/cudnn/lib/libcudnn.so.9 (pip:nvidia-cudnn-cu12==9.1.0.70)" in out
    assert "CUDA_HOME=/usr/local/cuda-12.4" in out
    assert "LD_LIBRARY_PATH=/usr/local/cuda-11.8/lib64:/opt/cudnn8/lib" in out
    assert "torch 2.4.1+cu124  CUDA 12.4 · cuDNN 9.1.0.70 · NCCL 2.20.5" in out


# ---------------------------------------------------------------------------- NVML mismatch


def test_mismatch_is_recorded_as_data_not_as_a_crash(probe: Callable[[str], Snapshot]) -> None:
    snap = probe(MISMATCH)
    driver = snap.driver
    assert driver is not None
    assert driver.nvml_error == "NVML_ERROR_LIB_RM_VERSION_MISMATCH"
    assert (driver.loaded, driver.kernel_module_version, driver.source) == (True, "535.183.01", "proc")
    assert driver.driver_version is None  # neither NVML nor nvidia-smi could say it
    assert "/dev/nvidia0" in driver.device_nodes


def test_mismatch_libraries_on_disk_are_the_new_driver(probe: Callable[[str], Snapshot]) -> None:
    snap = probe(MISMATCH)
    for name, real in (("libnvidia-ml", "libnvidia-ml.so.550.127.05"), ("libcuda", "libcuda.so.550.127.05")):
        (copy,) = library(snap, name).copies
        assert (copy.path, copy.version, copy.found_via) == (f"/usr/lib/x86_64-linux-gnu/{name}.so.1", "550.127.05", "ldconfig")
        assert copy.realpath == f"/usr/lib/x86_64-linux-gnu/{real}"


def test_mismatch_errors_keep_nvml_and_nvidia_smi_words(probe: Callable[[str], Snapshot]) -> None:
    snap = probe(MISMATCH)
    (nvml, smi) = details(snap, "driver")
    assert nvml == (ErrorKind.ERROR, "NVML: driver/library version mismatch (the kernel module and libnvidia-ml differ)")
    assert smi[0] is ErrorKind.ERROR
    assert smi[1].startswith("nvidia-smi ") and "exited with 18: Failed to initialize NVML: Driver/library version mismatch" in smi[1]
    assert snap.errors_of("gpus") == ()


def test_mismatch_gpu_is_known_only_from_the_pci_bus(probe: Callable[[str], Snapshot]) -> None:
    snap = probe(MISMATCH)
    assert snap.gpus_source == "pci"
    assert [(g.pci_bus_id, g.pci_device_id, g.compute_capability) for g in snap.gpus or ()] == [
        ("0000:17:00.0", "0x20b5", None)
    ]
    torch = snap.framework("torch")
    assert torch is not None
    assert (torch.version, torch.distribution, torch.cuda, torch.cudnn) == ("2.5.1+cu124", "torch==2.5.1", "12.4", "9.1.0.70")


def test_mismatch_check_text(machines_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = check_text(machines_dir, MISMATCH, capsys)
    assert "user-space driver unreadable; the kernel module is loaded" in out
    assert "NVML: driver/library version mismatch" in out
    assert "(NVML_ERROR_LIB_RM_VERSION_MISMATCH)" in out
    assert "kernel module 535.183.01 (proprietary)" in out
    assert "libnvidia-ml 550.127.05  /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 (ldconfig)" in out
    assert "exited with 18: Failed to initialize NVML: Driver/library version mismatch [error]" in out


def test_conda_forge_torch_takes_cudnn_and_nccl_from_the_env(probe: Callable[[str], Snapshot]) -> None:
    """conda-forge's build string names no cuDNN: the env's cudnn and nccl packages do."""
    torch = probe(CONDA).framework("torch")
    assert torch is not None
    assert (torch.variant, torch.cuda, torch.cudnn, torch.nccl) == ("cuda", "12.6", "9.3.0.75", "2.23.4.1")
