"""Can a program reach a GPU at all? The access checks as a user meets them: no GPU, a GPU with
no driver, nouveau, Secure Boot, a driver upgraded without a reboot, NVML refusing this user, a
container or WSL2 without the GPU, *_VISIBLE_DEVICES hiding it, a driver outside the GPU's
branch window, MIG.

Snapshots come from the recorded machines (tests/machines/), from the facts vocabulary of
``cudadoctor diagnose --facts``, or are built by hand where a state has no recording. Driver
branches and architectures are read from the compatibility data, never written here."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Sequence

import pytest

from cudadoctor.checks import access, run_checks
from cudadoctor.checks.registry import CHECKS
from cudadoctor.model.facts import snapshot_from_facts
from cudadoctor.data.source import default_matrix
from cudadoctor.model import (
    Category,
    DriverInfo,
    Finding,
    Gpu,
    HostInfo,
    Library,
    LibraryCopy,
    Severity,
    Snapshot,
)
from helpers import snapshot_of

DEV = "dev-debian12-cuda13-nodriver-torch213cpu"
DOCKER = "docker-nogpu-torch-cu126"
MISMATCH = "nvml-mismatch-after-upgrade"
WSL = "wsl2-rtx4090-driver566"
H200 = "h200-driver580-torch211-cu130"
DGX = "dgx-h100x8-driver570-torch27-cu128"
LAPTOP = "laptop-rtx3060-driver470-torch25-cu124"
HEALTHY = (H200, DGX, WSL, LAPTOP)

MATRIX = default_matrix()
WSL_LIBCUDA = "/usr/lib/wsl/lib/libcuda.so.1"
LINUX_LIBCUDA = "/usr/lib/x86_64-linux-gnu/libcuda.so.1"


machine = snapshot_of


def diagnose(snap: Snapshot) -> List[Finding]:
    """The access checks only: other modules' findings do not blur what is tested here."""
    return list(run_checks(snap, MATRIX, access.CHECKS))


def facts(**given: Any) -> List[Finding]:
    return diagnose(snapshot_from_facts(given))


def codes(found: Sequence[Finding]) -> List[str]:
    return [f.code for f in found]


def only(found: Sequence[Finding], code: str) -> Finding:
    hits = [f for f in found if f.code == code]
    assert len(hits) == 1, codes(found)
    return hits[0]


def commands(f: Finding) -> List[str]:
    return [c.run for c in f.fix.commands] if f.fix else []


def fix_text(f: Finding) -> str:
    return f.fix.text if f.fix else ""


def branch_window(architecture: str) -> Any:
    arch = MATRIX.gpus.architecture(architecture)
    assert arch is not None, architecture
    return arch


def gpu_on_bus(device_id: str, index: int = 0) -> Gpu:
    return Gpu(index=index, pci_bus_id=f"0000:0{index + 1}:00.0", pci_device_id=device_id, source="pci")


def no_driver(device_id: str = "0x2204", nvml_error: Any = "NVML_ERROR_DRIVER_NOT_LOADED", container: str = "none",
              secure_boot: Any = None, nouveau: Any = False) -> Snapshot:
    """A Linux box whose GPU is on the PCI bus and no NVIDIA kernel module answers."""
    return Snapshot(
        host=HostInfo(os="linux", wsl=False, container=container, secure_boot=secure_boot),
        driver=DriverInfo(loaded=False, nvml_error=nvml_error, device_nodes=(), nouveau_loaded=nouveau),
        gpus=(gpu_on_bus(device_id),),
        gpus_source="pci",
    )


def with_env(name: str, **env: str) -> Snapshot:
    snap = machine(name)
    return dataclasses.replace(snap, env={**(snap.env or {}), **env})


def with_libcuda(name: str, *copies: LibraryCopy) -> Snapshot:
    snap = machine(name)
    others = tuple(lib for lib in snap.libraries or () if lib.name != "libcuda")
    libs = others + ((Library("libcuda", tuple(copies)),) if copies else ())
    return dataclasses.replace(snap, libraries=libs)


