"""Do the installed framework builds fit this machine? CPU-only builds next to a usable GPU, a
framework CUDA the driver cannot run (or runs only through minor-version compatibility), GPUs
the build has no kernels for, Python versions without wheels, torch companions of another
release, and variants that do not belong to this stack (builds_arch.py, builds_variant.py).

Every limit comes from the matrix; fixes that install torch come from :mod:`cudadoctor.planner.torch`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Tuple

from cudadoctor.matrix.archs import PTX_JIT, SASS
from cudadoctor.matrix.versions import major, major_minor
from cudadoctor.model import Category, Finding, FrameworkBuild, Severity, Snapshot
from cudadoctor.checks.base import Check, driver_version, os_of, ref
from cudadoctor.checks.driver_fix import upgrade_advice
from cudadoctor.checks.builds_arch import check_arch, check_companions, check_python, check_tf_windows
from cudadoctor.checks.builds_facts import (
    RUNTIME_FRAMEWORKS,
    GpuFact,
    build_version,
    driver_cuda,
    finding,
    gpu_facts,
    label,
    normalized,
    support,
    tf_arch_lists,
    torch_arch_lists,
    torch_fix,
    usable_gpus,
    wheel_platform,
)
from cudadoctor.checks.builds_variant import (
    check_cupy,
    check_jax_plugin,
    check_onnxruntime,
    check_tf_and_cuda,
    cupy_alternative,
    cupy_install,
    install_jax,
    install_ort,
    jax_alternative,
)

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

E, W = Severity.ERROR, Severity.WARNING
NOT_CUDA = {"cpu": "CPU-only", "rocm": "ROCm", "xpu": "XPU"}  # variant -> how a title names it


# ---------------------------------------------------------------------------- CPU-only builds


GPU_FRAMEWORKS = ("torch", "tensorflow", "jax", "onnxruntime", "cupy")


def check_cpu_only(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """A build without CUDA on a machine whose GPU and driver a CUDA build could use.

    Severity means consequence (shared/DESIGN.md): an error when the user evidently wants that
    framework on the GPU (it is the only framework here, or the error message shows it failing on
    the GPU); a note when other frameworks here use the GPU and nothing says this one should (the
    CPU onnxruntime package beside a CUDA torch is there for ONNX export; ``cudadoctor check
    --require onnxruntime`` makes it an error)."""
    if not usable_gpus(snap):
        return []
    facts = gpu_facts(snap, matrix)
    names = ", ".join(dict.fromkeys(g.name for g in facts)) or "an NVIDIA GPU"
    builds = normalized(snap, matrix)
    on_gpu = [b for b in builds if b.name in GPU_FRAMEWORKS and b.variant == "cuda"]
    out = []
    for b in builds:
        if b.name not in GPU_FRAMEWORKS or b.variant not in NOT_CUDA:
            continue
        if b.name == "tensorflow" and _native_windows(snap) and not _tf_windows_gpu(matrix, b):
            continue  # no CUDA build exists there: tensorflow-windows-gpu says so
        text, commands, source = _cpu_fix(snap, matrix, b, facts)
        kind = NOT_CUDA[b.variant or "cpu"]
        others = [x for x in on_gpu if x.name != b.name]
        if others and not _wanted_on_gpu(snap, matrix, b):
            users = ", ".join(label(x) for x in others)
            out.append(finding(
                "cpu-only-build", Severity.INFO, Category.CPU_ONLY_BUILD,
                f"{label(b)} is a {kind} build; {users} use{'s' if len(others) == 1 else ''} the GPU",
                why=(f"{_cpu_why(snap, matrix, b, names)} Nothing here needs {b.name} on the GPU ({users} "
                     f"{'does' if len(others) == 1 else 'do'} the GPU work; a {kind} {b.name} beside them is usual, "
                     f"e.g. for ONNX export or CPU inference), so this is a note, not a problem. To run {b.name} on "
                     f"the GPU too:"),
                fix=text, commands=commands,
                evidence=[f"frameworks.{b.name}.variant", "gpus", "driver.loaded"],
                source=source,
            ))
            continue
        out.append(finding(
            "cpu-only-build", E, Category.CPU_ONLY_BUILD,
            f"{label(b)} is a {kind} build: it cannot use the {names}",
            why=_cpu_why(snap, matrix, b, names),
            fix=text, commands=commands,
            evidence=[f"frameworks.{b.name}.variant", "gpus", "driver.loaded"],
            source=source,
        ))
    return out


def _wanted_on_gpu(snap: Snapshot, matrix: Matrix, b: FrameworkBuild) -> bool:
    """Whether something says this framework should use the GPU: the error message the user saw
    is that framework's GPU failure (a signature of that framework matches it)."""
    if not snap.error_message:
        return False
    from cudadoctor.diagnosis.matching import match

    return any(b.name in m.signature.frameworks for m in match(snap.error_message, matrix))


