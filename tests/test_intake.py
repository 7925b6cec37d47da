"""Text intake: each kind of block a person pastes is read into facts with the line it came from.

Real outputs come from the corpus (tests/corpus/: public threads, cited in each case.json); the
short snippets written here are marked "shape of": typed in the exact format of the tool's output,
with values of our choosing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudadoctor.api import diagnose_text
from cudadoctor.data.source import default_matrix
from cudadoctor.diagnosis.intake import Intake, read_text
from helpers import HERE, cli

CORPUS = HERE / "corpus"


def _read(text: str) -> Intake:
    return read_text(text, default_matrix())


def _facts(text: str) -> Dict[str, Any]:
    return {k: f.value for k, f in _read(text).chosen().items()}


def _paste(case: str) -> str:
    for kind in ("reports", "healthy"):
        path = CORPUS / kind / case / "paste.md"
        if path.exists():
            return path.read_text(encoding="utf-8")
    raise FileNotFoundError(case)


# ---------------------------------------------------------------------------- collect_env


def test_collect_env_2x_every_fact_with_its_line() -> None:
    text = _paste("a-pytorch-sdpa-math-nan-2x4090")  # real, torch 2.1.2
    intake = _read(text)
    facts = intake.chosen()
    assert facts["torch_version"].value == "2.1.2+cu121" and facts["torch_cuda"].value == "12.1"
    assert facts["driver_version"].value == "545.23.08"
    assert facts["gpu_name"].value == "NVIDIA GeForce RTX 4090" and facts["gpu_count"].value == 2
    assert facts["cudnn_system"].value == "8.9.7" and facts["nvcc_version"].value == "12.3.107"
    assert facts["python"].value == "3.10.13" and facts["os"].value == "linux"
    lines = text.splitlines()
    for fact in facts.values():
        assert lines[fact.line - 1] == fact.text
    assert any(b.kind == "collect_env" for b in intake.blocks)


def test_collect_env_1x_could_not_collect_cuda_is_a_cpu_build() -> None:
    facts = _facts(_paste("a-pytorch181-conda-cpuonly-2x3090"))  # real, torch 1.8.1, conda cpuonly
    assert facts["torch_version"] == "1.8.1" and facts["torch_cuda"] is None
    assert facts["gpu_count"] == 2 and facts["torch_cuda_available"] is False


def test_collect_env_mig_line_inside_the_gpu_list() -> None:
    facts = _facts(_paste("a-pytorch181-cu102-a100-sm80-mig"))  # real
    assert facts["mig"] is True and facts["driver_version"] == "450.80.02"
    assert facts["cudnn_system"] == "8.1.0"


def test_collect_env_rocm_build_is_not_a_cpu_build() -> None:
    # shape of collect_env on a ROCm build
    text = ("PyTorch version: 2.5.1+rocm6.2\nIs debug build: False\nCUDA used to build PyTorch: N/A\n"
            "ROCM used to build PyTorch: 6.2.41133-dd7f95766\n")
    intake = _read(text)
    assert "torch_cuda" not in intake.chosen()
    assert any("ROCm" in n for n in intake.notes)


def test_collect_env_pip_and_conda_lines() -> None:
    # shape of the library lines of collect_env
    text = ("PyTorch version: 2.5.1\nCUDA used to build PyTorch: 12.4\n\nVersions of relevant libraries:\n"
            "[pip3] numpy==1.26.4\n[pip3] torch==2.5.1\n[pip3] nvidia-cudnn-cu12==9.1.0.70\n"
            "[conda] pytorch                   2.5.1           py3.11_cuda12.4_cudnn9.1.0_0    pytorch\n")
    doc = _read(text).facts_document()
    assert "nvidia-cudnn-cu12==9.1.0.70" in doc["pip_packages"]
    assert doc["torch_cuda"] == "12.4"


def test_a_collect_env_whose_start_was_not_captured_is_still_read() -> None:
    facts = _facts(_paste("a-pytorch-inductor-graph-diagram-4xquadro"))  # real, begins mid-report
    assert facts["gpu_name"] == "Quadro RTX 6000" and facts["gpu_count"] == 4
    assert facts["driver_version"] == "525.147.05"


def test_windows_collect_env_cudnn_dll() -> None:
    # shape of collect_env on Windows
    text = ("PyTorch version: 2.3.0+cu121\nCUDA used to build PyTorch: 12.1\nOS: Microsoft Windows 11 Pro\n"
            "cuDNN version: C:\\Program Files\\NVIDIA\\CUDNN\\v8.9\\bin\\cudnn_ops_infer64_8.dll\n")
    facts = _facts(text)
    assert facts["os"] == "windows" and facts["cudnn_system"] == "8"


# ---------------------------------------------------------------------------- nvidia-smi


def test_nvidia_smi_table() -> None:
    facts = _facts(_paste("b-cupy-2xt4-tensorcore-conv-pr2329"))  # real, driver 418
    assert facts["driver_version"] == "418.67" and facts["driver_cuda_version"] == "10.1"
    assert facts["gpu_name"] == "Tesla T4" and facts["gpu_count"] == 2


SMI_580 = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.65.06              Driver Version: 580.65.06      CUDA Version: 13.0     |
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |
| N/A   31C    P0             70W /  700W |   79000MiB /  81559MiB |      0%      Default |
|                                         |                        |             Disabled |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
|    0   N/A  N/A          123456      C   python                                78990MiB |
+-----------------------------------------------------------------------------------------+
"""  # shape of nvidia-smi 580


