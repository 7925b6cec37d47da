"""Plans for TensorFlow, JAX, CuPy and ONNX Runtime, on the same rule as torch's.

Each framework's builds come from its compat_data table (tensorflow.json's tested configurations
and [and-cuda] flag, jax.json's release ranges and their CUDA builds, cupy.json's distributions and
major versions, onnxruntime.json's builds and the index serving each), become :class:`Option`
rows newest first, and :func:`choose` picks the first that fits. Where a table names a release
series rather than a release (JAX's '0.7.2-0.11', CuPy's majors, ONNX Runtime's '1.21-1.26'), the
pin is the series (``==0.11.*``) and the plan says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from cudadoctor.record import frozen
from cudadoctor.matrix._ecocommon import in_range, span
from cudadoctor.matrix.archs import PTX_JIT, UNSUPPORTED, parse_compute_capability, support_of
from cudadoctor.matrix.versions import major, matches, vkey
from cudadoctor.planner.torch import EXTRA_INDEX, FIND_LINKS, INDEX, Reason
from cudadoctor.planner.plan import (
    NoFit,
    Option,
    Pin,
    Result,
    choose,
    driver_fit,
    driver_reason,
    fixed_driver_fit,
)
from cudadoctor.planner.target import Target

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

FRAMEWORKS = ("tensorflow", "jax", "cupy", "onnxruntime-gpu")


def plan_framework(matrix: Matrix, name: str, target: Target, version: Optional[str] = None,
                   cuda: Optional[str] = None, prefer: Optional[int] = None) -> Result:
    """The build of ``name`` (tensorflow, jax, cupy, onnxruntime-gpu) for ``target``: the newest
    that fits, at its version the CUDA major ``prefer`` when that fits too."""
    options = _BUILDERS[name](matrix, target, version, cuda, prefer)
    subject = " ".join(x for x in (name, version, f"for CUDA {cuda}" if cuda else "") if x)
    if not options and name == "cupy" and not target.gpu_build:
        return NoFit(name, (Reason(f"CuPy has no CPU build: it runs only on an NVIDIA GPU ({target.cpu_because})"),))
    if not options:
        return NoFit(name, (Reason(f"compat_data has no {'CUDA' if target.gpu_build else 'CPU'} build of {subject}"),))
    result = choose(options, subject, target.gpus_text or "these GPUs", _gpu_ok(matrix, target))
    if isinstance(result, NoFit) and name == "tensorflow" and target.os == "windows":
        result = _tf_windows_hint(matrix, target, result)
    return result


def known_version(matrix: Matrix, name: str, version: str) -> bool:
    """Does compat_data know a release (or series) ``version`` of ``name`` at all?"""
    eco = matrix.ecosystem
    if name in ("torch", "torchvision", "torchaudio"):
        return any(matches(r.version, version.split("+")[0]) for r in matrix.pytorch.releases)
    if name == "tensorflow":
        return any(_wanted(version, ".".join(map(str, vkey(r.version)[:2]))) for r in eco.tensorflow.configs)
    if name == "jax":
        return any(r.contains(version) or matches(r.last or "", version) for r in eco.jax.releases)
    if name == "cupy":
        return any(major(version) == int(r.version) for r in eco.cupy.majors)
    return any(b.contains(version) or matches(b.last, version) for b in eco.onnxruntime.builds)


def _gpu_ok(matrix: Matrix, target: Target) -> Callable[[str], bool]:
    def ok(driver: str) -> bool:
        return all(matrix.gpus.driver_support(cc, driver).kind != "driver_dropped_gpu"
                   for cc in target.compute_capabilities)
    return ok


def _wanted(version: Optional[str], series: str) -> bool:
    """A requested version ('2.16', '2.16.1') belongs to a release series or version."""
    return not version or matches(version, series) or matches(series, version)


def _pin_version(requested: Optional[str], newest: str, exact: bool) -> Tuple[str, bool]:
    if requested and len(vkey(requested)) >= 3:
        return requested, True
    return newest, exact


def _shown(version: str, exact: bool) -> str:
    return version if exact else f"{version}.*"


def _arch(target: Target, low: Optional[str], high: Optional[str] = None) -> Tuple[bool, str]:
    missing = [cc for cc in target.compute_capabilities if not in_range(cc, low, high)]
    if not missing:
        return True, ""
    bounds = f">= {low}" + (f" and <= {high}" if high else "") if low else f"<= {high}"
    return False, f"needs compute capability {bounds} (not {', '.join(missing)})"


def _floor(m: Any, own: Optional[str], cuda_major: Optional[int], source: str) -> Tuple[Optional[str], str]:
    """(the lowest compute capability a build runs on, the record that says so): its own floor, or
    its CUDA major's (a CUDA 13 build has nothing below sm_75) when that is higher."""
    toolkit = m.toolchain.cuda_floor(cuda_major) if cuda_major is not None else None
    if toolkit is not None and (own is None or vkey(toolkit) > vkey(own)):
        return toolkit, f"toolkit_archs.json (CUDA {cuda_major})"
    return own, source


