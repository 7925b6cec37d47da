"""Can a program reach a GPU at all? The GPU on the bus, the kernel module, the user-space
driver, NVML, containers, WSL2 and the *_VISIBLE_DEVICES variables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Tuple

from cudadoctor.model import Category, Finding, LibraryCopy, Severity, Snapshot
from cudadoctor.checks.driver_fix import upgrade_advice
from cudadoctor.checks.base import Check, driver_version, finding, gpus, ref
from cudadoctor.diagnosis.causes import HIDE_ALL as HIDE_ALL  # the values that hide every GPU

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO

LIB_RM_MISMATCH = "NVML_ERROR_LIB_RM_VERSION_MISMATCH"
NO_PERMISSION = "NVML_ERROR_NO_PERMISSION"
LIBRARY_NOT_FOUND = "NVML_ERROR_LIBRARY_NOT_FOUND"
DRIVER_NOT_LOADED = "NVML_ERROR_DRIVER_NOT_LOADED"


def _in_container(snap: Snapshot) -> bool:
    return bool(snap.host and snap.host.container not in (None, "none"))


def _wsl(snap: Snapshot) -> bool:
    return bool(snap.host and snap.host.wsl)


def _module_missing(snap: Snapshot) -> bool:
    """Known: no NVIDIA kernel module answers (and not WSL, which has none by design)."""
    d = snap.driver
    return bool(d and d.loaded is False and not _wsl(snap))


def _gpu_names(snap: Snapshot, matrix: Matrix) -> List[str]:
    names = []
    for g in gpus(snap):
        model = matrix.gpus.identify(name=g.name, pci_device_id=g.pci_device_id) if (g.name or g.pci_device_id) else None
        names.append(g.name or (model.name if model else f"NVIDIA GPU {g.pci_device_id or '(unknown model)'}"))
    return names


# ---------------------------------------------------------------------------- the GPU itself


def check_gpu_present(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """No NVIDIA GPU on the PCI bus: nothing to fix in software."""
    if snap.gpus_source not in ("pci", "facts") or snap.gpus != () or _wsl(snap):
        return []
    bus = "The PCI bus (the host's, seen from this container)" if _in_container(snap) else "The PCI bus"
    return [finding(
        "no-nvidia-gpu", E, Category.NO_GPU,
        "this machine has no NVIDIA GPU",
        why=f"{bus} lists no NVIDIA display or 3D controller (vendor 0x10de, class 0x03), and no NVIDIA "
            "driver answers. CUDA programs cannot run here; CPU builds of the frameworks can."
            if snap.gpus_source == "pci" else "The facts report no NVIDIA GPU (gpu_count: 0)."
            + (" No NVIDIA driver answers." if snap.driver and snap.driver.loaded is False else ""),
        fix="Run GPU work on a machine with an NVIDIA GPU, or install the CPU builds of your frameworks.",
        evidence=["gpus", "gpus_source", "driver.loaded"],
    )]


def check_driver_loaded(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """An NVIDIA GPU is on the bus but no NVIDIA kernel module is loaded."""
    if not _module_missing(snap) or _in_container(snap) or not gpus(snap):
        return []
    if snap.driver and snap.driver.nouveau_loaded:
        return []  # nouveau-loaded says more
    names = ", ".join(_gpu_names(snap, matrix))
    windows = _driver_window(snap, matrix)
    return [finding(
        "gpu-without-driver", E, Category.NO_DRIVER,
        f"{names} has no NVIDIA driver loaded",
        why="The GPU is on the PCI bus, but /proc/driver/nvidia/version is absent"
            + (f" and NVML says {snap.driver.nvml_error}" if snap.driver and snap.driver.nvml_error else "")
            + ": the NVIDIA kernel module is not loaded."
            + (f" {windows}" if windows else ""),
        fix="Install the NVIDIA driver from your distribution (it builds and signs the kernel module), then reboot.",
        commands=["sudo ubuntu-drivers install    # Ubuntu", "sudo apt install nvidia-driver    # Debian (non-free)",
                  "sudo reboot"],
        evidence=["gpus", "driver.loaded", "driver.kernel_module_version", "driver.nvml_error"],
    )]


def _driver_window(snap: Snapshot, matrix: Matrix) -> str:
    """'Its architecture (pascal) is supported by driver branches up to R580.'"""
    parts = []
    for g in gpus(snap):
        model = matrix.gpus.identify(name=g.name, pci_device_id=g.pci_device_id)
        arch = matrix.gpus.architecture_of(model.compute_capability) if model else None
        if model is None or arch is None:
            continue
        first, last = arch.first_driver_branch, arch.last_driver_branch
        if first and last:
            window = f"needs a driver of branch {first} to {last}"
        elif first:
            window = f"needs a driver of branch {first} or newer"
        elif last:
            window = f"is supported by driver branches up to {last}"
        else:
            continue
        parts.append(f"{model.name} ({arch.name}, compute capability {model.compute_capability}) {window}.")
    return " ".join(dict.fromkeys(parts))


def check_nouveau(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    d = snap.driver
    if not d or not d.nouveau_loaded:
        return []
    nvidia_loaded = d.kernel_module_version is not None or d.loaded is True
    return [finding(
        "nouveau-loaded", W if nvidia_loaded else E, Category.KERNEL_MODULE_BLOCKED,
        "the open-source nouveau driver holds the GPU",
        why="The nouveau kernel module is loaded"
            + (", next to the NVIDIA module." if nvidia_loaded else
               "; the NVIDIA module is not, and cannot load while nouveau owns the GPU." if d.loaded is False else
               "; the NVIDIA module cannot load while nouveau owns the GPU."),
        fix="Blacklist nouveau, rebuild the initramfs and reboot; then install or load the NVIDIA driver.",
        commands=[
            "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf",
            "sudo update-initramfs -u    # Debian/Ubuntu; Fedora/RHEL: sudo dracut --force",
            "sudo reboot",
        ],
        evidence=["driver.nouveau_loaded", "driver.kernel_module_version"],
    )]


def check_secure_boot(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    d, h = snap.driver, snap.host
    if not (d and h and h.secure_boot and _module_missing(snap) and gpus(snap)) or d.nouveau_loaded:
        return []
    return [finding(
        "secure-boot-may-block-module", W, Category.KERNEL_MODULE_BLOCKED,
        "Secure Boot is on and the NVIDIA module is not loaded: it may have been rejected",
        why="With Secure Boot, the kernel refuses modules not signed by an enrolled key "
            "('modprobe: ERROR: could not insert 'nvidia': Key was rejected by service').",
        fix="Use the distribution's signed driver packages, or enroll the module signing key (MOK) and reboot.",
        commands=["sudo modprobe nvidia    # shows the exact reason", "sudo mokutil --import /var/lib/dkms/mok.pub && sudo reboot"],
        evidence=["host.secure_boot", "driver.kernel_module_version"],
    )]


# ---------------------------------------------------------------------------- user space


def check_mismatch(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    d = snap.driver
    if not d:
        return []
    differ = bool(d.kernel_module_version and d.driver_version
                  and any(a != b for a, b in zip(d.kernel_module_version.split("."), d.driver_version.split("."))))
    if d.nvml_error != LIB_RM_MISMATCH and not differ:
        return []
    versions = f"kernel module {d.kernel_module_version}" if d.kernel_module_version else "the loaded kernel module"
    nvml_lib = snap.library("libnvidia-ml")
    libs = d.driver_version or (nvml_lib.copies[0].version if nvml_lib and nvml_lib.copies else None)
    return [finding(
        "driver-library-mismatch", E, Category.DRIVER_LIBRARY_MISMATCH,
        "the driver's kernel module and user-space libraries are different versions",
        why=f"NVML reports a driver/library version mismatch: {versions} is still running, while the "
            f"user-space libraries {'are ' + libs if libs else 'were upgraded'}. This happens when the driver "
            "is upgraded without a reboot.",
        fix="Reboot. (Without a reboot: stop every GPU process, then reload the modules.)",
        commands=["sudo reboot", "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia    # instead of a reboot"],
        evidence=["driver.nvml_error", "driver.kernel_module_version", "driver.driver_version"],
    )]


def check_nvml(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    d = snap.driver
    if not d or not d.nvml_error or d.nvml_error in (LIB_RM_MISMATCH, LIBRARY_NOT_FOUND, DRIVER_NOT_LOADED):
        return []
    if d.nvml_error == NO_PERMISSION:
        return [finding(
            "nvml-no-permission", E, Category.NVML_UNAVAILABLE,
            "this user may not talk to the NVIDIA driver",
            why="NVML answers NVML_ERROR_NO_PERMISSION: the /dev/nvidia* device nodes are not readable and "
                "writable by this user.",
            fix="Give the user access to the device nodes (usually the 'video' group), then log in again.",
            commands=["ls -l /dev/nvidia*", "sudo usermod -aG video \"$USER\""],
            evidence=["driver.nvml_error", "driver.device_nodes"],
        )]
    if d.nvml_error == "PYNVML_NOT_INSTALLED":
        return [finding(
            "nvml-module-missing", INFO, Category.NVML_UNAVAILABLE,
            "cudadoctor could not import pynvml and read the driver through nvidia-smi instead",
            why="nvidia-ml-py is one of cudadoctor's dependencies; without it GPU health fields are missing.",
            fix="Reinstall cudadoctor with its dependencies.", commands=["pip install nvidia-ml-py"],
            evidence=["driver.nvml_error"],
        )]
    return [finding(
        "nvml-unavailable", W if d.loaded else E, Category.NVML_UNAVAILABLE,
        f"NVML could not be initialised ({d.nvml_error})",
        why="The driver's management library did not start; GPU facts come from other sources or are missing.",
        evidence=["driver.nvml_error"],
    )]


# ---------------------------------------------------------------------------- isolation


def check_container(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    d, h = snap.driver, snap.host
    if not (d and h and _in_container(snap)) or _wsl(snap):
        return []
    if d.device_nodes is None or d.device_nodes or d.nvml_error not in (LIBRARY_NOT_FOUND, DRIVER_NOT_LOADED):
        return []
    if snap.gpus == () and snap.gpus_source in ("pci", "facts"):
        return []  # no GPU on the host either: no-nvidia-gpu says so
    runtime = h.container or "container"
    commands = {
        "docker": ["docker run --gpus all ...    # needs the NVIDIA Container Toolkit on the host"],
        "podman": ["podman run --device nvidia.com/gpu=all ...    # CDI spec from nvidia-ctk on the host"],
        "kubernetes": ["resources: {limits: {nvidia.com/gpu: 1}}    # in the pod spec; needs the NVIDIA device plugin"],
        "apptainer": ["apptainer exec --nv IMAGE ..."],
    }.get(runtime, ["start the container with the NVIDIA container runtime and GPU access"])
    on_host = " The host has an NVIDIA driver: its kernel module is visible." if d.kernel_module_version else (
        " /proc/driver/nvidia is absent too: unless this runtime hides it, the host has no NVIDIA kernel module "
        "loaded, and needs its driver first." if d.loaded is False else "")
    return [finding(
        "container-without-gpu", E, Category.CONTAINER_NO_GPU,
        f"this {runtime} container was started without GPU access",
        why=f"Inside a {runtime} container there are no /dev/nvidia* device nodes and no libnvidia-ml "
            f"(NVML: {d.nvml_error}): the runtime did not pass the GPU and the driver's libraries in.{on_host}",
        fix="Restart the container with GPU access.",
        commands=commands,
        evidence=["host.container", "driver.device_nodes", "driver.nvml_error", "driver.kernel_module_version"],
    )]


def _from_wsl(copy: LibraryCopy) -> bool:
    """The Windows driver's library: under /usr/lib/wsl, or a link that resolves there."""
    return any(p and p.startswith("/usr/lib/wsl/") for p in (copy.path, copy.realpath))


