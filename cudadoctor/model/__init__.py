"""The Snapshot: every fact the probes gathered, as frozen values.

Conventions (documented field by field in docs/snapshot.md):

- A section that is ``None`` is *unknown* (not probed, or not given in a hand-written
  snapshot). A section that is present but empty means *known to be absent*.
- Inside a section, a field that is ``None`` is unknown unless its docs say otherwise.
- A probe that fails records a :class:`ProbeError` in ``Snapshot.errors`` next to whatever it
  could still read.

This module imports nothing of ours, and uses ``typing.Optional``/``Tuple`` rather than the
newer ``X | None`` syntax because the JSON loader evaluates the annotations at run time and the
package supports Python 3.9.
"""

from __future__ import annotations

import enum
from dataclasses import field
from typing import Dict, Optional, Tuple
from cudadoctor.record import frozen

SCHEMA_VERSION = 1


class ErrorKind(str, enum.Enum):
    """Why a probe could not read a fact."""

    NOT_INSTALLED = "not_installed"
    NOT_SUPPORTED = "not_supported"
    PERMISSION = "permission"
    TIMEOUT = "timeout"
    BAD_OUTPUT = "bad_output"
    ERROR = "error"


class Category(str, enum.Enum):
    """The closed vocabulary of root causes a finding or an error signature points to
    (docs/findings/README.md explains each)."""

    NO_GPU = "no_gpu"
    NO_DRIVER = "no_driver"
    KERNEL_MODULE_BLOCKED = "kernel_module_blocked"
    DRIVER_LIBRARY_MISMATCH = "driver_library_mismatch"
    NVML_UNAVAILABLE = "nvml_unavailable"
    CONTAINER_NO_GPU = "container_no_gpu"
    VISIBLE_DEVICES_HIDDEN = "visible_devices_hidden"
    DRIVER_TOO_OLD = "driver_too_old"
    CPU_ONLY_BUILD = "cpu_only_build"
    ARCH_UNSUPPORTED = "arch_unsupported"
    PYTHON_UNSUPPORTED = "python_unsupported"
    PLATFORM_UNSUPPORTED = "platform_unsupported"
    COMPANION_VERSION_MISMATCH = "companion_version_mismatch"
    WRONG_PACKAGE_VARIANT = "wrong_package_variant"
    MISSING_LIBRARY = "missing_library"
    LIBRARY_VERSION_CONFLICT = "library_version_conflict"
    CUDNN_MISMATCH = "cudnn_mismatch"
    NVCC_FRAMEWORK_MISMATCH = "nvcc_framework_mismatch"
    HOST_COMPILER_UNSUPPORTED = "host_compiler_unsupported"
    HARDWARE_FAULT = "hardware_fault"
    OUT_OF_MEMORY = "out_of_memory"
    SMOKE_FAILED = "smoke_failed"
    OTHER = "other"


@frozen
class ProbeError:
    """A fact a probe could not read, and why."""

    probe: str
    kind: ErrorKind
    detail: str
    duration_s: Optional[float] = None


# --------------------------------------------------------------------------- host


@frozen
class HostInfo:
    os: Optional[str] = None  # linux | windows | macos, else platform.system() in lower case
    distribution: Optional[str] = None  # PRETTY_NAME of /etc/os-release
    distribution_id: Optional[str] = None  # ID and VERSION_ID, e.g. "ubuntu 22.04"
    kernel: Optional[str] = None
    architecture: Optional[str] = None  # x86_64, aarch64, ...
    glibc: Optional[str] = None
    hostname: Optional[str] = None
    username: Optional[str] = None
    wsl: Optional[bool] = None  # running under WSL2
    container: Optional[str] = None  # none | docker | podman | kubernetes | apptainer | containerd | lxc
    cpu_model: Optional[str] = None
    cpu_count: Optional[int] = None
    memory_total_mib: Optional[int] = None
    secure_boot: Optional[bool] = None


# --------------------------------------------------------------------------- python