def two_gpus(name: str = DGX) -> Snapshot:
    snap = machine(name)
    return dataclasses.replace(snap, gpus=(snap.gpus or ())[:2])


# ---------------------------------------------------------------------------- healthy machines


@pytest.mark.parametrize("name", HEALTHY)
def test_healthy_machines_raise_no_access_problem(name: str) -> None:
    found = diagnose(machine(name))
    assert not [f for f in found if f.severity in (Severity.WARNING, Severity.ERROR, Severity.CRASHED)], codes(found)


def test_facts_that_say_nothing_say_nothing_is_wrong() -> None:
    assert facts() == []


# ---------------------------------------------------------------------------- no-nvidia-gpu


def test_no_gpu_on_the_bus() -> None:
    f = only(diagnose(machine(DEV)), "no-nvidia-gpu")
    assert (f.severity, f.category) == (Severity.ERROR, Category.NO_GPU)
    assert f.title == "this machine has no NVIDIA GPU"
    assert "lists no NVIDIA display or 3D controller" in f.why
    assert "seen from this container" in f.why  # the dev box is a Docker container
    assert "CPU builds" in fix_text(f)
    assert codes(diagnose(machine(DEV))) == ["no-nvidia-gpu"]  # not also "container without GPU"


def test_no_gpu_from_facts_claims_only_what_the_facts_say() -> None:
    f = only(facts(gpu_count=0), "no-nvidia-gpu")
    assert "gpu_count: 0" in f.why and "driver" not in f.why
    assert "No NVIDIA driver answers" in only(facts(gpu_count=0, driver_loaded=False), "no-nvidia-gpu").why


def test_a_gpu_on_the_bus_or_an_unknown_bus_is_not_no_gpu() -> None:
    assert "no-nvidia-gpu" not in codes(diagnose(machine(DOCKER)))  # 0x2204 is on the bus
    assert "no-nvidia-gpu" not in codes(diagnose(machine(H200)))
    assert "no-nvidia-gpu" not in codes(diagnose(Snapshot(driver=DriverInfo(loaded=False))))  # gpus unknown
    wsl = dataclasses.replace(machine(WSL), gpus=(), gpus_source="pci")  # WSL2 has no PCI bus to read
    assert "no-nvidia-gpu" not in codes(diagnose(wsl))


# ---------------------------------------------------------------------------- gpu-without-driver


def test_gpu_without_driver_names_the_gpu_from_the_table() -> None:
    ampere = branch_window("ampere")
    f = only(diagnose(no_driver("0x2204")), "gpu-without-driver")
    assert (f.severity, f.category) == (Severity.ERROR, Category.NO_DRIVER)
    assert f.title == "NVIDIA GeForce RTX 3090 has no NVIDIA driver loaded"
    assert "NVML says NVML_ERROR_DRIVER_NOT_LOADED" in f.why
    assert f"(ampere, compute capability 8.6) needs a driver of branch {ampere.first_driver_branch} or newer" in f.why
    assert commands(f) == ["sudo ubuntu-drivers install    # Ubuntu", "sudo apt install nvidia-driver    # Debian (non-free)",
                           "sudo reboot"]


def test_gpu_without_driver_when_nvml_said_nothing_and_the_gpu_is_legacy() -> None:
    pascal = branch_window("pascal")
    f = only(diagnose(no_driver("0x1b80", nvml_error=None)), "gpu-without-driver")
    assert f.title == "NVIDIA GeForce GTX 1080 has no NVIDIA driver loaded"
    assert "NVML" not in f.why and "None" not in f.why
    assert f"is supported by driver branches up to {pascal.last_driver_branch}." in f.why


def test_an_unknown_device_id_is_still_named() -> None:
    f = only(diagnose(no_driver("0x0001")), "gpu-without-driver")
    assert f.title == "NVIDIA GPU 0x0001 has no NVIDIA driver loaded"


