"""Parsers of outside text: command outputs, version files, headers, /proc files.

Every function here is pure and total: given any string it returns a value or ``None`` (or an
empty collection) and never raises. Hypothesis fuzzes each one (tests/test_model_parsers_fuzz.py).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

if TYPE_CHECKING:
    import ast

_VERSION = r"\d+(?:\.\d+)+"


def parse_os_release(text: str) -> Dict[str, str]:
    """``/etc/os-release``: KEY=value lines, values optionally quoted."""
    out: Dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[key.strip()] = value
    return out


def parse_nvcc_version(text: str) -> Optional[str]:
    """``nvcc --version``: 'Cuda compilation tools, release 13.0, V13.0.88' -> '13.0.88'.

    Falls back to the release ('12.4') when there is no V-number."""
    m = re.search(r"release\s+(\d+\.\d+)\s*,\s*V(" + _VERSION + ")", text)
    if m:
        return m.group(2)
    m = re.search(r"release\s+(\d+\.\d+)", text)
    return m.group(1) if m else None


def parse_cuda_version_json(text: str) -> Optional[str]:
    """A toolkit's ``version.json``: ``{"cuda": {"version": "12.4.1"}}``.

    CUDA 11.x writes a build date there ('11.8.20220929'); then the release is major.minor,
    refined by the nvcc component's version ('11.8.89') when it belongs to the same release."""
    data = _json_object(text)
    if data is None:
        return None
    version = _component_version(data, "cuda")
    if version is None:
        return None
    parts = version.split(".")
    if len(parts) >= 3 and len(parts[2]) == 8:  # a date, not an update number
        release = ".".join(parts[:2])
        nvcc = _component_version(data, "cuda_nvcc")
        if nvcc and nvcc.split(".")[:2] == parts[:2]:
            return nvcc
        return release
    return version


def _json_object(text: str) -> Optional[Dict[str, Any]]:
    """A JSON object, or None for anything else (invalid, too deep, an integer too long)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _component_version(data: Dict[str, Any], name: str) -> Optional[str]:
    component = data.get(name)
    if isinstance(component, dict):
        version = component.get("version")
        if isinstance(version, str) and re.fullmatch(_VERSION, version.strip()):
            return version.strip()
    return None


def parse_cuda_version_txt(text: str) -> Optional[str]:
    """A toolkit's ``version.txt`` (CUDA ≤ 11.0): 'CUDA Version 10.2.89'."""
    m = re.search(r"CUDA Version\s+(" + _VERSION + ")", text)
    return m.group(1) if m else None


def parse_cudnn_header(text: str) -> Optional[str]:
    """``cudnn_version.h`` (cuDNN ≥ 8) or ``cudnn.h`` (older): the three #defines."""
    parts: List[str] = []
    for name in ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"):
        # At most 9 digits: int() refuses strings over 4300 digits, and no real version is long.
        m = re.search(r"#\s*define\s+" + name + r"\s+([0-9]{1,9})\b", text)
        if not m:
            return None if name != "CUDNN_PATCHLEVEL" else ".".join(parts)
        parts.append(str(int(m.group(1))))
    return ".".join(parts)


def parse_proc_driver_version(text: str) -> Tuple[Optional[str], Optional[str]]:
    """``/proc/driver/nvidia/version`` -> (kernel module version, flavour).

    'NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 ...'
    'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build ...'
    """
    for line in text.splitlines():
        if not line.startswith("NVRM version:"):
            continue
        m = re.search(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)\b", line)
        if m:
            flavor = "open" if "Open Kernel Module" in line else "proprietary"
            return m.group(1), flavor
    return None, None


