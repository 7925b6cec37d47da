"""Building CUDA code: the toolkit an extension build would use against the framework's CUDA,
CUDA_HOME against the nvcc on PATH, the host compiler against the toolkit, and nvcc where the
environment will need one.

Running the frameworks' pip wheels needs no toolkit at all (they carry their CUDA libraries);
everything here matters when CUDA code is compiled: ``pip install`` of a package without a
wheel, ``torch.utils.cpp_extension``, CMake projects, XLA's ptxas. So most findings are
warnings, and none is raised on facts that are unknown.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, List, Optional, Tuple

from cudadoctor.matrix.versions import major, major_minor, vkey
from cudadoctor.model import Category, Compiler, Finding, FrameworkBuild, Severity, Snapshot, Toolkit
from cudadoctor.model.shell import assign, comment, prepend_path, quote
from cudadoctor.checks.base import Check, cuda_builds, finding, ref

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix
    from cudadoctor.matrix.toolchain import HostCompilerRow

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO

HOME_VARS = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")
# Variables only a CUDA build reads: their presence says this environment compiles CUDA code.
BUILD_VARS = ("TORCH_CUDA_ARCH_LIST", "CUDAHOSTCXX", "NVCC_CCBIN", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")


def _toolkits(snap: Snapshot) -> Tuple[Toolkit, ...]:
    return snap.toolkits or ()


def _usable(tk: Optional[Toolkit]) -> bool:
    """A toolkit that exists, has an nvcc and a known version."""
    return bool(tk and tk.exists is not False and tk.nvcc and vkey(tk.version or ""))


def _path_nvcc(snap: Snapshot) -> Optional[Toolkit]:
    """The toolkit of the nvcc first on PATH."""
    return next((tk for tk in _toolkits(snap) if any(v.startswith("PATH") for v in tk.found_via)), None)


def _via_variable(tk: Toolkit) -> List[str]:
    return [v for v in tk.found_via if v in HOME_VARS]


def _torch(snap: Snapshot) -> Optional[FrameworkBuild]:
    build = snap.framework("torch")
    return build if build and build.variant == "cuda" and build.cuda and build.version else None


def _mm(version: Optional[str]) -> str:
    return ".".join(str(p) for p in major_minor(version or ""))


def _best_for(snap: Snapshot, cuda: str) -> Optional[Toolkit]:
    """An installed toolkit of the same major.minor as ``cuda``, else of the same major."""
    usable = [tk for tk in _toolkits(snap) if _usable(tk)]
    same = [tk for tk in usable if major_minor(tk.version or "") == major_minor(cuda)]
    same_major = [tk for tk in usable if major(tk.version or "") == major(cuda)]
    found = same or same_major
    return found[0] if found else None


def _nvcc_of(tk: Toolkit) -> str:
    return tk.nvcc or posixpath.join(tk.root, "bin", "nvcc")


def _root(tk: Toolkit) -> str:
    """Where a toolkit is, for a sentence ('(nvcc on PATH)' is how typed facts name it)."""
    return "the nvcc on PATH" if tk.root.startswith("(") else tk.root


# ---------------------------------------------------------------------------- CUDA_HOME


def check_cuda_home_exists(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    out: List[Finding] = []
    for tk in _toolkits(snap):
        names = _via_variable(tk)
        if tk.exists is not False or not names:
            continue
        torch = _torch(snap)
        other = _best_for(snap, torch.cuda or "") if torch else None
        other = other or next((t for t in _toolkits(snap) if _usable(t)), None)
        command = assign(names[0], other.root) if other else f"unset {names[0]}"
        used = tk.active or names[0] in ("CUDA_HOME", "CUDA_PATH")
        out.append(finding(
            "cuda-home-not-found", W if used else INFO, Category.OTHER,
            f"{names[0]}={tk.root} names a folder that does not exist",
            why=f"{', '.join(names)} point{'s' if len(names) == 1 else ''} to {tk.root}, which does not exist. "
                "torch.utils.cpp_extension takes CUDA_HOME (then CUDA_PATH) as the toolkit without checking it, "
                f"so building a CUDA extension fails looking for {tk.root}/bin/nvcc; CMake and other build tools "
                "that read the variable fail the same way. Running the frameworks is not affected.",
            fix=(f"Point {names[0]} at an installed toolkit ({other.root}, CUDA {other.version})" if other else
                 f"Unset {names[0]} (no toolkit is installed)") + ", where it is set (~/.bashrc, the job script).",
            commands=[command],
            evidence=[f"env.{n}" for n in names] + ["toolkits"],
        ))
    return out


def check_cuda_home_vs_path(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    home = snap.active_toolkit
    path = _path_nvcc(snap)
    if not (home and path and home is not path and _via_variable(home) and _usable(home) and _usable(path)):
        return []
    if major_minor(home.version or "") == major_minor(path.version or ""):
        return []
    var = _via_variable(home)[0]
    torch = _torch(snap)
    target = home
    if torch and major_minor(path.version or "") == major_minor(torch.cuda or "") != major_minor(home.version or ""):
        target = path
    command = prepend_path(f"{home.root}/bin") if target is home else assign(var, path.root)
    about_torch = (f" torch {torch.version} is CUDA {torch.cuda}." if torch else "")
    return [finding(
        "cuda-home-nvcc-differ", W, Category.NVCC_FRAMEWORK_MISMATCH,
        f"{var} names CUDA {_mm(home.version)}, but nvcc on PATH is CUDA {_mm(path.version)}",
        why=f"{var}={home.root} (CUDA {home.version}) is what torch.utils.cpp_extension builds with, while "
            f"'nvcc', CMake (it takes the nvcc on PATH unless CUDACXX says otherwise) and Makefiles use "
            f"{_nvcc_of(path)} (CUDA {path.version}). What you build depends on the tool: a torch extension gets "
            f"CUDA {_mm(home.version)}, a CMake project or a plain nvcc command CUDA {_mm(path.version)}.{about_torch}",
        fix=f"Use one toolkit for both: CUDA {target.version} at {target.root}"
            + (f", the one matching torch's CUDA {torch.cuda}" if torch and target is path else "") + ".",
        commands=[command],
        evidence=["toolkits", f"env.{var}", "env.PATH"],
        source=[ref("errors.json", "torch-cpp-extension-cuda-mismatch")],
    )]


# ---------------------------------------------------------------------------- nvcc vs torch


def check_nvcc_torch(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    torch = _torch(snap)
    tk = snap.active_toolkit
    if not torch or not _usable(tk) or tk is None:
        return []
    have, want = major_minor(tk.version or ""), major_minor(torch.cuda or "")
    if len(have) < 2 or len(want) < 2 or have == want:
        return []
    major_differs = have[0] != want[0]
    other = _best_for(snap, torch.cuda or "")
    if other is not None and major(other.version or "") != want[0]:
        other = None
    if other is not None and other is not tk:
        fix = f"Point CUDA_HOME at the CUDA {other.version} toolkit already installed at {other.root}."
        commands = [assign("CUDA_HOME", other.root), prepend_path(f"{other.root}/bin")]
    else:
        fix = (f"To build extensions, install CUDA toolkit {torch.cuda} (NVIDIA's installers put it in "
               f"/usr/local/cuda-{torch.cuda}) and point CUDA_HOME at it; torch itself needs nothing.")
        commands = [f"{assign('CUDA_HOME', f'/usr/local/cuda-{torch.cuda}')}    {comment(f'after installing CUDA {torch.cuda}')}"]
    return [finding(
        "nvcc-torch-mismatch", W if major_differs else INFO, Category.NVCC_FRAMEWORK_MISMATCH,
        f"CUDA extensions would build with CUDA {_mm(tk.version)}, but torch {torch.version} is CUDA {torch.cuda}",
        why=f"The toolkit an extension build uses is {_root(tk)} (CUDA {tk.version}, found via "
            f"{', '.join(tk.found_via) or 'its default location'}). torch.utils.cpp_extension compares its nvcc "
            f"with torch.version.cuda ({torch.cuda}) and "
            + ("refuses a different major ('The detected CUDA version ... mismatches the version that was used to "
               "compile PyTorch')." if major_differs else "warns about a different minor; the build goes on.")
            + " The pip wheels of torch need no toolkit at all: this matters only when building CUDA extensions.",
        fix=fix, commands=commands,
        evidence=["toolkits", "frameworks[torch].cuda"],
        source=[ref("errors.json", "torch-cpp-extension-cuda-mismatch")],
    )]


# ---------------------------------------------------------------------------- host compiler


def _family(compiler: Compiler) -> Optional[str]:
    base = posixpath.basename(compiler.name)
    if "clang" in base:
        return "clang"
    if "gcc" in base or "g++" in base:
        return "gcc"
    return None


def _host_compilers(snap: Snapshot) -> List[Tuple[str, Compiler]]:
    """(family, compiler) nvcc may call: $CUDAHOSTCXX (CMake), $NVCC_CCBIN, $CC (torch passes it
    as -ccbin) where set, and the g++ (or gcc) on PATH, nvcc's default on Linux."""
    env = snap.env or {}
    compilers = snap.compilers or ()
    named = [env[v].split()[0] for v in ("CUDAHOSTCXX", "NVCC_CCBIN", "CC") if env.get(v, "").strip()]
    chosen = [c for c in compilers if c.name in named or (c.path and c.path in named)]
    chosen += [c for c in compilers if c.name == "g++"] or [c for c in compilers if c.name == "gcc"]
    out: List[Tuple[str, Compiler]] = []
    seen = set()
    for c in chosen:
        family = _family(c)
        if family and c.version and (family, c.version) not in seen:
            seen.add((family, c.version))
            out.append((family, c))
    return out


