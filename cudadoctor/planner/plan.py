"""What every framework's plan looks like, and the one rule that picks among the builds.

A framework planner (torch in :mod:`.planner`, the others in :mod:`.planner_frameworks`) turns the
matrix into :class:`Option` rows, newest first: a build, the pins that install it, and whether
it fits the target's GPUs, driver, Python and platform. :func:`choose` takes the first option
that fits every constraint (preferring, at the same version, the CUDA major the rest of the
stack uses) and returns a :class:`PackagePlan`; when none fits, a :class:`NoFit` that says what
would: the driver to install, the Python to use, the older release that still supports the card.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple, Union
from cudadoctor.record import frozen

from cudadoctor.matrix.versions import at_least, vkey
from cudadoctor.planner.torch import INDEX, NoPlan, Reason, TorchPlan

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

CUDA_KINDS = ("native", "minor_compat", "not_given")


@frozen
class Pin:
    """One requirement: ``tensorflow[and-cuda]==2.21.0``, or ``cupy-cuda12x==15.*`` when the data
    names the release series only (``exact`` False)."""

    name: str
    version: str  # "": any version the index serves (a Jetson index that keeps one or two)
    exact: bool = True
    extras: Tuple[str, ...] = ()
    url: Optional[str] = None  # a wheel file, where no index serves the build

    @property
    def spec(self) -> str:
        if not self.version:
            return ""
        return f"=={self.version}" if self.exact else f"=={self.version}.*"

    @property
    def requirement(self) -> str:
        if self.url:
            return self.url
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        return f"{self.name}{extras}{self.spec}"


@frozen
class DriverFit:
    """Whether the driver runs a build's CUDA: ``native``, ``minor_compat`` (above the major's
    floor only), ``too_old``, or ``not_given`` (the driver is unknown; ``required`` is what the
    build needs)."""

    kind: str
    cuda: str
    required: Optional[str]
    floor: Optional[str] = None
    source: Tuple[str, ...] = ()
    exact: bool = True  # False: only the build's CUDA major is known, judged by its first minor

    @property
    def ok(self) -> bool:
        return self.kind in CUDA_KINDS

    @property
    def need(self) -> Optional[str]:
        """The driver to install for it: its CUDA's own minimum (else the major's floor)."""
        return self.required or self.floor

    @property
    def need_text(self) -> str:
        """'>= 555.42.02 (>= 525.60.13 through minor-version compatibility)'."""
        text = f">= {self.need}"
        if self.floor and self.required and self.floor != self.required:
            text += f" (>= {self.floor} through minor-version compatibility)"
        return text


@frozen
class Option:
    """One build a framework could be installed as, and how it fits the target."""

    framework: str  # torch | tensorflow | jax | cupy | onnxruntime-gpu
    version: str  # the release ("2.21.0") or series ("15") the pins name
    build: str  # cu128, cpu, cuda12, cupy-cuda12x, ...
    cuda: Optional[str]  # "12.5", or a major "12"; None for CPU builds
    pins: Tuple[Pin, ...]
    index_url: Optional[str] = None  # None: PyPI
    index_mode: str = INDEX
    arch_ok: bool = True
    arch_text: str = ""  # what the build lacks for the GPUs, when arch_ok is False
    driver: Optional[DriverFit] = None  # None: a CPU build
    pythons: Optional[Tuple[str, ...]] = None  # None: the data does not say
    python_ok: Optional[bool] = None
    platform_ok: bool = True
    platform_text: str = ""
    preferred: bool = False  # the CUDA major the rest of the stack uses
    fallback: bool = False  # chosen only when no other option fits
    cudnn: Optional[str] = None  # the cuDNN the build is made with (or needs at least)
    reasons: Tuple[Reason, ...] = ()
    notes: Tuple[str, ...] = ()
    ptx: Tuple[str, ...] = ()  # compute capabilities the build serves only through PTX JIT
    kernels_known: bool = True  # False: the build's SASS for the GPUs is not recorded (or the GPUs are not known)

    @property
    def label(self) -> str:
        return f"{self.framework} {self.version} ({self.build})"

    @property
    def driver_ok(self) -> bool:
        """The driver runs the build: PTX only at the build's exact CUDA, natively (PTX newer than
        the driver cannot be JIT-compiled under minor-version compatibility)."""
        if self.driver is None:
            return True
        if self.ptx and self.driver.kind != "not_given" and (self.driver.kind != "native" or not self.driver.exact):
            return False
        if self.driver.kind == "minor_compat" and not self.kernels_known:
            return False  # minor-version compatibility holds only for SASS, which nothing here shows
        return self.driver.ok

    def fits(self) -> bool:
        return self.platform_ok and self.arch_ok and self.python_ok is not False and self.driver_ok


@frozen
class PackagePlan:
    framework: str
    label: str  # "torch 2.9.1+cu128", "cupy-cuda12x 15.* (CUDA 12)"
    version: str
    build: str
    cuda: Optional[str]
    pins: Tuple[Pin, ...]
    index_url: Optional[str]
    index_mode: str
    driver: Optional[DriverFit]
    reasons: Tuple[Reason, ...]
    notes: Tuple[str, ...] = ()
    mirror_variant: Optional[str] = None  # torch: the variant a mirror's URL keeps
    torch: Optional[TorchPlan] = None
    cudnn: Optional[str] = None

    @property
    def gpu(self) -> bool:
        return self.cuda is not None

    @property
    def sources(self) -> Tuple[str, ...]:
        return tuple(dict.fromkeys(s for r in self.reasons for s in r.source))


@frozen
class NoFit:
    """Nothing fits; what would."""

    framework: str
    reasons: Tuple[Reason, ...]
    driver: Optional[str] = None  # install at least this driver ...
    with_driver: Optional[str] = None  # ... to get this build
    python: Optional[str] = None  # use this Python ...
    with_python: Optional[str] = None  # ... to get this build
    newest_build: Optional[str] = None  # the newest build with kernels for every GPU

    @property
    def sources(self) -> Tuple[str, ...]:
        return tuple(dict.fromkeys(s for r in self.reasons for s in r.source))

    def what_would(self) -> List[str]:
        out = []
        if self.driver and self.with_driver:
            out.append(f"install NVIDIA driver {self.driver} or newer: then {self.with_driver} fits")
        if self.python and self.with_python:
            out.append(f"use Python {self.python}: then {self.with_python} fits")
        return out


Result = Union[PackagePlan, NoFit]


# ---------------------------------------------------------------------- choosing


def driver_fit(matrix: Matrix, driver: Optional[str], cuda: str, os: str) -> DriverFit:
    """How ``driver`` runs CUDA ``cuda`` ('12.5', or a major '12': its first minor) on ``os``."""
    exact = len(vkey(cuda)) > 1
    name = cuda if exact else f"{cuda}.0"
    support = matrix.cuda.driver_support(driver or "0", name, os)
    source = []
    if support.release is not None:
        source.append(f"cuda_toolkits.json#{support.release.cuda}")
    if support.floor_record is not None:
        source.append(f"cuda_minor_compat.json#{support.floor_record.cuda_major}")
    kind = "not_given" if driver is None else support.kind
    return DriverFit(kind, name if exact else cuda, support.required, support.floor, tuple(source), exact)


def fixed_driver_fit(driver: Optional[str], minimum: str, cuda: str, source: str) -> DriverFit:
    """A build whose own record names its minimum driver (JAX)."""
    if driver is None:
        return DriverFit("not_given", cuda, minimum, None, (source,))
    return DriverFit("native" if at_least(driver, minimum) else "too_old", cuda, minimum, None, (source,))


def driver_reason(fit: DriverFit, driver: Optional[str], os: str) -> Reason:
    need = f">= {fit.required}" if fit.required else "a driver of its branch"
    compat = f" (>= {fit.floor} through minor-version compatibility)" if fit.floor and fit.floor != fit.required else ""
    if fit.kind == "not_given":
        return Reason(f"the driver is unknown: CUDA {fit.cuda} needs {need} on {os}{compat}", fit.source)
    if fit.kind == "native" and not fit.exact:
        return Reason(f"driver {driver} runs CUDA {fit.cuda}.x builds (>= {fit.floor or fit.required} on {os}); the "
                      "build's exact CUDA minor is not recorded, so whether it runs natively or through minor-version "
                      "compatibility is not known", fit.source)
    if fit.kind == "native":
        return Reason(f"driver {driver} runs CUDA {fit.cuda} natively ({need} on {os})", fit.source)
    if fit.kind == "minor_compat":
        return Reason(f"driver {driver} runs CUDA {fit.cuda} through minor-version compatibility (>= {fit.floor}; "
                      f"its own minimum is {fit.required}): kernels it ships only as PTX cannot be JIT-compiled",
                      fit.source)
    return Reason(f"driver {driver} is too old for CUDA {fit.cuda} ({need} on {os}{compat})", fit.source)


def choose(options: Sequence[Option], subject: str, gpus: str, gpu_ok: Any = None) -> Result:
    """The first option that fits (options come newest first; at the same version the preferred
    CUDA major first), else what would. ``gpu_ok(driver_version) -> bool`` says whether a driver
    branch still supports every GPU (Kepler stops at R470)."""
    fit = [o for o in options if o.fits() and not o.fallback] or [o for o in options if o.fits()]
    if fit:  # PTX is the last resort: a build with SASS for every GPU first, whatever its version
        best = sorted(fit, key=lambda o: (o.kernels_known and not o.ptx, vkey(o.version), o.preferred),
                      reverse=True)[0]
        return _plan(best, options)
    framework = options[0].framework if options else subject.split()[0]
    platform_ok = [o for o in options if o.platform_ok]
    if not platform_ok:
        texts = list(dict.fromkeys(o.platform_text for o in options if o.platform_text)) or [f"no {subject} build"]
        return NoFit(framework, tuple(Reason(t, _first_source(options)) for t in texts))
    arch = [o for o in platform_ok if o.arch_ok]
    if not arch:
        return NoFit(framework, (Reason(f"no {subject} build in compat_data has kernels for {gpus}: "
                                        f"{platform_ok[0].label} {platform_ok[0].arch_text}",
                                        _first_source(platform_ok)),))
    reasons: List[Reason] = []
    with_python = next((o for o in arch if o.driver_ok), None)
    python_to_use = with_python.pythons[-1] if with_python and with_python.pythons else None
    if with_python is not None and python_to_use:
        reasons.append(Reason(f"no {subject} build that fits the driver and GPUs has wheels for this Python; "
                              f"{with_python.label} has them for Python {_span(with_python.pythons or ())}",
                              with_python.reasons[0].source if with_python.reasons else ()))
    with_driver = next((o for o in arch if o.python_ok is not False and o.driver is not None and not o.driver_ok
                        and _need(o) and (gpu_ok is None or gpu_ok(_need(o)))), None)
    if with_driver is not None and with_driver.driver is not None:
        need_text = (f">= {with_driver.driver.required} (its PTX for {', '.join(with_driver.ptx)} is JIT-compiled only "
                     f"by a driver of its CUDA {with_driver.driver.cuda})" if with_driver.ptx and with_driver.driver.ok
                     else with_driver.driver.need_text)
        reasons.append(Reason(f"the driver runs no {subject} build with kernels for {gpus}; {with_driver.label} "
                              f"needs {need_text}", with_driver.driver.source))
    elif not reasons:
        reasons.append(Reason(f"no {subject} build fits: the newest with kernels for {gpus} is {arch[0].label}",
                              _first_source(arch)))
    return NoFit(
        framework, tuple(reasons),
        driver=_need(with_driver) if with_driver else None,
        with_driver=with_driver.label if with_driver else None,
        python=python_to_use, with_python=with_python.label if python_to_use and with_python else None,
        newest_build=arch[0].label,
    )


def _need(o: Option) -> Optional[str]:
    """The driver an option needs: its CUDA's own minimum where its PTX must be JIT-compiled."""
    if o.driver is None:
        return None
    return o.driver.required if ((o.ptx or not o.kernels_known) and o.driver.required) else o.driver.need


