"""Fault injection, probe by probe: every external command the probes run, every file they
read and every NVML call can be missing, fail, hang, print garbage or be forbidden. In each case
``collect`` still returns a Snapshot, the failure is a ProbeError of the right kind with a
detail a user can act on, and the other sections are still filled.

The machines are RecordedHost dicts built here: a healthy one (:func:`healthy`) and one change
per test. ``cudadoctor.host.run_command`` and ``RealHost.interpreter`` are tested for real at
the end, with tiny shell scripts.
"""

from __future__ import annotations

import copy
import json
import os
import stat
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest

from cudadoctor import probes
import cudadoctor.host as host_module
from cudadoctor.host import (
    INTERPRETER_SCRIPT,
    CommandResult,
    InterpreterError,
    InterpreterFacts,
    RealHost,
    run_command,
)
from cudadoctor.model import ErrorKind, ProbeError, Snapshot
from cudadoctor.probes import collect, probe_deadline
from cudadoctor.probes.driver import SMI_BASIC_FIELDS, SMI_FIELDS
from cudadoctor.host.recorded import RecordedHost
from cudadoctor.model.serialize import snapshot_from_json, snapshot_to_json

TIMEOUT = 0.2  # per command; the probe stage as a whole gets probe_deadline(TIMEOUT)
HANG = 3.0  # longer than any deadline here, short enough that stray sleeper threads end soon

PY = "/home/u/proj/.venv/bin/python"
SITE = "/home/u/proj/.venv/lib/python3.11/site-packages"
CUDA = "/usr/local/cuda-12.4"

SMI_QUERY = ("nvidia-smi", "--query-gpu=" + ",".join(SMI_FIELDS), "--format=csv,noheader,nounits")
SMI_BASIC = ("nvidia-smi", "--query-gpu=" + ",".join(SMI_BASIC_FIELDS), "--format=csv,noheader,nounits")
SMI_ROW = ("0, NVIDIA GeForce RTX 4090, GPU-5f2e4c1a-0000-1111-2222-333344445555, [N/A], 00000000:01:00.0, "
           "0x268410DE, 8.9, 24564, 1, [N/A], [N/A], [N/A], [N/A], [N/A], 4, 4, 16, 16, Disabled, 35, 450.00, "
           "565.57.01")
NVCC = ("nvcc", "--version")
GCC = ("gcc", "--version")
LDCONFIG = ("ldconfig", "-p")
JULIA = ("julia", "--version")
PYTHON_SCRIPT = (PY, "-I", "-c", INTERPRETER_SCRIPT)

# REAL: the open kernel module's /proc file (github.com/nix-community/nixGL/issues/186).
PROC_VERSION = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  "
                "(dvs-builder@U16-A24-9-2)  Thu Oct 10 12:15:00 UTC 2024\n"
                "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n")
# REAL: `nvcc --version` of CUDA 12.4.0.
NVCC_OUT = ("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2024 NVIDIA Corporation\n"
            "Built on Tue_Feb_27_16:19:38_PST_2024\nCuda compilation tools, release 12.4, V12.4.99\n"
            "Build cuda_12.4.r12.4/compiler.33961263_0\n")
# What a broken driver install prints (on stdout), with exit status 9.
SMI_FAILED = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
              "Make sure that the latest NVIDIA driver is installed and running.\n")

INTERPRETER = {
    "executable": PY, "version": "3.11.9", "implementation": "cpython", "prefix": "/home/u/proj/.venv",
    "base_prefix": "/usr", "platform_tag": "linux-x86_64", "site_packages": [SITE], "conda_prefix_env": None,
}
HEALTHY_NVML = {
    "init_error": None,
    "system": {"nvmlSystemGetDriverVersion": "565.57.01", "nvmlSystemGetCudaDriverVersion_v2": 12070,
               "nvmlSystemGetNVMLVersion": "12.565.57.01"},
    "devices": [{
        "nvmlDeviceGetName": "NVIDIA GeForce RTX 4090",
        "nvmlDeviceGetUUID": "GPU-5f2e4c1a-0000-1111-2222-333344445555",
        "nvmlDeviceGetCudaComputeCapability": [8, 9],
        "nvmlDeviceGetMemoryInfo": {"total": 25757220864, "used": 1048576, "free": 25756172288},
        "nvmlDeviceGetPciInfo": {"busId": "00000000:01:00.0", "pciDeviceId": 0x268410DE},
    }],
}


