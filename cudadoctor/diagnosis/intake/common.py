"""What several readers share: a version in a value, an OS named in text, a package line."""

from __future__ import annotations

import re
from typing import Optional

from cudadoctor.diagnosis.intake.model import Found
from cudadoctor.model.parsers import normalize_name

# An NVIDIA driver version: 580.159.04, 535.104.05, 546.33
DRIVER_VERSION = r"\d{3}\.\d{1,3}(?:\.\d{1,3})?"
_VERSION = re.compile(r"(?<![\w.])(\d+(?:\.\d+)+)")
_PYTHON = re.compile(r"(?<![\w.])(3\.\d{1,2}(?:\.\d{1,3})?|2\.7(?:\.\d{1,3})?)(?![\d])")
_LOCAL_CUDA = re.compile(r"\+cu(\d{2,3})\b")
_CONDA_CUDA = re.compile(r"cuda(\d{1,2})\.?(\d)")
_CONDA_CUDNN = re.compile(r"cudnn(\d+(?:\.\d+){0,2})")
_TF = ("tensorflow", "tensorflow-gpu", "tensorflow-cpu", "tf-nightly", "tensorflow-intel", "tensorflow-macos")


def version_in(text: str) -> Optional[str]:
    """The first dotted version in ``text``: 'V12.4.131' is not one; '12.4.131' and '(64-bit) 3.10' are."""
    m = _VERSION.search(text)
    return m.group(1) if m else None


def python_version(text: str) -> Optional[str]:
    m = _PYTHON.search(text)
    return m.group(1) if m else None


def os_of_text(text: str) -> Optional[str]:
    """'Ubuntu 22.04.3 LTS (x86_64)' -> linux; 'Microsoft Windows 11 Pro' -> windows; 'macOS 14.4' -> macos."""
    low = text.lower()
    if any(w in low for w in ("macos", "mac os", "darwin", "mac osx", "macosx")):
        return "macos"
    if "windows" in low or low.startswith("win"):
        return "windows"
    if any(w in low for w in ("linux", "ubuntu", "debian", "centos", "red hat", "rhel", "fedora", "rocky",
                              "almalinux", "suse", "arch", "amazon linux", "gentoo", "mint", "pop!_os",
                              "manjaro", "oracle linux", "wsl")):
        return "linux"
    return None


def package_fact(found: Found, i: int, name: str, version: str, kind: str, build: Optional[str] = None) -> None:
    """A package line (pip, conda, uv): the package, and the framework facts its name and version
    (or conda build string) carry."""
    name = normalize_name(name.strip())
    version = version.strip()
    if not name or not re.match(r"^\d[\w.+!-]*$", version):
        return
    pip_name = "torch" if name == "pytorch" else name
    found.fact("pip_packages", f"{pip_name}=={version}", i, kind)
    local = _LOCAL_CUDA.search(version)
    if pip_name == "torch":
        found.fact("torch_version", version, i, kind)
        if local:
            digits = local.group(1)
            found.fact("torch_cuda", f"{digits[:-1]}.{digits[-1]}", i, kind)
        elif version.endswith("+cpu") or (build and build.startswith("cpu")):
            found.fact("torch_cuda", None, i, kind)
        elif build:
            cuda, cudnn = _CONDA_CUDA.search(build), _CONDA_CUDNN.search(build)
            if cuda:
                found.fact("torch_cuda", f"{cuda.group(1)}.{cuda.group(2)}", i, kind)
            if cudnn:
                found.fact("torch_cudnn", cudnn.group(1), i, kind)
    elif name == "cpuonly":
        found.fact("torch_cuda", None, i, kind)
    elif name in ("torchvision", "torchaudio"):
        found.fact(f"{name}_version", version, i, kind)
    elif name in _TF:
        found.fact("tensorflow_version", version, i, kind)
    elif name in ("jax", "jaxlib"):
        found.fact(f"{name}_version", version, i, kind)
    elif re.match(r"^jax-cuda\d+-(plugin|pjrt)$", name):
        found.fact("jax_cuda_plugin", f"{name}=={version}", i, kind)
    elif name.startswith("cupy"):
        found.fact("cupy_package", f"{name}=={version}", i, kind)
    elif name in ("onnxruntime", "onnxruntime-gpu"):
        found.fact("onnxruntime_package", f"{name}=={version}", i, kind)