@pytest.mark.parametrize("snap", [
    machine(H200),  # driver loaded
    no_driver(container="docker"),  # a container: container-without-gpu says more
    no_driver(nouveau=True),  # nouveau-loaded says more
    dataclasses.replace(no_driver(), gpus=()),  # no GPU at all
    dataclasses.replace(no_driver(), driver=DriverInfo(loaded=None)),  # unknown
], ids=["loaded", "container", "nouveau", "no-gpu", "unknown"])
def test_gpu_without_driver_is_silent(snap: Snapshot) -> None:
    assert "gpu-without-driver" not in codes(diagnose(snap))


# ---------------------------------------------------------------------------- nouveau-loaded


def test_nouveau_holding_the_gpu() -> None:
    found = diagnose(no_driver(nouveau=True))
    f = only(found, "nouveau-loaded")
    assert (f.severity, f.category) == (Severity.ERROR, Category.KERNEL_MODULE_BLOCKED)
    assert "nouveau" in f.title
    assert "the NVIDIA module is not, and cannot load" in f.why
    assert commands(f)[0].startswith("printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | sudo tee ")
    assert "sudo update-initramfs -u" in commands(f)[1] and commands(f)[-1] == "sudo reboot"
    assert codes(found) == ["nouveau-loaded"]


def test_nouveau_next_to_the_nvidia_module_is_a_warning() -> None:
    h200 = machine(H200)
    assert h200.driver is not None
    snap = dataclasses.replace(h200, driver=dataclasses.replace(h200.driver, nouveau_loaded=True))
    f = only(diagnose(snap), "nouveau-loaded")
    assert f.severity == Severity.WARNING and "next to the NVIDIA module" in f.why


def test_nouveau_with_an_unknown_nvidia_module_does_not_claim_it_is_absent() -> None:
    f = only(facts(nouveau_loaded=True), "nouveau-loaded")
    assert f.severity == Severity.ERROR
    assert "is not" not in f.why and "cannot load while nouveau owns the GPU" in f.why
    assert only(facts(nouveau_loaded=True, driver_version="550.120"), "nouveau-loaded").severity == Severity.WARNING


@pytest.mark.parametrize("nouveau", [False, None])
def test_no_nouveau_finding_when_absent_or_unknown(nouveau: Any) -> None:
    assert "nouveau-loaded" not in codes(diagnose(no_driver(nouveau=nouveau)))


# ---------------------------------------------------------------------------- secure-boot-may-block-module


def test_secure_boot_may_have_rejected_the_module() -> None:
    found = diagnose(no_driver(secure_boot=True))
    f = only(found, "secure-boot-may-block-module")
    assert (f.severity, f.category) == (Severity.WARNING, Category.KERNEL_MODULE_BLOCKED)
    assert "Secure Boot is on" in f.title and "Key was rejected by service" in f.why
    assert commands(f) == ["sudo modprobe nvidia    # shows the exact reason",
                           "sudo mokutil --import /var/lib/dkms/mok.pub && sudo reboot"]
    assert codes(found) == ["gpu-without-driver", "secure-boot-may-block-module"]  # the error first


@pytest.mark.parametrize("snap", [
    no_driver(secure_boot=False),
    no_driver(secure_boot=None),
    no_driver(secure_boot=True, nouveau=True),
    dataclasses.replace(machine(H200), host=dataclasses.replace(machine(H200).host or HostInfo(), secure_boot=True)),
], ids=["off", "unknown", "nouveau", "module-loaded"])
def test_secure_boot_silent(snap: Snapshot) -> None:
    assert "secure-boot-may-block-module" not in codes(diagnose(snap))


# ---------------------------------------------------------------------------- driver-library-mismatch


def test_driver_upgraded_without_reboot() -> None:
    f = only(diagnose(machine(MISMATCH)), "driver-library-mismatch")
    assert (f.severity, f.category) == (Severity.ERROR, Category.DRIVER_LIBRARY_MISMATCH)
    assert "kernel module and user-space libraries are different versions" in f.title
    assert "kernel module 535.183.01 is still running" in f.why and "are 550.127.05" in f.why
    assert commands(f)[0] == "sudo reboot"
    assert "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia" in commands(f)[1]


