"""The GPU proof kit's provoked failures and its side-by-side measurement.

Each failure is a script in ``gpu_proof_cases/`` that really causes a GPU error and lets it escape.
The kit runs it two ways at once, ``cudadoctor run -- python3 case.py`` and under
``cudadoctor.install_excepthook()``, and checks that both name the error signature expected for
it (``compat_data/errors.json``), plus, where the cause is on this machine, the finding that says
so. A script that cannot provoke its failure here exits 77 with the reason (a SKIP), one whose
failure did not happen exits 3 (a FAIL).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from gpu_proof_procs import Command
from gpu_proof_runner import FAIL, PASS, SKIP, Outcome, StepContext
from gpu_proof_steps import Kit, gpus, load_json, tail

SKIP_CODE, NO_FAILURE_CODE = 77, 3

# Runs a case file as __main__ with the excepthook installed; its folder goes first on sys.path
# as it would for `python3 case.py`.
HOOKED = ("import os, runpy, sys; import cudadoctor; cudadoctor.install_excepthook(); "
          "path = sys.argv[1]; sys.path.insert(0, os.path.dirname(path)); sys.argv = sys.argv[1:]; "
          "runpy.run_path(path, run_name='__main__')")


@dataclass(frozen=True)
class Case:
    name: str
    script: str
    signatures: Tuple[str, ...]  # any of these names the failure correctly
    env: Tuple[Tuple[str, str], ...] = ()
    also: Tuple[str, ...] = ()  # findings the diagnosis must also show (a cause that holds here)


CASES = (
    Case("wrong_arch", "wrong_arch.py", ("cuda-no-kernel-image",)),
    Case("hidden_gpu", "hidden_gpu.py", ("torch-no-cuda-gpus-available", "cuda-no-device"),
         env=(("CUDA_VISIBLE_DEVICES", ""),), also=("cuda-visible-devices-hides-all",)),
    Case("oom", "oom.py", ("cuda-out-of-memory",)),
    Case("device_assert", "device_assert.py", ("cuda-device-side-assert",)),
    # out of memory in each framework's current wording
    Case("oom_fraction", "oom_fraction.py", ("cuda-out-of-memory",)),
    Case("jax_oom", "jax_oom.py", ("jax-out-of-memory", "bfc-allocator-out-of-memory")),
    Case("cupy_oom", "cupy_oom.py", ("cupy-out-of-memory", "cuda-out-of-memory")),
    # the program's own errors
    Case("device_mismatch", "device_mismatch.py", ("tensors-on-different-devices",)),
    Case("fork_after_init", "fork_after_init.py", ("cuda-reinit-in-forked-subprocess",)),
    Case("dtype_mismatch", "dtype_mismatch.py", ("tensor-dtype-mismatch",)),
    Case("numpy_of_cuda", "numpy_of_cuda.py", ("cuda-tensor-to-numpy",)),
    Case("nccl_duplicate_gpu", "nccl_duplicate_gpu.py", ("nccl-duplicate-gpu",)),
    Case("launch_block_too_large", "launch_block_too_large.py", ("cuda-error-invalid-value", "cuda-error-invalid-configuration")),
    Case("launch_out_of_resources", "launch_out_of_resources.py", ("cuda-error-launch-out-of-resources",)),
    Case("illegal_address", "illegal_address.py", ("cuda-illegal-memory-access",)),
    Case("misaligned_address", "misaligned_address.py", ("cuda-error-misaligned-address",)),
    Case("triton_shared_memory", "triton_shared_memory.py", ("triton-out-of-shared-memory",)),
    Case("invalid_ordinal", "invalid_ordinal.py", ("cuda-invalid-device-ordinal",)),
    # the machine's setup
    Case("extension_no_nvcc", "extension_no_nvcc.py", ("extension-build-no-nvcc", "torch-cpp-extension-cuda-home-not-set")),
    Case("jax_hidden_gpu", "jax_hidden_gpu.py", ("cuda-no-device", "jax-plugin-initialize-failed", "jax-cuda-backend-failed"),
         env=(("CUDA_VISIBLE_DEVICES", ""), ("JAX_PLATFORMS", "cuda")), also=("cuda-visible-devices-hides-all",)),
    Case("cupy_hidden_gpu", "cupy_hidden_gpu.py", ("cuda-no-device",),
         env=(("CUDA_VISIBLE_DEVICES", ""),), also=("cuda-visible-devices-hides-all",)),
)


def _skip_reason(text: str) -> Optional[str]:
    found = re.search(r"^gpu-proof-skip: (.*)$", text, re.M)
    return found.group(1) if found else None


def judge(case: Case, mode: str, cmd: Command, stderr: str) -> Tuple[str, str]:
    """(status, what) of one way of running a case, from its exit code and stderr."""
    if cmd.timed_out:
        return FAIL, f"{mode}: timed out"
    if cmd.returncode == SKIP_CODE:
        return SKIP, _skip_reason(stderr) or "skipped"
    if cmd.returncode == NO_FAILURE_CODE:
        found = re.search(r"^gpu-proof-no-failure: (.*)$", stderr, re.M)
        return FAIL, f"{mode}: the failure did not happen: {found.group(1) if found else tail(stderr)}"
    if cmd.returncode == 0:
        return FAIL, f"{mode}: exit 0, the failure did not happen"
    marker = "known GPU error: {}" if mode == "run" else 'this looks like "{}"'
    named = [s for s in case.signatures if marker.format(s) in stderr]
    if not named:
        return FAIL, f"{mode}: exit {cmd.returncode}, not diagnosed as {' or '.join(case.signatures)}: {tail(stderr, 2)}"
    missing = [code for code in case.also if f"[{code}]" not in stderr]
    if missing:
        return FAIL, f"{mode}: diagnosed as {named[0]} but without [{', '.join(missing)}]"
    return PASS, f"{mode}: {named[0]}"


def case_step(kit: Kit, case: Case) -> Any:
    def step(ctx: StepContext) -> Outcome:
        script = os.path.join(kit.cases, case.script)
        args = ["--gpus", str(gpus(ctx))]
        if case.name == "wrong_arch":
            cubins = ctx.path("cubin")
            build = ctx.run("build-cubin", [kit.python, script, "--build-only", cubins, *args], timeout=150)
            ctx.facts["cubin"] = ctx.read(build).strip()
            if build.returncode != 0:
                status, why = judge(case, "build", build, ctx.read(build, "stderr"))
                return Outcome(status, f"building the cubin: {why}")
            args += ["--cubin-dir", cubins]
        env = dict(ctx.env, **dict(case.env))
        run, hooked = ctx.run_parallel([
            ("run", [*kit.cli, "run", "--", kit.python, script, *args], env),
            ("excepthook", [kit.python, "-c", HOOKED, script, *args], env),
        ])
        verdicts = [judge(case, "run", run, ctx.read(run, "stderr")),
                    judge(case, "excepthook", hooked, ctx.read(hooked, "stderr"))]
        return _case_outcome(verdicts, {"run_exit": run.returncode, "hook_exit": hooked.returncode})
    return step


def _case_outcome(verdicts: Sequence[Tuple[str, str]], figures: Dict[str, Any]) -> Outcome:
    statuses = [status for status, _ in verdicts]
    if FAIL in statuses:
        return Outcome(FAIL, "; ".join(what for status, what in verdicts if status == FAIL), figures)
    if all(s == SKIP for s in statuses):
        return Outcome(SKIP, verdicts[0][1], figures)
    if SKIP in statuses:
        return Outcome(FAIL, "one way ran, the other skipped: " + "; ".join(w for _, w in verdicts), figures)
    return Outcome(PASS, "diagnosed " + "; ".join(w for _, w in verdicts), figures)


# --------------------------------------------------------------------------- side by side

TOLERANCE = 0.10  # issue 26: the smoke figures hold within 10 % of torch's own loops


def _metric(report: Optional[Dict[str, Any]], suite: str, test: str) -> Optional[Dict[str, Any]]:
    for s in ((report or {}).get("snapshot") or {}).get("smoke") or []:
        if s.get("suite") != suite:
            continue
        for t in s.get("tests") or []:
            if t.get("name") == test and t.get("status") == "passed":
                return dict(t)
    return None


def side_by_side(kit: Kit) -> Any:
    def step(ctx: StepContext) -> Outcome:
        quick = ctx.facts.get("smoke_quick")
        driver = _metric(quick, "driver", "d2d_bandwidth") or _metric(ctx.facts.get("smoke_standard"), "driver", "d2d_bandwidth")
        gemm = _metric(ctx.facts.get("smoke_stress"), "torch", "stress_gemm")
        nbytes, reps = 256 << 20, 20
        if driver:
            m = driver.get("metrics") or {}
            nbytes, reps = int(m.get("bytes", nbytes)), int(m.get("reps", reps))
        argv = [kit.python, os.path.join(kit.cases, "side_by_side.py"), "--gpus", str(gpus(ctx)),
                "--bytes", str(nbytes), "--reps", str(reps)]
        size = re.search(r"GEMMs (\d+)x\d+ (\w+)", str((gemm or {}).get("message", "")))
        if size:
            argv += ["--n", size.group(1)]
        cmd = ctx.run("torch-measure", argv)
        if cmd.returncode == SKIP_CODE:
            return Outcome(SKIP, _skip_reason(ctx.read(cmd, "stderr")) or "skipped")
        measured = load_json(ctx.read(cmd).strip().splitlines()[-1] if ctx.read(cmd).strip() else "")
        if cmd.returncode != 0 or not isinstance(measured, dict):
            return Outcome(FAIL, f"torch's measurement failed (exit {cmd.returncode}): {tail(ctx.read(cmd, 'stderr'))}")
        with open(ctx.path("comparison.json"), "w", encoding="utf-8") as fh:
            json.dump({"torch": measured, "driver_d2d": driver, "torch_suite_d2d": _metric(quick, "torch", "bandwidth_d2d"),
                       "torch_stress_gemm": gemm}, fh, indent=1)
        outcome = compare(measured, driver, _metric(quick, "torch", "bandwidth_d2d"), gemm, size.group(2) if size else "bf16")
        outcome.figures.update(datasheet_fractions(ctx.facts.get("smoke_stress")))
        return outcome
    return step


FRACTION = re.compile(r"(\w+) (\w+) [\d.]+ (?:GB/s|TFLOPS)[^,;]*, ([\d.]+) of the ")


def datasheet_fractions(report: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """``{"of_peak_torch_stress_gemm": 0.78, ...}`` from the report's ``smoke-figures`` note: each
    smoke figure as a fraction of the GPU's datasheet peak ({"of_peak": "unknown GPU"} without one)."""
    for f in (report or {}).get("findings") or []:
        if f.get("code") == "smoke-figures":
            found = {f"of_peak_{suite}_{test}": float(value) for suite, test, value in FRACTION.findall(f.get("why", ""))}
            return found or {"of_peak": "no datasheet peak for this GPU"}
    return {}


