"""Tool and framework outputs: ``nvcc --version``, ``gcc --version``, TensorFlow's build info and
device log lines, ``jax.print_environment_info()``, ``cupy.show_config()``, ``ldd`` and
``ldconfig -p``, and what a Python prompt printed for ``torch.__version__`` and its kin."""

from __future__ import annotations

import re
from typing import Dict, Iterator, Optional

from cudadoctor.diagnosis.intake.model import Found
from cudadoctor.diagnosis.intake.common import os_of_text, package_fact, python_version
from cudadoctor.model.parsers import cuda_version_from_int, parse_compiler_version, parse_nvcc_version

_GCC_WRAPPER = re.compile(r"^\s*COLLECT_LTO_WRAPPER=\S*/gcc/[\w.-]+/(\d{1,2}(?:\.\d{1,2}){0,2})/lto-wrapper\s*$")
_GCC = re.compile(r"^\s*(?:gcc|g\+\+|cc|c\+\+)(?:-\d+)?\s+\(.*\)\s+\d+\.\d+|^\s*gcc version \d+\.\d+")
_TF_DEVICE = re.compile(r"name:\s*([^,]+?),\s*pci bus id:\s*[0-9a-fA-F:.]+,\s*compute capability:\s*(\d+\.\d+)")
_TF_PROPS = re.compile(r"name:\s*(\S.*?)\s+(?:computeCapability:\s*(\d+\.\d+)|major:\s*(\d+)\s+minor:\s*(\d+))")
_TF_INFO = re.compile(r"['\"](cuda_version|cudnn_version|is_cuda_build)['\"]\s*[,:]\s*(True|False|['\"][^'\"]{0,20}['\"])")
_JAX = re.compile(r"^\s*(jax|jaxlib|python|numpy):\s+(\S.*)$")
_JAX_DEVICES = re.compile(r"^\s*jax\.devices \(\d+ total, \d+ local\):\s*\[(.*)\]")
_JAX_DEVICE_INFO = re.compile(r"^\s*device info:\s*(.+?)-\d+,\s*(\d{1,3}) local devices")
_CUPY = re.compile(r"^\s*(CuPy Version|CUDA Build Version|CUDA Driver Version|Python Version|OS|"
                   r"Device (\d+) Name|Device (\d+) Compute Capability|CUDA Root)\s*:\s*(.*)$")
_LDD = re.compile(r"^\s*(lib[\w+.-]+\.so(?:\.\d+)*)\s+=>\s+(not found|/\S+)")
_LDCONFIG = re.compile(r"^\s*(lib[\w+.-]+\.so(?:\.\d+)*)\s+\([^)]*\)\s+=>\s+(/\S+)")
_CUDNN = re.compile(r"libcudnn\.so\.(\d+(?:\.\d+){0,2})")
# "torch: 2.3.0", "flash-attn version: 2.5.7", "torch.__version__  = 2.5.0+cu124", "Python 3.10.12"
_NAMED_VERSION = re.compile(r"^\s*[-*]?\s*(torch|pytorch|tensorflow(?:-gpu)?|jax|jaxlib|cupy(?:-cuda\d+x?)?|"
                            r"onnxruntime(?:-gpu)?|torchvision|torchaudio|flash[-_]attn|xformers|vllm|triton|"
                            r"bitsandbytes|transformers)(?:\.__version__)?(?:\s+version)?\s*[:=]{1,2}\s*v?"
                            r"(\d+\.\d+[\w.+]*)\s*$")
_NAMED_STARTS = ("torch", "pytorch", "tensorflow", "jax", "cupy", "onnxruntime", "flash", "xformers", "vllm",
                 "triton", "bitsandbytes", "transformers")
