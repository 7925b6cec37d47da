"""`cudadoctor docker` on Dockerfiles, compose files and docker run lines taken (or adapted, as
the comment says) from public threads and image docs, each against a described host: the
problems it must report, each with its line, and nothing else; and files that are right, which
must get a clean verdict."""

from __future__ import annotations

import json
from typing import Dict, List, Optional, Sequence, Tuple

import pytest

from cudadoctor.checks.containers_facts import host_facts
from cudadoctor.checks.containers_run import run_docker
from cudadoctor.containers.model import DockerResult
from cudadoctor.data.source import default_matrix
from cudadoctor.matrix import Matrix
from cudadoctor.model import Severity
from cudadoctor.planner.target import described

from tests.helpers import cli

Case = Tuple[str, str, str, Optional[str], Sequence[str], Sequence[Tuple[str, int]]]
# (id, file name, text, host driver, host GPUs, expected problems (code, line): errors and warnings)

CASES: List[Case] = [
    # A CUDA 13 image on a host whose driver runs CUDA 12 only (phys-bench#14: torch cu130 on R535-R555).
    # https://github.com/Motphys/phys-bench/issues/14
    ("cuda13-image-on-535", "Dockerfile",
     "FROM nvidia/cuda:13.0.0-runtime-ubuntu24.04\nRUN pip install numpy\n",
     "535.104.05", ["RTX 4090"], [("driver-too-old-for-build", 1)]),
    # The same image on a data-centre GPU: nvidia/cuda's base layer installs cuda-compat, so forward
    # compatibility runs it (info, not an error). https://docs.nvidia.com/deploy/cuda-compatibility/
    ("cuda13-image-on-535-a100", "Dockerfile",
     "FROM nvidia/cuda:13.0.0-runtime-ubuntu24.04\nRUN pip install numpy\n",
     "535.104.05", ["A100"], []),
    # ...but not when the Dockerfile's LD_LIBRARY_PATH drops /usr/local/cuda/compat
    # (surya's entrypoint comment: 'forward compatibility was attempted on non supported HW').
    # https://gitlab.com/nvidia/container-images/cuda/-/blob/master/dist/12.4.1/ubuntu2204/base/Dockerfile
    ("cuda13-image-compat-dropped", "Dockerfile",
     "FROM nvidia/cuda:13.0.0-runtime-ubuntu24.04\nENV LD_LIBRARY_PATH=/usr/local/cuda/lib64\n",
     "535.104.05", ["A100"], [("driver-too-old-for-build", 1)]),
    # torch 2.9.1+cu130 from an NGC-style CUDA 13 devel image, on R535 (IAMJOYBO/python_wheel_build).
    # https://github.com/IAMJOYBO/python_wheel_build/releases/tag/torch2.9.1-cuda13.0
    ("cu130-torch-and-image-on-535", "Dockerfile",
     "FROM nvcr.io/nvidia/cuda:13.0.2-cudnn-devel-ubuntu24.04\n"
     "RUN pip install torch==2.9.1 --index-url https://download.pytorch.org/whl/cu130\n",
     "535.104.05", ["RTX 3090"], [("driver-too-old-for-build", 1), ("driver-too-old-for-build", 2)]),
    # NGC TensorFlow 23.01 (CUDA 12.0.1) on R470: its release notes allow 470.57+ on data-centre GPUs.
    # https://docs.nvidia.com/deeplearning/frameworks/tensorflow-release-notes/rel-23-01.html
    ("ngc-tf-2301-r470-a100", "Dockerfile",
     "FROM nvcr.io/nvidia/tensorflow:23.01-tf2-py3\nCMD [\"python\", \"train.py\"]\n",
     "470.57.02", ["A100"], []),
    ("ngc-tf-2301-r470-rtx3090", "Dockerfile",
     "FROM nvcr.io/nvidia/tensorflow:23.01-tf2-py3\nCMD [\"python\", \"train.py\"]\n",
     "470.57.02", ["RTX 3090"], [("driver-too-old-for-build", 1)]),
    # ...and on a data-centre GPU with a branch the release notes do not list (R465).
    ("ngc-tf-2301-r465-a100", "Dockerfile",
     "FROM nvcr.io/nvidia/tensorflow:23.01-tf2-py3\n",
     "465.19.01", ["A100"], [("driver-too-old-for-build", 1)]),
    # NGC PyTorch 20.02 (CUDA 10.2.89): 'you may use ... 418.xx' on Tesla boards.
    # https://docs.nvidia.com/deeplearning/frameworks/pytorch-release-notes/rel_20-02.html
    ("ngc-pt-2002-r418-t4", "Dockerfile", "FROM nvcr.io/nvidia/pytorch:20.02-py3\n", "418.87.01", ["T4"], []),
    # A 12.x image on an R535 host: minor-version compatibility runs it; PTX JIT is what needs more.
    # https://huggingface.co/spaces/SpacesExamples/jupyterlab/discussions/19/files
    ("cuda125-image-on-535", "Dockerfile",
     "FROM nvidia/cuda:12.5.1-cudnn-devel-ubuntu20.04\nENV DEBIAN_FRONTEND=noninteractive\n",
     "535.104.05", ["RTX 4090"], [("driver-minor-version-compat", 1)]),
    # pytorch/pytorch 2.7.0 CUDA 12.8 image (trl-lib/train) on R535: minor-version compatibility.
    # https://www.huggingface.co/spaces/trl-lib/train/commit/3388c3fc9c4e953d4a941661893c9ef045534991
    ("pytorch-cu128-image-on-535", "Dockerfile",
     "# Base image with CUDA 12.8, cuDNN 9, PyTorch 2.7.0\nFROM pytorch/pytorch:2.7.0-cuda12.8-cudnn9-devel\n"
     "ENV HOME=/usr/src/app\n",
     "535.104.05", ["A100"], [("driver-minor-version-compat", 2)]),
    # torch cu121 wheels (keras-hub's requirements) installed on a CUDA 12.4 image: two runtimes.
    # https://github.com/keras-team/keras-hub/pull/1726.diff
    ("torch-cu121-on-cuda124-image", "Dockerfile",
     "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN apt-get update && apt-get install -y python3-pip\n"
     "RUN pip install torch==2.4.0+cu121 torchvision==0.19.0+cu121 \\\n"
     "    --extra-index-url https://download.pytorch.org/whl/cu121\n",
     "550.54.15", ["RTX 4090"], [("image-torch-cuda-differs", 3)]),
    # yolov5's Dockerfile: torch 1.10.2+cu113 on an NGC image the data has no record of (22.01).
    # https://huggingface.co/spaces/xiang-wuu/yolov5/commit/bb054d5f55bed7db80cdb5aa837bb96f80b7dbcc
    ("yolov5-ngc-2201-torch-cu113", "Dockerfile",
     "# Start FROM Nvidia PyTorch image https://ngc.nvidia.com/catalog/containers/nvidia:pytorch\n"
     "FROM nvcr.io/nvidia/pytorch:22.01-py3\n"
     "RUN pip install --no-cache torch==1.10.2+cu113 torchvision==0.11.3+cu113 "
     "-f https://download.pytorch.org/whl/cu113/torch_stable.html\n",
     "450.80.02", ["V100"], []),
    # The CPU index in a CUDA image: torch.cuda.is_available() is False. https://pytorch.org/get-started/locally/
    ("cpu-torch-in-cuda-image", "Dockerfile",
     "FROM nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04\n"
     "RUN pip3 install torch torchvision --index-url https://download.pytorch.org/whl/cpu\n",
     "550.54.15", ["RTX 4090"], [("cpu-only-build", 2)]),
    ("cpu-local-torch-in-pytorch-image", "Dockerfile",
     "FROM pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime\nRUN pip install torch==2.5.1+cpu "
     "-f https://download.pytorch.org/whl/torch_stable.html\n",
     "550.54.15", ["RTX 4090"], [("cpu-only-build", 2)]),
    # flash-attn in a runtime stage: 'only images whose names contain devel will provide nvcc'.
    # https://github.com/Dao-AILab/flash-attention/blob/main/setup.py
    ("flash-attn-in-runtime-stage", "Dockerfile",
     "FROM pytorch/pytorch:2.5.1-cuda12.4-cudnn9-devel AS build\nRUN pip install ninja\n\n"
     "FROM pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime\nRUN pip install packaging && \\\n"
     "    pip install flash-attn --no-build-isolation\n",
     "550.54.15", ["A100"], [("image-builds-without-nvcc", 5)]),
    # apex from git in a runtime image (NVIDIA/apex's setup.py raises without nvcc).
    # https://github.com/NVIDIA/apex/blob/master/setup.py
    ("apex-git-in-runtime", "Dockerfile",
     "ARG BASE=nvidia/cuda:12.4.1-runtime-ubuntu22.04\nFROM ${BASE}\n"
     "RUN pip install -v --no-build-isolation git+https://github.com/NVIDIA/apex\n",
     "550.54.15", ["A100"], [("image-builds-without-nvcc", 3)]),
    # The docker compose GPU guide without its device reservation.
    # https://docs.docker.com/compose/how-tos/gpu-support/
    ("compose-no-gpu-reservation", "compose.yaml",
     "services:\n  test:\n    image: nvidia/cuda:12.9.0-base-ubuntu22.04\n    command: nvidia-smi\n",
     "575.57.08", ["RTX 4090"], [("container-without-gpu", 2)]),
    # A torch service with DataLoader workers and a 64 MB shm (PrefectHQ/prefect#4773); torch from PyPI
    # on a CPU image asks for no GPU and needs none (no container-without-gpu); unpinned, it is PyPI's newest
    # release the data knows, whose CUDA R550 cannot run.
    # https://github.com/PrefectHQ/prefect/issues/4773
    ("compose-dataloader-pip-torch", "docker-compose.yml",
     "version: '3.8'\nservices:\n  worker:\n    image: python:3.11-slim\n"
     "    command: sh -c \"pip install torch && python train.py --num_workers 4\"\n",
     "550.54.15", ["RTX 4090"], [("shm-too-small", 3), ("driver-too-old-for-build", 5)]),
    # NCCL segfaults in ncclShmOpen without --shm-size (pytorch/tutorials#2475).
    # https://github.com/pytorch/tutorials/pull/2475
    ("compose-nccl-small-shm", "compose.yaml",
     "services:\n  trainer:\n    image: pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime\n    shm_size: 64m\n"
     "    environment:\n      - NCCL_DEBUG=INFO\n    command: [\"torchrun\", \"--nproc_per_node=4\", \"train.py\"]\n"
     "    deploy:\n      resources:\n        reservations:\n          devices:\n            - driver: nvidia\n"
     "              count: all\n              capabilities: [gpu]\n",
     "550.54.15", ["A100"], [("shm-too-small", 4)]),
    ("run-nccl-default-shm", "run.sh",
     "#!/bin/sh\ndocker run --rm --gpus all \\\n  -e NCCL_DEBUG=INFO \\\n"
     "  pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime torchrun --nproc_per_node=2 train.py\n",
     "550.54.15", ["A100"], [("shm-too-small", 2)]),
    # NVIDIA_VISIBLE_DEVICES=void/none: no GPU in the container.
    # https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html
    ("dockerfile-visible-devices-none", "Dockerfile",
     "FROM nvidia/cuda:12.4.1-base-ubuntu22.04\nENV NVIDIA_VISIBLE_DEVICES=none\n",
     "550.54.15", ["RTX 4090"], [("nvidia-visible-devices-none", 2)]),
    ("compose-visible-devices-void", "compose.yaml",
     "services:\n  app:\n    image: nvidia/cuda:12.4.1-base-ubuntu22.04\n    runtime: nvidia\n"
     "    environment:\n      NVIDIA_VISIBLE_DEVICES: void\n",
     "550.54.15", ["RTX 4090"], [("nvidia-visible-devices-none", 6)]),
    ("run-visible-devices-none", "run.sh",
     "docker run --gpus all -e NVIDIA_VISIBLE_DEVICES=none nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n",
     "550.54.15", ["RTX 4090"], [("nvidia-visible-devices-none", 1)]),
    # NVIDIA_DRIVER_CAPABILITIES without compute: 'compute: required for CUDA and OpenCL applications'.
    # https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html
    ("compose-capabilities-utility-only", "compose.yaml",
     "services:\n  app:\n    image: nvidia/cuda:12.4.1-base-ubuntu22.04\n    gpus: all\n"
     "    environment:\n      - NVIDIA_DRIVER_CAPABILITIES=utility\n",
     "550.54.15", ["RTX 4090"], [("driver-capabilities-without-compute", 6)]),
    # CUDA_VISIBLE_DEVICES='' hides every device (CUDA programming guide, environment variables).
    # https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars
    ("dockerfile-cuda-visible-empty", "Dockerfile",
     "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nENV CUDA_VISIBLE_DEVICES=\"\"\n",
     "550.54.15", ["RTX 4090"], [("cuda-visible-devices-hides-all", 2)]),
    # TensorFlow 2.5.0-gpu (CUDA 11.2 per its tested build) on an R418 host (flax-community/gpt-2-german).
    # https://huggingface.co/flax-community/gpt-2-german/blob/57855ac4fe41cbe060f13d6c1f019623d3c8b1d8/Dockerfile
    ("tf250-gpu-on-418", "Dockerfile",
     "FROM tensorflow/tensorflow:2.5.0-gpu-jupyter\nRUN pip install --use-feature=2020-resolver tensorflow_hub\n",
     "418.87.01", ["RTX 3090"], [("driver-too-old-for-build", 1)]),
    # A docker run line without --gpus for a CUDA image (container-toolkit docs' sample workload).
    # https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/sample-workload.html
    ("run-without-gpus", "README.md",
     "Run it:\n\n    docker run --rm nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n",
     "550.54.15", ["RTX 4090"], [("container-without-gpu", 3)]),
]

