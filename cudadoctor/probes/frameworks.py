"""Framework builds read from their files, never imported: importing torch or TensorFlow takes
seconds, can initialise CUDA, and can crash in exactly the broken environments we inspect."""

from __future__ import annotations

import posixpath
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

from cudadoctor.host import try_read_text
from cudadoctor.model import ErrorKind, FrameworkBuild, ProbeError
from cudadoctor.model.parsers import (
    parse_julia_manifest,
    parse_julia_version,
    parse_cupy_distribution,
    parse_metadata_headers,
    parse_python_assignments,
    parse_tf_build_info,
)
from cudadoctor.probes import addons
from cudadoctor.probes.context import ProbeOutput, command_kind
from cudadoctor.probes.context import Context, Distribution

JULIA_PACKAGES = ("CUDA", "cuDNN", "Zygote", "CUDA_Runtime_jll", "CUDA_Driver_jll", "Flux", "Lux")


def probe_frameworks(ctx: Context) -> ProbeOutput:
    """torch/torchvision/torchaudio (``version.py``), TensorFlow (``build_info.py``), JAX and
    its CUDA plugin, CuPy, numba, ONNX Runtime (``build_and_package_info.py``), TensorRT (by
    distribution name), and Julia (``julia --version`` and the active Manifest.toml)."""
    builds: List[FrameworkBuild] = []
    errors: List[ProbeError] = []
    facts, _ = ctx.interpreter()
    if facts is not None:
        for reader in READERS:
            build = reader(ctx)
            if build is not None:
                builds.append(build)
    julia = _julia(ctx, errors)
    if julia is not None:
        builds.append(julia)
    if facts is None and julia is None:
        return ProbeOutput({}, errors)
    return ProbeOutput({"frameworks": tuple(builds)}, errors)


def _module_file(dist: Distribution, *parts: str) -> str:
    return posixpath.join(dist.site, *parts)


def _read_py(ctx: Context, path: str) -> Dict[str, Any]:
    return parse_python_assignments(try_read_text(ctx.host, path, 256 * 1024) or "")


def _requires(ctx: Context, dist: Distribution) -> List[str]:
    text = try_read_text(ctx.host, posixpath.join(dist.dist_info, "METADATA"), 512 * 1024) or ""
    return parse_metadata_headers(text).get("Requires-Dist", [])


def _variant_of_torch(values: Dict[str, Any]) -> Optional[str]:
    if values.get("cuda"):
        return "cuda"
    if values.get("hip") or values.get("rocm"):
        return "rocm"
    if values.get("xpu"):
        return "xpu"
    if "cuda" in values:
        return "cpu"
    return None


def _torch(ctx: Context) -> Optional[FrameworkBuild]:
    dist = ctx.distribution("torch")
    if dist is None:
        return None
    values = _read_py(ctx, _module_file(dist, "torch", "version.py"))
    version = str(values.get("__version__") or dist.version)
    cuda = values.get("cuda")
    details = {}
    if values.get("hip"):
        details["hip"] = str(values["hip"])
    cudnn = nccl = None
    cudnn_dist = ctx.distribution("nvidia-cudnn-cu13", "nvidia-cudnn-cu12", "nvidia-cudnn-cu11")
    nccl_dist = ctx.distribution("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11")
    requires = " ".join(_requires(ctx, dist)) if cuda else ""
    if cudnn_dist and cudnn_dist.name in requires:
        cudnn = cudnn_dist.version
        details["cudnn_from"] = f"{cudnn_dist.name}=={cudnn_dist.version}"
    if nccl_dist and nccl_dist.name in requires:
        nccl = nccl_dist.version
    if cuda and cudnn is None:  # older wheels and conda builds bundle cuDNN in torch/lib
        bundled = [e for e in ctx.list_dir(_module_file(dist, "torch", "lib")) if e.startswith("libcudnn.so.")]
        if bundled:
            cudnn = bundled[0][len("libcudnn.so."):]
            details["cudnn_from"] = "torch/lib"
    conda = _conda_build(ctx, "pytorch")
    if conda:
        details["conda_build"] = conda
        # the pytorch channel's builds name cuDNN ('py3.11_cuda12.1_cudnn8.9.2_0'); conda-forge's
        # do not, and take cudnn and nccl from the environment's own packages
        m = re.search(r"cudnn(\d+(?:\.\d+)*)", conda)
        if m and cudnn is None:
            cudnn = m.group(1)
        cudnn = cudnn or _conda_version(ctx, "cudnn")
        nccl = nccl or _conda_version(ctx, "nccl")
    return FrameworkBuild(
        name="torch",
        version=version,
        variant=_variant_of_torch(values),
        cuda=str(cuda) if cuda else None,
        cudnn=cudnn,
        nccl=nccl,
        git_version=str(values["git_version"]) if values.get("git_version") else None,
        distribution=f"{dist.name}=={dist.version}",
        location=posixpath.join(dist.site, "torch"),
        details=details,
    )


