"""Does any pattern that runs on outside text take more than linear time on a hostile line?

Every regular expression of the modules that read text from outside (the signatures of
compat_data/errors.json, the intake's readers, redaction's rules, triage, fleet and the model's
parsers: every compiled pattern in their modules' globals), every intake reader and the
redaction of a whole text are run on adversarial lines: the literal pieces of each pattern
repeated, each followed by a long run of one character, pairs of characters repeated, and each
signature's example cut at every few characters and continued with a run of its next character
(what a pattern with overlapping quantifiers backtracks on). Lines are screened at
``--screen`` bytes; every (pattern, line) slower than a linear pattern could be is measured again
at ``--size`` bytes (1 MiB) and must take at most ``--budget`` ms (100).

    python benchmarks/adversarial.py [--size 1048576] [--screen 65536] [--budget 100] [--only NAME]

Prints the slowest cases and exits 1 when any case is over the budget. tests/test_hostile_text.py
runs the same screen at a smaller size.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
import time
from typing import Callable, Dict, Iterable, List, Optional, Pattern, Sequence, Tuple

PACKAGES = ("cudadoctor.diagnosis", "cudadoctor.reports", "cudadoctor.triage", "cudadoctor.fleet", "cudadoctor.model",
            "cudadoctor.matrix", "cudadoctor.render", "cudadoctor.checks")
CHARS = "a0 ./-_:\\\"'=@<>`[({#*\t,;|~%+x"
PAIRS = ("a.", "a:", "a-", "a/", "0.", "a_", "a ", ":/", "0:", "a=", "a@", "/a", "-a", "0-", ". ", "a\\", "_0",
         "a,", "a;", "0x", "a'", "a\"", "aA", "a0", "0 ", ":0", "a b", "a=b ", "--a ", "a://", "/t/", "GPU-")
Case = Tuple[str, Callable[[str], object]]  # (name, what runs on a line)


def patterns() -> Dict[str, Pattern[str]]:
    """Every compiled pattern in the globals of the modules of :data:`PACKAGES`, by name."""
    out: Dict[str, Pattern[str]] = {}
    seen = set()
    for package in PACKAGES:
        root = importlib.import_module(package)
        names = [package] + [f"{package}.{m.name}" for m in pkgutil.walk_packages(root.__path__)]  # type: ignore[attr-defined]
        for name in names:
            try:
                module = importlib.import_module(name)
            except Exception:  # noqa: BLE001 (a module that needs what this machine lacks)
                continue
            for attr, value in vars(module).items():
                if isinstance(value, re.Pattern) and isinstance(value.pattern, str) and id(value) not in seen:
                    seen.add(id(value))
                    out[f"{name}.{attr}"] = value
    return out


def signatures() -> Dict[str, Tuple[Pattern[str], str]]:
    """(pattern, example) of every signature of the shipped data, by id."""
    from cudadoctor.data.source import default_matrix

    data = default_matrix().signatures
    return {f"signature:{s.id}": (s.regex, s.example or "") for s in data.signatures if s.regex is not None}


def literals(pattern: str) -> List[str]:
    """The literal pieces of a pattern's source (runs of letters, digits, spaces and plain
    punctuation outside classes), longest first."""
    text = re.sub(r"\\[dDwWsSbBAZ]|\[(?:\\.|[^\]])*\]|\(\?[:=!<P]?(?:<[^>]*>)?|[()|?*+{}^$]|\{\d*,?\d*\}", "\0", pattern)
    text = re.sub(r"\\(.)", r"\1", text)
    pieces = {p for p in text.split("\0") if len(p.strip()) >= 2}
    return sorted(pieces, key=len, reverse=True)[:8]


def lines_for(size: int, source: str = "", example: str = "", regex: Optional[Pattern[str]] = None) -> Iterable[str]:
    """Adversarial lines of about ``size`` characters for a pattern."""
    for c in CHARS:
        yield c * size
    for pair in PAIRS:
        yield pair * (size // len(pair))
    for piece in literals(source):
        yield piece * (size // len(piece))
        for c in "a0 ./-_:":
            yield piece + c * size
            yield (piece + c) * (size // (len(piece) + 1))
        yield (piece + " ") * (size // (len(piece) + 1))
    if example:
        m = regex.search(example) if regex is not None else None
        text = m.group(0) if m else example
        step = max(1, len(text) // 24)
        for k in range(1, len(text), step):
            yield text[:k] + text[k] * size
            yield text[:k] * (size // k)
        yield text[:-1] * (size // max(1, len(text) - 1))
        yield example + " " + example[-1] * size


def timed(run: Callable[[str], object], line: str) -> float:
    start = time.perf_counter()
    run(line)
    return time.perf_counter() - start


def cases(only: str = "") -> List[Tuple[str, Callable[[str], object], str, str, Optional[Pattern[str]]]]:
    """(name, the function run on a line, pattern source, example, regex) of everything measured."""
    from cudadoctor.diagnosis.intake.model import Found
    from cudadoctor.diagnosis.intake.readers import READERS
    from cudadoctor.diagnosis.intake.clean import lines_of
    from cudadoctor.reports.redact import redact_texts

    out: List[Tuple[str, Callable[[str], object], str, str, Optional[Pattern[str]]]] = []
    for name, (regex, example) in signatures().items():
        out.append((name, lambda s, r=regex: r.search(s), regex.pattern, example, regex))
    for name, regex in patterns().items():
        out.append((name, lambda s, r=regex: list(r.finditer(s)), regex.pattern, "", regex))
    for reader in READERS:
        name = f"reader:{reader.__module__}"
        out.append((name, lambda s, f=reader: f(Found(lines_of(s))), "", "", None))
    out.append(("redaction:redact_texts", lambda s: redact_texts([s]), "", "", None))
    return [c for c in out if only in c[0]]


def screen(size: int, only: str = "", verbose: bool = False) -> List[Tuple[float, str, str]]:
    """(seconds, case, line) of every line tried, slowest first."""
    found: List[Tuple[float, str, str]] = []
    for name, run, source, example, regex in cases(only):
        worst: Tuple[float, str] = (0.0, "")
        for line in dict.fromkeys(lines_for(size, source, example, regex)):
            seconds = timed(run, line)
            if seconds > worst[0]:
                worst = (seconds, line)
        found.append((worst[0], name, worst[1]))
        if verbose and worst[0] > 0.005:
            print(f"  screen {worst[0] * 1000:8.1f} ms  {name}  {worst[1][:40]!r}", file=sys.stderr, flush=True)
    return sorted(found, reverse=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1 << 20)
    parser.add_argument("--screen", type=int, default=1 << 16)
    parser.add_argument("--budget", type=float, default=100.0, help="milliseconds per case at --size")
    parser.add_argument("--only", default="", help="cases whose name contains this")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(10_000)
    start = time.perf_counter()
    screened = screen(args.screen, args.only, verbose=True)
    # a linear case takes size/screen times longer at --size: those that could exceed the budget are measured there
    threshold = args.budget / 1000 * args.screen / args.size * 4
    again = [(name, line) for seconds, name, line in screened if seconds > threshold][:40] \
        or [(name, line) for _, name, line in screened[:5]]
    by_name = {c[0]: c[1] for c in cases(args.only)}
    over = []
    print(f"{len(screened)} cases screened on lines of {args.screen:,} characters "
          f"({time.perf_counter() - start:.1f} s); the slowest, measured on lines of {args.size:,}:")
    for name, line in again:
        big = _scaled(line, args.size)
        seconds = timed(by_name[name], big)
        flag = "OVER" if seconds * 1000 > args.budget else "ok"
        print(f"  {seconds * 1000:8.1f} ms  {flag:4}  {name}  line {line[:40]!r}…")
        if flag == "OVER":
            over.append(name)
    print(f"{len(over)} over {args.budget:g} ms" + (": " + ", ".join(over) if over else ""))
    return 1 if over else 0


def _scaled(line: str, size: int) -> str:
    """``line`` grown to ``size`` characters the way it was made: its repeating unit repeated,
    or its last character's run made longer."""
    for unit in range(1, 65):
        if line[:unit] * (len(line) // unit) == line[: unit * (len(line) // unit)] and len(line) >= 4 * unit:
            return line[:unit] * (size // unit)
    head = line.rstrip(line[-1])
    return head + line[-1] * max(0, size - len(head))


if __name__ == "__main__":
    sys.exit(main())
