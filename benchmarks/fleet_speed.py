"""How fast is `cudadoctor fleet summarize` on a large fleet, against merely parsing its reports?

Generates N realistic node reports (default 10,000) into a temporary directory from the real
reports of the recorded machines (tests/machines/*, rendered with `report --format json
--machine`): most nodes an 8 × H100 DGX, some on another driver or torch build, some with
findings, a degraded PCIe link, uncorrected ECC errors or a slow memory copy, a few other
machines, and a few corrupt, empty or foreign files. Every report carries driver smoke results
(one d2d_bandwidth test per GPU), as `cudadoctor report` writes them on a node with GPUs.

Then times `cudadoctor fleet summarize DIR` end to end (a subprocess, output to /dev/null, median
of --rounds) and the baseline measured in the same run: a subprocess that only `json.load`s every
file. Prints the time per 1,000 nodes, the ratio to the baseline (what the summary costs on top of
reading), and the peak RSS of the summarize process (and its workers).

    python benchmarks/fleet_speed.py [--nodes 10000] [--rounds 3] [--keep DIR]

Target (issue 9): 10,000 nodes in <= 2 s on the 2-core dev machine. Exit status 1 if missed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
MACHINES = os.path.join(os.path.dirname(HERE), "tests", "machines")
BASE = "dgx-h100x8-driver570-torch27-cu128"
TARGET_S = 2.0
TARGET_NODES = 10_000
BASELINE = ("import glob, json, sys\n"
            "for p in sorted(glob.glob(sys.argv[1] + '/*.json')):\n"
            "    try:\n"
            "        json.load(open(p, encoding='utf-8'))\n"
            "    except ValueError:\n"
            "        pass\n")


def recorded_reports() -> Dict[str, Dict[str, Any]]:
    """The JSON report of every recorded machine, rendered by the CLI as a node would write it."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(os.listdir(MACHINES)):
            path = os.path.join(tmp, name + ".json")
            subprocess.run([sys.executable, "-m", "cudadoctor", "report", "--format", "json", "--machine",
                            os.path.join(MACHINES, name), "-o", path], check=True, capture_output=True)
            with open(path, encoding="utf-8") as fh:
                out[name] = json.load(fh)
    return out


def _smoke(gpus: Sequence[Dict[str, Any]], rng: random.Random, slow_gpu: Optional[int]) -> List[Dict[str, Any]]:
    tests: List[Dict[str, Any]] = [{"name": "cu_init", "status": "passed", "gpu": None, "duration_s": 0.21,
                                    "message": None, "error": None, "cuda_error": None, "metrics": {}}]
    for g in gpus:
        gbs = rng.gauss(1450.0, 25.0) * (0.45 if g["index"] == slow_gpu else 1.0)
        for name in ("device_info", "context", "module_load", "saxpy"):
            tests.append({"name": name, "status": "passed", "gpu": g["index"], "duration_s": 0.01, "message": None,
                          "error": None, "cuda_error": None, "metrics": {}})
        tests.append({"name": "d2d_bandwidth", "status": "passed", "gpu": g["index"], "duration_s": 0.05,
                      "message": None, "error": None, "cuda_error": None,
                      "metrics": {"bytes": 268435456.0, "reps": 20.0, "seconds": 5368709120 / gbs / 1e9,
                                  "bandwidth_gbs": gbs, "traffic_gbs": 2 * gbs, "theoretical_gbs": 3352.3,
                                  "fraction_of_theoretical": 2 * gbs / 3352.3}})
    return [{"suite": "driver", "status": "passed", "reason": "", "tier": "quick", "tests": tests, "duration_s": 1.4,
             "exit_code": 0, "signal": None, "stderr_tail": "", "framework": None,
             "details": {"libcuda": "/lib/x86_64-linux-gnu/libcuda.so.1"}}]


def _finding(code: str, severity: str, title: str) -> Dict[str, Any]:
    return {"code": code, "severity": severity, "category": "hardware_fault", "title": title, "why": "", "fix": None,
            "evidence": [], "source": [], "caused_by": None, "confidence": "high"}