def test_mismatch_from_versions_alone() -> None:
    f = only(facts(kernel_module_version="535.183.01", driver_version="550.127.05"), "driver-library-mismatch")
    assert "kernel module 535.183.01" in f.why and "are 550.127.05" in f.why


@pytest.mark.parametrize("given", [
    {"kernel_module_version": "550.120", "driver_version": "550.120"},
    {"kernel_module_version": "550.127.05", "driver_version": "550"},  # a partial version that agrees
    {"driver_version": "550.127.05"},  # kernel module unknown
], ids=["same", "partial", "unknown"])
def test_no_mismatch(given: Dict[str, str]) -> None:
    assert "driver-library-mismatch" not in codes(facts(**given))


# ---------------------------------------------------------------------------- nvml-*


def test_nvml_no_permission() -> None:
    f = only(facts(driver_version="550.120", kernel_module_version="550.120", nvml_error="NVML_ERROR_NO_PERMISSION"),
             "nvml-no-permission")
    assert (f.severity, f.category) == (Severity.ERROR, Category.NVML_UNAVAILABLE)
    assert "may not talk to the NVIDIA driver" in f.title and "/dev/nvidia*" in f.why
    assert commands(f) == ["ls -l /dev/nvidia*", 'sudo usermod -aG video "$USER"']


def test_pynvml_missing_is_information() -> None:
    f = only(facts(driver_version="550.120", nvml_error="PYNVML_NOT_INSTALLED"), "nvml-module-missing")
    assert (f.severity, f.category) == (Severity.INFO, Category.NVML_UNAVAILABLE)
    assert "nvidia-smi instead" in f.title and commands(f) == ["pip install nvidia-ml-py"]


def test_another_nvml_error_is_named() -> None:
    f = only(facts(driver_version="550.120", nvml_error="NVML_ERROR_UNKNOWN"), "nvml-unavailable")
    assert (f.severity, f.category) == (Severity.WARNING, Category.NVML_UNAVAILABLE)
    assert f.title == "NVML could not be initialised (NVML_ERROR_UNKNOWN)"
    assert only(facts(nvml_error="NVML_ERROR_UNKNOWN"), "nvml-unavailable").severity == Severity.ERROR


def test_nvml_failing_after_a_mismatch_follows_from_it() -> None:
    found = facts(kernel_module_version="535.183.01", driver_version="550.127.05", nvml_error="NVML_ERROR_UNKNOWN")
    assert codes(found) == ["driver-library-mismatch", "nvml-unavailable"]
    assert only(found, "nvml-unavailable").caused_by == "driver-library-mismatch"


@pytest.mark.parametrize("name", [H200, DOCKER, DEV, MISMATCH])
def test_no_nvml_finding_where_another_check_explains_it(name: str) -> None:
    # healthy; LIBRARY_NOT_FOUND (container, no driver); LIB_RM_VERSION_MISMATCH (mismatch says it)
    assert not [c for c in codes(diagnose(machine(name))) if c.startswith("nvml-")]


# ---------------------------------------------------------------------------- container-without-gpu


def test_docker_started_without_gpus() -> None:
    f = only(diagnose(machine(DOCKER)), "container-without-gpu")
    assert (f.severity, f.category) == (Severity.ERROR, Category.CONTAINER_NO_GPU)
    assert f.title == "this docker container was started without GPU access"
    assert "no /dev/nvidia* device nodes" in f.why and "NVML_ERROR_LIBRARY_NOT_FOUND" in f.why
    assert "The host has an NVIDIA driver" in f.why
    assert commands(f) == ["docker run --gpus all ...    # needs the NVIDIA Container Toolkit on the host"]


