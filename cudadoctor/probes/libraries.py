"""The CUDA libraries the dynamic loader would find, every other copy, and their versions.

Search order mirrors ld.so(8): LD_LIBRARY_PATH, then the ldconfig cache, then the default
directories. Copies inside pip wheels (``nvidia/*/lib``, ``torch/lib``) and the conda env's
``lib`` follow: frameworks reach those through their own RPATH, so they matter when a system
copy shadows them.
"""

from __future__ import annotations

import posixpath
import re
from typing import Dict, List, Optional, Tuple

from cudadoctor.host import try_read_text
from cudadoctor.model import ErrorKind, Library, LibraryCopy, ProbeError
from cudadoctor.model.parsers import parse_cudnn_header, parse_ldconfig, version_from_soname
from cudadoctor.probes.context import ProbeOutput, command_kind
from cudadoctor.probes.context import Context

LDCONFIG = ("ldconfig", "-p")  # the loader's cache; run on every machine, so the probe stage starts it early

# The library families a CUDA stack loads. cuDNN 9 splits into sub-libraries (graph, ops, cnn,
# adv, engines_*, heuristic); cuDNN 8 into *_infer/*_train; the main ones are listed.
FAMILIES = (
    "libcuda", "libnvidia-ml", "libcudart", "libcudnn", "libcudnn_graph", "libcudnn_ops",
    "libcudnn_cnn", "libcudnn_adv", "libcudnn_ops_infer", "libcudnn_cnn_infer", "libcublas",
    "libcublasLt", "libnccl", "libnvrtc", "libcufft", "libcusparse", "libcusolver", "libcurand",
    "libnvJitLink",
)
DEFAULT_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib")
MULTIARCH = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu", "ppc64le": "powerpc64le-linux-gnu"}
WSL_LIB = "/usr/lib/wsl/lib"
# The ABI tag `ldconfig -p` prints for the machine's native libraries (glibc elf/cache.c).
LDCONFIG_ABI = {"x86_64": "x86-64", "aarch64": "AArch64", "ppc64le": "64bit"}

_NAME = re.compile(r"^(?P<stem>lib[A-Za-z_-]+?)\.so(?:\.(?P<version>\d+(?:\.\d+)*))?$")


def probe_libraries(ctx: Context) -> ProbeOutput:
    """Lists each family's copies in loader order (one ``ldconfig -p`` call, directory listings,
    no dlopen). Versions come from the file names (realpath included), cuDNN's header, or the
    pip wheel that owns the copy."""
    host = ctx.host
    env = ctx.env()
    errors: List[ProbeError] = []
    dirs: List[Tuple[str, str]] = []  # (directory, found_via) in search order
    for d in env.get("LD_LIBRARY_PATH", "").split(":"):
        if d:
            dirs.append((d, "LD_LIBRARY_PATH"))
    machine = host.platform().machine
    cache = ctx.run(*LDCONFIG)  # started early by the probe stage
    if cache.error == "not_found":  # /sbin is often not on a user's PATH; a hung one is not retried
        cache = ctx.run("/sbin/ldconfig", "-p")
    every = parse_ldconfig(cache.stdout) if cache.ok else []
    abi = LDCONFIG_ABI.get(machine)
    cached = _by_family(parse_ldconfig(cache.stdout, abi) if abi and every else every)
    if not cache.ok and cache.error != "not_found":
        errors.append(ProbeError("libraries", command_kind(cache.error), cache.describe()))
    elif cache.ok and not every and "libs found in cache" not in cache.stdout:
        errors.append(ProbeError("libraries", ErrorKind.BAD_OUTPUT,
                                 f"ldconfig -p printed no library list: {cache.stdout.strip()[:120]!r}"))
    defaults = list(DEFAULT_DIRS)
    if machine in MULTIARCH:
        defaults[2:2] = [f"/lib/{MULTIARCH[machine]}", f"/usr/lib/{MULTIARCH[machine]}"]
    if host.is_dir(WSL_LIB):
        defaults.insert(0, WSL_LIB)
    conda = ctx.conda_prefix()
    extra: List[Tuple[str, str]] = []
    if conda:
        extra.append((posixpath.join(conda, "lib"), "conda"))
    extra.extend(_pip_lib_dirs(ctx))

    libraries = []
    for family in FAMILIES:
        copies = _find(ctx, family, dirs, cached, defaults, extra)
        if copies:
            libraries.append(Library(family, tuple(copies)))
    return ProbeOutput({"libraries": tuple(libraries)}, errors)


