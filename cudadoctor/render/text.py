"""The terminal view of a Report: one section per part of the stack, every line a fact."""

from __future__ import annotations

import re
import textwrap
from typing import Callable, List, Optional, Sequence, TextIO, Tuple

from cudadoctor.model import DriverInfo, Finding, FrameworkBuild, Gpu, Report, Severity, Snapshot, Toolkit
from cudadoctor.host.nvml import nvml_error_text
from cudadoctor.model.printable import printable_tree
from cudadoctor.render.findings import MARK, beyond, fix_lines, problems, verdict
from cudadoctor.render.wrap import wrap

LABEL_WIDTH = 11
DIM, BOLD, RED, YELLOW, GREEN = "2", "1", "31", "33", "32"


class Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, *codes: str) -> str:
        if not self.color or not codes:
            return text
        return f"\x1b[{';'.join(codes)}m{text}\x1b[0m"


def render_text(report: Report, stream: TextIO, color: bool = False, verbose: bool = False) -> None:
    report = printable_tree(report)  # control characters from the data escaped (it may be a stranger's report)
    style = Style(color)
    snap = report.snapshot
    out: List[str] = [header(report, style), ""]
    if report.redaction:
        out[-1:] = [style(line, DIM) for line in textwrap.wrap(report.redaction, WRAP, break_on_hyphens=False)] + [""]
    if report.checked:
        out.extend(findings_block(report.findings, style, verbose))
    for label, lines in sections(snap, verbose):
        if not lines:
            continue
        out.append(style(label.ljust(LABEL_WIDTH), BOLD) + lines[0])
        out.extend(" " * LABEL_WIDTH + line for line in lines[1:])
    if snap.errors:
        out.append("")
        out.append(style(f"Could not read ({len(snap.errors)}):", BOLD))
        width = max(len(e.probe) for e in snap.errors)
        for err in snap.errors:
            out.append(f"  {err.probe.ljust(width)}  {err.detail} " + style(f"[{err.kind.value}]", DIM))
    out.append("")
    if report.checked:
        out.append(summary_line(report.findings))
    out.append(style("Every fact: cudadoctor check --json" + ("" if verbose else " · more detail: -v"), DIM))
    stream.write("\n".join(out) + "\n")


COLOR = {Severity.ERROR: RED, Severity.CRASHED: RED, Severity.WARNING: YELLOW, Severity.OK: GREEN, Severity.INFO: DIM}
WRAP = 100


def findings_block(findings: Sequence[Finding], style: Style, verbose: bool) -> List[str]:
    """The verdict, then every problem with its why and fix, then the notes (info findings)."""
    severity, line = verdict(findings)
    out = [style(f"{MARK[severity]} {line}", COLOR[severity], BOLD), ""]
    for f in problems(findings):
        out.extend(_finding_lines(f, style))
        out.append("")
    infos = [f for f in findings if f.severity is Severity.INFO]
    for f in infos:
        out.append(style(f"· {f.title}", DIM) + (f"  [{f.code}]" if verbose else ""))
        if verbose:
            out.extend(_wrapped("why", f.why))
    if infos:
        out.append("")
    return out


def _finding_lines(f: Finding, style: Style) -> List[str]:
    tag = f"  [{f.code}]"
    out = [style(f"{MARK[f.severity]} {f.title}", COLOR[f.severity], BOLD) + style(tag, DIM)]
    if f.caused_by:
        out.append(style(f"  follows from [{f.caused_by}]", DIM))
    if f.confidence == "low":
        out.append(style("  (from the error message alone: verify below)", DIM))
    out.extend(_wrapped("why", f.why))
    fixes = fix_lines(f)
    if fixes:
        out.extend(_wrapped("fix", fixes[0]))
        out.extend("       " + c for c in fixes[1:])
    return out


def _wrapped(label: str, text: str) -> List[str]:
    if not text:
        return []
    if label == "fix":  # a quoted command (python -c '...') stays on one line, to paste
        lines = wrap(text, WRAP - 7) or [""]
    else:
        lines = textwrap.wrap(text, WRAP - 7, break_long_words=False, break_on_hyphens=False) or [""]
    return [f"  {label:<4} {lines[0]}"] + [f"       {line}" for line in lines[1:]]


wrapped = _wrapped  # a labelled, wrapped block ('  why  ...'), for the other text views


