"""Build checks about what a release was made for: the GPUs it has kernels for, the Python
versions it has wheels for, the torchvision/torchaudio releases paired with torch, and
TensorFlow's GPU support on native Windows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

from cudadoctor.matrix.archs import PTX_JIT, SASS, UNSUPPORTED, support_of
from cudadoctor.matrix.versions import major, major_minor, vkey
from cudadoctor.model import Category, Finding, FrameworkBuild, Severity, Snapshot
from cudadoctor.model.shell import quote
from cudadoctor.checks.base import driver_version, gpus, os_of, ref
from cudadoctor.checks.builds_facts import (
    ArchLists,
    GpuFact,
    build_version,
    finding,
    gpu_facts,
    is_conda,
    label,
    normalized,
    python_mm,
    support,
    tf_arch_lists,
    torch_arch_lists,
    torch_fix,
    torch_plan,
    torch_packages,
    torch_variant_name,
    wheel_platform,
)

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO


# ---------------------------------------------------------------------------- kernels for every GPU


def check_arch(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """Every GPU against each build's arch list (SASS, else PTX), or the release's minimum
    compute capability where only that is known."""
    facts = gpu_facts(snap, matrix)
    if not facts:
        return []
    out: List[Finding] = []
    for b in normalized(snap, matrix):
        if b.variant != "cuda":
            continue
        lists = torch_arch_lists(snap, matrix, b) if b.name == "torch" else \
            tf_arch_lists(b) if b.name == "tensorflow" else None
        if lists is not None:
            out.extend(_by_lists(snap, matrix, b, lists, facts))
            continue
        floor = _min_cc(matrix, b)
        if floor is not None:
            out.extend(_by_floor(snap, matrix, b, floor, facts))
    return out


def _gpus_label(group: Sequence[GpuFact], facts: Sequence[GpuFact]) -> str:
    """'NVIDIA GeForce RTX 5090 (sm_120)' when every GPU is in the group, else by index."""
    if len(group) == len(facts):
        return ", ".join(dict.fromkeys(f"{g.name} ({g.sm})" for g in group))
    return ", ".join(g.label for g in group)


def _by_lists(snap: Snapshot, matrix: Matrix, b: FrameworkBuild, lists: ArchLists, facts: List[GpuFact]) -> List[Finding]:
    results = [(g, support(lists, g)) for g in facts]
    bad = [g for g, (kind, _) in results if kind == UNSUPPORTED]
    jit = [(g, target) for g, (kind, target) in results if kind == PTX_JIT]
    out = []
    where = f"(from {lists.origin})"
    if bad:
        what = _gpus_label(bad, facts)
        why = (f"{label(b)} has {lists.describe()} {where}. {what} needs SASS of the same major at or below its "
               "compute capability, or PTX at or below it to JIT-compile; the build has neither, so CUDA kernels fail "
               "with 'no kernel image is available for execution on the device'.")
        if b.name == "torch":
            why += _which_torch_builds(snap, matrix, b, bad)
        text, commands, source = _arch_fix(snap, matrix, b, facts, bad)
        out.append(finding(
            "arch-unsupported", E, Category.ARCH_UNSUPPORTED, f"{label(b)} cannot run on {what}",
            why=why, fix=text, commands=commands,
            evidence=[f"frameworks.{b.name}"] + [f"gpus[{g.gpu.index}].compute_capability" for g in bad],
            source=list(lists.source) + list(source),
        ))
    if jit:
        what = _gpus_label([g for g, _ in jit], facts)
        targets = ", ".join(dict.fromkeys(t or "" for _, t in jit))
        text, commands, source = ("", [], ())
        if b.name == "torch":
            plan, _ = torch_plan(snap, matrix, [g.cc for g in facts])
            if plan is not None and not plan.ptx_jit:
                text = f"torch {plan.label} has SASS for every GPU here:"
                commands = plan.commands(torch_packages(snap), [p for p in torch_packages(snap)])
                source = plan.sources
        out.append(finding(
            "arch-ptx-jit", INFO, Category.ARCH_UNSUPPORTED, f"{label(b)} runs on {what} only through PTX JIT compilation",
            why=f"{label(b)} has {lists.describe()} {where}: no SASS for {what}, so the driver JIT-compiles its "
                f"{targets} PTX at first use. The first run of each kernel is slow (minutes for a large framework; "
                "the result is cached in ~/.nv/ComputeCache, bounded by CUDA_CACHE_MAXSIZE), and the JIT-compiled "
                "code may be slower than a build with SASS for this GPU.",
            fix=text or None, commands=commands,
            evidence=[f"frameworks.{b.name}"] + [f"gpus[{g.gpu.index}].compute_capability" for g, _ in jit],
            source=list(lists.source) + list(source),
        ))
    return out


def _which_torch_builds(snap: Snapshot, matrix: Matrix, b: FrameworkBuild, bad: Sequence[GpuFact]) -> str:
    """' torch builds with SASS for sm_120 exist from 2.7.0+cu128.' / ' The newest ... that driver
    570.124.06 runs is 2.11.0+cu128.' The newest named is one this driver runs (natively, or through
    minor-version compatibility: SASS needs no JIT), never merely the newest that exists."""
    out = []
    platform = wheel_platform(snap)
    driver, os_name = driver_version(snap), os_of(snap)
    for g in {g.sm: g for g in bad}.values():
        # matrix.pytorch.releases_with_arch, SASS only (its rule, without a release lookup per variant)
        sass = [(rel.version, var) for rel in matrix.pytorch.releases for var in rel.variants
                if platform in var.platforms and _sass(var.arch_lists(platform), g.cc_tuple)]
        names = [f"{v}+{var.name}" for v, var in sass]
        runs = [f"{v}+{var.name}" for v, var in sass if driver and var.cuda
                and matrix.cuda.driver_support(driver, var.cuda, os_name).kind in ("native", "minor_compat")]
        if not sass:
            out.append(f" No torch release has SASS for {g.sm}.")
        elif vkey(build_version(b) or "") < vkey(sass[0][0]):
            out.append(f" torch builds with SASS for {g.sm} exist from {names[0]}.")
        elif not driver:
            out.append(f" The newest torch build with SASS for {g.sm} is {names[-1]}.")
        elif runs:
            out.append(f" The newest torch build with SASS for {g.sm} that driver {driver} runs is {runs[-1]}.")
        else:
            out.append(f" Driver {driver} runs no torch build with SASS for {g.sm} (the newest is {names[-1]}).")
    return "".join(out)


def _sass(lists: Tuple[Tuple[str, ...], Tuple[str, ...], str, str], cc: Tuple[int, int]) -> bool:
    return support_of(lists[0], lists[1], cc)[0] == SASS


def _arch_fix(snap: Snapshot, matrix: Matrix, b: FrameworkBuild, facts: List[GpuFact],
              bad: List[GpuFact]) -> Tuple[str, List[str], Tuple[str, ...]]:
    text, commands, source = "", [], ()  # type: Tuple[str, List[str], Tuple[str, ...]]
    if b.name == "torch":
        # the installed build is the one that fails here, whatever the data says of its PTX
        text, commands, source = torch_fix(snap, matrix, [g.cc for g in facts], keep=build_version(b), lead="Install",
                                           avoid=b.version)
        commands = list(commands)
    elif b.name == "tensorflow":
        text, commands, source = _tf_for(matrix, bad)
    return _or_hide(text, commands, facts, bad), commands, source


def _or_hide(text: str, commands: List[str], facts: Sequence[GpuFact], bad: Sequence[GpuFact]) -> str:
    """On a mixed machine, the other way out: hide the GPUs the build cannot use (appends the command)."""
    good = [g for g in facts if g not in bad]
    if not good:
        return text.strip()
    which = ", ".join(f"GPU {g.gpu.index}" for g in bad)
    commands.append(f"export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={','.join(str(g.gpu.index) for g in good)}"
                    "    # nvidia-smi's numbering")
    lead = f"{text.strip().rstrip(':')}, which has kernels for every GPU here; or" if text.strip() else "Or"
    return f"{lead} keep this build and hide {which} from CUDA programs (the last command)."


def _min_cc(matrix: Matrix, b: FrameworkBuild) -> Optional[Tuple[str, str]]:
    """(minimum compute capability, record) where a release states only its floor."""
    version = build_version(b)
    if not version:
        return None
    eco = matrix.ecosystem
    if b.name == "tensorflow":
        floor = eco.tf_min_compute_capability(version)
        return (floor, ref("tensorflow.json", "min_compute_capability")) if floor else None
    cuda_major = major(b.cuda) if b.cuda else None
    if b.name == "jax" and cuda_major is not None:
        rel = eco.jax_release(version)
        build = rel.build(cuda_major) if rel else None
        if rel and build and build.min_compute_capability:
            return build.min_compute_capability, ref("jax.json", f"{rel.first or '..'}-{rel.last or '..'}")
    if b.name == "cupy":
        floor = eco.cupy_min_compute_capability(version)
        return (floor, ref("cupy.json", f"v{major(version)}")) if floor else None
    return None


def _by_floor(snap: Snapshot, matrix: Matrix, b: FrameworkBuild, floor: Tuple[str, str],
              facts: List[GpuFact]) -> List[Finding]:
    minimum, record = floor
    bad = [g for g in facts if vkey(g.cc) < vkey(minimum)]
    if not bad:
        return []
    what = _gpus_label(bad, facts)
    text, commands, source = _floor_fix(matrix, b, bad)
    text = _or_hide(text, commands, facts, bad)
    return [finding(
        "arch-unsupported", E, Category.ARCH_UNSUPPORTED, f"{label(b)} cannot run on {what}",
        why=f"{label(b)} supports GPUs of compute capability {minimum} and newer; {what} is "
            f"{', '.join(dict.fromkeys(g.cc for g in bad))}.",
        fix=text.strip() or None, commands=commands,
        evidence=[f"frameworks.{b.name}.version"] + [f"gpus[{g.gpu.index}].compute_capability" for g in bad],
        source=[record] + list(source),
    )]


def _floor_fix(matrix: Matrix, b: FrameworkBuild, bad: List[GpuFact]) -> Tuple[str, List[str], Tuple[str, ...]]:
    eco = matrix.ecosystem
    lowest = min(bad, key=lambda g: g.cc_tuple)
    if b.name == "tensorflow":
        return _tf_for(matrix, bad)
    if b.name == "jax" and b.cuda:
        rel = eco.jax_release(build_version(b) or "")
        fits = [x for x in (rel.builds if rel else ()) if x.min_compute_capability
                and vkey(x.min_compute_capability) <= vkey(lowest.cc) and x.extras]
        if fits:
            extra = fits[-1].extras[0]
            return (f"The CUDA {fits[-1].cuda_major} build of this JAX release supports compute capability "
                    f"{fits[-1].min_compute_capability} and newer:",
                    [f"pip uninstall -y {' '.join(_jax_plugins(eco, build_version(b) or '', major(b.cuda) or 0))}",
                     f'pip install "jax[{extra}]=={build_version(b)}"'], ())
    if b.name == "cupy":
        rows = [m for m in eco.cupy.majors if m.min_compute_capability
                and vkey(m.min_compute_capability) <= vkey(lowest.cc)]
        if rows:
            row = rows[-1]
            dist = (b.distribution or "cupy").split("==")[0]
            return (f"CuPy v{row.version} is the newest major that supports compute capability {lowest.cc}:",
                    [f'pip install "{dist}=={row.version}.*"'], (ref("cupy.json", f"v{row.version}"),))
    return "", [], ()


def _tf_for(matrix: Matrix, bad: List[GpuFact]) -> Tuple[str, List[str], Tuple[str, ...]]:
    """The newest TensorFlow series whose compute-capability floor admits every listed GPU."""
    lowest = min(bad, key=lambda g: g.cc_tuple)
    rows = [f for f in matrix.ecosystem.tensorflow.cc_floors if vkey(f.min_compute_capability) <= vkey(lowest.cc)]
    if not rows or rows[-1].last is None:
        return "", [], ()
    last = rows[-1].last
    return (f"TensorFlow {last} is the last release series with kernels for compute capability {lowest.cc}:",
            [f'pip install "tensorflow[and-cuda]=={last}.*"    # Linux'], (ref("tensorflow.json", "min_compute_capability"),))


# ---------------------------------------------------------------------------- Python wheels


def check_python(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """The release has no wheel for this Python. A warning, never an error: the package is
    installed, so something built it for this interpreter (a source build, a nightly, another
    index); what breaks is what depends on the official wheels (companions, extensions, reinstalls)."""
    py = python_mm(snap)
    if not py:
        return []
    out = []
    for b in normalized(snap, matrix):
        version = build_version(b)
        if not version or is_conda(b) or any(p.name == b.name and p.installer == "conda" for p in snap.packages or ()):
            continue
        found = _pythons(snap, matrix, b, version)
        if found is None or py in found[0]:
            continue
        pythons, record = found
        out.append(_python_finding(snap, matrix, b, py, pythons, record))
    return out


def _jax_plugins(eco: Any, version: str, cuda_major: int) -> Tuple[str, ...]:
    """The CUDA plugin packages of JAX ``version``'s build for ``cuda_major`` (none when unknown)."""
    build = eco.jax.build(version, cuda_major)
    return tuple(build.plugins) if build is not None else ()


