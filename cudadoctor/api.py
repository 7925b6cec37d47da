"""The library surface: plain functions over typed values, the ones the CLI calls and
``import cudadoctor`` exposes (docs/api.md).

Expected failures (bad input, an unreadable file) raise :class:`~cudadoctor.errors.CudadoctorError`
with a one-line message and a hint. Nothing here imports a framework, and this module's own
imports stay light: a framework may call ``cudadoctor.install_excepthook()`` when it loads.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Sequence, Tuple, Union

from cudadoctor.reports.build import make_report
from cudadoctor.errors import CudadoctorError
from cudadoctor.host import DEFAULT_TIMEOUT_S, Host, RealHost
from cudadoctor.model import Finding, Report, Severity, SmokeResult, Snapshot

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix
    from cudadoctor.diagnosis.explanation import Checked, Explanation
    from cudadoctor.diagnosis.paste import PasteDiagnosis
    from cudadoctor.planner.install import InstallResult
    from cudadoctor.planner.target import Target
    from cudadoctor.containers.model import DockerResult

__all__ = ["CudadoctorError", "collect", "diagnose", "diagnose_text", "docker", "explain", "make_report", "plan_install",
           "report", "smoke"]

# What a snapshot-like argument may be: a Snapshot, a Report, a dict (a snapshot or report JSON
# document as loaded, or the facts of docs/facts.md), or the path of such a JSON file.
SnapshotLike = Union[Snapshot, Report, Mapping[str, Any], str, "os.PathLike[str]"]
TARGET_KEYS = ("driver", "gpus", "ccs", "python", "os", "platform", "gpu", "jetpack", "l4t")
_PYTHON_VERSION = re.compile(r"^\s*\d+\.\d+t?\s*$")
_INSTALL_PROBES = ("host", "python", "driver", "gpus", "packages", "frameworks", "jetson")


def collect(python: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT_S, host: Optional[Host] = None,
            only: Optional[Sequence[str]] = None) -> Snapshot:
    """Probe this machine (or ``host``) for the stack of the interpreter ``python`` (default: the
    active venv or conda env). Never imports a framework; each external command is bounded by
    ``timeout`` seconds. Probes that fail record a ProbeError instead of raising.

    >>> snap = cudadoctor.collect(host=RecordedHost.load("tests/machines/h200-driver580-torch211-cu130"))
    >>> [g.name for g in snap.gpus or ()], snap.driver.driver_version if snap.driver else None
    (['NVIDIA H200'], '580.159.03')
    """
    from cudadoctor.probes import collect as run_probes

    return _name_pci_gpus(run_probes(host or RealHost(), python=python, timeout=timeout, only=only))


def _name_pci_gpus(snapshot: Snapshot) -> Snapshot:
    """A GPU seen only on the PCI bus (no driver answered for it) gets the model name gpus.json
    gives its device id ('NVIDIA A100 80GB PCIe' for 0x20b5), not a bare 'NVIDIA GPU 0x20b5';
    its ``source`` stays ``pci``."""
    if not any(g.source == "pci" and not g.name and g.pci_device_id for g in snapshot.gpus or ()):
        return snapshot
    from dataclasses import replace

    from cudadoctor.data.source import default_matrix

    try:
        gpus = default_matrix().gpus
    except Exception:  # the data cannot be read: the facts stay as probed
        return snapshot
    named = []
    for g in snapshot.gpus or ():
        model = gpus.identify(pci_device_id=g.pci_device_id) if g.source == "pci" and not g.name and g.pci_device_id \
            else None
        named.append(replace(g, name=model.name) if model is not None else g)
    return replace(snapshot, gpus=tuple(named))


def diagnose(snapshot_or_facts: SnapshotLike, *, only: Optional[Sequence[str]] = None,
             matrix: Optional[Matrix] = None) -> Tuple[Finding, ...]:
    """Run the checks (all, or those producing the codes or named in ``only``) and return the
    findings, most severe first. Pure: the same input and data give the same findings.

    ``snapshot_or_facts``: a Snapshot; a Report (its snapshot is diagnosed again with today's data);
    a dict: a snapshot or report JSON document, or the flat facts of docs/facts.md; or the path of
    such a JSON file (or of a Markdown report).

    >>> [f.code for f in cudadoctor.diagnose({"driver_version": "470.82.01", "torch_version": "2.5.1",
    ...                                        "torch_cuda": "12.4"})]
    ['driver-too-old-for-build']
    """
    from cudadoctor.checks import CHECKS, all_codes, run_checks, select
    from cudadoctor.data.source import default_matrix

    snapshot = as_snapshot(snapshot_or_facts)
    if isinstance(only, str):
        only = (only,)
    if only:
        known = set(all_codes()) | {c.name for c in CHECKS}
        unknown = [n for n in only if n not in known]
        if unknown:
            raise CudadoctorError(f"no check or finding code {unknown[0]!r}", hint="cudadoctor check --list")
    return run_checks(snapshot, matrix or default_matrix(), select(only))


def diagnose_text(text: str, *, name: str = "text", matrix: Optional[Matrix] = None) -> "PasteDiagnosis":
    """Diagnose what a person pasted (a GitHub issue's body, a forum post, a terminal's scroll-back):
    every known block of machine output in ``text`` is read into facts with the line it came from,
    the error lines are judged against the machine the text describes (never this one), and the
    causes are ranked, root first. ``str(result.text())`` is what ``cudadoctor diagnose FILE`` prints.

    >>> d = cudadoctor.diagnose_text("PyTorch version: 2.5.1+cu124\\nCUDA used to build PyTorch: 12.4\\n"
    ...                              "Nvidia driver version: 470.82.01\\n")
    >>> d.top.category.value
    'driver_too_old'
    """
    from cudadoctor.data.source import default_matrix
    from cudadoctor.diagnosis.explanation import explain_message
    from cudadoctor.diagnosis.intake import read_text
    from cudadoctor.diagnosis.paste import diagnose_paste

    if not isinstance(text, str):
        raise CudadoctorError(f"diagnose_text: give the pasted text as a string, not {type(text).__name__}")
    matrix = matrix or default_matrix()
    intake = read_text(text, matrix)
    checked = judge(intake.text, intake.snapshot(), "paste", name, matrix)
    return diagnose_paste(name, intake, explain_message(intake.text, checked, matrix), matrix)


def judge(message: str, snapshot: Snapshot, kind: str, what: str, matrix: Optional[Matrix] = None) -> "Checked":
    """Every check run on ``snapshot`` with ``message`` as its error message: what the causes of an
    explanation are judged against (``kind`` and ``what`` say which machine it is, for the text)."""
    from cudadoctor.checks import CHECKS, run_checks
    from cudadoctor.data.source import default_matrix
    from cudadoctor.diagnosis.explanation import Checked

    snapshot = replace(snapshot, error_message=message)
    return Checked(kind, what, snapshot, tuple(run_checks(snapshot, matrix or default_matrix())), CHECKS)


def explain(error: Union[str, BaseException], *, check: bool = True, snapshot: Optional[SnapshotLike] = None,
            python: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT_S,
            host: Optional[Host] = None) -> "Explanation":
    """Explain an error: the known error signatures in it, each one's causes most likely first,
    and which holds on this machine. ``error`` is the error text, or an exception (its type,
    message, chained causes and traceback are matched). ``check=False``: do not probe; causes are
    then judged on ``snapshot`` when one is given, else not judged. ``str(result)`` is the text of
    ``cudadoctor explain``.

    >>> e = cudadoctor.explain(RuntimeError("CUDA error: no kernel image is available for "
    ...                                     "execution on the device"), check=False)
    >>> e.matches[0].signature, e.matches[0].categories[0].value
    ('cuda-no-kernel-image', 'arch_unsupported')
    """
    from cudadoctor.data.source import default_matrix
    from cudadoctor.diagnosis.explanation import explain_message, message_of

    if not isinstance(error, (str, BaseException)):
        raise CudadoctorError(f"explain: give the error text or an exception, not {type(error).__name__}")
    message = message_of(error)
    if not message.strip():
        raise CudadoctorError("no error text to explain", hint='cudadoctor.explain("CUDA error: ...") or explain(exc)')
    if snapshot is not None:
        if python is not None or host is not None:
            raise CudadoctorError("explain: snapshot= does not go with python= or host=")
        kind, what = (("snapshot", os.fspath(snapshot)) if isinstance(snapshot, (str, os.PathLike))
                      else ("given", "snapshot"))
        return explain_message(message, judge(message, as_snapshot(snapshot), kind, what), default_matrix())
    if not check:
        return explain_message(message, None, default_matrix())
    snap = collect(python=checked_interpreter(python, host), timeout=timeout, host=host)
    target = snap.python.executable if snap.python and snap.python.executable else "unknown"
    return explain_message(message, judge(message, snap, "host" if host is not None else "machine", target),
                           default_matrix())


def plan_install(packages: Union[str, Sequence[str]], target: Union[None, Mapping[str, Any], "Target"] = None, *,
                 manager: Optional[str] = None, version: Optional[str] = None, cuda: Optional[str] = None,
                 index_url: Optional[str] = None, python: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT_S,
                 host: Optional[Host] = None, upgrade: bool = False) -> "InstallResult":
    """Plan the install of torch, tensorflow, jax, cupy or onnxruntime-gpu, as ``cudadoctor install``
    does: exact pins, index or channel, what to uninstall first, and why.

    ``target=None`` plans for this machine (probed; ``python`` is an interpreter path or an X.Y
    version). Else a described machine: a dict with any of ``driver`` ('550.54.15'), ``gpus``
    (['RTX 4090']), ``ccs`` (['8.9']), ``python`` ('3.11'), ``os`` (linux, windows, wsl2),
    ``platform`` (linux-x86_64, ...), ``gpu`` (True: plan a CUDA build with no GPU named), or a
    :class:`~cudadoctor.planner.target.Target`. ``result.ok`` is False when a package has no plan
    (``results[i].nofit`` says what would fit). On this machine a package whose installed build
    works is kept (``results[i].kept`` says why) unless ``upgrade`` (or ``version``, ``cuda``).

    >>> r = cudadoctor.plan_install("torch", {"driver": "550.54.15", "gpus": ["RTX 4090"], "python": "3.11"})
    >>> r.ok, r.results[0].plan.label
    (True, 'torch 2.14.1+cu126')
    """
    from cudadoctor.data.source import default_matrix
    from cudadoctor.planner.install import plan_install as plan

    matrix = default_matrix()
    names = (packages,) if isinstance(packages, str) else tuple(packages)
    if not names or not all(isinstance(n, str) for n in names):
        raise CudadoctorError("plan_install: give the package names to plan, e.g. ['torch']")
    if index_url is not None and not re.match(r"^(https?|file)://\S+$", index_url):
        raise CudadoctorError(f"index_url {index_url}: not an http(s) URL")
    return plan(matrix, _install_target(matrix, target, python, timeout, host), names, manager, version, cuda,
                index_url, upgrade)


def docker(paths: Union[str, Sequence[str]], target: Union[None, Mapping[str, Any], "Target"] = None, *,
           report: Optional[SnapshotLike] = None, timeout: float = DEFAULT_TIMEOUT_S,
           host: Optional[Host] = None) -> "DockerResult":
    """Check Dockerfiles, compose files and texts with ``docker run`` lines against this machine's
    driver and GPUs (``target=None``), a described one (a dict as for :func:`plan_install`:
    ``{"driver": "535.104.05", "gpus": ["A100"]}``) or the machine of a saved ``report``. Each
    finding has the line it is about (docs/docker.md)."""
    from cudadoctor.checks.containers_facts import host_facts
    from cudadoctor.checks.containers_run import run_docker
    from cudadoctor.containers.model import MAX_BYTES
    from cudadoctor.data.source import default_matrix
    from cudadoctor.planner.target import from_snapshot
    from cudadoctor.version import __version__

    matrix = default_matrix()
    names = (paths,) if isinstance(paths, str) else tuple(paths)
    if not names:
        raise CudadoctorError("docker: give the files to check (a Dockerfile, a compose file, a script)")
    if report is not None:
        t, where = from_snapshot(as_snapshot(report), matrix), "the machine of the report"
    elif target is not None:
        t, where = _install_target(matrix, target, None, timeout, host), "the described machine"
    else:
        t, where = machine_target(matrix, None, timeout, host), "this machine"

    def read(path: str) -> Optional[str]:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                return fh.read(MAX_BYTES + 1)
        except OSError:
            return None

    files = []
    for name in names:
        text = read(name)
        if text is None:
            raise CudadoctorError(f"{name}: cannot be read", hint="give the path of a Dockerfile or compose file")
        files.append((name, text))
    return run_docker(files, host_facts(matrix, t, where), matrix, read, __version__)


def smoke(suites: Union[None, str, Sequence[str]] = None, tier: str = "quick", *, python: Optional[str] = None,
          gpus: Optional[Sequence[int]] = None, timeout: Optional[float] = None, duration: Optional[float] = None,
          snapshot: Optional[Snapshot] = None) -> Tuple[SmokeResult, ...]:
    """Run smoke suites (small real workloads on the GPUs), each in its own child process of the
    target interpreter, bounded by ``timeout`` seconds (default: quick 60, standard 300, stress
    ``duration`` + 120). Default suites: the driver suite plus the suite of every framework
    installed. Never raises for a failing GPU: each result's ``status`` says what happened.

    >>> [(r.suite, r.status, r.reason) for r in cudadoctor.smoke("driver")]  # a machine without a driver
    [('driver', 'skipped', 'libcuda.so.1 not found: no NVIDIA driver')]
    """
    from cudadoctor.smoke import SUITES, TIERS
    from cudadoctor.smoke.runner import run_suites

    chosen = (suites,) if isinstance(suites, str) else tuple(suites or ())
    unknown = [s for s in chosen if s not in SUITES]
    if unknown:
        raise CudadoctorError(f"no smoke suite named {unknown[0]!r}", hint=f"suites: {', '.join(SUITES)}")
    if tier not in TIERS:
        raise CudadoctorError(f"no smoke tier {tier!r}", hint=f"tiers: {', '.join(TIERS)}")
    if gpus is not None and not all(isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in gpus):
        raise CudadoctorError("gpus: give GPU indexes (0, 1, ...) as the process sees them")
    for name, value in (("timeout", timeout), ("duration", duration)):
        if value is not None and not (isinstance(value, (int, float)) and value > 0):
            raise CudadoctorError(f"{name}: give a positive number of seconds")
    if duration is not None and tier != "stress":
        raise CudadoctorError("duration applies to the stress tier", hint='smoke(tier="stress", duration=300)')
    if snapshot is None:
        python = checked_interpreter(python, None)
    snap = snapshot or collect(python=python)
    if snapshot is None:
        answered(snap, python)
    if not chosen:
        from cudadoctor.reports.build import default_suites

        chosen = tuple(default_suites(snap))
    target = python or (snap.python.executable if snap.python and snap.python.executable else None)
    return run_suites(list(dict.fromkeys(chosen)), python=target, tier=tier,
                      gpus=tuple(dict.fromkeys(gpus)) if gpus is not None else None,
                      duration=duration, timeout=timeout, snapshot=snap)


def report(format: str = "markdown", *, redact: bool = True, keep_hostname: bool = False,
           patterns: Sequence[str] = (), snapshot: Optional[SnapshotLike] = None, smoke: bool = False,
           python: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT_S, host: Optional[Host] = None,
           max_length: Optional[int] = None) -> str:
    """The text ``cudadoctor report`` writes: verdict, versions, findings, facts and the replayable
    JSON, redacted unless ``redact=False``. ``format``: markdown (sized for an issue body, at most
    ``max_length`` characters, default 60,000), text or json. ``snapshot``: report on a saved
    snapshot, report, facts dict or file instead of probing; ``smoke``: also run the quick smoke
    tests when a GPU answers.

    >>> print(cudadoctor.report("text", host=RecordedHost.load("tests/machines/h200-driver580-torch211-cu130")))
    cudadoctor 0.1.0 · data 2026.11.0 · target /opt/torch/.venv/bin/python (3.12.3, venv .venv)
    Redacted by cudadoctor: 1 username, 1 hostname, 1 GPU UUID, 1 GPU serial; placeholders such as
    ...
    """
    from cudadoctor.reports.node import node_name
    from cudadoctor.reports.build import (
        REPORT_FORMATS,
        check_patterns,
        finish_report,
    )
    from cudadoctor.render import render_report

    if format not in REPORT_FORMATS:
        raise CudadoctorError(f"report format {format!r}: not one of {', '.join(REPORT_FORMATS)}")
    if isinstance(patterns, str):
        patterns = (patterns,)
    if not redact and (patterns or keep_hostname):
        raise CudadoctorError("redact=False keeps every value: it does not go with patterns or keep_hostname")
    if max_length is not None and (not isinstance(max_length, int) or max_length < 2000):
        raise CudadoctorError("max_length: give a number of characters of at least 2000")
    compiled = check_patterns(tuple(patterns), label="patterns:")
    if snapshot is not None:
        if python is not None or host is not None:
            raise CudadoctorError("report: snapshot= does not go with python= or host=")
        snap = as_snapshot(snapshot)
    else:
        checked = checked_report(python=python, timeout=timeout, host=host, smoke=smoke and host is None)
        snap = checked.snapshot
    # The node's name as `cudadoctor report` stamps it; a given snapshot is not this node, so only
    # its own hostname counts (not this process's SLURMD_NODENAME and the like).
    node = node_name(snap, {} if snapshot is not None else None)
    result = finish_report(checked if snapshot is None else make_report(snap, diagnose(snap)), redact=redact, keep_hostname=keep_hostname,
                           patterns=compiled, node=node)
    return render_report(result, format, False, max_length)


# ---------------------------------------------------------------------------- input


def read_json(path: Union[str, "os.PathLike[str]"], label: Optional[str] = None, markdown: bool = False) -> Any:
    """The JSON value in the file ``path`` (``-``: stdin; ``markdown``: or the JSON block of a
    Markdown report of ``cudadoctor report``), read through the one reader: at most 64 MiB, a pipe
    or device without blocking, UTF-8 or UTF-16 with a byte-order mark, and a report of a newer
    cudadoctor refused. Failures raise CudadoctorError naming ``label`` (default: the path)."""
    from cudadoctor.model.reader import ReadError, load

    name = label or os.fspath(path)
    try:
        return load(os.fspath(path), markdown)
    except ReadError as exc:
        raise CudadoctorError(f"{name}: {exc.describe()}") from None


def parse_json(text: str, name: str, markdown: bool = False) -> Any:
    """The JSON value of ``text`` (``markdown``: or the JSON block of a Markdown report); failures
    raise CudadoctorError naming ``name``."""
    from cudadoctor.model.reader import ReadError, parse

    try:
        return parse(text, markdown)
    except ReadError as exc:
        raise CudadoctorError(f"{name}: {exc.describe()}") from None


def as_snapshot(value: SnapshotLike) -> Snapshot:
    """A Snapshot from what :func:`diagnose` accepts; CudadoctorError when it is none of those.
    A dict is read as facts (docs/facts.md) when it has no ``schema_version`` or ``format`` and
    every key is a fact; otherwise as a snapshot or report document."""
    from cudadoctor.model.facts import FACT_KEYS, snapshot_from_facts, usable
    from cudadoctor.model.serialize import SnapshotError, snapshot_from_dict

    if isinstance(value, Snapshot):
        return value
    if isinstance(value, Report):
        return value.snapshot
    where = ""
    if isinstance(value, str) and "\n" in value:  # pasted text, not a path
        from cudadoctor.data.source import default_matrix
        from cudadoctor.diagnosis.intake import read_text

        intake = read_text(value, default_matrix())
        if not intake.usable:
            raise CudadoctorError("nothing cudadoctor can read in the text (no known output, fact or error line)",
                                  hint="docs/pasted-reports.md lists what is read")
        try:
            return intake.snapshot()
        except SnapshotError as exc:
            raise CudadoctorError(f"the text: {exc}") from None
    if isinstance(value, (str, os.PathLike)):
        where = f"{os.fspath(value)}: "
        value = read_json(value, markdown=True)
    if not isinstance(value, Mapping):
        raise CudadoctorError(f"{where}expected a Snapshot, a Report, a dict of facts or a snapshot, or a JSON "
                              f"file of one, not {type(value).__name__}")
    facts = "schema_version" not in value and "format" not in value and all(k in FACT_KEYS for k in value)
    try:
        snapshot = snapshot_from_facts(value) if facts else snapshot_from_dict(value)
    except SnapshotError as exc:
        typed = "schema_version" in value or "format" in value
        raise CudadoctorError(f"{where}{exc}", hint=None if typed else "a dict is read as facts when every key is one "
                              "of docs/facts.md, else as a snapshot (docs/snapshot.md)") from None
    except RecursionError:
        raise CudadoctorError(f"{where}nested too deeply") from None
    if facts and not usable(snapshot):
        raise CudadoctorError(f"{where}no fact cudadoctor can judge (a driver, GPU, framework build, toolkit, "
                              "library or error message)", hint="see docs/facts.md")
    return snapshot


def checked_interpreter(python: Optional[str], host: Optional[Host], option: str = "python=") -> Optional[str]:
    """``python`` checked as an interpreter path on this machine (a replayed host has its own).
    ``option`` is how the caller spells the argument in the message (``--python `` for the CLI)."""
    if python is None or host is not None:
        return python
    if os.sep not in python and not (os.altsep and os.altsep in python):
        # A bare name is looked up on PATH, as a shell does: `--python python3.11`. A file of that
        # name in this folder is not what a shell would run, and running it by its bare name
        # looked it up on PATH anyway ("hang not found"): say how to name it.
        from cudadoctor.host import which

        found = which(python, os.environ.get("PATH", os.defpath))
        if found is not None:
            return found
        if os.path.exists(python):
            raise CudadoctorError(f"{option}{python}: not found on PATH",
                                  hint=f"to use the file {python} in this folder, give ./{python}")
        raise CudadoctorError(f"{option}{python}: not found on PATH and no such file",
                              hint="give the path of a Python interpreter")
    if not os.path.exists(python):
        raise CudadoctorError(f"{option}{python}: no such file", hint="give the path of a Python interpreter")
    return python


def answered(snapshot: Snapshot, python: Optional[str], option: str = "python=") -> None:
    """Raise CudadoctorError when the interpreter ``python`` was given and did not answer (it hung,
    is not Python, printed garbage): what runs under it next (the checks, the smoke suites) would
    only report the same failure at length and blame the wrong layer."""
    if python is not None and snapshot.python is None:
        reason = snapshot.errors_of("python")
        raise CudadoctorError(f"{option.strip()} {python} did not answer as a Python interpreter"
                              + (f": {reason[0].detail}" if reason else ""))


def checked_report(*, python: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT_S, host: Optional[Host] = None,
                   only: Optional[Sequence[str]] = None, checks: bool = True, smoke: bool = False,
                   option: str = "python=", strict_python: bool = False) -> Report:
    """The pipeline of ``check``, ``report`` and :func:`report`: the interpreter checked, the probes,
    the quick smoke tests (``smoke``, when a GPU answers), the checks (``checks``; ``only`` selects),
    and the report. ``strict_python``: an interpreter that does not answer is an error, not a fact."""
    python = checked_interpreter(python, host, option)
    if checks:
        _warm_checks()
    if not smoke:
        snapshot = collect(python=python, timeout=timeout, host=host)
        if strict_python:
            answered(snapshot, python, option)
        return make_report(snapshot, diagnose(snapshot, only=only) if checks else None)
    from cudadoctor.probes import collect as run_probes
    from cudadoctor.reports.build import EarlySmoke

    early = EarlySmoke(python)  # the suites start while the other probes run
    try:
        snapshot = run_probes(host or RealHost(), python=python, timeout=timeout, when=(early.PROBES, early.start))
        if strict_python:
            answered(snapshot, python, option)
        snapshot = early.attach(snapshot)
    finally:
        early.close()
    return make_report(snapshot, diagnose(snapshot, only=only) if checks else None)


def _warm_checks() -> None:
    """Import the checks and read the data's manifest on a side thread while the probes wait on
    their commands, so that diagnosing after them does not start cold. An error here is left for
    the main thread, which meets it again and reports it."""
    import threading

    def warm() -> None:
        try:
            import cudadoctor.checks  # noqa: F401
            from cudadoctor.data.source import default_matrix

            default_matrix()
        except Exception:
            pass

    threading.Thread(target=warm, name="cudadoctor-warm", daemon=True).start()


def _install_target(matrix: Matrix, target: Union[None, Mapping[str, Any], "Target"], python: Optional[str],
                    timeout: float, host: Optional[Host]) -> "Target":
    from cudadoctor.planner.target import OSES, Target, described

    if isinstance(target, Target):
        return target
    if isinstance(target, Mapping):
        unknown = [k for k in target if k not in TARGET_KEYS]
        if unknown:
            raise CudadoctorError(f"target: unknown key {unknown[0]!r}", hint=f"keys: {', '.join(TARGET_KEYS)}")
        if python is not None:
            raise CudadoctorError("a described target takes its Python as target['python'] ('3.11')")
        strings = {k: target.get(k) for k in ("driver", "python", "os", "platform", "jetpack", "l4t")}
        bad = [k for k, v in strings.items() if v is not None and not isinstance(v, str)]
        if bad:
            raise CudadoctorError(f"target[{bad[0]!r}]: expected a string")
        if strings["os"] is not None and strings["os"] not in OSES:
            raise CudadoctorError(f"target['os'] {strings['os']!r}: not one of {', '.join(OSES)}")
        return described(matrix, strings["driver"], _strings(target, "gpus"), _strings(target, "ccs"),
                         strings["python"], strings["os"], strings["platform"], bool(target.get("gpu", False)),
                         strings["jetpack"], strings["l4t"])
    if target is not None:
        raise CudadoctorError(f"target: give None (this machine), a dict or a Target, not {type(target).__name__}")
    return machine_target(matrix, python, timeout, host)


def machine_target(matrix: Matrix, python: Optional[str], timeout: float, host: Optional[Host],
                   option: str = "python=") -> "Target":
    """The install target of this machine (or ``host``), for ``cudadoctor install`` and
    :func:`plan_install`: probed, for the interpreter ``python`` when it is a path, or planned for
    Python ``python`` when it is a version (X.Y)."""
    from cudadoctor.planner.target import from_snapshot, with_python

    version = python if python is not None and _PYTHON_VERSION.match(python) else None
    path = python if python is not None and version is None and looks_like_path(python) else None
    if path is not None:
        path = checked_interpreter(path, host, option)
    snapshot = collect(python=path, timeout=timeout, host=host, only=_INSTALL_PROBES)
    target = from_snapshot(snapshot, matrix, interpreter=path)
    target = replace(target, working=working_builds(snapshot, matrix, target))
    # neither a version nor a path ('three'): the planner's check says what a version looks like
    return with_python(target, python) if python is not None and path is None else target


def working_builds(snapshot: Snapshot, matrix: Matrix, target: "Target") -> Tuple[Tuple[str, str], ...]:
    """(framework, why) of the installed builds known to work here: a CUDA build (its own
    variant, or PyPI's build of a plain pip version), which the planner would pick again for this
    machine at that version and build (kernels for every GPU, a driver that runs its CUDA), with
    no error or warning of the checks about it, and whose smoke suite passed when it ran."""
    from cudadoctor.checks import run_checks
    from cudadoctor.planner.install import installed_build_fits

    if not target.gpu_build or not target.compute_capabilities or target.jetson_l4t:
        return ()  # a Jetson's wheels are not PyPI's: what its torch is cannot be told from its version
    try:
        findings = run_checks(snapshot, matrix)
    except Exception:  # no verdict, no claim that anything works
        return ()
    if any(f.severity in (Severity.ERROR, Severity.CRASHED) for f in findings):
        return ()  # a machine with an error works for no framework (a container without its GPU, ...)
    out: List[Tuple[str, str]] = []
    for name in ("torch", "tensorflow", "jax", "cupy", "onnxruntime-gpu"):
        family = "onnxruntime" if name == "onnxruntime-gpu" else name
        label = installed_build_fits(matrix, target, name)
        if label is None:
            continue
        flagged = [f for f in findings if f.severity in (Severity.ERROR, Severity.WARNING, Severity.CRASHED)
                   and any(e == f"frameworks.{family}" or e.startswith((f"frameworks.{family}.", f"frameworks[{family}]"))
                           for e in f.evidence)]
        suites = [r for r in snapshot.smoke or () if r.suite == family]
        if flagged or any(r.status not in ("passed", "skipped") for r in suites):
            continue
        smoke = "its smoke suite passed" if any(r.status == "passed" for r in suites) else "smoke not run"
        out.append((name, f"{label} works here: it has kernels for every GPU and this driver runs its CUDA, the "
                          f"checks found nothing about it, {smoke}"))
    return tuple(out)


def looks_like_path(value: str) -> bool:
    """An interpreter path rather than a version: '/usr/bin/python3', './venv/bin/python', 'python3.11'."""
    return os.sep in value or "/" in value or value.startswith(".") or value.lower().startswith("python")


def _strings(target: Mapping[str, Any], key: str) -> Tuple[str, ...]:
    value = target.get(key)
    if value is None:
        return ()
    values = (value,) if isinstance(value, str) else value
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        raise CudadoctorError(f"target[{key!r}]: expected a name or a list of names")
    return tuple(values)
