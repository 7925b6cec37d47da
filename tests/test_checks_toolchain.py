"""The toolchain checks as a user who builds CUDA code would meet them: CUDA_HOME pointing nowhere
or at another toolkit than the nvcc on PATH, a toolkit of another CUDA than torch's, a host
compiler nvcc refuses, and no nvcc where the environment needs one."""

from __future__ import annotations

import dataclasses
import os
from functools import lru_cache
from typing import Any, List

import pytest

from cudadoctor.checks.toolchain import (
    CHECKS,
    check_cuda_home_exists,
    check_cuda_home_vs_path,
    check_host_compiler,
    check_nvcc_needed,
    check_nvcc_torch,
)
from cudadoctor.data.source import default_matrix
from cudadoctor.model import Category, Compiler, Finding, FrameworkBuild, Package, Severity, Snapshot, Toolkit
from cudadoctor.probes import collect
from cudadoctor.host.recorded import RecordedHost
from helpers import MACHINES

TWO = "two-toolkits-ldpath-cudnn8-shadow"
H200 = "h200-driver580-torch211-cu130"
DGX = "dgx-h100x8-driver570-torch27-cu128"
LAPTOP = "laptop-rtx3060-driver470-torch25-cu124"
DOCKER = "docker-nogpu-torch-cu126"
HEALTHY = (H200, DGX, "wsl2-rtx4090-driver566", LAPTOP, DOCKER, "conda-forge-pytorch-cuda12",
           "nvml-mismatch-after-upgrade", "dev-debian12-cuda13-nodriver-torch213cpu")

CUDA_124 = Toolkit("/usr/local/cuda-12.4", "12.4.1", "version.json", "/usr/local/cuda-12.4/bin/nvcc",
                   ("/usr/local/cuda", "/usr/local/cuda-12.4"), active=False, exists=True)
CUDA_118 = Toolkit("/usr/local/cuda-11.8", "11.8.89", "version.json", "/usr/local/cuda-11.8/bin/nvcc",
                   ("PATH (/usr/local/cuda-11.8/bin/nvcc)", "/usr/local/cuda-11.8"), active=True, exists=True)


@lru_cache(maxsize=None)
def machine(name: str) -> Snapshot:
    return collect(RecordedHost.load(os.path.join(MACHINES, name)))


def matrix() -> Any:
    return default_matrix()


def run_all(snap: Snapshot) -> List[Finding]:
    return [f for check in CHECKS for f in check.fn(snap, matrix())]


def commands(f: Finding) -> List[str]:
    return [c.run for c in f.fix.commands] if f.fix else []


def with_torch_cuda(snap: Snapshot, version: str, cuda: str) -> Snapshot:
    torch = dataclasses.replace(snap.framework("torch"), version=version, cuda=cuda)  # type: ignore[arg-type]
    return dataclasses.replace(snap, frameworks=(torch,))


# ---------------------------------------------------------------------------- healthy machines


@pytest.mark.parametrize("name", HEALTHY)
def test_healthy_machines_have_no_toolchain_findings(name: str) -> None:
    assert run_all(machine(name)) == []


def test_checks_are_layer_5() -> None:
    assert all(c.layer == 5 for c in CHECKS)


# ---------------------------------------------------------------------------- CUDA_HOME vs PATH


def test_cuda_home_12_4_and_nvcc_on_path_11_8() -> None:
    """The recorded desktop: CUDA_HOME=/usr/local/cuda-12.4, /usr/local/cuda-11.8/bin first on PATH."""
    snap = machine(TWO)
    found = run_all(snap)
    assert [f.code for f in found] == ["cuda-home-nvcc-differ"]
    f = found[0]
    assert f.severity is Severity.WARNING and f.category is Category.NVCC_FRAMEWORK_MISMATCH
    assert f.title == "CUDA_HOME names CUDA 12.4, but nvcc on PATH is CUDA 11.8"
    assert "/usr/local/cuda-11.8/bin/nvcc" in f.why and "CMake" in f.why and "torch 2.4.1+cu124 is CUDA 12.4" in f.why
    # torch is 12.4, so the PATH has to follow CUDA_HOME, not the other way round
    assert commands(f) == ["export PATH=/usr/local/cuda-12.4/bin:$PATH"]
    assert check_nvcc_torch(snap, matrix()) == []  # CUDA_HOME's 12.4 is what extension builds use


def test_when_the_nvcc_on_path_is_torchs_cuda_home_follows_it() -> None:
    snap = with_torch_cuda(machine(TWO), "2.5.1+cu118", "11.8")
    [f] = check_cuda_home_vs_path(snap, matrix())
    assert commands(f) == ["export CUDA_HOME=/usr/local/cuda-11.8"]


def test_same_minor_in_both_places_is_fine() -> None:
    snap = machine(TWO)
    same = tuple(dataclasses.replace(tk, version="12.4.0") if "11.8" in tk.root else tk for tk in snap.toolkits or ())
    assert check_cuda_home_vs_path(dataclasses.replace(snap, toolkits=same), matrix()) == []


