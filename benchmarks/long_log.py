"""How long do `cudadoctor explain -` and `cudadoctor diagnose FILE` take on a very long log whose
error is on its last line?

Writes a log of --mb megabytes (a training loop's progress lines, then a CUDA out-of-memory error
as the last line), then times, alternately: the baseline, `tail -n 1` of the file (the least any
reader of its end does) plus the start of a Python interpreter (`python -c pass`, which every
cudadoctor run pays); `cudadoctor explain -` with the log on stdin (a pipe: read chunk by chunk,
only the tail kept); and `cudadoctor diagnose FILE` (a regular file: read from both ends by
seeking). Prints the medians, their ratio to the baseline, the peak memory of each, and whether
each found the error.

    python benchmarks/long_log.py [--mb 173] [--rounds 3]

Target (issue 15): the error of a 173 MB log is found in under 2 s, in bounded memory (peak RSS
under 100 MiB: what is read is bounded, 9 MiB of any log). Exit status 1 if it is missed.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import List, Optional, Sequence, Tuple

TARGET_S = 2.0
TARGET_RSS_MIB = 100
SCRIPT = os.path.join(os.path.dirname(sys.executable), "cudadoctor")
COMMAND = [SCRIPT] if os.path.isfile(SCRIPT) else [sys.executable, "-m", "cudadoctor"]
ERROR = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
         "79.19 GiB of which 1.06 GiB is free. Of the allocated memory 75.50 GiB is allocated by PyTorch, and "
         "1.20 GiB is reserved by PyTorch but unallocated.\n")


def write_log(path: str, mb: int) -> None:
    line = b"step 100200 | loss 0.12345 | lr 3.0e-04 | tokens/s 123456 | grad_norm 0.98 | mem 71.2 GiB\n"
    block = line * (1024 * 1024 // len(line))
    with open(path, "wb") as fh:
        for _ in range(mb):
            fh.write(block)
        fh.write(ERROR.encode())


def timed(argv: Sequence[str], stdin_path: Optional[str] = None) -> Tuple[float, int, str]:
    """(seconds, the child's peak RSS in KiB, its stdout)."""
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        start = time.perf_counter()
        done = subprocess.run(list(argv), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=120)
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    finally:
        if stdin_path:
            stdin.close()  # type: ignore[union-attr]
    # ru_maxrss of RUSAGE_CHILDREN is the largest child so far; report it only when it grew
    return seconds, max(peak, before) if peak > before else peak, done.stdout.decode("utf-8", "replace")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=173)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "train.log")
        write_log(log, args.mb)
        runs = {"baseline": [], "explain -": [], "diagnose FILE": []}  # type: dict
        found = {}
        peaks = {}
        for _ in range(args.rounds):
            t1, _, _ = timed(["tail", "-n", "1", log])
            t2, _, _ = timed([sys.executable, "-c", "pass"])
            runs["baseline"].append(t1 + t2)
            seconds, peak, out = timed(COMMAND + ["explain", "--no-check", "-"], stdin_path=log)
            runs["explain -"].append(seconds)
            found["explain -"] = "cuda-out-of-memory" in out
            peaks["explain -"] = peak
            seconds, peak, out = timed(COMMAND + ["diagnose", log, "--json"])
            runs["diagnose FILE"].append(seconds)
            found["diagnose FILE"] = '"out_of_memory"' in out
            peaks["diagnose FILE"] = peak
    base = statistics.median(runs["baseline"])
    print(f"log: {args.mb} MiB, the error on its last line; {args.rounds} rounds")
    print(f"baseline (tail -n 1 + python start-up): {base * 1000:.0f} ms")
    missed = []
    for name in ("explain -", "diagnose FILE"):
        median = statistics.median(runs[name])
        print(f"{name:<14} {median * 1000:7.0f} ms  ratio {median / base:5.1f}  peak RSS {peaks[name] / 1024:.0f} MiB  "
              f"error found: {'yes' if found[name] else 'NO'}")
        if median > TARGET_S or not found[name] or peaks[name] / 1024 > TARGET_RSS_MIB:
            missed.append(name)
    for name in missed:
        print(f"missed: {name} (target: under {TARGET_S} s, error found, peak RSS under {TARGET_RSS_MIB} MiB)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
