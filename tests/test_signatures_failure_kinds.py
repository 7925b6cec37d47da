"""The kinds of failure of issue 15 (item 4), each with a message as a real report printed it:
the signature that comes first on it and the root cause it names first. The thread each message
was taken from is the first column, so a wrong verdict can be checked against the thread.

Messages are matched as explain() matches them (the most specific signature first), so a test
also fails when another signature starts to win on the message.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import cudadoctor
from cudadoctor.matrix import Matrix
from cudadoctor.model import Category as C

DATA = Path(__file__).resolve().parents[1] / "compat_data"

# (thread, message, first signature, first category)
CASES = [
    # a container started without GPUs comes before "no driver"
    ("https://github.com/NVIDIA/nvidia-docker/issues/1071",
     "WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.\n"
     "   Use 'nvidia-docker run' to start this container; see\n"
     "   https://github.com/NVIDIA/nvidia-docker/wiki/nvidia-docker",
     "ngc-container-driver-not-detected", C.CONTAINER_NO_GPU),
    # no kernel module for the running kernel: no driver, not an NVML problem
    ("https://github.com/compiler-explorer/infra/issues/1413",
     "Startup `modprobe: FATAL: Module nvidia not found in directory /lib/modules/6.8.0-1015-aws`",
     "modprobe-nvidia-module-not-found", C.NO_DRIVER),
    ("https://github.com/tensorflow/tensorflow/issues/5473",
     "modprobe: ERROR: could not insert 'nvidia_367_uvm': Unknown symbol in module, or unknown parameter (see dmesg)\n"
     "E tensorflow/stream_executor/cuda/cuda_driver.cc:491] failed call to cuInit: CUDA_ERROR_UNKNOWN\n"
     "I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:140] kernel driver does not appear to be running on this "
     "host (gzhao-b1208): /proc/driver/nvidia/version does not exist",
     "modprobe-nvidia-unknown-symbol", C.KERNEL_MODULE_BLOCKED),
    ("https://github.com/tensorflow/tensorflow/issues/5473",
     "I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:140] kernel driver does not appear to be running on this "
     "host (gzhao-b1208): /proc/driver/nvidia/version does not exist",
     "tf-kernel-driver-not-running", C.NO_DRIVER),
    # Xid codes by meaning
    ("https://github.com/NVIDIA/nvidia-docker/issues/849",
     "[Mon Oct 29 12:07:39 2018] NVRM: Xid (PCI:0000:8a:00): 48, An uncorrectable double bit error (DBE) has been "
     "detected on GPU in the framebuffer at partition 4, subpartition 1.",
     "xid-48-double-bit-ecc", C.HARDWARE_FAULT),
    ("https://github.com/NVIDIA/nvidia-docker/issues/849",
     "[Mon Oct 29 12:07:40 2018] NVRM: Xid (PCI:0000:8a:00): 63, Dynamic Page Retirement: New page retired, reboot "
     "to activate (0x00000000002ce8ac).",
     "xid-63-64-row-remap-page-retirement", C.HARDWARE_FAULT),
    ("https://github.com/leptonai/gpud/pull/1174",
     "NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3, Contained ECC error",
     "xid-92-94-95-ecc", C.HARDWARE_FAULT),
    ("https://github.com/NVIDIA/NVSentinel/pull/516",
     "kernel: NVRM: Xid (PCI:0000:b9:00): 74, pid=<unknown>, name=<unknown>, NVLink: fatal error detected on link "
     "6(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
     "xid-74-nvlink-error", C.HARDWARE_FAULT),
    ("https://github.com/NVIDIA/open-gpu-kernel-modules/issues/446",
     "[ 3947.590120] NVRM: Xid (PCI:0000:61:00): 119, pid=123417, name=nv-hostengine, Timeout after 6s of waiting "
     "for RPC response from GPU0 GSP! Expected function 10 (FREE) (0xc0000005 0x0).",
     "xid-119-120-gsp-error", C.HARDWARE_FAULT),
    ("https://github.com/leptonai/gpud/pull/46",
     "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, "
     "SM 0): Illegal Instruction Parameter",
     "xid-13-31-43-application-fault", C.OTHER),
    # a GPU lost without an Xid number in the paste
    ("https://github.com/NVIDIA/nvidia-docker/issues/1553",
     "Unable to determine the device handle for GPU 0000:09:00.0: Unknown Error",
     "nvidia-smi-gpu-lost", C.HARDWARE_FAULT),
    ("https://github.com/JosephKJ/OWOD/issues/81",
     "Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost. Reboot the system to recover this GPU",
     "nvidia-smi-gpu-lost", C.HARDWARE_FAULT),
    # a framework's own minimum compute capability
    ("https://github.com/tensorflow/tensorflow/issues/17445",
     "2018-03-05 13:43:54.533246: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1283] Ignoring visible gpu "
     "device (device: 0, name: Quadro K2000M, pci bus id: 0000:01:00.0, compute capability: 3.0) with Cuda compute "
     "capability 3.0. The minimum required Cuda capability is 3.5.",
     "tf-ignoring-gpu-below-min-capability", C.ARCH_UNSUPPORTED),
    ("https://github.com/vllm-project/vllm/issues/1284",
     "RuntimeError: GPUs with compute capability below 7.0 are not supported.",
     "vllm-gpu-below-min-capability", C.ARCH_UNSUPPORTED),
    ("https://github.com/chenyuntc/pytorch-best-practice/issues/12",
     "RuntimeError: cuDNN error: CUDNN_STATUS_ARCH_MISMATCH",
     "cudnn-status-arch-mismatch", C.ARCH_UNSUPPORTED),
    ("https://github.com/pytorch/pytorch/issues/182250",
     "UserWarning: Found GPU0 Tesla V100-PCIE-32GB which is of compute capability (CC) 7.0.\n"
     "The following list shows the CCs this version of PyTorch was built for and the hardware CCs it supports:",
     "torch-gpu-capability-not-built-for", C.ARCH_UNSUPPORTED),
    ("https://github.com/pytorch/pytorch/issues/172629",
     "UserWarning:\n    Found GPU0 NVIDIA GB10 which is of cuda capability 12.1.\n"
     "    Minimum and Maximum cuda capability supported by this version of PyTorch is\n    (8.0) - (12.0)",
     "torch-gpu-capability-not-built-for", C.ARCH_UNSUPPORTED),
    # Could not load a library by soname
    ("https://github.com/pytorch/pytorch/issues/100974",
     "OSError: libcurand.so.10: cannot open shared object file: No such file or directory",
     "cuda-math-library-cannot-open", C.MISSING_LIBRARY),
    # CuPy variant that does not match the CUDA libraries present
    ("https://github.com/cupy/cupy/issues/8317",
     "RuntimeError: CuPy failed to load libnvrtc.so.12: OSError: libnvrtc.so.12: cannot open shared object file: "
     "No such file or directory",
     "cupy-failed-to-load-library", C.WRONG_PACKAGE_VARIANT),
    # CPU and GPU builds of one package, NVIDIA wheels of two CUDA majors
    ("https://github.com/s9roll7/animatediff-cli-prompt-travel/issues/206",
     "(venv) G:\\animatediff>pip list\nonnxruntime                1.16.1\nonnxruntime-gpu            1.16.1\n",
     "onnxruntime-cpu-and-gpu-installed", C.WRONG_PACKAGE_VARIANT),
    ("https://github.com/pytorch/pytorch/issues/186591",
     "[pip3] nvidia-nccl-cu12==2.29.3\n[pip3] nvidia-nccl-cu13==2.29.7",
     "nvidia-wheels-two-cuda-majors", C.LIBRARY_VERSION_CONFLICT),
    # undefined-symbol ABI errors
    ("https://github.com/vllm-project/vllm/issues/3147",
     "ImportError: /usr/local/lib/python3.10/dist-packages/vllm/_C.cpython-310-x86_64-linux-gnu.so: undefined symbol: "
     "_ZN2at4_ops15to_dtype_layout4callERKNS_6TensorEN3c108optionalINS5_10ScalarTypeEEE",
     "undefined-symbol-torch-extension", C.COMPANION_VERSION_MISMATCH),
    ("https://github.com/Dao-AILab/flash-attention/issues/950",
     "`flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined\n symbol: _ZN3c104impl3cow11cow_deleterEPv`",
     "undefined-symbol-torch-extension", C.COMPANION_VERSION_MISMATCH),
    ("https://github.com/pytorch/pytorch/issues/119932",
     "ImportError: /home/user/.local/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: "
     "ncclCommRegister",
     "undefined-symbol-nccl", C.LIBRARY_VERSION_CONFLICT),
    # Windows, WSL 1, macOS
    ("https://github.com/Comfy-Org/ComfyUI/issues/989",
     "OSError: [WinError 126] The specified module could not be found. Error loading \"C:\\Users\\tenra\\AppData\\"
     "Roaming\\Python\\Python310\\site-packages\\torch\\lib\\caffe2_nvrtc.dll\" or one of its dependencies.",
     "winerror-126-dll-not-found", C.MISSING_LIBRARY),
    ("https://github.com/facebookresearch/bitsandbytes/issues/7",
     "OSError: [WinError 193] %1 is not a valid Win32 application in lib = ct.cdll.LoadLibrary(os.path.dirname("
     "__file__) + '/libbitsandbytes.so') in functional.py",
     "winerror-193-linux-library-on-windows", C.PLATFORM_UNSUPPORTED),
    ("https://github.com/microsoft/WSL/issues/5554",
     "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA "
     "driver is installed and running.\n\nsudo dkms install -m nvidia -v 440.100\n"
     "Error! Your kernel headers for kernel 4.4.0-19041-Microsoft cannot be found.",
     "wsl1-kernel", C.PLATFORM_UNSUPPORTED),
    # two real pastes put together: a macOS platform line (huggingface_hub#4128's environment dump) and the
    # error of a Mac user (nlpyang/PreSumm#159): the platform, not the CPU build, is the cause
    ("https://github.com/nlpyang/PreSumm/issues/159",
     " - Platform: macOS-26.2-arm64-arm-64bit\n"
     "AssertionError: Torch not compiled with CUDA enabled",
     "macos-host-no-cuda", C.PLATFORM_UNSUPPORTED),
    # MIG, Fabric Manager, nvidia-uvm
    ("https://github.com/jax-ml/jax/issues/15843",
     "> echo $CUDA_VISIBLE_DEVICES\nMIG-ff9ad03d-6c8b-5f72-b0dc-70b79aef1bd9,MIG-877ee044-c0f3-54bf-bb04-ef9353d2094c",
     "mig-several-instances-one-process", C.VISIBLE_DEVICES_HIDDEN),
    ("https://github.com/pytorch/pytorch/issues/35710",
     "RuntimeError: cuda runtime error (802) : system not yet initialized at /opt/conda/conda-bld/pytorch_1579022034529/"
     "work/aten/src/THC/THCGeneral.cpp:50",
     "cuda-system-not-ready-fabricmanager", C.OTHER),
    ("https://github.com/NVIDIA/nvidia-docker/issues/423",
     "nvidia-docker-plugin | 2017/07/09 00:49:15 Error: Could not load UVM kernel module. Is nvidia-modprobe installed?",
     "nvidia-uvm-not-loaded", C.KERNEL_MODULE_BLOCKED),
    # other tools' wordings of known messages
    ("https://github.com/NVIDIA/nvidia-container-toolkit/issues/394",
     "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown.",
     "nvml-driver-library-version-mismatch", C.DRIVER_LIBRARY_MISMATCH),
    ("https://github.com/NVIDIA/nvidia-docker/issues/182",
     "Aug 26 14:08:07 nyasara-linux kernel: NVRM: API mismatch: the client has the version 367.44, but\n"
     "                                      NVRM: this kernel module has the version 367.35.  Please",
     "nvrm-api-mismatch", C.DRIVER_LIBRARY_MISMATCH),
    ("https://github.com/jax-ml/jax/issues/11477",
     "    kernel version 515.48.7 does not match DSO version 510.73.5 -- cannot find working devices in this "
     "configuration",
     "kernel-dso-version-mismatch", C.DRIVER_LIBRARY_MISMATCH),
    ("https://github.com/jax-ml/jax/issues/788",
     "E external/org_tensorflow/tensorflow/compiler/xla/python/local_client.cc:672] Execution of replica 0 failed: "
     "Resource exhausted: Out \nof memory while trying to allocate 5520758552 bytes.",
     "jax-out-of-memory", C.OUT_OF_MEMORY),
]


@pytest.mark.parametrize("thread,message,signature,category", CASES, ids=[c[2] + "@" + c[0].rsplit("/", 3)[-3] for c in CASES])
def test_the_message_points_to_its_kind(thread: str, message: str, signature: str, category: C) -> None:
    e = cudadoctor.explain(message, check=False)
    assert e.matches, f"nothing matched the message of {thread}"
    first = e.matches[0]
    assert (first.signature, first.categories[0]) == (signature, category), thread


def test_every_new_kind_has_a_real_case() -> None:
    """Each signature named above exists in the shipped data and cites public threads."""
    data = Matrix(str(DATA)).signatures
    for thread, _, signature, _ in CASES:
        s = data.by_id(signature)
        assert s is not None, signature
        assert all(u.startswith("https://") for u in s.seen_in)


def test_xid_codes_are_told_apart() -> None:
    """Xid 48 and 79 are the GPU's; Xid 31 (a page fault) is usually the program's; an unknown
    Xid number is no hardware verdict at all."""
    def first(text: str) -> str:
        e = cudadoctor.explain(text, check=False)
        return e.matches[0].signature if e.matches else ""

    assert first("NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.") == "xid-79-fallen-off-bus"
    assert first("NVRM: Xid (PCI:0000:01:00): 31, pid=7, Ch 00000010, MMU Fault") == "xid-13-31-43-application-fault"
    assert first("NVRM: Xid (PCI:0000:01:00): 480, pid=7, something") == ""
    assert first("NVRM: Xid (PCI:0000:01:00): 9400, pid=7") == ""


def test_pip_lists_of_one_cuda_major_are_not_a_conflict() -> None:
    text = "nvidia-cublas-cu12        12.4.5.8\nnvidia-cuda-cupti-cu12    12.4.127\nnvidia-nccl-cu12 2.21.5\n"
    assert cudadoctor.explain(text, check=False).matches == ()
    one = "onnxruntime-gpu            1.16.1\nopencv-python 4.9.0\n"
    assert cudadoctor.explain(one, check=False).matches == ()
