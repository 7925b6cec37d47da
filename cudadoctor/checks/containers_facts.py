"""What the container checks know: the host (driver, GPUs, whether they are data-centre GPUs),
each unit's base image (``matrix.images``; a stage's image, or the CUDA of a TensorFlow -gpu tag
from that release's tested build), the torch builds its installs bring, whether CUDA forward
compatibility runs an image on this host, and the planner's install line for a CUDA."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import List, Optional, Tuple

from cudadoctor.checks.base import ref
from cudadoctor.containers.model import Install, Requirement, Unit
from cudadoctor.matrix import Matrix
from cudadoctor.matrix.images import ImageFacts
from cudadoctor.matrix.versions import at_least, major, major_minor
from cudadoctor.planner.target import Target
from cudadoctor.record import frozen

_CU = re.compile(r"(?:^|/)cu(\d{2,3})(?:/|$)")
_WHL = re.compile(r"/whl/(?:nightly/)?(cu\d{2,3}|cpu)(?:/|$)")
_GPU_PACKAGES = ("torch", "tensorflow", "jax", "cupy", "onnxruntime-gpu", "vllm", "flash-attn", "xformers")


@frozen
class HostFacts:
    """The machine the containers will run on."""

    driver: Optional[str]
    gpu_names: Tuple[str, ...]
    datacenter: Optional[bool]  # every GPU is a data-centre GPU; None: not known (no GPU named)
    target: Target
    os: str = "linux"
    where: str = "this machine"


def host_facts(matrix: Matrix, target: Target, where: str) -> HostFacts:
    segments = []
    for name in target.gpu_names:
        found, _ = matrix.gpus.resolve(name)
        segments.append(getattr(found, "segment", None) if found is not None else None)
    datacenter = None if not segments or None in segments else all(s == "datacenter" for s in segments)
    return HostFacts(target.driver, tuple(target.gpu_names), datacenter, target, target.driver_os, where)


def image_of(unit: Unit, matrix: Matrix) -> Optional[ImageFacts]:
    if not unit.image:
        return None
    img = matrix.images.image(unit.image)
    if img.known and img.cuda is None and img.framework == "tensorflow" and img.gpu and img.framework_version and \
            img.framework_version != "latest":
        row = matrix.ecosystem.tensorflow.config(img.framework_version, "linux")
        if row is not None:
            img = replace(img, cuda=row.cuda, cudnn=img.cudnn or row.cudnn,
                          cuda_from=f"TensorFlow {row.version}'s tested build", source=img.source + (
                              ref("tensorflow.json", row.version),))
    return img


def needs_gpu(unit: Unit, img: Optional[ImageFacts]) -> bool:
    """The unit evidently needs a GPU: a GPU image, or NVIDIA_*/CUDA_VISIBLE_DEVICES set (a
    CUDA package alone is not enough: torch's PyPI wheels are CUDA builds and run on a CPU too)."""
    return bool(img is not None and img.gpu) or any(
        v.name.startswith("NVIDIA_") or v.name == "CUDA_VISIBLE_DEVICES" for v in unit.all_env())


def uses_gpu(unit: Unit, img: Optional[ImageFacts], matrix: Matrix) -> bool:
    """The unit means to use a GPU if it can: it needs one, asks for one, or installs a CUDA package."""
    if unit.gpu or needs_gpu(unit, img):
        return True
    for inst in unit.all_installs():
        for r in inst.requirements:
            if r.name in _GPU_PACKAGES and not (r.local == "cpu" or "/cpu" in (inst.index_url or "")):
                return True
    return False


@frozen
class TorchBuild:
    line: int
    spec: str
    cuda: Optional[str]  # None: a CPU build
    how: str  # how the build was told, in words
    source: Tuple[str, ...] = ()


def _cuda_of_tag(tag: str) -> Optional[str]:
    """'cu121' -> '12.1', 'cu118' -> '11.8', 'cu92' -> '9.2'."""
    digits = tag[2:]
    return f"{digits[:-1]}.{digits[-1]}" if tag.startswith("cu") and digits.isdigit() and len(digits) >= 2 else None


def _index_variant(inst: Install) -> Optional[str]:
    for url in (inst.index_url,) + inst.extra_index_urls + inst.find_links:
        m = _WHL.search(url or "")
        if m:
            return m.group(1)
    return None


def _torch_build(inst: Install, r: Requirement, matrix: Matrix) -> Optional[TorchBuild]:
    label = f"line {inst.line} installs {r.spec}"
    if inst.manager == "conda":
        return None
    if r.local:
        cuda = _cuda_of_tag(r.local)
        return TorchBuild(inst.line, r.spec, cuda, f"{label}: its local version +{r.local} is a "
                          + (f"CUDA {cuda} build" if cuda else "CPU build"))
    variant = _index_variant(inst)
    if variant is not None and (inst.index_url and variant in inst.index_url):
        cuda = _cuda_of_tag(variant)
        return TorchBuild(inst.line, r.spec, cuda, f"{label} from {inst.index_url}, the "
                          + (f"CUDA {cuda} index" if cuda else "CPU index"))
    if inst.index_url and "download.pytorch.org" not in inst.index_url:
        return None  # a mirror or private index: which build it serves is not told
    version = r.version or (matrix.pytorch.releases[-1].version if matrix.pytorch.releases else None)
    pypi = matrix.pytorch.pypi_variant(version) if version else None
    if pypi is None:
        return None
    told = f"{label} from PyPI" + ("" if r.version else f" (unpinned: the newest release the data knows is {version})")
    return TorchBuild(inst.line, r.spec, pypi.cuda, f"{told}, whose Linux wheel of {version} is the "
                      + (f"CUDA {pypi.cuda} build" if pypi.cuda else "CPU build"), (ref("pytorch.json", version),))


def torch_builds(unit: Unit, matrix: Matrix) -> List[TorchBuild]:
    out = []
    for inst in unit.all_installs():
        for r in inst.requirements:
            if r.name == "torch" and not r.from_source:
                build = _torch_build(inst, r, matrix)
                if build is not None:
                    out.append(build)
    return out


@frozen
class ForwardCompat:
    runs: bool
    why: str


def _fc_driver_listed(driver: str, listed: Tuple[str, ...]) -> bool:
    """The driver is one of the branches listed (each given by its lowest version) and not older."""
    return any(major(driver) == major(low) and at_least(driver, low) for low in listed)


def fc_verdict(unit: Unit, img: Optional[ImageFacts], host: HostFacts) -> ForwardCompat:
    """Does CUDA forward compatibility run ``img`` on this host (data-centre GPU, the image ships
    the compat libraries and keeps them on LD_LIBRARY_PATH, and, where the release notes list
    drivers, this driver is one of them)?"""
    if img is None or not img.forward_compat:
        return ForwardCompat(False, "The image is not known to ship the CUDA forward-compatibility package."
                             if img is None or img.forward_compat is None else
                             "The image does not ship the CUDA forward-compatibility package.")
    if host.datacenter is not True:
        gpus = ", ".join(host.gpu_names) or "no GPU named"
        return ForwardCompat(False, f"The image ships the CUDA forward-compatibility package, which runs only on "
                             f"data-centre GPUs; the host's GPU is {gpus}" + (
                                 "" if host.datacenter is False else " (whether it is a data-centre GPU is not "
                                 "known: give --gpu)") + ".")
    ld = unit.env_value("LD_LIBRARY_PATH")
    if ld is not None and "compat" not in ld.value and "LD_LIBRARY_PATH" not in ld.value:
        return ForwardCompat(False, f"The image ships the forward-compatibility libraries in /usr/local/cuda/compat, "
                             f"but line {ld.line} sets LD_LIBRARY_PATH={ld.value!r}, which drops them from the "
                             "library path.")
    if img.forward_compat_drivers is not None and host.driver and \
            not _fc_driver_listed(host.driver, img.forward_compat_drivers):
        return ForwardCompat(False, f"Its release notes allow forward compatibility on data-centre GPUs only with "
                             f"drivers {', '.join(img.forward_compat_drivers)} (or later of each branch); "
                             f"{host.driver} is not one of them.")
    listed = (f" with a driver its release notes list ({', '.join(img.forward_compat_drivers)})"
              if img.forward_compat_drivers else " (which driver branches NVIDIA's forward-compatibility table "
              "supports is not in the data)")
    return ForwardCompat(True, f"The image ships NVIDIA's CUDA forward-compatibility package and the host has "
                         f"data-centre GPUs ({', '.join(host.gpu_names)}){listed}: the container runs on the newer "
                         "user-space driver libraries of the package.")


def torch_line(matrix: Matrix, host: HostFacts, cuda: Optional[str]) -> Optional[str]:
    """The planner's pip line for torch on this host, kept to ``cuda`` (its minor, else its
    major) when given; None when nothing fits."""
    from cudadoctor.planner.install import plan_install
    from cudadoctor.planner.target import with_gpu_build

    target = with_gpu_build(host.target)
    tries: List[Optional[str]] = [None]
    if cuda:
        mm = ".".join(str(x) for x in major_minor(cuda))
        tries = [mm, str(major(cuda))]
    for keep in tries:
        try:
            result = plan_install(matrix, target, ["torch"], manager="pip", cuda=keep, upgrade=True)
        except Exception:  # noqa: BLE001 - no plan for that CUDA: try the next
            continue
        if result.ok and result.commands:
            return result.commands[-1]
    return None
