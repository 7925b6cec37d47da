"""The install planner: which torch build fits a machine, and the exact commands to install it.

:func:`plan_torch` is pure: it reads only the matrix and the facts it is given (driver, OS,
Python, the GPUs' compute capabilities, the wheel platform). The checks use it for the fix text of
their findings, and an install command can use it the same way.

The choice, among every release and CUDA variant that has wheels for the platform:

1. every GPU must have kernels in the build: SASS, or PTX the driver JIT-compiles as a last
   resort (a build that has SASS for every GPU always wins over one that needs PTX);
2. the driver must run the variant's CUDA: natively (at or above the release's own minimum) or
   through minor-version compatibility (above the major's floor), the latter only when every GPU
   has SASS, since PTX newer than the driver cannot be JIT-compiled;
3. the release must have wheels for the Python (when known);
4. then the newest release; within it a native variant before a minor-compatibility one, the
   newest CUDA among native variants and the one nearest the driver among the others.

With no GPU the plan is the CPU variant. When nothing fits, :class:`NoPlan` says what would: the
driver to install, the newest build that has kernels for every GPU, the Python to use.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple, Union
from cudadoctor.record import frozen

from cudadoctor.matrix.archs import PTX_JIT, UNSUPPORTED, parse_compute_capability, support_of
from cudadoctor.matrix.versions import major_minor, matches, vkey

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

DEFAULT_PLATFORM = "linux-x86_64"
NATIVE, MINOR_COMPAT = "native", "minor_compat"
COMPANIONS = ("torchvision", "torchaudio")


@frozen
class Reason:
    """One constraint the plan meets (or that nothing met), and the record behind it."""

    text: str
    source: Tuple[str, ...] = ()


@frozen
class TorchPlan:
    version: str  # "2.7.1"
    variant: str  # "cu118", "cpu"
    cuda: Optional[str]
    torchvision: Optional[str]
    torchaudio: Optional[str]  # None: no torchaudio release pairs with this torch
    index_url: Optional[str]
    platform: str
    driver_rule: Optional[str]  # native | minor_compat | None (CPU build, or the driver is unknown)
    min_driver: Optional[str]  # the variant's CUDA release's own minimum driver
    floor_driver: Optional[str]  # the minor-version-compatibility floor of its CUDA major
    ptx_jit: Tuple[str, ...]  # compute capabilities the build serves only through PTX
    reasons: Tuple[Reason, ...]

    @property
    def label(self) -> str:
        """'2.7.1+cu118'."""
        return f"{self.version}+{self.variant}"

    @property
    def pins(self) -> Tuple[str, ...]:
        """torch==X torchvision==Y torchaudio==Z (those that exist for this release)."""
        return self.pins_for(("torch",) + COMPANIONS)

    def pins_for(self, packages: Sequence[str]) -> Tuple[str, ...]:
        versions = {"torch": self.version, "torchvision": self.torchvision, "torchaudio": self.torchaudio}
        return tuple(f"{p}=={versions[p]}" for p in packages if versions.get(p))

    @property
    def sources(self) -> Tuple[str, ...]:
        return tuple(dict.fromkeys(s for r in self.reasons for s in r.source))

    def install_command(self, packages: Sequence[str] = ("torch",) + COMPANIONS) -> str:
        """'pip install torch==X torchvision==Y --index-url URL'; torch is always included."""
        wanted = ["torch"] + [p for p in packages if p != "torch"]
        return pip_install_line(self.pins_for(wanted), self.index_url)

    def commands(self, packages: Sequence[str] = ("torch",) + COMPANIONS, uninstall: Sequence[str] = ()) -> List[str]:
        """The commands to paste: uninstall what is installed (a wrong variant), then install."""
        out = [f"pip uninstall -y {' '.join(uninstall)}"] if uninstall else []
        return out + [self.install_command(packages)]


@frozen
class NoPlan:
    """Nothing fits; what would."""

    reasons: Tuple[Reason, ...]
    driver: Optional[str] = None  # install at least this driver ...
    with_driver: Optional[TorchPlan] = None  # ... to get this build
    newest_build: Optional[str] = None  # the newest build with kernels for every GPU ("2.14.1+cu126")
    python: Optional[str] = None  # use this Python ...
    with_python: Optional[TorchPlan] = None  # ... to get this build

    @property
    def sources(self) -> Tuple[str, ...]:
        return tuple(dict.fromkeys(s for r in self.reasons for s in r.source))

    def summary(self) -> str:
        """One paragraph for a finding's fix text."""
        parts = [r.text[0].upper() + r.text[1:].rstrip(".") + "." for r in self.reasons if r.text]
        if self.driver and self.with_driver:
            parts.append(f"With driver {self.driver} or newer, torch {self.with_driver.label} would fit.")
        if self.python and self.with_python:
            parts.append(f"With Python {self.python}, torch {self.with_python.label} would fit.")
        return " ".join(parts)