def _conda_build(ctx: Context, name: str) -> Optional[str]:
    prefix = ctx.conda_prefix()
    if not prefix:
        return None
    for entry in ctx.list_dir(posixpath.join(prefix, "conda-meta")):
        if entry.startswith(name + "-") and entry[len(name) + 1 : len(name) + 2].isdigit():
            return entry[: -len(".json")] if entry.endswith(".json") else entry
    return None


def _conda_version(ctx: Context, name: str) -> Optional[str]:
    """Version of conda package ``name`` in the target env, from its conda-meta file name."""
    prefix = ctx.conda_prefix()
    if not prefix:
        return None
    for entry in ctx.list_dir(posixpath.join(prefix, "conda-meta")):
        m = re.fullmatch(re.escape(name) + r"-(\d[^-]*)-[^-]+\.json", entry)
        if m:
            return m.group(1)
    return None


_LOCAL_TAG = re.compile(r"\+(cu(?P<cuda>\d+)|(?P<cpu>cpu)|rocm(?P<rocm>[\d.]+))$")


def variant_from_local_tag(version: str) -> Tuple[Optional[str], Optional[str]]:
    """'0.21.0+cu126' -> ('cuda', '12.6'); '+cpu' -> ('cpu', None); '+rocm6.2' -> ('rocm', None).
    PyTorch's wheel indexes tag every build this way (the PyPI default wheels carry no tag)."""
    m = _LOCAL_TAG.search(version)
    if not m:
        return None, None
    if m.group("cuda"):
        digits = m.group("cuda")
        return "cuda", f"{digits[:-1]}.{digits[-1]}" if len(digits) >= 3 else digits
    return ("cpu", None) if m.group("cpu") else ("rocm", None)


def _companion(module: str) -> Callable[[Context], Optional[FrameworkBuild]]:
    def read(ctx: Context) -> Optional[FrameworkBuild]:
        dist = ctx.distribution(module)
        if dist is None:
            return None
        values = _read_py(ctx, _module_file(dist, module, "version.py"))
        cuda = values.get("cuda")
        version = str(values.get("__version__") or dist.version)
        # torchvision sets `cuda` only inside an `if` (not a literal we can read) and torchaudio
        # not at all, so the local version tag is the usual evidence
        variant, tag_cuda = variant_from_local_tag(version)
        if cuda:
            variant = "cuda"
        cuda = cuda or tag_cuda
        return FrameworkBuild(
            name=module,
            version=version,
            variant=variant,
            cuda=str(cuda) if cuda else None,
            git_version=str(values["git_version"]) if values.get("git_version") else None,
            distribution=f"{dist.name}=={dist.version}",
            location=posixpath.join(dist.site, module),
        )

    return read