CLEAN: List[Tuple[str, str, str, Optional[str], Sequence[str]]] = [
    # https://gist.github.com/malcolmgreaves/39f31ce466084e62aac4bce6456adf4e
    ("cuda117-torch-cu117", "Dockerfile",
     "FROM nvidia/cuda:11.7.1-devel-ubuntu22.04\nRUN pip install --index-url https://download.pytorch.org/whl/cu117 "
     "torch==1.13.0\nRUN pip install PyYAML scipy\n", "535.104.05", ["RTX 3090"]),
    # https://docs.salad.com/container-engine/tutorials/machine-learning/pytorch-rtx5090
    ("pytorch-cu128-on-5090", "Dockerfile",
     "FROM pytorch/pytorch:2.11.0-cuda12.8-cudnn9-runtime\nWORKDIR /app\nCOPY requirements.txt .\n"
     "RUN pip install --no-cache-dir -r requirements.txt\nCOPY . .\nCMD [\"python\", \"train.py\"]\n",
     "570.133.20", ["RTX 5090"]),
    # https://docs.docker.com/compose/how-tos/gpu-support/
    ("compose-gpu-guide", "compose.yaml",
     "services:\n  test:\n    image: nvidia/cuda:12.9.0-base-ubuntu22.04\n    command: nvidia-smi\n    deploy:\n"
     "      resources:\n        reservations:\n          devices:\n            - driver: nvidia\n"
     "              count: 1\n              capabilities: [gpu]\n", "575.57.08", ["RTX 4090"]),
    # https://gitlab.com/gitlab-org/gitlab/-/issues/281199 (ipc: host with shm_size)
    ("compose-ipc-host", "docker-compose.yml",
     "version: '3'\n\nservices:\n  my_service:\n    image: pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime\n"
     "    command: torchrun --nproc_per_node=2 train.py\n    ipc: host\n    shm_size: '8gb'\n    gpus: all\n",
     "550.54.15", ["A100"]),
    # https://gist.github.com/mikaelhg/c7c52f7dc2e1a927c562ee5ff3798ff4
    ("run-ngc-tf-shm-1g", "run.sh",
     "docker run --gpus all -it --rm --shm-size=1g --ulimit memlock=-1 --ulimit stack=67108864 "
     "nvcr.io/nvidia/tensorflow:23.01-tf2-py3 nvidia-smi\n", "525.85.12", ["A100"]),
    # https://github.com/pytorch/pytorch/blob/main/README.md#using-pre-built-images
    ("run-pytorch-readme", "README.md",
     "docker run --gpus all --rm -ti --ipc=host pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime\n",
     "550.54.15", ["RTX 4090"]),
    # https://gist.github.com/minlaxz/ab10afa935fc97fe264b08e50f5540ea (the CPU image and an 11.0 smoke test)
    ("run-tf-cpu-and-cuda110", "install.sh",
     "docker run -it --rm -v ~/jupyters:/tf/notebooks -p 8888:8888 tensorflow/tensorflow:latest-jupyter\n"
     "sudo docker run --rm --gpus all nvidia/cuda:11.0-base nvidia-smi\n", "535.104.05", ["RTX 3090"]),
    # The CUDA images' own capabilities (nvidia/cuda's base Dockerfile sets compute,utility).
    # https://gitlab.com/nvidia/container-images/cuda/-/blob/master/dist/12.4.1/ubuntu2204/base/Dockerfile
    ("capabilities-compute-utility", "Dockerfile",
     "FROM nvidia/cuda:12.4.1-base-ubuntu22.04\nENV NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility\n",
     "550.54.15", ["RTX 4090"]),
    # https://github.com/dreamquark-ai/tabnet/commit/4f9d610ff2b44c8dc23e39c9635c066ba7ac169a
    ("tabnet-cuda118-runtime", "Dockerfile_gpu",
     "# GENERATED FROM SCRIPTS\nFROM nvidia/cuda:11.8.0-runtime-ubuntu20.04\n\n# Avoid tzdata interactive action\n"
     "ENV DEBIAN_FRONTEND noninteractive\n", "535.104.05", ["RTX 3090"]),
    # flash-attn built in the devel stage, only its wheel copied (flash-attention's advice).
    # https://github.com/Dao-AILab/flash-attention/blob/main/setup.py
    ("flash-attn-devel-build-stage", "Dockerfile",
     "FROM pytorch/pytorch:2.5.1-cuda12.4-cudnn9-devel AS build\n"
     "RUN pip wheel --no-build-isolation -w /wheels flash-attn\n"
     "FROM pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime\nCOPY --from=build /wheels /wheels\n"
     "RUN pip install --no-index /wheels/*.whl\n", "550.54.15", ["A100"]),
]


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return default_matrix()


