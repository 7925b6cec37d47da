"""The shapes of machine output that carry no versions but say what happened: a Python traceback
and the exception it ends in, an exception line on its own, a C++ ``terminate called`` abort, a
shell prompt with the command typed, log lines of a logger (glog, Python logging, NCCL's
``WARN``), a DKMS build's verdict, the two lines of ``python -c "import torch;
print(torch.__version__, torch.version.cuda)"``, a GPU name printed alone
(``torch.cuda.get_device_name()``), ``dkms status``, a Jetson's ``/etc/nv_tegra_release``,
``lshw``'s ``driver=nouveau``, a filtered package list (``pip list | grep torch``, ``conda list |
grep cuda``) with no header.

What is read here makes the text usable (never "nothing cudadoctor can read" for machine output)
and lets the diagnosis say what it read: "a Python traceback ending in RuntimeError: ...".
"""

from __future__ import annotations

import re
from typing import Optional

from cudadoctor.diagnosis.intake.common import DRIVER_VERSION, os_of_text, package_fact, python_version
from cudadoctor.diagnosis.intake.model import Found

_TRACEBACK = "Traceback (most recent call last):"
# "RuntimeError: ...", "torch.OutOfMemoryError: ...", "jax.errors.JaxRuntimeError: ...", a bare "KeyboardInterrupt"
_EXCEPTION = re.compile(r"^\s{0,8}(?:[-*|]\s{1,4})?((?:[A-Za-z_][\w]{0,80}\.){0,8}[A-Z][\w]{0,80}(?:Error|Exception|Exit|Interrupt|Failure"
                        r"|Fault))(?::\s?(.{0,2000}))?$")
_TERMINATE = re.compile(r"terminate called after throwing an instance of '([^']{1,200})'")
_WHAT = re.compile(r"^\s*what\(\):\s+(.{1,2000})$")
_PROMPT = re.compile(r"^\s{0,4}(?:\([\w.-]{1,64}\)\s*)?(?:[\w.-]{1,64}@[\w.-]{1,64}:[^$#\n]{0,200}[$#]|[\w.-]{1,64} [~/][^\s$#]{0,200} [$#%]|\$|#|%|❯|➜|»|→|>>>|"
                     r"PS [A-Za-z]:\\[^>]{0,200}>|[A-Za-z]:\\[^>]{0,200}>|In \[\d{1,5}\]:|\[[\w.-]{1,64}@[\w.-]{1,64} [^\]\n]{0,100}\][$#])"
                     r"\s+(\S.{0,2000})$")
_LOG_LEVEL = re.compile(r"^(?:[IWEF]\d{4} \d\d:\d\d:\d\d|[IWEF] (?:tensorflow|external|third_party|xla|[a-zA-Z]:\\)[\w/\\.:-]{0,300}\.(?:cc|h|cpp|py)[:\]]|\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d|(?:ERROR|WARNING|CRITICAL|FATAL):[\w.]{1,64}:|"
                        r"\S{1,80}:\d{1,10}:\d{1,10} \[\d{1,4}\] NCCL (?:WARN|INFO)|.{0,200}\bNCCL WARN\b)")
# A build's failure lines: make, ninja, CMake, pip's build step, a compiler's "file:line: error"
# Other lines of a program's or system's output: a Python warning ("file.py:52: UserWarning: ..."), torch's C++
# warnings ("[W CUDAFunctions.cpp:109] ..."), a crash, apt's and dpkg's errors, Xorg's "(EE)" lines, an "ERROR:" line
_OUTPUT = re.compile(r"^(?:\S{1,300}\.py:\d{1,7}: \w{0,40}Warning: |\[[WEIF]\d{0,4}[^\]\n]{0,80}\.(?:cpp|h|cc):\d{1,7}\]|"
                     r"(?:Segmentation fault|Aborted|Bus error|Floating point exception|Killed)(?: \(core dumped\))?\s*$|"
                     r"Process finished with exit code \d+ \(interrupted by signal \d+: SIG[A-Z]+\)|"
                     r"E: |dpkg: (?:error|dependency problems)|(?:error|fatal error|warning): |\[\s*\d{1,7}\.\d{3,9}\]|\(EE\) |(?:ERROR|Error|FATAL|Fatal error):? |Out\[\d{1,5}\]: )")