def summary_line(findings: Sequence[Finding]) -> str:
    found = problems(findings)
    if not found:
        return "No problems found." + beyond(findings)
    errors = sum(1 for f in found if f.severity in (Severity.ERROR, Severity.CRASHED))
    warnings = len(found) - errors
    parts = [f"{n} {word}{'s' if n != 1 else ''}" for n, word in ((errors, "error"), (warnings, "warning")) if n]
    return f"{len(found)} problem{'s' if len(found) != 1 else ''} ({', '.join(parts)})."


def header(report: Report, style: Style) -> str:
    py = report.snapshot.python
    target = "target unknown"
    if py and py.executable:
        env = f", {py.env_kind} {py.env_name}" if py.env_kind in ("venv", "conda") and py.env_name else ""
        target = f"target {py.executable} ({py.version}{env})"
    return style(f"cudadoctor {report.tool_version}", BOLD) + f" · data {data_label(report)} · {target}"


def data_label(report: Report) -> str:
    """'2026.12.0', or '2026.12.0 (installed)' when the data is not the one shipped with the tool."""
    origin = report.data_origin
    return report.data_version if origin in (None, "shipped", "source") else f"{report.data_version} ({origin})"


def sections(snap: Snapshot, verbose: bool) -> Sequence[Tuple[str, List[str]]]:
    parts: List[Tuple[str, Callable[[Snapshot, bool], List[str]]]] = [
        ("Driver", _driver),
        ("GPUs", _gpus),
        ("Toolkits", _toolkits),
        ("Libraries", _libraries),
        ("Frameworks", _frameworks),
        ("Smoke", _smoke),
        ("Packages", _packages),
        ("Python", _python),
        ("Host", _host),
        ("Compilers", _compilers),
        ("Env", _env),
    ]
    return [(label, fn(snap, verbose)) for label, fn in parts]


def _unknown(snap: Snapshot, probe: str) -> List[str]:
    errs = snap.errors_of(probe)
    return [f"unknown ({errs[0].detail})" if errs else "unknown (not probed)"]


def _driver(snap: Snapshot, verbose: bool) -> List[str]:
    d: Optional[DriverInfo] = snap.driver
    if d is None:
        return _unknown(snap, "driver")
    lines: List[str] = []
    if d.driver_version:
        cuda = f" (supports CUDA ≤ {d.cuda_driver_version})" if d.cuda_driver_version else ""
        lines.append(f"{d.driver_version}{cuda}, read through {d.source}")
    elif d.loaded is False:
        lines.append("no NVIDIA driver is loaded")
    elif d.kernel_module_version:
        lines.append("user-space driver unreadable; the kernel module is loaded")
    else:
        lines.append("not readable")
    if d.nvml_error:
        lines.append(f"NVML: {nvml_error_text(d.nvml_error)} ({d.nvml_error})")
    if d.kernel_module_version:
        flavor = f" ({d.kernel_module_flavor})" if d.kernel_module_flavor else ""
        lines.append(f"kernel module {d.kernel_module_version}{flavor}")
    elif d.loaded is not True:
        lines.append("no kernel module (/proc/driver/nvidia/version absent)")
    if d.nouveau_loaded:
        lines.append("nouveau (the open-source driver) is loaded")
    if d.device_nodes:
        count = len(d.device_nodes)
        lines.append("device nodes " + " ".join(d.device_nodes) if verbose else f"{count} device node{'s' if count > 1 else ''} in /dev")
    elif d.device_nodes is not None and (d.driver_version is None or verbose):
        lines.append("no /dev/nvidia* device nodes")
    return lines


def _gpus(snap: Snapshot, verbose: bool) -> List[str]:
    if snap.gpus is None:
        errs = snap.errors_of("gpus")
        return [f"unknown ({errs[0].detail})" if errs else "unknown"]
    if not snap.gpus:
        return ["no NVIDIA GPU on the PCI bus" if snap.gpus_source == "pci" else f"none visible to {snap.gpus_source or 'the driver'}"]
    lines = [_gpu_line(g, verbose) for g in snap.gpus]
    if any(g.source == "pci" for g in snap.gpus):
        lines.append("(seen on the PCI bus only: no driver answered for them)")
    return lines


