"""The recorder: what it records, and that replaying a recording gives the same Snapshot."""

from __future__ import annotations

import copy
import json
import os
from typing import Any, Callable, Dict, Tuple

import pytest

from cudadoctor.cli.app import run
from cudadoctor.host import InterpreterError, RealHost
from cudadoctor.model import Snapshot
from cudadoctor.host.nvml import NvmlError
from cudadoctor.probes import collect
from cudadoctor.probes.driver import SMI_BASIC_FIELDS, SMI_FIELDS
from cudadoctor.probes.libraries import FAMILIES
from cudadoctor.host.recorded import RecordedHost
from cudadoctor.host.recorder import RecordingHost, gpu_env_name, keep_in_listing, main
from cudadoctor.host.recorder_output import write_machine

Comparable = Callable[[Snapshot], Snapshot]
SITE = "/home/ada/proj/.venv/lib/python3.10/site-packages"

# A small hand-written machine: one A100 answering NVML, a CUDA 12.4 toolkit behind the
# /usr/local/cuda symlink, torch 2.5.1+cu124 with cuDNN from its pip wheel.
A100: Dict[str, Any] = {
    "platform": {"system": "Linux", "release": "5.15.0-105-generic", "machine": "x86_64",
                 "hostname": "gpu-box", "username": "ada", "cpu_count": 32, "libc": "glibc 2.35"},
    "env": {"PATH": "/usr/local/cuda/bin:/usr/bin:/bin", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
            "HOME": "/home/ada", "CUDA_VISIBLE_DEVICES": "0", "VIRTUAL_ENV": "/home/ada/proj/.venv"},
    "files": {
        "/etc/os-release": 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\nVERSION_ID="22.04"\n',
        "/proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  "
                                       "Tue Mar  5 22:23:56 UTC 2024\n",
        "/proc/meminfo": "MemTotal:       65536000 kB\n",
        "/dev/nvidia0": "",
        "/dev/nvidiactl": "",
        "/usr/bin/gcc": "",
        "/usr/local/cuda-12.4/version.json": '{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}',
        "/usr/local/cuda-12.4/bin/nvcc": "",
        "/usr/local/cuda-12.4/lib64/libcudart.so.12.4.127": "",
        "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15": "",
        f"{SITE}/torch/version.py": "__version__ = '2.5.1+cu124'\ndebug = False\ncuda = '12.4'\n"
                                    "git_version = 'a8d6afb511a69687bbb2b7e88a3cf67917e1697e'\nhip = None\n",
        f"{SITE}/torch-2.5.1+cu124.dist-info/METADATA": "Metadata-Version: 2.1\nName: torch\n"
            "Version: 2.5.1+cu124\nRequires-Dist: nvidia-cudnn-cu12==9.1.0.70; platform_system == \"Linux\"\n",
        f"{SITE}/nvidia_cudnn_cu12-9.1.0.70.dist-info/METADATA": "Name: nvidia-cudnn-cu12\n",
        f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9": "",
    },
    "links": {
        "/usr/local/cuda": "cuda-12.4",
        "/usr/local/cuda-12.4/lib64/libcudart.so.12": "libcudart.so.12.4.127",
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1": "libcuda.so.550.54.15",
    },
    "dirs": ["/sys/module/nvidia"],
    "unreadable": ["/proc/cpuinfo"],
    "commands": [
        {"argv": ["ldconfig", "-p"], "stdout": [
            "2 libs found in cache `/etc/ld.so.cache'",
            "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1",
            "\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda-12.4/lib64/libcudart.so.12",
        ]},
        {"argv": ["gcc", "--version"], "stdout": "gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0\n"},
    ],
    "interpreter": {"executable": "/home/ada/proj/.venv/bin/python", "version": "3.10.12",
                    "implementation": "cpython", "prefix": "/home/ada/proj/.venv", "base_prefix": "/usr",
                    "platform_tag": "linux-x86_64", "site_packages": [SITE]},
    "nvml": {
        "init_error": None,
        "system": {"nvmlSystemGetDriverVersion": "550.54.15", "nvmlSystemGetCudaDriverVersion_v2": 12040,
                   "nvmlSystemGetNVMLVersion": "12.550.54.15"},
        "devices": [{
            "nvmlDeviceGetName": "NVIDIA A100-SXM4-80GB",
            "nvmlDeviceGetUUID": "GPU-5f4e3a1c-0000-0000-0000-000000000000",
            "nvmlDeviceGetSerial": {"$error": "NVML_ERROR_NOT_SUPPORTED"},
            "nvmlDeviceGetPciInfo": {"busId": "00000000:07:00.0", "pciDeviceId": 0x20B210DE},
            "nvmlDeviceGetCudaComputeCapability": [8, 0],
            "nvmlDeviceGetMemoryInfo": {"total": 85899345920, "used": 4194304, "free": 85895151616},
            "nvmlDeviceGetTotalEccErrors(1,0)": 0,
            "nvmlDeviceGetTotalEccErrors(1,1)": 2,
            "nvmlDeviceGetTemperature(0)": 34,
            "nvmlDeviceGetCurrentClocksEventReasons": 1,
        }],
    },
}