def healthy() -> Dict[str, Any]:
    """A working workstation: driver 565 (open module), one RTX 4090, CUDA 12.4 toolkit, a venv
    with torch 2.5.1+cu124, gcc 12, julia 1.10 with CUDA.jl."""
    return copy.deepcopy({
        "platform": {"system": "Linux", "release": "6.8.0-45-generic", "machine": "x86_64", "hostname": "box",
                     "username": "u", "cpu_count": 16, "libc": "glibc 2.39"},
        "env": {"PATH": "/home/u/proj/.venv/bin:/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin",
                "HOME": "/home/u", "VIRTUAL_ENV": "/home/u/proj/.venv"},
        "files": {
            "/etc/os-release": 'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nID=ubuntu\nVERSION_ID="24.04"\n',
            "/proc/meminfo": "MemTotal:       65536000 kB\n",
            "/proc/cpuinfo": "model name\t: AMD EPYC 9654 96-Core Processor\n",
            "/proc/driver/nvidia/version": PROC_VERSION,
            "/sys/module/nvidia/version": "565.57.01\n",
            "/dev/nvidia0": "", "/dev/nvidiactl": "",
            "/usr/bin/nvidia-smi": "", "/usr/bin/gcc": "", "/usr/bin/julia": "", "/sbin/ldconfig": "",
            f"{CUDA}/bin/nvcc": "",
            f"{CUDA}/version.json": json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}),
            f"{CUDA}/lib64/libcudart.so.12.4.127": "",
            "/usr/lib/x86_64-linux-gnu/libcuda.so.565.57.01": "",
            f"{SITE}/torch-2.5.1+cu124.dist-info/METADATA": "Name: torch\nVersion: 2.5.1+cu124\n",
            f"{SITE}/torch/version.py": "__version__ = '2.5.1+cu124'\ncuda = '12.4'\ngit_version = 'a8d6afb'\n",
            "/home/u/.julia/environments/v1.10/Manifest.toml": '[[deps.CUDA]]\nuuid = "x"\nversion = "5.4.2"\n',
        },
        "links": {
            "/usr/local/cuda": "cuda-12.4",
            f"{CUDA}/lib64/libcudart.so.12": "libcudart.so.12.4.127",
            "/usr/lib/x86_64-linux-gnu/libcuda.so.1": "libcuda.so.565.57.01",
        },
        "interpreter": INTERPRETER,
        "interpreters": {PY: INTERPRETER},
        "nvml": HEALTHY_NVML,
        "commands": [
            {"argv": list(GCC), "stdout": "gcc (Ubuntu 13.2.0-23ubuntu4) 13.2.0\nCopyright (C) 2023\n"},
            {"argv": list(LDCONFIG), "stdout": (
                "3 libs found in cache `/etc/ld.so.cache'\n"
                "\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda-12.4/lib64/libcudart.so.12\n"
                "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
                "\tlibcuda.so.1 (libc6) => /usr/lib/i386-linux-gnu/libcuda.so.1\n")},
            {"argv": list(JULIA), "stdout": "julia version 1.10.4\n"},
            {"argv": list(NVCC), "stdout": NVCC_OUT},
            {"argv": list(SMI_QUERY), "stdout": SMI_ROW + "\n"},
            {"argv": ["nvidia-smi"], "stdout": "| NVIDIA-SMI 565.57.01   Driver Version: 565.57.01   CUDA Version: 12.7 |\n"},
        ],
    })


def without_nvml(machine: Dict[str, Any], error: str = "NVML_ERROR_LIBRARY_NOT_FOUND") -> Dict[str, Any]:
    """NVML cannot start, so the driver and GPU facts come from nvidia-smi."""
    machine["nvml"] = {"init_error": error}
    return machine


def set_command(machine: Dict[str, Any], argv: Sequence[str], **record: Any) -> Dict[str, Any]:
    """Replace the recorded answer to ``argv`` (or add one)."""
    commands = [c for c in machine["commands"] if tuple(c["argv"]) != tuple(argv)]
    machine["commands"] = commands + [{"argv": list(argv), **record}]
    return machine


def remove(machine: Dict[str, Any], *, files: Sequence[str] = (), commands: Sequence[Sequence[str]] = ()) -> Dict[str, Any]:
    for path in files:
        machine["files"].pop(path, None)
    machine["commands"] = [c for c in machine["commands"] if tuple(c["argv"]) not in {tuple(a) for a in commands}]
    return machine


class ScriptedInterpreterHost(RecordedHost):
    """A recorded machine whose target interpreter is asked the way RealHost asks one: by
    running the stdlib-only script in a child, here a recorded command."""

    def interpreter(self, executable: Optional[str], timeout: float) -> InterpreterFacts:
        return RealHost.interpreter(self, executable, timeout)  # type: ignore[arg-type]


def run(machine: Dict[str, Any], host_class: type = RecordedHost, **kwargs: Any) -> Snapshot:
    host = host_class(machine)
    start = time.monotonic()
    snapshot = collect(host, python=PY, timeout=TIMEOUT, **kwargs)
    assert time.monotonic() - start < probe_deadline(TIMEOUT) + 3.0  # generous: it must not hang
    assert isinstance(snapshot, Snapshot)
    # A report must be writable whatever went wrong.
    assert snapshot_from_json(snapshot_to_json(snapshot)).errors == snapshot.errors
    return snapshot


def counting(host: RecordedHost) -> List[Tuple[str, ...]]:
    """The commands ``host`` is asked to run, from now on, in order."""
    asked: List[Tuple[str, ...]] = []
    real_run = host.run

    def counting_run(argv: Sequence[str], timeout: float = 5.0) -> CommandResult:
        asked.append(tuple(argv))
        return real_run(argv, timeout)

    host.run = counting_run  # type: ignore[method-assign]
    return asked


def only_error(snapshot: Snapshot, probe: str) -> ProbeError:
    errors = snapshot.errors_of(probe)
    assert len(errors) == 1, errors
    return errors[0]


ALL_SECTIONS = ("host", "python", "driver", "gpus", "toolkits", "libraries", "packages", "frameworks",
                "compilers", "env")


def assert_filled(snapshot: Snapshot, *, besides: Sequence[str] = ()) -> None:
    """Every section other than ``besides`` was read."""
    missing = [s for s in ALL_SECTIONS if s not in besides and getattr(snapshot, s) is None]
    assert not missing, f"sections lost: {missing}; errors: {snapshot.errors}"


# --------------------------------------------------------------------------- the healthy machine


def test_healthy_machine_has_no_errors() -> None:
    snapshot = run(healthy())
    assert snapshot.errors == ()
    assert_filled(snapshot)
    assert snapshot.driver is not None and snapshot.driver.driver_version == "565.57.01"
    assert snapshot.driver.kernel_module_flavor == "open"
    assert snapshot.gpus is not None and snapshot.gpus[0].compute_capability == "8.9"
    assert [t.version for t in snapshot.toolkits or ()] == ["12.4.1"]
    assert [c.version for c in snapshot.compilers or ()] == ["13.2.0"]
    julia = snapshot.framework("julia")
    assert julia is not None and julia.version == "1.10.4" and julia.details["CUDA.jl"] == "5.4.2"


def test_32bit_libcuda_from_ldconfig_is_not_a_second_copy() -> None:
    libcuda = run(healthy()).library("libcuda")
    assert libcuda is not None
    assert [c.path for c in libcuda.copies] == ["/usr/lib/x86_64-linux-gnu/libcuda.so.1"]


# --------------------------------------------------------------------------- nvidia-smi


