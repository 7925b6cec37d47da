"""Where does ``cudadoctor check --no-smoke --json`` spend its wall time, in every thread?

A sampling profiler of the standard library: a thread reads every other thread's stack each
millisecond and counts, per function, the samples it was on a stack (inclusive) and on top
(exclusive). Prints the top of both to stderr, and the wall time. ``os._exit`` is turned into
SystemExit so the report is written after check's own fast exit.
"""

from __future__ import annotations

import collections
import os
import runpy
import sys
import threading
import time
from typing import Any, Counter, NoReturn

INTERVAL_S = 0.001


def main() -> None:
    inclusive: Counter[str] = collections.Counter()
    exclusive: Counter[str] = collections.Counter()
    threads: Counter[str] = collections.Counter()
    done = threading.Event()
    me = threading.get_ident()
    samples = [0]

    def where(frame: Any) -> str:
        code = frame.f_code
        return f"{code.co_filename.rsplit('site-packages/', 1)[-1]}:{code.co_firstlineno}:{code.co_name}"

    def sampler() -> None:
        names = {t.ident: t.name for t in threading.enumerate()}
        while not done.is_set():
            for ident, frame in sys._current_frames().items():
                if ident == sampler_ident[0]:
                    continue
                samples[0] += 1
                if ident not in names:
                    names = {t.ident: t.name for t in threading.enumerate()}
                threads[names.get(ident, str(ident))] += 1
                exclusive[where(frame)] += 1
                seen = set()
                while frame is not None:
                    key = where(frame)
                    if key not in seen:
                        inclusive[key] += 1
                        seen.add(key)
                    frame = frame.f_back
            time.sleep(INTERVAL_S)

    sampler_ident = [0]
    t = threading.Thread(target=sampler, daemon=True)
    t.start()
    sampler_ident[0] = t.ident or 0

    def _exit(code: int) -> NoReturn:
        raise SystemExit(code)

    os._exit = _exit  # type: ignore[assignment]
    sys.argv = ["cudadoctor", "check", "--no-smoke", "--json"]
    start = time.perf_counter()
    try:
        runpy.run_module("cudadoctor", run_name="__main__")
    except SystemExit:
        pass
    wall = time.perf_counter() - start
    done.set()
    t.join()
    del me
    out = sys.stderr
    out.write(f"wall {wall * 1000:.0f} ms, {samples[0]} samples every {INTERVAL_S * 1000:.0f} ms\n")
    out.write("threads: " + ", ".join(f"{k} {v}" for k, v in threads.most_common(12)) + "\n\n")
    out.write("inclusive (samples on the stack):\n")
    for key, n in inclusive.most_common(70):
        out.write(f"{n:7d}  {key}\n")
    out.write("\nexclusive (samples on top):\n")
    for key, n in exclusive.most_common(40):
        out.write(f"{n:7d}  {key}\n")


if __name__ == "__main__":
    main()