def check_host_compiler(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    if snap.host is not None and snap.host.os == "windows":
        return []
    toolkits: List[Toolkit] = []
    for tk in (snap.active_toolkit, _path_nvcc(snap)):
        if tk is not None and _usable(tk) and all(tk.root != t.root for t in toolkits):
            toolkits.append(tk)
    out: List[Finding] = []
    for tk in toolkits:
        for family, compiler in _host_compilers(snap):
            query = matrix.toolchain.gcc_supported if family == "gcc" else matrix.toolchain.clang_supported
            row = matrix.toolchain.compiler_limit(tk.version or "")
            if row is not None and query(tk.version or "", compiler.version or "") is False:
                out.append(_compiler_finding(snap, matrix, tk, family, compiler, row))
    return out


def _compiler_finding(snap: Snapshot, matrix: Matrix, tk: Toolkit, family: str, compiler: Compiler,
                      row: HostCompilerRow) -> Finding:
    low, high = (row.gcc_min, row.gcc_max) if family == "gcc" else (row.clang_min, row.clang_max)
    have = major(compiler.version or "") or 0
    too_new = high is not None and have > high
    limit = f"{family} {low}-{high}" if low is not None else f"{family} <= {high}"
    newer = _first_toolkit_accepting(matrix, family, have) if too_new else None
    cuda = _mm(tk.version)
    apt = bool(snap.host and (snap.host.distribution_id or "").startswith(("ubuntu", "debian")))
    commands: List[str] = []
    if family == "gcc" and too_new and high is not None:
        if apt:
            commands.append(f"sudo apt install gcc-{high} g++-{high}")
        commands.append(f"export CC=gcc-{high} CXX=g++-{high} CUDAHOSTCXX=g++-{high} NVCC_CCBIN=g++-{high}")
    return finding(
        "host-compiler-unsupported", W, Category.HOST_COMPILER_UNSUPPORTED,
        f"{compiler.name} {compiler.version} is {'newer' if too_new else 'older'} than CUDA {cuda}'s nvcc accepts ({limit})",
        why=f"nvcc of CUDA {tk.version}" + (f" ({_nvcc_of(tk)})" if "/" in _nvcc_of(tk) else "")
            + f" accepts {limit} as host compiler; it would call "
            f"{compiler.path or compiler.name} ({family} {compiler.version}) and stop with '#error -- unsupported "
            f"{'GNU' if family == 'gcc' else 'clang'} version!' when compiling CUDA code (extensions, CMake projects).",
        fix=(f"Build with {family} {high} or older" if too_new else f"Build with {family} {low} or newer")
            + (f", or use CUDA {newer} or newer, whose nvcc accepts {family} {have}" if newer else "")
            + ". (nvcc's '-allow-unsupported-compiler' skips the check, at your own risk.)",
        commands=commands,
        evidence=["compilers", "toolkits"],
        source=[ref("host_compilers.json", row.cuda), ref("errors.json", "nvcc-unsupported-gcc")],
    )


def _first_toolkit_accepting(matrix: Matrix, family: str, have: int) -> Optional[str]:
    for row in matrix.toolchain.compilers:
        limit = matrix.toolchain.compiler_limit(row.cuda)
        high = (limit.gcc_max if family == "gcc" else limit.clang_max) if limit else None
        if high is not None and high >= have:
            return str(row.cuda)
    return None


# ---------------------------------------------------------------------------- no nvcc


def check_nvcc_needed(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """No nvcc anywhere, while the snapshot shows it will be needed: a tensorflow[and-cuda]
    release whose pins (tensorflow.json) include the nvcc wheel (XLA compiles with its ptxas at
    run time) without that wheel, or variables only a CUDA build reads."""
    if snap.toolkits is None or snap.errors_of("toolkits") or any(_usable(tk) or tk.nvcc for tk in _toolkits(snap)):
        return []
    if snap.host is not None and snap.host.os not in ("linux", None):
        return []
    out: List[Finding] = []
    installed = {p.name for p in snap.packages or ()}
    for build in cuda_builds(snap):
        pins = matrix.ecosystem.tf_and_cuda_pins(build.version or "") if build.name == "tensorflow" else None
        wheel = next((name for name, _ in pins.pins if name.startswith("nvidia-cuda-nvcc-cu")), None) if pins else None
        if snap.packages is None or wheel is None or wheel in installed:
            continue
        spec = pins.pin(wheel) if pins else None
        out.append(finding(
            "nvcc-not-found", W, Category.MISSING_LIBRARY,
            f"tensorflow {build.version} will look for ptxas, and neither {wheel} nor a CUDA toolkit is installed",
            why=f"tensorflow[and-cuda]=={build.version} installs {wheel}{spec or ''}: XLA compiles the kernels it "
                "generates with that wheel's ptxas at run time. It is not installed and no toolkit with nvcc "
                "was found, so XLA warns that it cannot find ptxas and falls back to the driver's PTX compiler, "
                "or fails to compile.",
            fix=f"Install the wheel tensorflow {build.version} pins.",
            commands=[f"pip install {quote(wheel + (spec or ''))}"],
            evidence=["packages", "toolkits", "frameworks[tensorflow]"],
            source=[ref("tensorflow.json", f"and_cuda_pins {pins.version}")] if pins else [],
        ))
    env = snap.env or {}
    set_vars = [v for v in BUILD_VARS if env.get(v)]
    if set_vars and not out:
        torch = _torch(snap)
        version = torch.cuda if torch else None
        out.append(finding(
            "nvcc-not-found", W, Category.MISSING_LIBRARY,
            f"{', '.join(set_vars)} {'is' if len(set_vars) == 1 else 'are'} set for CUDA builds, but no nvcc is installed",
            why=f"{', '.join(f'{v}={env[v]}' for v in set_vars)}: only builds of CUDA code read "
                f"{'this variable' if len(set_vars) == 1 else 'these variables'}, and no CUDA toolkit with nvcc was "
                "found (CUDA_HOME, CUDA_PATH, PATH, /usr/local/cuda, conda, pip). Building CUDA extensions "
                "(torch.utils.cpp_extension: 'CUDA_HOME environment variable is not set') will fail; running "
                "the frameworks' pip wheels does not need a toolkit.",
            fix=(f"Install CUDA toolkit {version} (torch's CUDA) and set CUDA_HOME to it" if version else
                 "Install a CUDA toolkit of your framework's CUDA version and set CUDA_HOME to it")
                + ", or unset the variables if you do not build CUDA code.",
            commands=[f"{assign('CUDA_HOME', f'/usr/local/cuda-{version}')}    {comment(f'after installing CUDA {version}')}"]
            if version else [],
            evidence=["toolkits"] + [f"env.{v}" for v in set_vars],
            source=[ref("errors.json", "torch-cpp-extension-cuda-home-not-set")],
        ))
    return out


CHECKS = (
    Check("cuda-home", check_cuda_home_exists, ("cuda-home-not-found",), 5,
          "CUDA_HOME and CUDA_PATH name existing toolkits"),
    Check("cuda-home-vs-path", check_cuda_home_vs_path, ("cuda-home-nvcc-differ",), 5,
          "CUDA_HOME and the nvcc on PATH are the same CUDA version"),
    Check("nvcc-torch", check_nvcc_torch, ("nvcc-torch-mismatch",), 5,
          "the toolkit extensions build with matches torch's CUDA"),
    Check("host-compiler", check_host_compiler, ("host-compiler-unsupported",), 5,
          "nvcc accepts the host compiler"),
    Check("nvcc-needed", check_nvcc_needed, ("nvcc-not-found",), 5,
          "an nvcc is installed where the environment needs one"),
)