def test_nvidia_smi_missing() -> None:
    machine = remove(without_nvml(healthy()), files=["/usr/bin/nvidia-smi"], commands=[SMI_QUERY, ("nvidia-smi",)])
    snapshot = run(machine)
    details = {e.detail: e.kind for e in snapshot.errors_of("driver")}
    assert details["nvidia-smi not found"] is ErrorKind.NOT_INSTALLED
    assert snapshot.driver is not None and snapshot.driver.kernel_module_version == "565.57.01"
    assert snapshot.driver.source == "proc"
    assert snapshot.errors_of("gpus")  # neither NVML nor nvidia-smi listed GPUs, and it says so
    assert_filled(snapshot, besides=["gpus"])


@pytest.mark.parametrize(
    "record, kind, words",
    [
        ({"stdout": SMI_FAILED, "returncode": 9}, ErrorKind.ERROR, "exited with 9: NVIDIA-SMI has failed"),
        ({"hang_s": HANG}, ErrorKind.TIMEOUT, "timed out after"),
        ({"stdout": "No devices were found\x07\x00 garbage\n"}, ErrorKind.BAD_OUTPUT, "could not be parsed"),
        ({"stdout": "\ufffd\ufffd\ufffdH\ufffd\n"}, ErrorKind.BAD_OUTPUT, "could not be parsed"),  # undecodable bytes
        ({"stdout": "\udcff\udcfe\udc80\n"}, ErrorKind.BAD_OUTPUT, "could not be parsed"),  # surrogate-escaped bytes
        ({"error": "permission"}, ErrorKind.PERMISSION, "permission denied"),
        ({"error": "not_found"}, ErrorKind.NOT_INSTALLED, "not found"),
    ],
    ids=["exit-9", "hang", "garbage", "replacement-chars", "surrogates", "permission", "vanished"],
)
def test_nvidia_smi_faults(record: Dict[str, Any], kind: ErrorKind, words: str) -> None:
    machine = without_nvml(healthy())
    set_command(machine, SMI_QUERY, **record)
    set_command(machine, SMI_BASIC, **record)
    snapshot = run(machine)
    smi_errors = [e for e in snapshot.errors_of("driver") if not e.detail.startswith("NVML")]
    assert [e.kind for e in smi_errors] == [kind]
    assert words in smi_errors[0].detail
    assert smi_errors[0].duration_s is not None
    assert snapshot.driver is not None and snapshot.driver.kernel_module_version == "565.57.01"
    assert snapshot.driver.nvml_error == "NVML_ERROR_LIBRARY_NOT_FOUND"
    assert_filled(snapshot, besides=["gpus"])


def test_nvidia_smi_hang_is_not_retried_with_basic_fields() -> None:
    machine = set_command(without_nvml(healthy()), SMI_QUERY, hang_s=HANG)
    host = RecordedHost(machine)
    asked = counting(host)
    collect(host, python=PY, timeout=TIMEOUT)
    assert asked.count(SMI_QUERY) == 1 and SMI_BASIC not in asked


def test_nvidia_smi_old_driver_rejects_new_fields() -> None:
    """An old nvidia-smi exits 2 on unknown fields; the basic query still lists the GPU."""
    machine = without_nvml(healthy())
    set_command(machine, SMI_QUERY, stdout='Field "compute_cap" is not a valid field to query.\n', returncode=2)
    set_command(machine, SMI_BASIC, stdout="0, Tesla K80, GPU-1, 00000000:04:00.0, 11441, 0, 470.256.02\n")
    snapshot = run(machine)
    assert snapshot.gpus is not None and snapshot.gpus[0].name == "Tesla K80"
    assert snapshot.driver is not None and snapshot.driver.driver_version == "470.256.02"


def test_nvidia_smi_undecodable_name_in_a_valid_row() -> None:
    machine = set_command(without_nvml(healthy()), SMI_QUERY, stdout=SMI_ROW.replace("GeForce", "Ge\ufffdForce") + "\n")
    snapshot = run(machine)
    assert snapshot.gpus is not None and snapshot.gpus[0].name == "NVIDIA Ge\ufffdForce RTX 4090"
    assert snapshot.errors_of("gpus") == ()


def test_nvidia_smi_odd_numbers_do_not_crash_the_gpu_probe() -> None:
    """'inf' once raised OverflowError in int(), '²' ValueError (isdigit() accepts it)."""
    cells = SMI_ROW.split(", ")
    cells[0], cells[7], cells[8], cells[19], cells[20] = "²", "inf", "nan", "³", "-inf"
    snapshot = run(set_command(without_nvml(healthy()), SMI_QUERY, stdout=", ".join(cells) + "\n"))
    assert snapshot.errors_of("gpus") == ()
    assert snapshot.gpus is not None
    gpu = snapshot.gpus[0]
    assert (gpu.index, gpu.memory_total_mib, gpu.memory_used_mib, gpu.temperature_c, gpu.power_limit_w) == (
        0, None, None, None, None)


# --------------------------------------------------------------------------- nvcc


def nvcc_only(machine: Dict[str, Any]) -> Dict[str, Any]:
    """A toolkit without version.json, so its version must come from `nvcc --version`."""
    return remove(machine, files=[f"{CUDA}/version.json"])


def test_nvcc_is_asked_when_version_json_is_missing() -> None:
    snapshot = run(nvcc_only(healthy()))
    assert snapshot.toolkits is not None
    assert [(t.version, t.version_source) for t in snapshot.toolkits] == [("12.4.99", "nvcc")]
    assert snapshot.errors == ()


def test_nvcc_missing() -> None:
    machine = remove(nvcc_only(healthy()), files=[f"{CUDA}/bin/nvcc"], commands=[NVCC])
    snapshot = run(machine)
    assert snapshot.toolkits is not None
    [toolkit] = snapshot.toolkits
    assert (toolkit.root, toolkit.version, toolkit.nvcc) == (CUDA, None, None)
    assert snapshot.errors_of("toolkits") == ()
    assert_filled(snapshot)


