"""A real single-host Slurm cluster for the fleet tests: munged, slurmctld and N slurmd daemons on
127.0.0.1, from the distribution's packages (Debian: slurmctld slurmd slurm-client munge).

Everything lives in one folder (config, munge key and socket, state, spool, logs, pid files) and
uses free ports, so it neither needs nor touches /etc/slurm or a system munged, and several can
run at once. Each slurmd is started with ``-N nodeK``: one box, N Slurm nodes, each with its own
SLURMD_NODENAME, which is how the recipes in docs/fleet.md tell nodes apart.

Used by the ``slurm_cluster`` fixture (tests/test_fleet_slurm.py) and by ``.ci/run``, which first
proves that a cluster starts here (``python tests/slurm_cluster.py selftest``).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

DAEMONS = ("munged", "munge", "slurmctld", "slurmd", "srun", "sinfo", "scontrol")
SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")


class SlurmUnavailable(Exception):
    """Slurm cannot run here; the message says why (the tests skip with it, CI fails with it)."""


def find(name: str) -> Optional[str]:
    found = shutil.which(name)
    if found:
        return found
    for folder in SBIN:
        path = os.path.join(folder, name)
        if os.access(path, os.X_OK):
            return path
    return None


def why_unavailable() -> Optional[str]:
    """None when a cluster can be started here, else the reason."""
    if sys.platform != "linux":
        return "Slurm needs Linux"
    missing = [name for name in DAEMONS if find(name) is None]
    if missing:
        return ("Slurm is not installed (missing " + ", ".join(missing) + "): "
                "apt-get install slurmctld slurmd slurm-client munge")
    if os.geteuid() != 0:
        return "slurmd must run as root to start jobs; these tests need root"
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    """A running cluster; ``env`` is what a client (srun, sinfo, scontrol) needs."""

    root: str
    nodes: List[str]
    env: Dict[str, str] = field(default_factory=dict)
    _munge_pid: Optional[int] = None

    @property
    def conf(self) -> str:
        return os.path.join(self.root, "slurm.conf")

    def run(self, argv: Sequence[str], timeout: float = 60, env: Optional[Dict[str, str]] = None,
            check: bool = True) -> "subprocess.CompletedProcess[str]":
        """A client command against this cluster, with a deadline."""
        merged = dict(self.env)
        merged.update(env or {})
        proc = subprocess.run(list(argv), env=merged, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}\n"
                                 + self.logs())
        return proc

    def node_states(self) -> Dict[str, str]:
        """node → "state|reason" as sinfo reports it, e.g. {"node1": "idle|none", "node2": "drained|cudadoctor: ..."}."""
        out = self.run([find("sinfo") or "sinfo", "-h", "-N", "-o", "%N|%T|%E"]).stdout
        states = {}
        for line in out.splitlines():
            name, state, reason = (line.split("|", 2) + ["", ""])[:3]
            states[name.strip()] = f"{state.strip()}|{reason.strip()}"
        return states

    def wait_for(self, predicate: Callable[[Dict[str, str]], bool], timeout: float = 30) -> Dict[str, str]:
        deadline = time.monotonic() + timeout
        states: Dict[str, str] = {}
        while time.monotonic() < deadline:
            states = self.node_states()
            if predicate(states):
                return states
            time.sleep(0.3)
        raise AssertionError(f"cluster did not reach the expected state within {timeout} s: {states}\n" + self.logs())

    def logs(self, lines: int = 15) -> str:
        out = []
        folder = os.path.join(self.root, "log")
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            with open(os.path.join(folder, name), errors="replace") as fh:
                tail = fh.read().splitlines()[-lines:]
            out.append(f"--- {name}\n" + "\n".join(tail))
        return "\n".join(out)

    def stop(self) -> None:
        """Shut everything down; never raises, never waits long."""
        scontrol = find("scontrol")
        if scontrol:
            try:
                subprocess.run([scontrol, "shutdown"], env=self.env, capture_output=True, timeout=10)
            except (OSError, subprocess.SubprocessError):
                pass
        pids = []
        for name in os.listdir(self.root) if os.path.isdir(self.root) else []:
            if name.endswith(".pid"):
                pids.append(_read_pid(os.path.join(self.root, name)))
        pids.append(self._munge_pid)
        deadline = time.monotonic() + 5
        for pid in filter(None, pids):
            _terminate(pid, deadline)



def start(root: str, nodes: int = 2, health_check: Optional[str] = None, health_interval: int = 0,
          slurmd_env: Optional[Dict[str, str]] = None, timeout: float = 30) -> Cluster:
    """Start munged, slurmctld and ``nodes`` slurmd in ``root`` (an empty folder); the cluster is
    up when every node is idle. Raises SlurmUnavailable (after cleaning up) when it cannot start."""
    reason = why_unavailable()
    if reason:
        raise SlurmUnavailable(reason)
    for sub in ("munge", "state", "spool", "log"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    names = [f"node{i + 1}" for i in range(nodes)]
    cluster = Cluster(root=root, nodes=names, env=_client_env(root))
    try:
        cluster._munge_pid = _start_munge(root)
        ctld_port = free_port()
        node_ports = [free_port() for _ in names]
        _write_conf(root, names, ctld_port, node_ports, health_check, health_interval)
        _daemon([find("slurmctld") or "slurmctld"], cluster.env, root, "slurmctld")
        for name in names:
            os.makedirs(os.path.join(root, "spool", name), exist_ok=True)
            env = dict(cluster.env)
            env.update(slurmd_env or {})
            _daemon([find("slurmd") or "slurmd", "-N", name], env, root, f"slurmd-{name}")
        cluster.wait_for(lambda s: len(s) == nodes and all(v.split("|")[0] in ("idle", "drained", "draining")
                                                           for v in s.values()), timeout)
    except BaseException as exc:
        logs = cluster.logs()
        cluster.stop()
        if isinstance(exc, (AssertionError, OSError, subprocess.SubprocessError)):
            raise SlurmUnavailable(f"the Slurm cluster did not start: {exc}\n{logs}") from None
        raise
    return cluster


def _client_env(root: str) -> Dict[str, str]:
    env = dict(os.environ)
    env["SLURM_CONF"] = os.path.join(root, "slurm.conf")
    for name in ("SLURM_JOB_ID", "SLURM_JOBID", "SLURM_NODELIST", "SLURM_NNODES", "SLURM_NTASKS"):
        env.pop(name, None)  # a test run from inside a Slurm job must not look like a step of it
    return env


def _start_munge(root: str) -> int:
    key = os.path.join(root, "munge", "munge.key")
    with open(key, "wb") as fh:
        fh.write(os.urandom(1024))
    os.chmod(key, 0o400)
    os.chmod(os.path.join(root, "munge"), 0o755)
    sock = os.path.join(root, "munge", "munge.socket")
    pidfile = os.path.join(root, "munge", "munged.pid")
    subprocess.run([find("munged") or "munged", "--force", f"--socket={sock}", f"--key-file={key}",
                    f"--pid-file={pidfile}", f"--seed-file={os.path.join(root, 'munge', 'seed')}",
                    f"--log-file={os.path.join(root, 'log', 'munged.log')}"],
                   check=True, capture_output=True, timeout=15)
    return _read_pid(pidfile) or 0


def _write_conf(root: str, names: Sequence[str], ctld_port: int, node_ports: Sequence[int],
                health_check: Optional[str], health_interval: int) -> None:
    lines = [
        "ClusterName=cudadoctor-test",
        "SlurmctldHost=localhost(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={root}/munge/munge.socket",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={root}/state",
        f"SlurmdSpoolDir={root}/spool/%n",
        f"SlurmctldPidFile={root}/slurmctld.pid",
        f"SlurmdPidFile={root}/slurmd-%n.pid",
        f"SlurmctldLogFile={root}/log/slurmctld.log",
        f"SlurmdLogFile={root}/log/slurmd-%n.log",
        # No cgroups in a container: track processes by /proc, bind nothing.
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "ReturnToService=2",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "SlurmdTimeout=30",
        "InactiveLimit=0",
        "KillWait=5",
    ]
    if health_check:
        lines += [f"HealthCheckProgram={health_check}", f"HealthCheckInterval={health_interval or 300}",
                  "HealthCheckNodeState=ANY"]
    for name, port in zip(names, node_ports):
        lines.append(f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} CPUs=2 State=UNKNOWN")
    lines.append("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    with open(os.path.join(root, "slurm.conf"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


def _daemon(argv: List[str], env: Dict[str, str], root: str, name: str) -> None:
    """Start a daemon that forks into the background; its foreground part must return quickly."""
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30, cwd=root)
    if proc.returncode != 0:
        raise OSError(f"{name} exited {proc.returncode}: {proc.stderr.strip()[-400:]}")


def _read_pid(path: str) -> Optional[int]:
    try:
        with open(path) as fh:
            return int(fh.read().strip() or 0) or None
    except (OSError, ValueError):
        return None


def _terminate(pid: int, deadline: float) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        return
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def selftest() -> int:
    """Start a two-node cluster, run one step on both nodes, stop. For .ci/run."""
    import tempfile

    root = tempfile.mkdtemp(prefix="cudadoctor-slurm-")
    started = time.monotonic()
    try:
        cluster = start(root, nodes=2)
    except SlurmUnavailable as exc:
        print(f"slurm: cannot start a cluster here: {exc}", file=sys.stderr)
        return 1
    try:
        out = cluster.run([find("srun") or "srun", "--nodes=2", "--ntasks-per-node=1", "printenv", "SLURMD_NODENAME"],
                          timeout=60).stdout
        print(f"slurm: a 2-node cluster started and ran a step on {sorted(out.split())} "
              f"in {time.monotonic() - started:.1f} s")
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:] != ["selftest"]:
        sys.exit("usage: python tests/slurm_cluster.py selftest")
    sys.exit(selftest())
