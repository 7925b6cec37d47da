"""The GPU proof kit's recordings of a healthy stack and of where ``check`` spends its time.

``healthy_texts`` saves what people paste from a working machine (collect_env, the two-line torch
version check, ``jax.print_environment_info()``, ``cupy.show_config()``, ``pip list``/``pip
freeze``, the loader's CUDA libraries, the kernel module's version): the corpus's healthy cases
recorded on a real GPU, which no diagnosis may call broken. ``check_speed`` times the default
``check`` (its quick smoke included), ``check --no-smoke --json``, ``collect_env`` and ``python -c
pass`` in alternating rounds and says both ratios against their budgets (check <= 1.0 x collect_env,
no-smoke <= 0.05 x); ``benchmarks/check_phases.py`` says where ``check --no-smoke`` spends its time
phase by phase, and a sampling profile and the import times are kept; ``timings.json`` is what
``check_phases.py --recorded`` reads on a machine without a GPU.
"""

from __future__ import annotations

import json
import os
import statistics
from typing import Any, Dict, List, Tuple

from gpu_proof_runner import FAIL, PASS, SKIP, Outcome, StepContext
from gpu_proof_steps import Kit, no_gpu, tail

TORCH_LINES = ("import torch; print(torch.__version__, torch.version.cuda); print(torch.cuda.is_available(), "
               "torch.cuda.device_count()); print(torch.cuda.get_device_name(0)); print(torch.backends.cudnn.version())")
ORT_LINES = "import onnxruntime as ort; print(ort.__version__, ort.get_device(), ort.get_available_providers())"
# (label, argv tail after the interpreter, or a shell line when it starts with "sh:")
PASTES: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("collect_env", ("-m", "torch.utils.collect_env")),
    ("torch_lines", ("-c", TORCH_LINES)),
    ("jax_env", ("-c", "import jax; jax.print_environment_info(); print(jax.devices())")),
    ("cupy_config", ("-c", "import cupy; cupy.show_config()")),
    ("ort_providers", ("-c", ORT_LINES)),
    ("pip_list", ("-m", "pip", "list")),
    ("pip_freeze", ("-m", "pip", "freeze")),
    ("ldconfig", ("sh:", "ldconfig -p | grep -iE 'libcuda|libcudnn|libnvidia-ml|libnccl|libcublas' | head -60")),
    ("driver_version", ("sh:", "cat /proc/driver/nvidia/version; ls -l /dev/nvidia* 2>&1 | head")),
    ("dmesg", ("sh:", "dmesg 2>&1 | grep -iE 'nvidia|nvrm|xid' | tail -40")),
)


def healthy_texts(kit: Kit) -> Any:
    def step(ctx: StepContext) -> Outcome:
        if no_gpu(ctx):
            return Outcome(SKIP, "no GPU: a healthy GPU stack's outputs are recorded on a GPU machine")
        jobs = []
        for label, args in PASTES:
            argv = ["sh", "-c", args[1]] if args[0] == "sh:" else [kit.python, *args]
            jobs.append((label, argv, None))
        cmds = ctx.run_parallel(jobs, timeout=90)
        figures: Dict[str, Any] = {}
        failed: List[str] = []
        for (label, _), cmd in zip(PASTES, cmds):
            figures[label] = f"{cmd.returncode}:{len(ctx.read(cmd).splitlines())}l"
            if cmd.returncode != 0 and label in ("collect_env", "torch_lines", "pip_list"):
                failed.append(f"{label}: {tail(ctx.read(cmd, 'stderr'), 1)}")
        if failed:
            return Outcome(FAIL, "; ".join(failed), figures)
        return Outcome(PASS, "outputs saved for the corpus's healthy cases", figures)
    return step


ROUNDS = 3  # paired rounds of check and collect_env
BUDGET_CHECK = 1.0  # check (with its quick smoke) / collect_env: shared/DESIGN.md, "Budgets"
BUDGET_NO_SMOKE = 0.05  # check --no-smoke --json / collect_env


