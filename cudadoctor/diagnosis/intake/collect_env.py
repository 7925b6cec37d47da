"""``python -m torch.utils.collect_env`` in every format it has had: 1.x ("Is debug build: No",
"GPU models and configuration: GPU 0: ..." on one line, "[pip] ..."), 2.x ("Is CUDA available:
False", the GPU list on the following lines, "cuDNN version: Probably one of the following:" and a
list of paths, "[pip3] ..."/"[conda] ..." lines), the ROCm and XPU lines of later releases."""

from __future__ import annotations

import re
from typing import Optional

from cudadoctor.diagnosis.intake.model import Found
from cudadoctor.diagnosis.intake.common import os_of_text, package_fact, python_version, version_in
from cudadoctor.model.parsers import parse_compiler_version

KIND = "collect_env"
_KEY = re.compile(r"^\s{0,4}([A-Za-z][A-Za-z0-9 _./()-]{1,60}?)\s*:\s?(.*)$")
_START = ("PyTorch version:", "Collecting environment information", "Is debug build:", "CUDA used to build PyTorch:",
          "Python platform:", "Is CUDA available:", "GPU models and configuration:", "Nvidia driver version:",
          "cuDNN version:")
_UNKNOWN = ("could not collect", "n/a", "no cuda", "", "none")
_LIST = re.compile(r"^\s*\[(pip3?|conda|uv)\]\s+(.*)$")
_GPU = re.compile(r"^\s*GPU \d+:\s*(.+?)(?:\s*\(UUID:.*)?$")
_CUDNN_PATH = re.compile(r"libcudnn\w*\.so\.(\d+(?:\.\d+){0,2})\b|cudnn\w*64_(\d+)\.dll")
_MIG = re.compile(r"^\s*MIG\s+\d+g\.\d+gb\s+Device\s+\d+:")
# Keys of the report, which tell a collect_env block from prose
KEYS = {
    "pytorch version", "is debug build", "cuda used to build pytorch", "rocm used to build pytorch", "os",
    "gcc version", "clang version", "cmake version", "libc version", "python version", "python platform",
    "is cuda available", "cuda runtime version", "cuda_module_loading set to", "gpu models and configuration",
    "nvidia driver version", "cudnn version", "hip runtime version", "miopen runtime version",
    "is xnnpack available", "versions of relevant libraries", "is xpu available", "xpu used to build pytorch",
    "intel gpu driver version", "caching allocator config", "is torch.compile available", "cpu", "python",
    "pytorch debug build", "gpu", "numpy",
}
_LISTS = ("gpu models and configuration", "cudnn version", "versions of relevant libraries", "cpu")


def read(found: Found) -> None:
    lines = found.lines
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith(_START):
            i = _block(found, i)
        else:
            i += 1


def _block(found: Found, start: int) -> int:
    lines = found.lines
    section: Optional[str] = None
    last = start
    i = start
    blank = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            blank += 1
            if blank > 3:
                break
            i += 1
            continue
        blank = 0
        listed = _LIST.match(line)
        m = _KEY.match(line)
        key = m.group(1).strip().lower() if m else ""
        gpu = _GPU.match(line)
        if listed:
            _package(found, i, listed.group(1), listed.group(2))
            section = "versions of relevant libraries"
        elif m and key in KEYS:
            section = key if key in _LISTS else None
            _value(found, i, key, m.group(2).strip())
        elif section == "gpu models and configuration" and gpu:
            found.gpu(gpu.group(1), i, KIND)
        elif section == "gpu models and configuration" and _MIG.match(line):
            found.fact("mig", True, i, KIND)
        elif section == "cudnn version" and "cudnn" in line.lower():
            _cudnn(found, i, line)
        elif section == "cpu" and (m or line.startswith((" ", "\t"))):
            pass  # lscpu's lines: "Architecture: x86_64", flags, vulnerabilities
        elif i > start:
            break
        last = i
        i += 1
    found.block(KIND, start, last)
    return max(i, start + 1)


def _value(found: Found, i: int, key: str, value: str) -> None:
    low = value.lower()
    unknown = low in _UNKNOWN or low.startswith("could not collect")
    if key == "pytorch version" and not unknown:
        found.fact("torch_version", value.split()[0], i, KIND)
    elif key == "cuda used to build pytorch":
        if low in ("none", "could not collect") and _torch_read(found):
            # torch.version.cuda is None: a CPU build (a ROCm build says so on the next line)
            found.fact("torch_cuda", None, i, KIND)
        elif not unknown and version_in(value):
            found.fact("torch_cuda", version_in(value), i, KIND)
    elif key == "rocm used to build pytorch" and not unknown:
        found.notes.append(f"line {i + 1}: a ROCm build of PyTorch ({value[:40]}); cudadoctor judges NVIDIA "
                           "CUDA stacks")
        found.fact("rocm", value, i, KIND)
        found.facts[:] = [f for f in found.facts if not (f.key == "torch_cuda" and f.value is None
                                                           and f.block == KIND and i - 3 <= f.line - 1 < i)]
    elif key == "os" and not unknown:
        os = os_of_text(value)
        if os:
            found.fact("os", os, i, KIND)
    elif key == "python platform" and not unknown:
        _platform(found, i, value)
    elif key == "gcc version" and not unknown:
        v = parse_compiler_version(value)
        if v:
            found.fact("gcc_version", v, i, KIND)
    elif key in ("python version", "python") and not unknown:
        v = python_version(value)
        if v:
            found.fact("python", v, i, KIND)
    elif key == "is cuda available" and not unknown:
        found.fact("torch_cuda_available", low in ("true", "yes"), i, KIND)
    elif key == "cuda runtime version" and not unknown:
        v = version_in(value)
        if v:
            found.fact("nvcc_version", v, i, KIND)
    elif key == "gpu models and configuration" and not unknown:
        m = _GPU.match(value)
        if m:
            found.gpu(m.group(1), i, KIND)
        elif "gpu" not in low:
            found.gpu(value, i, KIND)
    elif key == "nvidia driver version" and not unknown:
        v = version_in(value)
        if v:
            found.fact("driver_version", v, i, KIND)
    elif key == "cudnn version" and not unknown and "probably one of" not in low:
        _cudnn(found, i, value)


def _torch_read(found: Found) -> bool:
    return any(f.key == "torch_version" for f in found.facts[-8:])


def _platform(found: Found, i: int, value: str) -> None:
    low = value.lower()
    os = os_of_text(value)
    if os:
        found.fact("os", os, i, KIND)
    if "microsoft" in low or "wsl" in low:
        found.fact("wsl", True, i, KIND)
        if "wsl2" not in low and "microsoft-standard" not in low:
            found.fact("wsl1", True, i, KIND)


def _cudnn(found: Found, i: int, text: str) -> None:
    m = _CUDNN_PATH.search(text)
    if m is None:
        v = version_in(text)
        if v and "/" not in text and "\\" not in text:
            found.fact("cudnn_system", v, i, KIND)  # "cuDNN version: 8.9.2" as some builds print it
        return
    found.fact("cudnn_system", m.group(1) or m.group(2), i, KIND)


def _package(found: Found, i: int, kind: str, rest: str) -> None:
    rest = rest.strip()
    if rest.lower().startswith("could not collect"):
        return
    if kind == "conda":
        parts = rest.split()
        if len(parts) >= 2:
            package_fact(found, i, parts[0], parts[1], KIND, build=parts[2] if len(parts) > 2 else None)
        return
    name, sep, version = rest.partition("==")
    if sep:
        package_fact(found, i, name.strip(), version.strip(), KIND)