def _first_source(options: Sequence[Option]) -> Tuple[str, ...]:
    return options[0].reasons[0].source if options and options[0].reasons else ()


def _span(pythons: Sequence[str]) -> str:
    return pythons[0] if len(pythons) == 1 else f"{pythons[0]}–{pythons[-1]}"


def _plan(o: Option, options: Sequence[Option]) -> PackagePlan:
    reasons = list(o.reasons)
    newest = max((vkey(x.version) for x in options), default=())
    if newest > vkey(o.version):  # why the newest release was not chosen
        top = [x for x in options if vkey(x.version) == newest]
        why = sorted({_rejection(x) for x in top} - {""})
        if why:
            reasons.append(Reason(f"newer releases were passed over ({'; '.join(why)})", _first_source(top)))
    # builds of the same release for a newer CUDA that this GPU cannot run (cupy-cuda13x on a GTX 1080)
    same = [x for x in options if x is not o and x.version == o.version and x.cuda and o.cuda
            and vkey(x.cuda) > vkey(o.cuda) and not x.arch_ok]
    if same:
        why = sorted({_rejection(x) for x in same} - {""})
        reasons.append(Reason(f"the builds for a newer CUDA were passed over ({'; '.join(why)})",
                              tuple(dict.fromkeys(src for x in same for r in x.reasons if "compute capability" in r.text
                                                  for src in r.source)) or _first_source(same)))
    label = f"{o.framework} {o.version}" + (f" ({o.build})" if o.build else "")
    return PackagePlan(o.framework, label, o.version, o.build, o.cuda, o.pins, o.index_url, o.index_mode,
                       o.driver, tuple(reasons), o.notes, cudnn=o.cudnn)