def _pythons(snap: Snapshot, matrix: Matrix, b: FrameworkBuild, version: str) -> Optional[Tuple[Tuple[str, ...], str]]:
    if b.name == "torch":
        torch_rel = matrix.pytorch.release(version)
        pythons = matrix.pytorch.supported_pythons(version, wheel_platform(snap)) if torch_rel else None
        return (pythons, ref("pytorch.json", torch_rel.version)) if torch_rel and pythons else None
    if b.name == "tensorflow":
        windows = bool(snap.host and snap.host.os == "windows" and not snap.host.wsl)
        cfg = matrix.ecosystem.tf_config(version, "windows" if windows else "linux") or matrix.ecosystem.tf_config(version, "linux")
        return (cfg.python, ref("tensorflow.json", cfg.version)) if cfg and cfg.python else None
    if b.name == "jax":
        rel = matrix.ecosystem.jax_release(version)
        return (rel.python, ref("jax.json", f"{rel.first or '..'}-{rel.last or '..'}")) if rel and rel.python else None
    if b.name == "cupy":
        row = matrix.ecosystem.cupy.major_of(version)
        return (row.python, ref("cupy.json", f"v{row.version}")) if row and row.python else None
    return None


def _python_finding(snap: Snapshot, matrix: Matrix, b: FrameworkBuild, py: str, pythons: Tuple[str, ...],
                    record: str) -> Finding:
    version = build_version(b) or ""
    span = pythons[0] if len(pythons) == 1 else f"{pythons[0]}–{pythons[-1]}"
    newest_py = pythons[-1]
    fix = f"Use Python {newest_py if vkey(py) > vkey(newest_py) else pythons[0]} for {b.name} {version}"
    commands: List[str] = []
    source: Tuple[str, ...] = ()
    if b.name == "torch":
        plan, _ = torch_plan(snap, matrix, [g.cc for g in gpu_facts(snap, matrix)])
        installed_rel = matrix.pytorch.release(version)
        if plan is not None and installed_rel is not None and plan.version != installed_rel.version:
            fix += f", or install torch {plan.label}, which has wheels for Python {py}:"
            commands = plan.commands(torch_packages(snap), torch_packages(snap))
            source = plan.sources
        else:
            fix += "."
    else:
        fix += f", or a {b.name} release with wheels for Python {py}."
    return finding(
        "python-unsupported", W, Category.PYTHON_UNSUPPORTED,
        f"{label(b)} has no official wheels for Python {py}",
        why=f"{b.name} {version} was published for Python {span} on {wheel_platform(snap)}; this environment runs "
            f"Python {snap.python.version if snap.python else py}. It is installed, so it came from elsewhere (a source "
            "build, a nightly, another index): reinstalling it, and packages built against the official wheels "
            "(companions, extensions), may fail.",
        fix=fix, commands=commands,
        evidence=["python.version", f"frameworks.{b.name}.version"], source=[record] + list(source),
    )


