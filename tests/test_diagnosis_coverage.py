"""The diagnosis as a whole: healthy machines stay quiet, and every category of the vocabulary is
produced by at least one realistic case."""

from __future__ import annotations

from typing import Any, Callable, Dict, Set

import pytest

from cudadoctor.api import diagnose
from cudadoctor.model.facts import snapshot_from_facts
from cudadoctor.model import Category, DriverInfo, Gpu, HostInfo, Severity, SmokeResult, Snapshot
from helpers import edited_machine

PROBLEMS = (Severity.ERROR, Severity.WARNING, Severity.CRASHED)


machine = edited_machine


def _workstation(data: Dict[str, Any]) -> None:
    """The two-toolkits RTX 4090 box with a clean environment: CUDA 12.4 only, no LD_LIBRARY_PATH."""
    env = data["env"]
    env.pop("LD_LIBRARY_PATH", None)
    env["PATH"] = ":".join(p for p in env["PATH"].split(":") if "cuda-11.8" not in p)


def _laptop_new_driver(data: Dict[str, Any]) -> None:
    """The RTX 3060 laptop after upgrading to driver 550.120 (CUDA 12.4)."""
    data["nvml"]["system"]["nvmlSystemGetDriverVersion"] = "550.120"
    data["nvml"]["system"]["nvmlSystemGetCudaDriverVersion_v2"] = 12040
    data["nvml"]["system"].pop("nvmlSystemGetCudaDriverVersion", None)
    data.setdefault("files", {})["/proc/driver/nvidia/version"] = (
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.120  Fri Sep 13 10:10:01 UTC 2024\n")


HEALTHY = {
    "datacenter H200, driver 580, torch cu130": lambda: machine("h200-driver580-torch211-cu130"),
    "8 x H100, driver 570, torch cu128": lambda: machine("dgx-h100x8-driver570-torch27-cu128"),
    "workstation RTX 4090, driver 550, torch cu124": lambda: machine("two-toolkits-ldpath-cudnn8-shadow", _workstation),
    "laptop RTX 3060, driver 550, torch cu124": lambda: machine("laptop-rtx3060-driver470-torch25-cu124", _laptop_new_driver),
    "WSL2 RTX 4090, driver 566, torch cu126": lambda: machine("wsl2-rtx4090-driver566"),
    "conda-forge env, RTX A6000": lambda: machine("conda-forge-pytorch-cuda12"),
}


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_healthy_machines_have_no_warning_or_error(name: str) -> None:
    findings = diagnose(HEALTHY[name]())
    assert [(f.code, f.title) for f in findings if f.severity in PROBLEMS] == []


GPU = {"gpu_name": "NVIDIA GeForce RTX 4090", "compute_capability": "8.9", "driver_version": "550.120",
       "driver_cuda_version": "12.4", "os": "linux", "python": "3.11"}


def facts(**extra: Any) -> Snapshot:
    return snapshot_from_facts({**GPU, **extra})


CASES: Dict[Category, Callable[[], Snapshot]] = {
    Category.NO_GPU: lambda: snapshot_from_facts({"gpu_count": 0, "driver_loaded": False}),
    Category.NO_DRIVER: lambda: Snapshot(
        host=HostInfo(os="linux", container="none", wsl=False),
        driver=DriverInfo(loaded=False, nvml_error="NVML_ERROR_LIBRARY_NOT_FOUND", device_nodes=()),
        gpus=(Gpu(index=0, pci_device_id="0x2204", pci_bus_id="0000:01:00.0", source="pci"),), gpus_source="pci"),
    Category.KERNEL_MODULE_BLOCKED: lambda: snapshot_from_facts(
        {"gpu_name": "NVIDIA GeForce RTX 3090", "nouveau_loaded": True, "driver_loaded": False}),
    Category.DRIVER_LIBRARY_MISMATCH: lambda: machine("nvml-mismatch-after-upgrade"),
    Category.NVML_UNAVAILABLE: lambda: facts(nvml_error="NVML_ERROR_NO_PERMISSION"),
    Category.CONTAINER_NO_GPU: lambda: machine("docker-nogpu-torch-cu126"),
    Category.VISIBLE_DEVICES_HIDDEN: lambda: facts(cuda_visible_devices="-1"),
    Category.DRIVER_TOO_OLD: lambda: machine("laptop-rtx3060-driver470-torch25-cu124"),
    Category.CPU_ONLY_BUILD: lambda: facts(torch_version="2.5.1+cpu", torch_cuda=None),
    Category.ARCH_UNSUPPORTED: lambda: snapshot_from_facts(
        {**GPU, "gpu_name": "NVIDIA GeForce RTX 5090", "compute_capability": "12.0", "driver_version": "570.86.15",
         "torch_version": "2.5.1+cu124", "torch_cuda": "12.4"}),
    Category.PYTHON_UNSUPPORTED: lambda: facts(python="3.13", torch_version="2.1.0+cu121", torch_cuda="12.1"),
    Category.PLATFORM_UNSUPPORTED: lambda: facts(os="windows", tensorflow_version="2.15.0", tensorflow_cuda="12.2",
                                                 tensorflow_cudnn="8.9"),
    Category.COMPANION_VERSION_MISMATCH: lambda: facts(torch_version="2.5.1+cu124", torch_cuda="12.4",
                                                       torchvision_version="0.19.0+cu124"),
    Category.WRONG_PACKAGE_VARIANT: lambda: facts(driver_version="535.104.05", driver_cuda_version="12.2",
                                                  cupy_package="cupy-cuda11x==13.3.0",
                                                  torch_version="2.5.1+cu121", torch_cuda="12.1"),
    Category.NVCC_FRAMEWORK_MISMATCH: lambda: machine("two-toolkits-ldpath-cudnn8-shadow"),
    Category.LIBRARY_VERSION_CONFLICT: lambda: machine("two-toolkits-ldpath-cudnn8-shadow"),
    Category.HOST_COMPILER_UNSUPPORTED: lambda: facts(nvcc_version="12.4", cuda_home="/usr/local/cuda-12.4",
                                                      gcc_version="14.2.0"),
    Category.HARDWARE_FAULT: lambda: Snapshot(gpus=(Gpu(index=0, name="NVIDIA H100 80GB HBM3", ecc_mode="enabled",
                                                        ecc_uncorrected_volatile=3),), gpus_source="nvml"),
    # only an error message tells it (the facts do not show who holds a GPU's memory)
    Category.OUT_OF_MEMORY: lambda: facts(error_message="torch.OutOfMemoryError: CUDA out of memory. Tried to "
                                                        "allocate 1.70 GiB."),
    Category.SMOKE_FAILED: lambda: Snapshot(smoke=(SmokeResult("torch", "crashed", reason="killed by SIGSEGV",
                                                               signal="SIGSEGV"),)),
    Category.OTHER: lambda: Snapshot(gpus=(Gpu(index=0, name="NVIDIA A100-SXM4-80GB", mig_mode="enabled"),),
                                     gpus_source="nvml"),
}


@pytest.mark.parametrize("category", list(CASES), ids=lambda c: c.value)
def test_each_case_produces_its_category(category: Category) -> None:
    produced: Set[Category] = {f.category for f in diagnose(CASES[category]())}
    assert category in produced, [f.code for f in diagnose(CASES[category]())]


def test_the_cases_cover_the_vocabulary_but_two_library_categories() -> None:
    """missing_library and cudnn_mismatch need a full library listing, which only a probed machine
    has: tests/test_checks_libraries.py produces them from recorded machines."""
    missing = set(Category) - set(CASES)
    assert missing == {Category.MISSING_LIBRARY, Category.CUDNN_MISMATCH}