def _rejection(o: Option) -> str:
    if not o.platform_ok:
        return f"{o.label}: {o.platform_text}"
    if not o.arch_ok:
        return f"{o.label}: {o.arch_text}"
    if o.driver is not None and not o.driver_ok and o.ptx and o.driver.ok:
        return (f"{o.label} has only PTX for compute capability {', '.join(o.ptx)}, which needs driver >= {o.driver.required} "
                f"(CUDA {o.driver.cuda}) to JIT-compile")
    if o.driver is not None and not o.driver_ok and o.driver.ok:
        return (f"{o.label} runs on this driver only through minor-version compatibility, which needs SASS for "
                f"every GPU, and its kernels are not recorded: it needs driver >= {o.driver.required}")
    if o.driver is not None and not o.driver_ok:
        return f"{o.label} needs driver {o.driver.need_text}"
    if o.python_ok is False:
        return f"{o.label} has no wheels for this Python"
    return ""


# ---------------------------------------------------------------------- torch


def from_torch(plan: TorchPlan, packages: Sequence[str], driver: Optional[str], cudnn: Optional[str] = None
               ) -> PackagePlan:
    """A TorchPlan as a PackagePlan: the same pins, index and reasons."""
    versions = {"torch": plan.version, "torchvision": plan.torchvision, "torchaudio": plan.torchaudio}
    wanted = ["torch"] + [p for p in packages if p != "torch"]
    pins = tuple(Pin(p, versions[p] or "") for p in wanted if versions.get(p))
    fit = None
    if plan.cuda:
        kind = plan.driver_rule if driver else "not_given"
        source = tuple(s for s in plan.sources if s.startswith(("cuda_toolkits.json", "cuda_minor_compat.json")))
        fit = DriverFit(kind or "not_given", plan.cuda, plan.min_driver, plan.floor_driver, source)
    return PackagePlan("torch", f"torch {plan.label}", plan.version, plan.variant, plan.cuda, pins, plan.index_url,
                       INDEX, fit, plan.reasons, mirror_variant=plan.variant, torch=plan, cudnn=cudnn)


def from_no_plan(none: NoPlan) -> NoFit:
    return NoFit(
        "torch", none.reasons,
        driver=none.driver, with_driver=f"torch {none.with_driver.label}" if none.with_driver else None,
        python=none.python, with_python=f"torch {none.with_python.label}" if none.with_python else None,
        newest_build=f"torch {none.newest_build}" if none.newest_build else None,
    )


def with_reason(plan: PackagePlan, reason: Reason) -> PackagePlan:
    return replace(plan, reasons=plan.reasons + (reason,))
