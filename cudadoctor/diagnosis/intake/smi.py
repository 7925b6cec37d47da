"""``nvidia-smi`` (the table of every driver since 3xx, ``-q``, ``-L``), its failure messages,
and ``/proc/driver/nvidia/version``."""

from __future__ import annotations

import re

from cudadoctor.diagnosis.intake.model import Found
from cudadoctor.model.parsers import parse_proc_driver_version

_HEADER = re.compile(r"NVIDIA-SMI\s+(\S+)\s+(?:Driver Version|KMD Version):\s*(\d{2,4}\.\d{1,3}(?:\.\d{1,3})?)\b"
                     r"(?:\s+CUDA (?:UMD )?Version:\s*(\S+))?")
_ROW = re.compile(r"^\|\s*(\d{1,2})\s{1,6}(\S.*?)\s+(On|Off|WDDM|TCC)\s*\|\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:\S+)?")
_MEMORY = re.compile(r"\|\s*(\d+)\s*MiB\s*/\s*(\d+)\s*MiB\s*\|")
_PROCESS = re.compile(r"^\|\s+(\d+|N/A)\s+(?:N/A|\d+)\s+(?:N/A|\d+)\s+(\d+)\s+([CGM+]{1,3})\s+(\S.*?)\s+(\d+|N/A)\s*MiB\s*\|")
_LIST = re.compile(r"^\s*GPU (\d+):\s*(.+?)\s*\(UUID:\s*GPU-[0-9a-fA-F-]+\)")
_BARE_LIST = re.compile(r"(?:^|,\s*)GPU \d+:\s*((?:NVIDIA |Tesla |Quadro |GeForce |TITAN |A\d|H\d|L\d|B\d)[^,(]*?)\s*(?=,\s*GPU \d+:|$)")
_MIG = re.compile(r"^\s*MIG\s+\d+g\.\d+gb\s+Device\s+\d+:")
_Q = re.compile(r"^\s*(Driver Version|CUDA Version|Product Name|Attached GPUs|Current|Minor Number)\s+:\s*(.*)$")
# nvidia-smi's failure messages, and what NVML would call each
_FAILURES = (
    ("couldn't communicate with the nvidia driver", "NVML_ERROR_DRIVER_NOT_LOADED"),
    ("driver/library version mismatch", "NVML_ERROR_LIB_RM_VERSION_MISMATCH"),
    ("nvml shared library not found", "NVML_ERROR_LIBRARY_NOT_FOUND"),
    ("libnvidia-ml.so.1: cannot open shared object file", "NVML_ERROR_LIBRARY_NOT_FOUND"),
    ("failed to initialize nvml: insufficient permissions", "NVML_ERROR_NO_PERMISSION"),
    ("failed to initialize nvml: unknown error", "NVML_ERROR_UNKNOWN"),
)
_MISSING = re.compile(r"nvidia-smi: (?:command )?not found|'nvidia-smi' is not recognized as an internal or external"
                      r"|command not found: nvidia-smi|Command 'nvidia-smi' not found"
                      r"|nvidia-smi: No such file or directory|exec: \"nvidia-smi\": executable file not found"
                      r"|No such file or directory: '(?:[^'\n]{0,200}/)?nvidia-smi'", re.I)