@frozen
class Kernels:
    """What a build's own SASS and PTX lists (framework_archs.json) say of the target's GPUs."""

    record: Any  # BuildArchs, None when the data has no list for this build
    ok: bool = True
    text: str = ""  # what the build lacks, when not ok
    ptx: Tuple[str, ...] = ()  # compute capabilities served only through PTX JIT
    reason: Optional[Reason] = None

    @property
    def cuda(self) -> Optional[str]:
        """The exact CUDA the build is made with, when recorded."""
        return self.record.cuda if self.record is not None else None

    def known(self, t: Target) -> bool:
        """The build's kernels for every GPU of ``t`` are known (its lists recorded, the GPUs named)."""
        return self.record is not None and bool(t.compute_capabilities)


def kernels(m: Any, t: Target, framework: str, version: str, cuda_major: Optional[int],
            cuda: Optional[str] = None) -> Kernels:
    """SASS, PTX or nothing for each GPU, from the build's own lists. PTX counts only where the GPU
    is one the build's toolkit knows, for frameworks that compile at run time with it (XLA's ptxas,
    NVRTC): they cannot target an architecture newer than their CUDA. Without lists, one fact still
    holds: a build made with a CUDA (``cuda``, exact) that does not know a GPU's architecture has no
    SASS for it."""
    b = m.framework_archs.lookup(framework, version, cuda_major)
    if b is None:
        return _without_lists(m, t, framework, version, cuda)
    ref = f"framework_archs.json#{framework}-{b.first}-cuda{b.cuda_major}"
    own = m.framework_archs.jit_toolkit(framework)
    missing: List[str] = []
    ptx: List[str] = []
    unknown_to_toolkit: List[str] = []
    for cc in t.compute_capabilities:
        parsed = parse_compute_capability(cc)
        if parsed is None:
            continue
        kind, _ = support_of(b.sass_targets, b.ptx_targets, parsed)
        if kind == PTX_JIT and own is not None and b.cuda and m.toolchain.can_compile(b.cuda, cc).status == "too_new":
            unknown_to_toolkit.append(cc)
            kind = UNSUPPORTED
        if kind == UNSUPPORTED:
            missing.append(f"sm_{parsed[0]}{parsed[1]}")
        elif kind == PTX_JIT:
            ptx.append(cc)
    sources = (ref,) + ((f"framework_archs.json#{own.id}",) if own is not None and unknown_to_toolkit else ())
    text = ""
    if missing:
        text = f"has {b.describe()}: no kernels for {', '.join(missing)}"
        if unknown_to_toolkit:
            text += (f" (its CUDA {b.cuda} toolkit, which it compiles with at run time, does not know compute "
                     f"capability {', '.join(unknown_to_toolkit)}{_first_cuda(m, unknown_to_toolkit)})")
    elif t.compute_capabilities:
        sass = [cc for cc in t.compute_capabilities if cc not in ptx]
        parts = ([f"SASS for compute capability {', '.join(sass)}"] if sass else []) + \
            ([f"only PTX for compute capability {', '.join(ptx)} (JIT-compiled at first use: a last resort)"] if ptx else [])
        return Kernels(b, True, "", tuple(ptx), Reason(f"{framework} {version} has {' and '.join(parts)} "
                                                       f"({b.describe()})", sources))
    return Kernels(b, not missing, text, tuple(ptx), Reason(f"{framework} {version} {text}", sources) if text else None)