Plan = Union[TorchPlan, NoPlan]

INDEX, EXTRA_INDEX, FIND_LINKS = "index", "extra-index", "find-links"
_INDEX_FLAGS = {INDEX: "--index-url", EXTRA_INDEX: "--extra-index-url", FIND_LINKS: "-f"}


def pip_install_line(requirements: Sequence[str], index_url: Optional[str] = None, index_mode: str = INDEX,
                     tool: str = "pip") -> str:
    """The one way an install line is written, for the findings' fixes and `cudadoctor install`
    alike: 'pip install torch==2.9.1 torchvision==0.24.1 --index-url URL' (tool 'uv pip' for uv).
    Requirements with extras or wildcards are quoted for the shell."""
    quoted = [f'"{r}"' if any(c in r for c in "[]*<>") else r for r in requirements]
    index = f" {_INDEX_FLAGS[index_mode]} {index_url}" if index_url else ""
    return f"{tool} install {' '.join(quoted)}{index}"


@frozen
class _Candidate:
    release: Any  # matrix.pytorch.Release
    variant: Any  # matrix.pytorch.Variant
    arch_ok: bool
    arch_text: str
    ptx: Tuple[str, ...]
    driver: Any  # matrix.cuda.DriverSupport, None for CPU builds or an unknown driver
    python_ok: Optional[bool]
    gpus_known: bool = True  # False: a CUDA build for GPUs not named, whose SASS cannot be checked

    def driver_ok(self) -> bool:
        if self.driver is None:
            return True
        if self.driver.kind == NATIVE:
            return True
        return self.driver.kind == MINOR_COMPAT and not self.ptx and self.gpus_known

    def score(self, use_driver: bool) -> Tuple[Any, ...]:
        rule = self.driver.kind if (use_driver and self.driver is not None) else None
        cuda = vkey(self.variant.cuda or "")
        if rule == NATIVE:
            rank, closeness = 2, cuda
        elif rule == MINOR_COMPAT:
            rank, closeness = 1, tuple(-x for x in cuda)
        else:  # CPU, or the driver is not a constraint: what PyPI gives, else the newest CUDA
            rank, closeness = 0, cuda
        default = self.variant.name == self.release.linux_default_variant
        if rule is None:
            return (not self.ptx, vkey(self.release.version), rank, default, closeness)
        return (not self.ptx, vkey(self.release.version), rank, closeness, default)


@lru_cache(maxsize=4096)
def _driver_support(matrix: Matrix, driver: str, cuda: str, os: str) -> Any:
    """matrix.cuda.driver_support, once per (driver, CUDA, OS): a plan asks for the same few many times."""
    return matrix.cuda.driver_support(driver, cuda, os)


def _ref(table: str, key: object) -> str:
    return f"{table}#{key}"


def _ccs(values: Sequence[str]) -> List[Tuple[str, Tuple[int, int]]]:
    out = []
    for value in values:
        cc = parse_compute_capability(value)
        item = (f"{cc[0]}.{cc[1]}", cc) if cc is not None else None
        if item is not None and item not in out:
            out.append(item)
    return out


def _python_key(python: Optional[str]) -> Tuple[Optional[str], bool]:
    """'3.11.7' -> ('3.11', False); '3.13t' -> ('3.13t', True)."""
    if not python:
        return None, False
    text = python.strip()
    free = text.endswith("t")
    mm = ".".join(str(x) for x in major_minor(text.rstrip("t")))
    return (mm + "t" if free else mm) or None, free