def _check(matrix: Matrix, name: str, text: str, driver: Optional[str], gpus: Sequence[str],
           others: Optional[Dict[str, str]] = None) -> DockerResult:
    host = host_facts(matrix, described(matrix, driver, gpus, gpu=True), "the described machine")
    return run_docker([(name, text)], host, matrix, (others or {}).get)


def _problems(result: DockerResult) -> List[Tuple[str, int]]:
    return sorted((loc.finding.code, loc.line) for loc in result.findings
                  if loc.finding.severity in (Severity.ERROR, Severity.WARNING, Severity.CRASHED))


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 25 and len(CLEAN) >= 8


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_case(matrix: Matrix, case: Case) -> None:
    _, name, text, driver, gpus, expected = case
    result = _check(matrix, name, text, driver, gpus)
    assert _problems(result) == sorted(expected), [(f.finding.code, f.line, f.finding.title) for f in result.findings]


@pytest.mark.parametrize("case", CLEAN, ids=[c[0] for c in CLEAN])
def test_clean(matrix: Matrix, case: Tuple[str, str, str, Optional[str], Sequence[str]]) -> None:
    _, name, text, driver, gpus = case
    result = _check(matrix, name, text, driver, gpus)
    assert _problems(result) == [], [(f.finding.code, f.line, f.finding.title) for f in result.findings]
    assert result.specs[0].units, "the file was read"