def _gpu_line(g: Gpu, verbose: bool) -> str:
    bits = [f"{g.index}  {g.name or 'NVIDIA GPU ' + (g.pci_device_id or '(model unknown)')}"]
    if g.compute_capability:
        bits.append(f"sm_{g.compute_capability.replace('.', '')} (compute capability {g.compute_capability})")
    if g.memory_total_mib is not None:
        bits.append(f"{g.memory_total_mib / 1024:.0f} GiB")
    if g.pcie_gen_current is not None and g.pcie_width_current is not None:
        link = f"PCIe gen{g.pcie_gen_current} x{g.pcie_width_current}"
        if (g.pcie_gen_max, g.pcie_width_max) not in ((g.pcie_gen_current, g.pcie_width_current), (None, None)):
            link += f" (max gen{g.pcie_gen_max} x{g.pcie_width_max})"
        bits.append(link)
    if g.mig_mode == "enabled":
        bits.append("MIG on")
    if g.ecc_uncorrected_volatile:
        bits.append(f"{g.ecc_uncorrected_volatile} uncorrected ECC errors")
    if g.remapped_rows_pending:
        bits.append("row remap pending")
    if g.retired_pages_pending:
        bits.append("page retirement pending")
    active = [r for r in g.clocks_event_reasons or () if r != "gpu_idle"]
    if active:
        bits.append("clocks held back: " + ", ".join(active))
    if verbose or g.source == "pci":
        extra = [f"bus {g.pci_bus_id}" if g.pci_bus_id else "", f"device id {g.pci_device_id}" if g.pci_device_id else "",
                 f"{g.temperature_c} °C" if g.temperature_c is not None else "",
                 f"power limit {g.power_limit_w:g} W" if g.power_limit_w is not None else "",
                 f"persistence {g.persistence_mode}" if g.persistence_mode else ""]
        bits.extend(e for e in extra if e)
    return " · ".join(bits)


def _toolkits(snap: Snapshot, verbose: bool) -> List[str]:
    if snap.toolkits is None:
        return _unknown(snap, "toolkits")
    if not snap.toolkits:
        return ["no CUDA toolkit found (pip wheels do not need one)"]
    return [_toolkit_line(t) for t in sorted(snap.toolkits, key=lambda t: not t.active)]


def _toolkit_line(t: Toolkit) -> str:
    if t.exists is False:
        return f"{t.root} does not exist (named by {', '.join(t.found_via)})"
    version = f"CUDA {t.version}" if t.version else "CUDA (version unknown)"
    active = " [active]" if t.active else ""
    return f"{version} at {t.root}{active} · via {', '.join(t.found_via)}"


def _libraries(snap: Snapshot, verbose: bool) -> List[str]:
    if snap.libraries is None:
        return _unknown(snap, "libraries")
    if not snap.libraries:
        return ["no CUDA libraries found by the loader"]
    lines = []
    hidden = 0
    for lib in snap.libraries:
        if not lib.copies:
            continue
        versions = {c.version for c in lib.copies}
        if not verbose and lib.name not in KEY_LIBRARIES and len(versions) < 2:
            hidden += 1  # cuDNN's sub-libraries, cuFFT, ...: one version, nothing to see by default
            continue
        first = lib.copies[0]
        more = f" (+{len(lib.copies) - 1} more)" if len(lib.copies) > 1 and not verbose else ""
        lines.append(f"{lib.name} {first.version or '?'}  {first.path} ({first.found_via}){more}")
        if verbose:
            lines.extend(f"  also {c.version or '?'}  {c.path} ({c.found_via})" for c in lib.copies[1:])
    if hidden:
        lines.append(f"(+{hidden} more librar{'ies' if hidden > 1 else 'y'} with a single version: -v)")
    return lines


KEY_LIBRARIES = ("libcuda", "libnvidia-ml", "libcudart", "libcudnn", "libcublas", "libnccl")


def _frameworks(snap: Snapshot, verbose: bool) -> List[str]:
    if snap.frameworks is None:
        return _unknown(snap, "frameworks")
    if not snap.frameworks:
        return ["none of torch, TensorFlow, JAX, CuPy, ONNX Runtime, TensorRT, numba or Julia found"]
    return [framework_line(b) for b in snap.frameworks]


def framework_line(b: FrameworkBuild) -> str:
    head = f"{b.name} {b.version or '(version unknown)'}"
    if b.variant == "cpu":
        return f"{head}  CPU-only build (no CUDA)"
    if b.variant == "cuda":
        parts = [f"CUDA {b.cuda}" if b.cuda else "CUDA build"]
        if b.cudnn:
            parts.append(f"cuDNN {b.cudnn}")
        if b.nccl:
            parts.append(f"NCCL {b.nccl}")
        extra = ", ".join(f"{k} {v}" for k, v in b.details.items() if k.endswith(".jl"))
        return f"{head}  {' · '.join(parts)}" + (f" · {extra}" if extra else "")
    if b.variant:
        return f"{head}  {b.variant} build"
    return head


SMOKE_MARK = {"passed": "✓", "skipped": "·"}  # every other status (failed, error, timeout, crashed): ✗