def check_wsl(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    if not _wsl(snap):
        return []
    out: List[Finding] = []
    libcuda = snap.library("libcuda")
    copies = libcuda.copies if libcuda else ()
    wsl_copies = [c for c in copies if _from_wsl(c)]
    foreign = [c for c in copies if not _from_wsl(c) and c.found_via in ("LD_LIBRARY_PATH", "ldconfig", "default")]
    if snap.libraries is not None and not wsl_copies:
        out.append(finding(
            "wsl-no-windows-driver", E, Category.NO_DRIVER,
            "WSL2 sees no NVIDIA driver from Windows",
            why="Under WSL2 the GPU driver is the Windows one, mapped into /usr/lib/wsl/lib; libcuda.so.1 is not there.",
            fix="Install or update the NVIDIA driver on Windows (not inside WSL), then run 'wsl --shutdown' in Windows.",
            commands=["wsl.exe --shutdown    # from Windows, after installing the Windows driver"],
            evidence=["host.wsl", "libraries"],
        ))
    if foreign and (not wsl_copies or copies.index(foreign[0]) < copies.index(wsl_copies[0])):
        out.append(finding(
            "wsl-linux-driver-installed", E, Category.LIBRARY_VERSION_CONFLICT,
            "a Linux NVIDIA driver's libcuda shadows the WSL2 one",
            why=f"{foreign[0].path} ({foreign[0].found_via}) is found before /usr/lib/wsl/lib/libcuda.so.1. "
                "Inside WSL2 only the Windows driver's libraries work; a Linux driver package must not be installed.",
            fix="Remove the Linux driver packages inside WSL (keep the CUDA toolkit if you need nvcc).",
            commands=["sudo apt remove --purge '^nvidia-driver-.*' '^libnvidia-compute-.*'", "sudo ldconfig"],
            evidence=["host.wsl", "libraries"],
        ))
    return out


def _gpus_visible(snap: Snapshot) -> bool:
    """The process plainly reaches GPUs: a GPU's device node (/dev/nvidiaN, not only the control
    nodes that NVIDIA_VISIBLE_DEVICES=none mounts), or the driver lists GPUs."""
    nodes = snap.driver.device_nodes if snap.driver and snap.driver.device_nodes else ()
    return any(n[len("/dev/nvidia"):].isdigit() for n in nodes if n.startswith("/dev/nvidia")) \
        or bool(snap.gpus and snap.gpus_from_driver)


# CUDA_VISIBLE_DEVICES values that hide every GPU (lower case)


def check_visible_devices(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    env = snap.env or {}
    out: List[Finding] = []
    value = env.get("CUDA_VISIBLE_DEVICES")
    if value is not None:
        entries = [v.strip() for v in value.split(",")]
        count = len(snap.gpus) if snap.gpus is not None and snap.gpus_from_driver else None
        if value.strip().lower() in HIDE_ALL or (entries and entries[0].startswith("-")):
            out.append(finding(
                "cuda-visible-devices-hides-all", E, Category.VISIBLE_DEVICES_HIDDEN,
                f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU from CUDA programs",
                why="CUDA enumerates only the devices CUDA_VISIBLE_DEVICES lists, up to the first invalid entry; "
                    "this value lists none.",
                fix="Unset it, or list the GPUs to use.", commands=["unset CUDA_VISIBLE_DEVICES", "export CUDA_VISIBLE_DEVICES=0"],
                evidence=["env.CUDA_VISIBLE_DEVICES"],
            ))
        elif count is not None:
            uuids = {g.uuid for g in gpus(snap) if g.uuid}
            bad = [e for e in entries if (e.isdigit() and int(e) >= count)
                   or (e.startswith("GPU-") and uuids and not any(u.startswith(e) for u in uuids))]
            if bad:
                first_bad = entries.index(bad[0])
                severity = E if first_bad == 0 else W
                out.append(finding(
                    "cuda-visible-devices-invalid", severity, Category.VISIBLE_DEVICES_HIDDEN,
                    f"CUDA_VISIBLE_DEVICES={value!r} names GPUs that do not exist",
                    why=f"This machine has {count} GPU{'s' if count != 1 else ''}; {', '.join(bad)} is not one of them. "
                        "CUDA stops at the first invalid entry, so the GPUs listed after it are hidden too.",
                    fix="List only existing GPUs (indexes from 0, or UUIDs from nvidia-smi -L).",
                    commands=["nvidia-smi -L"],
                    evidence=["env.CUDA_VISIBLE_DEVICES", "gpus"],
                ))
    nvidia = env.get("NVIDIA_VISIBLE_DEVICES")
    if nvidia is not None and nvidia.strip().lower() in ("void", "none", "") and _in_container(snap) \
            and not _gpus_visible(snap):
        out.append(finding(
            "nvidia-visible-devices-none", E, Category.VISIBLE_DEVICES_HIDDEN,
            f"NVIDIA_VISIBLE_DEVICES={nvidia!r}: the container runtime passes no GPU in",
            why="The NVIDIA container runtime mounts only the GPUs this variable names.",
            fix="Set NVIDIA_VISIBLE_DEVICES=all (or GPU indexes/UUIDs) when starting the container.",
            evidence=["env.NVIDIA_VISIBLE_DEVICES"],
        ))
    return out


# ---------------------------------------------------------------------------- driver vs GPU


def check_driver_for_gpu(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    driver = driver_version(snap)
    if not driver:
        return []
    # one finding per GPU model, not one per GPU: eight old cards are one problem
    groups: Dict[Tuple[str, str], Tuple[Any, str, List[int]]] = {}
    last: Dict[str, Tuple[Any, str, List[int]]] = {}  # architectures on a branch at or below their last one
    for g in gpus(snap):
        model = matrix.gpus.identify(name=g.name, pci_device_id=g.pci_device_id)
        cc = g.compute_capability or (model.compute_capability if model else None)
        if not cc:
            continue
        support = matrix.gpus.driver_support(cc, driver)
        if support.kind in ("driver_too_old_for_gpu", "driver_dropped_gpu"):
            name = g.name or (model.name if model else f"GPU {g.index}")
            groups.setdefault((support.kind, name), (support, cc, []))[2].append(g.index)
        elif support.kind == "ok" and support.last_branch and support.architecture is not None:
            last.setdefault(support.architecture.name, (support, cc, []))[2].append(g.index)
    out: List[Finding] = [_last_branch(matrix, driver, support, cc, indexes) for support, cc, indexes in last.values()]
    for (kind, name), (support, cc, indexes) in groups.items():
        arch = support.architecture.name if support.architecture else "?"
        which = f"{len(indexes)} × {name}" if len(indexes) > 1 else name
        evidence = ["driver.driver_version"] + [f"gpus[{i}].compute_capability" for i in indexes]
        if kind == "driver_too_old_for_gpu":
            ccs = [g.compute_capability or "" for g in gpus(snap) if g.compute_capability]
            advice = upgrade_advice(snap, matrix, support.first_branch, ccs or [cc])
            out.append(finding(
                "driver-too-old-for-gpu", E, Category.DRIVER_TOO_OLD,
                f"driver {driver} is too old for {which}",
                why=f"{name} is {arch} (compute capability {cc}); the first driver branch that supports "
                    f"{arch} is {support.first_branch}, and {driver} is {support.driver_branch}.",
                fix=advice.text, commands=advice.commands,
                evidence=evidence, source=list(dict.fromkeys([ref("architectures.json", arch)] + list(advice.source))),
            ))
        else:
            legacy = _legacy(snap, matrix, support, cc)
            out.append(finding(
                "driver-dropped-gpu", E, Category.ARCH_UNSUPPORTED,
                f"driver {driver} no longer supports {which}",
                why=f"{name} is {arch} (compute capability {cc}); NVIDIA's last driver branch for {arch} is "
                    f"{support.last_branch}, and {driver} is {support.driver_branch}.",
                fix=f"Install a driver of branch {support.last_branch} (the legacy branch for this GPU)"
                    + (f", with the proprietary kernel modules ({arch.capitalize()} GPUs cannot use the open ones)."
                       if legacy and legacy.commands else "."),
                commands=legacy.commands if legacy else (),
                evidence=evidence, source=[ref("architectures.json", arch)],
            ))
    return out


def _last_branch(matrix: Matrix, driver: str, support: Any, cc: str, indexes: List[int]) -> Finding:
    """A supported GPU whose architecture has a last driver branch: what that means before it bites."""
    arch = support.architecture
    name = arch.name.capitalize()
    row = matrix.toolchain.arch(cc)
    last_cuda = row.last_cuda if row is not None else None
    toolkit = (f" CUDA {last_cuda} is the last toolkit that builds for it, so builds made with a newer CUDA (CUDA "
               f"{int(last_cuda.split('.')[0]) + 1} wheels of the frameworks) carry no code for it."
               if last_cuda else "")
    return finding(
        "driver-last-branch-for-gpu", INFO, Category.OTHER,
        f"{support.last_branch} is the last driver branch for {name} GPUs (GPU {', '.join(map(str, indexes))})",
        why=f"NVIDIA's drivers newer than branch {support.last_branch} do not drive {name} GPUs (compute capability "
            f"{cc}); this driver, {driver} ({support.driver_branch}), still does.{toolkit} Nothing is wrong now: an "
            "upgrade past that branch is what would break this machine.",
        fix=f"Keep the driver on branch {support.last_branch} or older (hold its packages against upgrades), and "
            "framework builds for a CUDA that branch runs.",
        evidence=["driver.driver_version"] + [f"gpus[{i}].compute_capability" for i in indexes],
        source=[ref("architectures.json", arch.name)] + ([f"toolkit_archs.json#{row.sm}"] if row and last_cuda else []),
    )


def _legacy(snap: Snapshot, matrix: Matrix, support: Any, cc: str) -> Any:
    """The packages of a GPU's last branch (its modules, the distribution's names), when it is a
    branch the data knows how to install."""
    last = support.last_branch
    if not last or support.architecture is None or support.architecture.supports_open_kernel_modules is not False:
        return None
    advice = upgrade_advice(snap, matrix, last, [cc])
    return advice if advice.branch == last else None


def check_mig(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    enabled = [g for g in gpus(snap) if g.mig_mode == "enabled"]
    if not enabled:
        return []
    return [finding(
        "mig-enabled", INFO, Category.OTHER,
        f"MIG is enabled on GPU {', '.join(str(g.index) for g in enabled)}",
        why="A MIG-enabled GPU runs CUDA work only inside MIG instances; a process sees one instance, chosen "
            "by its MIG UUID in CUDA_VISIBLE_DEVICES. Whole-GPU tests and peer-to-peer do not apply.",
        fix="List the instances with 'nvidia-smi -L' and select one by UUID.",
        commands=["nvidia-smi -L"],
        evidence=[f"gpus[{g.index}].mig_mode" for g in enabled],
    )]


def check_gpu_known(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """A GPU named (facts, pasted text) or listed whose compute capability nobody knows: the data
    does not know the name or id, so the checks that need it cannot judge that GPU. Said, never
    dropped in silence."""
    out = []
    for g in gpus(snap):
        if g.compute_capability or not (g.name or g.pci_device_id):
            continue
        if matrix.gpus.identify(name=g.name, pci_device_id=g.pci_device_id) is not None:
            continue
        said = g.name or g.pci_device_id or ""
        _, hits = matrix.gpus.resolve(g.name) if g.name else (None, ())
        could = "; it could be " + ", ".join(f"{m.name} ({m.compute_capability})" for m in hits[:3]) if hits else ""
        out.append(finding(
            "gpu-not-in-data", INFO, Category.OTHER,
            f"the GPU {said!r} is not one the compatibility data knows",
            why=f"No GPU of the data (data {matrix.data_version}) has that name or PCI id{could}, and its compute "
                "capability is not given, so the checks that need the GPU's architecture (kernels in the "
                "builds, driver branches) did not judge it.",
            fix="Give its compute capability (`compute_capability` in a facts file; on the machine: nvidia-smi "
                "--query-gpu=name,compute_cap --format=csv), or get newer data.",
            commands=["cudadoctor data update"],
            evidence=[f"gpus[{g.index}].name" if g.name else f"gpus[{g.index}].pci_device_id"],
        ))
    return out


CHECKS = (
    Check("gpu-present", check_gpu_present, ("no-nvidia-gpu",), 0, "an NVIDIA GPU is on the PCI bus"),
    Check("gpu-known", check_gpu_known, ("gpu-not-in-data",), 0, "every GPU is one the data knows"),
    Check("nouveau", check_nouveau, ("nouveau-loaded",), 1, "nouveau does not hold the GPU"),
    Check("driver-loaded", check_driver_loaded, ("gpu-without-driver",), 1, "the NVIDIA kernel module is loaded"),
    Check("secure-boot", check_secure_boot, ("secure-boot-may-block-module",), 1, "Secure Boot does not block the module"),
    Check("driver-library-mismatch", check_mismatch, ("driver-library-mismatch",), 1,
          "kernel module and user-space driver are the same version"),
    Check("nvml", check_nvml, ("nvml-no-permission", "nvml-module-missing", "nvml-unavailable"), 1,
          "NVML starts", (Category.DRIVER_LIBRARY_MISMATCH,)),
    Check("container", check_container, ("container-without-gpu",), 2, "a container was given the GPU"),
    Check("wsl", check_wsl, ("wsl-no-windows-driver", "wsl-linux-driver-installed"), 2, "WSL2 uses the Windows driver"),
    Check("visible-devices", check_visible_devices,
          ("cuda-visible-devices-hides-all", "cuda-visible-devices-invalid", "nvidia-visible-devices-none"), 2,
          "CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES let GPUs through"),
    Check("driver-for-gpu", check_driver_for_gpu, ("driver-too-old-for-gpu", "driver-dropped-gpu",
                                                   "driver-last-branch-for-gpu"), 1,
          "the driver branch supports every GPU's architecture"),
    Check("mig", check_mig, ("mig-enabled",), 2, "MIG mode"),
)