@pytest.mark.parametrize(
    "record, kind, words",
    [
        ({"stderr": "nvcc: error while loading shared libraries: libnvvm.so.4\n", "returncode": 127},
         ErrorKind.ERROR, "exited with 127: nvcc: error while loading shared libraries"),
        ({"hang_s": HANG}, ErrorKind.TIMEOUT, "timed out after"),
        ({"stdout": "Segmentation fault (core dumped)\n"}, ErrorKind.BAD_OUTPUT, "printed no version"),
        ({"stdout": "\ufffd\ufffd\x01\x02\n"}, ErrorKind.BAD_OUTPUT, "printed no version"),
        ({"stdout": "\udcff\udcfeELF\n"}, ErrorKind.BAD_OUTPUT, "printed no version"),
        ({"error": "permission"}, ErrorKind.PERMISSION, "permission denied"),
        ({"error": "not_found"}, ErrorKind.NOT_INSTALLED, "not found"),  # a wrapper whose target is gone
    ],
    ids=["exit-127", "hang", "garbage", "replacement-chars", "surrogates", "permission", "vanished"],
)
def test_nvcc_faults(record: Dict[str, Any], kind: ErrorKind, words: str) -> None:
    snapshot = run(set_command(nvcc_only(healthy()), NVCC, **record))
    error = only_error(snapshot, "toolkits")
    assert (error.kind, words in error.detail) == (kind, True), error
    assert f"{CUDA}/bin/nvcc" in error.detail or kind is ErrorKind.BAD_OUTPUT or "nvcc" in error.detail
    assert snapshot.toolkits is not None and snapshot.toolkits[0].version is None
    assert_filled(snapshot)


def test_nvcc_output_with_undecodable_bytes_still_parses() -> None:
    snapshot = run(set_command(nvcc_only(healthy()), NVCC, stdout="\ufffd\udcff" + NVCC_OUT + "\ufffd"))
    assert snapshot.toolkits is not None and snapshot.toolkits[0].version == "12.4.99"


def test_unreadable_nvcc_still_locates_its_toolkit() -> None:
    """An nvcc readable by nobody (mode 711) used to raise PermissionError out of the probe."""
    machine = healthy()
    machine["unreadable"] = [f"{CUDA}/bin/nvcc"]
    snapshot = run(machine)
    assert snapshot.toolkits is not None and [t.root for t in snapshot.toolkits] == [CUDA]
    assert snapshot.errors_of("toolkits") == ()


def test_unreadable_version_json() -> None:
    machine = healthy()
    machine["unreadable"] = [f"{CUDA}/version.json"]
    snapshot = run(machine)
    error = only_error(snapshot, "toolkits")
    assert error.kind is ErrorKind.PERMISSION
    assert error.detail == f"{CUDA}/version.json: permission denied"
    assert snapshot.toolkits is not None and snapshot.toolkits[0].version == "12.4.99"  # nvcc answered
    assert_filled(snapshot)


# --------------------------------------------------------------------------- gcc


def test_gcc_missing() -> None:
    snapshot = run(remove(healthy(), files=["/usr/bin/gcc"], commands=[GCC]))
    assert snapshot.compilers == ()
    assert snapshot.errors_of("compilers") == ()


@pytest.mark.parametrize(
    "record, kind, words",
    [
        ({"stderr": "gcc: fatal error: cannot execute 'cc1'\n", "returncode": 1}, ErrorKind.ERROR,
         "exited with 1: gcc: fatal error"),
        ({"hang_s": HANG}, ErrorKind.TIMEOUT, "timed out after"),
        ({"stdout": "Illegal instruction\n"}, ErrorKind.BAD_OUTPUT, "printed no version"),
        ({"stdout": "\ufffd\ufffd\ufffd\n"}, ErrorKind.BAD_OUTPUT, "printed no version"),
        ({"stdout": "\udcc3\udca9\n"}, ErrorKind.BAD_OUTPUT, "printed no version"),
        ({"error": "permission"}, ErrorKind.PERMISSION, "/usr/bin/gcc: permission denied"),
        ({"error": "not_found"}, ErrorKind.NOT_INSTALLED, "not found"),
        ({"returncode": -11}, ErrorKind.ERROR, "was killed by SIGSEGV"),
    ],
    ids=["exit-1", "hang", "garbage", "replacement-chars", "surrogates", "permission", "vanished", "segv"],
)
def test_gcc_faults(record: Dict[str, Any], kind: ErrorKind, words: str) -> None:
    snapshot = run(set_command(healthy(), GCC, **record))
    error = only_error(snapshot, "compilers")
    assert error.kind is kind
    assert words in error.detail
    assert snapshot.compilers is not None
    assert [(c.name, c.path, c.version) for c in snapshot.compilers] == [("gcc", "/usr/bin/gcc", None)]
    assert_filled(snapshot)


def test_gcc_output_with_undecodable_bytes_still_parses() -> None:
    snapshot = run(set_command(healthy(), GCC, stdout="gcc (Ubuntu \ufffd\udcff) 13.2.0\n"))
    assert snapshot.compilers is not None and snapshot.compilers[0].version == "13.2.0"


# --------------------------------------------------------------------------- ldconfig


def test_ldconfig_missing() -> None:
    snapshot = run(remove(healthy(), files=["/sbin/ldconfig"], commands=[LDCONFIG]))
    assert snapshot.errors_of("libraries") == ()
    libcuda = snapshot.library("libcuda")  # found in the default directories instead
    assert libcuda is not None and libcuda.copies[0].found_via == "default"


def test_ldconfig_only_in_sbin() -> None:
    """ldconfig is not on a user's PATH on many distributions; /sbin/ldconfig answers."""
    machine = remove(healthy(), commands=[LDCONFIG])
    machine["commands"].append({"argv": ["/sbin/ldconfig", "-p"], "stdout": (
        "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n")})
    machine["files"].pop("/sbin/ldconfig")
    machine["files"]["/sbin/ldconfig"] = ""
    machine["env"]["PATH"] = "/usr/bin:/bin"  # no sbin
    snapshot = run(machine)
    libcuda = snapshot.library("libcuda")
    assert libcuda is not None and libcuda.copies[0].found_via == "ldconfig"