def _first_cuda(m: Any, ccs: Sequence[str]) -> str:
    """'; a build made with CUDA 12.8 or newer would' (the first toolkit that knows every GPU)."""
    rows = [m.toolchain.arch(cc) for cc in ccs]
    if not rows or None in rows:
        return ""
    return f"; a build made with CUDA {max((r.first_cuda for r in rows if r), key=vkey)} or newer would"


def _without_lists(m: Any, t: Target, framework: str, version: str, cuda: Optional[str]) -> Kernels:
    if not cuda or len(vkey(cuda)) < 2:
        return Kernels(None)
    newer = [cc for cc in t.compute_capabilities if m.toolchain.can_compile(cuda, cc).status == "too_new"]
    if not newer:
        return Kernels(None)
    own = m.framework_archs.jit_toolkit(framework)
    sms = ", ".join(f"sm_{cc.replace('.', '')}" for cc in newer)
    if own is not None:
        text = (f"is built with CUDA {cuda}, which does not know compute capability {', '.join(newer)}: no SASS for "
                f"{sms}, and the CUDA {cuda} toolkit it compiles with at run time cannot target it"
                f"{_first_cuda(m, newer)}")
        return Kernels(None, False, text, (), Reason(f"{framework} {version} {text}",
                                                     (f"toolkit_archs.json#{sms.split(',')[0]}",
                                                      f"framework_archs.json#{own.id}")))
    text = (f"is built with CUDA {cuda}, which does not know compute capability {', '.join(newer)}: it can have no "
            f"SASS for {sms}, only PTX the driver JIT-compiles, if it ships any (not recorded)")
    return Kernels(None, True, "", tuple(newer), Reason(f"{framework} {version} {text}",
                                                       (f"toolkit_archs.json#{sms.split(',')[0]}",)))


def _older_in_range(m: Any, framework: str, build: Any, newest: str) -> List[str]:
    """The release series of ``build``'s range, newest first below ``newest``, that framework_archs.json
    has lists for ('1.28', '1.27'), so a range whose newest release lacks a GPU's kernels can pin one that has them."""
    out: List[str] = []
    for rec in sorted(m.framework_archs.builds, key=lambda r: vkey(r.first), reverse=True):
        if rec.framework != framework or rec.cuda_major != build.cuda_major:
            continue
        last = ".".join((rec.last or rec.first).split(".")[:2])
        if vkey(last) < vkey(newest) and build.contains(last) and last not in out:
            out.append(last)
    return out


def _arch_reason(target: Target, low: Optional[str], high: Optional[str], source: str) -> Optional[Reason]:
    if not target.compute_capabilities or not (low or high):
        return None
    bounds = " and ".join(x for x in (f">= {low}" if low else "", f"<= {high}" if high else "") if x)
    return Reason(f"compute capability {', '.join(target.compute_capabilities)} is within its range ({bounds}); "
                  "whether it has SASS for it or only PTX is not recorded", (source,))


def _python_fit(target: Target, pythons: Optional[Sequence[str]], what: str, source: str
                ) -> Tuple[Optional[bool], Optional[Reason]]:
    if pythons is None:
        return None, Reason(f"compat_data does not list the Python versions of {what}", (source,))
    span_text = pythons[0] if len(pythons) == 1 else f"{pythons[0]}–{pythons[-1]}"
    if target.python is None:
        return None, Reason(f"the Python is unknown: {what} has wheels for Python {span_text}", (source,))
    py = target.python.rstrip("t")
    return py in pythons, Reason(f"wheels for Python {py} ({what}: {span_text})", (source,))


