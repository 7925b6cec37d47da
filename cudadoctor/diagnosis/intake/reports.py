"""Environment reports of other tools, and short outputs people paste for a GPU question:

- Hugging Face's ``transformers-cli env`` / ``accelerate env`` / ``diffusers-cli env`` lists
  ("- `transformers` version: 4.36.2", "- PyTorch version (GPU?): 2.1.2+cu121 (True)");
- DeepSpeed's ``ds_report`` ("torch version .................... 2.1.0+cu121");
- CUDA's ``deviceQuery`` sample ("Device 0: "NVIDIA GeForce RTX 3090"", "CUDA Capability
  Major/Minor version number:    8.6", "CUDA Driver Version / Runtime Version 12.2 / 12.1");
- ``numba -s`` ("CUDA Driver Version : 12020", "id 0 b'NVIDIA GeForce RTX 3090' [SUPPORTED]");
- ``pip show torch`` ("Name: torch" then "Version: 2.1.0");
- ``nvidia-smi --query-gpu=name,driver_version,... --format=csv`` rows;
- ``torch.cuda.get_device_properties(0)`` ("_CudaDeviceProperties(name='...', major=8, minor=6");
- ``tf.config.list_physical_devices('GPU')`` and ``jax.devices()`` lists;
- ``lsmod`` (nvidia, nvidia_uvm, nouveau rows) and ``modinfo nvidia`` ("version: 535.104.05");
- ``ls -l /dev/nvidia*`` (the device nodes).
"""

from __future__ import annotations

import re

from cudadoctor.diagnosis.intake.common import DRIVER_VERSION, package_fact, python_version
from cudadoctor.diagnosis.intake.model import Found

KIND = "platform"
_HF = re.compile(r"^\s*-\s+`?([\w .()?-]{2,60}?)`?\s*(?:version(?: \(GPU\?\))?)?:\s+(\S.{0,200})$")
_HF_FRAMEWORK = re.compile(r"^(\d[\w.+]*)(?:\s+\((True|False|NA)\))?")
_DS = re.compile(r"^\s*(torch version|torch cuda version|nvcc version|torch install path|deepspeed info|"
                 r"torch hip version|shared memory \(/dev/shm\) size)\s+\.{3,}\s+(\S.{0,200})$")
_DQ_DEVICE = re.compile(r"^\s*Device (\d+): \"(.{2,80})\"\s*$")
_DQ_CC = re.compile(r"CUDA Capability Major/Minor version number:\s+(\d{1,2})\.(\d)")
_DQ_VERSIONS = re.compile(r"CUDA Driver Version / Runtime Version\s+(\d+\.\d+)\s*/\s*(\d+\.\d+)")
_NUMBA = re.compile(r"^\s*(CUDA Driver Version|CUDA Runtime Version|CUDA Device Initialized|Python Version)\s*:\s*(\S.{0,80})$")
_NUMBA_GPU = re.compile(r"^\s*id \d+\s+b?'(.{2,80})'\s+\[(SUPPORTED|UNSUPPORTED)\]")
_PIP_SHOW = re.compile(r"^\s*Name:\s*([A-Za-z0-9][\w.-]{0,80})\s*$")
_PIP_SHOW_VERSION = re.compile(r"^\s*Version:\s*(\d[\w.+!-]{0,40})\s*$")
_SMI_CSV_HEADER = re.compile(r"^\s*name,\s*[\w. \[\]]+(?:,\s*[\w. \[\]]+)*$")
_PROPS = re.compile(r"_CudaDeviceProperties\(name='([^']{2,80})', major=(\d+), minor=(\d+)")
_TF_GPUS = re.compile(r"PhysicalDevice\(name='/physical_device:GPU:(\d+)', device_type='GPU'\)")
_JAX_LIST = re.compile(r"^\s*\[((?:(?:Cuda|Gpu|Cpu|Tpu|cuda|gpu|cpu|tpu)(?:Device)?\(id=\d+(?:, [\w=]+)*\)(?:, )?){1,64})\]\s*$")
_LSMOD = re.compile(r"^\s*(nvidia(?:_uvm|_drm|_modeset|_peermem)?|nouveau)\s+\d{3,9}\s+\d{1,4}\b")
_MODINFO = re.compile(rf"^\s*version:\s+({DRIVER_VERSION})\s*$")
_DEV_NODE = re.compile(r"^\s*c[rw-]{9}\S*\s+\d+\s+\S+\s+\S+\s+\d+,\s*\d+\s.*\s/dev/nvidia(?:\d+|ctl|-uvm)\s*$")

