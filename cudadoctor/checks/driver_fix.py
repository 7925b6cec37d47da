"""The one way a driver upgrade is advised: which branch, which kernel modules, which packages.

:func:`driver_advice` turns "driver X or newer is needed" into what an expert would type:

- the **branch**: the oldest production or long-term-support branch at or above the one needed
  that is still supported at the data's date (``driver_branches.json``: designation, end of life),
  never above the last branch of a GPU's architecture (Pascal stops at R580); a new-feature branch
  only when no supported production branch is new enough, and said so;
- the **kernel modules**: open where the GPU needs them (Blackwell), proprietary where it cannot use
  them (Maxwell, Pascal, Volta), otherwise the branch's default (open from R560)
  (``architectures.json``, ``driver_packages.json``);
- the **packages** of the distribution (Ubuntu's ``-server`` packages for data-centre GPUs, Debian
  through NVIDIA's repository, RHEL-family dnf module streams or version locks); under Windows and
  WSL2 the Windows driver only.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

from cudadoctor.record import frozen

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

SUPPORTED = ("Production Branch", "Long Term Support Branch")
_MONTHS = {m: i for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                       "september", "october", "november", "december"), start=1)}
_LABELS = {"ubuntu": "Ubuntu", "debian": "Debian, NVIDIA's CUDA repository", "rhel": "RHEL/Rocky/Alma"}


@frozen
class DriverAdvice:
    text: str
    commands: Tuple[str, ...] = ()
    branch: Optional[str] = None  # "R580"
    flavour: Optional[str] = None  # open | proprietary
    source: Tuple[str, ...] = ()


def _end_of_life(branch: Any) -> Optional[Tuple[int, int]]:
    """(year, month) a branch's support ends, from its end_of_life text (the newest edition's, the
    earlier date, when two are given); None: not recorded."""
    found = re.findall(r"([A-Za-z]+)\s+(\d{4})", branch.end_of_life or "")
    dates = [(int(y), _MONTHS[m.lower()]) for m, y in found if m.lower() in _MONTHS]
    return min(dates) if dates else None


def _as_of(matrix: Matrix) -> Tuple[int, int]:
    """The data's own date (data_version 2026.11.2 -> (2026, 11)): advice does not depend on the clock."""
    parts = matrix.data_version.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return 0, 0


def choose_branch(matrix: Matrix, need: int, ceiling: Optional[int]) -> Tuple[Optional[Any], str]:
    """(the branch to install, why that one) for a driver of branch ``need`` or newer."""
    branches = [b for b in matrix.cuda.branches if b.major >= need and (ceiling is None or b.major <= ceiling)]
    if not branches:
        return None, ""
    today = _as_of(matrix)
    supported = [b for b in branches if b.designation in SUPPORTED
                 and ((eol := _end_of_life(b)) is None or eol >= today)]
    if supported:
        b = supported[0]
        eol = _end_of_life(b)
        kind = (b.designation or "").lower().replace("long term support", "long-term-support")
        return b, f"a {kind}" + (f", supported until {_month(eol)}" if eol else "")
    b = branches[0]
    return b, (f"a {b.designation.lower()}" if b.designation else "its kind is not recorded") + \
        ": no production or long-term-support branch that is still supported is new enough"


def _month(date: Tuple[int, int]) -> str:
    name = next(m for m, i in _MONTHS.items() if i == date[1])
    return f"{name.capitalize()} {date[0]}"


