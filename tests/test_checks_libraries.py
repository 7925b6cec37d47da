"""The library checks as a user would meet them: a missing cuDNN or CUDA runtime, LD_LIBRARY_PATH
shadowing a wheel's libraries, a cuDNN older than (or built for another CUDA than) the
framework's, and nvidia-* wheels installed twice. Scenarios are recorded machines, or a recorded
machine with only the facts of the scenario changed."""

from __future__ import annotations

import dataclasses
import os
from functools import lru_cache
from typing import Any, List, Sequence, Tuple

import pytest

from cudadoctor.checks import run_checks
from cudadoctor.checks.libraries import (
    CHECKS,
    check_cudnn_version,
    check_missing,
    check_shadowed,
    check_wheel_conflicts,
)
from cudadoctor.model.facts import snapshot_from_facts
from cudadoctor.data.source import default_matrix
from cudadoctor.model import (
    Category,
    Finding,
    FrameworkBuild,
    HostInfo,
    Library,
    LibraryCopy,
    Package,
    Severity,
    Snapshot,
)
from cudadoctor.probes import collect
from cudadoctor.host.recorded import RecordedHost
from helpers import MACHINES

TWO = "two-toolkits-ldpath-cudnn8-shadow"
LAPTOP = "laptop-rtx3060-driver470-torch25-cu124"
DOCKER = "docker-nogpu-torch-cu126"
DGX = "dgx-h100x8-driver570-torch27-cu128"
HEALTHY = ("h200-driver580-torch211-cu130", DGX, "wsl2-rtx4090-driver566", LAPTOP, DOCKER,
           "conda-forge-pytorch-cuda12", "nvml-mismatch-after-upgrade", "dev-debian12-cuda13-nodriver-torch213cpu")

TWO_SITE = "/home/bob/venvs/torch/lib/python3.10/site-packages"
LAPTOP_SITE = "/home/maya/proj/.venv/lib/python3.10/site-packages"
DOCKER_SITE = "/opt/venv/lib/python3.11/site-packages"


@lru_cache(maxsize=None)
def machine(name: str) -> Snapshot:
    return collect(RecordedHost.load(os.path.join(MACHINES, name)))


def matrix() -> Any:
    return default_matrix()


def run_all(snap: Snapshot) -> List[Finding]:
    return [f for check in CHECKS for f in check.fn(snap, matrix())]


def commands(f: Finding) -> List[str]:
    return [c.run for c in f.fix.commands] if f.fix else []


def without_libraries(snap: Snapshot, prefix: str) -> Tuple[Library, ...]:
    return tuple(lib for lib in snap.libraries or () if not lib.name.startswith(prefix))


def with_library(snap: Snapshot, name: str, copy: LibraryCopy, first: bool = True) -> Tuple[Library, ...]:
    out = []
    for lib in snap.libraries or ():
        if lib.name == name:
            lib = Library(name, (copy,) + lib.copies if first else lib.copies + (copy,))
        out.append(lib)
    if not any(lib.name == name for lib in out):
        out.append(Library(name, (copy,)))
    return tuple(out)


def tensorflow(site: str, version: str = "2.15.0", cuda: str = "12.2", cudnn: str = "8") -> FrameworkBuild:
    return FrameworkBuild(name="tensorflow", version=version, variant="cuda", cuda=cuda, cudnn=cudnn,
                          distribution=f"tensorflow=={version}", location=f"{site}/tensorflow")


def system(name: str, soname: str, version: str) -> Library:
    return Library(name, (LibraryCopy(f"/usr/lib/x86_64-linux-gnu/{name}.so.{soname}", version, "ldconfig"),))


# ---------------------------------------------------------------------------- healthy machines


@pytest.mark.parametrize("name", HEALTHY)
def test_healthy_machines_have_no_library_findings(name: str) -> None:
    assert run_all(machine(name)) == []


def test_every_check_has_a_code_and_layer_4() -> None:
    assert [c.name for c in CHECKS] == ["cuda-libraries-present", "library-shadowing", "cudnn-version", "nvidia-wheels"]
    assert all(c.layer == 4 for c in CHECKS)


# ---------------------------------------------------------------------------- shadowing


