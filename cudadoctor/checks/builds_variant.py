"""Build checks about the package variant: the right release, the wrong CUDA flavour of it.
CuPy for another CUDA major than the stack (or two CuPy distributions at once), a JAX plugin
for a CUDA major the driver cannot run, onnxruntime-gpu for another CUDA major than the rest of
the stack, and TensorFlow >= 2.14 on Linux without its [and-cuda] libraries. (Missing libraries
in general are the libraries checks' concern; these name the package that should be swapped.)"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, List, Optional, Tuple

from cudadoctor.matrix.versions import major, major_minor
from cudadoctor.model import Category, Finding, FrameworkBuild, Severity, Snapshot
from cudadoctor.model.shell import quote
from cudadoctor.checks.base import driver_version, gpus, os_of, ref
from cudadoctor.checks.builds_facts import (
    build_version,
    cuda_range,
    dist_name,
    driver_cuda,
    finding,
    label,
    normalized,
    stack_majors,
    uses,
)

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

E, W = Severity.ERROR, Severity.WARNING
RUNS = ("native", "minor_compat")
Fixed = Tuple[str, List[str], Tuple[str, ...]]


def _runs(snap: Snapshot, matrix: Matrix, cuda: str) -> bool:
    driver = driver_version(snap)
    return bool(driver) and matrix.cuda.driver_support(driver or "", cuda, os_of(snap)).kind in RUNS


def _too_old(snap: Snapshot, matrix: Matrix, cuda: str) -> bool:
    driver = driver_version(snap)
    return bool(driver) and matrix.cuda.driver_support(driver or "", cuda, os_of(snap)).kind == "too_old"


def _stack_target(snap: Snapshot, exclude: str) -> Optional[Tuple[int, str, str]]:
    """(CUDA major, its full version, the frameworks on it) the other frameworks mostly use."""
    majors = stack_majors(snap, exclude)
    if not majors:
        return None
    number = Counter(majors.values()).most_common(1)[0][0]
    names = sorted(n for n, m in majors.items() if m == number)
    cuda = next(b.cuda for b in snap.frameworks or () if b.name == names[0] and b.cuda)
    return number, cuda or str(number), ", ".join(names)


# ---------------------------------------------------------------------------- CuPy


def _cupy_dists(snap: Snapshot, matrix: Matrix, b: FrameworkBuild) -> List[str]:
    """Every CuPy distribution installed: the probe's, what it saw besides, and pip's list."""
    names = [dist_name(b) or ""] + [x.strip().split("==")[0] for x in b.details.get("also_installed", "").split(",")]
    names += [p.name for p in snap.packages or ()]
    out = []
    for name in names:
        dist = matrix.ecosystem.cupy_cuda_for(name) if name else None
        if dist is not None and dist.kind != "meta" and dist.distribution not in out:
            out.append(dist.distribution)
    return out


def cupy_alternative(snap: Snapshot, matrix: Matrix, b: FrameworkBuild) -> Optional[Any]:
    """A CuPy distribution for the driver's CUDA, when this one's CUDA is too new for the driver."""
    dcuda = driver_cuda(snap, matrix)
    if b.variant != "cuda" or not b.cuda or not dcuda or not _too_old(snap, matrix, b.cuda):
        return None
    version = build_version(b)
    found = matrix.ecosystem.cupy_package_for(dcuda, version) or matrix.ecosystem.cupy_package_for(dcuda)
    return found[0] if found else None


def cupy_install(snap: Snapshot, matrix: Matrix, b: FrameworkBuild, reason: str, cuda: Optional[str] = None) -> Fixed:
    """Uninstall every CuPy distribution, install the one for ``cuda`` (default: the stack's, else the driver's)."""
    target = cuda or (_stack_target(snap, "cupy") or (0, None, ""))[1] or driver_cuda(snap, matrix)
    if not target:
        return "", [], ()
    version = build_version(b)
    found = matrix.ecosystem.cupy_package_for(target, version) or matrix.ecosystem.cupy_package_for(target)
    if not found:
        return "", [], ()
    dist = found[0]
    pin = f"=={version}" if version and dist.shipped_in(version) else ""
    return (f"{reason} {target}: {dist.distribution} (CUDA {cuda_range(dist.cuda_min, dist.cuda_max)}).",
            [f"pip uninstall -y {' '.join(_cupy_dists(snap, matrix, b))}", f"pip install {dist.distribution}{pin}"],
            (ref("cupy.json", dist.distribution),))


def check_cupy(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    out = []
    for b in normalized(snap, matrix):
        if b.name != "cupy":
            continue
        dists = _cupy_dists(snap, matrix, b)
        if len(dists) > 1:
            fact = matrix.ecosystem.cupy.fact("duplicate_packages_conflict")
            text, commands, source = cupy_install(snap, matrix, b, "Keep one: the distribution for CUDA")
            out.append(finding(
                "cupy-multiple-distributions", E, Category.WRONG_PACKAGE_VARIANT,
                f"{len(dists)} CuPy distributions are installed at once: {', '.join(dists)}",
                why=f"{', '.join(dists)} {'both' if len(dists) == 2 else 'all'} install the same 'cupy' package over "
                    "each other. "
                    + (fact.value if fact else ""),
                fix=text or "Uninstall all but one.",
                commands=commands or [f"pip uninstall -y {' '.join(dists)}"],
                evidence=["frameworks.cupy.details.also_installed", "packages"],
                source=[ref("cupy.json", "duplicate_packages_conflict")] + list(source),
            ))
        if b.variant == "cuda" and b.cuda:
            found = _cupy_major(snap, matrix, b)
            if found is not None:
                out.append(found)
    return out


def _cupy_major(snap: Snapshot, matrix: Matrix, b: FrameworkBuild) -> Optional[Finding]:
    mine = major(b.cuda or "")
    alt = cupy_alternative(snap, matrix, b)
    dcuda = driver_cuda(snap, matrix)
    if alt is not None:
        text, commands, source = cupy_install(snap, matrix, b, "Install CuPy for CUDA", cuda=dcuda)
        return finding(
            "cupy-wrong-cuda-major", E, Category.WRONG_PACKAGE_VARIANT,
            f"{label(b)} is for CUDA {mine}, which driver {driver_version(snap)} cannot run",
            why=f"{dist_name(b)} needs a driver for CUDA {mine}.x; driver {driver_version(snap)} supports CUDA "
                f"{dcuda}. {alt.distribution} serves CUDA {cuda_range(alt.cuda_min, alt.cuda_max)}.",
            fix=text, commands=commands,
            evidence=["frameworks.cupy.distribution", "driver.driver_version"], source=list(source),
        )
    stack = _stack_target(snap, "cupy")
    if stack is not None and stack[0] != mine:
        text, commands, source = cupy_install(snap, matrix, b, "Install CuPy for CUDA", cuda=stack[1])
        why = (f"{dist_name(b)} loads CUDA {mine} libraries (libnvrtc, cuBLAS, ...); {uses(stack[2])} CUDA {stack[0]}, "
               f"whose libraries the environment has. Without a CUDA {mine} toolkit beside them, CuPy's kernels fail "
               f"to compile or load.")
    elif stack is None and dcuda and mine is not None and (major(dcuda) or 0) > mine and _no_libs_of(snap, mine):
        text, commands, source = cupy_install(snap, matrix, b, "Install CuPy for CUDA", cuda=dcuda)
        why = (f"{dist_name(b)} needs CUDA {mine} libraries; the driver supports CUDA {dcuda}, and no CUDA {mine} "
               "toolkit or nvidia-*-cu{mine} wheel is installed.".replace("{mine}", str(mine)))
    else:
        return None
    return finding(
        "cupy-wrong-cuda-major", W, Category.WRONG_PACKAGE_VARIANT,
        f"{label(b)} is for CUDA {mine}; this stack uses CUDA {stack[0] if stack else major(dcuda or '')}",
        why=why, fix=text or None, commands=commands,
        evidence=["frameworks.cupy.distribution", "frameworks", "toolkits"], source=list(source),
    )


def _no_libs_of(snap: Snapshot, cuda_major: int) -> bool:
    """Known: no toolkit and no pip wheel of this CUDA major."""
    if snap.toolkits is None or snap.packages is None:
        return False
    if any(major(t.version or "") == cuda_major for t in snap.toolkits):
        return False
    return not any(p.name.startswith("nvidia-") and p.name.endswith(f"-cu{cuda_major}") for p in snap.packages)


# ---------------------------------------------------------------------------- JAX


def _jax_version(b: FrameworkBuild) -> Optional[str]:
    return b.version or b.details.get("jaxlib")


def jax_alternative(snap: Snapshot, matrix: Matrix, b: FrameworkBuild) -> Optional[Any]:
    """The same release's build for a CUDA major the driver runs, when this plugin's is too new."""
    version = _jax_version(b)
    mine = major(b.cuda or "")
    if b.variant != "cuda" or mine is None or not version or not _too_old(snap, matrix, str(mine)):
        return None
    rel = matrix.ecosystem.jax_release(version)
    fits = [x for x in (rel.builds if rel else ()) if x.cuda_major != mine and _runs(snap, matrix, str(x.cuda_major))]
    return fits[-1] if fits else None


def install_jax(snap: Snapshot, matrix: Matrix, b: FrameworkBuild, cuda_major: Optional[int] = None,
                lead: str = "Install JAX's CUDA build") -> Fixed:
    version = _jax_version(b)
    rel = matrix.ecosystem.jax_release(version) if version else None
    if rel is None or not rel.builds:
        return "", [], ()
    stack = _stack_target(snap, "jax")
    want = cuda_major or (stack[0] if stack else None)
    runnable = [x for x in rel.builds if _runs(snap, matrix, str(x.cuda_major))] or list(rel.builds)
    build = (rel.build(want) if want is not None else None) or runnable[-1]
    extra = next((e for e in (f"cuda{build.cuda_major}", f"cuda{build.cuda_major}_pip") if e in build.extras),
                 build.extras[0] if build.extras else None)
    if extra is None:
        return "", [], ()
    find = f" -f {build.index_url}" if build.index_url and not build.plugins else ""
    old = [x.split("==")[0] for x in (b.details.get("plugin"), b.details.get("pjrt")) if x]
    commands = ([f"pip uninstall -y {' '.join(old)}"] if old else []) + [f'pip install "jax[{extra}]=={version}"{find}']
    return (f"{lead} for CUDA {build.cuda_major}:", commands,
            (ref("jax.json", f"{rel.first or '..'}-{rel.last or '..'}"),))


def check_jax_plugin(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    out = []
    for b in normalized(snap, matrix):
        alt = jax_alternative(snap, matrix, b) if b.name == "jax" else None
        if alt is None:
            continue
        plugin = (b.details.get("plugin") or f"jax-cuda{b.cuda}-plugin").split("==")[0]
        ds = matrix.cuda.driver_support(driver_version(snap) or "", str(b.cuda), os_of(snap))
        need = ds.floor or ds.required
        text, commands, source = install_jax(snap, matrix, b, alt.cuda_major, lead="Install the build of this release")
        out.append(finding(
            "jax-plugin-wrong-cuda-major", E, Category.WRONG_PACKAGE_VARIANT,
            f"{plugin} needs a driver for CUDA {b.cuda}; driver {driver_version(snap)} runs CUDA {driver_cuda(snap, matrix)}",
            why=f"JAX's CUDA {b.cuda} plugin needs a driver >= {need}; this driver is {driver_version(snap)}. JAX "
                f"{_jax_version(b)} also has a CUDA {alt.cuda_major} build, which this driver runs. Until then JAX "
                "falls back to the CPU or fails to initialise the CUDA backend.",
            fix=text, commands=commands,
            evidence=["frameworks.jax.details.plugin", "driver.driver_version"],
            source=[s for s in (ref("cuda_minor_compat.json", ds.floor_record.cuda_major) if ds.floor_record else "",)
                    if s] + list(source),
        ))
    return out


# ---------------------------------------------------------------------------- ONNX Runtime


def install_ort(snap: Snapshot, matrix: Matrix, b: FrameworkBuild, cuda_major: Optional[int] = None,
                lead: str = "Install onnxruntime-gpu") -> Fixed:
    """onnxruntime-gpu for ``cuda_major`` (default: the stack's, else the driver's), this release if it has one."""
    eco = matrix.ecosystem
    stack = _stack_target(snap, "onnxruntime")
    dcuda = driver_cuda(snap, matrix)
    want = cuda_major or (stack[0] if stack else major(dcuda) if dcuda else None)
    version = build_version(b)
    builds = [x for x in eco.onnxruntime.builds if want is None or x.cuda_major == want]
    if not builds:
        return "", [], ()
    here = [x for x in builds if version and x.contains(version)]
    build = here[-1] if here else builds[-1]
    pin = f"=={version}" if here else f"=={'.'.join(str(x) for x in major_minor(build.last))}.*"
    pypi = eco.onnxruntime.pypi_build(build.last)
    index = "" if build.pypi_default or (pypi and pypi.index_url == build.index_url) else f" --extra-index-url {build.index_url}"
    old = (b.distribution or "onnxruntime").split("==")[0]
    return (f"{lead} for CUDA {build.cuda_major} (CUDA {build.cuda}, cuDNN {build.cudnn}):",
            [f"pip uninstall -y {old}", f'pip install "onnxruntime-gpu{pin}"{index}'],
            (ref("onnxruntime.json", f"{build.first}-{build.last}"),))


def check_onnxruntime(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    out = []
    for b in normalized(snap, matrix):
        if b.name != "onnxruntime" or b.variant != "cuda":
            continue
        version = build_version(b)
        mine = major(b.cuda) if b.cuda else None
        origin = "its build info"
        if mine is None and version:
            pypi = matrix.ecosystem.onnxruntime.pypi_build(version)
            mine, origin = (pypi.cuda_major, f"the PyPI build of {version}") if pypi else (None, "")
        stack = _stack_target(snap, "onnxruntime")
        if mine is None or stack is None or stack[0] == mine:
            continue
        fact = matrix.ecosystem.onnxruntime.fact("cuda_provider_error")
        text, commands, source = install_ort(snap, matrix, b, stack[0])
        out.append(finding(
            "onnxruntime-wrong-cuda-major", W, Category.WRONG_PACKAGE_VARIANT,
            f"{label(b)} is built for CUDA {mine}; {uses(stack[2])} CUDA {stack[0]}",
            why=f"{label(b)} is for CUDA {mine} ({origin}) and loads CUDA {mine} libraries, while {uses(stack[2])} "
                f"CUDA {stack[0]}. Without CUDA {mine} libraries on the system, the CUDA execution provider fails to "
                f"load{f' ({fact.value!r})' if fact else ''} and ONNX Runtime falls back to the CPU.",
            fix=text or None, commands=commands,
            evidence=["frameworks.onnxruntime", "frameworks"],
            source=[ref("onnxruntime.json", "cuda_provider_error")] + list(source),
        ))
    return out


# ---------------------------------------------------------------------------- TensorFlow [and-cuda]


def check_tf_and_cuda(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    host = snap.host
    if (host and host.os not in (None, "linux")) or not gpus(snap) or snap.packages is None or snap.libraries is None:
        return []
    out = []
    for b in normalized(snap, matrix):
        version = build_version(b)
        if b.name != "tensorflow" or b.variant != "cuda" or not version:
            continue
        eco = matrix.ecosystem
        if not eco.tensorflow.has_and_cuda_extra(version):
            continue
        cfg = eco.tf_config(version, "linux")
        if cfg is None or cfg.cuda_major is None:
            continue
        wheel = f"nvidia-cudnn-cu{cfg.cuda_major}"
        lib = snap.library("libcudnn")
        system = [c for c in (lib.copies if lib else ()) if major(c.version or "") == cfg.cudnn_major]
        if any(p.name == wheel for p in snap.packages) or system:
            continue
        first = eco.tensorflow.fact("and_cuda_first")
        out.append(finding(
            "tensorflow-without-and-cuda", E, Category.WRONG_PACKAGE_VARIANT,
            f"{label(b)} is installed without its CUDA libraries (tensorflow[and-cuda])",
            why=f"Since TensorFlow {first.value if first else '2.14'}, the Linux wheel brings no CUDA or cuDNN: the "
                f"[and-cuda] extra installs them as nvidia-* wheels. TensorFlow {version} needs CUDA {cfg.cuda} and "
                f"cuDNN {cfg.cudnn}; neither {wheel} nor a system cuDNN {cfg.cudnn_major} is installed, so TensorFlow "
                "lists no GPU ('Cannot dlopen some GPU libraries ... Skipping registering GPU devices').",
            fix="Install TensorFlow with its CUDA libraries:",
            commands=[f"pip install {quote(f'tensorflow[and-cuda]=={version}')}"],
            evidence=["frameworks.tensorflow.version", "packages", "libraries.libcudnn"],
            source=[ref("tensorflow.json", "and_cuda_first"), ref("tensorflow.json", cfg.version)],
        ))
    return out