def read(found: Found) -> None:
    lines = found.lines
    table_start = -1
    in_processes = False
    q_block = -1
    for i, line in enumerate(lines):
        if "NVIDIA-SMI" in line or "nvidia-smi" in line or "NVML" in line or "No devices were found" in line:
            _failure(found, i, line)
            header = _HEADER.search(line)
            if header:
                table_start = i
                in_processes = False
                found.block("nvidia_smi", max(i - 1, 0), i)
                found.fact("driver_version", header.group(2), i, "nvidia_smi")
                cuda = header.group(3)
                if cuda and re.match(r"^\d+\.\d+$", cuda):
                    found.fact("driver_cuda_version", cuda, i, "nvidia_smi")
                continue
        if table_start >= 0 and line.startswith(("|", "+")):
            _table_line(found, i, line, in_processes)
            if "Processes:" in line:
                in_processes = True
            if "MIG devices:" in line:
                found.fact("mig", True, i, "nvidia_smi")
            found.block("nvidia_smi", i, i)
            continue
        if table_start >= 0 and line.strip() and not line.startswith(("|", "+")):
            table_start = -1
        lst = _LIST.match(line)
        if lst:
            found.block("nvidia_smi_l", i, i)
            found.gpu(lst.group(2), i, "nvidia_smi_l")
            continue
        if _BARE_LIST.match(line):
            found.block("nvidia_smi_l", i, i)
            for name in _BARE_LIST.findall(line):
                found.gpu(name, i, "nvidia_smi_l")
            continue
        if _MIG.match(line):
            found.block("nvidia_smi_l", i, i)
            found.fact("mig", True, i, "nvidia_smi_l")
            continue
        if "NVRM version:" in line:
            version, _ = parse_proc_driver_version(line.strip())
            if version:
                found.block("proc_version", i, i)
                found.fact("kernel_module_version", version, i, "proc_version")
            continue
        if "==============NVSMI LOG==============" in line:
            q_block = i
            found.block("nvidia_smi_q", i, i)
            continue
        if q_block >= 0:
            q = _Q.match(line)
            if q:
                _q_line(found, i, q.group(1), q.group(2).strip())
                found.block("nvidia_smi_q", i, i)
            elif line.strip() and not re.match(r"^\s+\S.*:\s|^\s*\S.*\s+:\s|^GPU [0-9A-F]{8}:|^\s+\S[\w ]*$", line):
                q_block = -1


def _failure(found: Found, i: int, line: str) -> None:
    low = line.lower()
    for needle, name in _FAILURES:
        if needle in low:
            found.block("nvidia_smi_error", i, i)
            found.fact("nvml_error", name, i, "nvidia_smi_error")
            if name == "NVML_ERROR_DRIVER_NOT_LOADED":
                found.fact("driver_loaded", False, i, "nvidia_smi_error")
            return
    if _MISSING.search(line):
        found.block("nvidia_smi_error", i, i)
        found.fact("nvidia_smi_missing", True, i, "nvidia_smi_error")
    elif "no devices were found" in low:
        found.block("nvidia_smi_error", i, i)
        found.fact("gpu_count", 0, i, "nvidia_smi_error")


def _table_line(found: Found, i: int, line: str, in_processes: bool) -> None:
    if in_processes:
        p = _PROCESS.match(line)
        if p:
            found.fact("gpu_process", f"{p.group(4)} (pid {p.group(2)}, GPU {p.group(1)}): {p.group(5)} MiB",
                       i, "nvidia_smi")
        return
    row = _ROW.match(line)
    if row:
        name = row.group(2).strip()
        if not re.match(r"^Name\b", name):
            found.gpu(name, i, "nvidia_smi")
        return
    mem = _MEMORY.search(line)
    if mem:
        found.fact("gpu_memory", f"{mem.group(1)}MiB / {mem.group(2)}MiB", i, "nvidia_smi")


def _q_line(found: Found, i: int, key: str, value: str) -> None:
    if key == "Driver Version" and re.match(r"^\d+\.\d+", value):
        found.fact("driver_version", value, i, "nvidia_smi_q")
    elif key == "CUDA Version" and re.match(r"^\d+\.\d+$", value):
        found.fact("driver_cuda_version", value, i, "nvidia_smi_q")
    elif key == "Product Name":
        found.gpu(value, i, "nvidia_smi_q")
    elif key == "Current" and value == "Enabled" and i > 0 and "MIG Mode" in found.lines[i - 1]:
        found.fact("mig", True, i, "nvidia_smi_q")
