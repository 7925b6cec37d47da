"""Fit a Markdown report under an issue tracker's size limit (GitHub: 65,536 characters).

The report is rendered whole; while it is too long, the next stage of :data:`STAGES` shortens it
and it is rendered again. The stages go from the least useful to the most: first what loses
nothing (compact JSON; long fact sections folded, since the JSON keeps every fact), then facts no
check reads or that repeat others (probe durations, packages outside the GPU stack, library copies
that repeat a version), then facts that rarely decide a diagnosis (long environment values, stderr
beyond its last lines, further library copies, passed smoke tests); only then the fact sections and,
as a last resort, the JSON block itself. Every cut is said on top of the report. The findings are
never cut, and the JSON stays valid and loadable by ``cudadoctor diagnose`` at every stage.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Dict, List, Sequence, Tuple

from cudadoctor.model import Library, Package, Report, Snapshot
from cudadoctor.render.report_markdown import Layout, Memo, report_markdown

# Aim below the hard limit: the user's own words share the issue body with the report.
DEFAULT_BUDGET = 60_000
KEY_LIBRARIES = ("libcuda", "libnvidia-ml", "libcudart", "libcudnn", "libcublas", "libnccl")
# Packages of the GPU stack kept when the package list is cut (name prefixes).
KEY_PACKAGES = ("nvidia-", "cuda", "cupy", "torch", "pytorch", "jax", "tensorflow", "tf-", "onnxruntime",
                "tensorrt", "triton", "numba", "cudnn", "nccl", "libcu", "libnv", "python")
ENV_VALUE_MAX = 300
STDERR_LINES = 10
STDERR_CHARS = 1500
MAX_ERRORS_PER_PROBE = 5

Stage = Callable[[Report, Layout], Tuple[Report, Layout]]


def size(text: str) -> int:
    """Length as GitHub counts it (UTF-16 code units: an emoji counts twice)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def fit_markdown(report: Report, budget: int = DEFAULT_BUDGET) -> Tuple[str, Tuple[str, ...]]:
    """The Markdown of ``report`` in at most ``budget`` characters, and what was cut to get there."""
    original = report
    layout = Layout(limit=budget)
    memo: Memo = {}  # the parts a stage leaves as they were are not rendered again
    text = report_markdown(report, layout, memo)
    for stage in STAGES:
        if size(text) <= budget:
            return text, layout.cuts
        shortened, layout_after = stage(report, layout)
        if shortened is report and layout_after == layout:
            continue  # this stage finds nothing to cut here
        report = shortened
        layout = dataclasses.replace(layout_after, cuts=tuple(describe_cuts(original, report, layout_after)))
        text = report_markdown(report, layout, memo)
    if size(text) > budget:  # only a report made of gigantic findings gets here
        layout = dataclasses.replace(layout, cuts=layout.cuts + ("the end of the report",))
        marker = "\n\n… (truncated)\n"
        text = report_markdown(report, layout, memo)
        text = text[: max(0, budget - len(marker))]
        while text and size(text) + len(marker) > budget:
            text = text[:-64]
        text += marker
    return text, layout.cuts