def test_nvidia_smi_580_table_memory_and_processes() -> None:
    intake = _read(SMI_580)
    facts = {k: f.value for k, f in intake.chosen().items()}
    assert facts["driver_version"] == "580.65.06" and facts["driver_cuda_version"] == "13.0"
    assert facts["gpu_name"] == "NVIDIA H100 80GB HBM3"
    assert facts["gpu_memory"] == "79000MiB / 81559MiB"
    assert "python" in facts["gpu_process"]
    snap = intake.snapshot()
    assert snap.gpus and snap.gpus[0].memory_used_mib == 79000


@pytest.mark.parametrize("message, key, value", [
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
     "NVIDIA driver is installed and running.", "nvml_error", "NVML_ERROR_DRIVER_NOT_LOADED"),
    ("Failed to initialize NVML: Driver/library version mismatch", "nvml_error", "NVML_ERROR_LIB_RM_VERSION_MISMATCH"),
    ("Failed to initialize NVML: Unknown Error", "nvml_error", "NVML_ERROR_UNKNOWN"),
    ("bash: nvidia-smi: command not found", "nvidia_smi_missing", True),
    ("No devices were found", "gpu_count", 0),
])
def test_nvidia_smi_failure_messages(message: str, key: str, value: Any) -> None:
    assert _facts(f"$ nvidia-smi\n{message}\n")[key] == value


def test_nvidia_smi_list_and_query() -> None:
    # shape of nvidia-smi -L and -q
    text = ("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5a3c1f2e-0000-1111-2222-333344445555)\n"
            "  MIG 3g.40gb     Device  0: (UUID: MIG-0b1c2d3e-0000-1111-2222-333344445555)\n\n"
            "==============NVSMI LOG==============\n\nTimestamp : Thu Nov 26 10:00:00 2026\n"
            "Driver Version                            : 550.90.07\nCUDA Version                              : 12.4\n\n"
            "Attached GPUs                             : 1\nGPU 00000000:07:00.0\n"
            "    Product Name                          : NVIDIA A100-SXM4-80GB\n    MIG Mode\n"
            "        Current                           : Enabled\n")
    facts = _facts(text)
    assert facts["gpu_name"] == "NVIDIA A100-SXM4-80GB" and facts["mig"] is True
    assert facts["driver_version"] == "550.90.07" and facts["driver_cuda_version"] == "12.4"


def test_proc_driver_version() -> None:
    # shape of /proc/driver/nvidia/version
    text = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  (dvs-builder@U16)\n"
    assert _facts(text)["kernel_module_version"] == "570.86.15"


# ---------------------------------------------------------------------------- packages


def test_pip_list_freeze_conda_and_uv() -> None:
    # shape of pip list, pip freeze and conda list
    text = ("Package            Version\n------------------ ------------\ntorch              2.5.1+cu124\n"
            "onnxruntime-gpu    1.20.1\n\n"
            "jax==0.4.35\njax-cuda12-plugin==0.4.35\n\n"
            "# packages in environment at /opt/conda:\n#\n# Name                    Version                   Build  Channel\n"
            "cupy-cuda12x              13.3.0                   pypi_0    pypi\n")
    doc = _read(text).facts_document()
    assert doc["torch_version"] == "2.5.1+cu124" and doc["torch_cuda"] == "12.4"
    assert doc["onnxruntime_package"] == "onnxruntime-gpu==1.20.1"
    assert doc["jax_version"] == "0.4.35" and doc["jax_cuda_plugin"] == "jax-cuda12-plugin==0.4.35"
    assert doc["cupy_package"] == "cupy-cuda12x==13.3.0"
    assert len(doc["pip_packages"]) == 5


def test_nvidia_packages_of_two_cuda_majors_are_all_kept() -> None:
    doc = _read(_paste("a-pytorch-nccl-cu12-cu13-both-installed")).facts_document()  # real
    assert {"nvidia-nccl-cu12", "nvidia-nccl-cu13"} <= {p.split("==")[0] for p in doc.get("pip_packages", [])}


# ---------------------------------------------------------------------------- tools and system