# Of a long log, the start and the end are read (a traceback, a prompt, a report sit there)
ENDS = (256 << 10, 1 << 20)
# A line this reader reads holds one of these
WORDS = ("version", "Version", "- `", "- Platform", "- Python", "...", "Device ", "Capability", "id ", "Name:", "name,",
         "_CudaDeviceProperties", "PhysicalDevice(", "Device(id=", "(id=", "nvidia", "nouveau", "/dev/nvidia")


def read(found: Found) -> None:
    lines = found.lines
    for i in found.lines_with(*WORDS, ends=ENDS):
        line = lines[i]
        if len(line) > 1000:
            continue
        if line.lstrip().startswith("- ") and _hf(found, i, line):
            continue
        if "..." in line and _ds(found, i, line):
            continue
        if "Device " in line or "Capability" in line or "Driver Version / Runtime" in line:
            _device_query(found, i, line)
        if "CUDA " in line or "Python Version" in line or "id " in line:
            _numba(found, i, line)
        if "Name:" in line:
            _pip_show(found, i, line)
        if "name," in line and _SMI_CSV_HEADER.match(line):
            _smi_csv(found, i, line)
        _objects(found, i, line)
        _modules(found, i, line)


def _hf(found: Found, i: int, line: str) -> bool:
    m = _HF.match(line)
    if not m:
        return False
    key, value = m.group(1).strip().strip("`").lower(), m.group(2).strip()
    fw = _HF_FRAMEWORK.match(value)
    if key.startswith("pytorch") and fw:
        package_fact(found, i, "torch", fw.group(1), KIND)
        if fw.group(2) in ("True", "False"):
            found.fact("torch_cuda_available", fw.group(2) == "True", i, KIND)
    elif key.startswith("tensorflow") and fw:
        package_fact(found, i, "tensorflow", fw.group(1), KIND)
    elif key.startswith(("jax", "flax")) and fw:
        package_fact(found, i, key.split()[0], fw.group(1), KIND)
    elif key in ("transformers", "accelerate", "diffusers", "peft", "huggingface_hub", "safetensors", "bitsandbytes",
                 "deepspeed", "trl", "xformers") and fw:
        package_fact(found, i, key, fw.group(1), KIND)
    elif key == "python":
        py = python_version(value)
        if py:
            found.fact("python", py, i, KIND)
    elif key in ("gpu type", "gpu"):
        found.gpu(value.split(",")[0], i, KIND)
    else:
        return key in ("platform", "using gpu in script?", "using distributed or parallel set-up in script?")
    found.block(KIND, i, i)
    return True


def _ds(found: Found, i: int, line: str) -> bool:
    m = _DS.match(line)
    if not m:
        return False
    key, value = m.group(1), m.group(2).strip()
    found.block(KIND, i, i)
    if key == "torch version":
        package_fact(found, i, "torch", value.split()[0], KIND)
    elif key == "torch cuda version" and re.match(r"^\d+\.\d+$", value):
        found.fact("torch_cuda", value, i, KIND)
    elif key == "nvcc version" and re.match(r"^\d+\.\d+$", value):
        found.fact("nvcc_version", value, i, KIND)
    return True