def describe_cuts(original: Report, report: Report, layout: Layout) -> List[str]:
    """What ``report`` and ``layout`` leave out of ``original``, one phrase each."""
    a, b = original.snapshot, report.snapshot
    out = []
    if not layout.facts:
        out.append("the fact sections (the JSON below has every fact)" if layout.json_block else "the fact sections")
    elif layout.facts_lines is not None:
        out.append(f"fact sections show their first {layout.facts_lines} lines")
    if a.probe_durations_s != b.probe_durations_s or a.errors != b.errors and len(a.errors) == len(b.errors):
        out.append("probe durations")
    if len(a.packages or ()) > len(b.packages or ()):
        out.append(f"the package list ({len(b.packages or ())} of {len(a.packages or ())} kept)")
    copies = [sum(len(lib.copies) for lib in s.libraries or ()) for s in (a, b)]
    if len(a.libraries or ()) > len(b.libraries or ()):
        out.append(f"{len(a.libraries or ()) - len(b.libraries or ())} library families no finding names")
    elif copies[0] > copies[1]:
        which = "beyond the first of each library" if all(len(lib.copies) <= 1 for lib in b.libraries or ()) \
            else "that repeat a version of the same library"
        out.append(f"{copies[0] - copies[1]} library copies {which}")
    env = sum(1 for k, v in (a.env or {}).items() if (b.env or {}).get(k) != v)
    if env:
        out.append(f"{env} long environment value{'s' if env > 1 else ''} shortened")
    if [r.stderr_tail for r in a.smoke or ()] != [r.stderr_tail for r in b.smoke or ()]:
        out.append(f"smoke-test stderr beyond the last {STDERR_LINES} lines")
    tests = sum(len(r.tests) for r in a.smoke or ()) - sum(len(r.tests) for r in b.smoke or ())
    if tests:
        out.append(f"{tests} passed smoke test{'s' if tests > 1 else ''} (each suite's outcome is kept)")
    if len(a.errors) > len(b.errors):
        out.append(f"{len(a.errors) - len(b.errors)} repeated probe errors")
    if not layout.json_block:
        out.append("the JSON block (too long even after the cuts above)")
    return out


# ------------------------------------------------------------------------------ the stages


def _snap(report: Report, **changes: Any) -> Report:
    """``report`` with these snapshot fields changed; the report itself when none differs (the
    fitting loop then knows that nothing was cut)."""
    if all(getattr(report.snapshot, name) == value for name, value in changes.items()):
        return report
    return dataclasses.replace(report, snapshot=dataclasses.replace(report.snapshot, **changes))


def compact_json(report: Report, layout: Layout) -> Tuple[Report, Layout]:
    return report, dataclasses.replace(layout, json_indent=None)


def json_without_defaults(report: Report, layout: Layout) -> Tuple[Report, Layout]:
    return report, dataclasses.replace(layout, json_defaults=False)


def fold_facts(lines: int) -> Stage:
    def stage(report: Report, layout: Layout) -> Tuple[Report, Layout]:
        return report, dataclasses.replace(layout, facts_lines=lines)

    return stage


def round_durations(report: Report, layout: Layout) -> Tuple[Report, Layout]:
    snap = report.snapshot
    durations = {k: round(v, 1) for k, v in snap.probe_durations_s.items()}  # the keys stay: checks read them
    errors = tuple(dataclasses.replace(e, duration_s=None) for e in snap.errors)
    return _snap(report, probe_durations_s=durations, errors=errors), layout


def key_packages(report: Report, layout: Layout) -> Tuple[Report, Layout]:
    return _packages(report, layout, lambda snap, p: p.name.startswith(KEY_PACKAGES) or p.name in _own(snap))


def framework_packages(report: Report, layout: Layout) -> Tuple[Report, Layout]:
    return _packages(report, layout, lambda snap, p: p.name in _own(snap) or p.name.startswith("nvidia-cudnn"))


def _own(snap: Snapshot) -> List[str]:
    names = [b.name for b in snap.frameworks or ()]
    return names + [(b.distribution or "").split("==")[0] for b in snap.frameworks or ()]


def _packages(report: Report, layout: Layout, keep: Callable[[Snapshot, Package], bool]) -> Tuple[Report, Layout]:
    snap = report.snapshot
    if not snap.packages:
        return report, layout
    return _snap(report, packages=tuple(p for p in snap.packages if keep(snap, p))), layout


def unique_copies(report: Report, layout: Layout) -> Tuple[Report, Layout]:
    """The first copy of each library, and one more of each other version (conflicts stay visible)."""
    def keep(lib: Library) -> Library:
        seen = set()
        copies = []
        for c in lib.copies:
            if c.version not in seen:
                seen.add(c.version)
                copies.append(c)
        return dataclasses.replace(lib, copies=tuple(copies))

    return _libraries(report, layout, keep)