# ---------------------------------------------------------------------------- torchvision / torchaudio


def check_companions(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    builds = {b.name: b for b in normalized(snap, matrix)}
    torch = builds.get("torch")
    rel = matrix.pytorch.release(torch.version) if torch and torch.version else None
    if torch is None or rel is None:
        return []
    out = []
    for name, expected in (("torchvision", rel.torchvision), ("torchaudio", rel.torchaudio)):
        b = builds.get(name)
        if b is None or not b.version or not expected or vkey(b.version) == ():
            continue
        problem = _version_problem(matrix, rel, b, expected) or _variant_problem(matrix, torch, b)
        if problem is None:
            continue
        severity, title, why = problem
        variant = torch_variant_name(matrix, torch)
        url = matrix.pytorch.index_url(variant) if variant else None
        pins = [f"torch=={rel.version}"] + [f"{n}=={v}" for n, v in (("torchvision", rel.torchvision),
                                                                    ("torchaudio", rel.torchaudio))
                                           if v and n in builds]
        out.append(finding(
            "companion-version-mismatch", severity, Category.COMPANION_VERSION_MISMATCH, title, why=why,
            fix=f"Install the {name} release made for torch {rel.version}"
                + (f" from the {variant} index" if url else "") + ":",
            commands=[f"pip uninstall -y {quote(name)}",
                      f"pip install {' '.join(quote(p) for p in pins)}" + (f" --index-url {quote(url)}" if url else "")],
            evidence=["frameworks.torch.version", f"frameworks.{name}.version"],
            source=[ref("pytorch.json", rel.version)],
        ))
    return out


def _made_for(matrix: Matrix, name: str, version: str) -> Optional[str]:
    if name == "torchvision":
        rel = matrix.pytorch.torch_for_torchvision(version)
        return str(rel.version) if rel else None
    same = [r for r in matrix.pytorch.releases if r.torchaudio and vkey(r.torchaudio)[:3] == vkey(version)[:3]]
    return str(same[-1].version) if same else None


def _version_problem(matrix: Matrix, rel: Any, b: FrameworkBuild, expected: str) -> Optional[Tuple[Severity, str, str]]:
    if vkey(b.version or "")[:3] == vkey(expected)[:3]:
        return None
    made_for = _made_for(matrix, b.name, b.version or "")
    series = made_for is not None and major_minor(made_for) == major_minor(rel.version)
    why = (f"Each {b.name} release is built against one torch release: torch {rel.version}'s is {b.name} {expected}; "
           f"{b.name} {b.version} " + (f"was built for torch {made_for}" if made_for else "is not paired with it") + ".")
    why += (" Within one release series this usually works, but pip would not install the pair."
            if series else f" Its C++ operators do not load against another torch ('operator {b.name}::... does not "
                           "exist', undefined symbols), so importing it or using its GPU ops fails.")
    return (W if series else E, f"{b.name} {b.version} does not match torch {rel.version} (needs {b.name} {expected})", why)


def _variant_problem(matrix: Matrix, torch: FrameworkBuild, b: FrameworkBuild) -> Optional[Tuple[Severity, str, str]]:
    if b.variant is None or torch.variant is None:
        return None
    if torch.variant == "cuda" and b.variant == "cuda" and torch.cuda and b.cuda:
        if major_minor(torch.cuda) == major_minor(b.cuda):
            return None
        severity = E if major(torch.cuda) != major(b.cuda) else W
        return (severity, f"{b.name} {b.version} is built for CUDA {b.cuda}, torch {torch.version} for CUDA {torch.cuda}",
                f"{b.name} and torch come from different wheel variants (CUDA {b.cuda} and {torch.cuda})"
                + (": torchvision refuses to load ('Detected that PyTorch and torchvision were compiled with different "
                   "CUDA major versions')." if severity is E else "; pip mixed two of PyTorch's indexes."))
    if torch.variant != b.variant:
        return (W, f"{b.name} {b.version} is a {b.variant} build, torch {torch.version} a {torch.variant} build",
                f"{b.name} and torch come from different wheel variants ({b.variant} and {torch.variant}): its "
                "operators exist only for the device it was built for.")
    return None


# ---------------------------------------------------------------------------- TensorFlow on Windows


def check_tf_windows(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    host = snap.host
    if not (host and host.os == "windows" and not host.wsl) or not gpus(snap):
        return []
    out = []
    for b in normalized(snap, matrix):
        version = build_version(b)
        if b.name != "tensorflow" or not version or matrix.ecosystem.tf_native_windows_gpu(version):
            continue
        last = matrix.ecosystem.tensorflow.fact("native_windows_gpu_last")
        cfg = matrix.ecosystem.tf_config(last.value, "windows") if last else None
        commands = ["wsl --install    # then, inside WSL2: pip install \"tensorflow[and-cuda]\""]
        if cfg is not None and last is not None:
            commands.append(f'pip install "{cfg.package}=={last.value}.*"    # needs CUDA {cfg.cuda} and cuDNN {cfg.cudnn}')
        out.append(finding(
            "tensorflow-windows-gpu", E, Category.PLATFORM_UNSUPPORTED,
            f"{label(b)} has no GPU support on native Windows",
            why=f"TensorFlow {last.value if last else '2.10'} was the last release that supports a GPU on native Windows; "
                f"{version} runs on the CPU there. GPU support on Windows is through WSL2.",
            fix=f"Run TensorFlow inside WSL2 (the Windows NVIDIA driver serves it), or stay on TensorFlow "
                f"{last.value if last else '2.10'} natively.",
            commands=commands,
            evidence=["host.os", "host.wsl", "frameworks.tensorflow.version"],
            source=[ref("tensorflow.json", "native_windows_gpu_last")] + ([ref("tensorflow.json", cfg.version)] if cfg else []),
        ))
    return out