# The same box after a driver update without a reboot: NVML refuses, nvidia-smi says why.
MISMATCH: Dict[str, Any] = copy.deepcopy(A100)
MISMATCH["nvml"] = {"init_error": "NVML_ERROR_LIB_RM_VERSION_MISMATCH"}
MISMATCH["files"]["/usr/bin/nvidia-smi"] = ""
_SMI_FAILS = {"returncode": 18, "stdout": "Failed to initialize NVML: Driver/library version mismatch\n"
                                         "NVML library version: 550.107\n"}
MISMATCH["commands"].append(dict(_SMI_FAILS, argv=["nvidia-smi"]))
MISMATCH["commands"] += [
    dict(_SMI_FAILS, argv=["nvidia-smi", "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"])
    for fields in (SMI_FIELDS, SMI_BASIC_FIELDS)
]

MACHINES = {"a100-hand-written": A100, "a100-driver-mismatch-hand-written": MISMATCH}


def _record_and_replay(inner: Any, tmp_path: Any, **collect_args: Any) -> Tuple[Snapshot, Snapshot, RecordedHost]:
    recorder = RecordingHost(inner)
    live = collect(recorder, **collect_args)
    data, files = recorder.machine()
    write_machine(str(tmp_path), data, files)
    replay = RecordedHost.load(str(tmp_path))
    return live, collect(replay, **collect_args), replay


# ---------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_recording_a_recorded_machine_replays_the_same_snapshot(name: str, tmp_path: Any, comparable: Comparable) -> None:
    live, replayed, replay = _record_and_replay(RecordedHost(MACHINES[name]), tmp_path)
    assert comparable(replayed) == comparable(live)
    assert replay.unrecorded == []


def test_the_hand_written_machine_exercises_every_section(tmp_path: Any) -> None:
    # Guards the round trip above against passing because the probes found nothing.
    live, _, _ = _record_and_replay(RecordedHost(A100), tmp_path)
    assert live.gpus and live.gpus[0].name == "NVIDIA A100-SXM4-80GB"
    assert live.driver and live.driver.driver_version == "550.54.15"
    assert live.active_toolkit and live.active_toolkit.version == "12.4.1"
    assert live.framework("torch") and live.framework("torch").cuda == "12.4"  # type: ignore[union-attr]
    assert live.library("libcudnn") and live.library("libcuda")
    assert live.compilers and live.compilers[0].version == "11.4.0"


def test_recording_this_machine_replays_the_same_snapshot(tmp_path: Any, comparable: Comparable) -> None:
    live, replayed, replay = _record_and_replay(RealHost(), tmp_path)
    assert comparable(replayed) == comparable(live)
    assert replay.unrecorded == []


def test_only_the_variables_probes_read_are_enough(tmp_path: Any, comparable: Comparable) -> None:
    recorder = RecordingHost(RealHost())
    live = collect(recorder)
    data, files = recorder.machine(env_filter=gpu_env_name)
    write_machine(str(tmp_path), data, files)
    assert comparable(collect(RecordedHost.load(str(tmp_path)))) == comparable(live)