def _unlisted_platform(target: Target, table: str) -> Tuple[str, ...]:
    if target.platform == "linux-aarch64":
        return (f"{table} does not record wheels per platform; that {target.platform} wheels exist is not "
                "checked here (--verify asks the index)",)
    return ()


# ---------------------------------------------------------------------- TensorFlow


def _tensorflow(m: Any, t: Target, version: Optional[str], cuda: Optional[str], prefer: Optional[int]) -> List[Option]:
    tf = m.ecosystem.tensorflow
    windows = t.os == "windows"
    rows = [r for r in tf.configs if r.platform == ("windows" if windows and t.gpu_build else "linux")]
    out = []
    for row in reversed(rows):
        if not _wanted(version, ".".join(map(str, vkey(row.version)[:2]))):
            continue
        ver, _ = _pin_version(version, row.version, True)
        ref = f"tensorflow.json#{row.version}"
        ok, py_reason = _python_fit(t, row.python, f"tensorflow {row.version[:row.version.rindex('.')]}", ref)
        if not t.gpu_build:
            reason = Reason(f"{t.cpu_because}: plain tensorflow (no [and-cuda] extra) runs on the CPU", (ref,))
            out.append(Option("tensorflow", ver, "cpu", None, (Pin("tensorflow", ver),), pythons=row.python,
                              python_ok=ok, reasons=(reason,) + ((py_reason,) if py_reason else ()),
                              notes=_unlisted_platform(t, "tensorflow.json")))
            continue
        if cuda and not matches(row.cuda, cuda):
            continue
        low, low_ref = _floor(m, tf.min_compute_capability(ver), major(row.cuda), "tensorflow.json#min_compute_capability")
        arch_ok, arch_text = _arch(t, low)
        k = kernels(m, t, "tensorflow", ver, major(row.cuda), row.cuda)
        arch_ok, arch_text = arch_ok and k.ok, arch_text or k.text
        fit = driver_fit(m, t.driver, k.cuda or row.cuda, t.driver_os)
        extra = ("and-cuda",) if row.and_cuda_extra else ()
        notes = _unlisted_platform(t, "tensorflow.json")
        if not extra:
            notes += (f"tensorflow {ver} does not bring CUDA {row.cuda} and cuDNN {row.cudnn}: install them on the "
                      "system",)
        if k.ptx:
            notes += (f"through PTX JIT every TensorFlow kernel is compiled at first use for compute capability "
                      f"{', '.join(k.ptx)}: a start of many minutes, cached in ~/.nv/ComputeCache only up to CUDA_CACHE_MAXSIZE (raise it, e.g. "
                      "export CUDA_CACHE_MAXSIZE=4294967296; tensorflow/tensorflow#62320)",)
        reasons = [Reason(f"tensorflow {ver} is built with CUDA {row.cuda} and cuDNN {row.cudnn}"
                          + (", which the [and-cuda] extra installs as pip wheels" if extra else ""), (ref,))]
        reasons += [r for r in ((k.reason or _arch_reason(t, low, None, low_ref)),) if r]
        reasons += [driver_reason(fit, t.driver, t.driver_os)] + ([py_reason] if py_reason else [])
        out.append(Option("tensorflow", ver, f"CUDA {row.cuda}", row.cuda, (Pin(row.package, ver, extras=extra),),
                          arch_ok=arch_ok, arch_text=arch_text, driver=fit, pythons=row.python, python_ok=ok,
                          preferred=prefer == major(row.cuda), reasons=tuple(reasons), notes=notes, cudnn=row.cudnn,
                          ptx=k.ptx, kernels_known=k.known(t)))
    return out


