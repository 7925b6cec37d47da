"""The differences that matter between two reports: a machine where it works and one where it fails.

Pure: two :class:`~cudadoctor.model.Report` values in, a tuple of :class:`Difference` out. Items
are matched by what identifies them, never by position: GPUs by PCI bus id (else by identical
facts, else by index), toolkits by root, libraries by family, frameworks, packages, environment
variables, smoke suites and findings by name. Facts that change between two runs on the same
machine (timestamps, durations, memory used, temperatures, power, clock event reasons, the order
of device nodes, the tool version) and facts that identify rather than describe a machine
(hostname, user, GPU UUIDs and serials, interpreter paths) are *noise*: they are compared, marked
``noise=True`` and shown only with ``cudadoctor diff --all`` (docs/user-guide.md).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Optional, Sequence, Tuple
from cudadoctor.record import frozen

from cudadoctor.reports.diff_fields import (
    UNKNOWN,
    Difference,
    Field,
    by_name,
    compare_fields,
    compare_items,
    compare_keyed,
    fmt,
    mib,
    union,
    whole_section,
)
from cudadoctor.reports.diff_stack import (
    diff_driver,
    diff_frameworks,
    diff_gpus,
    diff_libraries,
    diff_packages,
    diff_toolkits,
)
from cudadoctor.model import Compiler, Finding, HostInfo, PythonEnv, Report, Severity, SmokeResult, Snapshot

__all__ = ["Comparison", "Difference", "Side", "compare", "diff_reports", "diff_snapshots", "summary"]

# Sections in the order they are shown, with their titles.
SECTIONS: Tuple[Tuple[str, str], ...] = (
    ("driver", "Driver"),
    ("gpus", "GPUs"),
    ("toolkits", "Toolkits"),
    ("libraries", "Libraries (the copy that loads first)"),
    ("frameworks", "Framework builds"),
    ("packages", "Packages"),
    ("env", "Environment variables"),
    ("python", "Python"),
    ("host", "Host"),
    ("compilers", "Compilers"),
    ("smoke", "Smoke tests"),
    ("findings", "Findings"),
    ("errors", "Errors (facts a probe could not read; the error message given)"),
    ("report", "Report (when and how it was made)"),
)
# Which difference is the most important one (the summary line names it): the likeliest causes
# first, their consequences (smoke results, findings) last.
IMPORTANCE = ("driver", "gpus", "frameworks", "libraries", "toolkits", "env", "packages", "python", "host",
              "compilers", "smoke", "findings", "errors", "report")


# --------------------------------------------------------------------------- env, python, host, compilers


def diff_env(a: Snapshot, b: Snapshot) -> List[Difference]:
    whole = whole_section("env", tuple(a.env) if a.env is not None else None, tuple(b.env) if b.env is not None else None)
    if whole is not None:
        return whole
    return compare_keyed("env", a.env or {}, b.env or {})


PYTHON_FIELDS: Tuple[Field[PythonEnv], ...] = (
    ("version", lambda p: p.version, False),
    ("implementation", lambda p: p.implementation, False),
    ("environment", lambda p: p.env_kind, False),
    ("platform", lambda p: p.platform_tag, False),
    ("environment name", lambda p: p.env_name, True),
    ("executable", lambda p: p.executable, True),
    ("prefix", lambda p: p.prefix, True),
    ("base prefix", lambda p: p.base_prefix, True),
    ("site-packages", lambda p: p.site_packages, True),
    ("runs cudadoctor", lambda p: p.is_current, True),
)

HOST_FIELDS: Tuple[Field[HostInfo], ...] = (
    ("OS", lambda h: h.os, False),
    ("distribution", lambda h: h.distribution, False),
    ("architecture", lambda h: h.architecture, False),
    ("kernel", lambda h: h.kernel, False),
    ("glibc", lambda h: h.glibc, False),
    ("container", lambda h: h.container, False),
    ("WSL", lambda h: h.wsl, False),
    ("Secure Boot", lambda h: h.secure_boot, False),
    ("distribution id", lambda h: h.distribution_id, True),
    ("hostname", lambda h: h.hostname, True),
    ("user", lambda h: h.username, True),
    ("CPU", lambda h: h.cpu_model, True),
    ("CPU count", lambda h: h.cpu_count, True),
    ("memory", lambda h: mib(h.memory_total_mib), True),
)


def diff_python(a: Snapshot, b: Snapshot) -> List[Difference]:
    if a.python is None and b.python is None:
        return []
    return compare_fields("python", "", a.python or PythonEnv(), b.python or PythonEnv(), PYTHON_FIELDS)


def diff_host(a: Snapshot, b: Snapshot) -> List[Difference]:
    if a.host is None and b.host is None:
        return []
    return compare_fields("host", "", a.host or HostInfo(), b.host or HostInfo(), HOST_FIELDS)


def diff_compilers(a: Snapshot, b: Snapshot) -> List[Difference]:
    whole = whole_section("compilers", a.compilers, b.compilers)
    if whole is not None:
        return whole
    fields: Tuple[Field[Compiler], ...] = (("version", lambda c: c.version, False), ("path", lambda c: c.path, True))
    return compare_items("compilers", by_name(a.compilers or (), lambda c: c.name),
                         by_name(b.compilers or (), lambda c: c.name), lambda c: c.version or UNKNOWN, fields)


# --------------------------------------------------------------------------- smoke, findings, errors


def smoke_value(r: SmokeResult) -> str:
    return r.status if r.status == "passed" or not r.reason else f"{r.status}: {r.reason}"


def diff_smoke(a: Snapshot, b: Snapshot) -> List[Difference]:
    whole = whole_section("smoke", a.smoke, b.smoke, absent="not run")
    if whole is not None:
        return whole
    runs_a = by_name(a.smoke or (), lambda r: r.suite)
    runs_b = by_name(b.smoke or (), lambda r: r.suite)
    out = compare_keyed("smoke", {k: smoke_value(r) for k, r in runs_a.items()}, {k: smoke_value(r) for k, r in runs_b.items()})
    for suite in sorted(set(runs_a) & set(runs_b)):
        out.extend(compare_fields("smoke", suite, runs_a[suite], runs_b[suite], (
            ("duration", lambda r: f"{r.duration_s:.1f} s" if r.duration_s is not None else None, True),
            ("tier", lambda r: r.tier, True),
        )))
    return out


SEVERITY_ORDER = (Severity.OK, Severity.INFO, Severity.WARNING, Severity.ERROR, Severity.CRASHED)


def _findings(findings: Sequence[Finding]) -> Dict[str, Tuple[Severity, str]]:
    """Findings by code: the most severe severity, and the titles (a code may be reported twice)."""
    out: Dict[str, Tuple[Severity, str]] = {}
    for f in findings:
        if f.code in out:
            severity, title = out[f.code]
            worst = max(severity, f.severity, key=SEVERITY_ORDER.index)
            out[f.code] = (worst, title if f.title in title.split(" · ") else f"{title} · {f.title}")
        else:
            out[f.code] = (f.severity, f.title)
    return out


def diff_findings(a: Sequence[Finding], b: Sequence[Finding]) -> List[Difference]:
    """A finding present on one side only, or whose severity changed; a finding whose title alone
    changed (the same problem, other versions in its words) is noise."""
    found_a, found_b = _findings(a), _findings(b)
    out = []
    for code in union(found_a, found_b):
        va = f"{found_a[code][0].value}: {found_a[code][1]}" if code in found_a else None
        vb = f"{found_b[code][0].value}: {found_b[code][1]}" if code in found_b else None
        if va == vb:
            continue
        noise = code in found_a and code in found_b and found_a[code][0] == found_b[code][0]
        out.append(Difference("findings", code, "", va, vb, noise))
    return out


def diff_errors(a: Snapshot, b: Snapshot) -> List[Difference]:
    """Facts a probe could not read (``Snapshot.errors``), by probe, and the error message a user gave."""
    def errors(s: Snapshot) -> Dict[str, str]:
        grouped: Dict[str, List[str]] = {}
        for e in s.errors:
            grouped.setdefault(e.probe, []).append(f"{e.kind.value}: {e.detail}")
        return {f"{probe} probe": " · ".join(values) for probe, values in grouped.items()}

    out = compare_keyed("errors", errors(a), errors(b))
    if a.error_message != b.error_message:
        out.append(Difference("errors", "error message", "", a.error_message, b.error_message))
    return out


def diff_meta(a: Report, b: Report) -> List[Difference]:
    """When and by which versions each report was made, and how long each probe took: noise for
    the machine (the data version also says why two findings lists may differ: see notes())."""
    pairs = (("created at", a.snapshot.created_at, b.snapshot.created_at),
             ("tool version", a.snapshot.tool_version or a.tool_version, b.snapshot.tool_version or b.tool_version),
             ("data version", a.data_version, b.data_version),
             ("schema version", a.snapshot.schema_version, b.snapshot.schema_version))
    out = [Difference("report", "", label, fmt(va), fmt(vb), noise=True) for label, va, vb in pairs if fmt(va) != fmt(vb)]
    durations_a = {f"{k} probe duration": f"{v:.3f} s" for k, v in a.snapshot.probe_durations_s.items()}
    durations_b = {f"{k} probe duration": f"{v:.3f} s" for k, v in b.snapshot.probe_durations_s.items()}
    return out + [Difference("report", "", d.item, d.a, d.b, noise=True)
                  for d in compare_keyed("report", durations_a, durations_b)]


# --------------------------------------------------------------------------- all together


SnapshotDiff = Callable[[Snapshot, Snapshot], List[Difference]]
SNAPSHOT_SECTIONS: Tuple[Tuple[str, SnapshotDiff], ...] = (
    ("driver", lambda a, b: diff_driver(a.driver, b.driver)),
    ("gpus", diff_gpus),
    ("toolkits", diff_toolkits),
    ("libraries", diff_libraries),
    ("frameworks", diff_frameworks),
    ("packages", diff_packages),
    ("env", diff_env),
    ("python", diff_python),
    ("host", diff_host),
    ("compilers", diff_compilers),
    ("smoke", diff_smoke),
)


def diff_snapshots(a: Snapshot, b: Snapshot) -> List[Difference]:
    """Every difference between two snapshots' facts, noise included (marked), in section order."""
    out: List[Difference] = []
    for _, compare in SNAPSHOT_SECTIONS:
        out.extend(compare(a, b))
    return out


