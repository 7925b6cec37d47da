"""Smoke outcomes as findings: failed suites, sharpened by the driver suite and ordered after the
root causes the other checks find; hardware faults seen under load; low memory bandwidth.

Smoke results are attached to recorded machines, as `cudadoctor smoke` attaches them to the
snapshot it probed."""

from __future__ import annotations

import dataclasses
from typing import Any, List, Optional, Sequence

import pytest

from cudadoctor.checks import CHECKS, run_checks
from cudadoctor.checks import smoke as smoke_checks
from cudadoctor.data.source import default_matrix
from cudadoctor.model import Category, Finding, Severity, SmokeResult, SmokeTest, Snapshot
from helpers import snapshot_of

H200 = "h200-driver580-torch211-cu130"  # healthy
LAPTOP = "laptop-rtx3060-driver470-torch25-cu124"  # driver 470 too old for torch cu124
DGX = "dgx-h100x8-driver570-torch27-cu128"


machine = snapshot_of


def with_smoke(name: str, *results: SmokeResult) -> Snapshot:
    return dataclasses.replace(machine(name), smoke=tuple(results))


def check(snap: Snapshot) -> List[Finding]:
    return list(run_checks(snap, default_matrix()))


def smoke_only(findings: Sequence[Finding]) -> List[Finding]:
    codes = {code for c in smoke_checks.CHECKS for code in c.codes}
    return [f for f in findings if f.code in codes]


def passed(test: str, gpu: Optional[int] = 0, **metrics: float) -> SmokeTest:
    return SmokeTest(test, "passed", gpu=gpu, duration_s=0.01, metrics=dict(metrics))


DRIVER_OK = SmokeResult("driver", "passed", "3 tests passed", tier="quick", duration_s=0.8,
                        tests=(passed("vector_add"), passed("saxpy"), passed("reduction")))
NO_KERNEL = SmokeTest("matmul_fp32", "error", gpu=0, duration_s=0.2,
                      error="RuntimeError: CUDA error: no kernel image is available for execution on the device",
                      cuda_error="cudaErrorNoKernelImageForDevice")
TORCH_FAILED = SmokeResult("torch", "failed", "matmul_fp32 on GPU 0 raised RuntimeError: CUDA error: no kernel image",
                           tier="quick", framework="torch 2.11.0+cu130",
                           tests=(passed("alloc"), NO_KERNEL), exit_code=1)


def test_nothing_to_say_when_smoke_did_not_run_or_passed() -> None:
    assert smoke_only(check(machine(H200))) == []
    torch_ok = SmokeResult("torch", "passed", "2 tests passed", tests=(passed("alloc"), passed("matmul_fp32")))
    skipped = SmokeResult("julia", "skipped", "julia is not installed")
    assert smoke_only(check(with_smoke(H200, DRIVER_OK, torch_ok, skipped))) == []


def test_driver_passed_torch_failed_blames_the_torch_install() -> None:
    found = smoke_only(check(with_smoke(H200, DRIVER_OK, TORCH_FAILED)))
    assert [f.code for f in found] == ["smoke-framework-failed"]
    f = found[0]
    assert f.severity is Severity.ERROR and f.category is Category.SMOKE_FAILED
    assert f.title == ("torch smoke test matmul_fp32 raised on GPU 0: RuntimeError: CUDA error: no kernel image is "
                       "available for execution on the device")
    assert "the driver and the GPU work: the problem is the torch install" in f.why
    assert "1 of 2 tests passed (alloc)" in f.why
    assert "points to a build without code for the GPU's architecture" in f.why  # the signature's first cause
    assert f.source == ("errors.json#cuda-no-kernel-image",)
    assert f.fix is not None and "cudadoctor smoke --suite torch -v" in [c.run for c in f.fix.commands]
    assert f.caused_by is None  # nothing else is wrong on this machine


