"""The error message a user saw, matched against the known error signatures: low-confidence
findings that say what to verify, marked as following from a real finding when one explains them,
and the verdict on each possible cause that `cudadoctor explain` prints."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Sequence

import pytest

from cudadoctor.checks import CHECKS, run_checks
from cudadoctor.diagnosis import causes as causes_module
from cudadoctor.checks import signature
from cudadoctor.checks.signature import CANNOT_TELL, HOLDS, NOT_CHECKED, RULED_OUT, causes
from cudadoctor.model.facts import snapshot_from_facts
from cudadoctor.data.source import default_matrix
from cudadoctor.model import Category, Finding, Severity, Snapshot
from cudadoctor.probes import collect
from cudadoctor.host.recorded import RecordedHost
from helpers import MACHINES_DIR

NO_KERNEL_IMAGE = ("RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
                   "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
                   "below might be incorrect.")
ERROR_804 = ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
             "calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility was "
             "attempted on non supported HW")
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch"
XID_79 = "NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off the bus."


def machine(name: str, message: str) -> Snapshot:
    import dataclasses

    snap = collect(RecordedHost.load(os.path.join(MACHINES_DIR, name)))
    return dataclasses.replace(snap, error_message=message)


def diagnose(facts: Dict[str, Any]) -> List[Finding]:
    return list(run_checks(snapshot_from_facts(facts), default_matrix()))


def sig(found: Sequence[Finding]) -> List[Finding]:
    return [f for f in found if f.code in signature.CODES]


# ---------------------------------------------------------------------------- the finding


def test_a_known_message_becomes_a_low_confidence_warning_saying_what_to_verify() -> None:
    found = sig(diagnose({"error_message": NO_KERNEL_IMAGE}))
    assert len(found) == 1
    f = found[0]
    assert (f.code, f.severity, f.category, f.confidence) == (
        "error-message-match", Severity.WARNING, Category.ARCH_UNSUPPORTED, "low")
    assert f.title == ('the error "no kernel image is available for execution on the device" points to a build '
                       "without code for the GPU's architecture")
    assert "cudaErrorNoKernelImageForDevice" in f.why
    assert "Less likely:" in f.why and "line 1" in f.why
    assert f.fix is not None and f.fix.text.startswith("check: GPU compute capability")
    assert "check: framework arch list" in f.fix.text
    assert f.source == ("errors.json#cuda-no-kernel-image",)
    assert f.evidence == ("error_message",)


def test_each_matching_signature_is_a_finding_most_specific_first() -> None:
    found = sig(diagnose({"error_message": ERROR_804}))
    assert [f.source[0] for f in found] == ["errors.json#cuda-compat-not-supported-on-device",
                                            "errors.json#torch-cudagetdevicecount-unexpected"]
    assert found[0].category is Category.LIBRARY_VERSION_CONFLICT  # 804: a forward-compatibility libcuda is loaded
    assert "Error 804" in found[0].title  # a short match is quoted with its line


def test_no_message_no_finding() -> None:
    assert sig(diagnose({"driver_version": "570.86.15"})) == []
    assert sig(diagnose({"error_message": "   "})) == []


@pytest.mark.parametrize("name", sorted(os.listdir(MACHINES_DIR)))
def test_probed_machines_have_no_message_and_no_signature_finding(name: str) -> None:
    snap = collect(RecordedHost.load(os.path.join(MACHINES_DIR, name)))
    assert sig(run_checks(snap, default_matrix(), signature.CHECKS)) == []


def test_an_unknown_message_is_said_to_match_nothing() -> None:
    found = sig(diagnose({"error_message": "Segmentation fault (core dumped) in my_kernel.cu"}))
    assert [(f.code, f.severity) for f in found] == [("error-message-unmatched", Severity.INFO)]
    assert "Segmentation fault" in found[0].why
    assert str(len(default_matrix().signatures.signatures)) in found[0].why


def test_a_real_finding_of_the_same_cause_explains_the_signature_finding() -> None:
    found = diagnose({"driver_version": "550.127.05", "kernel_module_version": "535.183.01", "error_message": MISMATCH})
    f = sig(found)[0]
    assert f.category is Category.DRIVER_LIBRARY_MISMATCH
    assert f.caused_by == "driver-library-mismatch"
    assert found.index(f) > [x.code for x in found].index("driver-library-mismatch")


def test_without_a_real_finding_the_signature_finding_stands_alone() -> None:
    f = sig(diagnose({"driver_version": "550.127.05", "error_message": MISMATCH}))[0]
    assert f.caused_by is None


def test_every_category_reads_in_words_and_every_needed_fact_is_defined() -> None:
    assert set(causes_module.LABELS) == set(Category)
    for layer, facts in causes_module.NEEDS.values():
        assert 0 <= layer <= 6  # the registry's layers below the error message's own (7)
        assert all(f in causes_module.FACTS for f in facts)
    assert signature.CODES == {code for check in signature.CHECKS for code in check.codes}


# ---------------------------------------------------------------------------- the verdicts


def categories(text: str) -> Sequence[Category]:
    from cudadoctor.diagnosis.matching import match

    found = match(text, default_matrix())
    return found[0].signature.categories


def judge(snap: Snapshot, text: str, checks: Any = None) -> List[signature.Cause]:
    found = run_checks(snap, default_matrix())
    return causes(categories(text), found, snap, CHECKS if checks is None else checks)


def test_a_cause_shown_by_a_check_holds() -> None:
    snap = machine("nvml-mismatch-after-upgrade", MISMATCH)
    verdict = judge(snap, MISMATCH)[0]
    assert (verdict.category, verdict.verdict) == (Category.DRIVER_LIBRARY_MISMATCH, HOLDS)
    assert verdict.findings == ("driver-library-mismatch",)
    assert "[driver-library-mismatch]" in verdict.reason


def test_a_cause_the_facts_rule_out() -> None:
    snap = machine("h200-driver580-torch211-cu130", MISMATCH)
    verdict = judge(snap, MISMATCH)[0]
    assert verdict.verdict == RULED_OUT
    assert "NVML answers (driver 580.159.03)" in verdict.reason


def test_unknown_facts_cannot_tell() -> None:
    snap = snapshot_from_facts({"driver_version": "550.127.05", "error_message": MISMATCH})
    verdict = judge(snap, MISMATCH)[0]
    assert verdict.verdict == CANNOT_TELL
    assert "unknown" in verdict.reason


def test_a_healthy_gpu_now_does_not_rule_out_a_past_hardware_fault() -> None:
    snap = machine("h200-driver580-torch211-cu130", XID_79)
    verdict = judge(snap, XID_79)[0]
    assert (verdict.category, verdict.verdict) == (Category.HARDWARE_FAULT, CANNOT_TELL)
    assert "comes and goes" in verdict.reason


def test_no_check_for_the_category_cannot_tell() -> None:
    snap = machine("h200-driver580-torch211-cu130", NO_KERNEL_IMAGE)
    only_access = [c for c in CHECKS if c.layer in (0, 1, 2)]
    verdicts = judge(snap, NO_KERNEL_IMAGE, only_access)
    assert verdicts[0].category is Category.ARCH_UNSUPPORTED
    assert verdicts[0].verdict == CANNOT_TELL
    assert "no check for it" in verdicts[0].reason


def test_other_causes_cannot_be_told_from_facts() -> None:
    text = "RuntimeError: CUDA error: device-side assert triggered"
    snap = machine("h200-driver580-torch211-cu130", text)
    verdict = judge(snap, text)[0]
    assert (verdict.category, verdict.verdict) == (Category.OTHER, CANNOT_TELL)


def test_not_checked_without_a_machine() -> None:
    verdicts = causes(categories(NO_KERNEL_IMAGE), None, None, CHECKS)
    assert {v.verdict for v in verdicts} == {NOT_CHECKED}
    assert [v.category for v in verdicts][0] is Category.ARCH_UNSUPPORTED


def test_the_signature_finding_itself_never_shows_its_cause() -> None:
    snap = snapshot_from_facts({"error_message": MISMATCH})
    found = run_checks(snap, default_matrix())
    assert sig(found)
    assert judge(snap, MISMATCH)[0].verdict != HOLDS


# ---------------------------------------------------------------------------- unknown is not absent
# A check that stays silent because a cause before it holds (no GPU: no build check runs) rules
# nothing out; a fact that shows a cause on its own makes it hold (the machine recorded here: no GPU,
# no driver, torch's CPU build, in a docker container).

DEV = "dev-debian12-cuda13-nodriver-torch213cpu"
NOT_COMPILED = "AssertionError: Torch not compiled with CUDA enabled"
NO_DRIVER = "RuntimeError: Found no NVIDIA driver on your system."


def _verdicts(name: str, text: str) -> Dict[Category, Any]:
    return {v.category: v for v in judge(machine(name, text), text)}


def test_a_cpu_build_is_the_cause_even_where_no_gpu_hides_its_finding() -> None:
    verdict = _verdicts(DEV, NOT_COMPILED)[Category.CPU_ONLY_BUILD]
    assert (verdict.verdict, verdict.reason) == (HOLDS, "torch 2.13.0+cpu is a CPU-only build")


def test_no_driver_holds_by_its_facts_and_what_waits_for_the_gpu_is_not_ruled_out() -> None:
    verdicts = _verdicts(DEV, NO_DRIVER)
    assert verdicts[Category.NO_DRIVER].verdict == HOLDS
    assert verdicts[Category.NO_GPU].verdict == HOLDS
    for category in (Category.CONTAINER_NO_GPU, Category.KERNEL_MODULE_BLOCKED):
        assert verdicts[category].verdict == CANNOT_TELL
        assert "[no-nvidia-gpu]" in verdicts[category].reason


def test_nothing_is_ruled_out_without_a_positive_fact_on_the_no_gpu_machine() -> None:
    for text in (NOT_COMPILED, NO_DRIVER, NO_KERNEL_IMAGE, MISMATCH):
        for verdict in judge(machine(DEV, text), text):
            assert verdict.verdict != RULED_OUT, (text, verdict)


def test_a_cuda_build_rules_out_a_cpu_build() -> None:
    verdict = _verdicts("h200-driver580-torch211-cu130", NOT_COMPILED)[Category.CPU_ONLY_BUILD]
    assert verdict.verdict == RULED_OUT and "built for CUDA" in verdict.reason


def test_an_unknown_fact_names_the_command_that_would_tell() -> None:
    snap = snapshot_from_facts({"torch_version": "2.5.1+cu124", "error_message": NO_DRIVER})
    verdict = {v.category: v for v in judge(snap, NO_DRIVER)}[Category.NO_DRIVER]
    assert verdict.verdict == CANNOT_TELL and "(run: nvidia-smi" in verdict.reason


def test_out_of_memory_is_a_category_of_its_own() -> None:
    text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.70 GiB."
    assert categories(text)[0] is Category.OUT_OF_MEMORY
    first = judge(machine("h200-driver580-torch211-cu130", text), text)[0]
    assert (first.category, first.verdict) == (Category.OUT_OF_MEMORY, CANNOT_TELL)