def test_tool_outputs() -> None:
    # shape of nvcc --version, gcc --version, tf.sysconfig.get_build_info() and cupy.show_config()
    text = ("nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.4, V12.4.131\n"
            "gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0\n"
            "OrderedDict([('cpu_compiler', '/usr/bin/gcc'), ('cuda_compute_capabilities', ['sm_35']), "
            "('cuda_version', '64_112'), ('cudnn_version', '64_8'), ('is_cuda_build', True)])\n\n"
            "CuPy Version          : 13.3.0\nCUDA Build Version    : 12020\nCUDA Driver Version   : 12040\n"
            "Device 0 Name         : NVIDIA GeForce RTX 3090\nDevice 0 Compute Capability : 86\n")
    facts = _facts(text)
    assert facts["nvcc_version"] == "12.4.131" and facts["gcc_version"] == "11.4.0"
    assert facts["tensorflow_cuda"] == "11.2" and facts["tensorflow_cudnn"] == "8"
    assert facts["driver_cuda_version"] == "12.4" and facts["cupy_cuda_build"] == "12.2"
    assert facts["gpu_name"] == "NVIDIA GeForce RTX 3090" and facts["compute_capability"] == "8.6"


@pytest.mark.parametrize("text, expected", [
    ("2.1.0+cu121\n12.1\nTrue\n", {"torch_version": "2.1.0+cu121", "torch_cuda": "12.1", "torch_cuda_available": True}),
    ("2.5.1+cu124 12.4\nFalse\nNVIDIA GeForce RTX 3090\n",
     {"torch_version": "2.5.1+cu124", "torch_cuda": "12.4", "torch_cuda_available": False,
      "gpu_name": "NVIDIA GeForce RTX 3090"}),
    ("CUDA available: False\n", {"torch_cuda_available": False}),
    ("torch.cuda.is_available(): True\n", {"torch_cuda_available": True}),
    ("WSL version: 2.0.9.0\nKernel version: 5.15.133.1-1\nWindows version: 10.0.22631.2715\n",
     {"wsl": True, "windows_build": 22631}),
    ("  NAME            STATE           VERSION\n* Ubuntu    Stopped         1\n", {"wsl1": True}),
    ("NVRM version:   535.104.05\nCUDA version:   12.2\n\nDevice Index:   0\nModel:          NVIDIA A10G\n",
     {"driver_version": "535.104.05", "driver_cuda_version": "12.2", "gpu_name": "NVIDIA A10G"}),
    ("     active environment : base\n      python version : 3.10.12.final.0\n", {"python": "3.10.12"}),
    ("CUDA Version 11.8.89\n", {"nvcc_version": "11.8"}),
    ("ProductName:\t\tmacOS\nProductVersion:\t\t14.4.1\n", {"os": "macos"}),
])
def test_short_outputs_people_paste(text: str, expected: Dict[str, Any]) -> None:
    """One-line prints, `wsl --version`, `wsl -l -v`, `nvidia-container-cli info`, `conda info`,
    version.txt, `sw_vers`: their facts, with the line read."""
    facts = _facts(text)
    assert {k: facts.get(k) for k in expected} == expected


@pytest.mark.parametrize("text", [
    "2021-06-09 01:19:41.611304: I external/org_tensorflow/tensorflow/compiler/xla/service/service.cc:169] XLA service\n",
    "INFO 05-01 10:00:00 llm_engine.py:100] Initializing an LLM engine\n",
    "[rank0]: something happened\n",
    "numeri ~ $ TF_CPP_MIN_LOG_LEVEL=0 python3 /tmp/test.py\n",
    "Runtimes: io.containerd.runc.v2 nvidia runc\nDefault Runtime: runc\n",
    "     Loaded: loaded (/lib/systemd/system/nvidia-persistenced.service)\n     Active: active (running)\n",
    "Filesystem      Size  Used Avail Use% Mounted on\nshm              64M     0   64M   0% /dev/shm\n",
    "open files                      (-n) 1024\n",
    "lrwxrwxrwx 1 root root 12 Jan  1 00:00 libcuda.so -> libcuda.so.1\n",
    "[CUDA Bandwidth Test] - Starting...\n",
])
def test_machine_output_without_a_version_is_still_read(text: str) -> None:
    assert _read(text).usable


def test_prose_alone_is_not_machine_output() -> None:
    assert not _read("I installed torch and it does not work. Version: latest. Is CUDA available? Not sure\n").usable


def test_jax_environment_info() -> None:
    facts = _facts(_paste("b-jax-8xa100-cumsum-sharding"))  # real
    assert facts["jax_version"] == "0.4.28" and facts["jaxlib_version"] == "0.4.28"
    assert facts["jax_devices"] == "gpu" and facts["gpu_name"] == "NVIDIA A100-SXM4-40GB"


def test_tensorflow_device_lines_give_the_compute_capability() -> None:
    facts = _facts(_paste("b-tf-quadro-k2000m-cc30-below-35"))  # real
    assert facts["gpu_name"] == "Quadro K2000M" and facts["compute_capability"] == "3.0"


