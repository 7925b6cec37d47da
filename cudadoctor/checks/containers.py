"""Checks of container files (``cudadoctor docker``): each rule is a pure function of one
:class:`~cudadoctor.containers.model.Unit` (a Dockerfile stage, a compose service, a ``docker
run`` line), what its base image carries (``matrix.images``) and the host it will run on (its
driver and GPUs: this machine or a described one). Findings carry the line they are about and
the same codes as ``check`` where the cause is the same (docs/findings/)."""

from __future__ import annotations

from typing import Callable, List, Optional, Tuple

from cudadoctor.checks.base import finding, ref
from cudadoctor.checks.containers_facts import (
    HostFacts, TorchBuild, fc_verdict, image_of, needs_gpu, torch_builds, torch_line, uses_gpu,
)
from cudadoctor.checks.containers_fix import compose_gpu_lines, from_line_for_driver, from_line_with_devel
from cudadoctor.containers.model import Located, Spec, Unit
from cudadoctor.matrix import Matrix
from cudadoctor.matrix.images import ImageFacts
from cudadoctor.matrix.versions import major, major_minor
from cudadoctor.model import Category, Finding, Severity
from cudadoctor.record import frozen

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
Rule = Callable[[Unit, Optional[ImageFacts], HostFacts, Matrix], List[Tuple[int, Finding]]]


def _mm(cuda: str) -> str:
    return ".".join(str(x) for x in major_minor(cuda))


# ---------------------------------------------------------------------------- the base image vs the driver


def rule_image_driver(unit: Unit, img: Optional[ImageFacts], host: HostFacts, matrix: Matrix) -> List[Tuple[int, Finding]]:
    if not unit.runs or img is None or not img.cuda or not host.driver:
        return []
    ds = matrix.cuda.driver_support(host.driver, img.cuda, host.os)
    what = f"{img.reference} (CUDA {img.cuda}, from {img.cuda_from})"
    src = list(img.source) + ([ref("cuda_minor_compat.json", ds.floor_record.cuda_major)] if ds.floor_record else [])
    if ds.kind == "minor_compat":
        return [(unit.image_line, finding(
            "driver-minor-version-compat", W, Category.DRIVER_TOO_OLD,
            f"{img.reference} runs on driver {host.driver} only through CUDA minor-version compatibility",
            why=f"{what} needs driver {ds.required} for everything CUDA {_mm(img.cuda)} can do; driver {host.driver} "
                f"runs CUDA {major(img.cuda)}.x through minor-version compatibility (>= {ds.floor}), so the image runs. "
                f"What needs the newer driver: PTX from CUDA {_mm(img.cuda)} cannot be JIT-compiled by this driver "
                "(kernels shipped only as PTX, and code that generates PTX at run time such as Triton or "
                "torch.compile, fail with 'the provided PTX was compiled with an unsupported toolchain'), and CUDA "
                "APIs newer than the driver return cudaErrorCallRequiresNewerDriver.",
            fix=f"Nothing to change to run prebuilt kernels. For PTX JIT, upgrade the host driver to {ds.required} or "
                "newer, or keep the image's CUDA at the driver's.",
            evidence=[f"{unit.name}.image"], source=src))]
    if ds.kind != "too_old":
        return []
    fc = fc_verdict(unit, img, host)
    if fc.runs:
        return [(unit.image_line, finding(
            "cuda-forward-compat", INFO, Category.DRIVER_TOO_OLD,
            f"{img.reference} runs on driver {host.driver} only through CUDA forward compatibility",
            why=f"{what} needs driver {ds.floor or ds.required} or newer; driver {host.driver} is older. {fc.why}",
            fix=f"Nothing to do on this host. On a GeForce/RTX GPU, or without the compat libraries, upgrade the "
                f"driver to {ds.floor or ds.required} or newer.",
            evidence=[f"{unit.name}.image"], source=src))]
    edited = from_line_for_driver(matrix, img, host)
    commands = [edited] if edited else []
    return [(unit.image_line, finding(
        "driver-too-old-for-build", E, Category.DRIVER_TOO_OLD,
        f"{img.reference} needs a newer NVIDIA driver than {host.driver}",
        why=f"{what} needs a driver that supports CUDA {major(img.cuda)}.x (>= {ds.floor or ds.required}); the host's "
            f"driver is {host.driver}. CUDA calls in the container fail with 'CUDA driver version is insufficient "
            f"for CUDA runtime version' (torch: 'The NVIDIA driver on your system is too old'). {fc.why}",
        fix=(f"Upgrade the host driver to {ds.floor or ds.required} or newer, or build on an image whose CUDA this "
             "driver runs" + (" (the newest release it runs natively; check that NVIDIA publishes the tag for this "
                              "OS in the image's supported-tags list):" if edited else ".")),
        commands=commands, evidence=[f"{unit.name}.image"], source=src))]


