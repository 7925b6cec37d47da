"""What does `cudadoctor run --` cost a command that succeeds?

Runs commands of about one second directly and through `cudadoctor run --` (the console script of
the venv running this benchmark: sys.executable's bin directory), alternately, and prints the
medians, the overhead in ms and as a percentage of the direct run (the baseline, measured in the
same run). Then times a command writing 100 MB to stderr both ways (stderr to /dev/null), which
measures the stderr pump's throughput, and the import time of the fast path.

    python benchmarks/run_overhead.py [--rounds 15] [--mb 100]

Target (issue 10): overhead on a 1 s command within 2 %, interpreter start-up included.
Exit status 1 if it is missed.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import threading
import time
from typing import Dict, List, Sequence, Tuple

TARGET_PERCENT = 2.0
LIMIT_S = 120.0  # per command
SCRIPT = os.path.join(os.path.dirname(sys.executable), "cudadoctor")
ONE_SECOND = {
    "python, prints to stdout and stderr": [
        sys.executable, "-c",
        "import time,sys; [print(i) or sys.stderr.write('x\\n') for i in range(3)]; time.sleep(1)"],
    "sleep 1": ["sleep", "1"],
}
# Measure an installed tool: pip writes bytecode at install time, so let the warm-up runs cache it.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: Sequence[str]) -> Tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its children). The limit is a timer that kills
    the process: subprocess's own timeout polls the child with sleeps of up to 50 ms, which would
    be the measurement's resolution."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=ENV)
    limit = threading.Timer(LIMIT_S, proc.kill)
    limit.start()
    returncode = proc.wait()
    elapsed = time.perf_counter() - start
    limit.cancel()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if returncode != 0:
        sys.exit(f"benchmark: {' '.join(argv)} exited {returncode}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def alternate(argv: Sequence[str], rounds: int) -> Dict[str, List[Tuple[float, float]]]:
    """Direct and wrapped runs, interleaved so that a noisy neighbour hits both alike."""
    wrapped = [SCRIPT, "run", "--", *argv]
    timed(argv), timed(wrapped)  # warm-up: page cache, bytecode
    times: Dict[str, List[Tuple[float, float]]] = {"direct": [], "run": []}
    for _ in range(rounds):
        times["direct"].append(timed(argv))
        times["run"].append(timed(wrapped))
    return times


def import_ms() -> float:
    """Cumulative import time (ms) of what the console script imports on the way to the child."""
    code = "import re; from cudadoctor.cli import main; from cudadoctor.oncall import run"
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          env=ENV, timeout=60)
    total = 0
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\S+)", line)  # top level only: one space
        if m:
            total += int(m.group(1))
    return total / 1000.0


def main(argv: Sequence[str] = ()) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--mb", type=int, default=100, help="megabytes written to stderr by the throughput test")
    args = parser.parse_args(list(argv) or None)
    if not os.path.exists(SCRIPT):
        sys.exit(f"benchmark: no console script at {SCRIPT} (pip install -e . in this venv)")
    print(f"cudadoctor run overhead · {args.rounds} rounds · {os.cpu_count()} CPUs · {SCRIPT}")
    ok = True
    for name, command in ONE_SECOND.items():
        times = alternate(command, args.rounds)
        walls = {k: [wall for wall, _ in v] for k, v in times.items()}
        cpus = {k: [cpu for _, cpu in v] for k, v in times.items()}
        direct, run = statistics.median(walls["direct"]), statistics.median(walls["run"])
        extra = run - direct
        percent = 100.0 * extra / direct
        verdict = "PASS" if percent <= TARGET_PERCENT else "FAIL"
        ok = ok and verdict == "PASS"
        print(f"  {name}")
        print(f"    median  direct {direct * 1000:7.1f} ms   run {run * 1000:7.1f} ms   "
              f"overhead {extra * 1000:+6.1f} ms ({percent:+.2f} %)   {verdict} (target <= {TARGET_PERCENT} %)")
        # Less sensitive to other jobs on the machine: the best runs, and the CPU time spent.
        best = min(walls["run"]) - min(walls["direct"])
        cpu = statistics.median(cpus["run"]) - statistics.median(cpus["direct"])
        print(f"    best    overhead {best * 1000:+6.1f} ms ({100.0 * best / min(walls['direct']):+.2f} %)   "
              f"CPU time added {cpu * 1000:+6.1f} ms (median)")

    chunks = args.mb * 16  # 64 KiB writes of log lines, as a chatty training loop writes them
    writer = [sys.executable, "-c",
              "import os; line = b'INFO step 12345 loss 0.123456 lr 0.0001 grad_norm 1.2345 samples/s 1234.5\\n'\n"
              f"b = line * (65536 // len(line))\nfor _ in range({chunks}): os.write(2, b)"]
    times = alternate(writer, 3)
    direct, run = min(t for t, _ in times["direct"]), min(t for t, _ in times["run"])
    megabytes = chunks * (65536 // 74 * 74) / 1e6  # 74: the line's length
    print(f"  {megabytes:.0f} MB to stderr (best of 3)           direct {direct:6.2f} s ({megabytes / direct:6.0f} MB/s)"
          f"   run {run:6.2f} s ({megabytes / run:6.0f} MB/s)")
    print(f"  import time on the way to the child: {import_ms():.1f} ms (python -X importtime, top-level imports)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