def test_system_lines() -> None:
    # shape of dmesg, lspci, modprobe, mokutil, os-release, uname and an environment line
    text = ("[  12.3] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
            "[ 900.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"
            "01:00.0 VGA compatible controller [0300]: NVIDIA Corporation GA102 [GeForce RTX 3090] [10de:2204] (rev a1)\n"
            "\tKernel driver in use: nvidia\n"
            "SecureBoot enabled\n"
            'PRETTY_NAME="Ubuntu 22.04.3 LTS"\n'
            "Linux gpu01 5.15.0-91-generic #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023 x86_64 GNU/Linux\n"
            "export CUDA_VISIBLE_DEVICES=1\n")
    facts = _facts(text)
    assert facts["kernel_module_version"] == "535.104.05" and facts["xid"] == "79"
    assert facts["gpu_name"] == "GeForce RTX 3090" and facts["driver_loaded"] is True
    assert facts["secure_boot"] is True and facts["os"] == "linux" and facts["cuda_visible_devices"] == "1"


def test_modprobe_module_not_found_is_no_driver() -> None:
    text = "modprobe: FATAL: Module nvidia not found in directory /lib/modules/6.8.0-45-generic\n"  # shape of
    facts = _facts(text)
    assert facts["driver_loaded"] is False and facts["kernel_module_missing"] is True


@pytest.mark.parametrize("line, asked", [
    ("$ docker run --rm -it nvcr.io/nvidia/pytorch:24.05-py3 python -c 'import torch'", False),
    ("docker run --gpus all --rm nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi", True),
    ("sudo docker run --runtime=nvidia -e NVIDIA_VISIBLE_DEVICES=all image", True),
    ("podman run --device nvidia.com/gpu=all image", True),
])
def test_docker_run_lines(line: str, asked: bool) -> None:
    facts = _facts(line + "\n")
    assert facts["docker_gpus"] is asked and facts["container"] in ("docker", "podman")


def test_docker_advice_in_a_banner_is_not_a_command() -> None:
    facts = _facts(_paste("b-nvdocker-ngc-tf-no-gpus-flag"))  # real NGC banner: "Use 'nvidia-docker run' ..."
    assert "docker_gpus" not in facts


def test_wsl1_kernel_and_macos_paths() -> None:
    assert _facts("Error! Your kernel headers for kernel 4.4.0-19041-Microsoft cannot be found.\n")["wsl1"] is True
    assert _facts('  File "/Users/me/miniconda3/lib/python3.11/site-packages/torch/cuda/__init__.py"\n')["os"] == "macos"


# ---------------------------------------------------------------------------- Markdown and ambiguity


def test_a_github_issue_body_quotes_details_and_fences() -> None:
    body = ("### Environment\n\n<details><summary>collect_env</summary>\n\n```\n"
            "PyTorch version: 2.5.1+cu124\nCUDA used to build PyTorch: 12.4\nNvidia driver version: 470.82.01\n"
            "```\n</details>\n\n> RuntimeError: The NVIDIA driver on your system is too old (found version 11040).\n")
    intake = _read(body)
    facts = intake.chosen()
    assert facts["driver_version"].value == "470.82.01" and facts["driver_version"].line == 8
    assert intake.errors and intake.errors[0].line == 12


def test_two_values_of_one_fact_are_noted() -> None:
    text = "Nvidia driver version: 535.104.05\n\n| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |\n"
    intake = _read(text)
    assert intake.chosen()["driver_version"].value == "535.104.05"
    assert any("driver_version" in n and "550.54.15" in n for n in intake.notes)


def test_an_unknown_gpu_name_is_a_note() -> None:
    intake = _read("GPU 0: NVIDIA Quantum Frobnicator 9000 (UUID: GPU-00000000-0000-0000-0000-000000000000)\n")
    assert any("Quantum Frobnicator" in n for n in intake.notes)


def test_nothing_known_reads_as_nothing() -> None:
    assert not _read("Hello, my model does not train. Any idea?\nThanks!\n").usable


# ---------------------------------------------------------------------------- diagnosis


def test_a_driver_too_old_for_the_build_is_the_root_cause() -> None:
    d = diagnose_text("PyTorch version: 2.5.1+cu124\nCUDA used to build PyTorch: 12.4\n"
                      "Nvidia driver version: 470.82.01\n\nRuntimeError: CUDA error: unknown error\n")
    assert d.top is not None and d.top.category.value == "driver_too_old" and d.top.verdict == "holds"
    assert d.explanation.checked is not None and d.explanation.checked.kind == "paste"


def test_a_docker_run_without_gpus_ranks_the_container_first() -> None:
    text = ("$ docker run --rm -it pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime python -c 'import torch; "
            "torch.zeros(1).cuda()'\nRuntimeError: Found no NVIDIA driver on your system. Please check that you have "
            "an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n")
    d = diagnose_text(text)
    assert d.top is not None and d.top.category.value == "container_no_gpu" and d.top.line == 1


def test_asks_for_what_would_tell_when_nothing_holds() -> None:
    d = diagnose_text("RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
                      "CUDA kernel errors might be asynchronously reported at some other API call\n")
    assert d.top is not None and d.top.verdict != "holds"
    assert any("collect_env" in a for a in d.asks)