def first_copies(report: Report, layout: Layout) -> Tuple[Report, Layout]:
    return _libraries(report, layout, lambda lib: dataclasses.replace(lib, copies=lib.copies[:1]))


def _libraries(report: Report, layout: Layout, keep: Callable[[Library], Library]) -> Tuple[Report, Layout]:
    if not report.snapshot.libraries:
        return report, layout
    return _snap(report, libraries=tuple(keep(lib) for lib in report.snapshot.libraries)), layout


def key_libraries(report: Report, layout: Layout) -> Tuple[Report, Layout]:
    """Only the key library families and those a finding names."""
    snap = report.snapshot
    named = " ".join(f"{f.title} {f.why}" for f in report.findings)
    kept = tuple(lib for lib in snap.libraries or ()
                 if lib.name in KEY_LIBRARIES or re.search(rf"(?<![\w-]){re.escape(lib.name)}(?![\w-])", named))
    return (_snap(report, libraries=kept) if snap.libraries else report), layout


def short_env(report: Report, layout: Layout) -> Tuple[Report, Layout]:
    env = report.snapshot.env
    if not env:
        return report, layout
    return _snap(report, env={k: shorten(v, ENV_VALUE_MAX) for k, v in env.items()}), layout


def shorten(value: str, limit: int) -> str:
    """At most about ``limit`` characters; a path list keeps whole entries and says how many it left out."""
    if len(value) <= limit:
        return value
    sep = ";" if ";" in value and ":\\" in value else ":"
    parts = value.split(sep)
    if len(parts) > 1:
        kept: List[str] = []
        for part in parts:
            if len(sep.join(kept + [part])) > limit - 20:
                break
            kept.append(part)
        return sep.join(kept + [f"…(+{len(parts) - len(kept)} more)"])
    return value[: limit - 12] + "…(shortened)"


def short_stderr(report: Report, layout: Layout) -> Tuple[Report, Layout]:
    smoke = report.snapshot.smoke
    if not smoke:
        return report, layout
    return _snap(report, smoke=tuple(dataclasses.replace(r, stderr_tail=_tail(r.stderr_tail)) for r in smoke)), layout


def _tail(text: str) -> str:
    return "\n".join(text.splitlines()[-STDERR_LINES:])[-STDERR_CHARS:] if text else text


def failed_tests_only(report: Report, layout: Layout) -> Tuple[Report, Layout]:
    smoke = report.snapshot.smoke
    if not smoke:
        return report, layout
    kept = tuple(dataclasses.replace(r, tests=tuple(t for t in r.tests if t.status != "passed")) for r in smoke)
    return _snap(report, smoke=kept), layout


def cap_errors(report: Report, layout: Layout) -> Tuple[Report, Layout]:
    """The first few errors of each probe: checks ask whether a probe failed, not how often."""
    seen: Dict[str, int] = {}
    kept = []
    for e in report.snapshot.errors:
        seen[e.probe] = seen.get(e.probe, 0) + 1
        if seen[e.probe] <= MAX_ERRORS_PER_PROBE:
            kept.append(e)
    return _snap(report, errors=tuple(kept)), layout


def drop_facts(report: Report, layout: Layout) -> Tuple[Report, Layout]:
    return report, dataclasses.replace(layout, facts=False)


def drop_json(report: Report, layout: Layout) -> Tuple[Report, Layout]:
    return report, dataclasses.replace(layout, json_block=False)


STAGES: Sequence[Stage] = (
    compact_json, json_without_defaults, fold_facts(40), round_durations, key_packages, unique_copies, short_env, short_stderr,
    cap_errors, fold_facts(10), first_copies, failed_tests_only, framework_packages, drop_facts, key_libraries,
    drop_json,
)
