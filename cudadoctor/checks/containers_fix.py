"""Fixes of container findings as edited lines: a FROM line whose CUDA the host driver runs, a
devel flavour for a build stage, the compose lines that request the GPUs."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

from cudadoctor.matrix import Matrix
from cudadoctor.matrix.images import ImageFacts
from cudadoctor.matrix.versions import major_minor, vkey

if TYPE_CHECKING:
    from cudadoctor.checks.containers_facts import HostFacts


def from_line_for_driver(matrix: Matrix, img: ImageFacts, host: "HostFacts") -> Optional[str]:
    """``FROM nvidia/cuda:<cuda>-...`` with the newest CUDA release this driver runs natively, for
    images whose tag names the CUDA first (nvidia/cuda); None for the others (their tags are not
    in the data)."""
    if not host.driver or not img.cuda or not img.tag.startswith(img.cuda + "-") or img.repository.find("cuda") < 0:
        return None
    newest = matrix.cuda.newest_cuda_for_driver(host.driver)
    if newest is None:
        return None
    fits = [t.cuda for t in matrix.cuda.toolkits if not t.prerelease and major_minor(t.cuda) == major_minor(newest)
            and matrix.cuda.driver_support(host.driver, t.cuda, host.os).kind == "native"]
    if not fits:
        return None
    cuda = max(fits, key=vkey)
    return f"FROM {img.repository}:{cuda}{img.tag[len(img.cuda):]}"


def from_line_with_devel(img: ImageFacts) -> Optional[str]:
    """The same image in its devel flavour (nvidia/cuda, pytorch/pytorch tags name the flavour)."""
    if img.flavour not in ("runtime", "base") or f"-{img.flavour}" not in img.tag:
        return None
    return f"FROM {img.repository}:{img.tag.replace(f'-{img.flavour}', '-devel', 1)} AS build"


def compose_gpu_lines() -> List[str]:
    """The service keys that reserve every GPU (Compose's device reservation)."""
    return ["    deploy:", "      resources:", "        reservations:", "          devices:",
            "            - driver: nvidia", "              count: all", "              capabilities: [gpu]"]