def check_speed(kit: Kit) -> Any:
    def step(ctx: StepContext) -> Outcome:
        if no_gpu(ctx):
            return Outcome(SKIP, "no GPU: benchmarks/check_speed.py and check_phases.py measure this machine")
        figures: Dict[str, Any] = {}
        seconds: Dict[str, List[float]] = {"check": [], "collect_env": [], "check_no_smoke": [], "python_pass": []}
        last = None
        for i in range(ROUNDS):  # alternating, so that a slow moment of the machine hits both
            last = ctx.run(f"check-default-{i}", [*kit.cli, "check", "--no-color"], timeout=90)
            env_run = ctx.run(f"collect-env-{i}", [kit.python, "-m", "torch.utils.collect_env"], timeout=60)
            no_smoke = ctx.run(f"check-no-smoke-{i}", [*kit.cli, "check", "--no-smoke", "--json"], timeout=30)
            bare = ctx.run(f"python-pass-{i}", [kit.python, "-c", "pass"], timeout=30)
            for key, cmd in (("check", last), ("collect_env", env_run), ("check_no_smoke", no_smoke), ("python_pass", bare)):
                if cmd.returncode in (0, 1) and not cmd.timed_out:
                    seconds[key].append(round(cmd.seconds, 3))
        figures.update(ratios(seconds))
        bench = os.path.join(kit.repo, "benchmarks")
        if os.path.exists(os.path.join(bench, "check_phases.py")):
            ctx.run("check-phases", [kit.python, os.path.join(bench, "check_phases.py"), "--rounds", "3",
                                     "--json", ctx.path("phases.json")], timeout=120)
        if os.path.exists(os.path.join(bench, "check_speed.py")):
            ctx.run("check-speed", [kit.python, os.path.join(bench, "check_speed.py"), "--rounds", "3"], timeout=120)
        ctx.run("profile", [kit.python, os.path.join(kit.cases, "sample_check.py")], timeout=60)
        ctx.run("importtime", [kit.python, "-X", "importtime", "-m", "cudadoctor", "check", "--no-smoke", "--json"],
                timeout=60)
        with open(ctx.path("timings.json"), "w", encoding="utf-8") as fh:  # benchmarks/check_phases.py --recorded
            json.dump({"machine": str(ctx.facts.get("machine_name") or "this GPU machine"),
                       "source": "tools/gpu_proof.sh, step check_speed", "seconds": seconds}, fh, indent=1)
        if last is None or last.returncode not in (0, 1):
            code = "none" if last is None else last.returncode
            return Outcome(FAIL, f"check exit {code}: {tail(ctx.read(last, 'stderr')) if last else ''}", figures)
        return verdict(figures)
    return step


def ratios(seconds: Dict[str, List[float]]) -> Dict[str, Any]:
    """Medians of the paired runs and the two ratios the budgets name."""
    med = {k: statistics.median(v) for k, v in seconds.items() if v}
    out: Dict[str, Any] = {f"{k}_s": round(v, 3) for k, v in med.items()}
    if med.get("collect_env"):
        if "check" in med:
            out["check_ratio"] = round(med["check"] / med["collect_env"], 3)
        if "check_no_smoke" in med:
            out["no_smoke_ratio"] = round(med["check_no_smoke"] / med["collect_env"], 4)
    return out


def verdict(figures: Dict[str, Any]) -> Outcome:
    """PASS when both ratios are within their budgets; the note says both either way."""
    said, missed = [], False
    for key, label, budget in (("check_ratio", "check/collect_env", BUDGET_CHECK),
                               ("no_smoke_ratio", "check --no-smoke/collect_env", BUDGET_NO_SMOKE)):
        if key not in figures:
            said.append(f"{label} not measured")
            missed = True
            continue
        ok = figures[key] <= budget
        missed = missed or not ok
        said.append(f"{label} {figures[key]:g} ({'<=' if ok else '>'} {budget:g})")
    note = "; ".join(said) + "; phases in check-phases.stdout, profile.stderr, importtime.stderr"
    return Outcome(FAIL if missed else PASS, note, figures)
