"""The quick smoke tier on a real GPU: its wall time, and whether the device-to-device bandwidth it
reports agrees with a plain torch copy loop measured in the same run.

    python benchmarks/smoke_speed.py [--python PATH]

Targets (issue 5): the quick tier takes <= 10 s wall including framework import, and the torch
suite's d2d bandwidth is within 15 % of the copy loop below. Without a GPU and a CUDA build of
torch it says so and measures nothing. Exit status 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import List, Optional

# The baseline: the simplest honest measurement of copy bandwidth, bytes copied per second.
COPY_LOOP = r"""
import json, torch
if not torch.cuda.is_available():
    print(json.dumps({"error": "torch.cuda.is_available() is False"})); raise SystemExit
n = 256 * 1024 * 1024
src = torch.empty(n, dtype=torch.uint8, device="cuda"); dst = torch.empty_like(src)
for _ in range(3):
    dst.copy_(src)
torch.cuda.synchronize()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
for _ in range(20):
    dst.copy_(src)
end.record(); torch.cuda.synchronize()
print(json.dumps({"gbs": n * 20 / (start.elapsed_time(end) / 1000) / 1e9}))
"""


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter with torch (default: this one)")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cudadoctor", "smoke", "--tier", "quick", "--json",
                           "--python", args.python], capture_output=True, text=True)
    wall = time.perf_counter() - start
    try:
        smoke = {r["suite"]: r for r in json.loads(proc.stdout)["snapshot"]["smoke"] or []}
    except (ValueError, KeyError, TypeError):
        print(f"cudadoctor smoke printed no report (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
        return 1
    torch_suite = smoke.get("torch")
    if not torch_suite or torch_suite["status"] == "skipped":
        reason = torch_suite["reason"] if torch_suite else "no torch suite ran"
        print(f"nothing to measure here: {reason}")
        return 0
    d2d = [t["metrics"]["gbs"] for t in torch_suite["tests"]
           if t["name"] == "bandwidth_d2d" and "gbs" in t.get("metrics", {})]
    loop = json.loads(subprocess.run([args.python, "-c", COPY_LOOP], capture_output=True, text=True).stdout or "{}")
    print(f"quick tier wall   {wall:6.1f} s   {'ok  ' if wall <= 10 else 'MISS'} <= 10 s")
    if not d2d or "gbs" not in loop:
        print(f"d2d bandwidth: suite {d2d or 'none'}, copy loop {loop}")
        return 1
    ratio = d2d[0] / loop["gbs"]
    print(f"d2d suite/loop    {d2d[0]:.0f} / {loop['gbs']:.0f} GB/s = {ratio:.2f}   "
          f"{'ok  ' if abs(ratio - 1) <= 0.15 else 'MISS'} within 15 %")
    return 0 if wall <= 10 and abs(ratio - 1) <= 0.15 else 1


if __name__ == "__main__":
    sys.exit(main())