def test_a_root_cause_from_the_facts_comes_first_and_the_smoke_failure_follows_from_it() -> None:
    torch = SmokeResult("torch", "error", "the suite raised RuntimeError: The NVIDIA driver on your system is too old",
                        framework="torch 2.5.1+cu124", exit_code=1)
    findings = check(with_smoke(LAPTOP, DRIVER_OK, torch))
    codes = [f.code for f in findings]
    assert codes.index("driver-too-old-for-build") < codes.index("smoke-framework-failed")
    f = next(f for f in findings if f.code == "smoke-framework-failed")
    assert f.caused_by == "driver-too-old-for-build"
    assert f.title.startswith("the torch smoke suite could not run: the suite raised RuntimeError")


def test_driver_suite_failed_too_points_below_the_framework() -> None:
    driver = SmokeResult("driver", "failed", "cuInit failed", tests=(
        SmokeTest("init", "error", error="RuntimeError: cuInit: CUDA_ERROR_NO_DEVICE", cuda_error="CUDA_ERROR_NO_DEVICE"),))
    findings = smoke_only(check(with_smoke(H200, driver, TORCH_FAILED)))
    assert [f.code for f in findings] == ["smoke-driver-failed", "smoke-framework-failed"]
    d, t = findings
    assert d.title == "driver smoke test init raised: RuntimeError: cuInit: CUDA_ERROR_NO_DEVICE"
    assert d.source == ("errors.json#cuda-no-device",)
    assert "The driver suite failed too (cuInit failed)" in t.why
    assert t.caused_by == "smoke-driver-failed"


@pytest.mark.parametrize("result, title", [
    (SmokeResult("jax", "timeout", "timed out after 60 s", stderr_tail="...\n  File \"x.py\", line 3 in body"),
     "the jax smoke suite timed out after 60 s"),
    (SmokeResult("cupy", "crashed", "killed by SIGSEGV", signal="SIGSEGV", stderr_tail="Fatal Python error: Segmentation fault"),
     "the cupy smoke suite crashed: killed by SIGSEGV"),
    (SmokeResult("tensorflow", "error", "protocol violation: 2 lines on stdout instead of one"),
     "the tensorflow smoke suite could not run: protocol violation: 2 lines on stdout instead of one"),
])
def test_timeouts_crashes_and_errors_are_failures(result: SmokeResult, title: str) -> None:
    found = smoke_only(check(with_smoke(H200, result)))
    assert [f.title for f in found] == [title]
    assert found[0].code == "smoke-framework-failed"
    if result.stderr_tail:
        assert "The last line on its stderr:" in found[0].why


def test_a_framework_that_sees_no_gpu_while_the_driver_suite_ran_is_a_failure() -> None:
    torch = SmokeResult("torch", "skipped", "torch.cuda.is_available() is False")
    found = smoke_only(check(with_smoke(H200, DRIVER_OK, torch)))
    assert [f.title for f in found] == ["torch ran nothing on the GPU, while the driver suite ran kernels on 1 GPU"]
    assert "(torch 2.11.0+cu130 cuda build for CUDA 13.0)" in found[0].why
    # not installed at all (no torch in the snapshot): a plain skip
    julia = SmokeResult("julia", "skipped", "julia is not installed")
    assert smoke_only(check(with_smoke(H200, DRIVER_OK, julia))) == []


def test_memory_pattern_errors_are_a_hardware_fault_not_a_software_failure() -> None:
    pattern = SmokeTest("memory_pattern", "failed", gpu=0, message="12 words read back wrong",
                        metrics={"pattern_errors": 12, "bytes_tested": 1e11})
    torch = SmokeResult("torch", "failed", "memory_pattern on GPU 0 failed", tier="standard",
                        tests=(passed("alloc"), pattern))
    found = smoke_only(check(with_smoke(H200, DRIVER_OK, torch)))
    assert [f.code for f in found] == ["smoke-hardware-fault"]
    f = found[0]
    assert f.category is Category.HARDWARE_FAULT and f.severity is Severity.ERROR
    assert f.title == ("GPU 0 (NVIDIA H200) misbehaved under load in the torch smoke suite: 12 memory words read "
                       "back wrong in the memory pattern test")
    assert f.fix is not None and "nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT -i 0" in [c.run for c in f.fix.commands]


