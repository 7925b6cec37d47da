"""What the smoke suites proved: real GPU code that failed, and hardware that misbehaved under load.

The suites ran in child processes (``cudadoctor smoke``, or the quick tier of ``check``); their
outcomes are ``Snapshot.smoke``. A failed suite becomes ``smoke-driver-failed`` or
``smoke-framework-failed``, sharpened by the other suites: when the driver suite ran its PTX
kernels fine and the torch suite failed, the driver and the GPU work and the torch install is at
fault. Both declare the root-cause categories that explain them, so a finding of the other checks
(no kernel image for this GPU, a CPU-only build, a missing library, ...) comes first and the smoke
finding is marked as following from it. Memory read back wrong, ECC counters rising, Xid errors and
bandwidth far below the GPU's peak become ``hardware_fault`` findings. Metric names:
cudadoctor/smoke/suites/_protocol.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from cudadoctor.model import Category, Finding, Gpu, Severity, SmokeResult, SmokeTest, Snapshot
from cudadoctor.checks.base import Check, finding, ref
from cudadoctor.checks.signature import label as cause_label
from cudadoctor.diagnosis.matching import first as first_match
from cudadoctor.diagnosis.matching import match as match_text

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

C = Category
E, W = Severity.ERROR, Severity.WARNING
BAD_TESTS = ("failed", "error")
FAILED_SUITES = ("failed", "error", "timeout", "crashed")
SHOWN = 5  # failing tests listed in a finding's why

# The driver suite needs only libcuda and a GPU: these explain its failure.
DRIVER_CAUSES: Tuple[Category, ...] = (
    C.NO_GPU, C.NO_DRIVER, C.KERNEL_MODULE_BLOCKED, C.DRIVER_LIBRARY_MISMATCH, C.CONTAINER_NO_GPU,
    C.VISIBLE_DEVICES_HIDDEN, C.HARDWARE_FAULT,
)
# A framework suite also needs a build for this driver, GPU and Python, and its libraries; and a
# failed driver suite (smoke_failed) explains it too.
FRAMEWORK_CAUSES: Tuple[Category, ...] = DRIVER_CAUSES + (
    C.DRIVER_TOO_OLD, C.CPU_ONLY_BUILD, C.ARCH_UNSUPPORTED, C.PYTHON_UNSUPPORTED, C.PLATFORM_UNSUPPORTED,
    C.COMPANION_VERSION_MISMATCH, C.WRONG_PACKAGE_VARIANT, C.MISSING_LIBRARY, C.LIBRARY_VERSION_CONFLICT,
    C.CUDNN_MISMATCH, C.SMOKE_FAILED,
)

# Counters a suite reports that mean the hardware misbehaved (after minus before, or given as
# before_X / after_X pairs). Result mismatches count only in stress tests: identical work under
# sustained load (a wrong quick-tier result is a plain failure).
HARDWARE_COUNTERS: Dict[str, str] = {
    "pattern_errors": "{n} memory word{s} read back wrong in the memory pattern test",
    "ecc_uncorrected": "uncorrected ECC errors rose by {n} while it ran",
    "retired_pages": "{n} memory page{s} retired while it ran",
    "remapped_rows": "{n} memory row{s} remapped while it ran",
    "xid_events": "{n} Xid error{s} in the kernel log while it ran",
}
STRESS_MISMATCHES = ("mismatches", "mismatched_elements")
# CUDA errors that only failing hardware raises.
HARDWARE_ERRORS = frozenset({
    "CUDA_ERROR_ECC_UNCORRECTABLE", "cudaErrorECCUncorrectable",
    "CUDA_ERROR_NVLINK_UNCORRECTABLE", "cudaErrorNvlinkUncorrectable",
    "CUDA_ERROR_HARDWARE_STACK_ERROR", "cudaErrorHardwareStackError",
})
BANDWIDTH_TESTS = ("d2d_bandwidth", "bandwidth_d2d")  # driver suite, torch suite
LOW_BANDWIDTH = 0.5  # of the peak: below this, warn


# ---------------------------------------------------------------------------- helpers


def _plural(n: float, word: str) -> str:
    return f"{n:g} {word}{'' if n == 1 else 's'}"


def _where(t: SmokeTest) -> str:
    return f" on GPU {t.gpu}" if t.gpu is not None else ""


def _what(t: SmokeTest, name: bool = True) -> str:
    """What went wrong in a test; with ``name``, the decoded CUDA error appended when not in the text."""
    text = t.error or t.message or t.status
    return text + (f" [{t.cuda_error}]" if name and t.cuda_error and t.cuda_error not in text else "")


def _short(text: str, limit: int = 140) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _results(snap: Snapshot) -> List[Tuple[int, SmokeResult]]:
    return list(enumerate(snap.smoke or ()))


def _bad(r: SmokeResult) -> List[SmokeTest]:
    return [t for t in r.tests if t.status in BAD_TESTS]


def _text_of(r: SmokeResult, tests: Sequence[SmokeTest]) -> str:
    """Everything a failure said, for matching against the error signatures."""
    parts = [x for t in tests for x in (t.error, t.message, t.cuda_error) if x]
    return "\n".join(parts + [r.reason, r.stderr_tail])


def _signature(matrix: Matrix, text: str) -> Any:
    try:
        return first_match(text, matrix)
    except Exception:  # no signature data: the finding only loses its explanation
        return None


def _hardware_signature(matrix: Matrix, text: str) -> Any:
    """The first error signature in ``text`` whose most likely cause is a hardware fault."""
    try:
        found = match_text(text, matrix) if text.strip() else []
    except Exception:  # no signature data: the counters and error names still count
        return None
    return next((m for m in found if m.signature.category is C.HARDWARE_FAULT), None)


def counter_rise(t: SmokeTest, key: str) -> Optional[float]:
    """How much counter ``key`` rose during a test: ``key_delta``, ``after_key - before_key``, or
    (for counts that start at zero, such as pattern_errors) ``key`` itself."""
    m = t.metrics
    if f"{key}_delta" in m:
        return m[f"{key}_delta"]
    if f"after_{key}" in m and f"before_{key}" in m:
        return m[f"after_{key}"] - m[f"before_{key}"]
    return m.get(key) if key in ("pattern_errors", "xid_events") else None


def _counter_evidence(t: SmokeTest) -> List[str]:
    out = []
    for key, sentence in HARDWARE_COUNTERS.items():
        n = counter_rise(t, key)
        if n is not None and n > 0:
            out.append(sentence.format(n=f"{n:g}", s="" if n == 1 else "s"))
    if "stress" in t.name:
        wrong = max((t.metrics.get(k, 0.0) for k in STRESS_MISMATCHES), default=0.0)
        if wrong > 0:
            out.append(f"{wrong:g} result element{'s' if wrong != 1 else ''} differed between identical runs "
                       "under sustained load")
    return out


def _hardware_evidence(t: SmokeTest, matrix: Matrix) -> Tuple[List[str], Optional[str]]:
    """Why a test points to the hardware, and the errors.json record that says so."""
    found = _counter_evidence(t)
    source = None
    if t.status in BAD_TESTS:
        if t.cuda_error in HARDWARE_ERRORS:
            found.append(f"it failed with {t.cuda_error}")
        m = _hardware_signature(matrix, "\n".join(x for x in (t.error, t.message) if x))
        if m is not None:
            source = m.signature.id
            if t.cuda_error not in HARDWARE_ERRORS:
                found.append(f"it failed with '{_short(m.text, 80)}'")
        if t.name.startswith("memory_pattern") and t.status == "failed" and not found:
            found.append(f"the memory pattern test failed: {_what(t)}")
    return found, source


def gpu_label(snap: Snapshot, r: SmokeResult, index: Optional[int]) -> str:
    """'GPU 0 (NVIDIA H100 80GB HBM3)': the suite's own name for it, else the model when every GPU
    is the same (the suite's index counts visible GPUs, which need not be NVML's)."""
    if index is None:
        return "a GPU"
    name = _suite_gpu_name(r, index) or _uniform_name(snap)
    return f"GPU {index} ({name})" if name else f"GPU {index}"


def _suite_gpu_name(r: SmokeResult, index: int) -> Optional[str]:
    """The suite's name of its GPU ``index``: ``gpu.<i>.name``, or the first part of the driver
    suite's ``gpu<i>`` ('NVIDIA H100 80GB HBM3, cc 9.0, 81559 MiB')."""
    named = r.details.get(f"gpu.{index}.name")
    if named:
        return named
    summary = r.details.get(f"gpu{index}")
    if not summary:
        return None
    return summary.split(",")[0].strip() or None


