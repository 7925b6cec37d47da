"""One story per diagnosis: the findings' fixes are reconciled with the root fix before they are shown.

Each check judges the machine as it is. When the root cause's fix replaces a framework build (a
torch build for other GPUs, or for a CUDA the driver runs), some of the other findings speak of
that build, which is about to go: the driver it would need, the PTX it would JIT, the toolkit that
matches its CUDA. Shown as they are, they contradict the root fix ("install CUDA 11.8" beside
"install torch for CUDA 12.8"). :func:`reconcile` keeps the story straight:

- a finding about the build the root fix replaces (its driver, its PTX) is dropped: its subject is
  gone, and the root fix already says what the new build needs;
- the toolkit advice follows the CUDA of the fixed build: dropped when the toolkit in use already
  matches it, otherwise reworded to that CUDA;
- a driver branch lower than the one the root fix installs is not offered beside it.

What a fix installs is read from its commands by :func:`intents` (also what the test that walks
every recorded machine and corpus paste uses to look for conflicting fixes).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import List, Optional, Sequence, Tuple

from cudadoctor.record import frozen
from cudadoctor.matrix.versions import major_minor
from cudadoctor.model import Finding, Fix, FixCommand, Severity, Snapshot

_TORCH_PIN = re.compile(r"(?:^|\s)torch==(\d+(?:\.\d+){1,3})(?:\+(cu\d{2,3}|cpu))?(?=\s|$)")
_VARIANT_INDEX = re.compile(r"/whl/(?:(?:nightly|test)/)?(cu\d{2,3}|cpu)\b")
_DRIVER_PACKAGE = re.compile(r"\bnvidia-(?:driver|open)-(\d{3})\b|\bnvidia-driver:(\d{3})\b|\bcuda-drivers-(\d{3})\b")
_TOOLKIT_PATH = re.compile(r"/usr/local/cuda-(\d{1,2}\.\d{1,2})\b")

# findings that speak of one framework build: the driver it needs, the PTX it would JIT
_ABOUT_THE_BUILD = ("driver-minor-version-compat", "driver-too-old-for-ptx-jit", "driver-too-old-for-build",
                    "arch-ptx-jit", "cuda-forward-compat")


@frozen
class Intents:
    """What a fix's commands install: torch builds ('cu128', 'cpu'), driver branches, toolkits ('12.8')."""

    torch: Tuple[str, ...] = ()
    drivers: Tuple[int, ...] = ()
    toolkits: Tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.torch or self.drivers or self.toolkits)


def intents(f: Finding) -> Intents:
    """Read what ``f``'s fix commands install (alternatives within one fix are all listed)."""
    torch: List[str] = []
    drivers: List[int] = []
    toolkits: List[str] = []
    for c in (f.fix.commands if f.fix else ()):
        run = c.run.split("#", 1)[0]
        pin = _TORCH_PIN.search(run)
        if pin is not None and re.match(r"\s*(?:uv\s+)?pip3?\s+install\b|\s*python\S*\s+-m\s+pip\s+install\b", run):
            variant = pin.group(2)
            index = _VARIANT_INDEX.search(run)
            variant = variant or (index.group(1) if index else None)
            if variant:
                torch.append(variant)
        for m in _DRIVER_PACKAGE.finditer(run):
            drivers.append(int(next(g for g in m.groups() if g)))
        if re.search(r"\b(?:CUDA_HOME|CUDA_PATH)=|\bPATH=", run):
            toolkits += [m.group(1) for m in _TOOLKIT_PATH.finditer(run)]
    return Intents(tuple(dict.fromkeys(torch)), tuple(dict.fromkeys(drivers)), tuple(dict.fromkeys(toolkits)))


def conflicts(a: Intents, b: Intents) -> List[str]:
    """How two fixes contradict each other (empty: they do not): different torch builds with no
    choice in common, different driver branches, toolkits of different CUDA."""
    out = []
    if a.torch and b.torch and not set(a.torch) & set(b.torch):
        out.append(f"torch {'/'.join(a.torch)} vs {'/'.join(b.torch)}")
    if a.drivers and b.drivers and not set(a.drivers) & set(b.drivers):
        out.append(f"driver R{'/'.join(map(str, a.drivers))} vs R{'/'.join(map(str, b.drivers))}")
    if a.toolkits and b.toolkits and not set(a.toolkits) & set(b.toolkits):
        out.append(f"toolkit {'/'.join(a.toolkits)} vs {'/'.join(b.toolkits)}")
    for build, kits in ((a.torch, b.toolkits), (b.torch, a.toolkits)):
        cuda = _variant_cuda(build)
        if cuda and kits and cuda not in kits:
            out.append(f"toolkit {'/'.join(kits)} for a torch built with CUDA {cuda}")
    return out


