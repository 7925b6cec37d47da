"""Four composed machines with NVIDIA GPUs, as a user of each would see them.

- h200-driver580-torch211-cu130: one H200, R580 open module, torch 2.11 for CUDA 13.0, JAX, CuPy.
- dgx-h100x8-driver570-torch27-cu128: eight H100 behind NVSwitches, all healthy.
- laptop-rtx3060-driver470-torch25-cu124: GeForce laptop on R470 with a CUDA 12.4 torch build.
- wsl2-rtx4090-driver566: WSL2, where the driver lives on the Windows side.

What is real and what is composed in each: tests/machines/<name>/README.md.
"""

from __future__ import annotations

import json
import os
from typing import Callable, Dict, Tuple

import pytest

from cudadoctor.cli.app import run
from cudadoctor.errors import ExitCode
from cudadoctor.model import Snapshot
from cudadoctor.probes import collect
from cudadoctor.host.recorded import RecordedHost

H200 = "h200-driver580-torch211-cu130"
DGX = "dgx-h100x8-driver570-torch27-cu128"
LAPTOP = "laptop-rtx3060-driver470-torch25-cu124"
WSL = "wsl2-rtx4090-driver566"
ALL = (H200, DGX, LAPTOP, WSL)

Loader = Callable[[str], RecordedHost]


def snapshot_of(load_machine: Loader, name: str) -> Snapshot:
    return collect(load_machine(name))


def check_text(machines_dir: str, name: str, capsys: pytest.CaptureFixture[str]) -> Tuple[int, str]:
    """``cudadoctor check --machine`` in-process: the exit code and what it printed."""
    code = run(["check", "--machine", os.path.join(machines_dir, name), "--no-color"])
    out, err = capsys.readouterr()
    assert err == ""
    return code, out


# --------------------------------------------------------------------------- every machine


@pytest.mark.parametrize("name", ALL)
def test_every_command_the_probes_run_was_recorded(load_machine: Loader, name: str) -> None:
    host = load_machine(name)
    collect(host)
    assert host.unrecorded == []


@pytest.mark.parametrize("name", ALL)
def test_nothing_is_unreadable(load_machine: Loader, name: str) -> None:
    """GeForce's NOT_SUPPORTED answers leave fields unknown; they are not probe failures."""
    assert snapshot_of(load_machine, name).errors == ()


@pytest.mark.parametrize("name", ALL)
def test_driver_is_read_through_nvml(load_machine: Loader, name: str) -> None:
    driver = snapshot_of(load_machine, name).driver
    assert driver is not None
    assert (driver.loaded, driver.source, driver.nvml_error) == (True, "nvml", None)


@pytest.mark.parametrize("name", ALL)
def test_the_target_is_a_venv(load_machine: Loader, name: str) -> None:
    py = snapshot_of(load_machine, name).python
    assert py is not None
    assert (py.env_kind, py.implementation, py.is_current) == ("venv", "cpython", True)


EXPECTED_FALLBACK: Dict[str, Tuple[str, str, int]] = {
    H200: ("580.159.03", "13.0", 1),
    DGX: ("570.124.06", "12.8", 8),
    LAPTOP: ("470.82.01", "11.4", 1),
    WSL: ("566.36", "12.7", 1),
}


@pytest.mark.parametrize("name", ALL)
def test_nvidia_smi_recordings_agree_with_nvml(machines_dir: str, name: str) -> None:
    """With NVML taken away, the recorded nvidia-smi answers give the same driver and GPUs."""
    folder = os.path.join(machines_dir, name)
    with open(os.path.join(folder, "machine.json"), encoding="utf-8") as fh:
        data = json.load(fh)
    with_nvml = collect(RecordedHost(data, os.path.join(folder, "fs")))
    data["nvml"] = {"init_error": "NVML_ERROR_LIBRARY_NOT_FOUND"}
    host = RecordedHost(data, os.path.join(folder, "fs"))
    snap = collect(host)
    assert host.unrecorded == []
    assert snap.driver is not None and snap.driver.source == "nvidia-smi"
    assert (snap.driver.driver_version, snap.driver.cuda_driver_version, len(snap.gpus or ())) == EXPECTED_FALLBACK[name]
    assert [(g.index, g.name, g.uuid, g.memory_total_mib) for g in snap.gpus or ()] == [
        (g.index, g.name, g.uuid, g.memory_total_mib) for g in with_nvml.gpus or ()
    ]