def _uniform_name(snap: Snapshot) -> Optional[str]:
    names = {g.name for g in snap.gpus or ()}
    return names.pop() if len(names) == 1 and None not in names else None


def _model_gpu(snap: Snapshot, r: SmokeResult, index: int) -> Optional[Gpu]:
    """The snapshot's GPU the suite called ``index``: by PCI bus id when the suite gave one, else
    the first GPU when every GPU is the same model."""
    def short(bus_id: str) -> str:  # "00000000:19:00.0" and "0000:19:00.0" -> "19:00.0"
        return ":".join(bus_id.lower().split(":")[-2:])

    bus = r.details.get(f"gpu.{index}.pci_bus_id")
    for g in snap.gpus or ():
        if bus and g.pci_bus_id and short(g.pci_bus_id) == short(bus):
            return g
    return (snap.gpus or ())[0] if _uniform_name(snap) else None


# ---------------------------------------------------------------------------- failed suites


def _failure_title(r: SmokeResult, bad: Sequence[SmokeTest]) -> str:
    who = f"the {r.suite} smoke suite"
    if r.status == "timeout":
        return f"{who} {r.reason}" if r.reason else f"{who} timed out"
    if r.status == "crashed":
        return f"{who} crashed: {_short(r.reason)}"
    if bad:
        t = bad[0]
        verb = "failed" if t.status == "failed" else "raised"
        return f"{r.suite} smoke test {t.name} {verb}{_where(t)}: {_short(_what(t, name=False))}"
    return f"{who} could not run: {_short(r.reason)}"