def _variant_cuda(variants: Sequence[str]) -> Optional[str]:
    """'cu128' -> '12.8' (the one CUDA the variants agree on), else None."""
    found = {f"{v[2:-1]}.{v[-1]}" for v in variants if v.startswith("cu") and len(v) >= 4}
    return found.pop() if len(found) == 1 else None


def reconcile(findings: Sequence[Finding], snapshot: Snapshot) -> List[Finding]:
    """``findings`` (ordered, root first) with the ones that contradict the root fix dropped or reworded."""
    root = next((f for f in findings if f.severity in (Severity.ERROR, Severity.CRASHED) and intents(f).torch), None)
    if root is None:
        return _drivers(list(findings))
    planned = intents(root)
    cuda = _variant_cuda(planned.torch)
    replaces = _replaces_torch(root, snapshot)
    out: List[Finding] = []
    for f in findings:
        if f is root:
            out.append(f)
            continue
        if replaces and f.code in _ABOUT_THE_BUILD and _about_torch(f) and not intents(f).torch:
            continue  # the build it speaks of is the one the root fix replaces
        if f.code == "nvcc-torch-mismatch" and cuda:
            reworded = _toolkit_for(f, snapshot, cuda, root)
            if reworded is not None:
                out.append(reworded)
            continue
        mine = intents(f)
        if mine.torch and not set(mine.torch) & set(planned.torch):
            f = _without_torch_commands(f, root)
        out.append(f)
    return _drivers(out)


def _replaces_torch(root: Finding, snapshot: Snapshot) -> bool:
    """Does the root fix install another torch build than the one installed (not the same one again)?"""
    torch = next((b for b in snapshot.frameworks or () if b.name == "torch"), None)
    if torch is None or not torch.version:
        return True
    version = torch.version.split("+")[0]
    variant = (f"cu{torch.cuda.replace('.', '')}" if torch.cuda and torch.variant == "cuda"
               else "cpu" if torch.variant == "cpu" else None)
    for c in (root.fix.commands if root.fix else ()):
        run = c.run.split("#", 1)[0]
        pin = _TORCH_PIN.search(run)
        if pin is None:
            continue
        index = _VARIANT_INDEX.search(run)
        wanted = pin.group(2) or (index.group(1) if index else None)
        if pin.group(1) != version or (variant is not None and wanted is not None and wanted != variant):
            return True
    return False


def _about_torch(f: Finding) -> bool:
    return any(e == "frameworks.torch" or e.startswith(("frameworks.torch.", "frameworks[torch]")) for e in f.evidence)


def _toolkit_for(f: Finding, snapshot: Snapshot, cuda: str, root: Finding) -> Optional[Finding]:
    """The nvcc advice for the fixed build's CUDA: none when the toolkit in use already matches it."""
    tk = snapshot.active_toolkit
    have = ".".join(map(str, major_minor(tk.version or ""))) if tk is not None else ""
    if have == cuda:
        return None
    text = (f"After the fix of {root.code} (torch for CUDA {cuda}), extensions build against CUDA {cuda}: install CUDA "
            f"toolkit {cuda} (NVIDIA's installers put it in /usr/local/cuda-{cuda}) and point CUDA_HOME at it; torch "
            "itself needs nothing.")
    commands = (FixCommand(f"export CUDA_HOME=/usr/local/cuda-{cuda}    # after installing CUDA {cuda}"),)
    return replace(f, fix=Fix(text, commands), caused_by=f.caused_by or root.code)


def _without_torch_commands(f: Finding, root: Finding) -> Finding:
    """A later finding that would install another torch build: its torch commands go; the root fix's build stands."""
    keep = tuple(c for c in (f.fix.commands if f.fix else ()) if not _TORCH_PIN.search(c.run.split("#", 1)[0]))
    keep = tuple(c for c in keep if not re.match(r"\s*pip3?\s+uninstall\b.*\btorch\b", c.run))
    text = f"The fix of {root.code} installs the torch build to use; nothing else to install for this."
    return replace(f, fix=Fix(text, keep), caused_by=f.caused_by or root.code)


def _drivers(findings: List[Finding]) -> List[Finding]:
    """Only the highest driver branch any fix installs is offered: a lower one beside it is dropped
    from the later finding's commands (the higher branch runs what the lower one would)."""
    branches = [b for f in findings for b in intents(f).drivers]
    if len(set(branches)) < 2:
        return findings
    top = max(branches)
    out = []
    for f in findings:
        mine = intents(f).drivers
        if mine and max(mine) < top and f.fix is not None:
            keep = tuple(c for c in f.fix.commands if not _DRIVER_PACKAGE.search(c.run.split("#", 1)[0]))
            f = replace(f, fix=Fix(f"{f.fix.text} (Driver branch R{top}, which another fix installs, covers this.)"
                                   .strip(), keep))
        out.append(f)
    return out