# --------------------------------------------------------------------------- H200


def test_h200_driver_is_580_open_module_with_cuda_13(load_machine: Loader) -> None:
    driver = snapshot_of(load_machine, H200).driver
    assert driver is not None
    assert (driver.driver_version, driver.cuda_driver_version) == ("580.159.03", "13.0")
    assert (driver.kernel_module_version, driver.kernel_module_flavor) == ("580.159.03", "open")
    assert driver.nouveau_loaded is False
    assert sorted(driver.device_nodes) == [
        "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia0", "/dev/nvidiactl"
    ]


def test_h200_gpu_is_healthy(load_machine: Loader) -> None:
    (gpu,) = snapshot_of(load_machine, H200).gpus or ()
    assert (gpu.name, gpu.compute_capability, gpu.pci_device_id) == ("NVIDIA H200", "9.0", "0x2335")
    assert gpu.memory_total_mib == 143771
    assert (gpu.pcie_gen_current, gpu.pcie_width_current) == (5, 16)
    assert (gpu.ecc_mode, gpu.ecc_uncorrected_volatile, gpu.ecc_uncorrected_aggregate) == ("enabled", 0, 0)
    assert (gpu.remapped_rows_pending, gpu.remapped_rows_failure) == (False, False)
    assert (gpu.mig_mode, gpu.persistence_mode) == ("disabled", "enabled")
    assert gpu.retired_pages is None  # Hopper has row remapping instead
    assert gpu.clocks_event_reasons == ("gpu_idle",)


def test_h200_torch_is_the_cu130_build_with_its_cudnn_wheel(load_machine: Loader) -> None:
    torch = snapshot_of(load_machine, H200).framework("torch")
    assert torch is not None
    assert (torch.version, torch.variant, torch.cuda) == ("2.11.0+cu130", "cuda", "13.0")
    assert (torch.cudnn, torch.nccl) == ("9.19.0.56", "2.28.9")
    assert torch.details["cudnn_from"] == "nvidia-cudnn-cu13==9.19.0.56"
    assert torch.location == "/opt/torch/.venv/lib/python3.12/site-packages/torch"


def test_h200_jax_and_cupy_are_cuda_13_builds(load_machine: Loader) -> None:
    snap = snapshot_of(load_machine, H200)
    jax, cupy = snap.framework("jax"), snap.framework("cupy")
    assert jax is not None and cupy is not None
    assert (jax.version, jax.variant, jax.cuda) == ("0.11.2", "cuda", "13")
    assert jax.details["plugin"] == "jax-cuda13-plugin==0.11.2"
    assert (cupy.version, cupy.variant, cupy.cuda, cupy.distribution) == ("14.2.0", "cuda", "13", "cupy-cuda13x==14.2.0")


def test_h200_packages_include_the_cuda_13_wheels(load_machine: Loader) -> None:
    packages = {p.name: p.version for p in snapshot_of(load_machine, H200).packages or ()}
    assert packages["torchvision"] == "0.26.0+cu130"
    assert packages["torchaudio"] == "2.11.0+cu130"
    assert packages["triton"] == "3.6.0"
    assert packages["nvidia-cublas"] == "13.1.0.3"
    assert packages["nvidia-cuda-runtime"] == "13.0.96"
    assert packages["jaxlib"] == "0.11.2"
    assert "filelock" not in packages  # nothing to do with CUDA


def test_h200_toolkit_13_0_is_active_through_path(load_machine: Loader) -> None:
    snap = snapshot_of(load_machine, H200)
    toolkit = snap.active_toolkit
    assert toolkit is not None
    assert (toolkit.root, toolkit.version, toolkit.version_source) == ("/usr/local/cuda-13.0", "13.0.2", "version.json")
    assert "/usr/local/cuda" in toolkit.found_via
    assert [t.root for t in snap.toolkits or ()] == ["/usr/local/cuda-13.0"]
    assert [(c.name, c.version) for c in snap.compilers or ()] == [("gcc", "13.3.0"), ("g++", "13.3.0")]