def test_ecc_errors_raised_by_a_test_and_counters_rising_in_a_passing_stress_run() -> None:
    ecc = SmokeTest("gemm_stress", "error", gpu=3, error="RuntimeError: CUDA error: uncorrectable ECC error encountered",
                    cuda_error="cudaErrorECCUncorrectable")
    rising = SmokeTest("stress", "passed", gpu=5, metrics={"ecc_uncorrected_delta": 2, "ecc_corrected_delta": 40})
    other = SmokeTest("matmul_fp16", "failed", gpu=1, message="max relative error 0.3 > 0.01")
    torch = SmokeResult("torch", "failed", "...", tier="stress", tests=(ecc, rising, other),
                        details={"gpu.3.name": "NVIDIA H100 80GB HBM3"})
    found = smoke_only(check(with_smoke(DGX, torch)))
    codes = [f.code for f in found]
    assert codes.count("smoke-hardware-fault") == 2 and "smoke-ecc-corrected" in codes
    # matmul_fp16 is not a hardware symptom: the suite's failure is reported too
    assert "smoke-framework-failed" in codes
    hw3 = next(f for f in found if f.code == "smoke-hardware-fault" and "GPU 3" in f.title)
    assert hw3.title.startswith("GPU 3 (NVIDIA H100 80GB HBM3) misbehaved")
    assert "it failed with cudaErrorECCUncorrectable" in hw3.why
    assert hw3.source == ("errors.json#uncorrectable-ecc-error",)
    hw5 = next(f for f in found if f.code == "smoke-hardware-fault" and "GPU 5" in f.title)
    assert "uncorrected ECC errors rose by 2" in hw5.title
    failed = next(f for f in found if f.code == "smoke-framework-failed")
    assert failed.caused_by in ("smoke-hardware-fault",)  # the hardware error explains the rest


def test_an_xid_in_a_crashed_suites_stderr_is_a_hardware_fault() -> None:
    crashed = SmokeResult("torch", "crashed", "killed by SIGSEGV",
                          stderr_tail="NVRM: Xid (PCI:0000:19:00): 79, pid=1234, GPU has fallen off the bus.")
    found = smoke_only(check(with_smoke(H200, crashed)))
    assert [f.code for f in found] == ["smoke-hardware-fault", "smoke-framework-failed"]
    assert found[0].title.startswith("a GPU misbehaved under load in the torch smoke suite: its output says")
    assert found[1].caused_by == "smoke-hardware-fault"


@pytest.mark.parametrize("copied, expected_warning", [(500.0, True), (1150.0, True), (2000.0, False)])
def test_device_bandwidth_below_half_the_peak_warns(copied: float, expected_warning: bool) -> None:
    """The torch suite's shape: gbs = bytes copied per second, rw_gbs = read + write traffic."""
    torch = SmokeResult("torch", "passed", "ok", tier="standard",
                        tests=(passed("bandwidth_d2d", gbs=copied, rw_gbs=2 * copied), passed("bandwidth_h2d", gbs=3.0)))
    found = smoke_only(check(with_smoke(H200, torch)))
    if not expected_warning:
        assert found == []
        return
    assert [f.code for f in found] == ["smoke-bandwidth-low"]
    f = found[0]
    assert f.severity is Severity.WARNING and f.category is Category.HARDWARE_FAULT
    traffic = 2 * copied
    assert f.title == (f"GPU 0 (NVIDIA H200): device memory bandwidth {traffic:.0f} GB/s, "
                       f"{traffic / 4800:.0%} of the 4800 GB/s peak")
    assert f.source == ("gpus.json#NVIDIA H200",)