def _releases(matrix: Matrix, version: Optional[str]) -> List[Any]:
    rels = list(matrix.pytorch.releases)
    if version:
        plain = version.split("+")[0]
        rels = [r for r in rels if matches(r.version, plain)]
    return rels


def _evaluate(matrix: Matrix, driver: Optional[str], os: str, python: Optional[str],
              ccs: List[Tuple[str, Tuple[int, int]]], platform: str, version: Optional[str],
              cuda: Optional[str] = None, gpu: bool = False) -> List[_Candidate]:
    py, free = _python_key(python)
    wanted = "cuda" if (ccs or gpu or cuda) else "cpu"
    out = []
    for rel in reversed(_releases(matrix, version)):
        pythons = rel.pythons(platform) + (rel.python_freethreaded if free else ())
        python_ok = None if py is None else py in pythons
        for var in rel.variants:
            if platform not in var.platforms or var.kind != wanted or (cuda and not matches(var.cuda or "", cuda)):
                continue
            arch_ok, ptx, missing = True, [], []
            archs, ptx_targets, _, _ = var.arch_lists(platform)  # what pytorch.arch_support applies
            for label, cc in ccs:
                kind, _ = support_of(archs, ptx_targets, cc)
                if kind == UNSUPPORTED:
                    arch_ok = False
                    missing.append(f"sm_{cc[0]}{cc[1]}")
                elif kind == PTX_JIT:
                    ptx.append(label)
            arch_text = f"no kernels for {', '.join(missing)}" if missing else ""
            ds = _driver_support(matrix, driver, var.cuda, os) if (driver and var.cuda) else None
            out.append(_Candidate(rel, var, arch_ok, arch_text, tuple(ptx), ds, python_ok, bool(ccs) or not var.cuda))
    return out


def _ranked(candidates: List[_Candidate], use_driver: bool, use_python: bool) -> List[_Candidate]:
    fit = [c for c in candidates if c.arch_ok
           and (not use_driver or c.driver_ok())
           and (not use_python or c.python_ok is not False)]
    return sorted(fit, key=lambda c: c.score(use_driver), reverse=True)


def plan_torch(matrix: Matrix, driver: Optional[str], os: str, python: Optional[str],
               compute_capabilities: Sequence[str], platform: str = DEFAULT_PLATFORM,
               version: Optional[str] = None, cuda: Optional[str] = None, gpu: bool = False) -> Plan:
    """The torch build for this machine (see the module docstring for the order of choice).

    ``driver``: the NVIDIA driver version (None: unknown, the plan then names the driver it
    needs); ``os``: linux or windows, whose driver table applies (windows under WSL2);
    ``python``: '3.11' or '3.11.7' (None: unknown); ``compute_capabilities``: one per GPU, e.g.
    ['8.6', '12.0'] (empty: no GPU, the CPU build, unless ``gpu`` or ``cuda`` ask for a CUDA
    build for GPUs not named); ``platform``: the wheel platform (linux-x86_64, linux-aarch64,
    windows-x86_64, macos-arm64); ``version``: keep to this release or series ('2.5.1', '2.5');
    ``cuda``: keep to variants of this CUDA ('12.6', or a major '12')."""
    ccs = _ccs(compute_capabilities)
    candidates = _evaluate(matrix, driver, os, python, ccs, platform, version, cuda, gpu)
    ranked = _ranked(candidates, use_driver=True, use_python=True)
    if ranked:
        return _plan(matrix, ranked[0], driver, os, python, ccs, platform, candidates)
    subject = " ".join(x for x in ("torch", version, f"for CUDA {cuda}" if cuda else "") if x)
    return _no_plan(matrix, candidates, driver, os, python, ccs, platform, subject, bool(gpu or cuda))


# ---------------------------------------------------------------------- the plan and its reasons