def rule_image_unknown(unit: Unit, img: Optional[ImageFacts], host: HostFacts, matrix: Matrix) -> List[Tuple[int, Finding]]:
    if not unit.runs or (img is not None and img.cuda) or not uses_gpu(unit, img, matrix):
        return []
    if img is not None and img.known and img.gpu is False:
        return []
    why = unit.image_note or (f"{img.reference}: {img.note}" if img is not None and img.note else
                              f"{unit.image}: no pattern of container_images.json names its CUDA, and the data has no "
                              "record of it" if unit.image else "no base image")
    return [(unit.image_line or unit.line, finding(
        "image-cuda-unknown", INFO, Category.OTHER,
        f"the CUDA of {unit.image or 'the base image'} cannot be told, so its fit with the driver is not judged",
        why=why + ". The packages installed on it are still checked.",
        fix="Run it and ask the image: docker run --rm --gpus all IMAGE nvidia-smi (its CUDA: ls /usr/local/cuda*, "
            "or python -c 'import torch; print(torch.version.cuda)').",
        evidence=[f"{unit.name}.image"]))]


# ---------------------------------------------------------------------------- installs on the image


def rule_torch(unit: Unit, img: Optional[ImageFacts], host: HostFacts, matrix: Matrix) -> List[Tuple[int, Finding]]:
    out: List[Tuple[int, Finding]] = []
    if not unit.runs:
        return out
    gpu_image = img is not None and img.gpu is True
    for build in torch_builds(unit, matrix):
        if build.cuda is None and (gpu_image or unit.gpu):
            out.append((build.line, _cpu_only(unit, img, build, host, matrix)))
            continue
        if build.cuda is None:
            continue
        if img is not None and img.cuda and major_minor(img.cuda) != major_minor(build.cuda):
            out.append((build.line, _differs(unit, img, build, host, matrix)))
        if host.driver:
            out.extend(_torch_driver(unit, img, build, host, matrix))
    return out


def _cpu_only(unit: Unit, img: Optional[ImageFacts], b: TorchBuild, host: HostFacts, matrix: Matrix) -> Finding:
    line = torch_line(matrix, host, img.cuda if img is not None else None)
    where = f"{img.reference}, a CUDA image" if img is not None and img.gpu else "a container given a GPU"
    return finding(
        "cpu-only-build", E, Category.CPU_ONLY_BUILD,
        f"{b.spec} is a CPU-only build, installed in {where}",
        why=f"{b.how}: that torch has no CUDA, so torch.cuda.is_available() is False in the container whatever the "
            "image and the GPU.",
        fix="Install a CUDA build" + (f" of the image's CUDA ({_mm(img.cuda)})" if img is not None and img.cuda else "")
            + (" instead:" if line else "."),
        commands=[f"RUN {line}"] if line else [], evidence=[f"{unit.name}.installs"], source=b.source)


def _differs(unit: Unit, img: ImageFacts, b: TorchBuild, host: HostFacts, matrix: Matrix) -> Finding:
    assert img.cuda is not None and b.cuda is not None
    line = torch_line(matrix, host, img.cuda)
    nvcc = (f" {img.reference} has nvcc {_mm(img.cuda)}: extensions built here are compiled with CUDA "
            f"{_mm(img.cuda)} against a torch of CUDA {_mm(b.cuda)}, which torch's extension builder refuses when the "
            "majors differ." if img.nvcc else "")
    return finding(
        "image-torch-cuda-differs", W, Category.LIBRARY_VERSION_CONFLICT,
        f"{b.spec} brings CUDA {_mm(b.cuda)} into an image of CUDA {_mm(img.cuda)}: two CUDA runtimes",
        why=f"{b.how}; the image carries CUDA {img.cuda} ({img.cuda_from}). torch loads its own CUDA "
            f"{_mm(b.cuda)} libraries (its nvidia-* wheels), and anything else in the image loads CUDA "
            f"{_mm(img.cuda)} from /usr/local/cuda: two copies of cuBLAS, cuDNN and NCCL, and the larger one decides "
            f"the driver the container needs.{nvcc}",
        fix=(f"Install torch built for the image's CUDA {_mm(img.cuda)}:" if line else
             f"Use an image of CUDA {_mm(b.cuda)}, or a torch build of CUDA {_mm(img.cuda)}."),
        commands=[f"RUN {line}"] if line else [], evidence=[f"{unit.name}.installs", f"{unit.name}.image"],
        source=list(b.source) + list(img.source))