def test_the_driver_suites_copy_figures_and_its_computed_peak() -> None:
    """The driver suite's shape: bandwidth_gbs copied, traffic_gbs, theoretical_gbs from the GPU's
    attributes (used where the GPU table has no figure, as for this laptop GPU)."""
    slow = SmokeResult("driver", "passed", "ok", details={"gpu0": "NVIDIA GeForce RTX 3060 Laptop GPU, cc 8.6, 6144 MiB"},
                       tests=(passed("d2d_bandwidth", bandwidth_gbs=40.0, traffic_gbs=80.0, theoretical_gbs=336.0),))
    found = smoke_only(check(with_smoke(LAPTOP, slow)))
    assert [f.title for f in found] == ["GPU 0 (NVIDIA GeForce RTX 3060 Laptop GPU): device memory bandwidth 80 GB/s, "
                                        "24% of the 336 GB/s peak"]
    assert "the peak from the GPU's memory clock and bus width" in found[0].why
    # without traffic_gbs, twice the copied bytes
    halved = dataclasses.replace(slow, tests=(passed("d2d_bandwidth", bandwidth_gbs=100.0, theoretical_gbs=336.0),))
    assert smoke_only(check(with_smoke(LAPTOP, halved))) == []


def test_bandwidth_uses_the_suites_expected_figure_and_stays_silent_when_unknown() -> None:
    with_expected = SmokeResult("torch", "passed", "ok", tests=(
        passed("d2d_bandwidth", bandwidth_gbs=50.0, expected_gbs=360.0),))
    found = smoke_only(check(with_smoke(LAPTOP, with_expected)))
    assert [f.code for f in found] == ["smoke-bandwidth-low"]
    assert "the torch suite's expected figure" in found[0].why
    no_figure = SmokeResult("torch", "passed", "ok", tests=(passed("d2d_bandwidth", bandwidth_gbs=1.0),))
    assert smoke_only(check(with_smoke(LAPTOP, no_figure))) == []  # the matrix has no peak for this laptop GPU


def test_stress_counters_given_as_before_and_after() -> None:
    """The torch suite's stress_gemm: NVML counters before and after, mismatched elements."""
    ecc = passed("stress_gemm", before_ecc_uncorrected=0, after_ecc_uncorrected=1, before_ecc_corrected=5,
                 after_ecc_corrected=5, mismatched_elements=0)
    wrong = SmokeTest("stress_gemm", "failed", gpu=1, message="... 7 wrong", metrics={"mismatched_elements": 7})
    quick = SmokeTest("vector_add", "failed", gpu=2, message="3 wrong", metrics={"mismatches": 3})
    torch = SmokeResult("torch", "failed", "...", tier="stress", tests=(ecc, wrong, quick))
    found = smoke_only(check(with_smoke(DGX, torch)))
    titles = sorted(f.title for f in found if f.code == "smoke-hardware-fault")
    assert titles == [
        "GPU 0 (NVIDIA H100 80GB HBM3) misbehaved under load in the torch smoke suite: uncorrected ECC errors rose "
        "by 1 while it ran",
        "GPU 1 (NVIDIA H100 80GB HBM3) misbehaved under load in the torch smoke suite: 7 result elements differed "
        "between identical runs under sustained load",
    ]
    assert "smoke-ecc-corrected" not in [f.code for f in found]  # corrected count did not move
    # a wrong quick-tier result is a plain failure, not a hardware verdict
    assert [f.title for f in found if f.code == "smoke-framework-failed"] == [
        "torch smoke test vector_add failed on GPU 2: 3 wrong"]


def test_the_checks_are_registered_with_their_causes() -> None:
    by_name = {c.name: c for c in CHECKS}
    assert Category.ARCH_UNSUPPORTED in by_name["smoke-frameworks"].consequence_of
    assert Category.CPU_ONLY_BUILD in by_name["smoke-frameworks"].consequence_of
    assert Category.NO_DRIVER in by_name["smoke-driver"].consequence_of
    assert Category.CPU_ONLY_BUILD not in by_name["smoke-driver"].consequence_of
    names = [c.name for c in CHECKS]
    assert names.index("throttling") < names.index("smoke-hardware") < names.index("error-message")