def test_a_failing_target_interpreter_replays_its_failure(tmp_path: Any, comparable: Comparable) -> None:
    machine = dict(A100, interpreters={"/opt/py/bin/python": {"$error": "/opt/py/bin/python timed out after 5 s",
                                                              "kind": "timeout"}})
    live, replayed, _ = _record_and_replay(RecordedHost(machine), tmp_path, python="/opt/py/bin/python")
    assert comparable(replayed) == comparable(live)
    assert live.python is None and live.errors_of("python")


# ---------------------------------------------------------------------------- what is recorded


def test_files_are_stored_at_their_real_path_and_errors_are_kept(tmp_path: Any) -> None:
    recorder = RecordingHost(RecordedHost(A100))
    recorder.read_bytes("/usr/local/cuda/version.json")
    for path in ("/proc/cpuinfo", "/nonexistent"):
        with pytest.raises(OSError):
            recorder.read_bytes(path)
    data, files = recorder.machine()
    assert "/usr/local/cuda-12.4/version.json" in files
    assert data["realpaths"]["/usr/local/cuda/version.json"] == "/usr/local/cuda-12.4/version.json"
    assert data["unreadable"] == ["/proc/cpuinfo"]  # PermissionError; the absent file leaves no trace


def test_big_files_are_capped_and_noted() -> None:
    machine = {"files": {"/proc/cpuinfo": "x" * 100}}
    recorder = RecordingHost(RecordedHost(machine), file_cap=10)
    assert len(recorder.read_bytes("/proc/cpuinfo")) == 100  # the probe still gets everything
    data, files = recorder.machine()
    assert files["/proc/cpuinfo"] == b"x" * 10
    assert data["recording"]["truncated_files"]["/proc/cpuinfo"] == {"size_at_least": 100, "kept": 10}


def test_long_listings_keep_the_cuda_names() -> None:
    names = [f"libfoo{i}.so.1" for i in range(300)] + ["libcudnn.so.9", "libcuda.so.1"]
    machine = {"files": {f"/usr/lib/{n}": "" for n in names}}
    recorder = RecordingHost(RecordedHost(machine))
    recorder.list_dir("/usr/lib")
    data, _ = recorder.machine(max_listing=200)
    assert data["listings"]["/usr/lib"] == ["libcuda.so.1", "libcudnn.so.9"]
    assert data["recording"]["trimmed_listings"]["/usr/lib"] == {"entries": 302, "kept": 2}
    assert recorder.machine(max_listing=0)[0]["listings"]["/usr/lib"] == sorted(names)


@pytest.mark.parametrize("family", FAMILIES)
def test_trimming_keeps_every_library_family_the_probes_look_for(family: str) -> None:
    assert keep_in_listing(f"{family}.so.1")


def test_nvml_answers_and_errors_are_recorded_in_recorded_nvml_shape() -> None:
    recorder = RecordingHost(RecordedHost(A100))
    nvml = recorder.nvml()
    assert nvml.device_count() == 1
    assert nvml.device(0, "nvmlDeviceGetTemperature", 0) == 34
    with pytest.raises(NvmlError):
        nvml.device(0, "nvmlDeviceGetSerial")
    data, _ = recorder.machine()
    assert data["nvml"]["init_error"] is None
    assert data["nvml"]["system"] == {"nvmlDeviceGetCount": 1}
    assert data["nvml"]["devices"] == [
        {"nvmlDeviceGetTemperature(0)": 34, "nvmlDeviceGetSerial": {"$error": "NVML_ERROR_NOT_SUPPORTED"}}
    ]


def test_a_failed_nvml_init_is_recorded() -> None:
    recorder = RecordingHost(RecordedHost(MISMATCH))
    with pytest.raises(NvmlError):
        recorder.nvml().system("nvmlSystemGetDriverVersion")
    assert recorder.machine()[0]["nvml"]["init_error"] == "NVML_ERROR_LIB_RM_VERSION_MISMATCH"