def test_h200_libraries_driver_from_ldconfig_cudnn_from_the_wheel(load_machine: Loader) -> None:
    snap = snapshot_of(load_machine, H200)
    libcuda, cudnn = snap.library("libcuda"), snap.library("libcudnn")
    assert libcuda is not None and cudnn is not None
    assert [(c.path, c.version, c.found_via) for c in libcuda.copies] == [
        ("/lib/x86_64-linux-gnu/libcuda.so.1", "580.159.03", "ldconfig")
    ]
    (copy,) = cudnn.copies
    assert copy.path == "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9"
    assert (copy.version, copy.found_via) == ("9.19.0.56", "pip:nvidia-cudnn-cu13==9.19.0.56")


def test_h200_host_is_ubuntu_24_04_not_wsl(load_machine: Loader) -> None:
    host = snapshot_of(load_machine, H200).host
    assert host is not None
    assert (host.distribution_id, host.glibc, host.wsl, host.container) == ("ubuntu 24.04", "2.39", False, "none")


def test_h200_check_text(machines_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check_text(machines_dir, H200, capsys)
    assert code == ExitCode.OK
    assert "target /opt/torch/.venv/bin/python (3.12.3, venv .venv)" in out
    assert "580.159.03 (supports CUDA ≤ 13.0)" in out
    assert "kernel module 580.159.03 (open)" in out
    assert "0  NVIDIA H200 · sm_90 (compute capability 9.0) · 140 GiB · PCIe gen5 x16" in out
    assert "CUDA 13.0.2 at /usr/local/cuda-13.0 [active]" in out
    assert "torch 2.11.0+cu130  CUDA 13.0 · cuDNN 9.19.0.56 · NCCL 2.28.9" in out
    assert "jax 0.11.2  CUDA 13" in out
    assert "cupy 14.2.0  CUDA 13" in out
    assert "Ubuntu 24.04.3 LTS" in out
    assert "Could not read" not in out


# --------------------------------------------------------------------------- DGX H100 x8


def test_dgx_sees_eight_healthy_h100s(load_machine: Loader) -> None:
    gpus = snapshot_of(load_machine, DGX).gpus or ()
    assert [g.index for g in gpus] == list(range(8))
    assert {(g.name, g.compute_capability, g.pci_device_id, g.memory_total_mib) for g in gpus} == {
        ("NVIDIA H100 80GB HBM3", "9.0", "0x2330", 81559)
    }
    assert len({g.uuid for g in gpus}) == len({g.pci_bus_id for g in gpus}) == 8
    for gpu in gpus:
        assert (gpu.ecc_mode, gpu.ecc_uncorrected_volatile, gpu.ecc_uncorrected_aggregate) == ("enabled", 0, 0)
        assert (gpu.remapped_rows_uncorrectable, gpu.remapped_rows_pending, gpu.remapped_rows_failure) == (0, False, False)
        assert (gpu.mig_mode, gpu.persistence_mode, gpu.power_limit_w) == ("disabled", "enabled", 700.0)
        assert (gpu.pcie_gen_current, gpu.pcie_width_current) == (5, 16)


def test_dgx_gpu_3_runs_warmer_than_the_rest(load_machine: Loader) -> None:
    temps = [g.temperature_c for g in snapshot_of(load_machine, DGX).gpus or ()]
    assert temps[3] == 44
    assert all(t is not None and 32 <= t < 40 for i, t in enumerate(temps) if i != 3)


def test_dgx_driver_and_nvswitch_nodes(load_machine: Loader) -> None:
    driver = snapshot_of(load_machine, DGX).driver
    assert driver is not None
    assert (driver.driver_version, driver.cuda_driver_version, driver.kernel_module_flavor) == ("570.124.06", "12.8", "open")
    nodes = set(driver.device_nodes)
    assert {f"/dev/nvidia{i}" for i in range(8)} <= nodes
    assert {f"/dev/nvidia-nvswitch{i}" for i in range(4)} | {"/dev/nvidia-nvswitchctl"} <= nodes
    assert len(nodes) == 16


def test_dgx_torch_is_the_cu128_build(load_machine: Loader) -> None:
    snap = snapshot_of(load_machine, DGX)
    torch = snap.framework("torch")
    assert torch is not None
    assert (torch.version, torch.variant, torch.cuda, torch.cudnn, torch.nccl) == (
        "2.7.1+cu128", "cuda", "12.8", "9.7.1.26", "2.26.2"
    )
    assert snap.python is not None and snap.python.version == "3.10.12"
    assert not any(p.installer == "conda" for p in snap.packages or ())
    toolkit = snap.active_toolkit
    assert toolkit is not None and (toolkit.root, toolkit.version) == ("/usr/local/cuda-12.8", "12.8.1")


def test_dgx_check_text_lists_eight_gpus(machines_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check_text(machines_dir, DGX, capsys)
    assert code == ExitCode.OK
    assert "570.124.06 (supports CUDA ≤ 12.8)" in out
    for i in range(8):
        assert f"{i}  NVIDIA H100 80GB HBM3 · sm_90 (compute capability 9.0) · 80 GiB · PCIe gen5 x16" in out
    assert "16 device nodes in /dev" in out
    assert "torch 2.7.1+cu128  CUDA 12.8 · cuDNN 9.7.1.26 · NCCL 2.26.2" in out
    assert "Could not read" not in out


# --------------------------------------------------------------------------- laptop, R470


def test_laptop_driver_470_only_supports_cuda_11_4(load_machine: Loader) -> None:
    driver = snapshot_of(load_machine, LAPTOP).driver
    assert driver is not None
    assert (driver.driver_version, driver.cuda_driver_version) == ("470.82.01", "11.4")
    assert (driver.kernel_module_version, driver.kernel_module_flavor) == ("470.82.01", "proprietary")
    assert "/dev/nvidia-modeset" in driver.device_nodes


def test_laptop_torch_wants_cuda_12_4(load_machine: Loader) -> None:
    torch = snapshot_of(load_machine, LAPTOP).framework("torch")
    assert torch is not None
    assert (torch.version, torch.variant, torch.cuda, torch.cudnn, torch.nccl) == (
        "2.5.1+cu124", "cuda", "12.4", "9.1.0.70", "2.21.5"
    )


def test_laptop_geforce_fields_nvml_does_not_support_stay_unknown(load_machine: Loader) -> None:
    (gpu,) = snapshot_of(load_machine, LAPTOP).gpus or ()
    assert (gpu.name, gpu.compute_capability, gpu.pci_device_id, gpu.memory_total_mib) == (
        "NVIDIA GeForce RTX 3060 Laptop GPU", "8.6", "0x2520", 6144
    )
    assert gpu.ecc_mode is None and gpu.ecc_uncorrected_volatile is None
    assert gpu.retired_pages is None and gpu.retired_pages_pending is None
    assert gpu.remapped_rows_pending is None and gpu.mig_mode is None
    assert gpu.serial is None and gpu.power_limit_w is None
    assert gpu.persistence_mode == "disabled"
    # R470 has no nvmlDeviceGetCurrentClocksEventReasons: the throttle-reasons call answers.
    assert gpu.clocks_event_reasons == ("gpu_idle",)
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max) == (1, 4)


def test_laptop_has_no_toolkit_and_the_32_bit_libcuda_is_not_a_copy(load_machine: Loader) -> None:
    snap = snapshot_of(load_machine, LAPTOP)
    assert snap.toolkits == ()
    libcuda = snap.library("libcuda")
    assert libcuda is not None
    assert [c.path for c in libcuda.copies] == ["/lib/x86_64-linux-gnu/libcuda.so.1"]
    assert snap.host is not None and snap.host.distribution_id == "ubuntu 20.04"


def test_laptop_check_text(machines_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check_text(machines_dir, LAPTOP, capsys)
    # The driver is too old for this torch build: an error finding (exit 1) is the right answer
    # once checks run; a usage error or a crash never is.
    assert code in (ExitCode.OK, ExitCode.FINDINGS)
    assert "470.82.01 (supports CUDA ≤ 11.4)" in out
    assert "kernel module 470.82.01 (proprietary)" in out
    assert "0  NVIDIA GeForce RTX 3060 Laptop GPU · sm_86 (compute capability 8.6) · 6 GiB · PCIe gen1 x16 (max gen4 x16)" in out
    assert "torch 2.5.1+cu124  CUDA 12.4 · cuDNN 9.1.0.70 · NCCL 2.21.5" in out
    assert "no CUDA toolkit found" in out
    assert "Could not read" not in out


# --------------------------------------------------------------------------- WSL2


def test_wsl_is_detected_and_has_only_dev_dxg(load_machine: Loader) -> None:
    snap = snapshot_of(load_machine, WSL)
    assert snap.host is not None and snap.host.wsl is True
    assert snap.host.kernel == "5.15.167.4-microsoft-standard-WSL2"
    driver = snap.driver
    assert driver is not None
    assert driver.device_nodes == ("/dev/dxg",)
    assert (driver.kernel_module_version, driver.kernel_module_flavor) == (None, None)
    assert (driver.loaded, driver.driver_version, driver.cuda_driver_version) == (True, "566.36", "12.7")


def test_wsl_driver_libraries_come_from_usr_lib_wsl_lib(load_machine: Loader) -> None:
    host = load_machine(WSL)
    snap = collect(host)
    for family in ("libcuda", "libnvidia-ml"):
        lib = snap.library(family)
        assert lib is not None
        assert [(c.path, c.found_via) for c in lib.copies] == [(f"/usr/lib/wsl/lib/{family}.so.1", "ldconfig")]
    assert host.which("nvidia-smi") == "/usr/lib/wsl/lib/nvidia-smi"


def test_wsl_gpu_is_an_rtx_4090(load_machine: Loader) -> None:
    (gpu,) = snapshot_of(load_machine, WSL).gpus or ()
    assert (gpu.name, gpu.compute_capability, gpu.pci_device_id, gpu.memory_total_mib) == (
        "NVIDIA GeForce RTX 4090", "8.9", "0x2684", 24564
    )
    assert (gpu.ecc_mode, gpu.ecc_uncorrected_volatile, gpu.mig_mode) == ("disabled", None, None)


def test_wsl_torch_is_the_cu126_build(load_machine: Loader) -> None:
    snap = snapshot_of(load_machine, WSL)
    torch = snap.framework("torch")
    assert torch is not None
    assert (torch.version, torch.variant, torch.cuda, torch.cudnn) == ("2.6.0+cu126", "cuda", "12.6", "9.5.1.17")
    assert snap.env is not None and snap.env.get("WSL_DISTRO_NAME") == "Ubuntu-22.04"


def test_wsl_check_text(machines_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check_text(machines_dir, WSL, capsys)
    assert code == ExitCode.OK
    assert "566.36 (supports CUDA ≤ 12.7)" in out
    assert "0  NVIDIA GeForce RTX 4090 · sm_89 (compute capability 8.9) · 24 GiB · PCIe gen4 x16" in out
    assert "libcuda 1  /usr/lib/wsl/lib/libcuda.so.1 (ldconfig)" in out
    assert "WSL2" in out
    assert "torch 2.6.0+cu126  CUDA 12.6 · cuDNN 9.5.1.17 · NCCL 2.21.5" in out
    # In WSL the kernel module and /dev/nvidia* are absent by design: never reported as missing.
    assert "no kernel module" not in out
    assert "no /dev/nvidia" not in out
    assert "Could not read" not in out


def test_h200_companions_are_cuda_builds_by_their_local_tag(load_machine: Loader) -> None:
    """torchvision sets `cuda` only inside an `if`, torchaudio not at all: the +cu130 tag tells."""
    snap = snapshot_of(load_machine, H200)
    for name, version in (("torchvision", "0.26.0+cu130"), ("torchaudio", "2.11.0+cu130")):
        build = snap.framework(name)
        assert build is not None
        assert (build.version, build.variant, build.cuda) == (version, "cuda", "13.0")
