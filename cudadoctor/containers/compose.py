"""The compose reader: each service's image or build, its GPU request (``deploy.resources
.reservations.devices`` with ``driver: nvidia`` or ``capabilities: [gpu]``, ``gpus:``,
``runtime: nvidia``), ``shm_size``, ``ipc: host``, ``environment`` (list or mapping) and its
``command``/``entrypoint`` (installs in them are read too)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from cudadoctor.containers.installs import read_installs
from cudadoctor.containers.model import EnvVar, Spec, Unit
from cudadoctor.containers.yamlish import Node, parse

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.I)
_UNIT_MIB = {"": 1 / (1024 * 1024), "k": 1 / 1024, "m": 1.0, "g": 1024.0, "t": 1024.0 * 1024}
MAX_SERVICES = 10000


def size_mib(text: Optional[str]) -> Optional[float]:
    """'64m' / '1gb' / '2G' / '67108864' -> MiB (docker's units are binary); None: not a size."""
    m = _SIZE.match(text or "")
    return float(m.group(1)) * _UNIT_MIB[m.group(2).lower()] if m else None


def _words(node: Optional[Node]) -> str:
    if node is None:
        return ""
    if isinstance(node.value, list):
        return " ".join(n.text() or "" for n in node.items())
    return node.text() or ""


def _env(node: Optional[Node]) -> Tuple[EnvVar, ...]:
    if node is None:
        return ()
    out: List[EnvVar] = []
    if isinstance(node.value, dict):
        for key, value in node.value.items():
            out.append(EnvVar(key, value.text() or "", value.line))
    for item in node.items():
        name, _, value = (item.text() or "").partition("=")
        if name:
            out.append(EnvVar(name.strip(), value, item.line))
    return tuple(out)


def _gpu(service: Node) -> Tuple[bool, int, str]:
    devices = service.get("deploy")
    for key in ("resources", "reservations", "devices"):
        devices = devices.get(key) if devices is not None else None
    for device in devices.items() if devices is not None else []:
        driver_node = device.get("driver")
        driver = (driver_node.text() or "") if driver_node is not None else ""
        caps = device.get("capabilities")
        cap_words = [c.text() or "" for c in caps.items()] if caps is not None else []
        if driver.lower() == "nvidia" or "gpu" in cap_words:
            return True, device.line, "deploy.resources.reservations.devices"
    gpus = service.get("gpus")
    if gpus is not None and (gpus.text() or gpus.items()):
        return True, gpus.line, f"gpus: {gpus.text() or 'list'}"
    runtime = service.get("runtime")
    if runtime is not None and (runtime.text() or "").lower() == "nvidia":
        return True, runtime.line, "runtime: nvidia"
    return False, 0, ""


def _service(name: str, node: Node) -> Unit:
    image = node.get("image")
    build = node.get("build")
    build_path = None
    if build is not None:
        if build.text() is not None:
            build_path = f"{build.text()}/Dockerfile"
        else:
            context = build.get("context")
            dockerfile = build.get("dockerfile")
            build_path = "/".join(p for p in ((context.text() if context else None) or ".",
                                              (dockerfile.text() if dockerfile else None) or "Dockerfile") if p)
    gpu, gpu_line, how = _gpu(node)
    shm = node.get("shm_size")
    ipc = node.get("ipc")
    commands = []
    installs = []
    for key in ("entrypoint", "command"):
        part = node.get(key)
        if part is not None:
            text = _words(part)
            commands.append((text[:500], part.line))
            installs.extend(read_installs(text, part.line))
    where = image.line if image is not None else build.line if build is not None else node.line
    return Unit("service", name, node.line, image.text() if image else None, where,
                "" if image is not None or build is not None else "no image and no build",
                installs=tuple(installs), env=_env(node.get("environment")), commands=tuple(commands),
                gpu=gpu, gpu_line=gpu_line, gpu_how=how,
                shm_mib=size_mib(shm.text()) if shm is not None else None, shm_line=shm.line if shm else 0,
                ipc_host=(ipc.text() or "") == "host" if ipc is not None else False, build=build_path)


def read_compose(path: str, text: str) -> Spec:
    root = parse(text)
    services = root.get("services")
    notes: List[Tuple[int, str]] = []
    if services is None or not isinstance(services.value, dict):
        notes.append((1, "no services: mapping"))
        return Spec(path, "compose", (), tuple(notes), text.count("\n") + 1)
    units = []
    for name, node in list(services.value.items())[:MAX_SERVICES]:
        if isinstance(node.value, dict):
            units.append(_service(name, node))
    return Spec(path, "compose", tuple(units), tuple(notes), text.count("\n") + 1)