def _plan(matrix: Matrix, c: _Candidate, driver: Optional[str], os: str, python: Optional[str],
          ccs: List[Tuple[str, Tuple[int, int]]], platform: str, candidates: List[_Candidate]) -> TorchPlan:
    rel, var = c.release, c.variant
    rel_ref = _ref("pytorch.json", rel.version)
    reasons: List[Reason] = []
    if not ccs and not var.cuda:
        reasons.append(Reason("no NVIDIA GPU: the CPU build", (rel_ref,)))
    elif not ccs:
        archs = var.arch_lists(platform)[0]
        reasons.append(Reason(f"the GPUs are not known: torch {rel.version}+{var.name} has SASS for "
                              f"{' '.join(archs)}; each GPU needs one of the same major and a minor at or "
                              "below its own", (rel_ref,)))
    else:
        sass = [label for label, _ in ccs if label not in c.ptx]
        if sass:
            reasons.append(Reason(f"torch {rel.version}+{var.name} has SASS for compute capability "
                                  f"{', '.join(sass)} ({' '.join(var.arch_lists(platform)[0])})", (rel_ref,)))
        if c.ptx:
            reasons.append(Reason(f"compute capability {', '.join(c.ptx)} runs only through PTX JIT (a last "
                                  "resort: slow first start; no newer build has SASS for it that fits)", (rel_ref,)))
    min_driver = floor = None
    rule = None
    if var.cuda:
        support = _driver_support(matrix, driver or "0", var.cuda, os)
        min_driver, floor = support.required, support.floor
        reasons.append(_driver_reason(var.cuda, driver, os, c.driver, support))
        rule = c.driver.kind if c.driver is not None else None
    py, _ = _python_key(python)
    pythons = matrix.pytorch.supported_pythons(rel.version, platform) or ()
    if py:
        reasons.append(Reason(f"wheels for Python {py} on {platform}", (rel_ref,)))
    elif pythons:
        reasons.append(Reason(f"the Python is unknown: this release has wheels for {_span(pythons)}", (rel_ref,)))
    newer = _passed_over(candidates, rel.version)
    if newer:
        reasons.append(newer)
    return TorchPlan(
        version=rel.version, variant=var.name, cuda=var.cuda, torchvision=rel.torchvision,
        torchaudio=rel.torchaudio, index_url=matrix.pytorch.index_url(var.name), platform=platform,
        driver_rule=rule, min_driver=min_driver, floor_driver=floor, ptx_jit=c.ptx, reasons=tuple(reasons),
    )


def _driver_reason(cuda: str, driver: Optional[str], os: str, ds: Any, support: Any) -> Reason:
    source = []
    if support.release is not None:
        source.append(_ref("cuda_toolkits.json", support.release.cuda))
    if support.floor_record is not None:
        source.append(_ref("cuda_minor_compat.json", support.floor_record.cuda_major))
    need = f">= {support.required}" if support.required else "a driver of its branch"
    if ds is None:
        return Reason(f"the driver is unknown: CUDA {cuda} needs {need} on {os}"
                      + (f" (>= {support.floor} through minor-version compatibility)" if support.floor else ""),
                      tuple(source))
    if ds.kind == NATIVE:
        return Reason(f"driver {driver} runs CUDA {cuda} natively ({need} on {os})", tuple(source))
    return Reason(f"driver {driver} runs CUDA {cuda} through minor-version compatibility (>= {support.floor}; "
                  f"CUDA {cuda}'s own minimum is {support.required}); every GPU has SASS, so no PTX needs JIT",
                  tuple(source))


def _passed_over(candidates: List[_Candidate], chosen: str) -> Optional[Reason]:
    """Why the newest release was not chosen, when it was not."""
    if not candidates or candidates[0].release.version == chosen:
        return None
    newest = candidates[0].release.version
    why = sorted({_rejection(c) for c in candidates if c.release.version == newest} - {""})
    if not why:
        return None
    return Reason(f"newer releases were passed over (torch {newest}: {'; '.join(why)})",
                  (_ref("pytorch.json", newest),))