def test_a_malformed_hand_written_smoke_result_does_not_crash_the_checks() -> None:
    weird = SmokeResult("torch", "failed", "", tests=(SmokeTest("x", "failed"),
                                                      SmokeTest("d2d_bandwidth", "passed", gpu=7, metrics={"bandwidth_gbs": 0.0})))
    findings = check(with_smoke(H200, weird))
    assert not [f for f in findings if f.severity is Severity.CRASHED]
    assert [f.title for f in smoke_only(findings)][0] == "torch smoke test x failed: failed"


def test_gpus_are_matched_by_the_suites_pci_bus_id() -> None:
    dgx = machine(DGX)
    target = dgx.gpus[3] if dgx.gpus else None
    assert target is not None and target.pci_bus_id
    short = ":".join(target.pci_bus_id.split(":")[-2:])
    r = SmokeResult("torch", "passed", "ok", details={"gpu.0.pci_bus_id": "0000:" + short})
    assert smoke_checks._model_gpu(dgx, r, 0) == target


def test_checks_survive_a_matrix_without_signatures() -> None:
    class NoSignatures:
        gpus = default_matrix().gpus

        @property
        def signatures(self) -> Any:
            raise RuntimeError("no data")

    snap = with_smoke(H200, DRIVER_OK, TORCH_FAILED)
    found = [f for c in smoke_checks.CHECKS for f in c.fn(snap, NoSignatures())]
    assert [f.code for f in found] == ["smoke-framework-failed"] and found[0].source == ()


# ---------------------------------------------------------------------------- figures against the datasheet


def figures_note(snap: Snapshot) -> Optional[Finding]:
    found = [f for f in check(snap) if f.code == "smoke-figures"]
    assert len(found) <= 1
    return found[0] if found else None


def test_each_throughput_figure_says_its_fraction_of_the_datasheet_peak() -> None:
    torch = SmokeResult("torch", "passed", "ok", tier="stress", tests=(
        passed("bandwidth_d2d", gbs=2100.0, rw_gbs=4200.0), passed("bandwidth_h2d", gbs=50.0),
        SmokeTest("stress_gemm", "passed", gpu=0, message="900 GEMMs 8192x8192 bf16 in 30.0 s: 791.6 TFLOPS over the "
                  "GEMMs' own 12.5 s", metrics={"tflops": 791.6})))
    note = figures_note(with_smoke(H200, torch))
    assert note is not None and note.severity is Severity.INFO
    assert "torch bandwidth_d2d 4200 GB/s of memory traffic, 0.88 of the NVIDIA H200's 4800 GB/s datasheet peak" in note.why
    assert "torch stress_gemm 792 TFLOPS bf16 GEMM, 0.80 of the NVIDIA H200's 989.5 TFLOPS dense bf16 datasheet peak" \
        in note.why
    assert "bandwidth_h2d" not in note.why  # the host link is not the GPU's datasheet figure
    assert note.source == ("gpus.json#NVIDIA H200", "gpu_peaks.json#NVIDIA H200")


def test_a_gpu_the_data_does_not_know_gets_no_fraction_and_says_so() -> None:
    driver = SmokeResult("driver", "passed", "ok", details={"gpu0": "NVIDIA GeForce RTX 3060 Laptop GPU, cc 8.6, 6144 MiB"},
                         tests=(passed("d2d_bandwidth", bandwidth_gbs=150.0, traffic_gbs=300.0, theoretical_gbs=336.0),))
    note = figures_note(with_smoke(LAPTOP, driver))
    assert note is not None
    assert ("driver d2d_bandwidth 300 GB/s of memory traffic; no datasheet peak: gpus.json gives no memory bandwidth "
            "for the NVIDIA GeForce RTX 3060 Laptop GPU") in note.why
    assert note.source == ()
    unknown = dataclasses.replace(driver, details={"gpu0": "NVIDIA Imaginary X1, cc 9.9, 1024 MiB"})
    said = figures_note(with_smoke(LAPTOP, unknown))
    assert said is not None and "no datasheet peak: the data does not know this GPU" in said.why


def test_no_note_without_a_throughput_figure() -> None:
    assert figures_note(with_smoke(H200, DRIVER_OK)) is None