@frozen
class PythonEnv:
    """The target interpreter: the environment whose stack is inspected."""

    version: Optional[str] = None  # "3.11.7"
    implementation: Optional[str] = None  # cpython | pypy
    executable: Optional[str] = None
    prefix: Optional[str] = None
    base_prefix: Optional[str] = None
    env_kind: Optional[str] = None  # venv | conda | system
    env_name: Optional[str] = None
    platform_tag: Optional[str] = None  # sysconfig.get_platform(), e.g. linux-x86_64
    site_packages: Tuple[str, ...] = ()
    is_current: Optional[bool] = None  # the interpreter running cudadoctor itself
    externally_managed: Optional[bool] = None  # PEP 668: a system interpreter whose stdlib has EXTERNALLY-MANAGED


# --------------------------------------------------------------------------- driver


@frozen
class DriverInfo:
    loaded: Optional[bool] = None  # a kernel module is loaded and answering
    driver_version: Optional[str] = None  # user-space driver (NVML / nvidia-smi)
    cuda_driver_version: Optional[str] = None  # newest CUDA the driver supports, "12.8"
    nvml_version: Optional[str] = None
    nvml_error: Optional[str] = None  # NVML's exact error name, e.g. NVML_ERROR_DRIVER_NOT_LOADED
    kernel_module_version: Optional[str] = None
    kernel_module_flavor: Optional[str] = None  # proprietary | open
    nouveau_loaded: Optional[bool] = None
    device_nodes: Optional[Tuple[str, ...]] = None  # /dev/nvidia0, /dev/nvidiactl, /dev/nvidia-uvm, /dev/dxg
    source: Optional[str] = None  # nvml | nvidia-smi | proc


# --------------------------------------------------------------------------- gpus


@frozen
class Gpu:
    index: int
    name: Optional[str] = None
    uuid: Optional[str] = None
    serial: Optional[str] = None
    pci_bus_id: Optional[str] = None  # "00000000:17:00.0"
    pci_device_id: Optional[str] = None  # "0x2335" (device half of NVML's pciDeviceId)
    compute_capability: Optional[str] = None  # "9.0"
    memory_total_mib: Optional[int] = None
    memory_used_mib: Optional[int] = None
    mig_mode: Optional[str] = None  # enabled | disabled
    ecc_mode: Optional[str] = None  # enabled | disabled
    ecc_uncorrected_volatile: Optional[int] = None
    ecc_uncorrected_aggregate: Optional[int] = None
    retired_pages: Optional[int] = None
    retired_pages_pending: Optional[bool] = None
    remapped_rows_uncorrectable: Optional[int] = None
    remapped_rows_pending: Optional[bool] = None
    remapped_rows_failure: Optional[bool] = None
    pcie_gen_current: Optional[int] = None
    pcie_gen_max: Optional[int] = None
    pcie_width_current: Optional[int] = None
    pcie_width_max: Optional[int] = None
    persistence_mode: Optional[str] = None  # enabled | disabled
    temperature_c: Optional[int] = None
    power_limit_w: Optional[float] = None
    clocks_event_reasons: Optional[Tuple[str, ...]] = None  # decoded throttle reasons active now (NVML)
    source: Optional[str] = None  # nvml | nvidia-smi | pci


# --------------------------------------------------------------------------- toolkits


@frozen
class Toolkit:
    root: str
    version: Optional[str] = None  # "13.0.88" or "12.4"
    version_source: Optional[str] = None  # version.json | version.txt | dist-info | nvcc | cuda.h
    nvcc: Optional[str] = None  # path to nvcc, when present
    found_via: Tuple[str, ...] = ()  # CUDA_HOME, PATH, /usr/local/cuda, conda, pip, ...
    active: Optional[bool] = None  # the toolkit an extension build would use (docs/snapshot.md)
    exists: Optional[bool] = None  # False when only a variable such as CUDA_HOME names it


# --------------------------------------------------------------------------- libraries


@frozen
class LibraryCopy:
    path: str
    version: Optional[str] = None
    found_via: Optional[str] = None  # LD_LIBRARY_PATH | ldconfig | default | conda | pip:<dist>==<version>
    realpath: Optional[str] = None


@frozen
class Library:
    """One CUDA library family (libcudnn, libcublas, ...) and every copy found.

    ``copies`` are in the dynamic loader's search order: the first one is what
    ``dlopen("libX.so.N")`` would load; copies from pip wheels and conda come after, since
    frameworks reach those through their own RPATH.
    """

    name: str  # libcudnn
    copies: Tuple[LibraryCopy, ...] = ()


# --------------------------------------------------------------------------- packages


