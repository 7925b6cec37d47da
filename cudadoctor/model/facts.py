"""The facts a user types into a bug report, mapped onto a partial Snapshot
(`cudadoctor diagnose --facts FILE`; vocabulary in docs/facts.md).

Every key is optional. A missing key stays unknown; ``null`` means known to be absent
(``"torch_cuda": null`` is a CPU build). Versions may be partial ("12", "3.10").
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from cudadoctor.model import (
    Compiler,
    DriverInfo,
    FrameworkBuild,
    Gpu,
    HostInfo,
    Library,
    LibraryCopy,
    Package,
    PythonEnv,
    Snapshot,
    Toolkit,
)
from cudadoctor.model.parsers import normalize_name, parse_cupy_distribution
from cudadoctor.model.serialize import SnapshotError

FACT_KEYS: Tuple[str, ...] = (
    "os", "wsl", "container", "device_nodes_present", "python", "gpu_name", "compute_capability",
    "gpu_count", "driver_version", "driver_cuda_version", "kernel_module_version", "driver_loaded",
    "nvml_error", "nouveau_loaded", "secure_boot", "nvcc_version", "cuda_home", "ld_library_path",
    "cudnn_system", "torch_version", "torch_cuda", "torch_cudnn", "torch_arch_list", "torch_cuda_available",
    "torchvision_version", "torchaudio_version", "tensorflow_version", "tensorflow_cuda",
    "tensorflow_cudnn", "jax_version", "jaxlib_version", "jax_cuda_plugin", "cupy_package",
    "onnxruntime_package", "gcc_version", "cuda_visible_devices", "env", "pip_packages",
    "error_message",
)
_OS = ("linux", "windows", "macos")


class FactsError(SnapshotError):
    """A facts document that cannot be used; the message names the key."""


def _str(facts: Mapping[str, Any], key: str) -> Optional[str]:
    value = facts.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise FactsError(f"{key}: expected a string, got {type(value).__name__}")
    return str(value).strip()


def _bool(facts: Mapping[str, Any], key: str) -> Optional[bool]:
    value = facts.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise FactsError(f"{key}: expected true, false or null")


def _int(facts: Mapping[str, Any], key: str) -> Optional[int]:
    value = facts.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FactsError(f"{key}: expected a whole number")
    return value


def snapshot_from_facts(facts: Any) -> Snapshot:
    """A partial Snapshot from the flat facts vocabulary. Unknown keys, and values that cannot be
    (a driver 'banana', a compute capability 99.9), are an error naming the key."""
    if not isinstance(facts, Mapping):
        raise FactsError("facts must be a JSON object")
    unknown = [k for k in facts if k not in FACT_KEYS]
    if unknown:
        raise FactsError(f"{unknown[0]}: unknown fact (known: see docs/facts.md)")
    _check_values(facts)
    sections: Dict[str, Any] = {}
    for key, build in _SECTIONS:
        value = build(facts)
        if value is not None:
            sections[key] = value
    env = _env(facts)
    if env is not None:
        sections["env"] = env
    if "gpus" in sections:
        sections["gpus_source"] = "facts"
    return Snapshot(error_message=_str(facts, "error_message"), **sections)


# The shapes a fact's value can have; anything else cannot be a real value of it.
_SHAPES = {
    "driver_version": (re.compile(r"^\d{2,4}(\.\d{1,3}){0,3}$"), "a driver version such as 570.86.15"),
    "kernel_module_version": (re.compile(r"^\d{2,4}(\.\d{1,3}){1,3}$"), "a driver version such as 570.86.15"),
    "driver_cuda_version": (re.compile(r"^\d{1,2}\.\d{1,2}$"), "a CUDA version such as 12.8"),
    "python": (re.compile(r"^[23]\.\d{1,2}(\.\d{1,3})?t?$"), "a Python version such as 3.11"),
}


_CC = re.compile(r"^(?:sm_|compute_)?(\d{1,2})\.?(\d)[af]?$")  # 8.9, 9.0a, sm_90, 120


def _check_values(facts: Mapping[str, Any]) -> None:
    for key, (shape, example) in _SHAPES.items():
        value = facts.get(key)
        if isinstance(value, str) and not shape.match(value.strip()):
            raise FactsError(f"{key}: {value[:40]!r} is not {example}")
    cc = facts.get("compute_capability")
    if isinstance(cc, str):
        m = _CC.match(cc.strip().lower())
        if m is None or not 1 <= int(m.group(1)) <= 15:
            raise FactsError(f"compute_capability: {cc[:40]!r} is not a compute capability such as 8.9 or sm_90")


def _host(facts: Mapping[str, Any]) -> Optional[HostInfo]:
    os = _str(facts, "os")
    if os is not None and os.lower() not in _OS:
        raise FactsError(f"os: {os!r} is not one of {', '.join(_OS)}")
    container = facts.get("container")
    if container is not None and not isinstance(container, (str, bool)):
        raise FactsError("container: expected a runtime name (docker, podman, kubernetes, ...), true, false or null")
    keys = ("os", "wsl", "container", "secure_boot")
    if not any(k in facts for k in keys):
        return None
    return HostInfo(
        os=os.lower() if os else None,
        wsl=_bool(facts, "wsl"),
        container=("docker" if container is True else "none" if container is False else container)
        if "container" in facts else None,
        secure_boot=_bool(facts, "secure_boot"),
    )


def _python(facts: Mapping[str, Any]) -> Optional[PythonEnv]:
    version = _str(facts, "python")
    return PythonEnv(version=version) if version else None


def _driver(facts: Mapping[str, Any]) -> Optional[DriverInfo]:
    keys = ("driver_version", "driver_cuda_version", "kernel_module_version", "driver_loaded", "nvml_error",
            "nouveau_loaded", "device_nodes_present")
    if not any(k in facts for k in keys):
        return None
    nodes: Optional[Tuple[str, ...]] = None
    present = _bool(facts, "device_nodes_present")
    if present is True:
        nodes = ("/dev/nvidia0", "/dev/nvidiactl")
    elif present is False:
        nodes = ()
    loaded = _bool(facts, "driver_loaded")
    driver = _str(facts, "driver_version")
    if loaded is None and driver:
        loaded = True
    if loaded is None and "driver_version" in facts and facts["driver_version"] is None:
        loaded = False
    return DriverInfo(
        loaded=loaded,
        driver_version=driver,
        cuda_driver_version=_str(facts, "driver_cuda_version"),
        nvml_error=_str(facts, "nvml_error"),
        kernel_module_version=_str(facts, "kernel_module_version"),
        nouveau_loaded=_bool(facts, "nouveau_loaded"),
        device_nodes=nodes,
        source="facts" if driver else None,
    )


def _gpus(facts: Mapping[str, Any]) -> Optional[Tuple[Gpu, ...]]:
    name, cc, count = _str(facts, "gpu_name"), _str(facts, "compute_capability"), _int(facts, "gpu_count")
    if name is None and cc is None and count is None:
        return () if "gpu_count" in facts and facts["gpu_count"] == 0 else None
    total = count if count is not None else 1
    return tuple(Gpu(index=i, name=name, compute_capability=cc, source="facts") for i in range(total))


def _toolkits(facts: Mapping[str, Any]) -> Optional[Tuple[Toolkit, ...]]:
    nvcc, home = _str(facts, "nvcc_version"), _str(facts, "cuda_home")
    if "nvcc_version" in facts and nvcc is None and home is None:
        return ()
    if nvcc is None and home is None:
        return None
    return (Toolkit(root=home or "(nvcc on PATH)", version=nvcc, version_source="facts", active=True,
                    nvcc="nvcc" if nvcc else None, found_via=("CUDA_HOME",) if home else ("PATH",)),)


def _libraries(facts: Mapping[str, Any]) -> Optional[Tuple[Library, ...]]:
    cudnn = _str(facts, "cudnn_system")
    if cudnn is None:
        return None
    major = cudnn.split(".")[0]
    return (Library("libcudnn", (LibraryCopy(path=f"libcudnn.so.{major}", version=cudnn, found_via="ldconfig"),)),)


def _frameworks(facts: Mapping[str, Any]) -> Optional[Tuple[FrameworkBuild, ...]]:
    builds: List[FrameworkBuild] = []
    torch = _str(facts, "torch_version")
    if torch:
        details = {}
        arch = facts.get("torch_arch_list")
        if arch is not None:
            if not isinstance(arch, (list, str)):
                raise FactsError("torch_arch_list: expected a list such as ['sm_80', 'sm_90'] or a string")
            details["arch_list"] = " ".join(arch) if isinstance(arch, list) else str(arch)
        available = _bool(facts, "torch_cuda_available")
        if available is not None:
            details["cuda_available"] = "true" if available else "false"
        builds.append(_build(facts, "torch", torch, "torch_cuda", details, cudnn=_str(facts, "torch_cudnn")))
    for name in ("torchvision", "torchaudio"):
        version = _str(facts, f"{name}_version")
        if version:
            builds.append(FrameworkBuild(name=name, version=version))
    tf = _str(facts, "tensorflow_version")
    if tf:
        builds.append(_build(facts, "tensorflow", tf, "tensorflow_cuda", {}, cudnn=_str(facts, "tensorflow_cudnn")))
    jax = _str(facts, "jax_version") or _str(facts, "jaxlib_version")
    if jax:
        plugin = _str(facts, "jax_cuda_plugin")
        details = {"jaxlib": v for v in [_str(facts, "jaxlib_version")] if v}
        cuda = None
        if plugin:
            details["plugin"] = plugin
            digits = "".join(ch for ch in plugin.split("-cuda")[-1][:3] if ch.isdigit()) if "-cuda" in plugin else ""
            cuda = digits or None
        variant = "cuda" if plugin else ("cpu" if "jax_cuda_plugin" in facts else None)
        builds.append(FrameworkBuild(name="jax", version=_str(facts, "jax_version"), variant=variant, cuda=cuda, details=details))
    cupy = _str(facts, "cupy_package")
    if cupy:
        name, version = _name_version(cupy)
        variant, cuda = parse_cupy_distribution(name)
        builds.append(FrameworkBuild(name="cupy", distribution=cupy, version=version, variant=variant, cuda=cuda))
    ort = _str(facts, "onnxruntime_package")
    if ort:
        name, version = _name_version(ort)
        builds.append(FrameworkBuild(name="onnxruntime", distribution=ort, version=version,
                                     variant="cuda" if name == "onnxruntime-gpu" else "cpu"))
    if not builds:
        return None
    return tuple(builds)


def _name_version(text: str) -> Tuple[str, Optional[str]]:
    """'cupy-cuda12x==13.3.0' -> ('cupy-cuda12x', '13.3.0'); a bare name has no version."""
    name, _, version = text.partition("==")
    return normalize_name(name.strip()), (version.strip() or None)


def _build(facts: Mapping[str, Any], name: str, version: str, cuda_key: str, details: Dict[str, str],
           cudnn: Optional[str]) -> FrameworkBuild:
    if cuda_key in facts:
        cuda = _str(facts, cuda_key)
        variant: Optional[str] = "cuda" if cuda else "cpu"
    else:
        cuda, variant = None, ("cpu" if version.endswith("+cpu") else None)
    return FrameworkBuild(name=name, version=version, variant=variant, cuda=cuda, cudnn=cudnn, details=details)


def _compilers(facts: Mapping[str, Any]) -> Optional[Tuple[Compiler, ...]]:
    gcc = _str(facts, "gcc_version")
    return (Compiler(name="gcc", version=gcc),) if gcc else None


_DIST_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")


def _packages(facts: Mapping[str, Any]) -> Optional[Tuple[Package, ...]]:
    """'name==version', or a bare 'name' as people write a package list by hand (version unknown)."""
    items = facts.get("pip_packages")
    if items is None:
        return None
    if not isinstance(items, list):
        raise FactsError("pip_packages: expected a list of 'name==version' or 'name'")
    out = []
    for i, item in enumerate(items):
        name, _, version = item.partition("==") if isinstance(item, str) else ("", "", "")
        if not _DIST_NAME.match(name.strip()) or (_ and not version.strip()):
            raise FactsError(f"pip_packages[{i}]: expected 'name==version' or 'name', got {item!r}")
        out.append(Package(normalize_name(name.strip()), version.strip() or None))
    return tuple(out)


def _env(facts: Mapping[str, Any]) -> Optional[Dict[str, str]]:
    env = facts.get("env")
    if env is not None and not isinstance(env, Mapping):
        raise FactsError("env: expected an object of variable names to values")
    out = {str(k): str(v) for k, v in (env or {}).items()}
    for key, var in (("cuda_visible_devices", "CUDA_VISIBLE_DEVICES"), ("ld_library_path", "LD_LIBRARY_PATH"),
                     ("cuda_home", "CUDA_HOME")):
        value = _str(facts, key)
        if value is not None:
            out[var] = value
    return out if (out or env is not None) else None


_SECTIONS: Tuple[Tuple[str, Callable[[Mapping[str, Any]], Any]], ...] = (
    ("host", _host), ("python", _python), ("driver", _driver), ("gpus", _gpus), ("toolkits", _toolkits),
    ("libraries", _libraries), ("frameworks", _frameworks), ("compilers", _compilers), ("packages", _packages),
)


# Sections of a Snapshot that the checks judge; a package list or a Python version alone is not enough.
JUDGED = ("driver", "gpus", "frameworks", "toolkits", "libraries", "compilers", "error_message")


def usable(snapshot: Snapshot) -> bool:
    """Whether ``snapshot`` holds a fact that a check can judge (a driver, a GPU, a framework
    build, a toolkit, a library, a compiler, an error message, or a GPU-related variable)."""
    if any(getattr(snapshot, name) is not None for name in JUDGED):
        return True
    env = snapshot.env or {}
    return any(k in env for k in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "LD_LIBRARY_PATH"))