def _rejection(c: _Candidate) -> str:
    name = c.variant.name
    if not c.arch_ok:
        return f"{name} has {c.arch_text}"
    if not c.driver_ok():
        need = c.driver.floor if (c.driver.kind == "too_old" and c.driver.floor) else c.driver.required
        if c.driver.kind == MINOR_COMPAT and not c.gpus_known:
            return f"{name} needs driver >= {c.driver.required} (the GPUs are not known: minor-version compatibility needs SASS for each)"
        if c.driver.kind == MINOR_COMPAT:
            return f"{name} would need PTX JIT with a driver below {c.driver.required}"
        return f"{name} needs driver >= {need}" if need else f"{name}: no driver minimum known"
    if c.python_ok is False:
        return f"{name} has no wheel for this Python"
    return ""


def _span(pythons: Sequence[str]) -> str:
    return pythons[0] if len(pythons) == 1 else f"Python {pythons[0]}–{pythons[-1]}"


# ---------------------------------------------------------------------- nothing fits


def _no_plan(matrix: Matrix, candidates: List[_Candidate], driver: Optional[str], os: str, python: Optional[str],
             ccs: List[Tuple[str, Tuple[int, int]]], platform: str, subject: str, gpu: bool = False) -> NoPlan:
    gpus = ", ".join(f"sm_{cc[0]}{cc[1]}" for _, cc in ccs)
    if not candidates:
        return NoPlan((Reason(f"{subject} has no {'CUDA' if (ccs or gpu) else 'CPU'} wheels for {platform}"),))
    any_arch = _ranked(candidates, use_driver=False, use_python=False)
    if not any_arch:
        newest = candidates[0].release.version
        return NoPlan((Reason(f"no build of {subject} has kernels for {gpus}", (_ref("pytorch.json", newest),)),))

    def make(c: _Candidate) -> TorchPlan:
        return _plan(matrix, c, driver, os, python, ccs, platform, [])

    py, _ = _python_key(python)
    no_python = _ranked(candidates, use_driver=True, use_python=False) if py else []
    no_driver = [c for c in _ranked(candidates, use_driver=False, use_python=True)
                 if _driver_fits_gpus(matrix, c, os, ccs)] if driver else []
    plan_python = make(no_python[0]) if no_python else None
    plan_driver = make(no_driver[0]) if no_driver else None
    reasons: List[Reason] = []
    runs = [c for c in candidates if c.arch_ok and c.driver_ok()]
    if py and runs and not [c for c in runs if c.python_ok is not False]:
        runs_what = f"no build of {subject} that driver {driver} runs" if driver else f"no build of {subject}"
        text = f"{runs_what} has wheels for Python {py}"
        if plan_python:
            pythons = matrix.pytorch.supported_pythons(plan_python.version, platform) or ()
            text += f"; torch {plan_python.label} has wheels for {_span(pythons)}"
        reasons.append(Reason(text, (_ref("pytorch.json", runs[0].release.version),)))
    if driver and not runs:
        text = (f"driver {driver} runs no build of {subject} with kernels for {gpus}" if gpus
                else f"driver {driver} runs no CUDA build of {subject}")
        if plan_driver:
            need = plan_driver.min_driver or plan_driver.floor_driver
            text += f"; torch {plan_driver.label} needs >= {need}"
            source = plan_driver.sources
        else:
            text += ", and no driver branch that supports every GPU would"
            source = (_ref("pytorch.json", any_arch[0].release.version),)
        reasons.append(Reason(text, source))
    python_to_use = None
    if plan_python:
        python_to_use = (matrix.pytorch.supported_pythons(plan_python.version, platform) or (None,))[-1]
    return NoPlan(
        reasons=tuple(reasons),
        driver=(plan_driver.min_driver or plan_driver.floor_driver) if plan_driver else None,
        with_driver=plan_driver,
        newest_build=f"{any_arch[0].release.version}+{any_arch[0].variant.name}",
        python=python_to_use,
        with_python=plan_python,
    )


def _driver_fits_gpus(matrix: Matrix, c: _Candidate, os: str, ccs: List[Tuple[str, Tuple[int, int]]]) -> bool:
    """The driver this candidate needs also supports every GPU's architecture (Kepler stops at R470)."""
    if not c.variant.cuda:
        return True
    support = _driver_support(matrix, "0", c.variant.cuda, os)
    need = support.required or support.floor
    if need is None:
        return False
    return all(matrix.gpus.driver_support(label, need).kind != "driver_dropped_gpu" for label, _ in ccs)