def test_forward_compat_is_said_on_a_data_centre_gpu(matrix: Matrix) -> None:
    result = _check(matrix, "Dockerfile", "FROM nvcr.io/nvidia/tensorflow:23.01-tf2-py3\n", "470.57.02", ["A100"])
    [loc] = result.findings
    assert (loc.finding.code, loc.finding.severity, loc.line) == ("cuda-forward-compat", Severity.INFO, 1)
    assert "470.57" in loc.finding.why and "data-centre" in loc.finding.why


def test_minor_version_compat_says_the_ptx_caveat(matrix: Matrix) -> None:
    result = _check(matrix, "Dockerfile", "FROM nvidia/cuda:12.5.1-cudnn-devel-ubuntu20.04\n", "535.104.05", ["A100"])
    [loc] = result.findings
    assert loc.finding.severity is Severity.WARNING and "PTX" in loc.finding.why


def test_driver_fix_is_a_from_line_the_driver_runs(matrix: Matrix) -> None:
    result = _check(matrix, "Dockerfile", "FROM nvidia/cuda:13.0.0-runtime-ubuntu24.04\n", "535.104.05", ["RTX 4090"])
    fix = result.findings[0].finding.fix
    assert fix is not None
    line = fix.commands[0].run
    assert line.startswith("FROM nvidia/cuda:12.2.") and line.endswith("-runtime-ubuntu24.04")
    assert matrix.cuda.driver_support("535.104.05", line.split(":")[1].split("-")[0]).kind == "native"