@pytest.mark.parametrize("runtime, command", [
    ("podman", "podman run --device nvidia.com/gpu=all"),
    ("kubernetes", "nvidia.com/gpu: 1"),
    ("apptainer", "apptainer exec --nv IMAGE"),
    ("lxc", "start the container with the NVIDIA container runtime"),
])
def test_the_fix_is_the_runtime_s(runtime: str, command: str) -> None:
    f = only(facts(container=runtime, device_nodes_present=False, nvml_error="NVML_ERROR_LIBRARY_NOT_FOUND"),
             "container-without-gpu")
    assert runtime in f.title and command in commands(f)[0]


def test_container_on_a_host_without_driver_says_so() -> None:
    f = only(facts(container="docker", device_nodes_present=False, nvml_error="NVML_ERROR_LIBRARY_NOT_FOUND",
                   driver_loaded=False, gpu_name="NVIDIA GeForce RTX 3090"), "container-without-gpu")
    assert "the host has no NVIDIA kernel module loaded" in f.why


@pytest.mark.parametrize("given", [
    {"container": "docker", "device_nodes_present": True, "nvml_error": "NVML_ERROR_LIBRARY_NOT_FOUND"},
    {"container": "none", "device_nodes_present": False, "nvml_error": "NVML_ERROR_LIBRARY_NOT_FOUND"},
    {"container": "docker", "nvml_error": "NVML_ERROR_LIBRARY_NOT_FOUND"},  # device nodes unknown
    {"container": "docker", "device_nodes_present": False, "nvml_error": "NVML_ERROR_LIBRARY_NOT_FOUND",
     "gpu_count": 0},  # no GPU on the host either
], ids=["nodes", "not-a-container", "nodes-unknown", "no-gpu"])
def test_container_silent(given: Dict[str, Any]) -> None:
    assert "container-without-gpu" not in codes(facts(**given))


# ---------------------------------------------------------------------------- wsl-*


def test_wsl_without_the_windows_driver() -> None:
    found = diagnose(with_libcuda(WSL))
    f = only(found, "wsl-no-windows-driver")
    assert (f.severity, f.category) == (Severity.ERROR, Category.NO_DRIVER)
    assert "WSL2 sees no NVIDIA driver from Windows" == f.title and "/usr/lib/wsl/lib" in f.why
    assert "on Windows (not inside WSL)" in fix_text(f)
    assert commands(f) == ["wsl.exe --shutdown    # from Windows, after installing the Windows driver"]
    assert codes(found) == ["wsl-no-windows-driver"]


def test_wsl_with_a_linux_driver_shadowing_the_windows_one() -> None:
    linux = LibraryCopy(LINUX_LIBCUDA, "550.120", "ldconfig")
    found = diagnose(with_libcuda(WSL, linux, LibraryCopy(WSL_LIBCUDA, "1", "ldconfig")))
    f = only(found, "wsl-linux-driver-installed")
    assert (f.severity, f.category) == (Severity.ERROR, Category.LIBRARY_VERSION_CONFLICT)
    assert "shadows the WSL2 one" in f.title
    assert f"{LINUX_LIBCUDA} (ldconfig) is found before {WSL_LIBCUDA}" in f.why
    assert commands(f) == ["sudo apt remove --purge '^nvidia-driver-.*' '^libnvidia-compute-.*'", "sudo ldconfig"]
    assert codes(found) == ["wsl-linux-driver-installed"]
    # and with no Windows copy at all, both
    assert codes(diagnose(with_libcuda(WSL, linux))) == ["wsl-no-windows-driver", "wsl-linux-driver-installed"]


@pytest.mark.parametrize("snap", [
    machine(WSL),
    with_libcuda(WSL, LibraryCopy(WSL_LIBCUDA, "1", "ldconfig"), LibraryCopy(LINUX_LIBCUDA, "550.120", "ldconfig")),
    # a link that resolves into /usr/lib/wsl is the Windows driver's libcuda
    with_libcuda(WSL, LibraryCopy(LINUX_LIBCUDA, "1", "ldconfig", realpath=WSL_LIBCUDA)),
    dataclasses.replace(machine(WSL), libraries=None),  # libraries unknown
    with_libcuda(H200),  # not WSL
], ids=["healthy", "linux-after-wsl", "symlink", "unknown", "not-wsl"])
def test_wsl_silent(snap: Snapshot) -> None:
    assert not [c for c in codes(diagnose(snap)) if c.startswith("wsl-")]