def _failure_facts(r: SmokeResult, bad: Sequence[SmokeTest]) -> str:
    ran = f" ({r.framework})" if r.framework else ""
    lines = [f"The {r.suite} suite{ran} ran in its own process at the {r.tier or 'quick'} tier"]
    passed = [t.name for t in r.tests if t.status == "passed"]
    if r.tests:
        lines[0] += f": {len(passed)} of {len(r.tests)} tests passed"
        if passed:
            lines[0] += f" ({', '.join(dict.fromkeys(passed))})"
    lines[0] += "."
    if bad:
        shown = "; ".join(f"{t.name}{_where(t)}: {_short(_what(t), 200)}" for t in bad[:SHOWN])
        more = f" (and {len(bad) - SHOWN} more)" if len(bad) > SHOWN else ""
        lines.append(f"Failed: {shown}{more}.")
    elif r.status in ("timeout", "crashed", "error"):
        lines.append(f"Outcome: {r.reason}.")
    last = r.stderr_tail.strip().splitlines()[-1:] if r.stderr_tail else []
    if last and r.status in ("timeout", "crashed", "error"):
        lines.append(f"The last line on its stderr: {_short(last[0], 200)}")
    return " ".join(lines)


def _driver_verdict(snap: Snapshot, r: SmokeResult) -> str:
    """What the driver suite says about a framework suite's failure."""
    driver = next((d for d in snap.smoke or () if d.suite == "driver"), None)
    fw = r.suite
    if driver is None or r.suite == "driver":
        return ""
    if driver.status == "passed":
        return (f" The driver suite passed ({len(driver.tests)} tests: PTX kernels compiled by the driver, launched "
                f"and checked through libcuda alone), so the driver and the GPU work: the problem is the {fw} "
                f"install (its build, the CUDA libraries it loads, or their versions), not the driver.")
    if driver.status in FAILED_SUITES:
        return (f" The driver suite failed too ({_short(driver.reason, 120)}): the problem lies below {fw}, "
                "so start with the driver and the GPU.")
    return f" The driver suite was skipped ({_short(driver.reason, 120)}), so it cannot tell driver from {fw}."