_TF_VERSION_LINE = re.compile(r"^\s*Tensor ?Flow(?: Version)?\s*[:=]\s*(\d+\.\d+\.\d+\S*)\s*$", re.I)
_PYTHON_LINE = re.compile(r"^\s*Python\s+(3\.\d{1,2}\.\d{1,3})\s*$")
# The interpreter's banner: "Python 3.7.5 (default, Oct 25 2019, 15:51:11)", then (on it, or on the next
# line) "[GCC 7.3.0] :: Anaconda, Inc. on linux"
_PYTHON_BANNER = re.compile(r"^\s*Python (3\.\d{1,2}\.\d{1,3})\S* \([^()]*, \d\d:\d\d:\d\d\)(.*)$")
_BANNER_OS = re.compile(r"^\s*(?:\[[^\]]*\])?[^\[\]]*? on (linux|win32|cygwin|darwin)\s*$")
_SYS_PLATFORM = {"linux": "linux", "win32": "windows", "cygwin": "windows", "darwin": "macos"}
_INLINE_ENV = re.compile(r"(?:^|[\s$#>])(CUDA_VISIBLE_DEVICES)=(\S*)\s+\S")
_PROMPT = re.compile(r"^\s*(?:>>>|In \[\d+\]:)?.*?\b(torch\.__version__|torch\.version\.cuda|torch\.cuda\.is_available\(\)"
                     r"|torch\.cuda\.get_arch_list\(\)|torch\.cuda\.get_device_name\([^)]*\)"
                     r"|torch\.cuda\.get_device_capability\([^)]*\)|torch\.backends\.cudnn\.version\(\)"
                     r"|tf\.test\.is_built_with_cuda\(\)|tf\.__version__|tensorflow\.__version__)")


# A line this reader reads holds one of these
WORDS = ("Cuda compilation tools", "nvcc", "gcc", "COLLECT_LTO_WRAPPER=", "g++", "cc (", "c++ (", "cc-", "capability",
         "computeCapability",
         "major:", "cuda_version", "is_cuda_build", "jax", "python", "numpy", "device info", "CuPy Version", "=>",
         "Tensor", "tensor", "Python", "CUDA_VISIBLE_DEVICES=", "torch", "tf.", "Execution Provider Library Version",
         "cupy", "onnxruntime", "flash", "xformers", "vllm", "triton", "bitsandbytes", "transformers")


def read(found: Found) -> None:
    lines = found.lines
    state = {"cupy": False}
    for i in _todo(found, state):
        line = lines[i]
        cupy = state["cupy"]
        if "Cuda compilation tools" in line:
            version = parse_nvcc_version(line)
            if version:
                found.block("nvcc", max(i - 3, 0) if i >= 3 and "nvcc" in lines[i - 3] else i, i)
                found.fact("nvcc_version", version, i, "nvcc")
            continue
        if "nvcc" in line and re.search(r"\bnvcc: (?:command )?not found|'nvcc' is not recognized|command not found: nvcc\b|Command 'nvcc' not found", line):
            found.block("nvcc", i, i)
            found.fact("nvcc_version", None, i, "nvcc")
            continue
        if ("cc" in line or "g++" in line) and _GCC.match(line):
            version = parse_compiler_version(line.strip().replace("gcc version", "version"))
            if version:
                found.block("gcc", i, i)
                found.fact("gcc_version", version, i, "gcc")
            continue
        wrapper = _GCC_WRAPPER.match(line) if "COLLECT_LTO_WRAPPER=" in line else None
        if wrapper:  # gcc -v: the version is in the path of its lto-wrapper
            found.block("gcc", i, i)
            found.fact("gcc_version", wrapper.group(1), i, "gcc")
            continue
        if "compute capability" in line or "computeCapability" in line or "major:" in line:
            _tf_device(found, i, line)
        if "cuda_version" in line or "is_cuda_build" in line:
            _tf_info(found, i, line)
        jax = _JAX.match(line) if line.lstrip().startswith(("jax", "python", "numpy")) else None
        if jax and (jax.group(1) in ("jax", "jaxlib") or _near_jax(lines, i)):
            _jax(found, i, jax.group(1), jax.group(2))
            continue
        info = _JAX_DEVICE_INFO.match(line) if "device info" in line else None
        if info:
            found.block("jax_env", i, i)
            found.gpu(info.group(1), i, "jax_env", count=int(info.group(2)))
            continue
        devices = _JAX_DEVICES.match(line) if "jax.devices" in line else None
        if devices:
            found.block("jax_env", i, i)
            found.fact("jax_devices", "gpu" if re.search(r"cuda|gpu", devices.group(1), re.I) else
                       "cpu" if "cpu" in devices.group(1).lower() else devices.group(1)[:40], i, "jax_env")
            continue
        c = _CUPY.match(line) if (cupy or "CuPy Version" in line) else None
        if c and (c.group(1) == "CuPy Version" or cupy):
            state["cupy"] = True
            _cupy(found, i, c)
            continue
        if cupy and line.strip() and not re.match(r"^\s*[\w ().-]+\s*:", line):
            state["cupy"] = False
        if "=>" in line:
            _libraries(found, i, line)
        named = _NAMED_VERSION.match(line) if line.lstrip(" -*").startswith(_NAMED_STARTS) else None
        if named:
            found.block("platform", i, i)
            package_fact(found, i, named.group(1), named.group(2), "platform")
        tfv = _TF_VERSION_LINE.match(line) if ("Tensor" in line or "tensor" in line) else None
        if tfv:
            found.block("platform", i, i)
            package_fact(found, i, "tensorflow", tfv.group(1), "platform")
        py = _PYTHON_LINE.match(line) if "Python" in line else None
        if py:
            found.block("platform", i, i)
            found.fact("python", py.group(1), i, "platform")
        banner = _PYTHON_BANNER.match(line) if "Python" in line else None
        if banner:
            _banner(found, i, banner)
        inline = _INLINE_ENV.search(line) if "CUDA_VISIBLE_DEVICES=" in line else None
        if inline:
            found.block("environment", i, i)
            found.fact("cuda_visible_devices", inline.group(2).strip("'\""), i, "environment")
        if "torch." in line or "tf." in line or "tensorflow." in line:
            _prompt(found, i)
        if line.startswith("#") and "Execution Provider Library Version" in line:
            _template_cuda(found, i)