def compare(measured: Dict[str, Any], driver: Optional[Dict[str, Any]], torch_suite: Optional[Dict[str, Any]],
            gemm: Optional[Dict[str, Any]], kind: str) -> Outcome:
    """Ratios smoke figure / torch's own figure; each must be within TOLERANCE of 1."""
    loop_gbs = float(measured["d2d"]["gbs"])
    figures: Dict[str, Any] = {"torch_loop_d2d_gbs": loop_gbs, "mib": measured["d2d"]["bytes"] / (1 << 20)}
    pairs: List[Tuple[str, Optional[float], float]] = [
        ("driver_d2d", float((driver or {}).get("metrics", {}).get("bandwidth_gbs", 0)) or None, loop_gbs),
        ("torch_suite_d2d", float((torch_suite or {}).get("metrics", {}).get("gbs", 0)) or None, loop_gbs),
    ]
    plain = (measured.get("matmul") or {}).get(kind, {}).get("tflops")
    for k, v in (measured.get("matmul") or {}).items():
        figures[f"torch_{k}_tflops"] = v.get("tflops")
    if plain:
        pairs.append(("stress_gemm", float((gemm or {}).get("metrics", {}).get("tflops", 0)) or None, float(plain)))
    step = (measured.get("stress_step") or {}).get("tflops")
    if step:
        figures["torch_stress_step_tflops"] = step
    off: List[str] = []
    for name, smoke_value, torch_value in pairs:
        if smoke_value is None:
            figures[f"{name}_ratio"] = "n/a"
            continue
        ratio = smoke_value / torch_value
        figures[f"{name}_ratio"] = round(ratio, 3)
        if abs(ratio - 1) > TOLERANCE:
            off.append(f"{name} {smoke_value:.1f} vs torch {torch_value:.1f} ({ratio:.2f}x)")
    compared = [n for n, v, _ in pairs if v is not None]
    gemm_tflops = float((gemm or {}).get("metrics", {}).get("tflops", 0))
    if step and gemm_tflops and abs(gemm_tflops / float(step) - 1) <= TOLERANCE:
        # the stress figure counts each GEMM's comparison with the first result as GEMM time
        off = [o + f" (torch's loop of the stress step, GEMM and comparison: {float(step):.1f})"
               if o.startswith("stress_gemm") else o for o in off]
    if off:
        return Outcome(FAIL, f"outside {TOLERANCE:.0%}: " + "; ".join(off), figures)
    if not compared:
        return Outcome(FAIL, "no smoke figure to compare (the smoke steps measured nothing)", figures)
    return Outcome(PASS, f"within {TOLERANCE:.0%}: {', '.join(compared)}", figures)
