"""The target Python environment and the packages installed in it (pip and conda)."""

from __future__ import annotations

import posixpath
import re
from typing import List, Optional, Tuple

from cudadoctor.host import try_read_text
from cudadoctor.model import ErrorKind, Package, ProbeError, PythonEnv
from cudadoctor.model.parsers import normalize_name, parse_conda_meta
from cudadoctor.probes.context import ProbeOutput, command_kind
from cudadoctor.probes.context import Context


def probe_python(ctx: Context) -> ProbeOutput:
    """Asks the target interpreter for its version, prefix and site directories (in-process
    when it is this interpreter, else a stdlib-only child bounded by the timeout)."""
    facts, reason = ctx.interpreter()
    if facts is None:
        failure = ctx.interpreter_error()
        kind = command_kind(failure.kind if failure is not None else None)
        if kind is ErrorKind.ERROR and "No such file" in (reason or ""):
            kind = ErrorKind.NOT_INSTALLED
        return ProbeOutput({}, [ProbeError("python", kind, reason or "the interpreter did not answer")])
    env = ctx.env()
    conda = ctx.conda_prefix()
    name: Optional[str]
    if conda is not None:
        env_kind, name = "conda", _conda_env_name(conda, env.get("CONDA_DEFAULT_ENV"))
    elif facts.prefix != facts.base_prefix:
        env_kind, name = "venv", posixpath.basename(facts.prefix.rstrip("/")) or None
    else:
        env_kind, name = "system", None
    return ProbeOutput(
        {
            "python": PythonEnv(
                version=facts.version,
                implementation=facts.implementation,
                executable=facts.executable,
                prefix=facts.prefix,
                base_prefix=facts.base_prefix,
                env_kind=env_kind,
                env_name=name,
                platform_tag=facts.platform_tag,
                site_packages=facts.site_packages,
                is_current=facts.is_current,
                externally_managed=_externally_managed(ctx, facts, env_kind),
            )
        }
    )


def _externally_managed(ctx: Context, facts: object, env_kind: str) -> Optional[bool]:
    """PEP 668's marker: ``EXTERNALLY-MANAGED`` in the standard library folder of a system
    interpreter (a venv or conda env is never managed by the distribution)."""
    if env_kind != "system":
        return False
    prefix, version = getattr(facts, "base_prefix", None), getattr(facts, "version", None)
    mm = ".".join((version or "").split(".")[:2])
    if not prefix or not mm or not re.match(r"^\d+\.\d+$", mm):
        return None
    for lib in ("lib", "lib64"):
        if ctx.host.is_file(posixpath.join(prefix, lib, f"python{mm}", "EXTERNALLY-MANAGED")):
            return True
    return False


def _conda_env_name(prefix: str, default_env: Optional[str]) -> str:
    parent = posixpath.basename(posixpath.dirname(prefix.rstrip("/")))
    if parent == "envs":
        return posixpath.basename(prefix.rstrip("/"))
    return default_env if default_env and "/" not in default_env else "base"


# Distributions that belong to a GPU stack. The rest of an environment is left out of the
# snapshot: it says nothing about CUDA and would only make reports longer.
RELEVANT_NAMES = frozenset(
    {
        "torch", "torchvision", "torchaudio", "pytorch-triton", "triton", "xformers",
        "flash-attn", "vllm", "deepspeed", "bitsandbytes", "apex", "tensorflow",
        "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tf-nightly", "tf-keras",
        "keras", "tensorrt", "jax", "jaxlib", "numba", "llvmlite", "numpy", "onnxruntime",
        "onnxruntime-gpu", "onnxruntime-training", "cupy", "pycuda", "nvidia-ml-py", "pynvml",
        "cudf", "cuml", "paddlepaddle-gpu", "mxnet", "transformer-engine", "mamba-ssm",
        "causal-conv1d", "flashinfer-python", "sglang", "accelerate", "nvidia-dali",
    }
)
RELEVANT_PREFIXES = (
    "nvidia-", "cupy-", "jax-cuda", "jax-rocm", "tensorrt-", "torch-", "cuda-", "onnxruntime-",
    "tensorflow-", "numba-", "cudf-", "cuml-", "mxnet-", "triton-", "xformers-",
)


def is_relevant(name: str) -> bool:
    return name in RELEVANT_NAMES or name.startswith(RELEVANT_PREFIXES)


def probe_packages(ctx: Context) -> ProbeOutput:
    """Lists the relevant distributions of every site directory of the target (read from the
    ``.dist-info`` folder names, nothing imported) and the conda packages of its env (read from
    ``conda-meta/*.json`` file names; the JSON only for relevant packages)."""
    facts, reason = ctx.interpreter()
    errors: List[ProbeError] = []
    packages: List[Package] = []
    if facts is None:
        errors.append(ProbeError("packages", ErrorKind.ERROR, f"no target interpreter: {reason}"))
    else:
        for dist in ctx.distributions():
            if is_relevant(dist.name):
                packages.append(Package(dist.name, dist.version, "pip", location=dist.site))
        for site in facts.site_packages:
            if not ctx.list_dir(site):  # empty, missing, or unreadable: only the last is news
                try:
                    ctx.host.list_dir(site)
                except PermissionError:
                    errors.append(ProbeError("packages", ErrorKind.PERMISSION, f"{site}: permission denied"))
                except (OSError, ValueError):
                    pass
    prefix = ctx.conda_prefix()
    if prefix is not None:
        conda, conda_errors = _conda_packages(ctx, prefix)
        packages.extend(conda)
        errors.extend(conda_errors)
    if facts is None and prefix is None:
        return ProbeOutput({}, errors)
    return ProbeOutput({"packages": tuple(packages)}, errors)


_CONDA_FILE = re.compile(r"^(?P<name>.+)-(?P<version>[^-]+)-(?P<build>[^-]+)\.json$")
# conda names of CUDA components and frameworks (conda-forge splits CUDA into many packages).
CONDA_RELEVANT = ("cuda", "cudnn", "nccl", "cudatoolkit", "libcu", "libnv", "pytorch",
                  "tensorflow", "jax", "cupy", "magma", "nvidia", "libtorch", "libcudnn")


def _conda_packages(ctx: Context, prefix: str) -> Tuple[List[Package], List[ProbeError]]:
    meta = posixpath.join(prefix, "conda-meta")
    out: List[Package] = []
    errors: List[ProbeError] = []
    for entry in ctx.list_dir(meta):
        m = _CONDA_FILE.match(entry)
        if not m:
            continue
        name = m.group("name")
        norm = normalize_name(name)
        if not (is_relevant(norm) or norm == "python" or norm.startswith(CONDA_RELEVANT)):
            continue
        parsed = parse_conda_meta(try_read_text(ctx.host, posixpath.join(meta, entry)) or "")
        if parsed is None:
            errors.append(
                ProbeError("packages", ErrorKind.BAD_OUTPUT, f"{posixpath.join(meta, entry)} is not valid")
            )
            parsed = {"name": name, "version": m.group("version"), "build": m.group("build")}
        out.append(
            Package(
                normalize_name(parsed["name"]),
                parsed["version"],
                "conda",
                build=parsed.get("build"),
                channel=parsed.get("channel"),
                location=prefix,
            )
        )
    return out, errors