# A Dockerfile's instructions, a compose file's or a Kubernetes manifest's GPU lines, logfmt log lines (ollama)
_CONTAINER_FILE = re.compile(r"^\s{0,4}(?:FROM\s+\S+|RUN\s+\S|ENV\s+\w+[= ]|ARG\s+\w+|ENTRYPOINT\s|CMD\s|"
                             r"(?:- )?driver:\s*nvidia\b|nvidia\.com/gpu:|runtimeClassName:\s*nvidia|image:\s*\S+)")
_FROM = re.compile(r"^\s{0,4}FROM\s+(?:--platform=\S+\s+)?(\S+)")
_LOGFMT = re.compile(r"^time=\S+ level=(?:DEBUG|INFO|WARN|ERROR)\b")
_BUILD = re.compile(r"^(?:make(?:\[\d{1,3}\])?: \*\*\*|ninja: build stopped|error: command '|CMake Error|FAILED: |"
                    r"\S{1,300}\.(?:cu|cpp|cc|c|h|cuh|hpp)(?:\(\d{1,7}\)|:\d{1,7}(?::\d{1,5})?): (?:fatal )?error\b|"
                    r"error: subprocess-exited-with-error|ERROR: Failed building wheel)")
_TORCH_LINES = re.compile(r"^\s*(\d+\.\d+\.\d+(?:[a-z]+\d*)?(?:\+(?:cu\d+|cpu|rocm[\d.]+))?)\s+(\d+\.\d+|None)\s*$")
_VERSION_ALONE = re.compile(r"^\s*(\d+\.\d+\.\d+(?:[a-z]+\d*)?(?:\+(?:cu\d+|cpu|rocm[\d.]+))?)\s*$")
_CUDA_ALONE = re.compile(r"^\s*(\d+\.\d+|None)\s*$")
_BOOL_ALONE = re.compile(r"^\s*(True|False)\s*$")
# print(f"CUDA available: {torch.cuda.is_available()}") and the like
_AVAILABLE = re.compile(r"^\s*(?:torch\.cuda\.is_available\(\)|(?:is )?cuda(?: is)? available\??|gpu available\??|"
                        r"cuda\.is_available\(\))\s*(?:[:=]|->)?\s*(True|False)\s*$", re.IGNORECASE)
_GPU_ALONE = re.compile(r"^\s*'?((?:NVIDIA |Tesla |Quadro |GeForce )[\w -]{2,60}?)'?\s*$")
_DKMS_STATUS = re.compile(rf"^\s*nvidia(?:-open)?[/,]\s*({DRIVER_VERSION}),\s*(\S+),\s*\S+:\s*(installed|built|added)\b")
_DKMS_BAD = re.compile(r"Bad return status for module build on kernel: (\S+)|Error! Build of nvidia\S* failed")
_TEGRA = re.compile(r"^#?\s*R(\d{2}) \(release\), REVISION: (\d+\.\d+)")
_JETSON_RELEASE = re.compile(r"\bL4T(?: version)?:?\s+(\d{2}\.\d+(?:\.\d+)?)|\bJetpack(?: version)?:?\s+(\d\.\d+(?:\.\d+)?)", re.I)
_LSHW_NOUVEAU = re.compile(r"configuration:.*\bdriver=nouveau\b")
# One row of a filtered list: name, version, optionally build and channel (conda) or location (pip)
_ROW = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]{1,80})\s+(\d[\w.+!-]{0,40})(?:\s+(\S{1,80}))?(?:\s+(\S{1,80}))?\s*$")
# Packages of the GPU stack: a row naming one is a package list's row even with no header or prompt above it
_STACK_PACKAGE = re.compile(r"^(?:torch|torchvision|torchaudio|pytorch|pytorch-cuda|tensorflow\S*|tf-nightly|jax|jaxlib|jax-cuda\S*|"
                            r"cupy\S*|nvidia-\S+|cudatoolkit|cuda-\S+|cudnn|nccl|onnxruntime\S*|triton|xformers|vllm|"
                            r"bitsandbytes|flash[-_]attn|tensorrt\S*|numba|paddlepaddle\S*|mxnet\S*|deepspeed|libcublas|libcudnn\S*)$",
                            re.IGNORECASE)