def _banner(found: Found, i: int, m: "re.Match[str]") -> None:
    """The interpreter's banner: its version, and the OS it names (sys.platform)."""
    found.block("platform", i, i)
    found.fact("python", m.group(1), i, "platform")
    for j, rest in ((i, m.group(2)), (i + 1, found.lines[i + 1] if i + 1 < len(found.lines) else "")):
        where = _BANNER_OS.match(rest) if " on " in rest else None
        if where:
            found.block("platform", i, j)
            found.fact("os", _SYS_PLATFORM[where.group(1)], j, "platform")
            return


def _todo(found: Found, state: Dict[str, bool]) -> Iterator[int]:
    """The lines holding one of WORDS, in order, and while a cupy.show_config() block is open,
    every line after it (its lines hold any words)."""
    todo = found.lines_with(*WORDS)
    k, at = 0, -1
    while True:
        while k < len(todo) and todo[k] <= at:
            k += 1
        if state["cupy"] and at + 1 < len(found.lines):
            at += 1
        elif k < len(todo):
            at = todo[k]
        else:
            return
        yield at


def _near_jax(lines: "list[str]", i: int) -> bool:
    return any(re.match(r"^\s*jaxlib?:\s+\d", lines[j]) for j in range(max(0, i - 4), min(len(lines), i + 4)))


def _tf_device(found: Found, i: int, line: str) -> None:
    m = _TF_DEVICE.search(line)
    if m:
        found.block("tf_log", i, i)
        found.gpu(m.group(1), i, "tf_log", cc=m.group(2))
        return
    p = _TF_PROPS.search(line)
    if p:
        cc = p.group(2) or f"{p.group(3)}.{p.group(4)}"
        found.block("tf_log", i, i)
        found.gpu(p.group(1), i, "tf_log", cc=cc)


def _tf_info(found: Found, i: int, line: str) -> None:
    seen = False
    for key, raw in _TF_INFO.findall(line):
        value = raw.strip("'\"")
        seen = True
        if key == "is_cuda_build" and value == "False":
            found.fact("tensorflow_cuda", None, i, "tf_build_info")
        elif key == "cuda_version" and value:
            found.fact("tensorflow_cuda", _tf_version(value), i, "tf_build_info")
        elif key == "cudnn_version" and value:
            found.fact("tensorflow_cudnn", _tf_version(value), i, "tf_build_info")
    if seen:
        found.block("tf_build_info", i, i)


def _tf_version(value: str) -> str:
    """'64_112' (Windows builds) -> '11.2'; '64_8' -> '8'; '12.3' stays."""
    if value.startswith("64_"):
        digits = value[3:]
        return f"{digits[:-1]}.{digits[-1]}" if len(digits) >= 3 else digits
    return value


def _jax(found: Found, i: int, key: str, value: str) -> None:
    found.block("jax_env", i, i)
    if key in ("jax", "jaxlib"):
        v = value.split()[0] if value.split() else ""
        if re.match(r"^\d+\.\d+", v):
            found.fact(f"{key}_version", v, i, "jax_env")
    elif key == "python":
        py = python_version(value)
        if py:
            found.fact("python", py, i, "jax_env")