def _smoke(snap: Snapshot, verbose: bool) -> List[str]:
    """One line per suite (with -v: one per test, and the stderr tail of a suite that did not pass)."""
    lines: List[str] = []
    for r in snap.smoke or ():
        mark = SMOKE_MARK.get(r.status, "✗")
        if r.status == "passed":
            took = f", {r.duration_s:.1f} s" if r.duration_s is not None else ""
            lines.append(f"{mark} {r.suite}: {len(r.tests)} test{'s' if len(r.tests) != 1 else ''}{took}")
        elif r.status == "skipped":
            lines.append(f"{mark} {r.suite}: skipped ({r.reason or 'no reason given'})")
        else:
            lines.append(f"{mark} {r.suite}: {r.reason or r.status}")
        if verbose:
            for t in r.tests:
                where = f" GPU {t.gpu}" if t.gpu is not None else ""
                took = f" {t.duration_s:.3f} s" if t.duration_s is not None else ""
                said = t.message or t.error or ""
                figures = " ".join(f"{k}={v:g}" for k, v in t.metrics.items())
                lines.append(f"  {SMOKE_MARK.get(t.status, '✗')} {t.name}{where}{took}"
                             + (f"  {said}" if said else "") + (f"  [{figures}]" if figures else ""))
            if r.status not in ("passed", "skipped") and r.stderr_tail:
                lines.append("  stderr (last lines):")
                lines.extend("    " + line for line in r.stderr_tail.splitlines()[-10:])
    return lines


def _packages(snap: Snapshot, verbose: bool) -> List[str]:
    if not verbose or not snap.packages:
        return []
    return [
        f"{p.name}=={p.version}" + (f" ({p.installer} {p.build or ''} {p.channel or ''})".replace("  ", " ").replace(" )", ")")
                                     if p.installer == "conda" else "")
        for p in snap.packages
    ]


def _python(snap: Snapshot, verbose: bool) -> List[str]:
    p = snap.python
    if p is None:
        return _unknown(snap, "python")
    bits = [f"{p.version or 'version unknown'}" + (f" ({p.implementation})" if p.implementation else "")]
    if p.env_kind:
        bits.append(f"{p.env_kind} {p.env_name}" if p.env_name else p.env_kind)
    if p.prefix:
        bits.append(p.prefix)
    return [" · ".join(bits)]


def _host(snap: Snapshot, verbose: bool) -> List[str]:
    h = snap.host
    if h is None:
        return _unknown(snap, "host")
    bits = [h.distribution or h.os or "unknown OS"]
    if h.kernel:
        bits.append(f"kernel {h.kernel}")
    if h.architecture:
        bits.append(h.architecture)
    if h.glibc:
        bits.append(f"glibc {h.glibc}")
    if h.wsl:
        bits.append("WSL2")
    if h.container and h.container != "none":
        bits.append(f"{h.container} container")
    if h.cpu_count:
        # cpu_count is logical CPUs (os.cpu_count()), not sockets
        logical = f"{h.cpu_count} logical CPU{'s' if h.cpu_count != 1 else ''}"
        bits.append(f"{h.cpu_model} ({logical})" if h.cpu_model else logical)
    if h.memory_total_mib:
        bits.append(f"{h.memory_total_mib / 1024:.1f} GiB RAM")
    return [" · ".join(bits)]


def _compilers(snap: Snapshot, verbose: bool) -> List[str]:
    if snap.compilers is None:
        return _unknown(snap, "compilers")
    if not snap.compilers:
        return ["no gcc or clang on PATH"]
    return [", ".join(f"{c.name} {c.version or '?'}" for c in snap.compilers)]


# a folder of a CUDA toolkit on PATH: /usr/local/cuda/bin, /opt/cuda-12.4/bin, .../cuda12.8/bin,
# not a folder that merely contains the letters (…/cudadoctor/.venv/bin)
_CUDA_DIR = re.compile(r"(?:^|[/\\])cuda(?:[-_]?\d+(?:\.\d+)*)?(?:[/\\]|$)", re.IGNORECASE)


def _env(snap: Snapshot, verbose: bool) -> List[str]:
    env = snap.env or {}
    lines = []
    for key, value in env.items():
        if key == "PATH":
            cuda = [p for p in value.split(":") if _CUDA_DIR.search(p)]
            if cuda:
                lines.append("PATH has " + ":".join(cuda))
            continue
        if verbose or key in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH", "LD_PRELOAD"):
            lines.append(f"{key}={value}")
    return lines