_LISTED = re.compile(r"\b(?:pip3?|uv\s+pip|conda|mamba|micromamba)\s+(?:list|freeze)\b")

# Of a long log, the start and the end are read (a traceback, a prompt, a report sit there)
ENDS = (256 << 10, 1 << 20)
# A line this reader reads holds one of these
WORDS = ("Error", "Exception", "Exit", "Interrupt", "Failure", "Fault", "Traceback", "terminate called",
         "what():", "$ ", "# ", "❯", ">>>", "PS ", ":\\", "In [", "NCCL", "E1", "E0", "W1", "W0", "F1", "F0", "ERROR", "WARNING",
         "CRITICAL", "FATAL", "dkms", "nvidia/", "nvidia,", "Bad return status", "Build of nvidia", "release), REVISION",
         "L4T", "Jetpack", "JetPack", "driver=nouveau", "I tensorflow", "W tensorflow", "E tensorflow", "I external",
         "W external", "E external", "E c:", "W c:", "I c:", "make", "ninja:", "error", "CMake Error", "FAILED: ", "Warning: ", "[W", "[E", "Segmentation fault", "Aborted", "Process finished", "Bus error",
         "Floating point", "Killed", "E: ", "dpkg:", "(EE)", "ERROR", "Error", "Fatal", "FATAL", "Out[", "% ", "➜", "»", "→",
         "] ", "@", "FROM ", "RUN ", "ENV ", "ARG ", "ENTRYPOINT", "CMD ", "driver:", "nvidia.com/gpu",
         "runtimeClassName", "image:", "time=")


def read(found: Found) -> None:
    lines = found.lines
    listing: Optional[int] = None  # the line of a `pip list | grep ...` whose rows follow
    for i in found.lines_with(*WORDS, ends=ENDS):
        line = lines[i]
        if _TRACEBACK in line:
            _traceback(found, i)
            continue
        if "terminate called" in line:
            m = _TERMINATE.search(line)
            if m:
                found.block("traceback", i, i)
                what = _WHAT.match(lines[i + 1]) if i + 1 < len(lines) else None
                found.fact("exception", f"{m.group(1)}: {what.group(1).strip()}" if what else m.group(1), i, "traceback")
            continue
        exc = _EXCEPTION.match(line) if len(line) < 2100 else None
        if exc and not _inside_block(found, i):
            found.block("traceback", i, i)
            found.fact("exception", _shown(exc.group(1), exc.group(2)), i, "traceback")
        prompt = _PROMPT.match(line) if len(line) < 2200 else None
        if prompt and not exc:
            command = prompt.group(1).strip()
            found.block("platform", i, i)
            found.fact("command", command[:300], i, "platform")
            if _LISTED.search(command):
                listing = i
                _listed_rows(found, i + 1)
        if _LOG_LEVEL.match(line) or _BUILD.match(line) or _OUTPUT.match(line) or _LOGFMT.match(line):
            found.block("log", i, i)
            crash = _CRASH.search(line)
            if crash:
                found.fact("crash", crash.group(1) or crash.group(2), i, "log")
        elif _CONTAINER_FILE.match(line):
            found.block("docker_run", i, i)
            image = _FROM.match(line)
            if image:
                found.fact("base_image", image.group(1), i, "docker_run")
        _system_lines(found, i, line)
    if listing is None:
        _bare_torch_lines(found)
        _bare_rows(found)
    _other_outputs(found)