def test_cli_diagnose_a_pasted_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "issue.md"
    path.write_text(_paste("a-pytorch-rtx5090d-sm120-torch26-cu126"), encoding="utf-8")
    code, out, err = cli(["diagnose", str(path)], capsys)
    assert "Read: python -m torch.utils.collect_env" in out and "line " in out
    assert "Checked against the machine described in issue.md" in out
    code, out, err = cli(["diagnose", str(path), "--json"], capsys)
    doc = json.loads(out)
    assert doc["format"] == "cudadoctor.paste"
    assert any(f["key"] == "driver_version" and f["line"] > 0 for f in doc["read"]["facts"])


def test_cli_diagnose_text_without_anything_known(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "prose.txt"
    path.write_text("My training is slow. Please help.\n", encoding="utf-8")
    code, out, err = cli(["diagnose", str(path)], capsys)
    assert code == 2 and err.startswith("cudadoctor: error: ") and "nothing cudadoctor can read" in err


def test_a_log_longer_than_what_is_kept_is_read_from_its_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "train.log"
    with open(path, "w", encoding="utf-8") as fh:
        line = "step 100 loss 0.1234 lr 3e-4 tokens/s 12345\n"
        fh.write(line * (10 * 1024 * 1024 // len(line)))
        fh.write("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                 "capacity of 79.19 GiB of which 1.06 GiB is free.\n")
    code, out, err = cli(["diagnose", str(path), "--json"], capsys)
    assert "a long text" in err
    assert json.loads(out)["causes"][0]["category"] == "out_of_memory"


def test_api_diagnose_accepts_pasted_text() -> None:
    import cudadoctor

    findings = cudadoctor.diagnose("PyTorch version: 2.5.1+cu124\nCUDA used to build PyTorch: 12.4\n"
                                   "Nvidia driver version: 470.82.01\n")
    assert [f.code for f in findings] == ["driver-too-old-for-build"]


# ---------------------------------------------------------------------------- fuzz

_PIECES = st.sampled_from([
    "PyTorch version: ", "CUDA used to build PyTorch: ", "GPU 0: ", "| NVIDIA-SMI ", "Driver Version: ",
    "[pip3] torch==", "Package Version\n------- -------\n", "NVRM: Xid (PCI:0000:01:00): ", "docker run ",
    "```", "> ", "<details>", "Cuda compilation tools, release ", "jax: ", "CuPy Version : ", "=> not found",
    "modprobe: FATAL: Module nvidia not found", "\n", "\r", "\x00", "\x1b[2J", "9999999999", "12.4", "sm_90",
    "WSL version: ", "Windows version: 10.0.", "* Ubuntu Running ", "NVRM version: ", "Model: NVIDIA ",
    "python version : ", "CUDA Version ", "CUDA available: ", "True", "2021-06-09 01:19:41.6: ", "INFO 05-01 10:00:00 ",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=30)), max_size=40))
def test_no_text_makes_intake_raise(parts: Any) -> None:
    text = "".join(parts)
    intake = _read(text)
    try:
        intake.snapshot()
    except Exception as exc:  # a value no fact can hold is a SnapshotError with the key, never anything else
        from cudadoctor.model.serialize import SnapshotError

        assert isinstance(exc, SnapshotError), exc


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=30)), max_size=30))
def test_no_text_makes_diagnose_text_raise(parts: Any) -> None:
    from cudadoctor.errors import CudadoctorError

    try:
        diagnose_text("".join(parts))
    except CudadoctorError:
        pass


# ---------------------------------------------------------------------------- positive facts win


def test_cuda_available_with_a_too_old_driver_is_forward_compatibility() -> None:
    import cudadoctor

    facts = {"driver_version": "570.172.08", "torch_version": "2.9.0", "torch_cuda": "13.0",
             "gpu_name": "NVIDIA H100 80GB HBM3"}
    assert [f.code for f in cudadoctor.diagnose(facts)] == ["driver-too-old-for-build"]
    codes = [(f.code, f.severity.value) for f in cudadoctor.diagnose({**facts, "torch_cuda_available": True})]
    assert codes == [("cuda-forward-compat", "info")]


def test_the_healthy_h100_on_driver_570_with_cu130_has_no_error() -> None:
    d = diagnose_text(_paste("a-pytorch-sdpa-nondeterministic-nan-h100-cu130"))  # real
    assert [f.code for f in d.findings if f.severity.value == "error"] == []
    assert "cuda-forward-compat" in [f.code for f in d.findings]


def test_a_cause_the_pasted_facts_do_not_show_is_not_ruled_out() -> None:
    d = diagnose_text(_paste("a-xformers-built-cu121-torch-cu118-colab"))  # real: xformers is in no package list
    verdicts = {c.category.value: c.verdict for x in d.explanation.matches for c in x.causes}
    assert verdicts.get("companion_version_mismatch") == "cannot_tell"


