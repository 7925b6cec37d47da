"""Where `cudadoctor check --no-smoke --json` spends its time, phase by phase, on this machine.

    python benchmarks/check_phases.py [--rounds 5] [--json OUT]
    python benchmarks/check_phases.py --recorded benchmarks/recorded/h100-2026-11-28.json

Each round runs a fresh interpreter (this file with --child) that times its phases: start (from the
parent's spawn to this file's first line: interpreter start-up, site, .pth files), import (the CLI
and the API), probes (collect, with every call through the system seam timed: NVML, commands, file
reads, the target interpreter), checks (diagnose: what the side thread that loads the checks while
the probes run, as the command does, has not done yet), render (the JSON). Baselines are measured in the
same run, alternating with the rounds: `python -c pass` and `python -m torch.utils.collect_env` (when
torch imports here), and the command itself as a user runs it. It prints each phase's median and
its share of collect_env (the instrumented run imports the API whole and keeps the interpreter's
teardown, so its phases add up to more than the command), each probe's wall time, the costliest seam
calls (summed over threads: the probes run concurrently), the peak memory, and whether the command's
median over collect_env's is within the budget (shared/DESIGN.md, "Budgets": 0.05).

With --recorded FILE it measures nothing: it prints the same ratios from timings a GPU run recorded
(the kit's check_speed step writes them) and says that they are recorded, not measured here.
Exit status 1 when the ratio misses the budget.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

BUDGET_NO_SMOKE = 0.05  # check --no-smoke --json / collect_env
BUDGET_CHECK = 1.0  # check (with its quick smoke) / collect_env
PHASES = ("start", "import", "probes", "checks", "render")
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as an installed tool runs


# --------------------------------------------------------------------------- the child


class TimedHost:
    """The real Host with every call timed: (what, seconds) pairs in ``calls``."""

    def __init__(self, host: Any, calls: List[Tuple[str, float]]) -> None:
        self._host, self._calls, self._lock = host, calls, threading.Lock()
        self._nvml: Any = None

    def _timed(self, label: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            with self._lock:
                self._calls.append((label, time.perf_counter() - start))

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._host, name)
        if not callable(attr) or name == "nvml":
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            what = name
            if name == "run" and args:
                what = f"run {' '.join(str(a) for a in list(args[0])[:2])}"
            elif name == "interpreter":
                what = "interpreter (the target python's facts)"
            return self._timed(what, attr, *args, **kwargs)
        return call

    def nvml(self) -> Any:
        if self._nvml is None:
            self._nvml = TimedNvml(self._host.nvml(), self)
        return self._nvml


class TimedNvml:
    def __init__(self, nvml: Any, host: TimedHost) -> None:
        self._nvml, self._host = nvml, host

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._nvml, name)
        if not callable(attr):
            return attr

        def call(*args: Any) -> Any:
            what = f"nvml {name}" + (f" {args[1]}" if name == "device" and len(args) > 1 else "")
            return self._host._timed(what, attr, *args)
        return call


def child(spawned: float) -> Dict[str, Any]:
    """One timed run of check --no-smoke --json in this fresh process."""
    t0 = time.time()
    phases: Dict[str, float] = {"start": t0 - spawned}
    clock = time.perf_counter()

    from cudadoctor.api import _warm_checks, diagnose, make_report
    from cudadoctor.host import RealHost
    from cudadoctor.probes import collect
    from cudadoctor.render import render_report

    import cudadoctor.cli  # noqa: F401  (what the command imports before it runs)

    now = time.perf_counter()
    phases["import"], clock = now - clock, now
    calls: List[Tuple[str, float]] = []
    _warm_checks()  # as the command does: the checks load on a side thread while the probes wait
    snapshot = collect(TimedHost(RealHost(), calls))  # type: ignore[arg-type]
    now = time.perf_counter()
    phases["probes"], clock = now - clock, now
    findings = diagnose(snapshot)
    now = time.perf_counter()
    phases["checks"], clock = now - clock, now
    render_report(make_report(snapshot, findings), "json")
    phases["render"] = time.perf_counter() - clock
    import resource

    return {"phases": phases, "probes": snapshot.probe_durations_s, "calls": calls,
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}


# --------------------------------------------------------------------------- the parent


def timed(argv: Sequence[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - start


_COMMAND = os.path.join(os.path.dirname(sys.executable), "cudadoctor")
CHECK = ([_COMMAND] if os.path.isfile(_COMMAND) else [sys.executable, "-m", "cudadoctor"]) + [
    "check", "--no-smoke", "--json"]


def one_round() -> Optional[Dict[str, Any]]:
    spawned = time.time()
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", repr(spawned)],
                          capture_output=True, text=True, env=ENV)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        print(f"the timed child failed (exit {done.returncode}): {done.stderr.strip()[-500:]}", file=sys.stderr)
        return None
    return dict(json.loads(lines[-1]))


def summarize(rounds: List[Dict[str, Any]], baselines: Dict[str, List[float]]) -> Dict[str, Any]:
    """Medians of the phases, the probes and the seam calls; ratios against the baselines."""
    phases = {p: statistics.median(r["phases"][p] for r in rounds) for p in PHASES}
    total = statistics.median(sum(r["phases"].values()) for r in rounds)
    probes = {n: statistics.median(r["probes"].get(n, 0.0) for r in rounds) for n in rounds[0]["probes"]}
    per_call: Dict[str, List[float]] = {}
    for r in rounds:
        summed: Dict[str, float] = {}
        for what, seconds in r["calls"]:
            key = what if not what.startswith(("read_bytes", "list_dir", "is_", "exists", "realpath")) else \
                what.split(" ")[0]
            summed[key] = summed.get(key, 0.0) + seconds
        for key, seconds in summed.items():
            per_call.setdefault(key, []).append(seconds)
    calls = sorted(((k, statistics.median(v)) for k, v in per_call.items()), key=lambda kv: -kv[1])
    out: Dict[str, Any] = {"rounds": len(rounds), "total_s": total, "phases_s": phases, "probes_s": probes,
                           "calls_s": calls[:12], "peak_mib": max(r["peak_mib"] for r in rounds),
                           "baselines_s": {k: statistics.median(v) for k, v in baselines.items() if v}}
    collect_env = out["baselines_s"].get("collect_env")
    command = out["baselines_s"].pop("check", None)
    if command is not None:
        out["command_s"] = command
    if collect_env and command:
        out["ratio_no_smoke"] = command / collect_env  # the command's, not the instrumented run's
    return out


def report(out: Dict[str, Any], recorded: Optional[str] = None) -> int:
    base = out["baselines_s"]
    collect_env = base.get("collect_env")
    if recorded:
        print(f"RECORDED timings, not measured here: {recorded}")
    else:
        print(f"{out['rounds']} rounds of `check --no-smoke --json` in fresh interpreters, alternating with the "
              f"baselines; python {sys.version.split()[0]}")
    for name, seconds in base.items():
        print(f"  baseline {name:<30} {seconds * 1000:8.0f} ms")
    share = (lambda s: f"{s / collect_env:6.3f} of collect_env") if collect_env else (lambda s: "")
    for phase, seconds in out.get("phases_s", {}).items():
        print(f"  phase    {phase:<30} {seconds * 1000:8.0f} ms  {share(seconds)}")
    print(f"  phases' sum (instrumented run)         {out['total_s'] * 1000:8.0f} ms  {share(out['total_s'])}")
    if "command_s" in out:
        print(f"  check --no-smoke --json (the command)  {out['command_s'] * 1000:8.0f} ms  {share(out['command_s'])}")
    if out.get("probes_s"):
        print("  probes (wall, concurrent): " + ", ".join(f"{k} {v * 1000:.0f}" for k, v in
                                                       sorted(out["probes_s"].items(), key=lambda kv: -kv[1])))
    for what, seconds in out.get("calls_s", []):
        print(f"  seam     {what[:60]:<60} {seconds * 1000:8.1f} ms")
    if out.get("peak_mib"):
        print(f"  peak memory of check                   {out['peak_mib']:8.1f} MiB")
    ok = True
    for key, label, budget in (("ratio_no_smoke", "check --no-smoke --json / collect_env", BUDGET_NO_SMOKE),
                               ("ratio_check", "check (quick smoke) / collect_env", BUDGET_CHECK)):
        if key in out:
            hit = out[key] <= budget
            ok = ok and hit
            print(f"  ratio    {label:<40} {out[key]:6.3f}  {'ok  ' if hit else 'MISS'} <= {budget:g}")
    if not collect_env:
        print("  torch is not installed here: no collect_env baseline, no ratio")
    return 0 if ok else 1


def from_recorded(path: str) -> Tuple[Dict[str, Any], str]:
    """The summary of timings a GPU run recorded (seconds per run of each command)."""
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    runs: Dict[str, List[float]] = doc["seconds"]
    med = {k: statistics.median(v) for k, v in runs.items() if v}
    out: Dict[str, Any] = {"total_s": med["check_no_smoke"], "command_s": med["check_no_smoke"], "baselines_s": {
        k: med[k] for k in ("python_pass", "collect_env") if k in med}, "probes_s": doc.get("probes_s", {})}
    if "collect_env" in med:
        out["ratio_no_smoke"] = med["check_no_smoke"] / med["collect_env"]
        if "check" in med:
            out["ratio_check"] = med["check"] / med["collect_env"]
    return out, f"{doc['machine']} ({doc['source']})"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", metavar="OUT", help="also write the summary as JSON")
    parser.add_argument("--recorded", metavar="FILE", help="print the ratios of recorded timings; measure nothing")
    parser.add_argument("--child", metavar="SPAWNED", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(float(args.child))))
        return 0
    if args.recorded:
        out, said = from_recorded(args.recorded)
        return report(out, said)
    have_torch = subprocess.run([sys.executable, "-c", "import torch.utils.collect_env"], capture_output=True,
                                env=ENV).returncode == 0
    baselines: Dict[str, List[float]] = {"python_pass": [], "collect_env": [], "check": []}
    one_round()  # warm the page cache and the bytecode
    if have_torch:
        timed([sys.executable, "-m", "torch.utils.collect_env"])
    rounds = []
    for _ in range(args.rounds):
        r = one_round()
        if r is None:
            return 2
        rounds.append(r)
        baselines["check"].append(timed(CHECK))  # the command itself, as a user runs it
        baselines["python_pass"].append(timed([sys.executable, "-c", "pass"]))
        if have_torch:
            baselines["collect_env"].append(timed([sys.executable, "-m", "torch.utils.collect_env"]))
    out = summarize(rounds, baselines)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)
    return report(out)


if __name__ == "__main__":
    sys.exit(main())