def _tf_windows_hint(m: Any, t: Target, result: NoFit) -> NoFit:
    """Native Windows lost TensorFlow's GPU support after one release; WSL2 runs the Linux wheels."""
    last = m.ecosystem.tensorflow.fact("native_windows_gpu_last")
    if last is None:
        return result
    reason = Reason(f"TensorFlow's GPU builds for native Windows end with {last.value}; newer releases run on the "
                    "GPU under WSL2 (--os wsl2 plans them)", ("tensorflow.json#native_windows_gpu_last",))
    return NoFit(result.framework, result.reasons + (reason,), result.driver, result.with_driver, result.python,
                 result.with_python, result.newest_build)


# ---------------------------------------------------------------------- JAX


def _jax_extra(build: Any) -> Optional[str]:
    for name in (f"cuda{build.cuda_major}", f"cuda{build.cuda_major}_pip"):
        if name in build.extras:
            return name
    return build.extras[0] if build.extras else None


def _range_version(first: Optional[str], last: Optional[str]) -> Tuple[str, bool]:
    """The newest release a range names: its last (a release, or a series), else its first."""
    if last:
        return last, len(vkey(last)) >= 3
    return first or "", bool(first and len(vkey(first)) >= 3)


def _jax(m: Any, t: Target, version: Optional[str], cuda: Optional[str], prefer: Optional[int]) -> List[Option]:
    out = []
    for rel in reversed(m.ecosystem.jax.releases):
        if version and not (rel.contains(version) or matches(rel.last or "", version)):
            continue
        ver, exact = _pin_version(version, *_range_version(rel.first, rel.last))
        shown = _shown(ver, exact)
        ref = f"jax.json#{span(rel.first, rel.last)}"
        ok, py_reason = _python_fit(t, rel.python, f"jax {span(rel.first, rel.last)}", ref)
        pys = (py_reason,) if py_reason else ()
        if not t.gpu_build:
            reason = Reason(f"{t.cpu_because}: plain jax installs the CPU jaxlib", (ref,))
            out.append(Option("jax", shown, "cpu", None, (Pin("jax", ver, exact),), pythons=rel.python, python_ok=ok,
                              reasons=(reason,) + pys))
            continue
        for b in sorted(rel.builds, key=lambda b: -b.cuda_major):
            extra = _jax_extra(b)
            if extra is None or (cuda and major(cuda) != b.cuda_major):
                continue
            cuda_name = b.min_cuda or str(b.cuda_major)
            k = kernels(m, t, "jax", ver, b.cuda_major)
            # the exact CUDA of the build decides native or minor-version compatibility; JAX's own
            # minimum driver (its CUDA major's floor) is what it runs on at all
            fit = driver_fit(m, t.driver, k.cuda or cuda_name, t.driver_os)
            if b.min_driver and fit.kind in ("native", "minor_compat"):
                floor = fixed_driver_fit(t.driver, b.min_driver, cuda_name, ref)
                fit = floor if floor.kind == "too_old" else fit
            low, low_ref = _floor(m, b.min_compute_capability, b.cuda_major, ref)
            arch_ok, arch_text = _arch(t, low)
            arch_ok, arch_text = arch_ok and k.ok, arch_text or k.text
            windows = t.os == "windows"
            find = b.index_url if (b.jaxlib_local_versions and b.index_url) else None
            reasons = [Reason(f"jax[{extra}] {shown} is the CUDA {b.cuda_major} build (CUDA >= {cuda_name}, "
                              f"cuDNN >= {b.min_cudnn or '?'})", (ref,))]
            reasons += [r for r in ((k.reason or _arch_reason(t, low, None, low_ref)),) if r]
            reasons += [driver_reason(fit, t.driver, t.driver_os)] + list(pys)
            out.append(Option(
                "jax", shown, f"cuda{b.cuda_major}", str(b.cuda_major), (Pin("jax", ver, exact, (extra,)),),
                index_url=find, index_mode=FIND_LINKS, arch_ok=arch_ok, arch_text=arch_text, driver=fit,
                pythons=rel.python, python_ok=ok, platform_ok=not windows,
                platform_text=("jax.json records CUDA wheels for Linux only (native Windows has no GPU support); "
                               "under WSL2 they apply (--os wsl2)") if windows else "",
                preferred=prefer == b.cuda_major, reasons=tuple(reasons), notes=_unlisted_platform(t, "jax.json"),
                cudnn=b.min_cudnn, ptx=k.ptx, kernels_known=k.known(t)))
    return out


