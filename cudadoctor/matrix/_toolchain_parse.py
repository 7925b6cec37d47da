"""Parsing for :mod:`.toolchain`: GPU targets as nvcc names them ('sm_90a', 'compute_90', '9.0',
'8.6+PTX'), cuDNN versions in every form cuDNN reports, and CUDA versions as major.minor keys.
:mod:`.toolchain` re-exports the public functions.
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

from cudadoctor.matrix.versions import VersionKey, major_minor, vkey

_SM = re.compile(r"^(?:sm|compute|lto)_(\d{2,3})([af]?)$")
_BARE = re.compile(r"^(\d{2,3})([af]?)$")


def sm_of(sm_or_cc: str) -> Optional[Tuple[str, str]]:
    """('sm_90', 'a') from 'sm_90a', 'compute_90a', '90a', '9.0', '9.0a', '8.6+PTX'; None when it
    names no architecture."""
    text = (sm_or_cc or "").strip().lower()
    if text.endswith("+ptx"):
        text = text[: -len("+ptx")]
    m = _SM.match(text) or _BARE.match(text)
    if m:
        return f"sm_{int(m.group(1))}", m.group(2)
    m = re.match(r"^(\d{1,2})\.(\d)([af]?)$", text)
    if m:
        return f"sm_{int(m.group(1))}{m.group(2)}", m.group(3)
    return None


def cc_of_sm(sm: str) -> str:
    """'sm_90' -> '9.0', 'sm_121' -> '12.1'."""
    number = int(sm[3:].rstrip("af"))
    return f"{number // 10}.{number % 10}"


def cudnn_version(text: str) -> Optional[str]:
    """'9.1.0.70' -> '9.1.0'; '9.1' -> '9.1'; the integer cuDNN reports (torch.backends.cudnn.version(),
    CUDNN_VERSION): 8907 -> '8.9.7', 90100 -> '9.1.0'. None when it does not parse."""
    text = (text or "").strip()
    if re.fullmatch(r"\d{4,6}", text):
        n = int(text)
        if n >= 10000:  # cuDNN 9+: major * 10000 + minor * 100 + patch
            return f"{n // 10000}.{(n % 10000) // 100}.{n % 100}"
        return f"{n // 1000}.{(n % 1000) // 100}.{n % 100}"  # cuDNN 7/8: major * 1000 + minor * 100 + patch
    key = vkey(text)
    if len(key) < 2:
        return None
    return ".".join(str(p) for p in key[:3])


def mm(version: Optional[str]) -> VersionKey:
    """The major.minor key of a CUDA version ('12.4.1' -> (12, 4)); () for None or garbage."""
    return major_minor(version or "")
