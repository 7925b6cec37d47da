"""How fast is `cudadoctor check` against the reporter people use today?

Runs `cudadoctor check --no-smoke --json` and `python -m torch.utils.collect_env` alternately in
the same environment (the interpreter running this script), then prints both medians and their
ratio, the peak memory of `check`, and the import time of `cudadoctor --version`. `check` runs as
a user runs it: the `cudadoctor` command installed beside this interpreter, else `python -m
cudadoctor` (a source checkout).

    python benchmarks/check_speed.py [--rounds 7]

Targets (shared/DESIGN.md, "Budgets"; issues "the house in rooms" and 26): ratio <= 0.05, check median
<= 0.2 s on the 2-core dev machine, peak RSS <= 25 MiB, import time of `--version` <= 60 ms. Exit
status 1 if one is missed.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from typing import List, Optional, Sequence, Tuple

_COMMAND = os.path.join(os.path.dirname(sys.executable), "cudadoctor")
CHECK = ([_COMMAND] if os.path.isfile(_COMMAND) else [sys.executable, "-m", "cudadoctor"]) + [
    "check", "--no-smoke", "--json"]
COLLECT_ENV = [sys.executable, "-m", "torch.utils.collect_env"]
VERSION = [sys.executable, "-X", "importtime", "-m", "cudadoctor", "--version"]
# Measure an installed tool: pip writes bytecode at install time, so let the warm-up runs cache
# it here too even where the shell sets PYTHONDONTWRITEBYTECODE.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: Sequence[str]) -> Tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV)
    elapsed = time.perf_counter() - start
    return elapsed, proc.returncode


def peak_rss_mib(argv: Sequence[str], runs: int) -> float:
    """Peak resident memory of ``argv``, from RUSAGE_CHILDREN before any other child ran."""
    for _ in range(runs):
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    return kib / 1024.0


def import_time_ms() -> Tuple[float, float]:
    """(all imports, cudadoctor's own) of `python -X importtime -m cudadoctor --version`, in ms."""
    proc = subprocess.run(VERSION, capture_output=True, text=True, env=ENV)
    total = ours = 0
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if not m or m.group(3) == "imported":
            continue
        depth = len(m.group(2))
        if depth == 1:  # top-level import: cumulative time includes its children
            total += int(m.group(1))
            if m.group(3).startswith("cudadoctor"):
                ours += int(m.group(1))
    return total / 1000.0, ours / 1000.0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)

    rss = peak_rss_mib(CHECK, 3)
    have_torch = subprocess.run([sys.executable, "-c", "import torch.utils.collect_env"],
                                capture_output=True).returncode == 0
    check_times: List[float] = []
    collect_times: List[float] = []
    timed(CHECK)  # warm the page cache for both before measuring
    if have_torch:
        timed(COLLECT_ENV)
    for _ in range(args.rounds):
        elapsed, code = timed(CHECK)
        if code not in (0, 1):
            print(f"cudadoctor check exited with {code}", file=sys.stderr)
            return 2
        check_times.append(elapsed)
        if have_torch:
            collect_times.append(timed(COLLECT_ENV)[0])
    total_ms, ours_ms = import_time_ms()

    check_median = statistics.median(check_times)
    results = [
        ("check --no-smoke --json median", f"{check_median * 1000:.0f} ms", check_median <= 0.2, "<= 200 ms"),
    ]
    if collect_times:
        collect_median = statistics.median(collect_times)
        ratio = check_median / collect_median
        results.append(("collect_env median", f"{collect_median * 1000:.0f} ms", True, "(baseline)"))
        results.append(("ratio check/collect_env", f"{ratio:.3f}", ratio <= 0.05, "<= 0.05"))
    else:
        print("torch is not installed here: no collect_env baseline, ratio not measured")
    results.append(("check peak RSS", f"{rss:.1f} MiB", rss <= 25, "<= 25 MiB"))
    results.append(("--version import time", f"{total_ms:.1f} ms (cudadoctor's own {ours_ms:.1f} ms)",
                    total_ms <= 60, "<= 60 ms"))
    print(f"{args.rounds} alternating rounds, python {sys.version.split()[0]}, check as {' '.join(CHECK[:-3])}")
    width = max(len(r[0]) for r in results)
    for name, value, ok, target in results:
        print(f"  {name.ljust(width)}  {value:>36}  {'ok  ' if ok else 'MISS'} {target}")
    return 0 if all(r[2] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