def _failure(snap: Snapshot, matrix: Matrix, i: int, r: SmokeResult, bad: Sequence[SmokeTest]) -> Finding:
    driver = r.suite == "driver"
    why = _failure_facts(r, bad) + _driver_verdict(snap, r)
    m = _signature(matrix, _text_of(r, bad))
    source: List[str] = []
    verify: List[str] = []
    if m is not None:
        why += f" The error points to {cause_label(m.signature.category)}: {m.signature.explanation}"
        source.append(ref("errors.json", m.signature.id))
        verify = list(m.signature.verify)
    if driver:
        fix = ("Fix the finding this follows from, if any. Otherwise the driver cannot run CUDA code on this GPU: "
               "look at the kernel log for Xid errors, and reinstall or update the NVIDIA driver.")
        commands = ["nvidia-smi", "sudo dmesg | grep -E 'NVRM|Xid'", "cudadoctor smoke --suite driver -v"]
    else:
        fix = (f"Fix the finding this follows from, if any. Otherwise reinstall {r.suite} with a build for this "
               f"driver and GPU (cudadoctor check shows the build facts), and re-run the suite with -v to see every "
               "test and the end of its stderr.")
        commands = ["cudadoctor check", f"cudadoctor smoke --suite {r.suite} -v"]
    if verify:
        steps = "; ".join(v.rstrip(".") for v in verify)
        fix += " To confirm the cause: " + steps + ("" if steps.endswith("?") else ".")
    return finding(
        "smoke-driver-failed" if driver else "smoke-framework-failed", E, C.SMOKE_FAILED,
        _failure_title(r, bad), why=why, fix=fix, commands=commands,
        evidence=[f"smoke[{i}].status", f"smoke[{i}].tests"], source=source,
    )


def _unseen_gpu(snap: Snapshot, i: int, r: SmokeResult) -> Optional[Finding]:
    """A framework suite skipped while the framework is installed and the driver suite ran on a GPU."""
    driver = next((d for d in snap.smoke or () if d.suite == "driver"), None)
    if r.status != "skipped" or driver is None or driver.status != "passed" or snap.frameworks is None:
        return None
    if snap.framework(r.suite) is None or not any(t.gpu is not None and t.status == "passed" for t in driver.tests):
        return None
    gpus = sorted({t.gpu for t in driver.tests if t.gpu is not None and t.status == "passed"})
    build = snap.framework(r.suite)
    facts = " ".join(x for x in (r.suite, build.version if build else None,
                                 f"{build.variant} build" if build and build.variant else None,
                                 f"for CUDA {build.cuda}" if build and build.cuda else None) if x)
    return finding(
        "smoke-framework-failed", E, C.SMOKE_FAILED,
        f"{r.suite} ran nothing on the GPU, while the driver suite ran kernels on {_plural(len(gpus), 'GPU')}",
        why=f"The {r.suite} suite skipped its tests: {r.reason}. Yet {r.suite} is installed in this environment "
            f"({facts}), and the driver suite passed on GPU {', '.join(str(g) for g in gpus)} in the same "
            f"environment, so CUDA sees the GPU: {r.suite} itself cannot use it (often a CPU-only build, a build for "
            "another CUDA version, or a library it cannot load).",
        fix=f"Fix the finding this follows from, if any; otherwise reinstall {r.suite} with a CUDA build for this "
            "driver (cudadoctor check shows the build facts).",
        commands=["cudadoctor check", f"cudadoctor smoke --suite {r.suite} -v"],
        evidence=[f"smoke[{i}].status", f"smoke[{i}].reason"],
    )


def _software_failures(r: SmokeResult, matrix: Matrix) -> Optional[List[SmokeTest]]:
    """The failing tests that do not point to the hardware (the hardware finding covers the
    others); None when the suite failed only through such tests."""
    bad = _bad(r)
    software = [t for t in bad if not _hardware_evidence(t, matrix)[0]]
    if r.status == "failed" and bad and not software:
        return None
    return software or bad