def driver_advice(matrix: Matrix, minimum: str, ccs: Sequence[str] = (), datacenter: bool = False,
                  distro_id: Optional[str] = None, distro_version: Optional[str] = None,
                  windows: bool = False) -> DriverAdvice:
    """What to install for a driver ``minimum`` (a version, or a branch 'R570') or newer on GPUs of
    compute capability ``ccs``."""
    by_branch = minimum.startswith("R")
    need = next((b for b in matrix.cuda.branches if b.branch == minimum), None) if by_branch \
        else matrix.cuda.branch_of(minimum)
    wanted = f"branch {minimum} or newer" if by_branch else f"{minimum} or newer"
    if need is None:
        return DriverAdvice(f"Upgrade the NVIDIA driver to {wanted}.")
    archs = [a for a in (matrix.gpus.architecture_of(cc) for cc in ccs) if a is not None]
    ceilings = [(a, int(a.last_driver_branch[1:])) for a in archs if a.last_driver_branch]
    ceiling = min((c for _, c in ceilings), default=None)
    source = ["driver_branches.json#" + need.branch] + [f"architectures.json#{a.name}" for a in archs]
    if ceiling is not None and need.major > ceiling:
        arch = next(a for a, c in ceilings if c == ceiling)
        return DriverAdvice(f"The driver cannot be upgraded that far: {arch.name.capitalize()} GPUs are supported up to driver "
                            f"branch {arch.last_driver_branch} only.", source=tuple(source))
    branch, why = choose_branch(matrix, need.major, ceiling)
    if branch is None:
        return DriverAdvice(f"Upgrade the NVIDIA driver to {wanted} (branch {need.branch} or newer).",
                            source=tuple(source))
    last = [a for a, c in ceilings if c == branch.major]
    lead = f"Upgrade the NVIDIA driver to {wanted}: install branch {branch.branch} ({why})"
    if last:
        lead += f", the last branch for {', '.join(dict.fromkeys(a.name.capitalize() for a in last))} GPUs"
    source.append("driver_branches.json#" + branch.branch)
    if windows:
        fact = matrix.drivers.fact("wsl_windows_driver_only")
        page = matrix.drivers.fact("windows_driver_download")
        return DriverAdvice(f"{lead}, as the Windows driver{f' from {page.value}' if page else ''}. "
                            + (fact.value if fact else ""), (), branch.branch, None,
                            tuple(source) + ("driver_packages.json#wsl_windows_driver_only",))
    flavour, flavour_why = _flavour(matrix, archs, branch.major)
    if flavour is None:
        return DriverAdvice(f"{lead}. {flavour_why}", (), branch.branch, None, tuple(source))
    text = f"{lead}, with the {flavour} kernel modules ({flavour_why})."
    commands = _commands(matrix, branch.major, flavour, datacenter, distro_id, distro_version)
    return DriverAdvice(text, commands, branch.branch, flavour, tuple(source) + ("driver_packages.json",))


def _flavour(matrix: Matrix, archs: Sequence[Any], branch: int) -> Tuple[Optional[str], str]:
    need_open = sorted({a.name.capitalize() for a in archs if a.requires_open_kernel_modules})
    no_open = sorted({a.name.capitalize() for a in archs if a.supports_open_kernel_modules is False})
    if need_open and no_open:
        return None, (f"{', '.join(need_open)} GPUs run only on the open kernel modules and {', '.join(no_open)} "
                      "GPUs only on the proprietary ones: one driver cannot serve both; put them in different machines")
    if need_open:
        return "open", f"{' and '.join(need_open)} GPUs run only on them"
    if no_open:
        return "proprietary", f"{' and '.join(no_open)} GPUs cannot use the open ones"
    fact = matrix.drivers.fact("open_default_branch")
    default = int(fact.value[1:]) if fact is not None else 560
    if branch >= default:
        return "open", f"the default from {fact.value if fact else 'R560'}" + ("" if archs else
                                                                              "; Maxwell, Pascal and Volta GPUs "
                                                                              "need the proprietary ones")
    return "proprietary", f"the default before {fact.value if fact else 'R560'}"


def _commands(matrix: Matrix, branch: int, flavour: str, datacenter: bool, distro_id: Optional[str],
              distro_version: Optional[str]) -> Tuple[str, ...]:
    data = matrix.drivers
    wanted: List[Tuple[str, Optional[str]]] = []
    if distro_id:
        wanted = [(distro_id, distro_version)]
    if not wanted or not any(data.install(d, v, flavour, datacenter, branch) for d, v in wanted):
        wanted = [("ubuntu", None), ("rhel", "9")]
    out: List[str] = []
    for d, v in wanted:
        record = data.install(d, v, flavour, datacenter, branch)
        if record is None:
            continue
        lines = list(record.for_branch(branch))
        label = _LABELS.get(record.distribution, record.distribution)
        lines[-1] += f"    # {label}; then reboot"
        out += lines
    return tuple(out)


def upgrade_advice(snap: Any, matrix: Matrix, minimum: str, ccs: Sequence[str]) -> DriverAdvice:
    """:func:`driver_advice` for the machine of ``snap``: its distribution, OS and GPUs' segment."""
    host = snap.host
    distro = (host.distribution_id or "").split() if host is not None else []
    windows = host is not None and (host.os == "windows" or bool(host.wsl))
    datacenter = False
    for g in snap.gpus or ():
        model = matrix.gpus.identify(name=g.name, pci_device_id=g.pci_device_id) if (g.name or g.pci_device_id) else None
        datacenter = datacenter or (model is not None and model.segment == "datacenter")
    return driver_advice(matrix, minimum, ccs, datacenter, distro[0].lower() if distro else None,
                         distro[1] if len(distro) > 1 else None, windows)