@frozen
class Package:
    name: str  # normalised distribution name (PEP 503)
    version: Optional[str] = None  # None: installed, version not given (a package list written by hand)
    installer: str = "pip"  # pip | conda
    build: Optional[str] = None  # conda build string
    channel: Optional[str] = None
    location: Optional[str] = None


# --------------------------------------------------------------------------- frameworks


@frozen
class FrameworkBuild:
    """A framework as built, read from its files without importing it.

    ``variant`` is ``cuda``, ``cpu``, ``rocm``, ``xpu`` or ``None`` when unknown; ``cuda`` is
    the CUDA runtime the build targets (``None`` for non-CUDA builds or when unknown).
    """

    name: str  # torch | torchvision | torchaudio | tensorflow | jax | jaxlib | cupy | ...
    version: Optional[str] = None
    variant: Optional[str] = None
    cuda: Optional[str] = None
    cudnn: Optional[str] = None
    nccl: Optional[str] = None
    git_version: Optional[str] = None
    distribution: Optional[str] = None  # the pip/conda distribution providing it
    location: Optional[str] = None
    details: Dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- compilers


@frozen
class Compiler:
    name: str  # gcc | g++ | clang | clang++ | the command named by $CC, $CXX or $CUDAHOSTCXX
    version: Optional[str] = None
    path: Optional[str] = None


# --------------------------------------------------------------------------- jetson


@frozen
class JetsonInfo:
    """An NVIDIA Jetson (Tegra SoC with an integrated GPU): its Jetson Linux (L4T) release and module.

    The whole section is ``None`` on a machine that is not a Jetson (no ``/etc/nv_tegra_release``
    and no ``nvidia-l4t-core`` package) and when the probe did not run.
    """

    l4t: Optional[str] = None  # "36.4.3": R36 and REVISION 4.3 of /etc/nv_tegra_release, else the package's
    l4t_source: Optional[str] = None  # nv_tegra_release | dpkg
    board: Optional[str] = None  # BOARD of /etc/nv_tegra_release, e.g. "generic"
    l4t_core_package: Optional[str] = None  # dpkg version of nvidia-l4t-core, "36.4.3-20250107174145"
    jetpack_package: Optional[str] = None  # dpkg version of nvidia-jetpack, "6.2+b77"; None: not installed
    model: Optional[str] = None  # /proc/device-tree/model, "NVIDIA Jetson AGX Orin Developer Kit"
    soc: Optional[str] = None  # the SoC of /proc/device-tree/compatible, "tegra234"


# --------------------------------------------------------------------------- smoke


@frozen
class SmokeTest:
    """One test of a smoke suite, on one GPU (or none)."""

    name: str  # matmul_bf16, autograd_mlp, d2d_bandwidth, ...
    status: str  # passed | failed | skipped | error
    gpu: Optional[int] = None
    duration_s: Optional[float] = None
    message: Optional[str] = None  # what was compared and the outcome, or why skipped
    error: Optional[str] = None  # "RuntimeError: CUDA error: no kernel image is available ..."
    cuda_error: Optional[str] = None  # decoded CUresult/cudaError name, e.g. CUDA_ERROR_NO_DEVICE
    metrics: Dict[str, float] = field(default_factory=dict)  # bandwidth_gbs, max_rel_error, ...


@frozen
class SmokeResult:
    """What one suite, run in its own child process, proved or failed to prove."""

    suite: str  # driver | torch | jax | cupy | tensorflow | julia
    status: str  # passed | failed | skipped | error | timeout | crashed
    reason: str = ""  # one line: why skipped, what failed, "killed by SIGSEGV", "timed out after 60 s"
    tier: Optional[str] = None  # quick | standard | stress
    tests: Tuple[SmokeTest, ...] = ()
    duration_s: Optional[float] = None
    exit_code: Optional[int] = None
    signal: Optional[str] = None  # SIGSEGV, SIGABRT, ... when the child died of one
    stderr_tail: str = ""
    framework: Optional[str] = None  # "torch 2.5.1+cu124"
    details: Dict[str, str] = field(default_factory=dict)  # e.g. loaded libraries: name -> path


# --------------------------------------------------------------------------- snapshot


