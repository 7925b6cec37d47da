"""The CUDA libraries a framework would load: missing ones, copies earlier in the loader's
search order that shadow the framework's own, a cuDNN older than (or built for another CUDA
than) the build's, and pip's nvidia-* wheels installed twice.

Which copy a framework loads (:func:`load_order`): the dynamic loader searches LD_LIBRARY_PATH
before a library's RUNPATH, and RUNPATH before its cache and default directories (ld.so(8)).
torch's and TensorFlow's pip wheels reach the nvidia-* wheels (and torch/lib) of their own site
directory through RUNPATH, so for a soname ``libX.so.N`` the order is: LD_LIBRARY_PATH copies,
then the framework's own pip copies, then ldconfig/default copies. How a conda build reaches its
environment's ``lib`` depends on the package (DT_RPATH, searched before LD_LIBRARY_PATH, or
RUNPATH, searched after), so conda builds are left out of the shadowing and cuDNN-version
checks rather than guessed about.

A library is declared missing only from a complete listing: the libraries probe ran on Linux
and reported no error (a hand-written snapshot lists what its author knew, not everything).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from cudadoctor.matrix.versions import major, vkey
from cudadoctor.model import (
    Category,
    Finding,
    FrameworkBuild,
    Library,
    LibraryCopy,
    Package,
    Severity,
    Snapshot,
)
from cudadoctor.checks.base import Check, cuda_builds, finding, ref
from cudadoctor.model.shell import quote

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO

FRAMEWORKS = ("torch", "tensorflow")  # builds whose libraries reach the loader as described above
_SONAME = re.compile(r"\.so\.(\d+)")
_SUFFIX = re.compile(r"^(?P<base>nvidia-[a-z0-9-]+?)-cu(?P<cuda>\d+)$")
_PIP_OWNER = re.compile(r"^pip:(?P<dist>[a-z0-9-]+)==(?P<version>\S+)$")
# the nvidia-* wheel family a library family comes from (its pins in tensorflow.json name these)
_CUBLAS_WHEEL = "nvidia-cublas-cu"


# ---------------------------------------------------------------------------- helpers


def soname_major(copy: LibraryCopy) -> Optional[int]:
    """11 for .../libcusolver.so.11, .../libnvrtc.so.11.2 and .../libcudart.so.11.0."""
    m = _SONAME.search(posixpath.basename(copy.path))
    return int(m.group(1)) if m else None


def _precise(version: Optional[str]) -> bool:
    return len(vkey(version or "")) >= 2


def _listing_complete(snap: Snapshot) -> bool:
    """The libraries probe ran to the end on Linux: a family or soname it does not list is absent."""
    return (snap.libraries is not None and "libraries" in snap.probe_durations_s
            and not snap.errors_of("libraries") and snap.host is not None and snap.host.os == "linux")


def _site(build: FrameworkBuild) -> Optional[str]:
    """The site directory of a torch or TensorFlow build (its location is <site>/<package>)."""
    return posixpath.dirname(build.location.rstrip("/")) if build.location else None


def _conda_build(snap: Snapshot, build: FrameworkBuild) -> bool:
    if "conda_build" in build.details:
        return True
    names = {"torch": ("pytorch",), "tensorflow": ("tensorflow", "tensorflow-base", "tensorflow-gpu")}[build.name]
    return any(p.installer == "conda" and p.name in names for p in snap.packages or ())


def _builds(snap: Snapshot, pip_only: bool) -> List[FrameworkBuild]:
    return [b for b in cuda_builds(snap) if b.name in FRAMEWORKS and b.version
            and not (pip_only and (_conda_build(snap, b) or not b.location))]


def load_order(lib: Optional[Library], soname: int, site: Optional[str]) -> List[LibraryCopy]:
    """The copies of ``lib.so.<soname>`` a framework in ``site`` may load, first one wins."""
    same = [c for c in (lib.copies if lib else ()) if soname_major(c) == soname]
    ld = [c for c in same if c.found_via == "LD_LIBRARY_PATH"]
    own = [c for c in same if site and (c.found_via or "").startswith("pip") and c.path.startswith(site + "/")]
    system = [c for c in same if c.found_via in ("ldconfig", "default")]
    return ld + own + system


def _where(copy: LibraryCopy) -> str:
    return f"{copy.path} ({copy.version or 'version unknown'}, {copy.found_via or 'found'})"


def _ld_path_without(snap: Snapshot, dirs: Sequence[str]) -> Optional[str]:
    """The command that drops ``dirs`` from LD_LIBRARY_PATH (exact value from the snapshot)."""
    value = (snap.env or {}).get("LD_LIBRARY_PATH")
    if value is None:
        return None
    drop = {d.rstrip("/") for d in dirs}
    kept = [d for d in value.split(":") if d and d.rstrip("/") not in drop]
    return f"export LD_LIBRARY_PATH={shlex.quote(':'.join(kept))}" if kept else "unset LD_LIBRARY_PATH"


def _torch_variant(matrix: Matrix, build: FrameworkBuild) -> Any:
    return matrix.pytorch.variant_for_build(build.version or "", build.cuda)


def _tf_config(matrix: Matrix, build: FrameworkBuild) -> Any:
    return matrix.ecosystem.tf_config(build.version or "")


def _label(build: FrameworkBuild) -> str:
    return f"{build.name} {build.version}"


def _reinstall(matrix: Matrix, build: FrameworkBuild) -> List[str]:
    """pip commands that bring back a pip build's CUDA wheels (pip installs missing dependencies
    of a requirement that is already satisfied)."""
    base = (build.version or "").split("+")[0]
    if build.name == "torch":
        variant = _torch_variant(matrix, build)
        url = matrix.pytorch.index_url(variant.name) if variant else None
        return [f"pip install torch=={base} --index-url {url}"] if url else []
    config = _tf_config(matrix, build)
    return [f'pip install "tensorflow[and-cuda]=={base}"'] if config and config.and_cuda_extra else []


def _build_source(matrix: Matrix, build: FrameworkBuild) -> List[str]:
    if build.name == "torch":
        variant = _torch_variant(matrix, build)
        release = matrix.pytorch.release(build.version or "")
        return [ref("pytorch.json", f"{release.version}/{variant.name}")] if variant and release else []
    config = _tf_config(matrix, build)
    return [ref("tensorflow.json", f"{config.version}/{config.platform}")] if config else []


# ---------------------------------------------------------------------------- missing libraries


def _needs(snap: Snapshot, matrix: Matrix, build: FrameworkBuild) -> List[Tuple[str, int, str]]:
    """(family, soname major, what says so) the build cannot run without."""
    needs: List[Tuple[str, int, str]] = []
    cuda = major(build.cuda or "")
    if build.name == "torch":
        variant = _torch_variant(matrix, build)
        cudnn = build.cudnn or (variant.cudnn if variant else None)
        if cudnn and major(cudnn) is not None:
            needs.append(("libcudnn", major(cudnn) or 0, f"cuDNN {cudnn}"))
        # a wheel that requires nvidia-cudnn (or a conda build) takes its CUDA runtime from outside torch too
        if cuda and (build.details.get("cudnn_from", "").startswith("nvidia-") or "conda_build" in build.details):
            needs.append(("libcudart", cuda, f"CUDA {build.cuda}"))
        return needs
    config = _tf_config(matrix, build)
    cudnn = build.cudnn or (config.cudnn if config else None)
    cuda_version = build.cuda or (config.cuda if config else None)
    if cudnn and major(cudnn) is not None:
        named = config.cudnn if config and config.cudnn_major == major(cudnn) else cudnn
        needs.append(("libcudnn", major(cudnn) or 0, f"cuDNN {named}"))
    if cuda_version and major(cuda_version) is not None:
        needs.append(("libcudart", major(cuda_version) or 0, f"CUDA {cuda_version}"))
    pins = matrix.ecosystem.tf_and_cuda_pins(build.version or "")
    for name, spec in pins.pins if pins else ():
        number = re.search(r"\d+", spec)
        if name.startswith(_CUBLAS_WHEEL) and number:
            needs += [("libcublas", int(number.group()), f"{name}{spec}"),
                      ("libcublasLt", int(number.group()), f"{name}{spec}")]
    return needs


def _copies(snap: Snapshot, family: str) -> Tuple[LibraryCopy, ...]:
    lib = snap.library(family)
    return lib.copies if lib else ()


def check_missing(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    if not _listing_complete(snap):
        return []
    out: List[Finding] = []
    for build in _builds(snap, pip_only=False):
        missing = [(family, so, why) for family, so, why in _needs(snap, matrix, build)
                   if not any(soname_major(c) == so for c in _copies(snap, family))]
        if missing:
            out.append(_missing_finding(snap, matrix, build, missing))
    return out


def _missing_finding(snap: Snapshot, matrix: Matrix, build: FrameworkBuild, missing: List[Tuple[str, int, str]]) -> Finding:
    sonames = [f"{family}.so.{so}" for family, so, _ in missing]
    wheels = [p for p in snap.packages or () if p.name.startswith("nvidia-cudnn")] if snap.packages is not None else None
    need = ", ".join(f"{s} ({why})" for s, (_, _, why) in zip(sonames, missing))
    note = ""
    if wheels is not None and any(f == "libcudnn" for f, _, _ in missing):
        note = (" Installed cuDNN wheels: " + ", ".join(f"{p.name}=={p.version}" for p in wheels) + "." if wheels
                else " No nvidia-cudnn-* package is installed.")
    effect = ("Importing torch fails with 'OSError: " + sonames[0] + ": cannot open shared object file'."
              if build.name == "torch" else
              "TensorFlow logs 'Cannot dlopen some GPU libraries' and runs on the CPU.")
    commands = [] if _conda_build(snap, build) else _reinstall(matrix, build)
    if commands and build.name == "torch":
        fix = f"Reinstall torch {build.version} from its index: pip then installs the CUDA wheels it depends on."
    elif commands:
        fix = f"Install tensorflow[and-cuda] {build.version}: the extra pulls the CUDA and cuDNN wheels it was built with."
    elif _conda_build(snap, build):
        fix = f"Reinstall the conda packages of {build.name} so conda brings back its CUDA libraries."
    else:
        config = _tf_config(matrix, build) if build.name == "tensorflow" else None
        fix = (f"Install the CUDA {config.cuda} and cuDNN {config.cudnn} libraries TensorFlow {build.version} was built "
               "with, in a directory the loader searches (ldconfig, or LD_LIBRARY_PATH)." if config
               else f"Install the CUDA libraries {build.name} {build.version} was built with.")
    return finding(
        "cuda-library-missing", E, Category.MISSING_LIBRARY,
        f"{_label(build)} cannot load {', '.join(sonames)}: no copy is installed",
        why=f"{_label(build)} needs {need}. No copy of {'it' if len(sonames) == 1 else 'them'} was found on "
            f"LD_LIBRARY_PATH, in the loader cache, the system directories, the conda environment or the "
            f"environment's pip wheels.{note} {effect}",
        fix=fix, commands=commands,
        evidence=[f"frameworks[{build.name}]", "libraries", "packages"],
        source=_build_source(matrix, build) + [ref("errors.json", "libcudnn-cannot-open" if missing[0][0] == "libcudnn"
                                                    else "libcudart-cannot-open" if missing[0][0] == "libcudart"
                                                    else "libcublas-cannot-open")],
    )


# ---------------------------------------------------------------------------- shadowed copies


def check_shadowed(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """A copy on LD_LIBRARY_PATH with the soname of one of the framework's own copies, but
    another version, is what the framework loads. cuDNN is left to :func:`check_cudnn_version`."""
    out: List[Finding] = []
    for build in _builds(snap, pip_only=True):
        site = _site(build)
        pairs: List[Tuple[LibraryCopy, LibraryCopy]] = []
        for lib in snap.libraries or ():
            if lib.name.startswith("libcudnn") or lib.name in ("libcuda", "libnvidia-ml"):
                continue
            for own in [c for c in lib.copies if (c.found_via or "").startswith("pip") and site
                        and c.path.startswith(site + "/")]:
                order = load_order(lib, soname_major(own) or -1, site)
                first = order[0] if order else own
                if first is not own and _precise(first.version) and _precise(own.version) \
                        and vkey(first.version or "") != vkey(own.version or ""):
                    pairs.append((first, own))
        if pairs:
            out.append(_shadow_finding(snap, build, pairs))
    return out


def _shadow_finding(snap: Snapshot, build: FrameworkBuild, pairs: List[Tuple[LibraryCopy, LibraryCopy]]) -> Finding:
    older = [(a, b) for a, b in pairs if vkey(a.version or "") < vkey(b.version or "")]
    listed = "; ".join(f"{posixpath.basename(a.path)} {a.version} from {posixpath.dirname(a.path)} instead of "
                       f"its {b.version} ({b.found_via})" for a, b in pairs)
    dirs = list(dict.fromkeys(posixpath.dirname(a.path) for a, _ in pairs))
    command = _ld_path_without(snap, dirs)
    return finding(
        "cuda-library-shadowed", W if older else INFO, Category.LIBRARY_VERSION_CONFLICT,
        f"LD_LIBRARY_PATH puts {'older' if older else 'other'} CUDA libraries in front of {_label(build)}'s own: "
        + ", ".join(posixpath.basename(a.path) for a, _ in pairs),
        why=f"The loader searches LD_LIBRARY_PATH before the RUNPATH through which {build.name} finds the CUDA "
            f"wheels of its environment, so a library with the same soname there is the one it loads: {listed}."
            + (" An older library than the one the build was installed with can lack symbols it calls "
               "('undefined symbol ...') or behave differently." if older else
               " A newer copy of the same soname usually works, but the build was tested with its own."),
        fix=f"Take {', '.join(dirs)} out of LD_LIBRARY_PATH where it is set (~/.bashrc, a module file, the job "
            "script); the wheels need no LD_LIBRARY_PATH. A program that needs it can set it for itself.",
        commands=[command] if command else [],
        evidence=["env.LD_LIBRARY_PATH", "libraries", f"frameworks[{build.name}]"],
        source=[ref("errors.json", "undefined-symbol-cublaslt")],
    )


# ---------------------------------------------------------------------------- cuDNN versions


def _cudnn_reference(matrix: Matrix, build: FrameworkBuild) -> Tuple[Optional[str], List[str]]:
    """The cuDNN the build was compiled against (major.minor at least), and the record saying so."""
    if build.name == "torch":
        variant = _torch_variant(matrix, build)
        if variant is not None and variant.cudnn:
            return variant.cudnn, _build_source(matrix, build)
        return build.cudnn, []
    config = _tf_config(matrix, build)
    if _precise(build.cudnn):
        return build.cudnn, []
    if config is not None and (build.cudnn is None or major(build.cudnn) == config.cudnn_major):
        return config.cudnn, _build_source(matrix, build)
    return None, []


def check_cudnn_version(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    out: List[Finding] = []
    for build in _builds(snap, pip_only=True):
        reference, source = _cudnn_reference(matrix, build)
        soname = major(reference or "")
        if soname is None:
            continue
        order = load_order(snap.library("libcudnn"), soname, _site(build))
        if not order:
            continue  # missing: check_missing says so
        loaded = order[0]
        mismatch = _cudnn_cuda_mismatch(matrix, build, loaded)
        if mismatch:
            out.append(mismatch)
        elif _precise(loaded.version) and _precise(reference) and vkey(loaded.version or "")[:2] < vkey(reference or "")[:2]:
            out.append(_older_finding(snap, matrix, build, loaded, reference or "", order, source))
    return out


def _older_finding(snap: Snapshot, matrix: Matrix, build: FrameworkBuild, loaded: LibraryCopy, reference: str,
                   order: List[LibraryCopy], source: List[str]) -> Finding:
    rule = ("torch checks at first use that the cuDNN it loads has the same major and at least the minor it was "
            "compiled against ('cuDNN version incompatibility')" if build.name == "torch" else
            "TensorFlow refuses a cuDNN of a lower minor than it was compiled with ('Loaded runtime CuDNN "
            "library: ... but source was compiled with: ...') and convolutions fail")
    newer = [c for c in order[1:] if _precise(c.version) and vkey(c.version or "")[:2] >= vkey(reference)[:2]]
    commands: List[str] = []
    if loaded.found_via == "LD_LIBRARY_PATH" and newer:
        command = _ld_path_without(snap, [posixpath.dirname(loaded.path)])
        commands = [command] if command else []
        fix = f"Take {posixpath.dirname(loaded.path)} out of LD_LIBRARY_PATH; then {newer[0].path} ({newer[0].version}) loads."
    else:
        owner = _PIP_OWNER.match(loaded.found_via or "")
        pin = _pin(matrix, build, owner.group("dist")) if owner else None
        if owner and pin:
            commands = [f'pip install "{owner.group("dist")}{pin}"']
        elif not owner:
            commands = _reinstall(matrix, build)
        fix = f"Give {build.name} cuDNN {reference} or a newer {major(reference)}.x" + (
            f": the wheel comes before {loaded.path} in its search order." if commands and not owner else ".")
    return finding(
        "cudnn-older-than-build", E, Category.CUDNN_MISMATCH,
        f"{_label(build)} was built with cuDNN {reference} but would load cuDNN {loaded.version}",
        why=f"The first libcudnn.so.{major(reference)} in {build.name}'s search order is {_where(loaded)}. {rule}.",
        fix=fix, commands=commands,
        evidence=[f"frameworks[{build.name}].cudnn", "libraries", "env.LD_LIBRARY_PATH"],
        source=source + [ref("errors.json", "torch-cudnn-version-incompatibility" if build.name == "torch"
                             else "tf-cudnn-version-mismatch")],
    )


def _pin(matrix: Matrix, build: FrameworkBuild, dist: str) -> Optional[str]:
    """The requirement the build puts on ``dist`` ('==9.1.0.70'), from the data."""
    if build.name == "torch":
        variant = _torch_variant(matrix, build)
        return f"=={variant.cudnn}" if variant and variant.cudnn else None
    pins = matrix.ecosystem.tf_and_cuda_pins(build.version or "")
    spec: Optional[str] = pins.pin(dist) if pins else None
    return spec


def _cudnn_cuda_mismatch(matrix: Matrix, build: FrameworkBuild, loaded: LibraryCopy) -> Optional[Finding]:
    """The cuDNN that loads was made for another CUDA major than the build's."""
    cuda = major(build.cuda or "")
    if cuda is None:
        return None
    owner = _PIP_OWNER.match(loaded.found_via or "")
    suffix = _SUFFIX.match(owner.group("dist")) if owner else None
    if suffix and int(suffix.group("cuda")) != cuda:
        why = (f"{_label(build)} is a CUDA {build.cuda} build, but its libcudnn comes from "
               f"{owner.group('dist') if owner else ''} {owner.group('version') if owner else ''}, the cuDNN wheel for "
               f"CUDA {suffix.group('cuda')}: it links that CUDA major's cuBLAS and runtime.")
        source: List[str] = []
    elif _precise(loaded.version) and matrix.toolchain.cudnn_supports(loaded.version or "", build.cuda or "") is False:
        row = matrix.toolchain.cudnn(loaded.version or "")
        majors = ", ".join(str(c.major) for c in row.cuda) if row else "?"
        why = (f"{_label(build)} is a CUDA {build.cuda} build; the cuDNN it would load, {_where(loaded)}, is "
               f"built for CUDA {majors} only.")
        source = [ref("cudnn.json", row.version)] if row else []
    else:
        return None
    wheel = f"nvidia-cudnn-cu{cuda}"
    pin = _pin(matrix, build, wheel)
    expected = f"the cuDNN for CUDA {cuda} that {build.name} {build.version} expects" + (f" ({wheel}{pin})" if pin else "")
    return finding(
        "cudnn-cuda-mismatch", E, Category.CUDNN_MISMATCH,
        f"{_label(build)} would load a cuDNN made for another CUDA version",
        why=why,
        fix=(f"Replace {owner.group('dist')} with {expected}." if owner and suffix else
             f"Install {expected}; a wheel in its environment comes before {loaded.path} in its search order."
             if pin else f"Install {expected} where the loader finds it before {loaded.path}."),
        commands=[f"pip uninstall -y {quote(owner.group('dist'))}", f"pip install {quote(f'{wheel}{pin}')}"]
        if owner and suffix and pin else _reinstall(matrix, build),
        evidence=[f"frameworks[{build.name}].cuda", "libraries", "packages"],
        source=source,
    )