def diff_reports(a: Report, b: Report) -> Tuple[Difference, ...]:
    """Every difference between two reports, noise included (marked): facts, then findings, probe
    errors and the versions that made them, in section order."""
    found = diff_snapshots(a.snapshot, b.snapshot) + diff_findings(a.findings, b.findings)
    found += diff_errors(a.snapshot, b.snapshot) + diff_meta(a, b)
    order = {name: i for i, (name, _) in enumerate(SECTIONS)}
    return tuple(sorted(found, key=lambda d: order[d.section]))  # stable: a section keeps its order


@frozen
class Side:
    """One of the two reports compared, and where its findings come from."""

    name: str  # the file as given on the command line
    report: Report
    diagnosed_now: str = ""  # why the findings come from today's checks, not the file; "" when from the file
    redacted: str = ""  # what redaction replaced before comparing, e.g. "1 username, 1 hostname"; "" when nothing


@frozen
class Comparison:
    """What the diff renderers draw."""

    a: Side
    b: Side
    differences: Tuple[Difference, ...]  # those shown (noise only with include_noise)
    hidden: int  # noise differences left out
    notes: Tuple[str, ...] = ()


def compare(a: Side, b: Side, include_noise: bool = False) -> Comparison:
    everything = tuple(_unknowable(d) for d in diff_reports(a.report, b.report))
    shown = tuple(d for d in everything if include_noise or not d.noise)
    return Comparison(a, b, shown, len(everything) - len(shown), tuple(notes(a, b)))


