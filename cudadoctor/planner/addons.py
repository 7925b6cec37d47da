"""Plans for the packages built against one torch: vLLM, xformers, flash-attn and Triton.

Each is pinned to a torch build that fits the machine, by the same rule as torch's own plan
(:func:`cudadoctor.planner.torch.plan_torch`: SASS, PTX and the driver):

- **vllm**: each release's wheels pin one torch (``vllm.json``, from their METADATA) and are built
  against that torch's PyPI build; the newest release whose torch PyPI build fits (GPUs, driver,
  Python, vLLM's own compute-capability floor and Requires-Python) is the plan;
- **xformers**: the newest release whose torch requirement admits the torch planned for this
  machine (PyPI's wheels are built against PyPI's torch of that release);
- **flash-attn**: the generation the GPUs support (``flash_attn.json``); it builds against the
  installed torch, so the torch plan comes with it;
- **triton**: the release the planned torch pins, if its compute-capability floor admits the GPUs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

from cudadoctor.matrix.archs import parse_compute_capability
from cudadoctor.matrix.versions import vkey
from cudadoctor.planner.plan import NoFit, PackagePlan, Pin, Result, from_torch
from cudadoctor.planner.target import Target
from cudadoctor.planner.torch import INDEX, NoPlan, Reason, TorchPlan, plan_torch

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

ADDONS = ("vllm", "xformers", "flash-attn", "triton")


def plan_addon(matrix: Matrix, name: str, target: Target, version: Optional[str] = None) -> Result:
    if not target.gpu_build:
        return NoFit(name, (Reason(f"{name} runs only on an NVIDIA GPU ({target.cpu_because or 'no GPU described'})"),))
    if not target.platform.startswith("linux"):
        return NoFit(name, (Reason(f"{name} publishes Linux wheels only (under WSL2 they apply: --os wsl2)",
                                   ("vllm.json#platforms",) if name == "vllm" else ()),))
    if name == "vllm":
        return _vllm(matrix, target, version)
    if name == "xformers":
        return _xformers(matrix, target, version)
    if name == "flash-attn":
        return _flash_attn(matrix, target)
    return _triton(matrix, target)


def _cc_key(cc: str) -> Tuple[int, int]:
    parsed = parse_compute_capability(cc)
    return parsed if parsed is not None else (0, 0)


def _below(target: Target, floor: Optional[str]) -> List[str]:
    return [cc for cc in target.compute_capabilities if floor and _cc_key(cc) < _cc_key(floor)]


def _torch_for(matrix: Matrix, target: Target, version: Optional[str], pypi_build: bool) -> Tuple[Optional[TorchPlan], Optional[NoPlan]]:
    """The torch build for ``target`` (of ``version``; with ``pypi_build`` the PyPI build of that release only)."""
    cuda = None
    if pypi_build and version:
        rel = matrix.pytorch.release(version)
        var = rel.variant(rel.linux_default_variant) if rel is not None else None
        if var is None or not var.cuda:
            return None, NoPlan((Reason(f"torch {version}'s PyPI build is not a CUDA build"),))
        cuda = var.cuda
    found = plan_torch(matrix, target.driver, target.driver_os, target.python, target.compute_capabilities,
                       target.platform, version=version, cuda=cuda, gpu=True)
    return (found, None) if isinstance(found, TorchPlan) else (None, found)


def _torch_pin(torch: TorchPlan) -> Tuple[Pin, ...]:
    """The planned torch as a pin beside the package built against it."""
    return (Pin("torch", torch.version),)


def _with_torch(name: str, label: str, version: str, pins: Tuple[Pin, ...], torch: TorchPlan, target: Target,
                reasons: Sequence[Reason], notes: Sequence[str] = ()) -> PackagePlan:
    base = from_torch(torch, ("torch",), target.driver)
    return PackagePlan(name, label, version, f"torch {torch.label}", torch.cuda, pins, torch.index_url if
                       any(p.name == "torch" for p in pins) else None, INDEX, base.driver,
                       tuple(reasons) + torch.reasons, tuple(notes), torch=torch)


# ---------------------------------------------------------------------- vLLM


def _vllm(matrix: Matrix, t: Target, version: Optional[str]) -> Result:
    addons = matrix.addons
    floor_fact = addons.vllm_min_compute_capability
    rows = sorted(addons.vllm, key=lambda r: vkey(r.version), reverse=True)
    if version:
        rows = [r for r in rows if r.version == version or r.version.startswith(version + ".")]
    rejected: List[str] = []
    driver_fix: Optional[Tuple[str, str]] = None
    python_fix: Optional[Tuple[str, str]] = None
    for row in rows:
        if not row.torch.startswith("=="):
            continue
        torch_version = row.torch[2:]
        ref = f"vllm.json#{row.version}"
        low = _below(t, floor_fact.value if floor_fact else None)
        if low:
            return NoFit("vllm", (Reason(f"vLLM needs compute capability >= {floor_fact.value if floor_fact else '?'} "
                                         f"(not {', '.join(low)})", ("vllm.json#min_compute_capability",)),))
        py_ok = addons.vllm_supports_python(row.version, t.python) if t.python else None
        plan, none = _torch_for(matrix, t, torch_version, pypi_build=True)
        if plan is None:
            why = none.reasons[0].text if none is not None and none.reasons else "no build fits"
            rejected.append(f"vllm {row.version} (torch {torch_version}'s PyPI build: {why})")
            if none is not None and none.driver and none.with_driver and driver_fix is None:
                driver_fix = (none.driver, row.version)
            continue
        if py_ok is False:
            rejected.append(f"vllm {row.version} (Requires-Python {row.requires_python})")
            if python_fix is None and row.requires_python:
                python_fix = (row.requires_python, row.version)
            continue
        reasons = [Reason(f"vllm {row.version}'s wheels pin torch {row.torch[2:]} and are built against its PyPI build "
                          f"({plan.label}): pip installs that torch with it", (ref,))]
        if t.python:
            reasons.append(Reason(f"wheels for Python {t.python}" + (f" (Requires-Python {row.requires_python})"
                                                                     if row.requires_python else ""), (ref,)))
        else:
            reasons.append(Reason("the Python is unknown: " + (f"Requires-Python {row.requires_python}"
                                                               if row.requires_python else "not recorded"), (ref,)))
        if rejected:
            reasons.append(Reason(f"newer releases were passed over ({'; '.join(rejected[:3])}"
                                  + (" ..." if len(rejected) > 3 else "") + ")"))
        notes: Tuple[str, ...] = (f"install it in a fresh environment: vllm pins torch=={torch_version}, and pip "
                                  "replaces another torch",)
        if plan.driver_rule == "minor_compat":
            notes += ("vLLM compiles Triton kernels at run time, which the build's SASS does not cover: under CUDA "
                      "minor-version compatibility whether this driver loads them is not known from the data "
                      "(a driver of the build's CUDA removes the question)",)
        return _with_torch("vllm", f"vllm {row.version}", row.version, (Pin("vllm", row.version),), plan, t,
                           reasons, notes)
    reasons = [Reason(f"no vLLM release in compat_data fits: {'; '.join(rejected[:4]) or 'none recorded'}",
                      ("vllm.json",))]
    return NoFit("vllm", tuple(reasons), driver=driver_fix[0] if driver_fix else None,
                 with_driver=f"vllm {driver_fix[1]}" if driver_fix else None,
                 python=_python_in(python_fix[0]) if python_fix else None,
                 with_python=f"vllm {python_fix[1]}" if python_fix else None)


def _python_in(spec: str) -> Optional[str]:
    """The lowest 3.x a Requires-Python like '<3.15,>=3.11' admits ('3.11')."""
    for part in spec.split(","):
        part = part.strip()
        if part.startswith(">="):
            return part[2:]
    return None


# ---------------------------------------------------------------------- xformers


def _xformers(matrix: Matrix, t: Target, version: Optional[str]) -> Result:
    from cudadoctor.matrix.addons import spec_allows

    torch, none = _torch_for(matrix, t, None, pypi_build=False)
    if torch is None:
        return NoFit("xformers", ((none.reasons if none else ()) + (Reason("xformers needs a torch build that fits"),)))
    rows = sorted(matrix.addons.xformers, key=lambda r: vkey(r.version), reverse=True)
    if version:
        rows = [r for r in rows if r.version == version or r.version.startswith(version + ".")]
    for row in rows:
        if spec_allows(row.torch, torch.version):
            reasons = [Reason(f"xformers {row.version} requires torch {row.torch}: torch {torch.label} fits it",
                              (f"xformers.json#{row.version}",))]
            notes = ("PyPI's xformers wheels are built against PyPI's torch build of that release; with torch from "
                     "another index, install them in one command so pip keeps that torch",)
            pins = _torch_pin(torch) + (Pin("xformers", row.version),)
            return _with_torch("xformers", f"xformers {row.version}", row.version, pins, torch, t, reasons, notes)
    return NoFit("xformers", (Reason(f"no xformers release in compat_data requires a torch that admits "
                                     f"{torch.label} (the torch that fits this machine)", ("xformers.json",)),))


# ---------------------------------------------------------------------- flash-attn


def _flash_attn(matrix: Matrix, t: Target) -> Result:
    gens = [g for g in matrix.addons.flash_attn if g.package == "flash-attn"]
    if not t.compute_capabilities:
        return NoFit("flash-attn", (Reason("the GPUs are not known: flash-attn's generations depend on the compute "
                                           "capability (give --gpu or --cc)", ("flash_attn.json",)),))
    lowest = min(t.compute_capabilities, key=_cc_key)
    fit = [g for g in gens if _cc_key(lowest) >= _cc_key(g.min_compute_capability)
           and (g.max_compute_capability is None or _cc_key(max(t.compute_capabilities, key=_cc_key))
                <= _cc_key(g.max_compute_capability))]
    if not fit:
        return NoFit("flash-attn", (Reason(f"no flash-attn generation supports compute capability {lowest}",
                                           ("flash_attn.json",)),))
    gen = max(fit, key=lambda g: vkey(g.first))
    torch, none = _torch_for(matrix, t, None, pypi_build=False)
    if torch is None:
        return NoFit("flash-attn", (none.reasons if none else ()) + (Reason("flash-attn builds against torch: no "
                                                                              "torch build fits"),))
    series = gen.first.split(".")[0]
    reasons = [Reason(f"flash-attn {series}.x supports compute capability >= {gen.min_compute_capability}"
                      + (f" and <= {gen.max_compute_capability}" if gen.max_compute_capability else ""),
                      (f"flash_attn.json#{gen.package}-{gen.first}",))]
    notes = ["flash-attn's PyPI release is a source distribution: it compiles against the installed torch "
             f"({torch.label}) with nvcc of CUDA {torch.cuda} (--no-build-isolation keeps that torch), or takes a "
             "prebuilt wheel of its GitHub release named for the same CUDA major and torch series"]
    newer = [g for g in matrix.addons.flash_attn if g.package != "flash-attn"
             and all(_cc_key(g.min_compute_capability) <= _cc_key(c) and (g.max_compute_capability is None or
                     _cc_key(c) <= _cc_key(g.max_compute_capability)) for c in t.compute_capabilities)]
    notes += [f"{g.package} also supports these GPUs (compute capability {g.min_compute_capability}"
              + (f" to {g.max_compute_capability}" if g.max_compute_capability else " and newer") + ")" for g in newer]
    pins = _torch_pin(torch) + (Pin("flash-attn", series, exact=False),)
    return _with_torch("flash-attn", f"flash-attn {series}.x", series, pins, torch, t, reasons, notes)


# ---------------------------------------------------------------------- Triton


def _triton(matrix: Matrix, t: Target) -> Result:
    torch, none = _torch_for(matrix, t, None, pypi_build=False)
    if torch is None:
        return NoFit("triton", (none.reasons if none else ()) + (Reason("triton comes with torch: no torch build "
                                                                          "fits"),))
    pin = matrix.addons.triton_pin(torch.version)
    if pin is None:
        return NoFit("triton", (Reason(f"compat_data does not record the triton torch {torch.version} pins",
                                       ("triton.json",)),))
    release = matrix.addons.triton_release(pin.triton)
    low = _below(t, release.min_compute_capability if release else None)
    if low and release is not None:
        older = [p for p in sorted(matrix.addons.triton_pins, key=lambda p: vkey(p.torch), reverse=True)
                 if (r := matrix.addons.triton_release(p.triton)) is not None and not _below(t, r.min_compute_capability)]
        hint = f"; torch {older[0].torch} (triton {older[0].triton}) is the newest whose Triton supports it" if older else ""
        return NoFit("triton", (Reason(f"triton {pin.triton}, which torch {torch.version} pins, needs compute capability "
                                       f">= {release.min_compute_capability} (not {', '.join(low)}): torch.compile "
                                       f"cannot use these GPUs{hint}", (f"triton.json#{release.first}",)),))
    reasons = [Reason(f"torch {torch.label} requires triton {pin.spec}: pip installs it with torch",
                      (f"triton.json#{pin.torch}",))]
    if release is not None:
        reasons.append(Reason(f"triton {pin.triton} supports compute capability >= {release.min_compute_capability}",
                              (f"triton.json#{release.first}",)))
    notes = [f"torch {torch.label} runs here through CUDA minor-version compatibility; Triton compiles its kernels "
             "at run time (torch.compile), which its SASS does not cover: whether this driver loads them is not "
             "known from the data (a driver of the build's CUDA removes the question)"] if torch.driver_rule == "minor_compat" else []
    return _with_torch("triton", f"triton {pin.triton}", pin.triton, _torch_pin(torch) + (Pin("triton", pin.triton),),
                       torch, t, reasons, notes)