def _by_family(cached: List[Tuple[str, str]]) -> Dict[str, List[Tuple[str, str]]]:
    """ldconfig's versioned entries by family (stem): [(path, version)] in cache order. Matched
    once, not once per family: a workstation's cache lists a thousand libraries."""
    out: Dict[str, List[Tuple[str, str]]] = {}
    for soname, path in cached:
        m = _NAME.match(soname)
        if m and m.group("version"):
            out.setdefault(m.group("stem"), []).append((path, m.group("version")))
    return out


def _pip_lib_dirs(ctx: Context) -> List[Tuple[str, str]]:
    out: List[Tuple[str, str]] = []
    for site in ctx.site_dirs():
        nvidia = posixpath.join(site, "nvidia")
        for sub in ctx.list_dir(nvidia):  # nvidia/cudnn/lib (CUDA 12 wheels), nvidia/cu13/lib (13)
            lib = posixpath.join(nvidia, sub, "lib")
            if ctx.host.is_dir(lib):
                out.append((lib, "pip"))
        torch_lib = posixpath.join(site, "torch", "lib")  # older wheels bundled cuDNN and NCCL here
        if ctx.host.is_dir(torch_lib):
            out.append((torch_lib, "pip:torch"))
    return out


# The pip distribution family that ships each library (nvidia-cudnn-cu12, nvidia-cublas, ...).
WHEEL_OF = {
    "libcudart": "nvidia-cuda-runtime", "libcudnn": "nvidia-cudnn", "libcublas": "nvidia-cublas",
    "libcublasLt": "nvidia-cublas", "libnccl": "nvidia-nccl", "libnvrtc": "nvidia-cuda-nvrtc",
    "libcufft": "nvidia-cufft", "libcusparse": "nvidia-cusparse", "libcusolver": "nvidia-cusolver",
    "libcurand": "nvidia-curand", "libnvJitLink": "nvidia-nvjitlink",
}


def _wheel_owner(ctx: Context, family: str, path: str, major: Optional[str]) -> Optional[Tuple[str, str]]:
    """(distribution, version) of the wheel that ships this copy: same site directory, the
    family's distribution name with or without a -cuNN suffix, and (if several) the same major."""
    base = WHEEL_OF.get(family) or WHEEL_OF.get(family.split("_")[0])
    if base is None:
        return None
    matches = [
        d for d in ctx.distributions()
        if path.startswith(d.site + "/") and re.fullmatch(re.escape(base) + r"(-cu\d+)?", d.name)
    ]
    same_major = [d for d in matches if major and d.version.split(".")[0] == major]
    candidates = same_major or matches
    return (candidates[0].name, candidates[0].version) if candidates else None