# ---------------------------------------------------------------------- CuPy


def _cupy(m: Any, t: Target, version: Optional[str], cuda: Optional[str], prefer: Optional[int]) -> List[Option]:
    cp = m.ecosystem.cupy
    if not t.gpu_build:
        return []
    aarch64 = cp.fact("aarch64_index") if t.platform == "linux-aarch64" else None
    out = []
    for row in reversed(cp.majors):
        if version and major(version) != int(row.version):
            continue
        ver, exact = _pin_version(version, row.version, False)
        ref = f"cupy.json#v{row.version}"
        ok, py_reason = _python_fit(t, row.python, f"CuPy v{row.version}", ref)
        dists = [d for d in cp.distributions if d.kind == "cuda" and d.cuda_min and d.shipped_in(ver)
                 and row.supports_cuda(d.cuda_min) and (not cuda or d.serves_cuda(cuda))]
        for d in sorted(dists, key=lambda d: vkey(d.cuda_min or ""), reverse=True):
            k = kernels(m, t, "cupy", ver if exact else f"{ver}.0", major(d.cuda_min or ""))
            # a cupy-cudaNNx wheel runs on any CUDA NN.x; the CUDA it is built with is what PTX needs
            fit = driver_fit(m, t.driver, k.cuda or str(major(d.cuda_min or "")), t.driver_os)
            low, low_ref = _floor(m, row.min_compute_capability, major(d.cuda_min or ""), ref)
            arch_ok, arch_text = _arch(t, low, row.max_compute_capability)
            arch_ok, arch_text = arch_ok and k.ok, arch_text or k.text
            served = d.cuda_min if d.cuda_min == d.cuda_max else f"{d.cuda_min}–{d.cuda_max}.x"
            reasons = [Reason(f"{d.distribution} serves CUDA {served}", (f"cupy.json#{d.distribution}",))]
            reasons += [r for r in ((k.reason or _arch_reason(t, low, row.max_compute_capability, low_ref)),) if r]
            reasons += [driver_reason(fit, t.driver, t.driver_os)] + ([py_reason] if py_reason else [])
            cuda_of = d.cuda_min if d.cuda_min == d.cuda_max else str(major(d.cuda_min or ""))
            ctk = d.distribution == "cupy-cuda13x" and int(row.version) >= 14  # cupy.json#v14
            notes: Tuple[str, ...] = (
                (f"the [ctk] extra installs the CUDA {major(d.cuda_min or '')} toolkit's runtime libraries as pip wheels",)
                if ctk else (f"{d.distribution} does not bring the CUDA libraries it loads: CUDA "
                             f"{major(d.cuda_min or '')}.x must be installed (the toolkit, or the nvidia-*-cu"
                             f"{major(d.cuda_min or '')} wheels of another framework)",))
            out.append(Option(
                "cupy", _shown(ver, exact), d.distribution, cuda_of,
                (Pin(d.distribution, ver, exact, ("ctk",) if ctk else ()),),
                index_url=aarch64.value if aarch64 else None, index_mode=FIND_LINKS, arch_ok=arch_ok,
                arch_text=arch_text, driver=fit, pythons=row.python, python_ok=ok,
                preferred=prefer == major(d.cuda_min or ""), reasons=tuple(reasons), ptx=k.ptx,
                kernels_known=k.known(t), notes=notes))
    return out


# ---------------------------------------------------------------------- ONNX Runtime