def test_a_daemon_reload_before_nvml_unknown_error_is_the_container_losing_its_gpus() -> None:
    # shape of the NVIDIA container toolkit reports: the host ran daemon-reload, the container's nvidia-smi fails
    d = diagnose_text("$ sudo systemctl daemon-reload\n$ docker exec -it trainer nvidia-smi\n"
                      "Failed to initialize NVML: Unknown Error\n")
    assert d.top is not None and d.top.category.value == "container_no_gpu" and d.top.line == 1


# ---------------------------------------------------------------------------- context that ranks causes


@pytest.mark.parametrize("case, category", [
    ("b-nvdocker-k80-470-cuda117-image", "driver_too_old"),  # libcuda (DSO) 515 over kernel module 470
    ("b-wsl-2019-no-gpu-support", "platform_unsupported"),  # Windows build 17763 before GPU in WSL
    ("b-tf214-win10-not-built-with-cuda", "platform_unsupported"),  # tf.test.is_built_with_cuda() False, C:\\
    ("a-ort1131-cuda12-libcublaslt11", "wrong_package_variant"),  # libcublasLt.so.11 missing beside CUDA 12.0
])
def test_what_the_surroundings_show_comes_first(case: str, category: str) -> None:
    d = diagnose_text(_paste(case))  # real
    assert d.top is not None and d.top.category.value == category and d.top.verdict == "holds"


def test_a_kernel_module_newer_than_the_library_is_a_stale_user_space() -> None:
    # shape of the CUDA driver's log line
    d = diagnose_text("kernel version 550.54.15 does not match DSO version 535.104.05 -- cannot find working devices "
                      "in this configuration\n")
    assert d.top is not None and d.top.category.value == "driver_library_mismatch"


def test_a_cudnn_of_another_major_is_a_cudnn_mismatch() -> None:
    # shape of a loader error beside collect_env's cuDNN line
    d = diagnose_text("cuDNN version: /usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0\n"
                      "ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory\n")
    assert d.top is not None and d.top.category.value == "cudnn_mismatch"


def test_vllm_asked_for_on_windows_is_a_platform_matter() -> None:
    d = diagnose_text(_paste("a-vllm-windows-powershell-collect-env"))  # real: PowerShell's output, `pip install vllm`
    assert d.top is not None and d.top.category.value == "platform_unsupported" and d.top.source == "vllm-platform"
    assert diagnose_text("PS C:\\Users\\me> pip install vllm\n").top is not None
    assert diagnose_text("$ pip install vllm\n").top is None  # on Linux nothing is wrong with asking


def test_a_value_no_fact_can_hold_is_left_out_not_a_failure() -> None:
    from cudadoctor.diagnosis.intake import Fact

    intake = Intake(blocks=(), facts=(Fact("driver_version", "banana", 1, "Driver Version: banana", "nvidia_smi"),
                                      Fact("torch_version", "2.5.1", 2, "torch 2.5.1", "pip_list")), notes=(), text="")
    snap = intake.snapshot()
    assert snap.driver is None and snap.frameworks and snap.frameworks[0].version == "2.5.1"
    # found by the fuzzer: a table header without a driver version
    assert diagnose_text("| NVIDIA-SMI jax: Driver Version: PyTorch version: \n").top is None


# ---------------------------------------------------------------------------- more kinds of text and context


def test_the_interpreter_banner_gives_python_and_the_os() -> None:
    # real banners: Anaconda 3.7 on Linux (two lines), CPython 3.13 (one line), python.org 3.10 on Windows
    assert _facts("Python 3.7.5 (default, Oct 25 2019, 15:51:11) \n[GCC 7.3.0] :: Anaconda, Inc. on linux\n") == {
        "python": "3.7.5", "os": "linux"}
    assert _facts("Python 3.13.3 (main, Apr  9 2025, 04:03:52) [Clang 20.1.0 ] on linux\n")["os"] == "linux"
    assert _facts("Python 3.10.11 (tags/v3.10.11:7d4cc5a, Apr  5 2023, 00:38:17) [MSC v.1929 64 bit (AMD64)] "
                  "on win32\n")["os"] == "windows"
    assert "os" not in _facts("Python 3.12.1 (main, Dec  7 2023, 20:45:44)\nType 'help' for more information\n")


def test_gcc_v_gives_the_version_from_its_lto_wrapper_path() -> None:
    # real `gcc -v` lines (RHEL 7, Ubuntu 22.04); the "gcc version" line was not captured in the first
    assert _facts("COLLECT_LTO_WRAPPER=/usr/libexec/gcc/x86_64-redhat-linux/4.8.5/lto-wrapper\n")["gcc_version"] == "4.8.5"
    assert _facts("COLLECT_LTO_WRAPPER=/usr/lib/gcc/x86_64-linux-gnu/11/lto-wrapper\n")["gcc_version"] == "11"


