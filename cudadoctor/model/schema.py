"""The JSON Schema (draft 2020-12) of a Snapshot, generated from :mod:`cudadoctor.model`.

``python -m cudadoctor.model.schema`` prints it; ``docs/snapshot.schema.json`` is that output checked
in, and ``tests/test_model_schema.py`` fails when the two differ.

The field descriptions live in :data:`DESCRIPTIONS` below, keyed ``Class`` and
``Class.field``. They sit here rather than in ``docs/`` because the schema must also be
generated from an installed wheel, which does not ship the docs; and here rather than in
``model.py`` so the model stays a short list of typed fields. Generation raises ``KeyError`` for a
field without a description and the tests reject a key that names no field, so the table can
drift from the model in neither direction. The long form, with sources and examples, is
``docs/snapshot.md``.

The schema mirrors what :mod:`cudadoctor.model.serialize` loads: every property is optional unless
the dataclass field has no default, ``null`` is allowed exactly where the type is ``Optional``,
and unknown keys are rejected (``additionalProperties: false``).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import sys
import typing
from typing import Any, Dict

from cudadoctor import model
from cudadoctor.model import SCHEMA_VERSION, Snapshot
from cudadoctor.model.serialize import to_jsonable

DRAFT = "https://json-schema.org/draft/2020-12/schema"
REGENERATE = "python -m cudadoctor.model.schema > docs/snapshot.schema.json"

_UNKNOWN = "null: unknown (not probed, or the probe failed: see errors)."

DESCRIPTIONS: Dict[str, str] = {
    # ------------------------------------------------------------------ snapshot
    "Snapshot": "Every fact cudadoctor gathered about one machine and one target Python environment. "
    "A section that is null is unknown; a section that is present but empty is known to be absent.",
    "Snapshot.schema_version": f"Version of the snapshot layout; this schema describes version {SCHEMA_VERSION}. "
    "Missing means the current version; a newer version than the reader knows is refused.",
    "Snapshot.tool_version": "Version of the cudadoctor that collected the snapshot.",
    "Snapshot.created_at": "When the snapshot was collected: ISO 8601, UTC, whole seconds.",
    "Snapshot.host": "Operating system, kernel, container and CPU facts. " + _UNKNOWN,
    "Snapshot.python": "The target interpreter, whose environment is inspected. " + _UNKNOWN,
    "Snapshot.driver": "The NVIDIA driver: user-space versions, NVML, kernel module. " + _UNKNOWN,
    "Snapshot.gpus": "Every GPU found, in NVML index order. [] means none (see gpus_source for who looked). "
    + _UNKNOWN,
    "Snapshot.gpus_source": "Who listed the GPUs: nvml, nvidia-smi, or pci (/sys/bus/pci: the GPUs exist but no "
    "driver answered for them). null when gpus is null.",
    "Snapshot.toolkits": "Every CUDA toolkit found. [] means none. " + _UNKNOWN,
    "Snapshot.libraries": "Each CUDA library family with every copy found; families with no copy are left out. "
    + _UNKNOWN,
    "Snapshot.packages": "GPU-related pip and conda distributions of the target environment (not every package). "
    + _UNKNOWN,
    "Snapshot.frameworks": "Framework builds read from their files. [] means none of the known frameworks. "
    + _UNKNOWN,
    "Snapshot.compilers": "Host compilers on PATH. [] means none. " + _UNKNOWN,
    "Snapshot.env": "Environment variables that affect a GPU stack; a variable absent from the object is not set. "
    + _UNKNOWN,
    "Snapshot.errors": "The facts probes could not read, and why.",
    "Snapshot.probe_durations_s": "Seconds each probe took, by probe name; a probe that overran its deadline is "
    "absent.",
    # ------------------------------------------------------------------ errors
    "ProbeError": "A fact a probe could not read, and why.",
    "ProbeError.probe": "The probe: host, env, python, driver, gpus, toolkits, libraries, packages, frameworks "
    "or compilers.",
    "ProbeError.kind": "Why the fact could not be read.",
    "ProbeError.detail": "One line for a person, e.g. 'nvidia-smi not found'.",
    "ProbeError.duration_s": "Seconds the probe that recorded it ran (the stage deadline for a probe that "
    "overran). null: not measured.",
    "ErrorKind": "not_installed: the thing is absent; not_supported: this platform or GPU cannot answer; "
    "permission: access denied; timeout: ran past its time limit; bad_output: answered with something "
    "unparseable; error: anything else, probe bugs included.",
    # ------------------------------------------------------------------ host
    "HostInfo": "The machine and its operating system (probe: host).",
    "HostInfo.os": "linux, windows or macos; another system's name in lower case otherwise.",
    "HostInfo.distribution": "PRETTY_NAME of /etc/os-release, e.g. 'Ubuntu 22.04.4 LTS'. Linux only.",
    "HostInfo.distribution_id": "ID and VERSION_ID of /etc/os-release, e.g. 'ubuntu 22.04'. Linux only.",
    "HostInfo.kernel": "Kernel release (platform.release()), e.g. '6.8.0-45-generic'.",
    "HostInfo.architecture": "Machine architecture (platform.machine()): x86_64, aarch64, ...",
    "HostInfo.glibc": "glibc version, e.g. '2.35'. null: not glibc (musl, macOS, Windows) or unknown.",
    "HostInfo.hostname": "Host name (socket.gethostname()).",
    "HostInfo.username": "User running cudadoctor.",
    "HostInfo.wsl": "Running under WSL2: 'microsoft' in the kernel release, or /dev/dxg present. Linux only.",
    "HostInfo.container": "Container runtime detected: docker, podman, kubernetes, apptainer, containerd, lxc or "
    "the value of $container; 'none' when no container is detected. null: unknown (not Linux).",
    "HostInfo.cpu_model": "CPU model from /proc/cpuinfo, e.g. 'AMD EPYC 9654 96-Core Processor'.",
    "HostInfo.cpu_count": "Logical CPUs (os.cpu_count()).",
    "HostInfo.memory_total_mib": "MemTotal of /proc/meminfo, in MiB.",
    "HostInfo.secure_boot": "UEFI Secure Boot is on (SecureBoot EFI variable). null: no EFI variables or unreadable.",
    # ------------------------------------------------------------------ python
    "PythonEnv": "The target interpreter: the environment whose stack is inspected (probe: python).",
    "PythonEnv.version": "Python version, e.g. '3.11.7'.",
    "PythonEnv.implementation": "cpython or pypy (platform.python_implementation(), lower case).",
    "PythonEnv.executable": "sys.executable of the target.",
    "PythonEnv.prefix": "sys.prefix of the target.",
    "PythonEnv.base_prefix": "sys.base_prefix of the target; differs from prefix in a venv.",
    "PythonEnv.env_kind": "venv, conda or system.",
    "PythonEnv.env_name": "Name of the venv (its folder) or conda env. null for a system interpreter.",
    "PythonEnv.platform_tag": "sysconfig.get_platform(), e.g. 'linux-x86_64'.",
    "PythonEnv.site_packages": "The target's site directories, in sys.path order.",
    "PythonEnv.is_current": "The target is the interpreter running cudadoctor itself.",
    "PythonEnv.externally_managed": "PEP 668: a system interpreter whose standard library folder holds an "
    "EXTERNALLY-MANAGED file (pip refuses to install into it). null: not known (venvs and conda envs: false).",
    "Snapshot.smoke": "Outcomes of the smoke suites run in child processes (cudadoctor smoke, or check's quick "
    "tier). null: not run.",
    "SmokeResult": "One smoke suite's outcome, from its child process.",
    "SmokeResult.suite": "driver, torch, jax, cupy, tensorflow or julia.",
    "SmokeResult.status": "passed, failed, skipped, error, timeout or crashed (the child died of a signal).",
    "SmokeResult.reason": "One line: why skipped, what failed, 'killed by SIGSEGV', 'timed out after 60 s'.",
    "SmokeResult.tier": "quick, standard or stress.",
    "SmokeResult.tests": "Every test the suite ran, per GPU.",
    "SmokeResult.duration_s": "Wall time of the child process in seconds.",
    "SmokeResult.exit_code": "The child's exit status; null when it was killed.",
    "SmokeResult.signal": "The signal that ended the child (SIGSEGV, SIGABRT, ...), or null.",
    "SmokeResult.stderr_tail": "The last lines the child wrote to stderr.",
    "SmokeResult.framework": "The framework build the suite ran under, e.g. 'torch 2.5.1+cu124'.",
    "SmokeResult.details": "Further facts as strings, e.g. the libraries the framework really loaded.",
    "SmokeTest": "One test of a smoke suite.",
    "SmokeTest.name": "Test name, e.g. matmul_bf16, autograd_mlp, d2d_bandwidth.",
    "SmokeTest.status": "passed, failed, skipped or error.",
    "SmokeTest.gpu": "The GPU index it ran on; null for tests of no single GPU.",
    "SmokeTest.duration_s": "Seconds the test took.",
    "SmokeTest.message": "What was compared and the outcome, or why it was skipped.",
    "SmokeTest.error": "The exception, 'Type: message', when the test raised.",
    "SmokeTest.cuda_error": "The decoded CUDA error name, e.g. CUDA_ERROR_NO_DEVICE.",
    "SmokeTest.metrics": "Numbers the test measured: bandwidth_gbs, max_rel_error, ...",
    "Snapshot.error_message": "The error text the user saw (from `diagnose --facts` or `explain`), matched "
    "against the known error signatures. null: none given.",
    # ------------------------------------------------------------------ driver
    "DriverInfo": "The NVIDIA driver (probe: driver). NVML first; nvidia-smi when NVML fails.",
    "DriverInfo.loaded": "The kernel driver is loaded and answering. false: known not loaded; null: cannot tell.",
    "DriverInfo.driver_version": "User-space driver version (nvmlSystemGetDriverVersion), e.g. '570.86.15'.",
    "DriverInfo.cuda_driver_version": "Newest CUDA version the driver supports (nvmlSystemGetCudaDriverVersion_v2; "
    "nvidia-smi's 'CUDA Version'), e.g. '12.8'. Not an installed toolkit.",
    "DriverInfo.nvml_version": "NVML library version (nvmlSystemGetNVMLVersion), e.g. '12.570.86.15'.",
    "DriverInfo.nvml_error": "NVML's error name when it could not be initialised, e.g. "
    "'NVML_ERROR_DRIVER_NOT_LOADED'; 'PYNVML_NOT_INSTALLED' without nvidia-ml-py. null: NVML initialised.",
    "DriverInfo.kernel_module_version": "Kernel module version from /proc/driver/nvidia/version "
    "(or /sys/module/nvidia/version). null: no module loaded, or unreadable.",
    "DriverInfo.kernel_module_flavor": "proprietary or open (the open GPU kernel modules).",
    "DriverInfo.nouveau_loaded": "The nouveau driver is loaded (/sys/module/nouveau). null: /sys/module unreadable.",
    "DriverInfo.device_nodes": "NVIDIA device nodes in /dev (nvidia0, nvidiactl, nvidia-uvm, ...; dxg on WSL2). "
    "[]: none; null: unknown.",
    "DriverInfo.source": "Where driver_version came from: nvml, nvidia-smi or proc. null: nothing answered.",
    # ------------------------------------------------------------------ gpus
    "Gpu": "One GPU (probe: gpus). A field the GPU or the source cannot report is null.",
    "Gpu.index": "NVML index (PCI bus order; CUDA's own order may differ).",
    "Gpu.name": "Product name, e.g. 'NVIDIA H200'.",
    "Gpu.uuid": "GPU UUID, e.g. 'GPU-8f6c...'.",
    "Gpu.serial": "Board serial number. Often null on consumer GPUs.",
    "Gpu.pci_bus_id": "PCI bus id, e.g. '00000000:17:00.0'.",
    "Gpu.pci_device_id": "PCI device id (device half of NVML's pciDeviceId), e.g. '0x2335'.",
    "Gpu.compute_capability": "CUDA compute capability 'major.minor', e.g. '9.0' (sm_90).",
    "Gpu.memory_total_mib": "Total memory in MiB.",
    "Gpu.memory_used_mib": "Used memory in MiB when probed.",
    "Gpu.mig_mode": "Current MIG mode: enabled or disabled. null on GPUs without MIG.",
    "Gpu.ecc_mode": "Current ECC mode: enabled or disabled. null on GPUs without ECC.",
    "Gpu.ecc_uncorrected_volatile": "Uncorrected ECC errors since the driver was loaded.",
    "Gpu.ecc_uncorrected_aggregate": "Uncorrected ECC errors over the GPU's lifetime.",
    "Gpu.retired_pages": "Pages retired for single- and double-bit ECC errors (NVML only; GPUs before Ampere).",
    "Gpu.retired_pages_pending": "A page retirement waits for the next driver reload.",
    "Gpu.remapped_rows_uncorrectable": "Rows remapped for uncorrectable errors (NVML only; Ampere and later).",
    "Gpu.remapped_rows_pending": "A row remap waits for the next GPU reset.",
    "Gpu.remapped_rows_failure": "A row remap failed: the GPU needs service.",
    "Gpu.pcie_gen_current": "Current PCIe link generation (drops when idle).",
    "Gpu.pcie_gen_max": "Maximum PCIe link generation of the GPU and slot.",
    "Gpu.pcie_width_current": "Current PCIe link width (lanes).",
    "Gpu.pcie_width_max": "Maximum PCIe link width (lanes).",
    "Gpu.persistence_mode": "enabled or disabled. null on platforms without it (Windows).",
    "Gpu.temperature_c": "GPU temperature in degrees Celsius.",
    "Gpu.power_limit_w": "Enforced power limit in watts.",
    "Gpu.clocks_event_reasons": "Reasons clocks are held back now (NVML only), e.g. 'sw_power_cap'. []: none; "
    "null: not read (nvidia-smi and pci sources).",
    "Gpu.source": "Where this GPU's facts came from: nvml, nvidia-smi, or pci (only the PCI ids are known).",
    # ------------------------------------------------------------------ toolkits
    "Toolkit": "A CUDA toolkit folder (probe: toolkits).",
    "Toolkit.root": "The toolkit's folder, symlinks resolved, e.g. '/usr/local/cuda-12.4'.",
    "Toolkit.version": "Toolkit version, e.g. '13.0.88'; only 'major.minor' from some sources.",
    "Toolkit.version_source": "Where the version came from: version.json, version.txt, dist-info, nvcc or cuda.h.",
    "Toolkit.nvcc": "Path of bin/nvcc in the toolkit. null: the toolkit has no nvcc.",
    "Toolkit.found_via": "How it was found: CUDA_HOME, CUDA_PATH, CUDA_ROOT, 'PATH (<nvcc>)', /usr/local/cuda, "
    "/usr/local/cuda-X.Y, /opt/cuda, /usr/lib/cuda, conda, pip.",
    "Toolkit.active": "The toolkit an extension build would use: CUDA_HOME or CUDA_PATH, else nvcc on PATH, else "
    "/usr/local/cuda. At most one is active. null: unknown.",
    "Toolkit.exists": "false when only a variable such as CUDA_HOME names the folder and it does not exist. "
    "null: unknown.",
    # ------------------------------------------------------------------ libraries
    "Library": "One CUDA library family and every copy found (probe: libraries). Copies are in the dynamic "
    "loader's order; pip and conda copies follow.",
    "Library.name": "Family: libcuda, libnvidia-ml, libcudart, libcudnn, libcublas, libnccl, ...",
    "Library.copies": "Every copy, the one dlopen('libX.so.N') would load first.",
    "LibraryCopy": "One file of a library family.",
    "LibraryCopy.path": "Path as found, usually the soname link, e.g. '/usr/lib/x86_64-linux-gnu/libcuda.so.1'.",
    "LibraryCopy.version": "Version from the file names, cuDNN's header or the owning pip wheel: as precise as "
    "they allow, e.g. '12' or '9.1.0'.",
    "LibraryCopy.found_via": "LD_LIBRARY_PATH, ldconfig, default, conda, or pip:<distribution>==<version>.",
    "LibraryCopy.realpath": "Target when path is a symbolic link. null: path is the file itself.",
    # ------------------------------------------------------------------ packages
    "Package": "An installed distribution (probe: packages).",
    "Package.name": "Distribution name, PEP 503 normalised, e.g. 'nvidia-cudnn-cu12'.",
    "Package.version": "Installed version, e.g. '9.1.0.70'.",
    "Package.installer": "pip (a .dist-info or .egg-info folder) or conda (a conda-meta record).",
    "Package.build": "conda build string. null for pip.",
    "Package.channel": "conda channel, e.g. 'conda-forge'. null for pip.",
    "Package.location": "Site directory (pip) or environment prefix (conda).",
    # ------------------------------------------------------------------ frameworks
    "FrameworkBuild": "A framework as built, read from its files without importing it (probe: frameworks).",
    "FrameworkBuild.name": "torch, torchvision, torchaudio, tensorflow, jax, cupy, onnxruntime, tensorrt, numba "
    "or julia.",
    "FrameworkBuild.version": "Framework version, e.g. '2.5.1+cu124'.",
    "FrameworkBuild.variant": "cuda, cpu, rocm or xpu. null: unknown.",
    "FrameworkBuild.cuda": "CUDA runtime the build targets, e.g. '12.4' (torch.version.cuda), or only the major "
    "('12') where that is all the package name says. null: not a CUDA build, or unknown.",
    "FrameworkBuild.cudnn": "cuDNN version the build uses, when known.",
    "FrameworkBuild.nccl": "NCCL version the build uses, when known.",
    "FrameworkBuild.git_version": "Source commit of the build (torch's version.py).",
    "FrameworkBuild.distribution": "The distribution providing it, 'name==version'.",
    "FrameworkBuild.location": "Package folder, site directory, or the julia executable.",
    "FrameworkBuild.details": "Further facts as strings, per framework (e.g. cudnn_from, jaxlib, plugin, "
    "CUDA.jl).",
    # ------------------------------------------------------------------ compilers
    "Compiler": "A host compiler on PATH (probe: compilers).",
    "Compiler.name": "gcc, g++, clang, clang++, or the command named by $CC, $CXX or $CUDAHOSTCXX.",
    "Compiler.version": "Version from '<compiler> --version', e.g. '12.2.0'. null: unreadable.",
    "Compiler.path": "Where it was found on PATH.",
    # ------------------------------------------------------------------ jetson
    "Snapshot.jetson": "An NVIDIA Jetson's Jetson Linux (L4T) release and module (probe: jetson). null: not a "
    "Jetson (no /etc/nv_tegra_release and no nvidia-l4t-core package), or not probed.",
    "JetsonInfo": "A Jetson: Tegra SoC with an integrated GPU whose driver is part of Jetson Linux (L4T), not a "
    "desktop driver branch.",
    "JetsonInfo.l4t": "Jetson Linux release, e.g. '36.4.3' (R36, REVISION 4.3 of /etc/nv_tegra_release; else the "
    "nvidia-l4t-core package version before its '-').",
    "JetsonInfo.l4t_source": "Where l4t was read: nv_tegra_release or dpkg.",
    "JetsonInfo.board": "BOARD of /etc/nv_tegra_release, e.g. 'generic'.",
    "JetsonInfo.l4t_core_package": "dpkg version of nvidia-l4t-core, e.g. '36.4.3-20250107174145'. null: unknown.",
    "JetsonInfo.jetpack_package": "dpkg version of the nvidia-jetpack meta-package, e.g. '6.2+b77'. null: not "
    "installed or unknown.",
    "JetsonInfo.model": "The module and carrier, from /proc/device-tree/model, e.g. 'NVIDIA Jetson AGX Orin "
    "Developer Kit'.",
    "JetsonInfo.soc": "The SoC, the last entry of /proc/device-tree/compatible without its vendor, e.g. 'tegra234'.",
}


def snapshot_schema() -> Dict[str, Any]:
    """The JSON Schema of a Snapshot as a dict, in model order."""
    defs: Dict[str, Any] = {}
    root = _object(Snapshot, defs)
    return {
        "$schema": DRAFT,
        "$comment": f"Generated from cudadoctor/model/__init__.py; regenerate with: {REGENERATE}",
        "title": "cudadoctor snapshot",
        **root,
        "$defs": defs,
    }


def schema_json() -> str:
    """The schema as the text of ``docs/snapshot.schema.json``."""
    return json.dumps(snapshot_schema(), indent=2, ensure_ascii=False) + "\n"


def _object(cls: type, defs: Dict[str, Any]) -> Dict[str, Any]:
    hints = typing.get_type_hints(cls, vars(model))
    properties: Dict[str, Any] = {}
    required = []
    for f in dataclasses.fields(cls):
        prop = dict(_type(hints[f.name], defs))
        prop["description"] = _describe(f"{cls.__name__}.{f.name}")
        if f.default is not dataclasses.MISSING:
            prop["default"] = to_jsonable(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            prop["default"] = to_jsonable(f.default_factory())
        else:
            required.append(f.name)
        properties[f.name] = prop
    out: Dict[str, Any] = {"type": "object", "description": _describe(cls.__name__), "properties": properties}
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out


def _describe(key: str) -> str:
    try:
        return DESCRIPTIONS[key]
    except KeyError:
        raise KeyError(f"no description for {key}: add one to DESCRIPTIONS in cudadoctor/model/schema.py") from None


def _type(tp: Any, defs: Dict[str, Any]) -> Dict[str, Any]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union:
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1 or len(args) != 2:
            raise TypeError(f"only Optional[X] unions are supported, not {tp!r}")
        schema = _type(inner[0], defs)
        if isinstance(schema.get("type"), str) and "enum" not in schema:
            return {**schema, "type": [schema["type"], "null"]}
        return {"anyOf": [schema, {"type": "null"}]}
    if origin is tuple:
        if len(args) != 2 or args[1] is not Ellipsis:
            raise TypeError(f"only Tuple[X, ...] is supported, not {tp!r}")
        return {"type": "array", "items": _type(args[0], defs)}
    if origin is dict:
        if args[0] is not str:
            raise TypeError(f"only Dict[str, X] is supported, not {tp!r}")
        return {"type": "object", "additionalProperties": _type(args[1], defs)}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}  # reserve the slot: $defs stay in the order they are met
            defs[tp.__name__] = _object(tp, defs)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        defs.setdefault(
            tp.__name__,
            {"type": "string", "description": _describe(tp.__name__), "enum": [m.value for m in tp]},
        )
        return {"$ref": f"#/$defs/{tp.__name__}"}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    raise TypeError(f"no JSON Schema for {tp!r}; teach cudadoctor/model/schema.py about it")


_SCALARS: Dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def main() -> None:
    sys.stdout.write(schema_json())


if __name__ == "__main__":
    main()
