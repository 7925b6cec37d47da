"""The ``cudadoctor docker`` pipeline below the API: read each file, follow a compose service's
``build:`` to its Dockerfile (through the reader the caller gives: this module opens nothing),
run the container checks against the host, and say what each image carries."""

from __future__ import annotations

import posixpath
from dataclasses import replace
from typing import Callable, List, Optional, Sequence, Tuple

from cudadoctor.checks.containers import check_spec
from cudadoctor.checks.containers_facts import HostFacts, image_of
from cudadoctor.containers.model import DockerResult, Located, Spec, Unit
from cudadoctor.containers.read import read_spec
from cudadoctor.matrix import Matrix

Reader = Callable[[str], Optional[str]]  # a path -> its text, or None when it cannot be read


def _built(unit: Unit, base: str, read: Reader) -> Unit:
    """A compose service built from a Dockerfile runs the final stage's image and its CMD."""
    if unit.image or not unit.build:
        return unit
    path = posixpath.normpath(posixpath.join(base, unit.build))
    text = read(path)
    if text is None:
        return replace(unit, image_note=f"build: {unit.build}: the Dockerfile could not be read")
    spec = read_spec(path, text)
    final = next((u for u in spec.units if u.runs), None)
    if final is None:
        return replace(unit, image_note=f"build: {unit.build}: no FROM in it")
    # the image only: the Dockerfile's own lines are checked when it is given itself
    return replace(unit, image=final.image, image_note=final.image_note and f"{path}: {final.image_note}",
                   commands=unit.commands + final.commands[-1:])


def _image_line(spec: Spec, unit: Unit, matrix: Matrix) -> Tuple[str, int, str]:
    img = image_of(unit, matrix)
    label = {"stage": f"stage {unit.name}", "service": f"service {unit.name}", "run": "docker run"}[unit.kind]
    if img is None:
        what = unit.image_note or "no base image"
    elif img.cuda:
        what = f"{img.reference}: CUDA {img.cuda} ({img.cuda_from})" + (f", {img.flavour}" if img.flavour else "") + \
            (f", {img.framework} {img.framework_version}" if img.framework and img.framework_version else "")
    elif img.known:
        what = f"{img.reference}: " + ("no CUDA (a CPU image)" if img.gpu is False else "CUDA not known") + \
            (f"; {img.note}" if img.note and img.gpu is not False and "not in the data" in img.note else "")
    else:
        what = f"{img.reference}: not an image the data knows; its CUDA is not known"
    return spec.path, unit.image_line or unit.line, f"{label}: {what}"


def run_docker(files: Sequence[Tuple[str, str]], host: HostFacts, matrix: Matrix, read: Reader,
               tool_version: str = "") -> DockerResult:
    """Check ``files`` ((path, text) pairs) against ``host``."""
    specs: List[Spec] = []
    found: List[Located] = []
    images: List[Tuple[str, int, str]] = []
    for path, text in files:
        spec = read_spec(path, text)
        if spec.kind == "compose":
            base = posixpath.dirname(path)
            spec = replace(spec, units=tuple(_built(u, base, read) for u in spec.units))
        specs.append(spec)
        found.extend(check_spec(spec, host, matrix))
        images.extend(_image_line(spec, u, matrix) for u in spec.units if u.runs)
    unjudged = []
    if not host.driver:
        unjudged.append(f"{host.where} has no known NVIDIA driver: no image's CUDA was judged against one "
                        "(give --driver, --gpu or --machine)")
    if host.datacenter is None and host.driver:
        unjudged.append("no GPU is known: CUDA forward compatibility (data-centre GPUs only) was not assumed "
                        "(give --gpu)")
    return DockerResult(tuple(specs), tuple(found), host.where, host.driver, host.gpu_names, tuple(images),
                        tuple(unjudged), matrix.data_version, tool_version)