def _onnxruntime(m: Any, t: Target, version: Optional[str], cuda: Optional[str], prefer: Optional[int]) -> List[Option]:
    builds = sorted(m.ecosystem.onnxruntime.builds, key=lambda b: (vkey(b.first), b.cuda_major), reverse=True)
    out: List[Option] = []
    for b in builds:
        if version and not (b.contains(version) or matches(b.last, version)):
            continue
        ver, exact = _pin_version(version, *_range_version(b.first, b.last))
        shown = _shown(ver, exact)
        ref = f"onnxruntime.json#{span(b.first, b.last)}"
        _, py_reason = _python_fit(t, None, "onnxruntime-gpu", ref)
        if not t.gpu_build:
            if not any(o.version == shown for o in out):
                reason = Reason(f"{t.cpu_because}: the CPU package onnxruntime", (ref,))
                out.append(Option("onnxruntime-gpu", shown, "cpu", None, (Pin("onnxruntime", ver, exact),),
                                  reasons=(reason,)))
            continue
        if cuda and (major(cuda) != b.cuda_major or (len(vkey(b.cuda)) > 1 and not matches(b.cuda, cuda))):
            continue
        k = kernels(m, t, "onnxruntime-gpu", ver, b.cuda_major, b.cuda)
        if not k.ok and not (version and exact):  # an older release of the range may have kernels for the GPUs
            for older in _older_in_range(m, "onnxruntime-gpu", b, ver):
                alt = kernels(m, t, "onnxruntime-gpu", older, b.cuda_major, b.cuda)
                if alt.ok:
                    ver, k = older, alt
                    shown = _shown(ver, exact)
                    break
        fit = driver_fit(m, t.driver, k.cuda or b.cuda, t.driver_os)
        low, low_ref = _floor(m, None, b.cuda_major, ref)
        arch_ok, arch_text = _arch(t, low)
        arch_ok, arch_text = arch_ok and k.ok, arch_text or k.text
        # the same version on PyPI as another CUDA major's build: pip could take either, so the
        # build's own index is the only one, and the build is chosen only when no other fits
        shadowed = not b.pypi_default and any(x.pypi_default and x.cuda_major != b.cuda_major and
                                              (x.contains(ver) or x.contains(b.first)) for x in builds)
        cudnn = b.cudnn_windows if t.os == "windows" and b.cudnn_windows else b.cudnn
        reasons = [Reason(f"onnxruntime-gpu {shown} for CUDA {b.cuda_major} is built for CUDA {b.cuda} and cuDNN {cudnn}; "
                          + ("PyPI serves it" if b.pypi_default else "its own index serves it"), (ref,)),
                   driver_reason(fit, t.driver, t.driver_os)]
        reasons += [r for r in ((k.reason or _arch_reason(t, low, None, low_ref)),) if r]
        notes: Tuple[str, ...] = (
            f"onnxruntime-gpu does not bring CUDA {b.cuda_major}.x and cuDNN {major(cudnn)}.x: they must be installed "
            "(the toolkit, or the nvidia-* wheels of another framework)",)
        if low is None and k.record is None:
            notes += ("compat_data lists no GPU architectures for onnxruntime-gpu: the GPUs were not checked",)
        if shadowed:
            notes += (f"PyPI's onnxruntime-gpu {shown} is another CUDA major's build: the command names only the "
                      "CUDA index (--index-url), which must also serve the dependencies",)
        out.append(Option("onnxruntime-gpu", shown, f"CUDA {b.cuda_major}", str(b.cuda_major) if len(vkey(b.cuda)) == 1
                          else b.cuda, (Pin("onnxruntime-gpu", ver, exact),), index_url=None if b.pypi_default
                          else b.index_url, index_mode=INDEX if shadowed else EXTRA_INDEX, driver=fit,
                          arch_ok=arch_ok, arch_text=arch_text,
                          preferred=prefer == b.cuda_major, fallback=shadowed, cudnn=cudnn,
                          reasons=tuple(reasons) + ((py_reason,) if py_reason else ()), notes=notes, ptx=k.ptx,
                          kernels_known=k.known(t)))
    return out


_BUILDERS: Dict[str, Callable[[Any, Target, Optional[str], Optional[str], Optional[int]], List[Option]]] = {
    "tensorflow": _tensorflow, "jax": _jax, "cupy": _cupy, "onnxruntime-gpu": _onnxruntime,
}
