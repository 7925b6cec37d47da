"""Shared fixtures: the recorded machines under tests/machines/, the compatibility data."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Tuple

import pytest

from cudadoctor.model import Snapshot
from cudadoctor.host.recorded import RecordedHost

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

# Bytecode is cached for the test run, in this process and in the commands it starts, also where
# the shell sets PYTHONDONTWRITEBYTECODE (as this project's container does): without the cache
# every `python -m cudadoctor` a test starts compiles the package again (0.55 s of CPU for `check
# --no-smoke` against 0.2 s), and pytest rewrites every test module's asserts again on every run.
# __pycache__ folders are ignored by git; tests that need a clean package folder set the variable
# for their own command.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

MACHINES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "machines")
DATA_DIR = Path(__file__).resolve().parents[1] / "compat_data"


@pytest.fixture(autouse=True)
def pseudonym_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """One known pseudonym key (docs/reports.md), so that no test writes one under the real home."""
    monkeypatch.setenv("CUDADOCTOR_PSEUDONYM_KEY", "tests-pseudonym-key")


@pytest.fixture(scope="session")
def matrix() -> "Matrix":
    """The compatibility data of this checkout (compat_data/), read once for the session."""
    from cudadoctor.matrix import Matrix

    return Matrix(str(DATA_DIR))


@pytest.fixture
def machines_dir() -> str:
    """The folder holding one sub-folder per recorded machine."""
    return MACHINES_DIR


@pytest.fixture
def load_machine() -> Callable[[str], RecordedHost]:
    """``load_machine(name)``: a fresh RecordedHost of ``tests/machines/<name>/``."""

    def load(name: str) -> RecordedHost:
        return RecordedHost.load(os.path.join(MACHINES_DIR, name))

    return load


def without_timing(snapshot: Snapshot) -> Snapshot:
    """The snapshot less what differs between two runs on the same machine: when it was taken
    and how long each probe took."""
    return dataclasses.replace(
        snapshot,
        created_at=None,
        probe_durations_s={},
        errors=tuple(dataclasses.replace(e, duration_s=None) for e in snapshot.errors),
    )


@pytest.fixture
def comparable() -> Callable[[Snapshot], Snapshot]:
    """:func:`without_timing`, as a fixture."""
    return without_timing


@pytest.fixture(autouse=True)
def _isolated_data_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the real user data dir (installed data bundles): CUDADOCTOR_DATA_HOME points
    at an empty folder, and CUDADOCTOR_DATA_DIR is unset, so the shipped data is used."""
    monkeypatch.setenv("CUDADOCTOR_DATA_HOME", str(tmp_path_factory.mktemp("data_home")))
    monkeypatch.delenv("CUDADOCTOR_DATA_DIR", raising=False)
    # A report names its node from these (cudadoctor.reports.node): a test run inside a Slurm job, or on a
    # Kubernetes node, must give the same reports as anywhere else.
    monkeypatch.delenv("CUDADOCTOR_NODE_NAME", raising=False)
    monkeypatch.delenv("SLURMD_NODENAME", raising=False)


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> "Tuple[Path, Path]":
    """(the folder, the cudadoctor wheel): tests/wheelhouse.py, built once per test run. Under
    pytest-xdist the workers share the run's temporary folder: the first to come builds the house
    there (holding a lock), the others wait for it and use it."""
    import fcntl

    import wheelhouse as house_module

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        house = tmp_path_factory.mktemp("wheelhouse")
        return house, house_module.build(house)
    shared = tmp_path_factory.getbasetemp().parent  # this run's folder, above each worker's
    house = shared / "wheelhouse"
    with open(shared / "wheelhouse.lock", "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        built = shared / "wheelhouse.built"
        if not built.exists():
            house.mkdir(exist_ok=True)
            built.write_text(house_module.build(house).name)
        return house, house / built.read_text()
