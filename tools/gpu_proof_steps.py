"""The GPU proof kit's steps that run cudadoctor's own commands: the machine's facts (nvidia-smi,
``cudadoctor check``), the smoke tiers, the recorder and the ``gpu``-marked tests. Each step is a
function of a :class:`StepContext` that returns an :class:`Outcome`; the provoked failures and the
side-by-side measurement are in ``gpu_proof_failures.py``.

A step on a machine with no GPU still runs its commands where they are cheap, and reports SKIP
"no GPU ..." instead of PASS; FAIL is kept for what went wrong.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from gpu_proof_procs import Command
from gpu_proof_runner import FAIL, PASS, SKIP, Outcome, StepContext

SUITES = ("driver", "torch", "jax", "cupy", "tensorflow", "julia")
QUICK_TARGET_S = 10.0  # docs/smoke.md: the quick tier on one modern GPU, framework import included
STRESS_DURATION_S = 30
BAD_SUITE = ("failed", "error", "crashed", "timeout")


@dataclass
class Kit:
    """Where cudadoctor comes from and how to call it: the installed package when the machine's
    python3 imports one, else the checkout this kit sits in (then on PYTHONPATH)."""

    python: str
    repo: str
    mode: str  # "installed" or "source"
    package_dir: str
    version: str
    env: Dict[str, str]
    pytest_plugin: str  # what -p loads: the entry point's name, or the module pyproject names

    @property
    def cli(self) -> List[str]:
        return [self.python, "-m", "cudadoctor"]

    @property
    def cases(self) -> str:
        return os.path.join(self.repo, "tools", "gpu_proof_cases")


def gpus(ctx: StepContext) -> int:
    """GPUs seen so far (NVML through check, nvidia-smi -L, the PCI bus); -1 when nothing said."""
    return int(ctx.facts.get("gpus", -1))


def no_gpu(ctx: StepContext) -> bool:
    return gpus(ctx) <= 0


def tail(text: str, lines: int = 3) -> str:
    kept = [line.strip() for line in text.strip().splitlines() if line.strip()][-lines:]
    return " | ".join(kept)[:300]


def load_json(text: str) -> Optional[Any]:
    try:
        return json.loads(text)
    except ValueError:
        return None


# --------------------------------------------------------------------------- environment


ENV_PROBE = r"""
import json, os, platform, sys
out = {"python": sys.version.split()[0], "executable": sys.executable, "platform": platform.platform()}
try:
    import cudadoctor
    out["cudadoctor"] = getattr(cudadoctor, "__version__", "?")
    out["cudadoctor_dir"] = os.path.dirname(os.path.abspath(cudadoctor.__file__))
except Exception as exc:
    out["cudadoctor_error"] = f"{type(exc).__name__}: {exc}"
try:
    from importlib import metadata
    names = sys.argv[1:]
    out["packages"] = {}
    for n in names:
        try:
            out["packages"][n] = metadata.version(n)
        except Exception:
            pass
except ImportError:
    pass