def _system_lines(found: Found, i: int, line: str) -> None:
    m = _DKMS_STATUS.match(line)
    if m:
        found.block("modprobe", i, i)
        found.fact("dkms_driver", m.group(1), i, "modprobe")
        return
    if _DKMS_BAD.search(line):
        found.block("modprobe", i, i)
        found.fact("dkms_failed", True, i, "modprobe")
        return
    tegra = _TEGRA.match(line)
    if tegra:
        found.block("platform", i, i)
        found.fact("l4t_release", f"{tegra.group(1)}.{tegra.group(2)}", i, "platform")
        return
    jetson = _JETSON_RELEASE.search(line)
    if jetson and jetson.group(1):
        found.block("platform", i, i)
        found.fact("l4t_release", jetson.group(1), i, "platform")
        return
    if "driver=nouveau" in line and _LSHW_NOUVEAU.search(line):
        found.block("lspci", i, i)
        found.fact("nouveau_loaded", True, i, "lspci")


def _shown(kind: str, message: Optional[str]) -> str:
    message = (message or "").strip()
    return f"{kind}: {message[:300]}" if message else kind


def _traceback(found: Found, start: int) -> None:
    """A traceback from its header to the exception line it ends in (the first line after the
    frames that is not indented)."""
    lines = found.lines
    end = start
    for j in range(start + 1, min(len(lines), start + 2000)):
        text = lines[j]
        if not text.strip():
            continue
        end = j
        if not text.startswith((" ", "\t")) and not text.startswith(("File ", "During handling", "The above exception")):
            break
    found.block("traceback", start, end)
    m = _EXCEPTION.match(lines[end]) if len(lines[end]) < 2100 else None
    if m:
        found.fact("exception", _shown(m.group(1), m.group(2)), end, "traceback")


def _inside_block(found: Found, i: int) -> bool:
    """Whether line ``i`` is inside a traceback already read (its exception is recorded there)."""
    for b in found.blocks[-8:]:
        if b.kind == "traceback" and b.start - 1 <= i <= b.end - 1:
            return True
    return False


def _listed_rows(found: Found, first: int) -> None:
    """The rows under a `pip list | grep torch` or `conda list | grep cuda` prompt: no header, one
    package a line, until a line that is not a row."""
    lines = found.lines
    last = None
    for j in range(first, min(len(lines), first + 500)):
        m = _ROW.match(lines[j])
        if not m:
            if not lines[j].strip():
                continue
            break
        build = m.group(3) if m.group(4) or (m.group(3) and not m.group(3).startswith(("/", "C:", "~"))) else None
        package_fact(found, j, m.group(1), m.group(2), "conda_list" if build else "pip_list", build=build)
        last = j
    if last is not None:
        found.block("pip_list", first, last)


def _bare_rows(found: Found) -> None:
    """Rows of a package list pasted without its header or the command (`conda list | grep cuda`'s
    output alone): a row counts when it names a package of the GPU stack."""
    read = {f.line for f in found.facts if f.key == "pip_packages"}
    for i in found.lines_with(*_ROW_WORDS, ends=ENDS):
        if i + 1 in read:
            continue
        m = _ROW.match(found.lines[i])
        if m and _STACK_PACKAGE.match(m.group(1)):
            build = m.group(3) if m.group(3) and not m.group(3).startswith(("/", "~")) and not re.match(r"^[A-Za-z]:", m.group(3)) \
                else None
            package_fact(found, i, m.group(1), m.group(2), "conda_list" if build else "pip_list", build=build)
            found.block("conda_list" if build else "pip_list", i, i)


_ROW_WORDS = ("torch", "pytorch", "tensorflow", "tf-", "jax", "cupy", "nvidia-", "cuda", "cudnn", "nccl", "onnxruntime",
              "triton", "xformers", "vllm", "bitsandbytes", "flash", "tensorrt", "numba", "paddle", "mxnet", "deepspeed",
              "libcu", "libcudnn")