# ---------------------------------------------------------------------------- nvidia-* wheels twice


def check_wheel_conflicts(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """nvidia-X-cu11 next to nvidia-X-cu12 in one site directory (they unpack into the same
    nvidia/X/lib and overwrite each other's files), or one nvidia-* distribution in several
    versions (two site directories, or two dist-info folders)."""
    pip = [p for p in snap.packages or () if p.installer == "pip" and p.name.startswith("nvidia-")]
    out: List[Finding] = []
    groups: Dict[Tuple[str, str], List[Package]] = {}
    for p in pip:
        m = _SUFFIX.match(p.name)
        if m:
            groups.setdefault((p.location or "", m.group("base")), []).append(p)
    for (site, base), members in sorted(groups.items()):
        if len({p.name for p in members}) > 1:
            out.append(_suffix_finding(snap, site, base, members))
    names: Dict[str, List[Package]] = {}
    for p in pip:
        names.setdefault(p.name, []).append(p)
    for name, members in sorted(names.items()):
        if len({p.version for p in members}) > 1:
            out.append(_versions_finding(name, members))
    return out


def _suffix_finding(snap: Snapshot, site: str, base: str, members: List[Package]) -> Finding:
    wanted = {major(b.cuda or "") for b in cuda_builds(snap)
              if b.location and (b.location == site or b.location.startswith(site + "/"))}
    keep = [p for p in members if int(_SUFFIX.match(p.name).group("cuda")) in wanted] if wanted else []  # type: ignore[union-attr]
    drop = [p for p in members if p not in keep]
    listed = ", ".join(f"{p.name}=={p.version}" for p in members)
    if len(keep) == 1:
        fix = f"Keep {keep[0].name} (the CUDA major of the frameworks here), remove the others and reinstall it."
        commands = [f"pip uninstall -y {' '.join(quote(p.name) for p in drop)}",
                    f"pip install --force-reinstall --no-deps {quote(f'{keep[0].name}=={keep[0].version}')}"]
    else:
        fix = ("Frameworks of different CUDA majors need separate environments; keep one family per environment "
               "and reinstall the one you keep.")
        commands = []
    return finding(
        "nvidia-wheel-conflict", W, Category.LIBRARY_VERSION_CONFLICT,
        f"{listed} are installed together",
        why=f"In {site or 'one site directory'}, the wheels of {base} for several CUDA majors are installed: "
            f"{listed}. They unpack into the same nvidia/ folder, so the last one installed overwrote the other's "
            "files, and uninstalling either removes the libraries the other needs.",
        fix=fix, commands=commands,
        evidence=["packages"],
    )


def _versions_finding(name: str, members: List[Package]) -> Finding:
    listed = "; ".join(f"{p.version} in {p.location or '?'}" for p in members)
    same_site = len({p.location for p in members}) < len(members)
    return finding(
        "nvidia-wheel-conflict", W, Category.LIBRARY_VERSION_CONFLICT,
        f"{name} is installed {len(members)} times, in different versions",
        why=f"{name}: {listed}. "
            + ("Two dist-info folders in one site directory are left over from an interrupted install or "
               "uninstall; pip cannot tell which files belong to which. " if same_site else
               "Python imports the first copy on sys.path, while a framework's RUNPATH points into its own site "
               "directory: the two can load different versions in one process. ")
            + "The first one listed is the one Python sees first.",
        fix=f"Keep one {name}: remove the other copy with the pip of the environment (or user site) that holds it, "
            "then reinstall the one you keep.",
        commands=[f"python -m pip install --force-reinstall --no-deps {quote(f'{name}=={members[0].version}')}"],
        evidence=["packages"],
    )


CHECKS = (
    Check("cuda-libraries-present", check_missing, ("cuda-library-missing",), 4,
          "the CUDA libraries the frameworks link are installed"),
    Check("library-shadowing", check_shadowed, ("cuda-library-shadowed",), 4,
          "LD_LIBRARY_PATH does not shadow the frameworks' own CUDA libraries"),
    Check("cudnn-version", check_cudnn_version, ("cudnn-older-than-build", "cudnn-cuda-mismatch"), 4,
          "the cuDNN a framework loads is as new as it was built with, for its CUDA"),
    Check("nvidia-wheels", check_wheel_conflicts, ("nvidia-wheel-conflict",), 4,
          "each nvidia-* CUDA wheel is installed once"),
)