def _device_query(found: Found, i: int, line: str) -> None:
    m = _DQ_DEVICE.match(line)
    if m:
        found.block("nvidia_smi_l", i, i)
        cc = None
        for j in range(i + 1, min(len(found.lines), i + 8)):
            c = _DQ_CC.search(found.lines[j])
            if c:
                cc = f"{c.group(1)}.{c.group(2)}"
                break
        found.gpu(m.group(2), i, "nvidia_smi_l", cc=cc)
        return
    v = _DQ_VERSIONS.search(line)
    if v:
        found.block(KIND, i, i)
        found.fact("driver_cuda_version", v.group(1), i, KIND)


def _numba(found: Found, i: int, line: str) -> None:
    m = _NUMBA.match(line)
    if m:
        key, value = m.group(1), m.group(2).strip()
        found.block(KIND, i, i)
        number = re.match(r"^(\d{2})(\d{3})$", value) or re.match(r"^\((\d+), (\d+)\)$", value)
        if key == "CUDA Driver Version" and number:
            major, minor = int(number.group(1)), int(number.group(2))
            found.fact("driver_cuda_version", f"{major}.{minor // 10 if minor >= 10 else minor}", i, KIND)
        elif key == "Python Version":
            py = python_version(value)
            if py:
                found.fact("python", py, i, KIND)
        return
    g = _NUMBA_GPU.match(line)
    if g:
        found.block(KIND, i, i)
        found.gpu(g.group(1), i, KIND)


def _pip_show(found: Found, i: int, line: str) -> None:
    m = _PIP_SHOW.match(line)
    if not m or i + 1 >= len(found.lines):
        return
    v = _PIP_SHOW_VERSION.match(found.lines[i + 1])
    if v:
        found.block("pip_list", i, i + 1)
        package_fact(found, i + 1, m.group(1), v.group(1), "pip_list")


def _smi_csv(found: Found, i: int, header: str) -> None:
    columns = [c.strip().split(" ")[0] for c in header.split(",")]
    for j in range(i + 1, min(len(found.lines), i + 65)):
        cells = [c.strip() for c in found.lines[j].split(",")]
        if len(cells) != len(columns):
            break
        found.block("nvidia_smi", i, j)
        row = dict(zip(columns, cells))
        if row.get("name"):
            found.gpu(row["name"], j, "nvidia_smi", cc=row.get("compute_cap") or None)
        driver = row.get("driver_version", "")
        if re.fullmatch(DRIVER_VERSION, driver):
            found.fact("driver_version", driver, j, "nvidia_smi")


def _objects(found: Found, i: int, line: str) -> None:
    props = _PROPS.search(line) if "_CudaDeviceProperties" in line else None
    if props:
        found.block(KIND, i, i)
        found.gpu(props.group(1), i, KIND, cc=f"{props.group(2)}.{props.group(3)}")
    tf = _TF_GPUS.findall(line) if "PhysicalDevice(" in line else []
    if tf:
        found.block(KIND, i, i)
        found.fact("gpu_count", len(tf), i, KIND)
    jax = _JAX_LIST.match(line) if "(id=" in line else None
    if jax:
        found.block(KIND, i, i)
        found.fact("jax_devices", jax.group(1), i, KIND)


def _modules(found: Found, i: int, line: str) -> None:
    if ("nvidia" in line or "nouveau" in line) and _LSMOD.match(line):
        name = _LSMOD.match(line).group(1)  # type: ignore[union-attr]
        found.block("kernel_log", i, i)
        found.fact("nouveau_loaded" if name == "nouveau" else "driver_loaded", True, i, "kernel_log")
    elif "version:" in line and i > 0 and any("modinfo" in found.lines[j] or "filename:" in found.lines[j]
                                              for j in range(max(0, i - 3), i)):
        m = _MODINFO.match(line)
        if m:
            found.block("kernel_log", i, i)
            found.fact("kernel_module_version", m.group(1), i, "kernel_log")
    elif "/dev/nvidia" in line and _DEV_NODE.match(line):
        found.block(KIND, i, i)
        found.fact("device_nodes_present", True, i, KIND)