def parse_nvidia_smi_csv(text: str, fields: Sequence[str]) -> List[Dict[str, Optional[str]]]:
    """``nvidia-smi --query-gpu=F1,F2 --format=csv,noheader,nounits``: one dict per GPU.

    '[N/A]', '[Not Supported]' and similar become None. Lines with the wrong number of
    columns are skipped (nvidia-smi prints warnings on stdout on some drivers)."""
    rows: List[Dict[str, Optional[str]]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cols = [c.strip() for c in line.split(",")]
        if len(cols) != len(fields):
            continue
        rows.append({f: (None if _smi_missing(c) else c) for f, c in zip(fields, cols)})
    return rows


def _smi_missing(value: str) -> bool:
    return not value or (value.startswith("[") and value.endswith("]")) or value in ("N/A", "Unknown")


def parse_smi_cuda_version(text: str) -> Optional[str]:
    """The newest CUDA the driver supports, from plain ``nvidia-smi``'s header: 'CUDA Version:
    12.8', or 'CUDA UMD Version: 13.3' as some R610 drivers print it (beside 'KMD Version')."""
    m = re.search(r"CUDA (?:UMD )?Version:\s*(\d+\.\d+)", text)
    return m.group(1) if m else None


def parse_ldconfig(text: str, abi: Optional[str] = None) -> List[Tuple[str, str]]:
    """``ldconfig -p``: [(soname, path)] in cache order.

    '	libcudart.so.12 (libc6,x86-64) => /usr/local/cuda/lib64/libcudart.so.12'

    ``abi`` is the host's tag in the parentheses ('x86-64', 'AArch64', '64bit'); when given,
    entries of other ABIs are left out: a multilib machine also lists the 32-bit
    '/usr/lib/i386-linux-gnu/libcuda.so.1 (libc6)', which a 64-bit process never loads."""
    out: List[Tuple[str, str]] = []
    for line in text.splitlines():
        m = re.match(r"\s+(\S+)\s+\(([^)]*)\)(?:\s*,\s*OS ABI: [^=]*)?\s*=>\s*(\S.*)$", line)
        if m and (abi is None or abi in (f.strip() for f in m.group(2).split(","))):
            out.append((m.group(1), m.group(3).strip()))
    return out


def version_from_soname(filename: str, stem: str) -> Optional[str]:
    """'libcudnn.so.9.1.0' with stem 'libcudnn' -> '9.1.0'; 'libcudart.so.12' -> '12'.

    Also the Windows form 'cudart64_12.dll' -> '12'."""
    m = re.fullmatch(re.escape(stem) + r"\.so\.(\d+(?:\.\d+)*)", filename)
    if m:
        return m.group(1)
    m = re.fullmatch(re.escape(stem.replace("lib", "", 1)) + r"64_(\d+)\.dll", filename, re.I)
    return m.group(1) if m else None


def parse_compiler_version(text: str) -> Optional[str]:
    """First version on the first line of ``gcc --version`` / ``clang --version``.

    'gcc (Debian 12.2.0-14+deb12u1) 12.2.0' -> '12.2.0'; 'Debian clang version 14.0.6' ->
    '14.0.6'; 'Apple clang version 15.0.0 (clang-1500.1.0.2.5)' -> '15.0.0'."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    m = re.search(r"version\s+(" + _VERSION + ")", first)
    if m:
        return m.group(1)
    found = re.findall(r"(?<![\w.+-])(\d+\.\d+(?:\.\d+)?)(?![\w.])", first)
    return found[-1] if found else None


def parse_meminfo_total_mib(text: str) -> Optional[int]:
    m = re.search(r"^MemTotal:\s+([0-9]{1,19})\s*kB", text, re.M)  # bounded: int() limits digits
    return int(m.group(1)) // 1024 if m else None


def parse_cpu_model(text: str) -> Optional[str]:
    """``/proc/cpuinfo``: 'model name' on x86, 'Model'/'CPU part' lines elsewhere."""
    for key in ("model name", "Model", "Hardware", "cpu model"):
        m = re.search(r"^" + re.escape(key) + r"\s*:\s*(.+)$", text, re.M)
        if m and m.group(1).strip():
            return " ".join(m.group(1).split())
    return None


def parse_python_assignments(text: str) -> Dict[str, Any]:
    """Top-level ``NAME = literal`` (and annotated) assignments of a Python file, e.g.
    ``torch/version.py``. Nothing is executed; non-literal values are skipped."""
    import ast  # here: a run without such a file does not pay for it

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    out: Dict[str, Any] = {}
    for node in tree.body:
        targets: List[ast.expr] = []
        value: Optional[ast.expr] = None
        if isinstance(node, ast.Assign):
            targets, value = list(node.targets), node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for target in targets:
            if isinstance(target, ast.Name) and value is not None:
                try:
                    out[target.id] = _literal(value)
                except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                    pass
    return out


def _literal(node: ast.expr) -> Any:
    """A literal, or ``OrderedDict(literal)`` / ``dict(literal)``: TensorFlow's generated
    build_info.py (tensorflow/tools/build_info/gen_build_info.py) writes
    ``build_info = collections.OrderedDict([('cuda_version', '12.3'), ...])``."""
    import ast

    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in ("OrderedDict", "dict"):
            return dict(ast.literal_eval(node.args[0]))
    return ast.literal_eval(node)


def parse_tf_build_info(text: str) -> Dict[str, Any]:
    """TensorFlow's ``python/platform/build_info.py``: ``build_info = {...}`` (TF 2.3, 2.4),
    ``build_info = collections.OrderedDict([...])`` (later) or module-level
    ``cuda_version_number = '11.2'`` (older)."""
    names = parse_python_assignments(text)
    info = names.get("build_info")
    if isinstance(info, dict):
        return {str(k): v for k, v in info.items()}
    return {k: v for k, v in names.items() if not k.startswith("_")}


def parse_dist_info_dirname(dirname: str) -> Optional[Tuple[str, str]]:
    """'torch-2.13.0+cpu.dist-info' -> ('torch', '2.13.0+cpu'); also '.egg-info'."""
    for suffix in (".dist-info", ".egg-info"):
        if dirname.endswith(suffix):
            stem = dirname[: -len(suffix)]
            name, sep, version = stem.partition("-")
            if sep and name and version and "-" not in version:
                return normalize_name(name), version
            if sep and name and version.split("-")[0]:  # egg-info may carry '-py3.11'
                return normalize_name(name), version.split("-")[0]
    return None


def normalize_name(name: str) -> str:
    """PEP 503 normalised distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_metadata_headers(text: str) -> Dict[str, List[str]]:
    """Headers of a dist-info METADATA file (up to the first blank line)."""
    out: Dict[str, List[str]] = {}
    for line in text.splitlines():
        if not line.strip():
            break
        if line[:1] in " \t" or ":" not in line:
            continue
        key, _, value = line.partition(":")
        out.setdefault(key.strip(), []).append(value.strip())
    return out


def parse_conda_meta(text: str) -> Optional[Dict[str, str]]:
    """A ``conda-meta/<pkg>.json`` file -> name, version, build, channel."""
    data = _json_object(text)
    if data is None:
        return None
    name, version = data.get("name"), data.get("version")
    if not isinstance(name, str) or not isinstance(version, str) or not name or not version:
        return None
    out = {"name": name, "version": version}
    for key in ("build", "channel"):
        value = data.get(key)
        if isinstance(value, str) and value:
            out[key] = value
    if "channel" in out:  # 'https://conda.anaconda.org/conda-forge/linux-64' -> 'conda-forge'
        # a token path part ('/t/<token>/conda-forge/...') is no channel name, and a secret
        m = re.search(r"conda\.anaconda\.org/(?:t/[^/]+/)?([^/]+)", out["channel"])
        if m:
            out["channel"] = m.group(1)
    return out


def parse_julia_manifest(text: str) -> Dict[str, str]:
    """Package versions from a Julia ``Manifest.toml`` (format 1 and 2).

    Format 2: '[[deps.CUDA]]' then 'version = "5.4.2"'. Format 1: '[[CUDA]]'."""
    out: Dict[str, str] = {}
    current: Optional[str] = None
    for line in text.splitlines():
        stripped = line.strip()
        m = re.fullmatch(r"\[\[(?:deps\.)?([A-Za-z0-9_]+)\]\]", stripped)
        if m:
            current = m.group(1)
            continue
        if stripped.startswith("["):
            current = None
            continue
        m = re.fullmatch(r'version\s*=\s*"([^"]+)"', stripped)
        if m and current and current not in out:
            out[current] = m.group(1)
    return out


def parse_julia_version(text: str) -> Optional[str]:
    m = re.search(r"julia version\s+(\d+\.\d+\.\d+\S*)", text)
    return m.group(1) if m else None


_CUPY = re.compile(r"^cupy-(?:cuda(\d+)(x?)|(rocm)[-\d]*)$")


def parse_cupy_distribution(name: str) -> Tuple[Optional[str], Optional[str]]:
    """(variant, cuda) from a CuPy distribution name: 'cupy-cuda12x' -> ('cuda', '12') serves
    any 12.x; the older 'cupy-cuda117' -> ('cuda', '11.7') exactly; 'cupy-rocm-5-0' -> ('rocm',
    None); 'cupy' (a source build) -> (None, None)."""
    m = _CUPY.match(normalize_name(name))
    if not m:
        return None, None
    if m.group(3):
        return "rocm", None
    digits, wildcard = m.group(1), m.group(2)
    if wildcard or len(digits) < 2:
        return "cuda", digits
    return "cuda", f"{digits[:-1]}.{digits[-1]}"


def cuda_version_from_int(value: Any) -> Optional[str]:
    """NVML/driver CUDA version integer 12080 -> '12.8'."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def detect_container_from_cgroup(text: str) -> Optional[str]:
    """Container runtime named in ``/proc/1/cgroup`` (cgroup v1 paths; v2 shows '0::/')."""
    lowered = text.lower()
    for needle, name in (
        ("kubepods", "kubernetes"),
        ("docker", "docker"),
        ("libpod", "podman"),
        ("containerd", "containerd"),
        ("lxc", "lxc"),
    ):
        if needle in lowered:
            return name
    return None


def parse_secure_boot_efivar(data: bytes) -> Optional[bool]:
    """``/sys/firmware/efi/efivars/SecureBoot-<guid>``: 4 attribute bytes then one value byte."""
    if len(data) < 5:
        return None
    return data[4] == 1