def _torch_driver(unit: Unit, img: Optional[ImageFacts], b: TorchBuild, host: HostFacts,
                  matrix: Matrix) -> List[Tuple[int, Finding]]:
    assert b.cuda is not None and host.driver is not None
    ds = matrix.cuda.driver_support(host.driver, b.cuda, host.os)
    if ds.kind != "too_old":
        return []
    fc = fc_verdict(unit, img, host) if img is not None else None
    if fc is not None and fc.runs:
        return []  # the image's forward-compatibility libraries serve torch's CUDA as well (said at the FROM line)
    line = torch_line(matrix, host, None)
    return [(b.line, finding(
        "driver-too-old-for-build", E, Category.DRIVER_TOO_OLD,
        f"{b.spec} needs a newer NVIDIA driver than {host.driver}",
        why=f"{b.how}: torch brings CUDA {_mm(b.cuda)}, which needs a driver that supports CUDA {major(b.cuda)}.x "
            f"(>= {ds.floor or ds.required}); the host's driver is {host.driver}. torch.cuda.is_available() returns "
            "False with 'The NVIDIA driver on your system is too old'.",
        fix=f"Upgrade the host driver to {ds.floor or ds.required} or newer, or install a torch build this driver runs"
            + (":" if line else "."),
        commands=[f"RUN {line}"] if line else [], evidence=[f"{unit.name}.installs"], source=b.source))]


def rule_extension_build(unit: Unit, img: Optional[ImageFacts], host: HostFacts, matrix: Matrix) -> List[Tuple[int, Finding]]:
    if img is None or img.nvcc is not False:
        return []
    words = {w.lower() for w in matrix.images.words("extension_builds")}
    out = []
    for inst in unit.installs:
        names = [r.name for r in inst.requirements if r.name in words]
        if not names:
            continue
        edited = from_line_with_devel(img)
        out.append((inst.line, finding(
            "image-builds-without-nvcc", W, Category.MISSING_LIBRARY,
            f"{', '.join(names)} may compile CUDA code here, and {img.reference} has no nvcc",
            why=f"{img.reference} is a {img.flavour} image: only devel images carry nvcc, the headers and the static "
                f"libraries. {', '.join(names)} compiles its CUDA kernels at install time when no prebuilt wheel "
                "matches this torch, CUDA and Python, and then fails with 'nvcc was not found' or 'CUDA_HOME "
                "environment variable is not set'.",
            fix="Build in a devel stage" + (" (this FROM line)" if edited else "") + " and copy the result into this "
                "one, or install a prebuilt wheel that matches the image's torch and CUDA.",
            commands=[edited] if edited else [], evidence=[f"{unit.name}.installs", f"{unit.name}.image"],
            source=list(img.source) + [ref("container_images.json", "extension_builds")])))
    return out


# ---------------------------------------------------------------------------- what the container is given


def rule_gpu_request(unit: Unit, img: Optional[ImageFacts], host: HostFacts, matrix: Matrix) -> List[Tuple[int, Finding]]:
    if unit.kind not in ("service", "run") or unit.gpu or not needs_gpu(unit, img):
        return []
    what = "compose service" if unit.kind == "service" else "docker run"
    lines = compose_gpu_lines() if unit.kind == "service" else ["docker run --gpus all ..."]
    return [(unit.line, finding(
        "container-without-gpu", E, Category.CONTAINER_NO_GPU,
        f"{what} {unit.name if unit.kind == 'service' else ''}".rstrip() + " asks for no GPU",
        why=f"It runs {unit.image or 'a GPU workload'}, which needs a GPU, and requests none (no "
            + ("deploy.resources.reservations.devices, gpus: or runtime: nvidia" if unit.kind == "service" else
               "--gpus, --runtime=nvidia or --device nvidia.com/gpu") + "): the container starts without "
            "/dev/nvidia* and without the driver's libraries, and CUDA finds no device.",
        fix="Request the GPUs (the NVIDIA Container Toolkit must be installed on the host):",
        commands=lines, evidence=[f"{unit.name}.gpu"]))]


