"""What the container readers produce: a :class:`Spec` of :class:`Unit` s (a Dockerfile stage, a
compose service, a ``docker run`` line), each fact with the line it was read from (1-based)."""

from __future__ import annotations

from typing import List, Optional, Tuple

from cudadoctor.model import Finding
from cudadoctor.record import frozen

MAX_BYTES = 4 * 1024 * 1024  # a container file larger than this is read up to here, and said so
MAX_LINE = 64 * 1024  # one logical line (an instruction with its continuations) is cut here
MAX_CHAIN = 10000  # stages built on stages, followed at most this deep


@frozen
class Requirement:
    """One package of an install command."""

    name: str  # normalised: lower case, '-' for '_' and '.'
    spec: str  # as written: 'torch==2.5.1+cu121'
    version: Optional[str] = None  # the exact pin, without its local part: '2.5.1'
    local: Optional[str] = None  # the local version label: 'cu121', 'cpu'
    extras: Tuple[str, ...] = ()
    from_source: bool = False  # a VCS/URL install, or --no-binary: built here


@frozen
class Install:
    """One ``pip install`` / ``uv pip install`` / ``conda install`` command."""

    line: int
    manager: str  # pip | uv | conda
    requirements: Tuple[Requirement, ...]
    index_url: Optional[str] = None  # --index-url / -i (pip, uv)
    extra_index_urls: Tuple[str, ...] = ()
    find_links: Tuple[str, ...] = ()
    channels: Tuple[str, ...] = ()  # conda -c
    build_isolation: bool = True  # False with --no-build-isolation
    text: str = ""  # the command as written (cut to a readable length)


@frozen
class EnvVar:
    name: str
    value: str
    line: int


@frozen
class Unit:
    """Something that runs in a container (or a build stage that one is built from)."""

    kind: str  # stage | service | run
    name: str  # stage name or index, service name, 'docker run'
    line: int  # where it starts
    image: Optional[str] = None  # the base image reference, ARG-substituted; None: none or not literal
    image_line: int = 0
    image_note: str = ""  # why the image is not known ("ARG BASE has no default")
    parent: Optional[str] = None  # a Dockerfile stage built FROM an earlier stage: its name
    installs: Tuple[Install, ...] = ()
    env: Tuple[EnvVar, ...] = ()
    commands: Tuple[Tuple[str, int], ...] = ()  # what runs (CMD, ENTRYPOINT, command:, run's command)
    runs: bool = True  # False: a build stage only (not the final one)
    gpu: Optional[bool] = None  # GPUs requested (compose, run); None: a Dockerfile does not say
    gpu_line: int = 0
    gpu_how: str = ""  # 'deploy.resources.reservations.devices', 'gpus: all', 'runtime: nvidia', '--gpus all'
    shm_mib: Optional[float] = None  # shm_size / --shm-size; None: not set (Docker's default)
    shm_line: int = 0
    ipc_host: bool = False
    build: Optional[str] = None  # compose build: the Dockerfile it names (relative to the compose file)
    inherits: Optional["Unit"] = None  # a stage built FROM an earlier stage: that stage (shared, not copied)

    def chain(self) -> List["Unit"]:
        """This unit and the stages it is built on, the oldest first."""
        out: List[Unit] = []
        unit: Optional[Unit] = self
        while unit is not None and len(out) < MAX_CHAIN:
            out.append(unit)
            unit = unit.inherits
        return out[::-1]

    def all_installs(self) -> List[Install]:
        """What is installed in this unit: its stages' installs, in order, then its own."""
        return [i for u in self.chain() for i in u.installs]

    def all_env(self) -> List[EnvVar]:
        return [v for u in self.chain() for v in u.env]

    def env_value(self, name: str) -> Optional[EnvVar]:
        """The last setting of ``name`` (later ENV lines override earlier ones, a stage its base's)."""
        unit: Optional[Unit] = self
        while unit is not None:
            for var in reversed(unit.env):
                if var.name == name:
                    return var
            unit = unit.inherits
        return None


@frozen
class Spec:
    path: str
    kind: str  # dockerfile | compose | run
    units: Tuple[Unit, ...]
    notes: Tuple[Tuple[int, str], ...] = ()  # (line, what could not be read)
    lines: int = 0
    truncated: bool = False


@frozen
class Located:
    """A finding about a container file, at the line it is about."""

    path: str
    line: int
    finding: Finding
    unit: str = ""  # the stage, service or run line it concerns


@frozen
class DockerResult:
    """What ``cudadoctor docker`` found: the files read, the findings by line, the host judged
    against, and one line per running unit saying what its base image carries."""

    specs: Tuple[Spec, ...]
    findings: Tuple[Located, ...]
    where: str  # "this machine", "the described machine", "the machine of report.json"
    driver: Optional[str]
    gpus: Tuple[str, ...]
    images: Tuple[Tuple[str, int, str], ...] = ()  # (path, line, what the image carries)
    unjudged: Tuple[str, ...] = ()  # what could not be judged, and why
    data_version: str = ""
    tool_version: str = ""