def _bare_torch_lines(found: Found) -> None:
    """'2.5.1+cu124 12.4' as printed by print(torch.__version__, torch.version.cuda), and a GPU's
    name printed alone on the next lines (torch.cuda.get_device_name())."""
    lines = found.lines
    for i, line in enumerate(lines[:5000]):
        if not line or not line[0:1].strip().isdigit() and not line.startswith(" "):
            continue
        m = _TORCH_LINES.match(line)
        if not m or "+" not in m.group(1) and m.group(2) == "None" and not _near_torch(lines, i):
            continue
        if "+" not in m.group(1) and not _near_torch(lines, i):
            continue
        found.block("platform", i, i)
        package_fact(found, i, "torch", m.group(1), "pip_list")
        if m.group(2) != "None":
            found.fact("torch_cuda", m.group(2), i, "pip_list")
        _after_torch_lines(found, i + 1)
        return
    for i, line in enumerate(lines[:5000]):  # the same printed one value a line
        version = _VERSION_ALONE.match(line) if line[:1].isdigit() else None
        cuda = _CUDA_ALONE.match(lines[i + 1]) if version and i + 1 < len(lines) else None
        if not version or not cuda or ("+" not in version.group(1) and not _near_torch(lines, i)):
            continue
        found.block("platform", i, i + 1)
        package_fact(found, i, "torch", version.group(1), "pip_list")
        if cuda.group(1) != "None":
            found.fact("torch_cuda", cuda.group(1), i + 1, "pip_list")
        _after_torch_lines(found, i + 2)
        return


# Other outputs people paste that carry little or no version but are machine output: `conda info`,
# /usr/local/cuda/version.txt, `ls -l`, `docker info`, `systemctl status`, bitsandbytes' and the
# CUDA samples' headers
_CONDA_INFO = re.compile(r"^\s*(active environment|active env location|conda version|python version|base environment|"
                         r"virtual packages|channel URLs|package cache|envs directories)\s*:\s*(\S.*)$")
_VERSION_TXT = re.compile(r"^\s*CUDA Version (\d+\.\d+)(?:\.\d+)?\s*$")
_LS_LONG = re.compile(r"^[-dlcbps][rwxsStT-]{9}[.+@]?\s+\d+\s+\S+\s+\S+\s+[\d,]+\s+\w{3}\s+\d{1,2}\s+[\d:]{4,5}\s+\S")
_DOCKER_INFO = re.compile(r"^\s*(?:Runtimes|Default Runtime|Server Version|Storage Driver|Cgroup Driver|Cgroup Version|"
                          r"Docker Root Dir):\s*\S")
_SYSTEMD = re.compile(r"^\s*(?:Loaded: (?:loaded|not-found|masked)|Active: (?:active|inactive|failed|activating))\b")
_WSL_VERSION = re.compile(r"^\s*WSL version:\s*\d+\.\d+")
_WINDOWS_BUILD = re.compile(r"^\s*Windows version:\s*10\.0\.(\d{5})")
_WSL_LIST = re.compile(r"^\s*(\*)?\s*\S+\s+(?:Running|Stopped|Installing|Converting|Uninstalling)\s+([12])\s*$")
_CONTAINER_CLI = re.compile(r"^\s*(NVRM version|CUDA version|Model):\s+(\S.*?)\s*$")
_SYSTEM_TABLES = re.compile(r"^\s*(?:Filesystem\s+(?:Size|1K-blocks|1M-blocks)\s+Used\s+Avail|total\s+used\s+free\s+shared|"
                            r"(?:open files|max locked memory|core file size|max user processes)\s+\((?:\w+, )?-\w\)\s+\S)")
# A command line without a prompt (what was run), a shell's "command not found", pip's and conda's
# own progress lines, a printed call and its value ("cupy.cuda.runtime.getDeviceCount() = 0")
_BARE_COMMAND = re.compile(r"^\s*(?:(?:[A-Z_]{2,40}=\S*\s+){0,4}(?:python[\d.]*|torchrun|deepspeed|accelerate launch|"
                           r"(?:conda|mamba|micromamba) (?:install|create|env create)|uv (?:pip |run|sync|add)|"
                           r"pip[\d.]* (?:install|download|uninstall)|nvidia-smi|nvcc|docker (?:compose|exec|build))\b)(.{0,2000})$")
_NOT_FOUND = re.compile(r"(?:^|\s)(?:\w+: command not found: \S+|\S+: command not found|Command '\S+' not found, but can be "
                        r"installed with|'\S+' is not recognized as an internal or external command)")
_PIP_PROGRESS = re.compile(r"^\s*(?:Collecting \S|Downloading \S+\.whl|Installing collected packages: |Successfully uninstalled |"
                           r"Looking in indexes: |Requirement already satisfied: |Building wheels? for |ERROR: pip's dependency resolver|"
                           r"Collecting package metadata|Solving environment: |Preparing transaction: |Executing transaction: )")