def rule_shm(unit: Unit, img: Optional[ImageFacts], host: HostFacts, matrix: Matrix) -> List[Tuple[int, Finding]]:
    if unit.kind not in ("service", "run") or unit.ipc_host:
        return []
    default = float((matrix.images.fact("docker_default_shm_mib") or _NO_FACT).value or 0)
    size = unit.shm_mib if unit.shm_mib is not None else default
    if not default or size > default:
        return []
    markers = matrix.images.words("shm_needed_by")
    text = " ".join([c for c, _ in unit.commands] + [f"{v.name}={v.value}" for v in unit.all_env()])
    hits = [m for m in markers if m in text]
    if not hits:
        return []
    set_how = f"shm_size {unit.shm_mib:g} MiB" if unit.shm_mib is not None else f"Docker's default of {default:g} MB"
    fix_line = "    ipc: host" if unit.kind == "service" else "docker run --ipc=host ..."
    return [(unit.shm_line or unit.line, finding(
        "shm-too-small", W, Category.OTHER,
        f"{unit.name}: /dev/shm is {set_how}, and it runs {', '.join(hits[:3])}",
        why=f"NCCL, DataLoader workers and torch.multiprocessing pass data through /dev/shm; at {size:g} MB NCCL "
            "crashes in ncclShmOpen ('unhandled system error') and DataLoader workers die with 'Unexpected bus error "
            "encountered in worker. This might be caused by insufficient shared memory (shm)'.",
        fix="Share the host's IPC namespace, or give /dev/shm room for the workers and ranks "
            "(shm_size / --shm-size):", commands=[fix_line],
        evidence=[f"{unit.name}.shm_size", f"{unit.name}.ipc"],
        source=[ref("container_images.json", "docker_default_shm_mib"), ref("container_images.json", "shm_needed_by")]))]


class _NoFact:
    value = ""


_NO_FACT = _NoFact()


def rule_visible_devices(unit: Unit, img: Optional[ImageFacts], host: HostFacts, matrix: Matrix) -> List[Tuple[int, Finding]]:
    out: List[Tuple[int, Finding]] = []
    nvidia = unit.env_value("NVIDIA_VISIBLE_DEVICES")
    hiding = {w.lower() for w in matrix.images.words("visible_devices_hiding")}
    if nvidia is not None and (nvidia.value.strip().lower() in hiding or not nvidia.value.strip()):
        out.append((nvidia.line, finding(
            "nvidia-visible-devices-none", E, Category.VISIBLE_DEVICES_HIDDEN,
            f"NVIDIA_VISIBLE_DEVICES={nvidia.value!r}: the container runtime passes no GPU in",
            why="The NVIDIA container runtime mounts only the GPUs this variable names; 'none' mounts none, 'void' or "
                "empty turns GPU support off for the container.",
            fix="Set it to the GPUs to use, or leave it out (the CUDA images set it to all):",
            commands=["NVIDIA_VISIBLE_DEVICES=all"], evidence=[f"{unit.name}.env.NVIDIA_VISIBLE_DEVICES"],
            source=[ref("container_images.json", "visible_devices_hiding")])))
    caps = unit.env_value("NVIDIA_DRIVER_CAPABILITIES")
    needed = {w.lower() for w in matrix.images.words("driver_capabilities_cuda")}
    given = {w.strip().lower() for w in (caps.value if caps is not None else "").split(",")}
    if caps is not None and needed and not given & needed:
        out.append((caps.line, finding(
            "driver-capabilities-without-compute", E, Category.CONTAINER_NO_GPU,
            f"NVIDIA_DRIVER_CAPABILITIES={caps.value!r} leaves out compute: no libcuda in the container",
            why="The NVIDIA container runtime mounts the driver's libraries by capability; CUDA needs 'compute' (or "
                "'all'), and without it the container has no libcuda.so: CUDA programs fail to find a driver.",
            fix="Add compute to the capabilities:", commands=[f"NVIDIA_DRIVER_CAPABILITIES={caps.value},compute"
                                                               if caps.value.strip() else
                                                               "NVIDIA_DRIVER_CAPABILITIES=compute,utility"],
            evidence=[f"{unit.name}.env.NVIDIA_DRIVER_CAPABILITIES"],
            source=[ref("container_images.json", "driver_capabilities_cuda")])))
    cuda = unit.env_value("CUDA_VISIBLE_DEVICES")
    if cuda is not None:
        first = cuda.value.split(",")[0].strip()
        if not (first.isdigit() or first.startswith(("GPU-", "MIG-"))):
            out.append((cuda.line, finding(
                "cuda-visible-devices-hides-all", E, Category.VISIBLE_DEVICES_HIDDEN,
                f"CUDA_VISIBLE_DEVICES={cuda.value!r} hides every GPU from CUDA programs",
                why="CUDA enumerates only the devices CUDA_VISIBLE_DEVICES lists, up to the first invalid entry; "
                    "this value lists none.",
                fix="Leave it out, or list the GPUs to use:", commands=["CUDA_VISIBLE_DEVICES=0"],
                evidence=[f"{unit.name}.env.CUDA_VISIBLE_DEVICES"])))
    return out