def test_torch_fix_is_the_planners_line_for_the_image_cuda(matrix: Matrix) -> None:
    case = next(c for c in CASES if c[0] == "torch-cu121-on-cuda124-image")
    result = _check(matrix, case[1], case[2], case[3], case[4])
    loc = next(f for f in result.findings if f.finding.code == "image-torch-cuda-differs")
    assert loc.finding.fix is not None
    assert any("download.pytorch.org/whl/cu124" in c.run and c.run.startswith("RUN pip install torch==")
               for c in loc.finding.fix.commands)


def test_unknown_image_is_said_unknown(matrix: Matrix) -> None:
    result = _check(matrix, "Dockerfile", "ARG BASE\nFROM $BASE\nRUN pip install torch==2.5.1\n", "550.54.15", ["A100"])
    [loc] = result.findings
    assert loc.finding.code == "image-cuda-unknown" and loc.line == 2 and "ARG BASE" in loc.finding.why


def test_compose_build_takes_its_dockerfiles_image(matrix: Matrix) -> None:
    compose = "services:\n  app:\n    build: ./app\n    command: python serve.py\n"
    result = _check(matrix, "proj/compose.yaml", compose, "535.104.05", ["RTX 4090"],
                    {"proj/app/Dockerfile": "FROM nvidia/cuda:13.0.0-base-ubuntu24.04\n"})
    assert _problems(result) == [("container-without-gpu", 2), ("driver-too-old-for-build", 3)]