def _tensorflow(ctx: Context) -> Optional[FrameworkBuild]:
    dist = ctx.distribution("tensorflow", "tensorflow-gpu", "tensorflow-cpu", "tf-nightly", "tensorflow-intel")
    if dist is None:
        return None
    info = parse_tf_build_info(
        try_read_text(ctx.host, _module_file(dist, "tensorflow", "python", "platform", "build_info.py")) or ""
    )
    is_cuda = info.get("is_cuda_build")
    cuda = info.get("cuda_version") or info.get("cuda_version_number")
    cudnn = info.get("cudnn_version") or info.get("cudnn_version_number")
    if is_cuda is True or (is_cuda is None and cuda):
        variant: Optional[str] = "cuda"
    elif info.get("is_rocm_build"):
        variant = "rocm"
    elif is_cuda is False:
        variant = "cpu"
    else:
        variant = None
    details = {}
    if isinstance(info.get("cuda_compute_capabilities"), list):
        details["cuda_compute_capabilities"] = ",".join(str(c) for c in info["cuda_compute_capabilities"])
    return FrameworkBuild(
        name="tensorflow",
        version=dist.version,
        variant=variant,
        cuda=str(cuda) if cuda else None,
        cudnn=str(cudnn) if cudnn else None,
        distribution=f"{dist.name}=={dist.version}",
        location=posixpath.join(dist.site, "tensorflow"),
        details=details,
    )


def _jax(ctx: Context) -> Optional[FrameworkBuild]:
    jax = ctx.distribution("jax")
    jaxlib = ctx.distribution("jaxlib")
    if jax is None and jaxlib is None:
        return None
    details: Dict[str, str] = {}
    if jaxlib:
        details["jaxlib"] = jaxlib.version
    variant: Optional[str] = "cpu"
    cuda = None
    for major in ("13", "12", "11"):
        plugin = ctx.distribution(f"jax-cuda{major}-plugin")
        pjrt = ctx.distribution(f"jax-cuda{major}-pjrt")
        if plugin or pjrt:
            variant, cuda = "cuda", major
            if plugin:
                details["plugin"] = f"{plugin.name}=={plugin.version}"
            if pjrt:
                details["pjrt"] = f"{pjrt.name}=={pjrt.version}"
            break
    if cuda is None and jaxlib:  # jaxlib <= 0.4.25 carried '+cuda12.cudnn89' local versions
        m = re.search(r"\+cuda(\d+)(?:\.cudnn(\d+))?", jaxlib.version)
        if m:
            variant, cuda = "cuda", m.group(1)
            if m.group(2):
                details["cudnn_tag"] = m.group(2)
    rocm = ctx.distribution("jax-rocm60-plugin", "jax-rocm7-plugin")
    if rocm and cuda is None:
        variant = "rocm"
    return FrameworkBuild(
        name="jax",
        version=jax.version if jax else None,
        variant=variant if jaxlib else None,
        cuda=cuda,
        distribution=f"jax=={jax.version}" if jax else None,
        location=jax.site if jax else (jaxlib.site if jaxlib else None),
        details=details,
    )


def _cupy(ctx: Context) -> Optional[FrameworkBuild]:
    dists = [d for d in ctx.distributions() if d.name == "cupy" or d.name.startswith("cupy-")]
    if not dists:
        return None
    dist = dists[0]
    details = {}
    if len(dists) > 1:
        details["also_installed"] = ", ".join(f"{d.name}=={d.version}" for d in dists[1:])
    variant, cuda = parse_cupy_distribution(dist.name)
    return FrameworkBuild(
        name="cupy", version=dist.version, variant=variant, cuda=cuda,
        distribution=f"{dist.name}=={dist.version}", location=dist.site, details=details,
    )


