"""The GPU proof kit's recordings of a healthy stack and of where ``check`` spends its time.

``healthy_texts`` saves what people paste from a working machine (collect_env, the two-line torch
version check, ``jax.print_environment_info()``, ``cupy.show_config()``, ``pip list``/``pip
freeze``, the loader's CUDA libraries, the kernel module's version): the corpus's healthy cases
recorded on a real GPU, which no diagnosis may call broken. ``check_speed`` runs
``benchmarks/check_speed.py`` (``check --no-smoke --json`` against ``collect_env``, paired runs),
times the default ``check`` with its smoke tests beside ``collect_env``, and keeps a profile and
the import times of ``check --no-smoke`` so the costly phases on a GPU machine are known.
"""

from __future__ import annotations

import os
import re
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


def check_speed(kit: Kit) -> Any:
    def step(ctx: StepContext) -> Outcome:
        if no_gpu(ctx):
            return Outcome(SKIP, "no GPU: benchmarks/check_speed.py measures this machine")
        bench = os.path.join(kit.repo, "benchmarks", "check_speed.py")
        figures: Dict[str, Any] = {}
        if os.path.exists(bench):
            paired = ctx.run("check-speed", [kit.python, bench, "--rounds", "3"], timeout=120)
            out = ctx.read(paired)
            ratio = re.search(r"ratio\D*([\d.]+)", out)
            figures["no_smoke_ratio"] = float(ratio.group(1)) if ratio else "?"
        full = ctx.run("check-default", [*kit.cli, "check", "--no-color"], timeout=90)
        env_run = ctx.run("collect-env", [kit.python, "-m", "torch.utils.collect_env"], timeout=60)
        figures["check_s"] = round(full.seconds, 2)
        figures["collect_env_s"] = round(env_run.seconds, 2)
        if env_run.seconds:
            figures["check_ratio"] = round(full.seconds / env_run.seconds, 2)
        ctx.run("profile", [kit.python, os.path.join(kit.cases, "sample_check.py")], timeout=60)
        ctx.run("importtime", [kit.python, "-X", "importtime", "-m", "cudadoctor", "check", "--no-smoke", "--json"],
                timeout=60)
        if full.returncode not in (0, 1):
            return Outcome(FAIL, f"check exit {full.returncode}: {tail(ctx.read(full, 'stderr'))}", figures)
        return Outcome(PASS, "check and collect_env timed; profile.stderr, importtime.stderr kept", figures)
    return step