def _find(
    ctx: Context,
    family: str,
    dirs: List[Tuple[str, str]],
    cached: Dict[str, List[Tuple[str, str]]],
    defaults: List[str],
    extra: List[Tuple[str, str]],
) -> List[LibraryCopy]:
    copies: List[LibraryCopy] = []
    seen: Dict[str, int] = {}

    def add(path: str, via: str, version: Optional[str]) -> None:
        try:
            real = ctx.host.realpath(path)
        except OSError:
            real = path
        if real in seen:
            return
        version = _best_version(family, path, real, version)
        if family == "libcudnn":
            version = _cudnn_header_version(ctx, path, version) or version
        if via == "pip":
            owner = _wheel_owner(ctx, family, path, (version or "").split(".")[0] or None)
            via = f"pip:{owner[0]}=={owner[1]}" if owner else "pip"
            # the wheel's version is the library's when the majors agree (cuDNN 9.5.1.17 ships
            # libcudnn.so.9): more precise than the soname
            if owner and (version is None or owner[1].split(".")[0] == version.split(".")[0]):
                if version is None or owner[1].count(".") > version.count("."):
                    version = owner[1]
        seen[real] = len(copies)
        copies.append(LibraryCopy(path=path, version=version, found_via=via, realpath=real if real != path else None))

    for directory, via in dirs:
        for path, version in _in_dir(ctx, directory, family):
            add(path, via, version)
    for path, version in cached.get(family, ()):
        add(path, "ldconfig", version)
    if not any(c.found_via == "ldconfig" for c in copies):
        for directory in defaults:
            for path, version in _in_dir(ctx, directory, family):
                add(path, "default", version)
    for directory, via in extra:
        for path, version in _in_dir(ctx, directory, family):
            add(path, via, version)
    return copies


def _in_dir(ctx: Context, directory: str, family: str) -> List[Tuple[str, Optional[str]]]:
    """Versioned files of ``family`` in ``directory``, one per major version, newest major
    first: the path is the soname (``libX.so.N``) when present, the version the longest one
    among that major's names (``libX.so.9.1.0`` beats ``libX.so.9``)."""
    names: Dict[str, List[Tuple[str, str]]] = {}
    for entry, version in _versioned(ctx, directory).get(family, ()):
        names.setdefault(version.split(".")[0], []).append((entry, version))
    found: List[Tuple[str, Optional[str]]] = []
    for major in sorted(names, key=int, reverse=True):
        entries = names[major]
        soname = f"{family}.so.{major}"
        path = soname if any(e == soname for e, _ in entries) else entries[0][0]
        version = max((v for _, v in entries), key=lambda v: v.count("."))
        found.append((posixpath.join(directory, path), version))
    return found


def _versioned(ctx: Context, directory: str) -> Dict[str, List[Tuple[str, str]]]:
    """Every versioned library file of ``directory`` by family (stem), in listing order: each
    folder is matched once, not once per family (a toolkit's lib64 has hundreds of files)."""
    def compute() -> Dict[str, List[Tuple[str, str]]]:
        out: Dict[str, List[Tuple[str, str]]] = {}
        for entry in ctx.list_dir(directory):
            m = _NAME.match(entry)
            if m and m.group("version"):
                out.setdefault(m.group("stem"), []).append((entry, m.group("version")))
        return out

    return ctx.once(f"libraries:versioned:{directory}", compute)


def _best_version(family: str, path: str, real: str, version: Optional[str]) -> Optional[str]:
    candidates = [version] if version else []
    for name in (posixpath.basename(path), posixpath.basename(real)):
        v = version_from_soname(name, family)
        if v:
            candidates.append(v)
    return max(candidates, key=lambda v: v.count(".")) if candidates else None


def _cudnn_header_version(ctx: Context, lib_path: str, soname_version: Optional[str]) -> Optional[str]:
    """cuDNN's full version from ``cudnn_version.h`` beside the library (pip wheels, toolkits,
    conda), or from the system include directory for a copy in a system directory. A header
    whose major differs from the library's is someone else's and is ignored."""
    base = posixpath.dirname(posixpath.dirname(lib_path))
    headers = [posixpath.join(base, "include", "cudnn_version.h")]
    if lib_path.startswith(("/usr/lib", "/lib")):
        headers += ["/usr/include/cudnn_version.h", "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h",
                    "/usr/include/x86_64-linux-gnu/cudnn_version_v8.h"]
    major = (soname_version or "").split(".")[0]
    for header in headers:
        version = ctx.once(
            "cudnn-header:" + header, lambda h=header: parse_cudnn_header(try_read_text(ctx.host, h) or "")  # type: ignore[misc]
        )
        if version and (not major or version.split(".")[0] == major):
            return version
    return None
