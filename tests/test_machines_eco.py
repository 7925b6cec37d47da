"""Three recorded machines for the tables of issue 17 (item 4), as a user of each would see them,
and the broken variants a test makes from them by editing a copy of the recording.

- jetson-agx-orin-jp62-torch28: Jetson AGX Orin, JetPack 6.2 (L4T 36.4.3), torch 2.8.0 for Jetson.
- jetson-agx-thor-jp70-torch210-cu130: Jetson AGX Thor, JetPack 7.0 (L4T 38.2), torch 2.10.0+cu130.
- dgx-h100x8-torch27-vllm-flashattn-triton: the DGX venv plus vLLM, xformers, a flash-attn wheel for
  torch 2.6 and a hand-upgraded triton.

What is real and what is composed in each: tests/machines/<name>/README.md.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, List, Tuple

import pytest

from cudadoctor.checks import run_checks
from cudadoctor.data.source import default_matrix
from cudadoctor.errors import ExitCode
from cudadoctor.host.recorded import RecordedHost
from cudadoctor.matrix import Matrix
from cudadoctor.model import Finding, FrameworkBuild, Severity, Snapshot
from cudadoctor.probes import collect
from helpers import MACHINES, cli, edited_machine, snapshot_of

ORIN = "jetson-agx-orin-jp62-torch28"
THOR = "jetson-agx-thor-jp70-torch210-cu130"
X86 = "dgx-h100x8-torch27-vllm-flashattn-triton"
ALL = (ORIN, THOR, X86)
ORIN_SITE = "/home/nvidia/venv/lib/python3.10/site-packages"
# every check whose rules are a desktop driver's (checks/jetson.py leaves them out on a Jetson)
DRIVER_CODES = {"gpu-without-driver", "nouveau-loaded", "secure-boot-may-block-module", "driver-library-mismatch",
                "driver-too-old-for-gpu", "driver-dropped-gpu", "driver-too-old-for-build", "driver-too-old-for-ptx-jit",
                "driver-minor-version-compat", "gpu-not-in-data"}


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return default_matrix()


def codes(findings: Tuple[Finding, ...]) -> List[Tuple[str, str]]:
    return [(f.code, f.severity.value) for f in findings]


# --------------------------------------------------------------------------- every machine


@pytest.mark.parametrize("name", ALL)
def test_every_command_was_recorded_and_nothing_is_unreadable(name: str) -> None:
    host = RecordedHost.load(str(MACHINES / name))
    snap = collect(host)
    assert host.unrecorded == []
    assert snap.errors == ()


# --------------------------------------------------------------------------- Jetson AGX Orin


def test_orin_probe_reads_l4t_packages_and_device_tree() -> None:
    j = snapshot_of(ORIN).jetson
    assert j is not None
    assert (j.l4t, j.l4t_source, j.board) == ("36.4.3", "nv_tegra_release", "generic")
    assert (j.l4t_core_package, j.jetpack_package) == ("36.4.3-20250107174145", "6.2+b77")
    assert (j.model, j.soc) == ("NVIDIA Jetson AGX Orin Developer Kit", "tegra234")


def test_orin_is_healthy_and_judged_by_jetpack(matrix: Matrix) -> None:
    findings = run_checks(snapshot_of(ORIN), matrix)
    assert codes(findings) == [("jetson-platform", "info")]
    why = findings[0].why
    assert "JetPack 6.2 brings CUDA 12.6, cuDNN 9.3.0, TensorRT 10.3.0" in why and "runs CUDA up to 12.6" in why
    assert "compute capability 8.7" in why


def test_orin_check_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["check", "--machine", str(MACHINES / ORIN), "--no-color"], capsys)
    assert code == ExitCode.OK, out
    assert "✓ No problems found." in out
    assert "JetPack 6.2 (Jetson Linux 36.4.3): the GPU driver is part of Jetson Linux" in out
    assert "Orin (nvgpu) · sm_87" in out


def test_without_the_jetson_section_the_desktop_rules_misfire(matrix: Matrix) -> None:
    """What the Jetson data prevents: the same machine judged as a desktop gets driver findings."""
    desktop = dataclasses.replace(snapshot_of(ORIN), jetson=None)
    assert DRIVER_CODES & {f.code for f in run_checks(desktop, matrix)}


def _pypi_aarch64_torch(data: Dict[str, Any]) -> None:
    """The Orin with PyPI's aarch64 CUDA torch: 'pip install torch' instead of the Jetson index."""
    data["dirs"] += [f"{ORIN_SITE}/nvidia_cuda_runtime_cu12-12.8.90.dist-info",
                     f"{ORIN_SITE}/nvidia_cublas_cu12-12.8.4.1.dist-info"]
    data["files"][f"{ORIN_SITE}/torch/version.py"] = "__version__ = '2.8.0'\ncuda = '12.8'\n"


