"""Every CUDA toolkit on the machine, its version, and which one a build would use."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from cudadoctor.host import read_text, try_read_text
from cudadoctor.model import ErrorKind, ProbeError, Toolkit
from cudadoctor.model.parsers import (
    parse_cuda_version_json,
    parse_cuda_version_txt,
    parse_dist_info_dirname,
    parse_nvcc_version,
)
from cudadoctor.probes.context import ProbeOutput, command_kind
from cudadoctor.probes.context import Context

ENV_VARS = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")
STANDARD_ROOTS = ("/usr/local/cuda", "/opt/cuda", "/usr/lib/cuda")
# Where pip's nvidia-cuda-nvcc wheels put the compiler: CUDA 12 under nvidia/cuda_nvcc,
# CUDA 13 under nvidia/cu13.
PIP_NVCC_DIRS = ("nvidia/cuda_nvcc", "nvidia/cu13", "nvidia/cu12")


@dataclass
class _Candidate:
    """A directory that may hold a CUDA toolkit, and how it was found."""

    root: str
    found_via: List[str] = field(default_factory=list)
    exists: bool = True


def probe_toolkits(ctx: Context) -> ProbeOutput:
    """Finds toolkits through CUDA_HOME/CUDA_PATH/CUDA_ROOT, nvcc on PATH (following symlinks
    and wrapper scripts), /usr/local/cuda*, /opt/cuda, the conda env and pip's nvcc wheels.
    Versions come from version.json, version.txt, the nvcc wheel's dist-info, ``nvcc --version``
    or cuda.h, in that order (the cheapest reliable source first)."""
    host = ctx.host
    env = ctx.env()
    found: Dict[str, _Candidate] = {}
    errors: List[ProbeError] = []

    def add(path: str, via: str) -> Optional[str]:
        if not path:
            return None
        try:
            real = host.realpath(path)
        except OSError:
            real = path
        cand = found.get(real)
        exists = host.is_dir(real)
        if cand is None:
            cand = found[real] = _Candidate(real, exists=exists)
        if via not in cand.found_via:
            cand.found_via.append(via)
        return real

    env_roots: Dict[str, str] = {}
    for var in ENV_VARS:
        if env.get(var):
            root = add(env[var].rstrip("/") or "/", var)
            if root:
                env_roots[var] = root
    path_root = None
    nvcc_on_path = host.which("nvcc")
    if nvcc_on_path:
        path_root = _root_of_nvcc(ctx, nvcc_on_path)
        if path_root:
            path_root = add(path_root, f"PATH ({nvcc_on_path})")
    for root in STANDARD_ROOTS:
        if host.exists(root):
            add(root, root)
    for entry in ctx.list_dir("/usr/local"):
        if re.fullmatch(r"cuda-\d+(\.\d+)*", entry):
            add(posixpath.join("/usr/local", entry), posixpath.join("/usr/local", entry))
    conda = ctx.conda_prefix()
    if conda and host.is_file(posixpath.join(conda, "bin", "nvcc")):
        add(conda, "conda")
    for site in ctx.site_dirs():
        for sub in PIP_NVCC_DIRS:
            if host.is_file(posixpath.join(site, sub, "bin", "nvcc")):
                add(posixpath.join(site, sub), "pip")

    active = _active_root(env_roots, path_root, found)
    toolkits = []
    for root, cand in found.items():
        if not cand.exists:
            toolkits.append(
                Toolkit(root=root, found_via=tuple(cand.found_via), active=root == active, exists=False)
            )
            continue
        version, source, errs = _version(ctx, root)
        errors.extend(errs)
        nvcc = posixpath.join(root, "bin", "nvcc")
        toolkits.append(
            Toolkit(
                root=root,
                version=version,
                version_source=source,
                nvcc=nvcc if host.is_file(nvcc) else None,
                found_via=tuple(cand.found_via),
                active=root == active,
                exists=True,
            )
        )
    return ProbeOutput({"toolkits": tuple(toolkits)}, errors)


def _active_root(env_roots: Dict[str, str], path_root: Optional[str], found: Dict[str, _Candidate]) -> Optional[str]:
    """The toolkit an extension build picks, in torch.utils.cpp_extension's order: CUDA_HOME
    or CUDA_PATH, then the nvcc on PATH, then /usr/local/cuda."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if var in env_roots:
            return env_roots[var]
    if path_root:
        return path_root
    for cand in found.values():
        if "/usr/local/cuda" in cand.found_via:
            return cand.root
    return None


def _root_of_nvcc(ctx: Context, nvcc: str) -> Optional[str]:
    """``.../bin/nvcc`` -> ``...``, following symlinks, and wrapper scripts such as
    ``exec /usr/local/cuda-13.0/bin/nvcc "$@"``."""
    host = ctx.host
    try:
        real = host.realpath(nvcc)
    except OSError:
        real = nvcc
    try:
        head = host.read_bytes(real, 4096) if host.is_file(real) else b""
    except OSError:  # an unreadable nvcc (mode 711) still tells its root by its path
        head = b""
    if head.startswith(b"#!"):
        m = re.search(r"(/[^\s\"'$]+)/bin/nvcc\b", head.decode("utf-8", errors="replace"))
        if m and m.group(1) != posixpath.dirname(posixpath.dirname(real)):
            return m.group(1)
    if posixpath.basename(posixpath.dirname(real)) == "bin":
        return posixpath.dirname(posixpath.dirname(real))
    return None


def _version(ctx: Context, root: str) -> Tuple[Optional[str], Optional[str], List[ProbeError]]:
    host = ctx.host
    errs: List[ProbeError] = []
    try:
        version = parse_cuda_version_json(read_text(host, posixpath.join(root, "version.json")))
    except PermissionError:
        version = None
        errs.append(ProbeError("toolkits", ErrorKind.PERMISSION, f"{posixpath.join(root, 'version.json')}: permission denied"))
    except (OSError, ValueError):
        version = None
    if version:
        return version, "version.json", errs
    version = parse_cuda_version_txt(try_read_text(host, posixpath.join(root, "version.txt")) or "")
    if version:
        return version, "version.txt", errs
    for entry in ctx.list_dir(posixpath.join(root, "dist-info")):
        parsed = parse_dist_info_dirname(entry)
        if parsed and parsed[0] == "nvidia-cuda-nvcc":
            return parsed[1], "dist-info", errs
    nvcc = posixpath.join(root, "bin", "nvcc")
    if host.is_file(nvcc):
        result = ctx.run(nvcc, "--version")
        if result.ok:
            version = parse_nvcc_version(result.stdout)
            if version:
                return version, "nvcc", errs
            errs.append(ProbeError("toolkits", ErrorKind.BAD_OUTPUT, f"{nvcc} --version printed no version"))
        else:
            errs.append(ProbeError("toolkits", command_kind(result.error), result.describe()))
    for header in ("include/cuda.h", "targets/x86_64-linux/include/cuda.h", "targets/sbsa-linux/include/cuda.h"):
        m = re.search(r"#define\s+CUDA_VERSION\s+([0-9]{1,9})\b", try_read_text(host, posixpath.join(root, header)) or "")
        if m:
            value = int(m.group(1))
            return f"{value // 1000}.{(value % 1000) // 10}", "cuda.h", errs
    return None, None, errs