# ---------------------------------------------------------------------------- CUDA_HOME that does not exist


def test_cuda_home_names_a_missing_folder() -> None:
    snap = machine(LAPTOP)
    gone = Toolkit("/usr/local/cuda-12.1", found_via=("CUDA_HOME",), active=True, exists=False)
    snap = dataclasses.replace(snap, toolkits=(gone,), env={**(snap.env or {}), "CUDA_HOME": "/usr/local/cuda-12.1"})
    [f] = check_cuda_home_exists(snap, matrix())
    assert f.code == "cuda-home-not-found" and f.severity is Severity.WARNING and f.category is Category.OTHER
    assert f.title == "CUDA_HOME=/usr/local/cuda-12.1 names a folder that does not exist"
    assert "/usr/local/cuda-12.1/bin/nvcc" in f.why and "not affected" in f.why
    assert commands(f) == ["unset CUDA_HOME"]


def test_cuda_home_missing_points_to_the_installed_toolkit_of_torchs_cuda() -> None:
    snap = machine(LAPTOP)
    gone = Toolkit("/opt/cuda", found_via=("CUDA_PATH",), active=True, exists=False)
    snap = dataclasses.replace(snap, toolkits=(gone, CUDA_118, CUDA_124))
    [f] = check_cuda_home_exists(snap, matrix())
    assert commands(f) == ["export CUDA_PATH=/usr/local/cuda-12.4"]


def test_existing_cuda_home_is_silent() -> None:
    assert check_cuda_home_exists(machine(TWO), matrix()) == []


# ---------------------------------------------------------------------------- nvcc vs torch


def test_extensions_would_build_with_cuda_11_8_for_a_cuda_12_4_torch() -> None:
    snap = dataclasses.replace(machine(LAPTOP), toolkits=(CUDA_118, CUDA_124))
    [f] = check_nvcc_torch(snap, matrix())
    assert f.code == "nvcc-torch-mismatch" and f.severity is Severity.WARNING
    assert f.category is Category.NVCC_FRAMEWORK_MISMATCH
    assert f.title == "CUDA extensions would build with CUDA 11.8, but torch 2.5.1+cu124 is CUDA 12.4"
    assert "refuses a different major" in f.why and "need no toolkit at all" in f.why
    assert commands(f) == ["export CUDA_HOME=/usr/local/cuda-12.4", "export PATH=/usr/local/cuda-12.4/bin:$PATH"]
    assert "errors.json#torch-cpp-extension-cuda-mismatch" in f.source


def test_without_a_matching_toolkit_the_fix_is_to_install_torchs_cuda() -> None:
    [f] = check_nvcc_torch(dataclasses.replace(machine(LAPTOP), toolkits=(CUDA_118,)), matrix())
    assert "install CUDA toolkit 12.4" in (f.fix.text if f.fix else "")
    assert commands(f) == ["export CUDA_HOME=/usr/local/cuda-12.4    # after installing CUDA 12.4"]


def test_a_different_minor_only_informs() -> None:
    [f] = check_nvcc_torch(with_torch_cuda(machine(DGX), "2.7.1+cu126", "12.6"), matrix())
    assert f.severity is Severity.INFO and "warns" in f.why


def test_cpu_torch_and_no_toolkit_are_silent() -> None:
    assert check_nvcc_torch(machine("dev-debian12-cuda13-nodriver-torch213cpu"), matrix()) == []
    assert check_nvcc_torch(machine(LAPTOP), matrix()) == []


# ---------------------------------------------------------------------------- host compiler


def with_compilers(name: str, *compilers: Compiler, **env: str) -> Snapshot:
    snap = machine(name)
    return dataclasses.replace(snap, compilers=compilers, env={**(snap.env or {}), **env})


def test_gcc_newer_than_the_toolkit_accepts() -> None:
    snap = with_compilers(H200, Compiler("gcc", "16.1.0", "/usr/bin/gcc"), Compiler("g++", "16.1.0", "/usr/bin/g++"))
    [f] = check_host_compiler(snap, matrix())
    assert f.code == "host-compiler-unsupported" and f.severity is Severity.WARNING
    assert f.category is Category.HOST_COMPILER_UNSUPPORTED
    assert f.title == "g++ 16.1.0 is newer than CUDA 13.0's nvcc accepts (gcc 6-15)"
    assert "unsupported GNU version" in f.why
    assert "CUDA 13.4 or newer" in (f.fix.text if f.fix else "")
    assert commands(f) == ["sudo apt install gcc-15 g++-15",
                           "export CC=gcc-15 CXX=g++-15 CUDAHOSTCXX=g++-15 NVCC_CCBIN=g++-15"]
    assert "host_compilers.json#13.0" in f.source