def test_orin_with_a_desktop_pypi_cuda_wheel_is_the_wrong_variant(matrix: Matrix) -> None:
    findings = run_checks(edited_machine(ORIN, _pypi_aarch64_torch), matrix)
    wrong = [f for f in findings if f.code == "jetson-wrong-wheel"]
    assert len(wrong) == 1 and wrong[0].severity is Severity.ERROR
    assert "PyPI's Linux aarch64 CUDA build" in wrong[0].why
    assert wrong[0].fix is not None
    assert [c.run for c in wrong[0].fix.commands][-1] == \
        "pip install torch torchvision --index-url https://pypi.jetson-ai-lab.io/jp6/cu126"
    assert not DRIVER_CODES & {f.code for f in findings}


def test_orin_with_a_cpu_or_pytorch_index_torch_is_the_wrong_variant(matrix: Matrix) -> None:
    snap = snapshot_of(ORIN)
    for build in (FrameworkBuild("torch", "2.8.0", "cpu"), FrameworkBuild("torch", "2.8.0+cu126", "cuda", "12.6")):
        found = run_checks(dataclasses.replace(snap, frameworks=(build,)), matrix)
        assert ("jetson-wrong-wheel", "error") in codes(found), build
        assert "cpu-only-build" not in {f.code for f in found}  # its desktop fix would be wrong here


def test_jetpack_60_cannot_run_a_cuda_126_build(matrix: Matrix) -> None:
    snap = snapshot_of(ORIN)
    older = dataclasses.replace(snap, jetson=dataclasses.replace(snap.jetson, l4t="36.3.0"))
    found = [f for f in run_checks(older, matrix) if f.code == "jetson-cuda-newer-than-jetpack"]
    assert len(found) == 1
    assert found[0].title == "torch 2.8.0 needs CUDA 12.6; JetPack 6.0's driver runs CUDA up to 12.2"
    assert "cuda-compat" in found[0].why  # JetPack 6 >= 5.0: the CUDA upgrade package applies


def test_an_l4t_patch_release_takes_its_series_and_a_newer_one_is_the_horizon(matrix: Matrix) -> None:
    snap = snapshot_of(ORIN)
    patch = dataclasses.replace(snap, jetson=dataclasses.replace(snap.jetson, l4t="36.4.9"))
    (info,) = [f for f in run_checks(patch, matrix) if f.code == "jetson-platform"]
    assert "Jetson Linux 36.4.9 is not in the data: the record of 36.4.7 was used" in info.why
    newer = dataclasses.replace(snap, jetson=dataclasses.replace(snap.jetson, l4t="40.1.0"))
    found = run_checks(newer, matrix)
    assert ("jetson-not-in-data", "info") in codes(found)
    assert "newer than the compatibility data" in next(f.title for f in found if f.code == "jetson-not-in-data")
    assert not DRIVER_CODES & {f.code for f in found}


def test_install_on_the_orin_names_the_jetson_index(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["install", "torch", "--machine", str(MACHINES / ORIN)], capsys)
    assert code == ExitCode.OK  # on the Jetson, the plan is the answer
    assert "comes from Jetson AI Lab's pip index for JetPack 6" in out
    assert "pip install torch torchvision torchaudio --index-url https://pypi.jetson-ai-lab.io/jp6/cu126" in out
    assert "download.pytorch.org" not in out


# --------------------------------------------------------------------------- Jetson AGX Thor


def test_thor_is_healthy_with_the_desktop_aarch64_cu130_wheel(matrix: Matrix) -> None:
    snap = snapshot_of(THOR)
    assert snap.jetson is not None and (snap.jetson.l4t, snap.jetson.soc) == ("38.2.0", "tegra264")
    assert snap.driver is not None and (snap.driver.driver_version, snap.driver.cuda_driver_version) == ("580.00", "13.0")
    findings = run_checks(snap, matrix)
    assert codes(findings) == [("jetson-platform", "info")]
    assert "JetPack 7.0 brings CUDA 13.0, TensorRT 10.13" in findings[0].why


def test_thor_as_a_desktop_would_fail_the_driver_minimum(matrix: Matrix) -> None:
    """Driver 580.00 is below CUDA 13.0's desktop minimum (580.65.06): the rule that must not apply."""
    desktop = dataclasses.replace(snapshot_of(THOR), jetson=None)
    assert {"driver-too-old-for-build", "driver-minor-version-compat"} & {f.code for f in run_checks(desktop, matrix)}