def test_wsl_facts_without_libraries_are_silent() -> None:
    assert facts(wsl=True, driver_version="566.36") == []


# ---------------------------------------------------------------------------- *_VISIBLE_DEVICES


@pytest.mark.parametrize("value", ["", "-1", " ", "NoDevFiles"])
def test_cuda_visible_devices_hides_every_gpu(value: str) -> None:
    f = only(diagnose(with_env(H200, CUDA_VISIBLE_DEVICES=value)), "cuda-visible-devices-hides-all")
    assert (f.severity, f.category) == (Severity.ERROR, Category.VISIBLE_DEVICES_HIDDEN)
    assert f.title == f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU from CUDA programs"
    assert commands(f) == ["unset CUDA_VISIBLE_DEVICES", "export CUDA_VISIBLE_DEVICES=0"]


def test_hides_all_from_facts_too() -> None:
    assert codes(facts(cuda_visible_devices="-1")) == ["cuda-visible-devices-hides-all"]


def test_an_index_past_the_last_gpu() -> None:
    snap = dataclasses.replace(two_gpus(), env={"CUDA_VISIBLE_DEVICES": "3"})
    f = only(diagnose(snap), "cuda-visible-devices-invalid")
    assert (f.severity, f.category) == (Severity.ERROR, Category.VISIBLE_DEVICES_HIDDEN)
    assert f.title == "CUDA_VISIBLE_DEVICES='3' names GPUs that do not exist"
    assert "This machine has 2 GPUs; 3 is not one of them" in f.why
    assert commands(f) == ["nvidia-smi -L"]


def test_an_invalid_entry_after_a_valid_one_is_a_warning() -> None:
    snap = dataclasses.replace(two_gpus(), env={"CUDA_VISIBLE_DEVICES": "1,3,0"})
    f = only(diagnose(snap), "cuda-visible-devices-invalid")
    assert f.severity == Severity.WARNING and "GPUs listed after it are hidden too" in f.why


def test_a_uuid_no_gpu_has() -> None:
    f = only(diagnose(with_env(H200, CUDA_VISIBLE_DEVICES="GPU-bogus")), "cuda-visible-devices-invalid")
    assert f.severity == Severity.ERROR and "1 GPU; GPU-bogus is not one of them" in f.why


@pytest.mark.parametrize("value", ["0", "0,1", "GPU-", "MIG-2f3a"])
def test_valid_values_are_silent(value: str) -> None:
    h200 = machine(H200)
    uuid = (h200.gpus or ())[0].uuid or ""
    snap = dataclasses.replace(two_gpus(), env={"CUDA_VISIBLE_DEVICES": value}) if value == "0,1" else \
        with_env(H200, CUDA_VISIBLE_DEVICES=uuid[:12] if value == "GPU-" else value)
    assert not [c for c in codes(diagnose(snap)) if c.startswith("cuda-visible")]


def test_gpus_seen_only_on_the_pci_bus_give_no_count() -> None:
    snap = dataclasses.replace(machine(DOCKER), env={"CUDA_VISIBLE_DEVICES": "3"})
    assert "cuda-visible-devices-invalid" not in codes(diagnose(snap))


def test_nvidia_visible_devices_void_in_a_container() -> None:
    found = facts(container="docker", env={"NVIDIA_VISIBLE_DEVICES": "void"})
    f = only(found, "nvidia-visible-devices-none")
    assert (f.severity, f.category) == (Severity.ERROR, Category.VISIBLE_DEVICES_HIDDEN)
    assert f.title == "NVIDIA_VISIBLE_DEVICES='void': the container runtime passes no GPU in"
    assert "NVIDIA_VISIBLE_DEVICES=all" in fix_text(f)