@frozen
class ContainerCheck:
    """One rule of ``cudadoctor docker``, with the codes it may produce (docs/findings/)."""

    name: str
    fn: Rule
    codes: Tuple[str, ...]
    summary: str


CONTAINER_CHECKS: Tuple[ContainerCheck, ...] = (
    ContainerCheck("docker-visible-devices", rule_visible_devices,
                   ("nvidia-visible-devices-none", "cuda-visible-devices-hides-all", "driver-capabilities-without-compute"),
                   "NVIDIA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES and CUDA_VISIBLE_DEVICES in the file let CUDA "
                   "reach the GPUs"),
    ContainerCheck("docker-gpu-request", rule_gpu_request, ("container-without-gpu",),
                   "a service or docker run line that runs a GPU image asks for the GPUs"),
    ContainerCheck("docker-image-driver", rule_image_driver,
                   ("driver-too-old-for-build", "cuda-forward-compat", "driver-minor-version-compat"),
                   "the host's driver runs the base image's CUDA"),
    ContainerCheck("docker-image-known", rule_image_unknown, ("image-cuda-unknown",),
                   "the base image's CUDA is known (its tag or the data says it)"),
    ContainerCheck("docker-torch", rule_torch, ("cpu-only-build", "image-torch-cuda-differs", "driver-too-old-for-build"),
                   "a pip torch in the file is a CUDA build of the image's CUDA that the driver runs"),
    ContainerCheck("docker-extension-build", rule_extension_build, ("image-builds-without-nvcc",),
                   "packages that compile CUDA code are installed on an image with nvcc"),
    ContainerCheck("docker-shm", rule_shm, ("shm-too-small",),
                   "NCCL, distributed launchers and DataLoader workers get more than Docker's 64 MB /dev/shm"),
)


def _crashed(name: str, exc: BaseException) -> Finding:
    return finding(f"{name}-crashed", Severity.CRASHED, Category.OTHER, f"the {name} rule crashed: {type(exc).__name__}",
                   why=f"{type(exc).__name__}: {exc}. This is a bug in cudadoctor, not in the file.",
                   fix="Report it with the file (cudadoctor docker --debug shows the traceback).")


def check_spec(spec: Spec, host: HostFacts, matrix: Matrix) -> List[Located]:
    """Every finding about one container file, by line; a rule that raises becomes a crashed
    finding (never aborts the run)."""
    out: List[Located] = []
    for unit in spec.units:
        img = image_of(unit, matrix)
        for check in CONTAINER_CHECKS:
            try:
                found = check.fn(unit, img, host, matrix)
            except Exception as exc:  # noqa: BLE001 - a rule's bug is a finding, as in `check`
                found = [(unit.line, _crashed(check.name, exc))]
            out.extend(Located(spec.path, line, f, unit.name) for line, f in found)
    return sorted(out, key=lambda loc: (loc.line, _ORDER[loc.finding.severity]))


_ORDER = {Severity.CRASHED: 0, Severity.ERROR: 1, Severity.WARNING: 2, Severity.INFO: 3, Severity.OK: 4}


def codes() -> List[str]:
    """Every code the container checks may produce, in table order, once each."""
    out: List[str] = []
    for check in CONTAINER_CHECKS:
        out.extend(c for c in check.codes if c not in out)
    return out