print(json.dumps(out))
"""

PACKAGES = ("torch", "jax", "jaxlib", "jax-cuda13-plugin", "jax-cuda13-pjrt", "cupy-cuda13x", "cupy-cuda12x", "triton",
            "tensorflow", "click", "packaging", "nvidia-ml-py", "requests", "pytest", "hypothesis", "numpy")


def find_nvcc() -> str:
    """nvcc on PATH, else where the toolkit's installers put it (often not on PATH)."""
    for candidate in [shutil.which("nvcc") or ""] + sorted(glob.glob("/usr/local/cuda*/bin/nvcc")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return "nvcc"


def environment(kit: Kit) -> Any:
    def step(ctx: StepContext) -> Outcome:
        probe = ctx.run("python", [kit.python, "-c", ENV_PROBE, *PACKAGES], timeout=30)
        nvcc = ctx.run("nvcc", [find_nvcc(), "--version"], timeout=20)
        facts = load_json(ctx.read(probe)) or {}
        ctx.facts["environment"] = facts
        figures: Dict[str, Any] = {"python": facts.get("python"), "cudadoctor": facts.get("cudadoctor"), "mode": kit.mode}
        pkgs = facts.get("packages", {})
        for name in ("torch", "jax", "cupy-cuda13x", "triton"):
            if name in pkgs:
                figures[name] = pkgs[name]
        release = re.search(r"release (\d+\.\d+)", ctx.read(nvcc))
        figures["nvcc"] = release.group(1) if release else "not found"
        if "cudadoctor" not in facts:
            return Outcome(FAIL, f"cudadoctor is not importable: {facts.get('cudadoctor_error') or tail(ctx.read(probe, 'stderr'))}",
                           figures)
        return Outcome(PASS, f"cudadoctor from {facts.get('cudadoctor_dir')}", figures)
    return step


# --------------------------------------------------------------------------- nvidia-smi


def pci_nvidia_gpus() -> int:
    """NVIDIA display/3D controllers on the PCI bus (vendor 0x10de, class 0x03xxxx)."""
    root, count = "/sys/bus/pci/devices", 0
    try:
        devices = os.listdir(root)
    except OSError:
        return 0
    for dev in devices:
        try:
            with open(os.path.join(root, dev, "vendor")) as v, open(os.path.join(root, dev, "class")) as c:
                if v.read().strip() == "0x10de" and c.read().strip().startswith("0x03"):
                    count += 1
        except OSError:
            continue
    return count


def _smi_missing(cmd: Command) -> bool:
    return cmd.error is not None or cmd.returncode == 127


def nvidia_smi(ctx: StepContext) -> Outcome:
    pci = pci_nvidia_gpus()
    ctx.facts["pci_gpus"] = pci
    table = ctx.run("nvidia-smi", ["nvidia-smi"], timeout=30)
    listing = ctx.run("nvidia-smi-L", ["nvidia-smi", "-L"], timeout=30)
    listed = [line for line in ctx.read(listing).splitlines() if line.startswith("GPU ")]
    # GPUs on the bus count even when nvidia-smi lists none: the later steps then look for the
    # failure instead of reporting "no GPU"
    ctx.facts["gpus"] = max(len(listed), pci, gpus(ctx))
    figures: Dict[str, Any] = {"gpus": len(listed), "pci_nvidia": pci}
    if listed:
        figures["gpu0"] = re.sub(r"^GPU 0: | \(UUID.*$", "", listed[0])
    driver = re.search(r"Driver Version:\s*(\S+)", ctx.read(table))
    if driver:
        figures["driver"] = driver.group(1)
    if _smi_missing(table):
        status = SKIP if pci == 0 else FAIL
        return Outcome(status, f"{'no GPU: ' if pci == 0 else ''}nvidia-smi not found"
                               f"{'' if pci == 0 else f' while the PCI bus lists {pci} NVIDIA GPU(s)'}", figures)
    if table.returncode != 0 or not listed:
        why = tail(ctx.read(table) + ctx.read(table, "stderr"), 2)
        return Outcome(SKIP if pci == 0 else FAIL, f"{'no GPU: ' if pci == 0 else ''}nvidia-smi: {why}", figures)
    return Outcome(PASS, "", figures)


def nvidia_smi_q(ctx: StepContext) -> Outcome:
    query = ctx.run("nvidia-smi-q", ["nvidia-smi", "-q"], timeout=60)
    text = ctx.read(query)
    figures: Dict[str, Any] = {"lines": len(text.splitlines())}
    for key, label in (("CUDA Version", "cuda"), ("Product Name", "product"), ("Persistence Mode", "persistence"),
                       ("MIG Mode", "mig")):
        found = re.search(rf"^\s*{key}\s*:\s*(.+)$", text, re.M)
        if found:
            figures[label] = found.group(1).strip()
    if _smi_missing(query) or query.returncode != 0:
        why = "nvidia-smi not found" if _smi_missing(query) else \
            tail(text + ctx.read(query, "stderr"), 2) or f"exit {query.returncode}"
        return Outcome(SKIP if no_gpu(ctx) else FAIL, f"{'no GPU: ' if no_gpu(ctx) else ''}{why}", figures)
    return Outcome(PASS, "", figures)


# --------------------------------------------------------------------------- cudadoctor check


def _verdict(report: Dict[str, Any]) -> List[str]:
    return [f["code"] for f in report.get("findings", []) if f.get("severity") in ("error", "crashed")]


def _check_status(ctx: StepContext, cmd: Command, errors: List[str]) -> Outcome:
    if cmd.returncode == 0:
        return Outcome(PASS, "no error findings")
    if cmd.returncode == 1 and no_gpu(ctx):
        return Outcome(SKIP, f"no GPU: check ran and says {', '.join(errors) or 'error findings'}")
    if cmd.returncode == 1:
        return Outcome(FAIL, f"error findings: {', '.join(errors) or '?'}")
    return Outcome(FAIL, f"exit {cmd.returncode}: {tail(ctx.read(cmd, 'stderr'))}")


def check_json(kit: Kit) -> Any:
    def step(ctx: StepContext) -> Outcome:
        cmd = ctx.run("check-json", [*kit.cli, "check", "--json"])
        report = load_json(ctx.read(cmd))
        if not isinstance(report, dict):
            return Outcome(FAIL, f"no JSON report (exit {cmd.returncode}): {tail(ctx.read(cmd, 'stderr'))}")
        ctx.facts["check"] = report
        snap = report.get("snapshot", {})
        gpu_list = snap.get("gpus") or []
        ctx.facts["gpus"] = max(len(gpu_list), gpus(ctx))
        figures: Dict[str, Any] = {"gpus": len(gpu_list)}
        if gpu_list:
            figures["gpu0"] = f"{gpu_list[0].get('name')} (sm {gpu_list[0].get('compute_capability')})"
        driver = snap.get("driver") or {}
        figures["driver"] = driver.get("driver_version") or "none"
        errors = _verdict(report)
        figures["errors"] = len(errors)
        outcome = _check_status(ctx, cmd, errors)
        return Outcome(outcome.status, outcome.note, figures)
    return step


def check_text(kit: Kit) -> Any:
    """The text of the same check: ``cudadoctor diagnose`` of its JSON renders what ``cudadoctor
    check`` printed, byte for byte, without running the smoke tests a second time."""
    def step(ctx: StepContext) -> Outcome:
        saved = ctx.path("check.json")
        if "check" not in ctx.facts:
            return Outcome(FAIL, "no report from check_json to render")
        with open(saved, "w", encoding="utf-8") as fh:
            json.dump(ctx.facts["check"], fh)
        cmd = ctx.run("check", [*kit.cli, "diagnose", "--no-color", "-v", saved])
        first = [line for line in ctx.read(cmd).splitlines() if line.startswith(("✓", "✗", "!"))][:1]
        errors = _verdict(ctx.facts.get("check", {}))
        outcome = _check_status(ctx, cmd, errors)
        return Outcome(outcome.status, outcome.note, {"verdict": first[0][:120] if first else "?"})
    return step


# --------------------------------------------------------------------------- smoke


def _suites_of(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    return list((report.get("snapshot") or {}).get("smoke") or [])


def _test(suite: Dict[str, Any], name: str) -> Optional[Dict[str, Any]]:
    for t in suite.get("tests") or []:
        if t.get("name") == name and t.get("status") == "passed":
            return dict(t)
    return None


def smoke(kit: Kit, tier: str) -> Any:
    def step(ctx: StepContext) -> Outcome:
        argv = [*kit.cli, "smoke", "--json", "--tier", tier]
        for suite in SUITES:
            argv += ["--suite", suite]
        if tier == "stress":
            argv += ["--duration", f"{STRESS_DURATION_S}s"]
        if tier == "standard":
            # the suites run one after the other: each gets a share of the step's time
            argv += ["--timeout", str(int(max(20.0, (ctx.left() - 15) / 4)))]
        elif tier == "stress":
            argv += ["--timeout", str(STRESS_DURATION_S + 45)]
        cmd = ctx.run(f"smoke-{tier}", argv)
        report = load_json(ctx.read(cmd))
        if not isinstance(report, dict):
            return Outcome(FAIL, f"no JSON report (exit {cmd.returncode}): {tail(ctx.read(cmd, 'stderr'))}",
                           {"wall_s": cmd.seconds})
        ctx.facts[f"smoke_{tier}"] = report
        with open(ctx.path(f"smoke-{tier}.json"), "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=1)
        # the text a user would see, from the same results (diagnose replays them: no second run)
        ctx.run(f"smoke-{tier}-text", [*kit.cli, "diagnose", "--no-color", "-v", ctx.path(f"smoke-{tier}.json")], timeout=60)
        return _smoke_outcome(ctx, tier, cmd, _suites_of(report))
    return step


def _smoke_outcome(ctx: StepContext, tier: str, cmd: Command, suites: List[Dict[str, Any]]) -> Outcome:
    figures: Dict[str, Any] = {"wall_s": cmd.seconds}
    for s in suites:
        figures[s.get("suite", "?")] = f"{s.get('status')}:{float(s.get('duration_s') or 0):.1f}s"
    bad = [s for s in suites if s.get("status") in BAD_SUITE]
    ran = [s for s in suites if s.get("status") == "passed"]
    figures.update(_smoke_figures(suites))
    if bad:
        first = bad[0]
        return Outcome(FAIL, f"{first.get('suite')} {first.get('status')}: {str(first.get('reason'))[:200]}", figures)
    if not ran:
        reason = "; ".join(f"{s.get('suite')}: {s.get('reason')}" for s in suites[:2])
        return Outcome(SKIP if no_gpu(ctx) else FAIL, f"{'no GPU: ' if no_gpu(ctx) else 'no suite ran: '}{reason}"[:300],
                       figures)
    if tier == "quick" and cmd.seconds > QUICK_TARGET_S:
        return Outcome(FAIL, f"passed, but took {cmd.seconds:.1f} s > the {QUICK_TARGET_S:.0f} s target", figures)
    return Outcome(PASS, f"{len(ran)} suites passed" + (f" in {cmd.seconds:.1f} s (target <= 10 s)" if tier == "quick" else ""),
                   figures)


def _smoke_figures(suites: List[Dict[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for s in suites:
        name = s.get("suite")
        d2d = _test(s, "d2d_bandwidth" if name == "driver" else "bandwidth_d2d")
        if d2d:
            m = d2d.get("metrics") or {}
            out[f"{name}_d2d_gbs"] = m.get("bandwidth_gbs", m.get("gbs"))
        gemm = _test(s, "stress_gemm")
        if gemm:
            out[f"{name}_stress_tflops"] = (gemm.get("metrics") or {}).get("tflops")
    return {k: v for k, v in out.items() if v is not None}


# --------------------------------------------------------------------------- recorder


FIND_RECORDER = r"""
import importlib.util
for name in ("cudadoctor.host.recorder", "cudadoctor.recorder"):
    try:
        if importlib.util.find_spec(name) is not None:
            print(name)
            break
    except (ImportError, AttributeError, ValueError):
        continue
"""


def machine_name(report: Dict[str, Any]) -> str:
    """A folder name in the house style (docs/recorded-machines.md): GPU, driver branch, torch."""
    snap = report.get("snapshot") or {}
    gpu_list = snap.get("gpus") or []
    parts: List[str] = []
    if gpu_list:
        model = str(gpu_list[0].get("name") or "gpu").replace("NVIDIA", "").replace("GeForce", "")
        words = re.findall(r"[a-z0-9]+", model.lower())
        parts.append((f"{len(gpu_list)}x" if len(gpu_list) > 1 else "") + (words[0] if words else "gpu"))
    else:
        parts.append("nogpu")
    version = str((snap.get("driver") or {}).get("driver_version") or "")
    if version:
        parts.append(f"driver{version.split('.')[0]}")
    for fw in snap.get("frameworks") or []:
        if fw.get("name") == "torch" and fw.get("version"):
            release, _, local = str(fw["version"]).partition("+")
            parts.append("torch" + "".join(release.split(".")[:2]) + (f"-{local}" if local else ""))
    return "-".join(parts)


def recorder(kit: Kit) -> Any:
    def step(ctx: StepContext) -> Outcome:
        found = ctx.run("find-recorder", [kit.python, "-c", FIND_RECORDER], timeout=30)
        module = ctx.read(found).strip()
        if not module:
            return Outcome(FAIL, f"neither cudadoctor.host.recorder nor cudadoctor.recorder: {tail(ctx.read(found, 'stderr'))}")
        name = machine_name(ctx.facts.get("check", {}))
        ctx.facts["machine_name"] = name
        work = os.path.dirname(os.path.dirname(ctx.folder))  # the archive's top: steps/<step>/ is two below
        folder = os.path.join(work, "machine", name)
        what = "Recorded by tools/gpu_proof.sh; review env, hostname, username and fs/ before committing it."
        rec = ctx.run("recorder", [kit.python, "-m", module, folder, "--env", "gpu", "--force", "--description", what])
        figures: Dict[str, Any] = {"name": name, "module": module}
        if rec.returncode != 0 or not os.path.exists(os.path.join(folder, "machine.json")):
            return Outcome(FAIL, f"{module} exit {rec.returncode}: {tail(ctx.read(rec, 'stderr'))}", figures)
        figures["kib"] = _size(folder) // 1024
        golden = os.path.join(work, "golden")
        os.makedirs(golden, exist_ok=True)
        replays = [(f"golden-{ext}", [*kit.cli, "check", "--machine", folder, *args], os.path.join(golden, f"{name}.{ext}"))
                   for ext, args in (("txt", ["--no-color"]), ("md", ["--format", "markdown"]))]
        for label, argv, target in replays:
            cmd = ctx.run(label, argv, timeout=60)
            if cmd.returncode not in (0, 1):
                return Outcome(FAIL, f"replaying the recording failed (exit {cmd.returncode}): "
                                     f"{tail(ctx.read(cmd, 'stderr'))}", figures)
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(ctx.read(cmd))
        return Outcome(PASS, f"machine/{name}/ and golden/{name}.txt|.md", figures)
    return step


def _size(folder: str) -> int:
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(folder) for f in files)


# --------------------------------------------------------------------------- pytest -m gpu


def _gpu_test_files(tests: str) -> List[str]:
    """The test files that mark tests `gpu` (collecting only them saves the device's time), or
    the whole folder when none says so."""
    marked = []
    for name in sorted(os.listdir(tests)):
        if name.startswith("test_") and name.endswith(".py"):
            with open(os.path.join(tests, name), encoding="utf-8", errors="replace") as fh:
                if "mark.gpu" in fh.read():
                    marked.append(os.path.join(tests, name))
    return marked or [tests]


def pytest_gpu(kit: Kit) -> Any:
    def step(ctx: StepContext) -> Outcome:
        tests = os.path.join(kit.repo, "tests")
        if not os.path.isdir(tests):
            return Outcome(SKIP, f"no tests folder at {tests}")
        argv = [kit.python, "-m", "pytest", "-c", os.path.join(kit.repo, "pyproject.toml"), "--rootdir", kit.repo,
                "-p", kit.pytest_plugin, "--cudadoctor", "-p", "no:cacheprovider", "-m", "gpu", "-v", "-rs",
                "--durations=10", *_gpu_test_files(tests)]
        cmd = ctx.run("pytest-gpu", argv)
        out = ctx.read(cmd)
        header = next((line for line in out.splitlines() if line.startswith("cudadoctor:")), "")
        with open(ctx.path("pytest-header.txt"), "w", encoding="utf-8") as fh:
            fh.write(header + "\n")
        counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected)", out.splitlines()[-1]
                                                       if out.strip() else "")}
        figures: Dict[str, Any] = {k: v for k, v in counts.items()}
        figures["header"] = header[:160] or "missing"
        if not header:
            return Outcome(FAIL, f"no cudadoctor header (exit {cmd.returncode}): {tail(out + ctx.read(cmd, 'stderr'))}", figures)
        if cmd.returncode == 0 and counts.get("passed", 0) == 0:
            return Outcome(SKIP if no_gpu(ctx) else FAIL,
                           f"{'no GPU: ' if no_gpu(ctx) else ''}every gpu test was skipped ({counts.get('skipped', 0)})", figures)
        if cmd.returncode == 0:
            return Outcome(PASS, "", figures)
        failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", out, re.M)
        return Outcome(FAIL, f"exit {cmd.returncode}: {', '.join(failed[:3]) or tail(out)}", figures)
    return step
