"""Installs on an NVIDIA Jetson (``jetson.json``): on JetPack 4-6 torch's CUDA wheels come from
NVIDIA's Jetson indexes or wheel files, not from PyPI or PyTorch's desktop index, so the plan
installs from there (or says where to look when no index or file is recorded); on a JetPack that
follows SBSA (JetPack 7) the desktop aarch64 wheels are right, and the driver, part of Jetson
Linux, is not judged by desktop driver minimums. A Jetson described by its GPU alone gets no plan
until its JetPack is given: the wheels depend on it."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Optional, Sequence, Tuple

from cudadoctor.matrix.versions import vkey
from cudadoctor.planner.plan import NoFit, PackagePlan, Pin, Result
from cudadoctor.planner.target import Target
from cudadoctor.planner.torch import INDEX, Reason

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix


def jetson_target(matrix: Matrix, target: Target) -> Target:
    """A Jetson that takes desktop aarch64 wheels, planned without desktop driver minimums."""
    match = matrix.jetson.match(target.jetson_l4t) if target.jetson_l4t else None
    if match is None or match.release.sbsa is not True or target.driver is None:
        return target
    note = (f"Jetson: the driver {target.driver} is part of Jetson Linux {match.l4t} (JetPack {match.jetpack}) and "
            f"runs CUDA up to {match.release.driver_cuda}; desktop driver minimums are not applied")
    return replace(target, driver=None, notes=target.notes + (note,))


def jetson_cuda(matrix: Matrix, target: Target) -> Optional[str]:
    """The CUDA a Jetson that takes desktop aarch64 wheels runs (its BSP driver's), to keep every
    plan to builds of it; None elsewhere."""
    match = matrix.jetson.match(target.jetson_l4t) if target.jetson_l4t else None
    return match.release.driver_cuda if match is not None and match.release.sbsa is True else None


def jetson_torch(matrix: Matrix, target: Target, members: Sequence[str]) -> Optional[Result]:
    """torch for this Jetson when the ordinary planner's wheels would not run on it (JetPack 4-6):
    a plan from the JetPack's own index or wheel file, else where to look; None when they would
    run (not a Jetson, or a JetPack that follows SBSA)."""
    if not target.jetson_l4t:
        return None
    match = matrix.jetson.match(target.jetson_l4t)
    if match is None:
        return NoFit("torch", (Reason(
            f"Jetson Linux {target.jetson_l4t} is not in the compatibility data: which torch wheels run on it is not "
            "known (cudadoctor data update). JetPack 4-6 take NVIDIA's Jetson wheels, JetPack 7 the desktop "
            "aarch64 (SBSA) ones."),))
    r = match.release
    if r.sbsa is True:
        return None
    ref = f"jetson.json#{match.l4t}"
    where = f"JetPack {match.jetpack} (Jetson Linux {match.l4t}{f', CUDA {r.cuda}' if r.cuda else ''})"
    sbsa = ("PyPI's and PyTorch's aarch64 CUDA wheels are built for SBSA servers and do not run on a Jetson's "
            "integrated GPU")
    python = target.python or r.python
    if python != r.python:
        return NoFit("torch", (Reason(f"the torch wheels for {where} are built for Python {r.python} (its Ubuntu "
                                      f"{r.ubuntu}), not {python}", (ref,)),), python=r.python,
                     with_python=f"torch for JetPack {match.jetpack}")
    index = r.wheel_index if r.wheel_index and not r.wheel_index.rstrip("/").endswith("/jp") else None
    reasons = (Reason(f"torch for {where} comes from {r.wheels}; {sbsa}", (ref,)),
               Reason(f"wheels for Python {r.python}, the Python of Ubuntu {r.ubuntu} on this JetPack", (ref,)),
               Reason("the driver is part of Jetson Linux: desktop driver minimums do not apply",
                      ("jetson.json#driver_in_bsp",)))
    if index is not None:
        pins = tuple(Pin(m, "") for m in members)
        note = (f"{index} keeps a few torch releases and has replaced them before: pip takes the newest it serves "
                "(pin one it lists to keep it)",)
        return PackagePlan("torch", f"torch for JetPack {match.jetpack}", "", f"jp{match.jetpack}", r.cuda or r.driver_cuda,
                           pins, index, INDEX, None, reasons, note)
    if r.torch_wheel:
        version = r.torch_wheel.rsplit("/", 1)[-1].split("-")[1]
        others = [m for m in members if m != "torch"]
        notes: Tuple[str, ...] = ((f"NVIDIA publishes no {' or '.join(others)} wheel for JetPack {match.jetpack}: "
                                   "build it from source against this torch",) if others else ())
        return PackagePlan("torch", f"torch {version} (JetPack {match.jetpack})", version, f"jp{match.jetpack}",
                           r.cuda or r.driver_cuda, (Pin("torch", version, url=r.torch_wheel),), None, INDEX, None,
                           reasons, notes)
    return NoFit("torch", (Reason(f"torch for {where} comes from {r.wheels}; compat_data records no index or wheel "
                                  f"file for it; {sbsa}", (ref,)),))


def jetson_other(matrix: Matrix, target: Target, name: str) -> Optional[NoFit]:
    """Frameworks other than torch on a JetPack that does not follow SBSA: not recorded, said so."""
    match = matrix.jetson.match(target.jetson_l4t) if target.jetson_l4t else None
    if match is None or match.release.sbsa is True or not target.gpu_build:
        return None
    return NoFit(name, (Reason(
        f"compat_data does not record which {name} builds run on JetPack {match.jetpack} (Jetson Linux {match.l4t}): "
        "PyPI's aarch64 CUDA wheels are built for SBSA servers and do not run on a Jetson's integrated GPU; "
        "cannot tell from what is known", (f"jetson.json#{match.l4t}",)),))


def jetson_unknown(matrix: Matrix, target: Target, name: str) -> Optional[NoFit]:
    """A Jetson described by its GPU alone: which wheels run depends on its JetPack, which was not given."""
    if not target.jetson_family or target.jetson_l4t:
        return None
    soc = next((s for s in matrix.jetson.socs if s.family == target.jetson_family), None)
    jetpacks = sorted({jp for r in matrix.jetson.releases if soc is not None and soc.soc in r.socs
                       for _, jp in r.releases}, key=vkey)
    span = f" ({target.jetson_family}: JetPack {jetpacks[0]} to {jetpacks[-1]})" if jetpacks else ""
    return NoFit(name, (Reason(
        f"{target.jetson_family} is a Jetson: which {name} wheels run on it depends on its JetPack release, which was "
        f"not given{span}. Plan with --jetpack X.Y (or --l4t, from `cat /etc/nv_tegra_release` on the Jetson)",
        ("jetson.json",)),))