def test_sysfs_paths_go_inline_so_the_fixture_checks_out_on_windows(tmp_path: Any) -> None:
    path = "/sys/bus/pci/devices/0000:07:00.0/vendor"
    recorder = RecordingHost(RecordedHost({"files": {path: "0x10de\n"}}))
    recorder.read_bytes(path)
    data, files = recorder.machine()
    assert data["files"] == {path: "0x10de\n"} and files == {}
    write_machine(str(tmp_path), data, files)
    assert RecordedHost.load(str(tmp_path)).read_bytes(path) == b"0x10de\n"


def test_interpreter_errors_replay_with_their_kind() -> None:
    host = RecordedHost({"interpreters": {"/x/python": {"$error": "no answer", "kind": "timeout"}}})
    with pytest.raises(InterpreterError) as info:
        host.interpreter("/x/python", 1.0)
    assert getattr(info.value, "kind", None) == "timeout"


# ---------------------------------------------------------------------------- replaying exact answers


def test_exact_answers_win_over_the_tree() -> None:
    host = RecordedHost({
        "files": {"/usr/lib/libcuda.so.1": "", "/usr/lib/libextra.so": ""},
        "listings": {"/usr/lib": ["libcuda.so.1"], "/dev": ["nvidia0", "nvidiactl"]},
        "stat": {"/dev/nvidia0": "other", "/usr/lib/libextra.so": "missing", "/opt/cuda": "dir"},
        "realpaths": {"/usr/local/cuda": "/usr/local/cuda-12.4"},
        "which": {"nvidia-smi": None, "nvcc": "/usr/local/cuda/bin/nvcc"},
    })
    assert host.list_dir("/usr/lib") == ["libcuda.so.1"]
    assert host.list_dir("/dev") == ["nvidia0", "nvidiactl"]
    assert host.exists("/dev/nvidia0") and not host.is_file("/dev/nvidia0") and not host.is_dir("/dev/nvidia0")
    assert not host.exists("/usr/lib/libextra.so")
    assert host.is_dir("/opt/cuda")
    assert host.realpath("/usr/local/cuda") == "/usr/local/cuda-12.4"
    assert host.realpath("/usr/local/cuda/lib64/libcudart.so.12") == "/usr/local/cuda-12.4/lib64/libcudart.so.12"
    assert host.which("nvidia-smi") is None
    assert host.which("nvcc") == "/usr/local/cuda/bin/nvcc"


# ---------------------------------------------------------------------------- command line


def test_the_command_line_writes_a_machine_that_check_replays(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "this-machine")
    assert main([out, "--description", "CI runner."]) == 0
    with open(os.path.join(out, "machine.json"), encoding="utf-8") as fh:
        data = json.load(fh)
    assert data["recording"]["name"] == "this-machine" and data["interpreter"]["is_current"] is True
    with open(os.path.join(out, "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    assert readme.startswith("# this-machine\n\nCI runner.") and "A real recording" in readme
    capsys.readouterr()
    assert run(["check", "--machine", out, "--no-checks"]) == 0
    assert "Toolkits" in capsys.readouterr().out


def test_the_command_line_does_not_overwrite_a_recording_unless_forced(tmp_path: Any) -> None:
    out = str(tmp_path / "m")
    assert main([out, "--env", "gpu"]) == 0
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as fh:
        fh.write("edited by a maintainer\n")
    assert main([out]) == 2
    assert main([out, "--force"]) == 0
    with open(os.path.join(out, "README.md"), encoding="utf-8") as fh:
        assert fh.read() == "edited by a maintainer\n"


def test_names_that_are_not_utf8_survive_the_round_trip(tmp_path: Any) -> None:
    name = b"libcuda\xff.so.1".decode("utf-8", errors="surrogateescape")
    recorder = RecordingHost(RecordedHost({"files": {f"/usr/lib/{name}": ""}}))
    recorder.list_dir("/usr/lib")
    write_machine(str(tmp_path), *recorder.machine())
    assert RecordedHost.load(str(tmp_path)).list_dir("/usr/lib") == [name]