def test_ld_library_path_shadows_cusolver_and_curand_not_cudnn() -> None:
    """The recorded desktop: /opt/cudnn8/lib holds cuDNN 8 (libcudnn.so.8), which torch 2.4.1 does not
    load (it needs libcudnn.so.9); CUDA 11.8's lib64 holds libcusolver.so.11 and libcurand.so.10,
    the same sonames as the wheels' and older, and those are what torch loads."""
    snap = machine(TWO)
    found = run_all(snap)
    assert [f.code for f in found] == ["cuda-library-shadowed"]
    f = found[0]
    assert f.severity is Severity.WARNING and f.category is Category.LIBRARY_VERSION_CONFLICT
    assert "older" in f.title and "torch 2.4.1+cu124" in f.title
    assert "libcusolver.so.11" in f.title and "libcurand.so.10" in f.title and "cudnn" not in f.title
    assert "11.4.1.48" in f.why and "11.6.0.99" in f.why and "10.3.0.86" in f.why and "10.3.5.119" in f.why
    assert "RUNPATH" in f.why
    assert "/usr/local/cuda-11.8/lib64" in f.fix.text if f.fix else False
    # only the directory that shadows goes; the rest of LD_LIBRARY_PATH stays as it was
    assert commands(f) == ["export LD_LIBRARY_PATH=/opt/cudnn8/lib"]
    assert check_cudnn_version(snap, matrix()) == [] and check_missing(snap, matrix()) == []


def test_no_shadow_without_ld_library_path_copies() -> None:
    snap = machine(TWO)
    libraries = tuple(Library(lib.name, tuple(c for c in lib.copies if c.found_via != "LD_LIBRARY_PATH"))
                      for lib in snap.libraries or ())
    snap = dataclasses.replace(snap, libraries=libraries, env={"PATH": "/usr/bin"})
    assert check_shadowed(snap, matrix()) == []


def test_a_newer_shadowing_copy_is_only_info_and_the_whole_path_can_go() -> None:
    snap = machine(LAPTOP)
    newer = LibraryCopy("/opt/cuda-12.6/lib64/libcublas.so.12", "12.6.4.1", "LD_LIBRARY_PATH")
    snap = dataclasses.replace(snap, libraries=with_library(snap, "libcublas", newer),
                               env={"LD_LIBRARY_PATH": "/opt/cuda-12.6/lib64/"})
    [f] = check_shadowed(snap, matrix())
    assert f.severity is Severity.INFO and "libcublas.so.12" in f.title
    assert commands(f) == ["unset LD_LIBRARY_PATH"]


def test_a_copy_of_unknown_precision_is_not_compared() -> None:
    snap = machine(LAPTOP)
    vague = LibraryCopy("/opt/x/libcublas.so.12", "12", "LD_LIBRARY_PATH")
    snap = dataclasses.replace(snap, libraries=with_library(snap, "libcublas", vague), env={"LD_LIBRARY_PATH": "/opt/x"})
    assert check_shadowed(snap, matrix()) == []


# ---------------------------------------------------------------------------- missing libraries


def laptop_without_cudnn() -> Snapshot:
    """torch 2.5.1+cu124 from pip, its nvidia-cudnn-cu12 wheel uninstalled."""
    snap = machine(LAPTOP)
    torch = dataclasses.replace(snap.framework("torch"), cudnn=None, details={})  # type: ignore[arg-type]
    return dataclasses.replace(
        snap,
        libraries=without_libraries(snap, "libcudnn"),
        packages=tuple(p for p in snap.packages or () if not p.name.startswith("nvidia-cudnn")),
        frameworks=(torch,) + tuple(b for b in snap.frameworks or () if b.name != "torch"),
    )


def test_torch_without_its_cudnn_wheel() -> None:
    [f] = check_missing(laptop_without_cudnn(), matrix())
    assert f.code == "cuda-library-missing" and f.severity is Severity.ERROR
    assert f.category is Category.MISSING_LIBRARY
    assert f.title == "torch 2.5.1+cu124 cannot load libcudnn.so.9: no copy is installed"
    assert "cuDNN 9.1.0.70" in f.why and "No nvidia-cudnn-* package is installed" in f.why
    assert "cannot open shared object file" in f.why
    assert commands(f) == ["pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/cu124"]
    assert "pytorch.json#2.5.1/cu124" in f.source


def test_torch_without_its_cuda_runtime_wheel() -> None:
    snap = machine(LAPTOP)
    snap = dataclasses.replace(snap, libraries=without_libraries(snap, "libcudart"))
    [f] = check_missing(snap, matrix())
    assert "libcudart.so.12" in f.title and "CUDA 12.4" in f.why