def test_nvidia_visible_devices_none_with_only_the_control_nodes() -> None:
    snap = Snapshot(host=HostInfo(os="linux", container="docker"),
                    driver=DriverInfo(loaded=True, driver_version="550.120", device_nodes=("/dev/nvidiactl", "/dev/nvidia-uvm")),
                    gpus=(), gpus_source="nvml", env={"NVIDIA_VISIBLE_DEVICES": "none"})
    assert "nvidia-visible-devices-none" in codes(diagnose(snap))


@pytest.mark.parametrize("snap", [
    snapshot_from_facts({"container": "none", "env": {"NVIDIA_VISIBLE_DEVICES": "void"}}),
    snapshot_from_facts({"container": "docker", "env": {"NVIDIA_VISIBLE_DEVICES": "all"}}),
    # the GPU came in anyway (a CDI device plugin sets the variable to void and injects the GPU)
    dataclasses.replace(machine(H200), host=HostInfo(os="linux", container="kubernetes"),
                        env={"NVIDIA_VISIBLE_DEVICES": "void"}),
], ids=["not-a-container", "all", "gpu-visible"])
def test_nvidia_visible_devices_silent(snap: Snapshot) -> None:
    assert "nvidia-visible-devices-none" not in codes(diagnose(snap))


# ---------------------------------------------------------------------------- driver vs GPU


def test_driver_too_old_for_a_blackwell_card() -> None:
    blackwell = branch_window("blackwell")
    f = only(facts(gpu_name="NVIDIA GeForce RTX 5090", driver_version="535.104.05"), "driver-too-old-for-gpu")
    assert (f.severity, f.category) == (Severity.ERROR, Category.DRIVER_TOO_OLD)
    assert f.title == "driver 535.104.05 is too old for NVIDIA GeForce RTX 5090"
    assert "blackwell (compute capability 12.0)" in f.why
    assert f"the first driver branch that supports blackwell is {blackwell.first_driver_branch}" in f.why
    assert "535.104.05 is R535" in f.why
    assert fix_text(f).startswith(f"Upgrade the NVIDIA driver to branch {blackwell.first_driver_branch} or newer")
    assert "open kernel modules (Blackwell GPUs run only on them)" in fix_text(f)
    assert f.fix is not None and f.fix.commands[0].run.startswith("sudo apt install nvidia-driver-580-open")
    assert f.source == ("architectures.json#blackwell", "driver_branches.json#R570", "driver_branches.json#R580",
                        "driver_packages.json")


def test_driver_dropped_a_pascal_card() -> None:
    pascal = branch_window("pascal")
    f = only(facts(gpu_name="NVIDIA GeForce GTX 1080", driver_version="590.44.01"), "driver-dropped-gpu")
    assert (f.severity, f.category) == (Severity.ERROR, Category.ARCH_UNSUPPORTED)
    assert f.title == "driver 590.44.01 no longer supports NVIDIA GeForce GTX 1080"
    assert f"NVIDIA's last driver branch for pascal is {pascal.last_driver_branch}" in f.why
    assert fix_text(f).startswith(f"Install a driver of branch {pascal.last_driver_branch}")
    assert f.source == ("architectures.json#pascal",)


def test_many_cards_of_one_model_are_one_finding() -> None:
    found = facts(gpu_name="NVIDIA GeForce GTX 1080", gpu_count=4, driver_version="590.44.01")
    f = only(found, "driver-dropped-gpu")
    assert f.title == "driver 590.44.01 no longer supports 4 × NVIDIA GeForce GTX 1080"
    assert "gpus[3].compute_capability" in f.evidence


def test_a_gpu_known_only_by_its_pci_id_is_judged_too() -> None:
    snap = dataclasses.replace(no_driver("0x1b80"), driver=DriverInfo(loaded=True, driver_version="590.44.01"))
    assert "no longer supports NVIDIA GeForce GTX 1080" in only(diagnose(snap), "driver-dropped-gpu").title


