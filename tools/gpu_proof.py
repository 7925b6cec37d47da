"""Prove cudadoctor on a real GPU in one bounded run that brings back one file.

    tools/gpu_proof.sh OUT_DIR            # or: python3 tools/gpu_proof.py OUT_DIR

Runs, each step as child processes with its own time limit inside a global budget (390 s by
default, so the whole kit ends within 7 minutes even when a step hangs): nvidia-smi and
``nvidia-smi -q``; ``cudadoctor check`` (JSON and text); ``cudadoctor smoke`` quick (timed
against the 10 s target), standard and a 30 s stress, every suite asked for; the recorder (a
``machine/<name>/`` folder for tests/machines/ and its golden files); four failures provoked on
purpose, each through ``cudadoctor run`` and the excepthook; torch's own copy and matmul figures
side by side with the smoke figures; ``pytest -m gpu`` with the cudadoctor plugin's header.

Writes OUT_DIR/gpu-proof.tar.gz (every step's output, JSON, the recording, manifest.json; at most
15 MiB) and OUT_DIR/summary.txt (one line per step: PASS/FAIL/SKIP/TIMEOUT, seconds, figures),
also when a step fails or hangs, or the kit gets SIGTERM/SIGINT. Exit 0 when no step failed or
timed out, 1 otherwise, 130 when stopped by a signal, 2 on misuse. On a machine without a GPU the
same steps run and say "no GPU" (under a minute). docs/gpu-proof.md says more.

Standard library only; cudadoctor comes from the machine's python3 when it imports one (an
installed wheel), else from the checkout this file sits in.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_proof_failures import CASES, case_step, side_by_side  # noqa: E402  (sibling modules)
from gpu_proof_procs import become_subreaper  # noqa: E402
from gpu_proof_runner import Runner, Step  # noqa: E402
from gpu_proof_texts import check_speed, healthy_texts  # noqa: E402
from gpu_proof_steps import (Kit, check_json, check_text, environment, nvidia_smi, nvidia_smi_q,  # noqa: E402
                             pytest_gpu, recorder, smoke)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BUDGET_S = 390.0

# Added to every step's environment: no bytecode written into an installed package or the
# checkout, output as it is written, a stack on a crash; JAX and TensorFlow take memory as they go.
STEP_ENV = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1",
            "XLA_PYTHON_CLIENT_PREALLOCATE": "false", "TF_FORCE_GPU_ALLOW_GROWTH": "true", "NO_COLOR": "1"}


def steps(kit: Kit) -> List[Step]:
    """The steps in order: the cheap facts first (later ones read them), the long runs last, so
    a hang early leaves the rest their minimum through the budget."""
    table = [
        Step("environment", environment(kit), 40, 5, "python3, cudadoctor, framework versions, nvcc"),
        Step("nvidia_smi", nvidia_smi, 40, 5, "nvidia-smi and nvidia-smi -L"),
        Step("nvidia_smi_q", nvidia_smi_q, 60, 5, "nvidia-smi -q"),
        Step("check_json", check_json(kit), 90, 15, "cudadoctor check --json (with the quick smoke tests)"),
        Step("check_text", check_text(kit), 60, 5, "the text of that check (cudadoctor diagnose of its JSON, -v)"),
        Step("recorder", recorder(kit), 90, 10, "python -m cudadoctor[.host].recorder, then its replay as golden files"),
        Step("smoke_quick", smoke(kit, "quick"), 90, 15, "cudadoctor smoke --tier quick, every suite, timed"),
    ]
    table += [Step(f"case_{c.name}", case_step(kit, c), 90 if c.name == "wrong_arch" else 60, 5,
                   f"provoked failure {c.name} through cudadoctor run and the excepthook") for c in CASES]
    table += [
        Step("smoke_standard", smoke(kit, "standard"), 170, 30, "cudadoctor smoke --tier standard, every suite"),
        Step("smoke_stress", smoke(kit, "stress"), 170, 45, "cudadoctor smoke --tier stress --duration 30s, every suite"),
        Step("side_by_side", side_by_side(kit), 90, 15, "torch's own d2d copy and matmul figures against the smoke figures"),
        Step("pytest_gpu", pytest_gpu(kit), 200, 30, "pytest -m gpu with the cudadoctor plugin (its header)"),
        Step("healthy_texts", healthy_texts(kit), 100, 20, "what people paste from this healthy machine, saved"),
        Step("check_speed", check_speed(kit), 240, 30, "check against collect_env, paired; check's profile"),
    ]
    return table


# --------------------------------------------------------------------------- where cudadoctor is


LOCATE = "import cudadoctor, os; print(os.path.dirname(os.path.abspath(cudadoctor.__file__))); print(cudadoctor.__version__)"
ENTRY_POINT = ("from importlib import metadata\n"
               "eps = metadata.entry_points()\n"
               "group = eps.select(group='pytest11') if hasattr(eps, 'select') else eps.get('pytest11', [])\n"
               "print(any(ep.name == 'cudadoctor' for ep in group))")


def _ask(python: str, code: str, env: Dict[str, str]) -> Optional[List[str]]:
    try:
        # from an empty folder, so the working directory's cudadoctor does not count as installed
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=20, env=env,
                              cwd=tempfile.gettempdir())
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.split("\n") if done.returncode == 0 else None


def plugin_module(repo: str) -> str:
    """The module pyproject.toml registers as the pytest11 entry point ``cudadoctor``."""
    try:
        with open(os.path.join(repo, "pyproject.toml"), encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return "cudadoctor.pytest_plugin"
    section = re.search(r"^\[project\.entry-points\.pytest11\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    found = re.search(r'^\s*cudadoctor\s*=\s*"([\w.]+)"', section.group(1), re.M) if section else None
    return found.group(1) if found else "cudadoctor.pytest_plugin"


def locate(python: str, repo: str) -> Kit:
    env = dict(os.environ, **STEP_ENV)
    found = _ask(python, LOCATE, env)
    mode = "installed"
    if not (found and found[0]):
        mode = "source"
        env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH", "")) if p)
        found = _ask(python, LOCATE, env) or ["", "?"]
    # -p by the entry point's name where one is installed (pytest loaded it already: naming its
    # module too would register it twice), else by the module pyproject.toml names
    has_entry_point = (_ask(python, ENTRY_POINT, env) or ["False"])[0] == "True"
    return Kit(python, repo, mode, found[0] or os.path.join(repo, "cudadoctor"), found[1], env,
               "cudadoctor" if has_entry_point else plugin_module(repo))


# --------------------------------------------------------------------------- main


def header(kit: Kit, started: str) -> List[str]:
    return [f"cudadoctor GPU proof · {started} · {platform.node()} · {kit.python}",
            f"cudadoctor {kit.version} ({kit.mode}: {kit.package_dir})",
            ""]


def parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="tools/gpu_proof.sh", description=__doc__.strip().splitlines()[0])
    p.add_argument("out_dir", metavar="OUT_DIR", help="where gpu-proof.tar.gz and summary.txt go (created)")
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S,
                   help=f"seconds for all steps (default {DEFAULT_BUDGET_S:.0f}); later steps get what is left")
    p.add_argument("--python", default="python3", help="the interpreter to prove (default: python3 on PATH)")
    p.add_argument("--only", action="append", metavar="STEP", help="run only this step (repeatable; for trying the kit)")
    p.add_argument("--keep", action="store_true", help="keep the unpacked folder next to the archive")
    return p.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    begun = time.monotonic()
    args = parse(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    python = shutil.which(args.python) or args.python
    kit = locate(python, REPO)
    work = tempfile.mkdtemp(prefix="gpu-proof-", dir=args.out_dir if args.keep else None)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
    # the budget counts from the kit's start: finding cudadoctor (a python3 that hangs on import) is in it
    budget = args.budget - (time.monotonic() - begun)
    runner = Runner(args.out_dir, work, budget, lambda: header(kit, started), kit.env,
                    lambda: {"started": started, "host": platform.node(), "python": kit.python, "mode": kit.mode,
                             "cudadoctor": kit.version, "cudadoctor_dir": kit.package_dir,
                             "machine_name": runner.facts.get("machine_name")})
    runner.reap = become_subreaper()
    runner.install_signals()
    chosen = [s for s in steps(kit) if not args.only or s.name in args.only]
    try:
        runner.run_all(chosen)
    except BaseException as exc:  # the archive is written whatever went wrong in the kit itself
        runner.interrupted = runner.interrupted or f"{type(exc).__name__}: {exc}"
    try:
        _save_facts(work, runner.facts)
        code = runner.finish()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    sys.stdout.write(open(os.path.join(args.out_dir, "summary.txt"), encoding="utf-8").read())
    return code


def _save_facts(work: str, facts: Dict[str, Any]) -> None:
    """The check report once more at the top of the archive, where a reader looks first."""
    if "check" in facts:
        with open(os.path.join(work, "check.json"), "w", encoding="utf-8") as fh:
            json.dump(facts["check"], fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
