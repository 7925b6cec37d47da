"""Facts that error messages state: the GPU and compute capability of PyTorch's "not compatible"
and "no longer supports this GPU" warnings, of vLLM's "Your Tesla V100 GPU has compute capability
7.0" and of bitsandbytes' "Highest compute capability among GPUs detected", the driver's CUDA
version in "driver ... too old (found version 11040)", the cuDNN versions of a compiled/loaded
mismatch, the CUDA versions of "The detected CUDA version (12.1) mismatches ...", jax/jaxlib
versions, xFormers' build (torch and Python), and the library a loader could not find."""

from __future__ import annotations

import re

from cudadoctor.diagnosis.intake.common import package_fact
from cudadoctor.diagnosis.intake.model import Found

KIND = "error"
_NOT_COMPATIBLE = re.compile(r"^\s*(?:\S*Warning:\s*)?(.+?) with CUDA capability sm_(\d{2,3})a? is not compatible with the "
                             r"current PyTorch installation")
_SUPPORTS = re.compile(r"The current PyTorch install supports CUDA capabilities ((?:(?:sm|compute)_\d+a? ?)+)")
_YOUR_GPU = re.compile(r"Your (.+?) GPU has compute capability (\d{1,2})\.(\d)\b")  # vLLM's dtype and capability checks
_HIGHEST_CC = re.compile(r"Highest compute capability among GPUs detected: (\d{1,2})\.(\d)\b")  # bitsandbytes
_XFORMERS_PYTHON = re.compile(r"^\s*Python\s+3\.\d+\.\d+\s+\(you have (3\.\d{1,2}\.\d{1,3})\)")
_TOO_OLD_GPU = re.compile(r"Found GPU\d+ (.+?) which is of cuda capability (\d+)\.(\d+)")
_DRIVER_FOUND = re.compile(r"driver on your system is too old \(found version (\d{4,5})\)")
_CUDNN_TORCH = re.compile(r"PyTorch was compiled against \((\d+), (\d+), (\d+)\) but found runtime version "
                          r"\((\d+), (\d+), (\d+)\)")
_CUDNN_LOADED = re.compile(r"Loaded runtime CuDNN library: (\d+\.\d+\.\d+) but source was compiled with: (\d+\.\d+\.\d+)")
_DETECTED = re.compile(r"The detected CUDA version \((\d+\.\d+)\) mismatches the version that was used to compile\s+"
                       r"PyTorch \((\d+\.\d+)\)")
_JAXLIB = re.compile(r"jaxlib version (\d+\.\d+\.\d+\S*) is (?:newer than and incompatible with|too old for|"
                     r"older than the minimum required by) jax version (\d+\.\d+\.\d+)")
_XFORMERS_YOU_HAVE = re.compile(r"PyTorch (\d+\.\d+\.\d+\S*) with CUDA \d+ \(you have (\d+\.\d+\.\d+\S*)\)")
_MISSING = re.compile(r"(?:Could not load dynamic library '|ImportError: |OSError: |error while loading shared "
                      r"libraries: )?(lib[\w+.-]+\.so(?:\.\d+)*)(?:'|: cannot open shared object file)")
_DLL = re.compile(r"Error loading \"[^\"]*\\([\w.-]+\.dll)\"|Could not load library ([\w.-]+\.dll)|"
                  r"Could not locate ([\w.-]+\.dll)")


# A line this reader reads holds one of these
WORDS = ("CUDA capability", "cuda capability", "compute capability", "found version", "compiled", "detected CUDA version", "jaxlib version",
         "you have", ".so", ".dll")


def read(found: Found) -> None:
    lines = found.lines
    for i in found.lines_with(*WORDS):
        line = lines[i]
        if len(line) < 20:
            continue
        if "CUDA capability" in line or "cuda capability" in line:
            _capability(found, i, line)
        if "compute capability" in line:
            your = _YOUR_GPU.search(line)
            if your:
                found.gpu(your.group(1).strip(), i, KIND, cc=f"{your.group(2)}.{your.group(3)}")
            highest = _HIGHEST_CC.search(line)
            if highest:
                found.fact("compute_capability", f"{highest.group(1)}.{highest.group(2)}", i, KIND)
        if "found version" in line:
            m = _DRIVER_FOUND.search(line)
            if m:
                value = int(m.group(1))
                found.fact("driver_cuda_version", f"{value // 1000}.{(value % 1000) // 10}", i, KIND)
        if "compiled" in line:
            _cudnn(found, i, line)
        if "detected CUDA version" in line:
            m = _DETECTED.search(line + " " + (lines[i + 1].strip() if i + 1 < len(lines) else ""))
            if m:
                found.fact("nvcc_version", m.group(1), i, KIND)
                found.fact("torch_cuda", m.group(2), i, KIND)
        if "jaxlib version" in line:
            m = _JAXLIB.search(line)
            if m:
                found.fact("jaxlib_version", m.group(1), i, KIND)
                found.fact("jax_version", m.group(2), i, KIND)
        if "you have" in line:
            m = _XFORMERS_YOU_HAVE.search(line)
            if m:
                package_fact(found, i, "torch", m.group(2), KIND)
            py = _XFORMERS_PYTHON.match(line)
            if py:
                found.fact("python", py.group(1), i, KIND)
        if ".so" in line and ("cannot open shared object" in line or "Could not load dynamic library" in line):
            m = _MISSING.search(line)
            if m:
                found.fact("missing_library", m.group(1), i, KIND)
        if ".dll" in line:
            m = _DLL.search(line)
            if m:
                found.fact("missing_library", next(g for g in m.groups() if g), i, KIND)


def _capability(found: Found, i: int, line: str) -> None:
    m = _NOT_COMPATIBLE.search(line)
    if m:
        digits = m.group(2)
        found.gpu(m.group(1).strip(), i, KIND, cc=f"{digits[:-1]}.{digits[-1]}")
        for j in range(i, min(i + 3, len(found.lines))):
            archs = _SUPPORTS.search(found.lines[j])
            if archs:
                found.fact("torch_arch_list", archs.group(1).split(), j, KIND)
                break
        return
    m = _TOO_OLD_GPU.search(line)
    if m:
        found.gpu(m.group(1).strip(), i, KIND, cc=f"{m.group(2)}.{m.group(3)}")


def _cudnn(found: Found, i: int, line: str) -> None:
    m = _CUDNN_TORCH.search(line)
    if m:
        found.fact("torch_cudnn", ".".join(m.group(1, 2, 3)), i, KIND)
        found.fact("cudnn_system", ".".join(m.group(4, 5, 6)), i, KIND)
        return
    m = _CUDNN_LOADED.search(line)
    if m:
        found.fact("cudnn_system", m.group(1), i, KIND)