_PRINTED_CALL = re.compile(r"^\s*[A-Za-z_][\w.]{2,120}\([^()\n]{0,80}\)\s*(?:=|:|->)\s*\S")
_CRASH = re.compile(r"^\s*(Segmentation fault|Aborted|Bus error|Floating point exception)(?: \(core dumped\))?\s*$"
                    r"|interrupted by signal \d+: (SIG[A-Z]+)\)")
# An issue template's answers ("OS: Ubuntu 22.04", "**GPU**: RTX 3060", "Driver: 546.33"), a Markdown
# table of packages, vLLM's and Ollama's version lines, `nvidia-smi topo -m`'s header
_TEMPLATE = re.compile(r"^\s*(?:[-*]\s+)?\**(OS|Operating System|Python(?: version)?|PyTorch(?: version)?|torch(?: version)?|"
                       r"TensorFlow(?: version)?|GPU(?: model| type)?|(?:NVIDIA )?Driver(?: version)?)\**\s*:\**\s*(\S.{0,120})$",
                       re.IGNORECASE)
_TABLE_ROW = re.compile(r"^\s*\|\s*`?([A-Za-z0-9][\w.-]{0,80})`?\s*\|\s*`?(\d[\w.+!-]{0,40})`?\s*\|")
_TOOL_VERSION = re.compile(r"^\s*(?:vLLM Version: (\d[\w.+-]*)|ollama version is (\d[\w.+-]*))\s*$")
_TOPO = re.compile(r"^\s*GPU0(?:\s+GPU\d+)*(?:\s+NIC\d+)*\s+CPU Affinity")
_SW_VERS = re.compile(r"^\s*ProductName:\s+(?:macOS|Mac OS X)\s*$")
_TOOL_HEADER = re.compile(r"^\s*(?:\[CUDA Bandwidth Test\]|\[[\w ]{1,60}\] - Starting\.\.\.|CUDA specs: CUDASpecs\(|"
                          r"CUDA SETUP: |bitsandbytes library load error|Detected \d+ CUDA Capable device)")


def _other_outputs(found: Found) -> None:
    lines = found.lines
    for i in found.lines_with(" : ", "CUDA Version", "Runtime", "Driver", "Version:", "Loaded:", "Active:",
                              "Root Dir", "CUDA", "Starting...", "CUDA Capable", "version:", "Running", "Stopped",
                              "Model:", "Filesystem", "total", "(-", "ProductName", "OS", "Operating", "ython",
                              "orch", "ensorFlow", "GPU", "river", "| ", "version is", "CPU Affinity", "vailable",
                              "VAILABLE", ends=ENDS):
        line = lines[i]
        available = _AVAILABLE.match(line)
        if available:
            found.block("platform", i, i)
            found.fact("torch_cuda_available", available.group(1) == "True", i, "platform")
            continue
        if _known_tool_line(found, i, line) or _template_line(found, i, line):
            continue
        row = _TABLE_ROW.match(line) if line.lstrip().startswith("|") else None
        if row and _STACK_PACKAGE.match(row.group(1)):
            package_fact(found, i, row.group(1), row.group(2), "pip_list")
            found.block("pip_list", i, i)
            continue
        tool = _TOOL_VERSION.match(line)
        if tool:
            found.block("platform", i, i)
            if tool.group(1):
                package_fact(found, i, "vllm", tool.group(1), "platform")
            continue
        if _TOPO.match(line):
            found.block("nvidia_smi", i, i)
            continue
        conda = _CONDA_INFO.match(line)
        if conda:
            found.block("platform", i, i)
            if conda.group(1) == "python version":
                version = python_version(conda.group(2))
                if version:
                    found.fact("python", version, i, "platform")
            continue
        version_txt = _VERSION_TXT.match(line)
        if version_txt:
            found.block("nvcc", i, i)
            found.fact("nvcc_version", version_txt.group(1), i, "nvcc")
        elif _DOCKER_INFO.match(line):
            found.block("docker_run", i, i)
        elif _SYSTEMD.match(line) or _TOOL_HEADER.match(line):
            found.block("platform", i, i)
    if not found.blocks:  # shapes too weak to read where anything else was read
        for i, line in enumerate(lines[:2000]):
            if (line[:1] in "-dlcbps" and _LS_LONG.match(line)) or _NOT_FOUND.search(line) or _PIP_PROGRESS.match(line) \
                    or _PRINTED_CALL.match(line):
                found.block("platform", i, i)
            elif _BARE_COMMAND.match(line):
                found.block("platform", i, i)
                found.fact("command", line.strip()[:300], i, "platform")