@pytest.mark.parametrize(
    "record, kind, words",
    [
        ({"stderr": "ldconfig: Can't open cache file /etc/ld.so.cache\n: No such file or directory\n",
          "returncode": 1}, ErrorKind.ERROR, "exited with 1"),
        ({"hang_s": HANG}, ErrorKind.TIMEOUT, "timed out after"),
        ({"stdout": "ldconfig: usage\x00\x00 garbage\n"}, ErrorKind.BAD_OUTPUT, "printed no library list"),
        ({"stdout": "\ufffd\ufffd\n\ufffd"}, ErrorKind.BAD_OUTPUT, "printed no library list"),
        ({"stdout": "\udcff\udcfe\n"}, ErrorKind.BAD_OUTPUT, "printed no library list"),
        ({"error": "permission"}, ErrorKind.PERMISSION, "permission denied"),
    ],
    ids=["exit-1", "hang", "garbage", "replacement-chars", "surrogates", "permission"],
)
def test_ldconfig_faults(record: Dict[str, Any], kind: ErrorKind, words: str) -> None:
    snapshot = run(set_command(healthy(), LDCONFIG, **record))
    error = only_error(snapshot, "libraries")
    assert error.kind is kind
    assert words in error.detail
    libcuda = snapshot.library("libcuda")  # the default directories still answer
    assert libcuda is not None and libcuda.copies[0].found_via == "default"
    assert libcuda.copies[0].path.startswith("/usr/lib/x86_64-linux-gnu/libcuda.so.")
    assert_filled(snapshot)


def test_ldconfig_hang_is_not_retried() -> None:
    """A hung ldconfig used to be asked again as /sbin/ldconfig: twice the wait, and the
    second answer (not found) hid the timeout."""
    machine = set_command(healthy(), LDCONFIG, hang_s=HANG)
    machine["commands"].append({"argv": ["/sbin/ldconfig", "-p"], "hang_s": HANG})
    host = RecordedHost(machine)
    asked = counting(host)
    snapshot = collect(host, python=PY, timeout=TIMEOUT)
    assert [a for a in asked if "ldconfig" in a[0]] == [LDCONFIG]
    assert only_error(snapshot, "libraries").kind is ErrorKind.TIMEOUT


def test_ldconfig_with_an_empty_cache_is_no_error() -> None:
    snapshot = run(set_command(healthy(), LDCONFIG, stdout="0 libs found in cache `/etc/ld.so.cache'\n"))
    assert snapshot.errors_of("libraries") == ()


def test_ldconfig_paths_with_undecodable_bytes() -> None:
    text = "\tlibcudart.so.12 (libc6,x86-64) => /opt/\ufffd/libcudart.so.12\n"
    snapshot = run(set_command(healthy(), LDCONFIG, stdout=text))
    libcudart = snapshot.library("libcudart")
    assert libcudart is not None
    assert "/opt/\ufffd/libcudart.so.12" in [c.path for c in libcudart.copies]
    assert snapshot.errors_of("libraries") == ()


# --------------------------------------------------------------------------- julia


def test_julia_missing() -> None:
    snapshot = run(remove(healthy(), files=["/usr/bin/julia"], commands=[JULIA]))
    assert snapshot.framework("julia") is None
    assert snapshot.errors_of("frameworks") == ()
    assert snapshot.framework("torch") is not None


@pytest.mark.parametrize(
    "record, kind, words",
    [
        ({"stderr": "ERROR: could not load library \"libjulia-internal.so.1\"\n", "returncode": 1},
         ErrorKind.ERROR, "exited with 1: ERROR: could not load library"),
        ({"hang_s": HANG}, ErrorKind.TIMEOUT, "timed out after"),
        ({"stdout": "juliaup: channel not installed\n"}, ErrorKind.BAD_OUTPUT, "printed no version"),
        ({"stdout": "\ufffd\ufffd\n"}, ErrorKind.BAD_OUTPUT, "printed no version"),
        ({"stdout": "\udcff\n"}, ErrorKind.BAD_OUTPUT, "printed no version"),
        ({"error": "permission"}, ErrorKind.PERMISSION, "permission denied"),
    ],
    ids=["exit-1", "hang", "garbage", "replacement-chars", "surrogates", "permission"],
)
def test_julia_faults(record: Dict[str, Any], kind: ErrorKind, words: str) -> None:
    """A failing `julia --version` used to leave no trace at all."""
    snapshot = run(set_command(healthy(), JULIA, **record))
    error = only_error(snapshot, "frameworks")
    assert error.kind is kind
    assert words in error.detail
    julia = snapshot.framework("julia")
    assert julia is not None and julia.version is None
    assert snapshot.framework("torch") is not None  # the Python frameworks are unaffected
    assert_filled(snapshot)


# --------------------------------------------------------------------------- target interpreter


def scripted(machine: Dict[str, Any], **record: Any) -> Dict[str, Any]:
    return set_command(machine, PYTHON_SCRIPT, **record)


def test_scripted_interpreter_healthy() -> None:
    snapshot = run(scripted(healthy(), stdout=json.dumps(INTERPRETER) + "\n"), ScriptedInterpreterHost)
    assert snapshot.errors == ()
    assert snapshot.python is not None and snapshot.python.version == "3.11.9"
    assert snapshot.python.is_current is False


