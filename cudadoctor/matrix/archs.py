"""CUDA's rules for which GPU runs which compiled code (CUDA C++ Programming Guide, "Binary
Compatibility" and "PTX Compatibility"), shared by the concerns that list SASS and PTX targets:

- SASS for ``sm_XY`` runs on a GPU of compute capability X.Z with Z >= Y (same major only):
  sm_86 runs on 8.9, sm_120 on 12.1, sm_60 on 6.1; sm_90 never runs on 10.0 or 12.0.
  ``sm_XYa`` (arch-specific) SASS runs on X.Y exactly.
- PTX for ``compute_XY`` is JIT-compiled by the driver for any GPU with capability >= X.Y,
  provided the driver understands that PTX version (:mod:`.cuda` decides that part).
"""

from __future__ import annotations

import re
from typing import Optional, Sequence, Tuple, Union

# What support_of finds.
SASS = "sass"  # a cubin of the same major and a lower or equal minor runs as is
PTX_JIT = "ptx_jit"  # only PTX the driver must JIT-compile at first use (slow start, needs a new enough driver)
UNSUPPORTED = "unsupported"  # "no kernel image is available for execution on the device"

_ARCH = re.compile(r"^sm_(\d+)(\d)([af]?)$")

ComputeCapability = Union[str, Tuple[int, int]]


def parse_arch(arch: str) -> Optional[Tuple[int, int, str]]:
    """'sm_86' -> (8, 6, ''); 'sm_120' -> (12, 0, ''); 'sm_90a' -> (9, 0, 'a'); else None."""
    m = _ARCH.match(arch)
    return (int(m.group(1)), int(m.group(2)), m.group(3)) if m else None


def parse_compute_capability(value: ComputeCapability) -> Optional[Tuple[int, int]]:
    """'8.9', 'sm_89', '12.0' or (8, 9) -> (major, minor); anything else -> None."""
    if isinstance(value, tuple):
        if len(value) == 2 and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in value):
            return (value[0], value[1])
        return None
    text = str(value).strip()
    arch = parse_arch(text)
    if arch:
        return arch[0], arch[1]
    m = re.match(r"^(\d{1,2})\.(\d)$", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _runs_on(arch: Tuple[int, int, str], cc: Tuple[int, int], jit: bool) -> bool:
    major, minor, suffix = arch
    if suffix == "a":  # arch-specific targets run on that exact capability only
        return (major, minor) == cc
    if jit:
        return cc >= (major, minor)
    return major == cc[0] and minor <= cc[1]


def _best(targets: Sequence[str], cc: Tuple[int, int], jit: bool) -> Optional[str]:
    fit = [(parsed, t) for t in targets for parsed in [parse_arch(t)] if parsed and _runs_on(parsed, cc, jit)]
    if not fit:
        return None
    # the newest target that fits; a plain one before an arch-specific one of the same number
    return max(fit, key=lambda item: (item[0][0], item[0][1], item[0][2] == ""))[1]


def support_of(archs: Sequence[str], ptx: Sequence[str], cc: Tuple[int, int]) -> Tuple[str, Optional[str]]:
    """(kind, target) for a GPU of capability ``cc`` and a build with these SASS and PTX lists."""
    sass = _best(archs, cc, jit=False)
    if sass:
        return SASS, sass
    jit = _best(ptx, cc, jit=True)
    if jit:
        return PTX_JIT, "compute_" + jit[len("sm_"):]
    return UNSUPPORTED, None