def test_missing_needs_a_complete_probed_listing() -> None:
    """A hand-written snapshot lists what its author knew: silence, not a guess."""
    facts = snapshot_from_facts({"os": "linux", "torch_version": "2.5.1+cu124", "torch_cuda": "12.4",
                                 "cudnn_system": "8.9.7", "pip_packages": ["torch==2.5.1+cu124"]})
    assert check_missing(facts, matrix()) == []
    snap = laptop_without_cudnn()
    assert check_missing(dataclasses.replace(snap, probe_durations_s={}), matrix()) == []
    assert check_missing(dataclasses.replace(snap, host=HostInfo(os="windows")), matrix()) == []


def docker_with_tensorflow(libraries: Sequence[Library] = (), packages: Sequence[Package] = ()) -> Snapshot:
    snap = machine(DOCKER)
    return dataclasses.replace(
        snap, frameworks=(tensorflow(DOCKER_SITE),), libraries=tuple(libraries),
        packages=(Package("tensorflow", "2.15.0", location=DOCKER_SITE),) + tuple(packages),
    )


def test_tensorflow_without_its_cuda_wheels_or_system_libraries() -> None:
    [f] = check_missing(docker_with_tensorflow(), matrix())
    assert f.severity is Severity.ERROR and f.category is Category.MISSING_LIBRARY
    for soname in ("libcudnn.so.8", "libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12"):
        assert soname in f.title
    assert "cuDNN 8.9" in f.why and "Cannot dlopen some GPU libraries" in f.why
    assert commands(f) == ['pip install "tensorflow[and-cuda]==2.15.0"']


def test_tensorflow_with_system_libraries_is_complete() -> None:
    libs = [system("libcudnn", "8", "8.9.7"), system("libcudart", "12", "12.2.140"),
            system("libcublas", "12", "12.2.5.6"), system("libcublasLt", "12", "12.2.5.6")]
    snap = docker_with_tensorflow(libs)
    assert check_missing(snap, matrix()) == []
    assert check_cudnn_version(snap, matrix()) == []  # 8.9.7 is at least the 8.9 it was built with


# ---------------------------------------------------------------------------- cuDNN versions


def test_an_older_cudnn_9_on_ld_library_path() -> None:
    snap = machine(TWO)
    old = LibraryCopy("/opt/cudnn9.0/lib/libcudnn.so.9", "9.0.0", "LD_LIBRARY_PATH")
    snap = dataclasses.replace(snap, libraries=with_library(snap, "libcudnn", old),
                               env={**(snap.env or {}), "LD_LIBRARY_PATH": "/opt/cudnn9.0/lib:/opt/cudnn8/lib"})
    [f] = check_cudnn_version(snap, matrix())
    assert f.code == "cudnn-older-than-build" and f.severity is Severity.ERROR
    assert f.category is Category.CUDNN_MISMATCH
    assert f.title == "torch 2.4.1+cu124 was built with cuDNN 9.1.0.70 but would load cuDNN 9.0.0"
    assert "/opt/cudnn9.0/lib/libcudnn.so.9" in f.why and "cuDNN version incompatibility" in f.why
    assert commands(f) == ["export LD_LIBRARY_PATH=/opt/cudnn8/lib"]
    assert "errors.json#torch-cudnn-version-incompatibility" in f.source


def test_a_newer_patch_of_the_same_minor_is_fine() -> None:
    snap = machine(TWO)
    copy = LibraryCopy("/opt/cudnn/lib/libcudnn.so.9", "9.1.1", "LD_LIBRARY_PATH")
    snap = dataclasses.replace(snap, libraries=with_library(snap, "libcudnn", copy))
    assert check_cudnn_version(snap, matrix()) == []


def test_an_older_cudnn_wheel_than_torch_pins() -> None:
    snap = machine(LAPTOP)
    wheel = f"{LAPTOP_SITE}/nvidia/cudnn/lib/libcudnn.so.9"
    libs = with_library(dataclasses.replace(snap, libraries=without_libraries(snap, "libcudnn")), "libcudnn",
                        LibraryCopy(wheel, "9.0.0.312", "pip:nvidia-cudnn-cu12==9.0.0.312"))
    [f] = check_cudnn_version(dataclasses.replace(snap, libraries=libs), matrix())
    assert f.code == "cudnn-older-than-build" and "9.0.0.312" in f.title
    assert commands(f) == ['pip install "nvidia-cudnn-cu12==9.1.0.70"']