def _template_line(found: Found, i: int, line: str) -> bool:
    m = _TEMPLATE.match(line)
    if not m:
        return False
    key, value = m.group(1).lower(), m.group(2).strip().strip("*`").strip()
    if key in ("os", "operating system"):
        os_name = os_of_text(value)
        if os_name is None:
            return False
        found.fact("os", os_name, i, "platform")
    elif key.startswith("python"):
        version = python_version(value)
        if version is None:
            return False
        found.fact("python", version, i, "platform")
    elif key.startswith(("pytorch", "torch", "tensorflow")):
        number = re.match(r"^v?(\d+\.\d+[\w.+]*)", value)
        if number is None:
            return False
        package_fact(found, i, "tensorflow" if key.startswith("tensorflow") else "torch", number.group(1), "platform")
    elif key.startswith("gpu"):
        name = value.split(",")[0].strip()
        if not re.search(r"[A-Za-z]", name) or not re.search(r"\d", name):
            return False
        found.gpu(name, i, "platform")
    else:
        driver = re.match(rf"^({DRIVER_VERSION})\b", value)
        if driver is None:
            return False
        found.fact("driver_version", driver.group(1), i, "platform")
    found.block("platform", i, i)
    return True


def _known_tool_line(found: Found, i: int, line: str) -> bool:
    """A line of `wsl --version`, `wsl -l -v`, `nvidia-container-cli info`, `df`, `free`,
    `ulimit -a` or `sw_vers`, with the facts it gives."""
    if _WSL_VERSION.match(line):
        found.block("platform", i, i)
        found.fact("wsl", True, i, "platform")
        return True
    build = _WINDOWS_BUILD.match(line)
    if build:
        found.block("platform", i, i)
        found.fact("windows_build", int(build.group(1)), i, "platform")
        return True
    listed = _WSL_LIST.match(line)
    if listed:
        found.block("platform", i, i)
        if listed.group(1):  # the default distribution
            found.fact("wsl1" if listed.group(2) == "1" else "wsl", True, i, "platform")
        return True
    cli = _CONTAINER_CLI.match(line)
    if cli:
        found.block("platform", i, i)
        key, value = cli.groups()
        if key == "NVRM version" and re.fullmatch(DRIVER_VERSION, value):
            found.fact("driver_version", value, i, "platform")
        elif key == "CUDA version" and re.match(r"^\d{1,2}\.\d$", value):
            found.fact("driver_cuda_version", value, i, "platform")
        elif key == "Model" and _GPU_ALONE.match(value):
            found.gpu(value, i, "platform")
        return True
    if _SYSTEM_TABLES.match(line):
        found.block("platform", i, i)
        return True
    if _SW_VERS.match(line):
        found.block("platform", i, i)
        found.fact("os", "macos", i, "platform")
        return True
    return False


def _after_torch_lines(found: Found, start: int) -> None:
    """torch.cuda.is_available() and a GPU's name, printed on the lines after the versions."""
    lines = found.lines
    for j in range(start, min(len(lines), start + 3)):
        available = _BOOL_ALONE.match(lines[j])
        if available and j == start:
            found.block("platform", j, j)
            found.fact("torch_cuda_available", available.group(1) == "True", j, "platform")
        gpu = _GPU_ALONE.match(lines[j])
        if gpu:
            found.gpu(gpu.group(1), j, "platform")


def _near_torch(lines: "list[str]", i: int) -> bool:
    """The command that printed a bare version pair, just above it, names torch."""
    return any("torch" in lines[j] for j in range(max(0, i - 3), i))
