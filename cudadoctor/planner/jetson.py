"""Installs on an NVIDIA Jetson (``jetson.json``): on JetPack 4-6 torch's CUDA wheels come from
NVIDIA's Jetson indexes, not from PyPI or PyTorch's desktop index, so the plan says where they come
from; on a JetPack that follows SBSA (JetPack 7) the desktop aarch64 wheels are right, and the
driver, part of Jetson Linux, is not judged by desktop driver minimums."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Optional, Sequence

from cudadoctor.planner.plan import NoFit
from cudadoctor.planner.target import Target
from cudadoctor.planner.torch import Reason

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


def jetson_torch(matrix: Matrix, target: Target, members: Sequence[str]) -> Optional[NoFit]:
    """Where torch for this Jetson comes from, when the ordinary planner's wheels would not run on it;
    None when they would (not a Jetson, or a JetPack that follows SBSA)."""
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
    cuda = f", CUDA {r.cuda}" if r.cuda else ""
    text = (f"torch for JetPack {match.jetpack} (Jetson Linux {match.l4t}{cuda}) comes from "
            f"{r.wheel_index + ' (' + r.wheels + ')' if r.wheel_index else r.wheels}; PyPI's and PyTorch's aarch64 "
            "CUDA wheels are built for SBSA servers and do not run on this Jetson's GPU")
    if r.wheel_index:
        text += f": pip install {' '.join(members)} --index-url {r.wheel_index}"
    return NoFit("torch", (Reason(text, (f"jetson.json#{match.l4t}",)),))