# The values of Snapshot.gpus_source (and Gpu.source) that mean a driver answered for the GPU.
GPU_SOURCES_DRIVER = ("nvml", "nvidia-smi")

@frozen
class Snapshot:
    schema_version: int = SCHEMA_VERSION
    tool_version: Optional[str] = None
    created_at: Optional[str] = None  # ISO 8601, UTC
    host: Optional[HostInfo] = None
    python: Optional[PythonEnv] = None
    driver: Optional[DriverInfo] = None
    gpus: Optional[Tuple[Gpu, ...]] = None
    gpus_source: Optional[str] = None  # nvml | nvidia-smi | pci: who listed the GPUs (GPU_SOURCES_DRIVER)
    toolkits: Optional[Tuple[Toolkit, ...]] = None
    libraries: Optional[Tuple[Library, ...]] = None
    packages: Optional[Tuple[Package, ...]] = None
    frameworks: Optional[Tuple[FrameworkBuild, ...]] = None
    compilers: Optional[Tuple[Compiler, ...]] = None
    env: Optional[Dict[str, str]] = None
    errors: Tuple[ProbeError, ...] = ()
    probe_durations_s: Dict[str, float] = field(default_factory=dict)
    error_message: Optional[str] = None  # the error text a user saw (facts), to match against known signatures
    smoke: Optional[Tuple[SmokeResult, ...]] = None  # smoke suites' outcomes; None: not run
    jetson: Optional[JetsonInfo] = None  # a Jetson's L4T release and module; None: not a Jetson, or not probed

    def framework(self, name: str) -> Optional[FrameworkBuild]:
        """The build of ``name``, or ``None`` when absent or unknown."""
        for build in self.frameworks or ():
            if build.name == name:
                return build
        return None

    def library(self, name: str) -> Optional[Library]:
        for lib in self.libraries or ():
            if lib.name == name:
                return lib
        return None

    def errors_of(self, probe: str) -> Tuple[ProbeError, ...]:
        return tuple(e for e in self.errors if e.probe == probe)

    @property
    def gpus_from_driver(self) -> bool:
        """The GPU list came from a driver (NVML or nvidia-smi), not from the PCI bus alone: CUDA
        programs can reach these GPUs, where a driver works."""
        return self.gpus_source in GPU_SOURCES_DRIVER

    @property
    def active_toolkit(self) -> Optional[Toolkit]:
        for tk in self.toolkits or ():
            if tk.active:
                return tk
        return None


# --------------------------------------------------------------------------- findings


class Severity(str, enum.Enum):
    OK = "ok"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
    CRASHED = "crashed"  # the check itself raised: a bug in cudadoctor, not in the machine


@frozen
class FixCommand:
    """One command to paste. ``shell`` says where it runs (sh, or the manager it belongs to)."""

    run: str
    shell: str = "sh"  # sh | pip | uv | conda | pixi | powershell
    note: Optional[str] = None


@frozen
class Fix:
    text: str
    commands: Tuple[FixCommand, ...] = ()


@frozen
class Finding:
    """A diagnosis: what is wrong (or right), why, and how to fix it (docs/findings/<code>.md)."""

    code: str  # stable kebab-case id, e.g. "driver-too-old-for-build"
    severity: Severity
    category: Category
    title: str
    why: str = ""  # the facts with their values, and the rule that joins them
    fix: Optional[Fix] = None
    evidence: Tuple[str, ...] = ()  # snapshot fields, e.g. "driver.driver_version"
    source: Tuple[str, ...] = ()  # compat_data records, e.g. "cuda_toolkits.json#12.4.0"
    caused_by: Optional[str] = None  # code of the finding this one follows from
    confidence: str = "high"  # high | low (only an error message pointed here)


# --------------------------------------------------------------------------- report


@frozen
class Report:
    """What renderers draw: the snapshot, the findings, and the versions that produced them."""

    snapshot: Snapshot
    tool_version: str
    data_version: str
    findings: Tuple[Finding, ...] = ()
    checked: bool = False  # the checks ran (a probe-only report has no verdict)
    data_origin: Optional[str] = None  # shipped | source | installed | env | option: where the data came from
    redaction: Optional[str] = None  # how the report was redacted (cudadoctor.reports.redact); None: not redacted
    node: Optional[str] = None  # the node it comes from (cudadoctor.reports.node); a pseudonym when redacted