def test_tensorflow_loading_an_older_system_cudnn() -> None:
    libs = [system("libcudnn", "8", "8.6.0"), system("libcudart", "12", "12.2.140")]
    [f] = check_cudnn_version(docker_with_tensorflow(libs), matrix())
    assert f.code == "cudnn-older-than-build"
    assert "built with cuDNN 8.9 but would load cuDNN 8.6.0" in f.title
    assert "Loaded runtime CuDNN library" in f.why


def test_torch_cu118_loading_the_cuda_12_cudnn_wheel() -> None:
    snap = machine(LAPTOP)
    torch = dataclasses.replace(snap.framework("torch"), version="2.5.1+cu118", cuda="11.8")  # type: ignore[arg-type]
    copy = LibraryCopy(f"{LAPTOP_SITE}/nvidia/cudnn/lib/libcudnn.so.9", "9.1.0.70", "pip:nvidia-cudnn-cu12==9.1.0.70")
    snap = dataclasses.replace(snap, frameworks=(torch,),
                               libraries=with_library(dataclasses.replace(snap, libraries=without_libraries(snap, "libcudnn")),
                                                      "libcudnn", copy))
    [f] = check_cudnn_version(snap, matrix())
    assert f.code == "cudnn-cuda-mismatch" and f.severity is Severity.ERROR
    assert f.category is Category.CUDNN_MISMATCH
    assert "nvidia-cudnn-cu12" in f.why and "CUDA 12" in f.why and "CUDA 11.8" in f.why
    assert commands(f) == ["pip uninstall -y nvidia-cudnn-cu12", "pip install nvidia-cudnn-cu11==9.1.0.70"]


def test_a_cudnn_without_a_build_for_the_frameworks_cuda() -> None:
    """cuDNN 8.4.0 has builds for CUDA 10 and 11 only (cudnn.json); TensorFlow 2.15 is CUDA 12.2."""
    [f] = check_cudnn_version(docker_with_tensorflow([system("libcudnn", "8", "8.4.0")]), matrix())
    assert f.code == "cudnn-cuda-mismatch"
    assert "CUDA 10, 11 only" in f.why and "cudnn.json#8.4.0" in f.source


# ---------------------------------------------------------------------------- nvidia-* wheels twice


def test_cudnn_wheels_for_two_cuda_majors() -> None:
    snap = machine(DGX)
    site = snap.python.site_packages[0] if snap.python else ""
    snap = dataclasses.replace(snap, packages=(snap.packages or ()) + (Package("nvidia-cudnn-cu11", "9.1.0.70", location=site),))
    [f] = check_wheel_conflicts(snap, matrix())
    assert f.code == "nvidia-wheel-conflict" and f.severity is Severity.WARNING
    assert f.category is Category.LIBRARY_VERSION_CONFLICT
    assert "nvidia-cudnn-cu11==9.1.0.70" in f.title and "nvidia-cudnn-cu12==9.7.1.26" in f.title
    assert "overwrote" in f.why
    assert commands(f) == ["pip uninstall -y nvidia-cudnn-cu11",
                           "pip install --force-reinstall --no-deps nvidia-cudnn-cu12==9.7.1.26"]


def test_one_wheel_in_two_site_directories() -> None:
    snap = machine(LAPTOP)
    user = "/home/maya/.local/lib/python3.10/site-packages"
    snap = dataclasses.replace(snap, packages=(Package("nvidia-cudnn-cu12", "8.9.2.26", location=user),) + (snap.packages or ()))
    [f] = check_wheel_conflicts(snap, matrix())
    assert f.title == "nvidia-cudnn-cu12 is installed 2 times, in different versions"
    assert user in f.why and "8.9.2.26" in f.why and "9.1.0.70" in f.why


def test_cuda_13_unsuffixed_wheels_next_to_cu13_suffixed_ones_are_fine() -> None:
    assert check_wheel_conflicts(machine("h200-driver580-torch211-cu130"), matrix()) == []


# ---------------------------------------------------------------------------- in the whole run


def test_run_checks_reports_the_shadow_with_the_toolchain_finding() -> None:
    codes = [f.code for f in run_checks(machine(TWO), matrix())]
    assert "cuda-library-shadowed" in codes and "cudnn-older-than-build" not in codes