def _onnxruntime(ctx: Context) -> Optional[FrameworkBuild]:
    dist = ctx.distribution("onnxruntime-gpu", "onnxruntime", "onnxruntime-training")
    if dist is None:
        return None
    info = _read_py(ctx, _module_file(dist, "onnxruntime", "capi", "build_and_package_info.py"))
    cuda = info.get("cuda_version")
    variant = "cuda" if dist.name == "onnxruntime-gpu" or cuda else "cpu"
    return FrameworkBuild(
        name="onnxruntime", version=dist.version, variant=variant,
        cuda=str(cuda) if cuda else None,
        cudnn=str(info["cudnn_version"]) if info.get("cudnn_version") else None,
        distribution=f"{dist.name}=={dist.version}", location=dist.site,
    )


def _tensorrt(ctx: Context) -> Optional[FrameworkBuild]:
    dist = ctx.distribution("tensorrt", "tensorrt-cu13", "tensorrt-cu12", "tensorrt-cu11")
    if dist is None:
        return None
    cuda = None
    for candidate in ("tensorrt-cu13", "tensorrt-cu12", "tensorrt-cu11", "tensorrt-cu13-libs", "tensorrt-cu12-libs"):
        if ctx.distribution(candidate):
            cuda = re.search(r"cu(\d+)", candidate).group(1)  # type: ignore[union-attr]
            break
    return FrameworkBuild(
        name="tensorrt", version=dist.version, variant="cuda", cuda=cuda,
        distribution=f"{dist.name}=={dist.version}", location=dist.site,
    )


def _numba(ctx: Context) -> Optional[FrameworkBuild]:
    dist = ctx.distribution("numba")
    if dist is None:
        return None
    details = {}
    extension = ctx.distribution("numba-cuda")
    if extension:
        details["numba-cuda"] = extension.version
    return FrameworkBuild(
        name="numba", version=dist.version, distribution=f"numba=={dist.version}", location=dist.site, details=details
    )


READERS: List[Callable[[Context], Optional[FrameworkBuild]]] = [
    _torch, _companion("torchvision"), _companion("torchaudio"), _tensorflow, _jax, _cupy,
    _onnxruntime, _tensorrt, _numba, *addons.READERS,
]


def _julia(ctx: Context, errors: List[ProbeError]) -> Optional[FrameworkBuild]:
    if ctx.host.which("julia") is None:
        return None
    result = ctx.run("julia", "--version")
    version = parse_julia_version(result.stdout) if result.ok else None
    if not result.ok:
        errors.append(ProbeError("frameworks", command_kind(result.error), result.describe()))
    elif version is None:
        errors.append(ProbeError("frameworks", ErrorKind.BAD_OUTPUT,
                                 f"julia --version printed no version: {result.stdout.strip()[:120]!r}"))
    details: Dict[str, str] = {}
    manifest = _julia_manifest(ctx, version)
    if manifest:
        packages = parse_julia_manifest(try_read_text(ctx.host, manifest) or "")
        details = {f"{name}.jl" if not name.endswith("_jll") else name: packages[name]
                   for name in JULIA_PACKAGES if name in packages}
        details["manifest"] = manifest
    return FrameworkBuild(
        name="julia", version=version, variant="cuda" if "CUDA.jl" in details else None,
        location=ctx.host.which("julia"), details=details,
    )


def _julia_manifest(ctx: Context, version: Optional[str]) -> Optional[str]:
    env = ctx.env()
    candidates = []
    project = env.get("JULIA_PROJECT")
    if project and project != "@.":
        candidates.append(project)
    depot = (env.get("JULIA_DEPOT_PATH", "").split(":") or [""])[0] or posixpath.join(env.get("HOME", ""), ".julia")
    if version:
        major_minor = ".".join(version.split(".")[:2])
        candidates.append(posixpath.join(depot, "environments", f"v{major_minor}"))
    for directory in candidates:
        if version:
            versioned = posixpath.join(directory, f"Manifest-v{'.'.join(version.split('.')[:2])}.toml")
            if ctx.host.is_file(versioned):
                return versioned
        plain = posixpath.join(directory, "Manifest.toml")
        if ctx.host.is_file(plain):
            return plain
    return None
