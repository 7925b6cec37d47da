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
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Pattern, Sequence, Tuple

PACKAGES = ("cudadoctor.diagnosis", "cudadoctor.reports", "cudadoctor.triage", "cudadoctor.fleet", "cudadoctor.model",
            "cudadoctor.matrix", "cudadoctor.render", "cudadoctor.checks")
CHARS = "a0 ./-_:\\\"'=@<>`[({#*\t,;|~%+x"
PAIRS = ("a.", "a:", "a-", "a/", "0.", "a_", "a ", ":/", "0:", "a=", "a@", "/a", "-a", "0-", ". ", "a\\", "_0",
         "a,", "a;", "0x", "a'", "a\"", "aA", "a0", "0 ", ":0", "a b", "a=b ", "--a ", "a://", "/t/", "GPU-")


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


# Patterns used only on short, bounded strings, measured as they are used (name -> how, why).
BOUNDED: Dict[str, Tuple[Callable[[Pattern[str], str], object], str]] = {
    "cudadoctor.matrix._gpus_resolve._PCI_ID": (lambda r, s: r.fullmatch(s[:200]), "a GPU name, at most 200 characters"),
    "cudadoctor.triage.refs.SHORT": (lambda r, s: r.fullmatch(s[:300]), "the command line's OWNER/REPO#N"),
    "cudadoctor.triage.refs.URL_PATH": (lambda r, s: r.fullmatch(s[:300]), "an issue URL's path"),
    "cudadoctor.triage.refs.API_PATH": (lambda r, s: r.fullmatch(s[:300]), "an issue URL's path"),
    "cudadoctor.triage.issue._REPOSITORY_URL": (lambda r, s: r.fullmatch(s[:2048]), "a repository URL, at most 2048"),
    "cudadoctor.matrix._gpus_resolve._NOISE": (lambda r, s: r.sub(" ", s[:200]), "a GPU name, at most 200 characters"),
    "cudadoctor.matrix.pytorch._VERSION": (lambda r, s: r.match(s), "a version: matched at its start only"),
    "cudadoctor.reports.redact.VERSION_BEFORE": (lambda r, s: r.search("\x00" + s[-64:]),
                                                "the 64 characters before an address"),
}
Run = Tuple[str, Callable[[str], object], str, str, Optional[Pattern[str]]]
MATCHES = 1000  # matches of a pattern gone through on one line: the engine's time, not Python's per match


def _scan(regex: Pattern[str], line: str) -> None:
    """What ``finditer``/``sub`` spend searching: the line to its end, or its first :data:`MATCHES` matches."""
    for n, _ in enumerate(regex.finditer(line)):
        if n == MATCHES:
            return


def cases(only: str = "") -> List[Run]:
    """(name, the function run on a line, pattern source, example, regex) of everything measured."""
    from cudadoctor.diagnosis.intake.model import Found
    from cudadoctor.diagnosis.intake.readers import READERS
    from cudadoctor.diagnosis.intake.clean import lines_of
    from cudadoctor.reports.redact import redact_texts

    out: List[Run] = []
    for name, (regex, example) in signatures().items():
        out.append((name, lambda s, r=regex: r.search(s), regex.pattern, example, regex))
    for name, regex in patterns().items():
        how = BOUNDED.get(name, (_scan, ""))[0]
        out.append((name, lambda s, r=regex, h=how: h(r, s), regex.pattern, "", regex))
    for reader in READERS:
        name = f"reader:{reader.__module__}"
        out.append((name, lambda s, f=reader: f(Found(lines_of(s))), "", "", None))
    out.append(("redaction:redact_texts", lambda s: redact_texts([s]), "", "", None))
    return [c for c in out if only in c[0]]


@dataclass
class Result:
    name: str
    small: float  # seconds on the worst line at the screen size
    large: float  # and at four times that
    line: str

    @property
    def superlinear(self) -> bool:
        """Four times the line, more than ten times the time (and enough time to tell: a busy
        machine's pauses are a few milliseconds)."""
        return self.large > 0.003 and self.large > 10 * max(self.small, 1e-5)


def screen(size: int, only: str = "", verbose: bool = False) -> List[Result]:
    """Every case on every adversarial line at ``size`` and ``4 * size`` characters: its worst line."""
    found: List[Result] = []
    for name, run, source, example, regex in cases(only):
        worst = Result(name, 0.0, 0.0, "")
        for line in dict.fromkeys(lines_for(size, source, example, regex)):
            big = _scaled(line, 4 * size)
            candidate = Result(name, timed(run, line), timed(run, big), line)
            if candidate.superlinear:  # once more, the least of five: a busy machine's pauses are no growth
                candidate = Result(name, min(timed(run, line) for _ in range(5)), min(timed(run, big) for _ in range(5)),
                                   line)
            if (candidate.superlinear, candidate.large) > (worst.superlinear, worst.large):
                worst = candidate
        found.append(worst)
        if verbose and worst.superlinear:
            print(f"  superlinear: {name}  {worst.small * 1000:.1f} -> {worst.large * 1000:.1f} ms  "
                  f"{worst.line[:40]!r}", file=sys.stderr, flush=True)
    return sorted(found, key=lambda r: (r.superlinear, r.large), reverse=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1 << 20)
    parser.add_argument("--screen", type=int, default=2048)
    parser.add_argument("--budget", type=float, default=100.0, help="milliseconds per case at --size")
    parser.add_argument("--only", default="", help="cases whose name contains this")
    parser.add_argument("--top", type=int, default=15, help="slowest cases to list")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    screened = screen(args.screen, args.only, verbose=True)
    runs = {c[0]: c[1] for c in cases(args.only)}
    over = [r.name for r in screened if r.superlinear]
    print(f"{len(screened)} cases on lines of {args.screen:,} and {4 * args.screen:,} characters "
          f"({time.perf_counter() - start:.1f} s); {len(over)} superlinear")
    timings = []
    for r in screened:
        if r.superlinear:
            continue
        big = _scaled(r.line, args.size)
        timings.append((min(timed(runs[r.name], big) for _ in range(2)), r.name, r.line))
    timings.sort(reverse=True)
    print(f"each case's worst line at {args.size:,} characters, the slowest {args.top}:")
    for seconds, name, line in timings[: args.top]:
        flag = "OVER" if seconds * 1000 > args.budget and not name.startswith("redaction:") else "ok"
        print(f"  {seconds * 1000:8.1f} ms  {flag:4}  {name}  line {line[:32]!r}…")
    over += [name for seconds, name, _ in timings if seconds * 1000 > args.budget and not name.startswith("redaction:")]
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