@pytest.mark.parametrize(
    "record, kind, words",
    [
        ({"error": "not_found"}, ErrorKind.NOT_INSTALLED, f"{PY} not found"),
        ({"stderr": "  File \"<string>\", line 2\nSyntaxError: invalid syntax\n", "returncode": 1},
         ErrorKind.ERROR, "exited with 1: SyntaxError: invalid syntax"),
        ({"hang_s": HANG}, ErrorKind.TIMEOUT, "timed out after"),
        ({"stdout": "Python 2.6.9\n"}, ErrorKind.BAD_OUTPUT, "printed no usable facts"),
        ({"stdout": json.dumps({"version": "3.12.1"})}, ErrorKind.BAD_OUTPUT, "printed no usable facts"),
        ({"stdout": "[" * 100_000}, ErrorKind.BAD_OUTPUT, "printed no usable facts"),  # RecursionError once
        ({"stdout": "\ufffd\ufffd{\n"}, ErrorKind.BAD_OUTPUT, "printed no usable facts"),
        ({"stdout": "\udcff\udcfe\n"}, ErrorKind.BAD_OUTPUT, "printed no usable facts"),
        ({"error": "permission"}, ErrorKind.PERMISSION, "permission denied"),
    ],
    ids=["missing", "exit-1", "hang", "garbage", "partial-json", "deep-json", "replacement-chars", "surrogates",
         "permission"],
)
def test_interpreter_faults(record: Dict[str, Any], kind: ErrorKind, words: str) -> None:
    snapshot = run(scripted(healthy(), **record), ScriptedInterpreterHost)
    error = only_error(snapshot, "python")
    assert error.kind is kind, error
    assert words in error.detail
    assert snapshot.python is None
    assert only_error(snapshot, "packages").detail.startswith("no target interpreter")
    # What does not depend on the interpreter is all there (packages are unknown, not absent).
    assert snapshot.packages is None
    assert_filled(snapshot, besides=["python", "packages"])
    assert snapshot.framework("julia") is not None and snapshot.framework("torch") is None


def test_interpreter_facts_with_undecodable_path() -> None:
    facts = dict(INTERPRETER, prefix="/home/\ufffd/proj/.venv")
    snapshot = run(scripted(healthy(), stdout=json.dumps(facts, ensure_ascii=False)), ScriptedInterpreterHost)
    assert snapshot.python is not None and snapshot.python.prefix == "/home/\ufffd/proj/.venv"


def test_recorded_interpreter_missing() -> None:
    machine = healthy()
    machine["interpreters"] = {}
    machine["interpreter"] = dict(INTERPRETER, executable="/usr/bin/python3")
    snapshot = run(machine)
    error = only_error(snapshot, "python")
    assert error.kind is ErrorKind.NOT_INSTALLED and "No such file" in error.detail
    assert_filled(snapshot, besides=["python", "packages"])


# --------------------------------------------------------------------------- unreadable files


def test_unreadable_proc_driver_version() -> None:
    machine = healthy()
    machine["unreadable"] = ["/proc/driver/nvidia/version"]
    snapshot = run(machine)
    error = only_error(snapshot, "driver")
    assert error.kind is ErrorKind.PERMISSION
    assert error.detail == "/proc/driver/nvidia/version: permission denied"
    assert snapshot.driver is not None
    assert snapshot.driver.kernel_module_version == "565.57.01"  # from /sys/module/nvidia/version
    assert snapshot.driver.kernel_module_flavor is None  # only /proc tells it
    assert_filled(snapshot)


def test_unreadable_site_packages() -> None:
    machine = healthy()
    machine["unreadable"] = [SITE]
    snapshot = run(machine)
    error = only_error(snapshot, "packages")
    assert (error.kind, error.detail) == (ErrorKind.PERMISSION, f"{SITE}: permission denied")
    assert snapshot.python is not None and snapshot.python.site_packages == (SITE,)
    assert snapshot.framework("torch") is None
    assert_filled(snapshot)


def test_empty_site_packages_is_no_error() -> None:
    machine = healthy()
    machine["files"] = {k: v for k, v in machine["files"].items() if not k.startswith(SITE)}
    machine["dirs"] = [SITE]
    snapshot = run(machine)
    assert snapshot.errors_of("packages") == ()


# --------------------------------------------------------------------------- NVML


@pytest.mark.parametrize(
    "name, kind, words",
    [
        ("NVML_ERROR_LIBRARY_NOT_FOUND", ErrorKind.NOT_INSTALLED, "libnvidia-ml.so.1 not found"),
        ("NVML_ERROR_DRIVER_NOT_LOADED", ErrorKind.NOT_INSTALLED, "driver is not loaded"),
        ("NVML_ERROR_LIB_RM_VERSION_MISMATCH", ErrorKind.ERROR, "version mismatch"),
        ("NVML_ERROR_NO_PERMISSION", ErrorKind.PERMISSION, "insufficient permissions"),
        ("NVML_ERROR_UNKNOWN", ErrorKind.ERROR, "NVML_ERROR_UNKNOWN"),
    ],
)
def test_nvml_init_errors(name: str, kind: ErrorKind, words: str) -> None:
    snapshot = run(without_nvml(healthy(), name))
    [error] = [e for e in snapshot.errors_of("driver") if e.detail.startswith("NVML")]
    assert error.kind is kind and words in error.detail
    assert snapshot.driver is not None and snapshot.driver.nvml_error == name
    # nvidia-smi stands in for NVML.
    assert snapshot.driver.driver_version == "565.57.01" and snapshot.driver.source == "nvidia-smi"
    assert snapshot.driver.cuda_driver_version == "12.7"
    assert snapshot.gpus is not None and snapshot.gpus[0].source == "nvidia-smi"
    assert_filled(snapshot)


def test_nvml_init_error_and_no_nvidia_smi() -> None:
    machine = remove(without_nvml(healthy(), "NVML_ERROR_DRIVER_NOT_LOADED"),
                     files=["/usr/bin/nvidia-smi"], commands=[SMI_QUERY, ("nvidia-smi",)])
    snapshot = run(machine)
    kinds = sorted(e.kind.value for e in snapshot.errors_of("driver"))
    assert kinds == ["not_installed", "not_installed"]
    assert snapshot.driver is not None and snapshot.driver.kernel_module_version == "565.57.01"
    assert_filled(snapshot, besides=["gpus"])


def test_device_function_raises_gpu_is_lost() -> None:
    machine = healthy()
    machine["nvml"]["devices"][0]["nvmlDeviceGetUUID"] = {"$error": "NVML_ERROR_GPU_IS_LOST"}
    snapshot = run(machine)
    error = only_error(snapshot, "gpus")
    assert error.kind is ErrorKind.ERROR
    assert error.detail == "GPU 0: nvmlDeviceGetUUID: NVML_ERROR_GPU_IS_LOST"
    assert snapshot.gpus is not None
    gpu = snapshot.gpus[0]
    assert gpu.uuid is None and gpu.name == "NVIDIA GeForce RTX 4090"  # the rest was still read
    assert_filled(snapshot)