def _cupy(found: Found, i: int, m: "re.Match[str]") -> None:
    key, value = m.group(1), m.group(4).strip()
    found.block("cupy_config", i, i)
    if key == "CuPy Version":
        found.fact("cupy_version", value, i, "cupy_config")
    elif key == "CUDA Build Version" and value.isdigit():
        found.fact("cupy_cuda_build", cuda_version_from_int(int(value[:6])), i, "cupy_config")
    elif key == "CUDA Driver Version" and value.isdigit() and int(value[:6]) > 0:
        found.fact("driver_cuda_version", cuda_version_from_int(int(value[:6])), i, "cupy_config")
    elif key == "Python Version":
        v = python_version(value)
        if v:
            found.fact("python", v, i, "cupy_config")
    elif key == "OS":
        os = os_of_text(value)
        if os:
            found.fact("os", os, i, "cupy_config")
    elif m.group(2) is not None:
        found.gpu(value, i, "cupy_config")
    elif m.group(3) is not None and value.isdigit() and 2 <= len(value) <= 3:
        found.fact("compute_capability", f"{value[:-1]}.{value[-1]}", i, "cupy_config")


def _libraries(found: Found, i: int, line: str) -> None:
    ldconfig = _LDCONFIG.match(line)
    ldd = None if ldconfig else _LDD.match(line)
    m = ldconfig or ldd
    if m is None:
        return
    kind = "ldconfig" if ldconfig else "ldd"
    soname, target = m.group(1), m.group(2)
    found.block(kind, i, i)
    if target == "not found":
        found.fact("missing_library", soname, i, kind)
        return
    cudnn = _CUDNN.search(target) or _CUDNN.search(soname)
    if cudnn and soname.startswith("libcudnn.so"):
        found.fact("cudnn_system", cudnn.group(1), i, kind)


def _template_cuda(found: Found, i: int) -> None:
    """ONNX Runtime's issue template: '### Execution Provider Library Version' then 'CUDA 12.0'."""
    for j in range(i + 1, min(i + 4, len(found.lines))):
        m = re.match(r"^\s*CUDA\s+(\d+\.\d+)\b", found.lines[j])
        if m:
            found.block("platform", j, j)
            found.fact("cuda_libraries", m.group(1), j, "platform")
            return
        if found.lines[j].strip():
            return


def _prompt(found: Found, i: int) -> None:
    """'>>> torch.__version__' and the value printed on the next line."""
    m = _PROMPT.match(found.lines[i])
    if m is None or i + 1 >= len(found.lines):
        return
    what = m.group(1)
    value = found.lines[i + 1].strip().strip("'\"")
    if not value or value.startswith((">>>", "In [")):
        return
    key: Optional[str] = None
    parsed: object = None
    if what == "torch.__version__" and re.match(r"^\d+\.\d+(\.\d+)?[\w.+]*$", value):
        key, parsed = "torch_version", value
    elif what == "torch.version.cuda" and (value == "None" or re.match(r"^\d+\.\d+$", value)):
        key, parsed = "torch_cuda", None if value == "None" else value
    elif what == "torch.cuda.is_available()" and value in ("True", "False"):
        key, parsed = "torch_cuda_available", value == "True"
    elif what == "torch.cuda.get_arch_list()" and value.startswith("["):
        archs = re.findall(r"sm_\d+a?|compute_\d+", value)
        key, parsed = ("torch_arch_list", archs) if archs else (None, None)
    elif what == "tf.test.is_built_with_cuda()" and value in ("True", "False"):
        key, parsed = "tf_built_with_cuda", value == "True"
    elif what in ("tf.__version__", "tensorflow.__version__") and re.match(r"^\d+\.\d+\.\d+\S*$", value):
        key, parsed = "tensorflow_version", value
    elif what.startswith("torch.cuda.get_device_name"):
        found.block("platform", i, i + 1)
        found.gpu(value, i + 1, "platform")
    elif what.startswith("torch.cuda.get_device_capability"):
        cc = re.match(r"^\((\d+),\s*(\d+)\)$", value)
        key, parsed = ("compute_capability", f"{cc.group(1)}.{cc.group(2)}") if cc else (None, None)
    if key is not None:
        found.block("platform", i, i + 1)
        found.fact(key, parsed, i + 1, "platform")