def _native_windows(snap: Snapshot) -> bool:
    return bool(snap.host and snap.host.os == "windows" and not snap.host.wsl)


def _tf_windows_gpu(matrix: Matrix, b: FrameworkBuild) -> bool:
    version = build_version(b)
    return bool(version and matrix.ecosystem.tf_native_windows_gpu(version))


def _cpu_why(snap: Snapshot, matrix: Matrix, b: FrameworkBuild, names: str) -> str:
    driver = driver_version(snap)
    machine = f"this machine has the {names} and driver {driver or '(loaded)'}"
    version = build_version(b) or ""
    if b.name == "torch":
        why = (f"torch.version.cuda is None in {label(b)}, so torch.cuda.is_available() is False although {machine}.")
        pypi = matrix.pytorch.pypi_variant(version, wheel_platform(snap)) if version else None
        if pypi is not None and pypi.kind == "cpu" and b.variant == "cpu":
            why += (f" A plain 'pip install torch' on {wheel_platform(snap)} gets the CPU build; the CUDA builds "
                    "come from PyTorch's own index.")
        return why
    if b.name == "tensorflow":
        return (f"{label(b)} was built without CUDA (is_cuda_build is False), so tf.config.list_physical_devices('GPU') "
                f"is empty although {machine}.")
    if b.name == "jax":
        return (f"jaxlib is installed without a CUDA plugin, so JAX runs on the CPU ('An NVIDIA GPU may be present on "
                f"this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.') although {machine}.")
    if b.name == "onnxruntime":
        return (f"{label(b)} is the CPU package: it has no CUDAExecutionProvider (that comes with onnxruntime-gpu), "
                f"although {machine}.")
    return f"{label(b)} targets {b.variant}, not CUDA, although {machine}."


def _cpu_fix(snap: Snapshot, matrix: Matrix, b: FrameworkBuild, facts: List[GpuFact]) -> Tuple[str, List[str], Tuple[str, ...]]:
    version = build_version(b)
    if b.name == "torch":
        return torch_fix(snap, matrix, [g.cc for g in facts], keep=version, lead="Install the CUDA build")
    if b.name == "jax":
        return install_jax(snap, matrix, b)
    if b.name == "onnxruntime":
        return install_ort(snap, matrix, b)
    if b.name == "cupy":
        return cupy_install(snap, matrix, b, reason="Install CuPy for CUDA")
    return _tf_cuda_install(snap, matrix, b)


def _tf_cuda_install(snap: Snapshot, matrix: Matrix, b: FrameworkBuild) -> Tuple[str, List[str], Tuple[str, ...]]:
    version = build_version(b)
    dist = (b.distribution or "tensorflow").split("==")[0]
    if not version:
        return "Install the CUDA build of TensorFlow.", [], ()
    series = ".".join(str(x) for x in major_minor(version))
    eco = matrix.ecosystem
    windows = _native_windows(snap)
    cfg = eco.tf_config(version, "windows" if windows else "linux")
    source = (ref("tensorflow.json", cfg.version),) if cfg else ()
    if not windows and eco.tensorflow.has_and_cuda_extra(version):
        install = f'pip install "tensorflow[and-cuda]=={series}.*"'
    else:
        install = f'pip install "{cfg.package if cfg else "tensorflow"}=={series}.*"'
    needs = f" (CUDA {cfg.cuda} and cuDNN {cfg.cudnn})" if cfg and not cfg.and_cuda_extra else ""
    return (f"Install the CUDA build of TensorFlow {series}{needs}:", [f"pip uninstall -y {dist}", install], source)