def test_install_on_the_thor_plans_cuda_130_desktop_wheels(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["install", "torch", "--machine", str(MACHINES / THOR)], capsys)
    assert code == ExitCode.OK, out + err
    assert "--index-url https://download.pytorch.org/whl/cu130" in out
    assert "desktop driver minimums are not applied" in out
    assert "cu132" not in out.split("\n")[0]


# --------------------------------------------------------------------------- x86 with triton, flash-attn, vLLM


def test_x86_extensions_are_read_without_importing(matrix: Matrix) -> None:
    snap = snapshot_of(X86)
    fa, vllm, xf, tri = (snap.framework(n) for n in ("flash-attn", "vllm", "xformers", "triton"))
    assert fa is not None and (fa.version, fa.variant, fa.cuda) == ("2.7.4.post1+cu12torch2.6cxx11abiFALSE", "cuda", "12")
    assert fa.details["built_for_torch"] == "2.6"
    assert vllm is not None and vllm.details["requires_torch"] == "==2.7.1"
    assert xf is not None and xf.details["requires_torch"] == "==2.7.1"
    assert tri is not None and tri.version == "3.4.0"


def test_x86_diagnosis(matrix: Matrix) -> None:
    findings = run_checks(snapshot_of(X86), matrix)
    assert codes(findings) == [("extension-built-for-other-torch", "error"), ("triton-version-mismatch", "warning")]
    assert findings[0].title.startswith("flash-attn 2.7.4.post1+cu12torch2.6cxx11abiFALSE was built for torch 2.6")
    assert "triton==3.3.1" in findings[1].title


def test_x86_after_a_torch_upgrade(matrix: Matrix) -> None:
    """torch 2.8.0 over the same venv: vLLM and xformers pin 2.7.1, triton 3.4.0 is now right."""
    snap = snapshot_of(X86)
    frameworks = tuple(dataclasses.replace(b, version="2.8.0+cu128") if b.name == "torch" else b
                       for b in snap.frameworks or ())
    found = run_checks(dataclasses.replace(snap, frameworks=frameworks), matrix)
    titles = [f.title for f in found if f.code == "extension-built-for-other-torch"]
    assert any(t.startswith("vllm 0.10.1.1 is built for torch==2.7.1") for t in titles)
    assert any(t.startswith("xformers 0.0.31 is built for torch==2.7.1") for t in titles)
    assert "triton-version-mismatch" not in {f.code for f in found}


def _gpus_to(data: Dict[str, Any], name: str, cc: List[int]) -> None:
    for dev in data["nvml"]["devices"]:
        dev["nvmlDeviceGetName"], dev["nvmlDeviceGetCudaComputeCapability"] = name, cc


def test_x86_on_older_gpus(matrix: Matrix) -> None:
    t4 = run_checks(edited_machine(X86, lambda d: _gpus_to(d, "Tesla T4", [7, 5])), matrix)
    assert ("extension-gpu-unsupported", "error") in codes(t4)  # flash-attn 2: 8.0+
    assert ("triton-gpu-too-old", "info") in codes(t4)  # Triton 3.4: documented 8.0+
    assert not any(f.code == "extension-gpu-unsupported" and f.title.startswith("vllm") for f in t4)
    p100 = run_checks(edited_machine(X86, lambda d: _gpus_to(d, "Tesla P100-PCIE-16GB", [6, 0])), matrix)
    assert ("triton-gpu-too-old", "warning") in codes(p100)  # torch.compile refuses it
    assert any(f.code == "extension-gpu-unsupported" and f.title.startswith("vllm") for f in p100)


def test_x86_check_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["check", "--machine", os.path.join(str(MACHINES), X86), "--no-color"], capsys)
    assert code != ExitCode.OK
    assert "flash-attn 2.7.4.post1+cu12torch2.6cxx11abiFALSE" in out and "vllm 0.10.1.1" in out
    assert "[extension-built-for-other-torch]" in out and "[triton-version-mismatch]" in out


def test_a_snapshot_without_the_new_sections_reads_as_before(matrix: Matrix) -> None:
    """A saved snapshot of an older cudadoctor (no 'jetson') still loads and is judged the same."""
    from cudadoctor.model.serialize import snapshot_from_dict, snapshot_to_dict

    snap = snapshot_of(X86)
    data = snapshot_to_dict(snap)
    data.pop("jetson")
    again: Snapshot = snapshot_from_dict(data)
    assert again.jetson is None
    assert codes(run_checks(again, matrix)) == codes(run_checks(snap, matrix))