def test_inside_the_branch_window_is_silent() -> None:
    first = branch_window("blackwell").first_driver_branch
    last = branch_window("pascal").last_driver_branch
    assert first and last
    assert facts(gpu_name="NVIDIA GeForce RTX 5090", driver_version=f"{first[1:]}.86.16") == []
    # nothing wrong on Pascal's last branch; a note says it is the last one
    pascal = facts(gpu_name="NVIDIA GeForce GTX 1080", driver_version=f"{last[1:]}.65.06")
    assert [(f.code, f.severity) for f in pascal] == [("driver-last-branch-for-gpu", Severity.INFO)]
    assert pascal[0].title == f"{last} is the last driver branch for Pascal GPUs (GPU 0)"
    assert "Nothing is wrong now" in pascal[0].why
    assert facts(gpu_name="NVIDIA GeForce RTX 5090") == []  # driver unknown
    # GPU unknown: no verdict on its driver window, and a note that says why
    assert codes(facts(gpu_name="Some Future GPU", driver_version="535.104.05")) == ["gpu-not-in-data"]


# ---------------------------------------------------------------------------- mig-enabled


def test_mig_enabled() -> None:
    snap = machine(DGX)
    gpus = tuple(dataclasses.replace(g, mig_mode="enabled") if g.index in (0, 1) else g for g in snap.gpus or ())
    f = only(diagnose(dataclasses.replace(snap, gpus=gpus)), "mig-enabled")
    assert (f.severity, f.category) == (Severity.INFO, Category.OTHER)
    assert f.title == "MIG is enabled on GPU 0, 1"
    assert "MIG UUID in CUDA_VISIBLE_DEVICES" in f.why and commands(f) == ["nvidia-smi -L"]
    assert f.evidence == ("gpus[0].mig_mode", "gpus[1].mig_mode")


def test_mig_disabled_or_unknown_is_silent() -> None:
    assert "mig-enabled" not in codes(diagnose(machine(DGX)))  # disabled
    assert "mig-enabled" not in codes(diagnose(machine(WSL)))  # unknown


# ---------------------------------------------------------------------------- ordering, crashes


def test_the_root_cause_comes_first_whatever_the_table_order() -> None:
    """The driver-for-GPU check comes after visible-devices in the table, but a driver that cannot
    run the GPU (layer 1) explains more than a variable hiding it (layer 2); information last."""
    snap = Snapshot(
        host=HostInfo(os="linux", container="none"),
        driver=DriverInfo(loaded=True, driver_version="535.104.05"),
        gpus=(Gpu(index=0, name="NVIDIA GeForce RTX 5090", mig_mode="enabled"),), gpus_source="nvml",
        env={"CUDA_VISIBLE_DEVICES": "-1"},
    )
    table = [c.name for c in access.CHECKS]
    assert table.index("visible-devices") < table.index("driver-for-gpu")
    assert codes(diagnose(snap)) == ["driver-too-old-for-gpu", "cuda-visible-devices-hides-all", "mig-enabled"]
    everything = codes(run_checks(snap, MATRIX))
    assert everything.index("driver-too-old-for-gpu") < everything.index("cuda-visible-devices-hides-all")


def test_a_container_without_its_gpu_leads_the_full_report() -> None:
    found = run_checks(machine(DOCKER), MATRIX)
    assert found[0].code == "container-without-gpu", codes(found)


def test_a_check_that_raises_becomes_a_crashed_finding() -> None:
    def boom(snap: Snapshot, matrix: Any) -> List[Finding]:
        raise RuntimeError("boom")

    checks = tuple(dataclasses.replace(c, fn=boom) if c.name == "nvml" else c for c in CHECKS)
    found = run_checks(machine(MISMATCH), MATRIX, checks=checks)
    crashed = only(found, "nvml-crashed")
    assert (crashed.severity, crashed.category) == (Severity.CRASHED, Category.OTHER)
    assert crashed.title == "the check nvml crashed: RuntimeError: boom"
    assert "bug in cudadoctor" in crashed.why
    assert found[0] is crashed  # a crash is never hidden below the findings
    assert "driver-library-mismatch" in codes(found)  # the other checks ran
