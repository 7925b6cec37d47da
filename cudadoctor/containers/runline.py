"""``docker run`` lines (also ``nvidia-docker run``, ``docker container run``, ``podman run``) in
any text: a shell script, a README, a pasted command. Continuation lines are joined; the flags
that matter here are read (``--gpus``, ``--runtime``, ``--shm-size``, ``--ipc``, ``-e``), the
image is the first word that is no flag or flag value, what follows it is the command."""

from __future__ import annotations

import re
import shlex
from typing import List, Optional, Tuple

from cudadoctor.containers.compose import size_mib
from cudadoctor.containers.installs import read_installs
from cudadoctor.containers.model import MAX_LINE, EnvVar, Spec, Unit

_RUN = re.compile(r"(?:^|[\s;&|(`$])(?:sudo\s+)?(?:nvidia-docker|docker|podman)(?:\s+container)?\s+run\b")
# flags of `docker run` that take a value (the next word unless written --flag=value)
_VALUED = {
    "-a", "--attach", "--add-host", "--blkio-weight", "--cap-add", "--cap-drop", "--cgroup-parent", "--cgroupns",
    "--cidfile", "--cpu-period", "--cpu-quota", "--cpu-shares", "-c", "--cpus", "--cpuset-cpus", "--cpuset-mems",
    "--device", "--device-cgroup-rule", "--dns", "--dns-option", "--dns-search", "--domainname", "--entrypoint",
    "-e", "--env", "--env-file", "--expose", "--gpus", "--group-add", "--health-cmd", "--health-interval",
    "--health-retries", "--health-timeout", "-h", "--hostname", "--ip", "--ip6", "--ipc", "--isolation",
    "--kernel-memory", "-l", "--label", "--label-file", "--link", "--log-driver", "--log-opt", "--mac-address",
    "-m", "--memory", "--memory-reservation", "--memory-swap", "--mount", "--name", "--network", "--net",
    "--network-alias", "--oom-score-adj", "--pid", "--pids-limit", "--platform", "-p", "--publish", "--pull",
    "--restart", "--runtime", "--security-opt", "--shm-size", "--stop-signal", "--stop-timeout", "--storage-opt",
    "--sysctl", "--tmpfs", "--ulimit", "-u", "--user", "--userns", "--uts", "-v", "--volume", "--volumes-from",
    "-w", "--workdir", "--annotation", "--hooks-dir",
}
MAX_RUNS = 10000


def _logical_lines(lines: List[str]) -> List[Tuple[int, str]]:
    out: List[Tuple[int, str]] = []
    i = 0
    while i < len(lines):
        start, parts = i, [lines[i].rstrip()]
        size = len(parts[0])
        i += 1
        while parts[-1].endswith("\\") and i < len(lines) and size < MAX_LINE:
            parts[-1] = parts[-1][:-1]
            parts.append(lines[i].strip())
            size += len(parts[-1]) + 1
            i += 1
        out.append((start + 1, " ".join(parts)[:MAX_LINE]))
    return out


def _words(text: str) -> List[str]:
    try:
        return shlex.split(text, comments=False)
    except ValueError:
        return text.split()


def read_run(line: int, text: str) -> Optional[Unit]:
    m = _RUN.search(text)
    if m is None:
        return None
    words = _words(text[m.end():])
    env: List[EnvVar] = []
    gpu, how, shm, ipc_host = False, "", None, False
    image: Optional[str] = None
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("&&", "||", ";", "|"):
            break
        if not w.startswith("-") or w == "-":
            image = w
            break
        flag, eq, value = w.partition("=")
        if not eq and flag in _VALUED:
            value = words[i + 1] if i + 1 < len(words) else ""
            i += 1
        if flag == "--gpus":
            gpu, how = True, f"--gpus {value}"
        elif flag == "--runtime" and value == "nvidia":
            gpu, how = True, "--runtime=nvidia"
        elif flag == "--shm-size":
            shm = size_mib(value)
        elif flag == "--ipc":
            ipc_host = value == "host"
        elif flag in ("-e", "--env"):
            name, _, val = value.partition("=")
            env.append(EnvVar(name, val, line))
        elif flag == "--device" and value.startswith("nvidia.com/gpu"):
            gpu, how = True, f"--device {value}"
        i += 1
    if "nvidia-docker" in m.group(0) and not gpu:
        gpu, how = True, "nvidia-docker"
    rest = words[i + 1:]
    cut = next((k for k, w in enumerate(rest) if w in ("&&", "||", ";", "|")), len(rest))
    command = " ".join(rest[:cut])
    return Unit("run", "docker run", line, image, line, "" if image else "no image on this docker run line",
                installs=tuple(read_installs(command, line)), env=tuple(env),
                commands=((command[:500], line),) if command else (), gpu=gpu, gpu_line=line if gpu else 0,
                gpu_how=how, shm_mib=shm, shm_line=line if shm is not None else 0, ipc_host=ipc_host)


def read_runs(path: str, lines: List[str]) -> Spec:
    units = []
    for line, text in _logical_lines(lines):
        if "run" in text:
            unit = read_run(line, text)
            if unit is not None:
                units.append(unit)
                if len(units) >= MAX_RUNS:
                    break
    return Spec(path, "run", tuple(units), (), len(lines))