def test_no_driver_known_is_said_not_judged(matrix: Matrix) -> None:
    result = _check(matrix, "Dockerfile", "FROM nvidia/cuda:13.0.0-base-ubuntu24.04\n", None, [])
    assert _problems(result) == [] and any("driver" in u for u in result.unjudged)


def test_cli_text_json_and_exit_codes(tmp_path: "pytest.TempPathFactory", capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "Dockerfile"  # type: ignore[operator]
    path.write_text("FROM nvidia/cuda:13.0.0-runtime-ubuntu24.04\n")
    code, out, _ = cli(["docker", str(path), "--driver", "535.104.05", "--gpu", "RTX 4090"], capsys)
    assert code == 1 and "1: nvidia/cuda:13.0.0-runtime-ubuntu24.04 needs a newer NVIDIA driver" in out
    code, out, _ = cli(["docker", str(path), "--driver", "535.104.05", "--gpu", "A100", "--json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["kind"] == "docker" and doc["findings"][0]["code"] == "cuda-forward-compat"
    assert doc["findings"][0]["line"] == 1 and doc["host"]["driver"] == "535.104.05"
    code, _, _ = cli(["docker", str(path), "--driver", "580.65.06", "--gpu", "RTX 4090", "--fail-on", "warning"], capsys)
    assert code == 0
    code, _, err = cli(["docker", str(tmp_path / "missing")], capsys)  # type: ignore[operator]
    assert code == 2 and "cannot be read" in err


def test_cli_against_a_recorded_machine_and_a_report(tmp_path: "pytest.TempPathFactory",
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """--machine replays a recorded machine (its probed driver and GPUs); --report reads a saved
    report's. The DGX's R570 and H100s: a CUDA 13 image runs there through forward compatibility;
    the laptop's R470 and RTX 3060 cannot run a CUDA 12 image at all."""
    from tests.helpers import MACHINES

    path = tmp_path / "Dockerfile"  # type: ignore[operator]
    path.write_text("FROM nvidia/cuda:13.0.0-runtime-ubuntu24.04\n")
    code, out, _ = cli(["docker", str(path), "--machine", str(MACHINES / "dgx-h100x8-driver570-torch27-cu128"),
                        "--json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["host"]["driver"].startswith("570.") and doc["host"]["where"] == "this machine"
    assert [f["code"] for f in doc["findings"]] == ["cuda-forward-compat"]
    report = tmp_path / "report.json"  # type: ignore[operator]
    assert cli(["report", "--machine", str(MACHINES / "laptop-rtx3060-driver470-torch25-cu124"), "--format", "json",
                "-o", str(report)], capsys)[0] == 0
    path.write_text("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n")
    code, out, _ = cli(["docker", str(path), "--report", str(report), "--json"], capsys)
    doc = json.loads(out)
    assert code == 1 and doc["host"]["driver"].startswith("470.")
    assert [(f["code"], f["line"]) for f in doc["findings"]] == [("driver-too-old-for-build", 1)]


def test_the_api_example_of_docs_api_md(tmp_path: "pytest.TempPathFactory") -> None:
    """docs/api.md shows cudadoctor.docker on docs/docker.md's Dockerfile: the same findings."""
    import re
    from pathlib import Path

    import cudadoctor

    docs = Path(__file__).resolve().parents[1] / "docs"
    block = re.search(r"```dockerfile\n(.*?)```", (docs / "docker.md").read_text(encoding="utf-8"), re.S)
    assert block
    path = tmp_path / "Dockerfile"  # type: ignore[operator]
    path.write_text(block.group(1))
    result = cudadoctor.docker(str(path), {"driver": "535.104.05", "gpus": ["A100"]})
    shown = [(f.line, f.finding.code, f.finding.severity.value) for f in result.findings]
    assert repr(shown) in (docs / "api.md").read_text(encoding="utf-8")