def node_report(base: Dict[str, Any], node: str, rng: random.Random, variant: str) -> Dict[str, Any]:
    """A copy of ``base`` for ``node`` (shallow copies of what changes), varied as ``variant`` says."""
    report = dict(base, node=node)
    snap = report["snapshot"] = dict(base["snapshot"])
    snap["host"] = dict(snap["host"] or {}, hostname=node)
    gpus = snap["gpus"] = [dict(g) for g in snap["gpus"] or ()]
    findings = report["findings"] = list(base["findings"] or ())
    if variant == "driver550":
        snap["driver"] = dict(snap["driver"], driver_version="550.54.15", kernel_module_version="550.54.15",
                              cuda_driver_version="12.4", nvml_version="12.550.54.15")
    elif variant == "torch25":
        snap["frameworks"] = [dict(f, version=f["version"].replace("2.7.1+cu128", "2.5.1+cu124"), cuda="12.4")
                              if f["name"] in ("torch", "torchaudio") else f for f in snap["frameworks"]]
    elif variant == "ecc" and gpus:
        gpus[1]["ecc_uncorrected_volatile"] = 2
        findings.append(_finding("ecc-uncorrected-volatile", "error",
                                 f"GPU 1 ({gpus[1]['name']}) has had 2 uncorrected ECC errors since the driver was loaded"))
    elif variant == "pcie" and gpus:
        gpus[3]["pcie_width_current"] = 8
        gpus[3]["clocks_event_reasons"] = ["none"]
        findings.append(_finding("pcie-link-width-reduced", "warning", f"GPU 3 ({gpus[3]['name']}): PCIe link at x8 of x16 lanes"))
    snap["smoke"] = _smoke(gpus, rng, 0 if variant == "slow" else None) if gpus else None
    return report


def generate(directory: str, count: int, seed: int = 9) -> Dict[str, int]:
    """Write ``count`` node reports into ``directory``; return how many of each kind."""
    reports = recorded_reports()
    base = reports[BASE]
    others = [r for name, r in reports.items() if name != BASE]
    rng = random.Random(seed)
    kinds: Dict[str, int] = {}
    variants = (("driver550", 0.04), ("torch25", 0.03), ("ecc", 0.005), ("pcie", 0.01), ("slow", 0.005),
                ("other", 0.01), ("corrupt", 0.001), ("empty", 0.0005), ("foreign", 0.0005))
    for i in range(count):
        node = f"gpu-{i + 1:05d}"
        roll, variant = rng.random(), "base"
        for name, share in variants:
            if roll < share:
                variant = name
                break
            roll -= share
        kinds[variant] = kinds.get(variant, 0) + 1
        path = os.path.join(directory, node + ".json")
        if variant == "empty":
            open(path, "w").close()
            continue
        if variant == "foreign":
            text = json.dumps({"name": node, "status": "ok"})
        else:
            chosen = rng.choice(others) if variant == "other" else base
            text = json.dumps(node_report(chosen, node, rng, variant), indent=2, ensure_ascii=False)
            if variant == "corrupt":
                text = text[: len(text) // 2]  # a node that died while writing
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return kinds


def timed(argv: Sequence[str]) -> Tuple[float, float]:
    """(wall, CPU) seconds of one run; the CPU time counts the worker processes too."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv[:5])} ... exited with {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return elapsed, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=TARGET_NODES)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it (default: a temporary directory)")
    args = parser.parse_args(argv)

    directory = args.keep or tempfile.mkdtemp(prefix="cudadoctor-fleet-")
    os.makedirs(directory, exist_ok=True)
    try:
        kinds = generate(directory, args.nodes)
        size = sum(os.path.getsize(os.path.join(directory, n)) for n in os.listdir(directory))
        summarize = [sys.executable, "-m", "cudadoctor", "fleet", "summarize", directory]
        baseline = [sys.executable, "-c", BASELINE, directory]
        timed(summarize)  # warm the page cache and the bytecode
        runs: List[Tuple[float, float]] = []
        base_runs: List[Tuple[float, float]] = []
        for _ in range(args.rounds):  # alternating, so that both see the same load on a shared machine
            runs.append(timed(summarize))
            base_runs.append(timed(baseline))
        rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0  # the largest child: summarize
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)

    median, base = statistics.median(r[0] for r in runs), statistics.median(r[0] for r in base_runs)
    cpu, base_cpu = statistics.median(r[1] for r in runs), statistics.median(r[1] for r in base_runs)
    scaled = median * TARGET_NODES / args.nodes
    print(f"{args.nodes:,} reports, {size / 1e6:.0f} MB ({size / args.nodes / 1e3:.1f} KB each): "
          + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    print(f"  fleet summarize, median of {args.rounds}: {median:.2f} s wall ({median / args.nodes * 1000:.3f} s per 1,000 "
          f"nodes; best {min(r[0] for r in runs):.2f} s), {cpu:.2f} s CPU (workers included)")
    print(f"  baseline, json.load of every file: {base:.2f} s wall ({base / args.nodes * 1000:.3f} s per 1,000 nodes), "
          f"{base_cpu:.2f} s CPU")
    print(f"  ratio summarize / json.load: {median / base:.2f} wall, {cpu / base_cpu:.2f} CPU")
    print(f"  peak RSS of summarize: {rss_mib:.0f} MiB")
    ok = scaled <= TARGET_S
    print(f"  10,000 nodes in <= {TARGET_S:.0f} s: {'ok' if ok else 'MISS'} ({scaled:.2f} s"
          f"{' scaled from ' + format(args.nodes, ',') + ' nodes' if args.nodes != TARGET_NODES else ''})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