def check_smoke_failed(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """A suite that failed, could not run, crashed or timed out (not when only the hardware failed)."""
    out: List[Finding] = []
    for i, r in _results(snap):
        if r.status in FAILED_SUITES:
            bad = _software_failures(r, matrix)
            if bad is not None:
                out.append(_failure(snap, matrix, i, r, bad))
        elif r.suite != "driver":
            unseen = _unseen_gpu(snap, i, r)
            if unseen is not None:
                out.append(unseen)
    return out


def check_smoke_driver(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """The driver suite failed: libcuda could not run the embedded PTX kernels."""
    return [f for f in check_smoke_failed(snap, matrix) if f.code == "smoke-driver-failed"]


def check_smoke_frameworks(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """A framework suite failed, or skipped while the driver suite ran on a GPU."""
    return [f for f in check_smoke_failed(snap, matrix) if f.code == "smoke-framework-failed"]


# ---------------------------------------------------------------------------- hardware


def _hardware_commands(gpu: Optional[int]) -> List[str]:
    at = f" -i {gpu}" if gpu is not None else ""
    return [f"nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT{at}", "sudo dmesg | grep -E 'NVRM|Xid'",
            "cudadoctor smoke --tier standard" + (f" --gpu {gpu}" if gpu is not None else "")]


def check_smoke_hardware(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """Tests whose numbers or errors point to the GPU's hardware: memory read back wrong, results
    differing between identical runs, ECC counters rising, Xid errors; one finding per suite and GPU."""
    out: List[Finding] = []
    for i, r in _results(snap):
        by_gpu: Dict[Optional[int], List[Tuple[SmokeTest, List[str], Optional[str]]]] = {}
        for t in r.tests:
            evidence, source = _hardware_evidence(t, matrix)
            if evidence:
                by_gpu.setdefault(t.gpu, []).append((t, evidence, source))
        if r.status in ("crashed", "timeout") and not by_gpu:
            m = _hardware_signature(matrix, f"{r.reason}\n{r.stderr_tail}")
            if m is not None:
                by_gpu[None] = [(SmokeTest(name="(the suite)", status="error"),
                                 [f"its output says '{_short(m.text, 80)}'"], m.signature.id)]
        for gpu, items in by_gpu.items():
            said = "; ".join(f"{t.name}: {', '.join(ev)}" for t, ev, _ in items)
            sources = [ref("errors.json", s) for s in dict.fromkeys(s for _, _, s in items if s)]
            out.append(finding(
                "smoke-hardware-fault", E, C.HARDWARE_FAULT,
                f"{gpu_label(snap, r, gpu)} misbehaved under load in the {r.suite} smoke suite: {items[0][1][0]}",
                why=f"The {r.suite} suite ({r.tier or 'quick'} tier) saw what only failing hardware does: {said}. "
                    "A software problem makes a test fail the same way every time, on every GPU; wrong memory "
                    "contents, differing results of identical work and ECC or Xid errors come from the GPU, its "
                    "memory, its power or its cooling.",
                fix="Stop the work on this GPU, read its memory error state and the kernel log, and run the standard "
                    "tier again (after a GPU reset or a reboot). If it fails again, take the GPU out of service and "
                    "have it tested or replaced (RMA).",
                commands=_hardware_commands(gpu),
                evidence=[f"smoke[{i}].tests"], source=sources,
            ))
        out.extend(_ecc_corrected(snap, i, r))
    return out


def _ecc_corrected(snap: Snapshot, i: int, r: SmokeResult) -> List[Finding]:
    out = []
    for t in r.tests:
        n = counter_rise(t, "ecc_corrected")
        if n is not None and n > 0:
            out.append(finding(
                "smoke-ecc-corrected", W, C.HARDWARE_FAULT,
                f"{gpu_label(snap, r, t.gpu)}: {_plural(n, 'corrected ECC error')} during the {r.suite} smoke test "
                f"{t.name}",
                why=f"NVML's corrected (single-bit) ECC counter rose by {n:g} while {t.name} ran. ECC repaired each "
                    "one, so no result was wrong, but memory that keeps producing them often goes on to produce "
                    "uncorrectable errors.",
                fix="Watch the counters; if they keep rising, or uncorrected errors appear, have the GPU checked.",
                commands=_hardware_commands(t.gpu)[:1],
                evidence=[f"smoke[{i}].tests"],
            ))
    return out


def traffic_gbs(t: SmokeTest) -> Optional[float]:
    """DRAM traffic of a device-to-device copy test, bytes read plus written per second (GB/s):
    ``traffic_gbs`` or ``rw_gbs`` as given, else twice the bytes copied per second (``bandwidth_gbs``
    or ``gbs``)."""
    m = t.metrics
    for key in ("traffic_gbs", "rw_gbs"):
        if key in m:
            return m[key]
    copied = m.get("bandwidth_gbs", m.get("gbs"))
    return 2 * copied if copied is not None else None


def _peak(snap: Snapshot, matrix: Matrix, r: SmokeResult, t: SmokeTest) -> Optional[Tuple[float, str, List[str]]]:
    """(peak GB/s, whose figure, source): the suite's expected figure, the GPU table's, or the
    peak the driver suite computed from the GPU's memory clock and bus width."""
    if t.metrics.get("expected_gbs"):
        return t.metrics["expected_gbs"], f"the {r.suite} suite's expected figure", []
    g = _model_gpu(snap, r, t.gpu) if t.gpu is not None else None
    if g is not None and g.mig_mode == "enabled":  # a MIG slice gets a share of the bandwidth
        return None
    name = _suite_gpu_name(r, t.gpu) if t.gpu is not None else None
    model = matrix.gpus.identify(name=g.name, pci_device_id=g.pci_device_id) if g else None
    if model is None and name:
        model = matrix.gpus.by_name(name)
    peak = matrix.gpus.expected_bandwidth_gbs(model) if model else None
    if model is not None and peak:
        return peak, f"the {model.name} peak", [ref("gpus.json", model.name)]
    if t.metrics.get("theoretical_gbs"):
        return t.metrics["theoretical_gbs"], "the peak from the GPU's memory clock and bus width", []
    return None


def check_smoke_bandwidth(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    """Device memory bandwidth measured below half of the GPU's peak (compat_data/gpus.json)."""
    out: List[Finding] = []
    for i, r in _results(snap):
        for t in r.tests:
            measured = traffic_gbs(t)
            if t.name not in BANDWIDTH_TESTS or measured is None or t.gpu is None or t.status == "skipped":
                continue
            found = _peak(snap, matrix, r, t)
            if found is None or measured >= LOW_BANDWIDTH * found[0]:
                continue
            peak, whence, source = found
            out.append(finding(
                "smoke-bandwidth-low", W, C.HARDWARE_FAULT,
                f"{gpu_label(snap, r, t.gpu)}: device memory bandwidth {measured:.0f} GB/s, {measured / peak:.0%} of "
                f"the {peak:.0f} GB/s peak",
                why=f"The {r.suite} suite's {t.name} test copied memory on GPU {t.gpu} at {measured:.0f} GB/s of "
                    f"memory traffic (bytes read plus written per second, twice the bytes copied), less than half "
                    f"of {whence} ({peak:.0f} GB/s); a healthy GPU reaches 70-90 % of its peak in a large copy. "
                    "Other work on the GPU, clocks held back by heat or power, or a memory fault slow it down.",
                fix="Check what else runs on the GPU and whether its clocks are held back, then measure again on an "
                    "idle GPU.",
                commands=[f"nvidia-smi -i {t.gpu}", f"nvidia-smi -q -d PERFORMANCE,CLOCK -i {t.gpu}",
                          f"cudadoctor smoke --tier standard --gpu {t.gpu}"],
                evidence=[f"smoke[{i}].tests"], source=source,
            ))
    return out


CHECKS = (
    Check("smoke-hardware", check_smoke_hardware, ("smoke-hardware-fault", "smoke-ecc-corrected"), 6,
          "no smoke test saw wrong memory contents, differing results, or ECC and Xid errors"),
    Check("smoke-bandwidth", check_smoke_bandwidth, ("smoke-bandwidth-low",), 6,
          "device memory bandwidth measured by the smoke suites is at least half the GPU's peak"),
    Check("smoke-driver", check_smoke_driver, ("smoke-driver-failed",), 6,
          "the driver smoke suite (PTX kernels through libcuda) passed", DRIVER_CAUSES),
    Check("smoke-frameworks", check_smoke_frameworks, ("smoke-framework-failed",), 6,
          "every framework's smoke suite ran its GPU tests", FRAMEWORK_CAUSES),
)