def _unknowable(d: Difference) -> Difference:
    """A value that one side's file had redacted (``<redacted>``, ``<user>``, ...) against a real
    value on the other: nothing says they differ, so it is noise."""
    from cudadoctor.reports.redact import PLACEHOLDER

    hidden = [v is not None and PLACEHOLDER.fullmatch(v) is not None for v in (d.a, d.b)]
    if d.noise or d.kind != "changed" or hidden[0] == hidden[1]:
        return d
    return dataclasses.replace(d, noise=True)


def notes(a: Side, b: Side) -> List[str]:
    """Where each side's findings come from, what was redacted, and when comparing may mislead."""
    out = []
    for label, side in (("A", a), ("B", b)):
        if side.diagnosed_now:
            out.append(f"{label}: diagnosed with today's checks, data {side.report.data_version} ({side.diagnosed_now}).")
    if a.redacted or b.redacted:
        out.append("Both redacted as `cudadoctor report` does (--no-redact keeps the values).")
    if a.report.data_version != b.report.data_version:
        out.append(f"The findings come from different compatibility data ({a.report.data_version} and "
                   f"{b.report.data_version}): a finding may differ because a rule changed "
                   "(--rediagnose diagnoses both with today's checks).")
    return out


def most_important(differences: Sequence[Difference]) -> Optional[Difference]:
    """The difference the summary line names: the first of the section likeliest to be the cause."""
    real = [d for d in differences if not d.noise]
    if not real:
        return None
    return min(real, key=lambda d: IMPORTANCE.index(d.section))


PREFIX = {"driver": "driver", "gpus": "", "toolkits": "toolkit", "libraries": "", "frameworks": "", "packages": "package",
          "env": "", "python": "Python", "host": "", "compilers": "", "smoke": "smoke test", "findings": "finding",
          "errors": "probe error", "report": "report"}


def phrase(d: Difference) -> str:
    """The difference in a few words: ``driver 470.82.01 → 550.120``, ``package torch 2.5.1 → 2.6.0``,
    ``CUDA_VISIBLE_DEVICES only in B (0)``."""
    field = "" if (d.section, d.field) in (("driver", "version"), ("python", "version")) else d.field
    subject = " ".join(x for x in (PREFIX[d.section], d.item, field) if x) or d.section
    if d.kind == "added":
        return f"{subject} only in B ({d.b})"
    if d.kind == "removed":
        return f"{subject} only in A ({d.a})"
    return f"{subject} {d.a} → {d.b}"


def summary(comparison: Comparison) -> str:
    """The first line: how many differences, and the most important one."""
    real = [d for d in comparison.differences if not d.noise]
    noise = len(comparison.differences) - len(real)
    hidden = f" ({comparison.hidden} noise difference{'s' if comparison.hidden != 1 else ''} hidden: --all)" if comparison.hidden else ""
    shown = f" and {noise} of noise" if noise else ""
    top = most_important(real)
    if top is None:
        return f"No differences that matter{shown}{hidden}."
    return f"{len(real)} difference{'s' if len(real) != 1 else ''}{shown}; the most important: {phrase(top)}{hidden}"