def test_gcc_older_than_the_toolkit_accepts() -> None:
    snap = with_compilers(TWO, Compiler("g++", "5.4.0", "/usr/bin/g++"))
    found = check_host_compiler(snap, matrix())
    assert [f.title for f in found] == ["g++ 5.4.0 is older than CUDA 12.4's nvcc accepts (gcc 6-13)",
                                        "g++ 5.4.0 is older than CUDA 11.8's nvcc accepts (gcc 6-11)"]


def test_clang_named_by_cc_is_what_torch_passes_to_nvcc() -> None:
    snap = with_compilers(TWO, Compiler("g++", "11.4.0", "/usr/bin/g++"), Compiler("clang-19", "19.1.0", "/usr/bin/clang-19"),
                          CC="clang-19")
    titles = [f.title for f in check_host_compiler(snap, matrix())]
    assert titles == ["clang-19 19.1.0 is newer than CUDA 12.4's nvcc accepts (clang 7-17)",
                      "clang-19 19.1.0 is newer than CUDA 11.8's nvcc accepts (clang 7-14)"]


def test_supported_or_unknown_compilers_are_silent() -> None:
    assert check_host_compiler(machine(TWO), matrix()) == []  # gcc 11.4 with CUDA 11.8 and 12.4
    assert check_host_compiler(with_compilers(TWO, Compiler("g++", None, "/usr/bin/g++")), matrix()) == []
    assert check_host_compiler(machine(LAPTOP), matrix()) == []  # no toolkit


# ---------------------------------------------------------------------------- no nvcc


def docker_with_tensorflow(*packages: Package) -> Snapshot:
    snap = machine(DOCKER)
    site = "/opt/venv/lib/python3.11/site-packages"
    tf = FrameworkBuild(name="tensorflow", version="2.15.0", variant="cuda", cuda="12.2", cudnn="8",
                        location=f"{site}/tensorflow")
    return dataclasses.replace(snap, frameworks=(tf,), packages=(Package("tensorflow", "2.15.0", location=site),) + packages)


def test_tensorflow_and_cuda_without_its_nvcc_wheel() -> None:
    [f] = check_nvcc_needed(docker_with_tensorflow(), matrix())
    assert f.code == "nvcc-not-found" and f.severity is Severity.WARNING
    assert f.category is Category.MISSING_LIBRARY
    assert "ptxas" in f.title and "nvidia-cuda-nvcc-cu12" in f.title
    assert "XLA" in f.why and "==12.2.140" in f.why
    assert commands(f) == ['pip install nvidia-cuda-nvcc-cu12==12.2.140']


def test_tensorflow_with_its_nvcc_wheel_or_a_toolkit_is_fine() -> None:
    snap = docker_with_tensorflow(Package("nvidia-cuda-nvcc-cu12", "12.2.140"))
    assert check_nvcc_needed(snap, matrix()) == []
    assert check_nvcc_needed(dataclasses.replace(docker_with_tensorflow(), toolkits=(CUDA_124,)), matrix()) == []


def test_build_variables_without_nvcc() -> None:
    snap = machine(LAPTOP)
    snap = dataclasses.replace(snap, env={**(snap.env or {}), "TORCH_CUDA_ARCH_LIST": "8.6"})
    [f] = check_nvcc_needed(snap, matrix())
    assert f.code == "nvcc-not-found"
    assert f.title == "TORCH_CUDA_ARCH_LIST is set for CUDA builds, but no nvcc is installed"
    assert "TORCH_CUDA_ARCH_LIST=8.6" in f.why and "does not need a toolkit" in f.why
    assert commands(f) == ["export CUDA_HOME=/usr/local/cuda-12.4    # after installing CUDA 12.4"]


def test_no_nvcc_and_no_sign_of_building_is_silent() -> None:
    """pip wheels need no toolkit: a torch machine without one is healthy."""
    assert check_nvcc_needed(machine(LAPTOP), matrix()) == []
    assert check_nvcc_needed(dataclasses.replace(machine(LAPTOP), toolkits=None,
                                                 env={"TORCH_CUDA_ARCH_LIST": "8.6"}), matrix()) == []


# ---------------------------------------------------------------------------- typed facts


def test_facts_from_an_issue_give_the_toolchain_findings() -> None:
    """`cudadoctor diagnose --facts` with what a user pasted: nvcc 11.8, gcc 13, torch cu124."""
    from cudadoctor.model.facts import snapshot_from_facts

    snap = snapshot_from_facts({"torch_version": "2.5.1+cu124", "torch_cuda": "12.4", "nvcc_version": "11.8",
                                "gcc_version": "13.2.0"})
    found = {f.code: f for f in run_all(snap)}
    assert set(found) == {"nvcc-torch-mismatch", "host-compiler-unsupported"}
    assert "the nvcc on PATH (CUDA 11.8" in found["nvcc-torch-mismatch"].why
    assert found["host-compiler-unsupported"].title == "gcc 13.2.0 is newer than CUDA 11.8's nvcc accepts (gcc 6-11)"