def test_device_count_raises_gpu_is_lost() -> None:
    machine = healthy()
    machine["nvml"]["system"]["nvmlDeviceGetCount"] = {"$error": "NVML_ERROR_GPU_IS_LOST"}
    snapshot = run(machine)
    error = only_error(snapshot, "gpus")
    assert (error.kind, error.detail) == (ErrorKind.ERROR, "device count: NVML_ERROR_GPU_IS_LOST")
    assert_filled(snapshot, besides=["gpus"])


def test_system_function_raises_gpu_is_lost() -> None:
    machine = healthy()
    machine["nvml"]["system"]["nvmlSystemGetDriverVersion"] = {"$error": "NVML_ERROR_GPU_IS_LOST"}
    snapshot = run(machine)
    error = only_error(snapshot, "driver")
    assert (error.kind, error.detail) == (ErrorKind.ERROR, "driver version: NVML_ERROR_GPU_IS_LOST")
    assert snapshot.driver is not None and snapshot.driver.cuda_driver_version == "12.7"
    assert_filled(snapshot)


def test_nvml_init_hangs_past_the_deadline() -> None:
    """nvmlInit on a wedged GPU can block for minutes. It is given up on, and the driver
    section keeps what the kernel module and nvidia-smi say."""
    machine = healthy()
    machine["nvml"]["init_hang_s"] = HANG
    start = time.monotonic()
    snapshot = run(machine)
    assert time.monotonic() - start < HANG
    [error] = [e for e in snapshot.errors_of("driver") if e.detail.startswith("NVML")]
    assert error.kind is ErrorKind.TIMEOUT and "did not return within" in error.detail
    assert snapshot.driver is not None
    assert snapshot.driver.nvml_error == "NVML_ERROR_TIMEOUT"
    assert snapshot.driver.kernel_module_version == "565.57.01"
    assert snapshot.driver.driver_version == "565.57.01"  # from nvidia-smi
    assert snapshot.gpus is not None and snapshot.gpus[0].source == "nvidia-smi"
    assert_filled(snapshot)


def test_nvml_device_function_hangs_past_the_deadline() -> None:
    machine = healthy()
    machine["nvml"]["devices"][0]["nvmlDeviceGetName"] = {"$hang": HANG, "value": "NVIDIA GeForce RTX 4090"}
    snapshot = run(machine)
    error = only_error(snapshot, "gpus")
    assert error.kind is ErrorKind.TIMEOUT and "did not finish within" in error.detail
    assert snapshot.gpus is None
    assert_filled(snapshot, besides=["gpus"])


# --------------------------------------------------------------------------- the runner


def test_probe_that_raises_becomes_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    original = probes._registry

    def boom(ctx: Any) -> Any:
        raise RuntimeError("the probe has a bug")

    monkeypatch.setattr(probes, "_registry", lambda: {**original(), "compilers": boom})
    snapshot = run(healthy())
    error = only_error(snapshot, "compilers")
    assert (error.kind, error.detail) == (ErrorKind.ERROR, "RuntimeError: the probe has a bug")
    assert error.duration_s is not None
    assert snapshot.compilers is None
    assert_filled(snapshot, besides=["compilers"])


def test_probe_that_hangs_is_abandoned_within_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    original = probes._registry

    def stuck(ctx: Any) -> Any:
        time.sleep(HANG)
        raise AssertionError("never reached in time")

    monkeypatch.setattr(probes, "_registry", lambda: {**original(), "toolkits": stuck})
    start = time.monotonic()
    snapshot = collect(RecordedHost(healthy()), python=PY, timeout=TIMEOUT)
    elapsed = time.monotonic() - start
    assert probe_deadline(TIMEOUT) - 0.1 <= elapsed < HANG
    error = only_error(snapshot, "toolkits")
    assert error.kind is ErrorKind.TIMEOUT
    assert error.detail == f"did not finish within {probe_deadline(TIMEOUT):.0f} s"
    assert_filled(snapshot, besides=["toolkits"])


def test_everything_failing_at_once_still_returns_in_time() -> None:
    machine = without_nvml(healthy())
    machine["nvml"]["init_hang_s"] = HANG
    for argv in (SMI_QUERY, SMI_BASIC, NVCC, GCC, LDCONFIG, JULIA, ("nvidia-smi",)):
        set_command(machine, argv, hang_s=HANG)
    machine["unreadable"] = ["/proc/driver/nvidia/version", f"{CUDA}/version.json", SITE, "/proc/meminfo"]
    snapshot = run(machine)
    assert snapshot.host is not None and snapshot.env is not None
    assert {e.probe for e in snapshot.errors} >= {"driver", "toolkits", "libraries", "compilers", "frameworks",
                                                  "packages"}
    assert all(e.kind is not ErrorKind.ERROR for e in snapshot.errors if e.probe != "host"), snapshot.errors


# --------------------------------------------------------------------------- run_command for real


def test_run_command_missing_executable() -> None:
    result = run_command(["/nonexistent/cudadoctor-no-such-binary", "--version"], 2.0)
    assert (result.ok, result.error, result.returncode) == (False, "not_found", None)
    assert result.describe() == "/nonexistent/cudadoctor-no-such-binary not found"


def test_run_command_non_zero_exit() -> None:
    result = run_command(["sh", "-c", "echo oops >&2; exit 3"], 2.0)
    assert (result.ok, result.error, result.returncode) == (False, None, 3)
    assert result.describe() == "sh -c echo oops >&2; exit 3 exited with 3: oops"


def test_run_command_timeout_kills_it() -> None:
    start = time.monotonic()
    result = run_command(["sleep", "5"], 0.3)
    assert time.monotonic() - start < 2.0
    assert (result.ok, result.error) == (False, "timeout")
    assert "timed out after" in result.describe()