# ---------------------------------------------------------------------------- driver vs the build's CUDA


def check_driver_for_build(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """The framework's CUDA runtime against the driver: NVIDIA's per-release minimum (native) and
    the minor-version-compatibility floor of the major."""
    driver = driver_version(snap)
    if not driver:
        return []
    out = []
    facts = gpu_facts(snap, matrix)
    for b in normalized(snap, matrix):
        if b.name not in RUNTIME_FRAMEWORKS or b.variant != "cuda" or not b.cuda:
            continue
        if (b.name == "jax" and jax_alternative(snap, matrix, b)) or (b.name == "cupy" and cupy_alternative(snap, matrix, b)):
            continue  # another variant of the same release fits: builds_variant reports it
        ds = matrix.cuda.driver_support(driver, b.cuda, os_of(snap))
        if ds.kind == "too_old" and b.details.get("cuda_available") == "true":
            out.append(_forward_compat(snap, matrix, b, ds, driver))
        elif ds.kind == "too_old":
            out.append(_too_old(snap, matrix, b, ds, driver, facts))
        elif ds.kind == "minor_compat":
            out.append(_minor_compat(snap, matrix, b, ds, driver, facts))
    return out


def _sources(ds: Any) -> List[str]:
    out = []
    if ds.release is not None:
        out.append(ref("cuda_toolkits.json", ds.release.cuda))
    if ds.floor_record is not None:
        out.append(ref("cuda_minor_compat.json", ds.floor_record.cuda_major))
    return out


def _cuda_name(cuda: str) -> str:
    return ".".join(str(x) for x in major_minor(cuda)) if len(major_minor(cuda)) == 2 else f"{cuda}.x"


def _too_old(snap: Snapshot, matrix: Matrix, b: FrameworkBuild, ds: Any, driver: str, facts: List[GpuFact]) -> Finding:
    dcuda = driver_cuda(snap, matrix)
    need = (f"a driver that supports CUDA {major(b.cuda or '')}.x (>= {ds.floor})" if ds.floor
            else f"a driver that supports CUDA {_cuda_name(b.cuda or '')} (>= {ds.required})")
    why = f"{label(b)} needs {need}; this driver is {driver}" + (f" (CUDA {dcuda})." if dcuda else ".")
    if ds.floor and ds.required:
        why += f" CUDA {_cuda_name(b.cuda or '')}'s own minimum, PTX JIT included, is {ds.required}."
    if b.name == "torch" and dcuda and len(major_minor(dcuda)) == 2:
        mm = major_minor(dcuda)
        why += (" torch.cuda.is_available() returns False with 'The NVIDIA driver on your system is too old "
                f"(found version {mm[0] * 1000 + mm[1] * 10})'.")
    else:
        why += " CUDA calls fail with 'CUDA driver version is insufficient for CUDA runtime version'."
    upgrade, commands = _upgrade(snap, matrix, ds.required or ds.floor, facts)
    alt_text, alt_commands, alt_source = _alternative(snap, matrix, b, facts)
    if commands and alt_commands:
        alt_commands[0] += "    # instead of the driver upgrade"
    fix = " ".join(t for t in (upgrade, alt_text) if t)
    return finding(
        "driver-too-old-for-build", E, Category.DRIVER_TOO_OLD,
        f"{label(b)} needs a newer NVIDIA driver than {driver}",
        why=why, fix=fix, commands=commands + alt_commands,
        evidence=["driver.driver_version", "driver.cuda_driver_version", f"frameworks.{b.name}.cuda"],
        source=_sources(ds) + list(alt_source),
    )


def _forward_compat(snap: Snapshot, matrix: Matrix, b: FrameworkBuild, ds: Any, driver: str) -> Finding:
    """The build needs a newer driver, yet the framework reported CUDA available: NVIDIA's CUDA
    forward compatibility (the cuda-compat package, datacenter GPUs) is what runs it."""
    dcuda = driver_cuda(snap, matrix)
    need = ds.floor or ds.required
    return finding(
        "cuda-forward-compat", Severity.INFO, Category.DRIVER_TOO_OLD,
        f"{label(b)} runs on driver {driver} only through CUDA forward compatibility",
        why=(f"{label(b)} is built for CUDA {_cuda_name(b.cuda or '')}, which needs driver {need} or newer; this "
             f"driver is {driver}" + (f" (CUDA {dcuda})" if dcuda else "") + ", yet torch.cuda.is_available() "
             "returned True. Only NVIDIA's CUDA forward-compatibility libraries (the cuda-compat package, which NGC "
             "containers ship) make that work, and only on datacenter GPUs. The same install fails on a machine "
             "without them, or on a GeForce/RTX workstation GPU."),
        fix=f"Nothing to do while it works here. To run without forward compatibility, upgrade the driver to "
            f"{need} or newer.",
        evidence=["driver.driver_version", f"frameworks.{b.name}.cuda", f"frameworks.{b.name}.details.cuda_available"],
        source=_sources(ds),
    )


def _upgrade(snap: Snapshot, matrix: Matrix, target: Optional[str], facts: List[GpuFact]) -> Tuple[str, List[str]]:
    """The driver upgrade to ``target`` or newer: branch, kernel modules and packages (checks/driver_fix.py)."""
    if not target:
        return "", []
    advice = upgrade_advice(snap, matrix, target, [g.cc for g in facts])
    return advice.text, list(advice.commands)


def _alternative(snap: Snapshot, matrix: Matrix, b: FrameworkBuild, facts: List[GpuFact]) -> Tuple[str, List[str], Tuple[str, ...]]:
    """Keep the driver: a build of the framework for the CUDA this driver runs."""
    dcuda = driver_cuda(snap, matrix)
    keep = f"Or keep this driver{f' (CUDA {dcuda})' if dcuda else ''} and install"
    if b.name == "torch":
        text, commands, source = torch_fix(snap, matrix, [g.cc for g in facts], keep=build_version(b), lead=keep)
        return text, commands, source
    if b.name == "tensorflow":
        driver = driver_version(snap) or ""
        rows = [c for c in matrix.ecosystem.tensorflow.configs if c.platform == "linux"
                and matrix.cuda.driver_support(driver, c.cuda, os_of(snap)).kind in ("native", "minor_compat")]
        if rows:
            row = rows[-1]
            series = ".".join(str(x) for x in major_minor(row.version))
            return (f"{keep} TensorFlow {series}, built with CUDA {row.cuda} and cuDNN {row.cudnn}:",
                    [f'pip install "tensorflow=={series}.*"'], (ref("tensorflow.json", row.version),))
    if b.name == "onnxruntime" and dcuda:
        return install_ort(snap, matrix, b, cuda_major=major(dcuda), lead=keep)
    return "", [], ()


def _minor_compat(snap: Snapshot, matrix: Matrix, b: FrameworkBuild, ds: Any, driver: str, facts: List[GpuFact]) -> Finding:
    dcuda = driver_cuda(snap, matrix)
    lists = torch_arch_lists(snap, matrix, b) if b.name == "torch" else tf_arch_lists(b) if b.name == "tensorflow" else None
    ptx = [g for g in facts if lists is not None and support(lists, g)[0] == PTX_JIT]
    cuda = _cuda_name(b.cuda or "")
    base = (f"{label(b)} is built with CUDA {cuda}, whose own minimum driver is {ds.required}; driver {driver}"
            + (f" supports CUDA {dcuda} and" if dcuda else "")
            + f" runs CUDA {major(cuda)}.x builds only through minor-version compatibility (>= {ds.floor}).")
    upgrade, commands = _upgrade(snap, matrix, ds.required, facts)
    evidence = ["driver.driver_version", f"frameworks.{b.name}.cuda"]
    if ptx:
        names = ", ".join(f"{g.label}" for g in ptx)
        text, alt, alt_source = _alternative(snap, matrix, b, facts)
        if commands and alt:
            alt[0] += "    # instead of the driver upgrade"
        return finding(
            "driver-too-old-for-ptx-jit", E, Category.DRIVER_TOO_OLD,
            f"{label(b)} needs PTX JIT on {names}, which driver {driver} cannot do for CUDA {cuda} PTX",
            why=base + f" {label(b)} has no SASS for {names}, only PTX ({lists.describe() if lists else ''}); "
                f"a driver older than CUDA {cuda} cannot JIT-compile CUDA {cuda} PTX: kernels fail with 'the provided "
                "PTX was compiled with an unsupported toolchain'.",
            fix=" ".join(t for t in (upgrade, text) if t), commands=commands + alt,
            evidence=evidence + [f"gpus[{g.gpu.index}].compute_capability" for g in ptx],
            source=_sources(ds) + list(alt_source) + list(lists.source if lists else ()),
        )
    # only a positive fact: every GPU's kind is SASS (a GPU the build has no code for is
    # arch-unsupported's story, not "loads without JIT")
    sass = (" Every GPU has SASS in this build, so its own kernels load without JIT."
            if lists is not None and facts and all(support(lists, g)[0] == SASS for g in facts) else "")
    return finding(
        "driver-minor-version-compat", W, Category.DRIVER_TOO_OLD,
        f"{label(b)} runs on driver {driver} only through CUDA minor-version compatibility",
        why=base + sass + f" What needs the newer driver: PTX from CUDA {cuda} cannot be JIT-compiled (kernels shipped "
            "only as PTX, and code that generates PTX at run time, fail with 'the provided PTX was compiled with an "
            f"unsupported toolchain'), and CUDA APIs newer than {dcuda or 'the driver'} return "
            "cudaErrorCallRequiresNewerDriver.",
        fix=upgrade or None, commands=commands,
        evidence=evidence, source=_sources(ds) + list(lists.source if lists else ()),
    )


CHECKS = (
    Check("cpu-only-build", check_cpu_only, ("cpu-only-build",), 3,
          "frameworks next to a usable GPU are CUDA builds"),
    Check("driver-for-build", check_driver_for_build,
          ("driver-too-old-for-build", "driver-too-old-for-ptx-jit", "driver-minor-version-compat",
           "cuda-forward-compat"), 3,
          "the driver runs each framework's CUDA"),
    Check("build-arch", check_arch, ("arch-unsupported", "arch-ptx-jit"), 3,
          "each framework build has kernels for every GPU"),
    Check("python-wheels", check_python, ("python-unsupported",), 3,
          "each framework release has wheels for this Python"),
    Check("torch-companions", check_companions, ("companion-version-mismatch",), 3,
          "torchvision and torchaudio match torch"),
    Check("tensorflow-windows", check_tf_windows, ("tensorflow-windows-gpu",), 3,
          "TensorFlow's GPU support exists on this platform"),
    Check("cupy-variant", check_cupy, ("cupy-wrong-cuda-major", "cupy-multiple-distributions"), 3,
          "one CuPy distribution, for the stack's CUDA major"),
    Check("jax-plugin", check_jax_plugin, ("jax-plugin-wrong-cuda-major",), 3,
          "JAX's CUDA plugin is for a CUDA major the driver runs"),
    Check("onnxruntime-variant", check_onnxruntime, ("onnxruntime-wrong-cuda-major",), 3,
          "onnxruntime-gpu is built for the stack's CUDA major"),
    Check("tensorflow-and-cuda", check_tf_and_cuda, ("tensorflow-without-and-cuda",), 3,
          "TensorFlow's CUDA libraries are installed"),
)
