"""Host facts (OS, kernel, WSL, container, CPU, memory) and the environment variables that
matter to a GPU stack."""

from __future__ import annotations

import re
from typing import Dict, List, Optional

from cudadoctor.host import try_read_text
from cudadoctor.model import ErrorKind, HostInfo, ProbeError
from cudadoctor.model.parsers import (
    detect_container_from_cgroup,
    parse_cpu_model,
    parse_meminfo_total_mib,
    parse_os_release,
    parse_secure_boot_efivar,
)
from cudadoctor.probes.context import ProbeOutput
from cudadoctor.probes.context import Context

_OS = {"Linux": "linux", "Windows": "windows", "Darwin": "macos"}
SECURE_BOOT_VAR = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"


def probe_host(ctx: Context) -> ProbeOutput:
    """Reads platform facts, /etc/os-release, /proc/{version,cpuinfo,meminfo,1/cgroup}, the
    container marker files and the SecureBoot EFI variable. Missing files leave fields unknown."""
    host = ctx.host
    plat = host.platform()
    errors: List[ProbeError] = []
    os_name = _OS.get(plat.system, plat.system.lower() or None)
    distribution = distribution_id = None
    wsl = container = cpu_model = None
    memory = None
    secure_boot = None
    if os_name == "linux":
        release = parse_os_release(try_read_text(host, "/etc/os-release") or "")
        if not release:
            release = parse_os_release(try_read_text(host, "/usr/lib/os-release") or "")
        distribution = release.get("PRETTY_NAME") or release.get("NAME")
        if release.get("ID"):
            distribution_id = " ".join(p for p in (release.get("ID"), release.get("VERSION_ID")) if p)
        wsl = _is_wsl(ctx, plat.release)
        container = _container(ctx)
        cpuinfo = try_read_text(host, "/proc/cpuinfo", 256 * 1024)
        cpu_model = parse_cpu_model(cpuinfo or "")
        memory = parse_meminfo_total_mib(try_read_text(host, "/proc/meminfo") or "")
        if memory is None:
            errors.append(ProbeError("host", ErrorKind.NOT_SUPPORTED, "/proc/meminfo is not readable"))
        secure_boot = _secure_boot(ctx)
    elif os_name == "macos":
        errors.append(
            ProbeError("host", ErrorKind.NOT_SUPPORTED, "macOS: only platform facts are read")
        )
    info = HostInfo(
        os=os_name,
        distribution=distribution,
        distribution_id=distribution_id,
        kernel=plat.release or None,
        architecture=plat.machine or None,
        glibc=_glibc(plat.libc),
        hostname=plat.hostname or None,
        username=plat.username or None,
        wsl=wsl,
        container=container,
        cpu_model=cpu_model,
        cpu_count=plat.cpu_count,
        memory_total_mib=memory,
        secure_boot=secure_boot,
    )
    return ProbeOutput({"host": info}, errors)


def _glibc(libc: str) -> Optional[str]:
    m = re.fullmatch(r"glibc\s+(\S+)", libc.strip())
    return m.group(1) if m else None


def _is_wsl(ctx: Context, release: str) -> bool:
    """WSL2 kernels say 'microsoft' in their release; /dev/dxg is WSL's GPU paravirtual device."""
    osrelease = try_read_text(ctx.host, "/proc/sys/kernel/osrelease") or release
    return "microsoft" in osrelease.lower() or ctx.host.exists("/dev/dxg")


def _container(ctx: Context) -> Optional[str]:
    host, env = ctx.host, ctx.env()
    if env.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    if env.get("APPTAINER_CONTAINER") or env.get("SINGULARITY_CONTAINER") or host.exists("/.singularity.d"):
        return "apptainer"
    if host.exists("/run/.containerenv"):
        return "podman"
    if host.exists("/.dockerenv"):
        return "docker"
    from_env = env.get("container")  # set by systemd-nspawn, lxc and podman for pid 1
    if from_env:
        return from_env
    # "none": no marker file, variable or cgroup path says container (not a proof, but what
    # every container runtime we know of leaves behind is absent).
    return detect_container_from_cgroup(try_read_text(ctx.host, "/proc/1/cgroup") or "") or "none"


def _secure_boot(ctx: Context) -> Optional[bool]:
    try:
        return parse_secure_boot_efivar(ctx.host.read_bytes(SECURE_BOOT_VAR, 64))
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------- environment

# Variables that change how GPU stacks find devices, libraries and compilers. Everything else in
# the environment is left out of the snapshot.
ENV_NAMES = frozenset(
    {
        "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT",
        "CUDA_MODULE_LOADING", "CUDA_LAUNCH_BLOCKING", "CUDA_CACHE_PATH", "CUDA_CACHE_DISABLE",
        "CUDA_FORCE_PTX_JIT", "CUDA_DISABLE_PTX_JIT", "CUDNN_PATH", "CUDAHOSTCXX",
        "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_REQUIRE_CUDA",
        "NVIDIA_DISABLE_REQUIRE", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN",
        "LD_LIBRARY_PATH", "LD_PRELOAD", "LIBRARY_PATH", "CPATH", "PATH", "CC", "CXX",
        "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NVML_BASED_CUDA_CHECK", "TORCH_CUDA_ARCH_LIST",
        "TORCH_USE_CUDA_DSA", "XLA_FLAGS", "XLA_PYTHON_CLIENT_PREALLOCATE",
        "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_ALLOCATOR", "JAX_PLATFORMS",
        "JAX_PLATFORM_NAME", "CUPY_CUDA_PATH", "CUPY_ACCELERATORS", "NUMBA_CUDA_DRIVER",
        "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "SLURM_JOB_GPUS",
        "SLURM_STEP_GPUS", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "VIRTUAL_ENV", "PYTHONPATH",
        "PYTHONNOUSERSITE", "JULIA_PROJECT", "JULIA_DEPOT_PATH", "JULIA_CUDA_USE_BINARYBUILDER",
        "__NV_PRIME_RENDER_OFFLOAD", "WSL_DISTRO_NAME",
    }
)
ENV_PREFIXES = (
    "CUDA_", "NVIDIA_", "NCCL_", "XLA_", "JAX_", "CUDNN_", "JULIA_CUDA_", "CUPY_", "TORCH_CUDA",
    "TF_GPU_", "TF_CUDA", "TF_XLA", "TF_FORCE_", "TF_CPP_", "TF_ENABLE_",  # not TF_* at large: Terraform uses it
)


def probe_env(ctx: Context) -> ProbeOutput:
    """The environment variables a GPU stack reacts to (names in ENV_NAMES or ENV_PREFIXES)."""
    env = ctx.env()
    chosen: Dict[str, str] = {
        k: v for k, v in sorted(env.items()) if k in ENV_NAMES or k.startswith(ENV_PREFIXES)
    }
    return ProbeOutput({"env": chosen})