def test_run_command_timeout_kills_the_whole_process_group() -> None:
    """A grandchild holding stdout open would keep communicate() waiting after the child died."""
    start = time.monotonic()
    result = run_command(["sh", "-c", "sleep 5 & sleep 5"], 0.3)
    assert time.monotonic() - start < 2.0
    assert result.error == "timeout"


def test_run_command_invalid_utf8() -> None:
    result = run_command(["printf", "\\xff\\xfe ok \\xc3"], 2.0)
    assert result.ok
    assert result.stdout == "\ufffd\ufffd ok \ufffd"


def test_run_command_keeps_at_most_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 16: an endless printer was kept whole (2.3 GB in 3.5 s); the rest is now read and dropped
    monkeypatch.setattr(host_module, "MAX_OUTPUT_BYTES", 100_000)
    result = run_command(["sh", "-c", "head -c 3000000 /dev/zero; echo tail >&2"], 10.0)
    assert (result.ok, result.truncated) == (True, True)
    assert len(result.stdout) == 100_000 and result.stderr == "tail\n"


def test_run_command_endless_output_is_bounded_and_times_out() -> None:
    start = time.monotonic()
    result = run_command(["yes"], 1.0)
    assert time.monotonic() - start < 5.0
    assert (result.error, result.truncated) == ("timeout", True)
    assert len(result.stdout) == host_module.MAX_OUTPUT_BYTES


def test_run_command_short_output_is_not_truncated() -> None:
    result = run_command(["sh", "-c", "echo out; echo err >&2"], 10.0)
    assert (result.stdout, result.stderr, result.truncated) == ("out\n", "err\n", False)


def test_an_interpreter_printing_megabytes_is_not_python(tmp_path: Any) -> None:
    python = fake_python(tmp_path, "head -c 5000000 /dev/zero")
    with pytest.raises(InterpreterError) as caught:
        RealHost().interpreter(python, 20.0)
    assert caught.value.kind == "bad_output"
    assert str(caught.value) == f"{python} printed more than 4 MiB, not the facts of a Python interpreter"


def test_run_command_killed_by_signal() -> None:
    result = run_command(["sh", "-c", "kill -9 $$"], 2.0)
    assert result.returncode == -9
    assert result.describe().endswith("was killed by SIGKILL")


def test_run_command_not_executable(tmp_path: Any) -> None:
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    result = run_command([str(script)], 2.0)
    assert result.error == "permission"
    assert result.describe() == f"{script}: permission denied"


# --------------------------------------------------------------------------- a real --python


def fake_python(tmp_path: Any, body: str, mode: int = 0o755) -> str:
    path = tmp_path / "python"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(mode)
    return str(path)


@pytest.mark.parametrize(
    "body, mode, kind, words",
    [
        ("exit 1", 0o755, ErrorKind.ERROR, "exited with 1"),
        ("sleep 5", 0o755, ErrorKind.TIMEOUT, "timed out after"),
        ("echo 'Python 2.6.9'", 0o755, ErrorKind.BAD_OUTPUT, "printed no usable facts"),
        ("printf '\\377\\376{'", 0o755, ErrorKind.BAD_OUTPUT, "printed no usable facts"),
        ("head -c 100000 /dev/zero | tr '\\000' '['", 0o755, ErrorKind.BAD_OUTPUT, "printed no usable facts"),
        ("exit 0", 0o644, ErrorKind.PERMISSION, "permission denied"),
    ],
    ids=["exit-1", "hang", "garbage", "invalid-utf8", "deep-json", "not-executable"],
)
def test_real_python_faults(tmp_path: Any, body: str, mode: int, kind: ErrorKind, words: str) -> None:
    python = fake_python(tmp_path, body, mode)
    start = time.monotonic()
    snapshot = collect(RealHost(), python=python, timeout=0.3, only=["python", "packages"])
    assert time.monotonic() - start < probe_deadline(0.3) + 2.0
    error = only_error(snapshot, "python")
    assert error.kind is kind and words in error.detail
    assert snapshot.errors_of("packages")[0].detail.startswith("no target interpreter")


def test_real_python_missing(tmp_path: Any) -> None:
    snapshot = collect(RealHost(), python=str(tmp_path / "nope" / "python"), timeout=1.0, only=["python"])
    error = only_error(snapshot, "python")
    assert error.kind is ErrorKind.NOT_INSTALLED and error.detail.endswith("not found")


def test_real_python_answers(tmp_path: Any) -> None:
    """The same path works when the interpreter is real (a symlink to this one, so not 'current')."""
    import sys

    link = tmp_path / "python3"
    os.symlink(sys.executable, link)
    snapshot = collect(RealHost(), python=str(link), timeout=10.0, only=["python"])
    assert snapshot.errors == ()
    assert snapshot.python is not None and snapshot.python.version == ".".join(map(str, sys.version_info[:3]))


def test_site_dir_mode_000_for_real(tmp_path: Any) -> None:
    """RealHost's list_dir raises PermissionError on a directory nobody may read."""
    if os.geteuid() == 0:
        pytest.skip("root reads any directory")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        with pytest.raises(PermissionError):
            RealHost().list_dir(str(locked))
    finally:
        locked.chmod(stat.S_IRWXU)


def test_the_commands_every_run_asks_for_start_early_and_run_once() -> None:
    """ldconfig and the compilers start before the probes load; the probes take those answers."""
    host = RecordedHost(healthy())
    asked = counting(host)
    snapshot = collect(host, python=PY, timeout=TIMEOUT)
    assert asked.count(("ldconfig", "-p")) == 1 and snapshot.libraries
    versions = [a for a in asked if a[1:] == ("--version",) and "nvcc" not in a[0]]
    assert versions and len(versions) == len(set(versions))
    asked.clear()
    collect(host, python=PY, timeout=TIMEOUT, only=["python"])  # a stage without them starts none
    assert ("ldconfig", "-p") not in asked and not [a for a in asked if a[1:] == ("--version",)]