def test_log_collectors_prefixes_are_taken_off() -> None:
    # docker compose logs and Ray workers put their name before each line
    text = ("vllm-1  | NVIDIA GeForce RTX 5070 Ti with CUDA capability sm_120 is not compatible with the current "
            "PyTorch installation.\n")
    assert _facts(text)["gpu_name"] == "NVIDIA GeForce RTX 5070 Ti"
    d = diagnose_text("(RayWorkerWrapper pid=11305) RuntimeError: NCCL error: unhandled cuda error (run with "
                      "NCCL_DEBUG=INFO for details)\n")
    assert d.intake.errors and d.intake.errors[0].line == 1
    remote = ("(RayWorkerWrapper pid=8120, ip=10.0.0.2) NVIDIA GeForce RTX 5070 Ti with CUDA capability sm_120 is "
              "not compatible with the current PyTorch installation.\n")
    assert _facts(remote)["gpu_name"] == "NVIDIA GeForce RTX 5070 Ti"


def test_an_old_gcc_behind_a_failed_source_build_is_the_host_compiler() -> None:
    d = diagnose_text(_paste("b-cupy-rhel77-gcc485-cub-build"))  # real: pip's failed build, gcc -v 4.8.5
    assert d.top is not None and d.top.category.value == "host_compiler_unsupported"
    newer = "ERROR: Failed building wheel for cupy\nCOLLECT_LTO_WRAPPER=/usr/lib/gcc/x86_64-linux-gnu/9/lto-wrapper\n"
    assert all(c.category.value != "host_compiler_unsupported" for c in diagnose_text(newer).ranked)
    no_build = "COLLECT_LTO_WRAPPER=/usr/libexec/gcc/x86_64-redhat-linux/4.8.5/lto-wrapper\n"
    assert all(c.category.value != "host_compiler_unsupported" for c in diagnose_text(no_build).ranked)


def test_a_windows_preview_build_under_wsl_is_named() -> None:
    d = diagnose_text(_paste("b-wsl-insider-21343-cuda-broken"))  # real: build 21343, WSL 2, nvidia-smi fails
    assert d.top is not None and d.top.category.value == "other" and d.top.source == "windows-preview-build"
    assert "preview" in d.top.label
    blocked = [c for c in d.ranked if c.category.value == "kernel_module_blocked"]
    assert blocked and blocked[0].verdict == "possible"  # WSL 2 loads no NVIDIA kernel module
    failing = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
    for released in (19045, 22631, 26100, 30000):  # released builds, and one newer than any known
        text = f"Microsoft Windows [Version 10.0.{released}.1000]\n{failing}"
        assert all(c.source != "windows-preview-build" for c in diagnose_text(text).ranked), released


def test_cuinit_unknown_with_a_driver_that_answers_is_the_driver_state() -> None:
    d = diagnose_text(_paste("b-tf-nvdocker-cuinit-unknown-after-suspend"))  # real: nvidia-smi 367.57 answers
    assert d.top is not None and d.top.category.value == "other" and "nvidia_uvm" in d.top.label
    blocked = {c.category.value: c.verdict for c in d.ranked}
    assert "kernel_module_blocked" not in blocked  # the driver answers: its module is loaded
    d = diagnose_text(_paste("b-tf-nvidia-367-uvm-unknown-symbol"))  # real: modprobe could not insert the module
    assert d.top is not None and d.top.category.value == "kernel_module_blocked"


def test_tensorflow_without_a_gpu_on_windows_and_on_linux() -> None:
    d = diagnose_text(_paste("b-tf-212-windows11-spyder-cpu-only"))  # real: device_lib lists the CPU alone
    assert d.top is not None and d.top.category.value == "platform_unsupported" and d.top.verdict == "likely"
    listed = ">>> tf.config.list_physical_devices('GPU')\n[]\n"
    windows = diagnose_text("PS C:\\Users\\me> python\n>>> tf.__version__\n'2.12.0'\n" + listed)
    assert windows.top is not None and windows.top.verdict == "holds" and windows.top.source == "tensorflow-windows"
    old = diagnose_text("PS C:\\Users\\me> python\n>>> tf.__version__\n'2.10.1'\n" + listed)
    assert old.top is not None and old.top.category.value != "platform_unsupported"
    linux = diagnose_text("Python 3.11.4 (main, Jul  5 2023, 13:45:01) [GCC 11.2.0] on linux\n" + listed)
    assert linux.top is not None and linux.top.category.value == "missing_library"
    assert any(c.category.value == "platform_unsupported" and c.verdict == "possible" for c in linux.ranked)
    gpu = ('[name: "/device:CPU:0"\ndevice_type: "CPU"\nmemory_limit: 268435456\n, name: "/device:GPU:0"\n'
           'device_type: "GPU"\n]\n')
    assert not diagnose_text(gpu).explanation.matches


def test_pips_torch_on_linux_is_a_cuda_build() -> None:
    d = diagnose_text(_paste("a-pytorch13-cuda101-driver41048-is-available-false"))  # real: pip install torch, on linux
    assert d.top is not None and d.top.category.value == "driver_too_old"
    assert any(c.category.value == "cpu_only_build" and c.verdict == "possible" for c in d.ranked)
    cpu = ("$ pip install torch --index-url https://download.pytorch.org/whl/cpu\n"
           "Python 3.11.4 (main, Jul  5 2023, 13:45:01) [GCC 11.2.0] on linux\n>>> torch.cuda.is_available()\nFalse\n")
    d = diagnose_text(cpu)
    assert d.top is not None and d.top.category.value == "cpu_only_build"


def test_a_build_that_names_the_cudnn_it_needs_beside_another() -> None:
    # shape of ONNX Runtime's warning beside ldconfig's cuDNN line
    needs = "Failed to create CUDAExecutionProvider. Require cuDNN 8.* and CUDA 12.*. Please install all dependencies\n"
    d = diagnose_text(needs + "\tlibcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.9\n")
    assert d.top is not None and d.top.category.value == "cudnn_mismatch" and d.top.verdict == "holds"
    same = diagnose_text(needs + "\tlibcudnn.so.8 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.8\n")
    assert all(c.verdict != "holds" for c in same.ranked)


def test_nccl_unhandled_cuda_error_points_at_a_bad_gpu_or_node_first() -> None:
    d = diagnose_text(_paste("a-vllm-ray-nccl-unhandled-cuda-error-bad-node"))  # real: Ray workers' log
    assert d.top is not None and d.top.category.value == "hardware_fault" and d.top.verdict == "likely"
    system = diagnose_text("RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n")
    assert system.top is not None and system.top.source == "nccl-unhandled-system-error"


def test_facts_that_messages_and_file_names_state() -> None:
    # shapes of vLLM's and bitsandbytes' messages, xFormers' build warning, an extension's file name
    vllm = ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla "
            "V100-SXM2-32GB GPU has compute capability 7.0.\n")
    assert _facts(vllm)["gpu_name"] == "Tesla V100-SXM2-32GB" and _facts(vllm)["compute_capability"] == "7.0"
    assert _facts("CUDA SETUP: Highest compute capability among GPUs detected: 8.0\n")["compute_capability"] == "8.0"
    assert _facts("    Python  3.10.13 (you have 3.10.12)\n")["python"] == "3.10.12"
    ext = "ImportError: flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n"
    assert _facts(ext)["python"] == "3.10" and _facts(ext)["os"] == "linux"
    assert _facts("ImportError: DLL load failed while importing _C: _C.cp311-win_amd64.pyd\n")["os"] == "windows"
    assert _facts("$ docker run --rm -it vllm/vllm-openai:latest\n")["container"] == "docker"


def test_a_gpu_named_twice_keeps_the_capability_a_message_gave() -> None:
    text = _paste("a-pytorch181-cu102-a100-sm80-mig")  # real: collect_env's GPU list, then torch's warning
    intake = _read(text)
    cc = intake.chosen()["compute_capability"]
    assert cc.value == "8.0" and "sm_80" in cc.text


@pytest.mark.parametrize("line, signal", [
    ("Segmentation fault (core dumped)", "Segmentation fault"),
    ("Process finished with exit code 139 (interrupted by signal 11: SIGSEGV)", "SIGSEGV"),
])
def test_a_crash_without_a_gpu_error_is_possibly_the_program(line: str, signal: str) -> None:
    from cudadoctor.api import diagnose_text

    text = "[11/01 20:14:15 d2.utils.events]: eta: 5:41:49  iter: 379  total_loss: 1.707\n" + line + "\n"
    assert _facts(text)["crash"] == signal
    top = diagnose_text(text).top
    assert top is not None and top.category.value == "other" and top.verdict == "possible"


@pytest.mark.parametrize("text, expected", [
    ("**System Info**\nOS: Windows 11\nGPU: RTX 3060\nDriver: 546.33\nPython: 3.11.5\nPyTorch: 2.1.0\n",
     {"os": "windows", "driver_version": "546.33", "python": "3.11.5", "torch_version": "2.1.0", "gpu_name": "RTX 3060"}),
    ("**OS**: Ubuntu 22.04\n**GPU**: NVIDIA A100-SXM4-80GB\n", {"os": "linux", "gpu_name": "NVIDIA A100-SXM4-80GB"}),
    ("| Package | Version |\n|---|---|\n| torch | 2.1.0+cu121 |\n| torchvision | 0.16.0 |\n",
     {"torch_version": "2.1.0+cu121", "torchvision_version": "0.16.0"}),
])
def test_issue_template_answers_and_markdown_tables(text: str, expected: Dict[str, Any]) -> None:
    facts = _facts(text)
    assert {k: facts.get(k) for k in expected} == expected


def test_vllm_and_ollama_version_lines() -> None:
    assert [f.value for f in _read("vLLM Version: 0.4.0\n").facts if f.key == "pip_packages"] == ["vllm==0.4.0"]
    assert _read("ollama version is 0.1.32\n").usable


def test_a_template_key_with_prose_is_not_a_fact() -> None:
    assert not _read("My GPU: it is broken and driver: unknown\n").usable
