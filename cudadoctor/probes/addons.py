"""Packages built against one torch release, read from their dist-info without importing them:
triton (the compiler behind ``torch.compile``), flash-attn, xformers and vLLM. Their METADATA
``Requires-Dist`` names the torch they were built for; flash-attn's local version
('2.8.3+cu12torch2.8cxx11abiTRUE') names its CUDA major and torch series."""

from __future__ import annotations

import posixpath
import re
from typing import Callable, Dict, List, Optional, Tuple

from cudadoctor.host import try_read_text
from cudadoctor.model import FrameworkBuild
from cudadoctor.model.parsers import parse_metadata_headers
from cudadoctor.model.parsers_eco import parse_flash_attn_local
from cudadoctor.probes.context import Context, Distribution

# name in the Snapshot -> the distributions that provide it, in order of preference
DISTRIBUTIONS: Dict[str, Tuple[str, ...]] = {
    "triton": ("triton", "pytorch-triton"),
    "flash-attn": ("flash-attn", "flash-attn-3", "flash-attn-4"),
    "xformers": ("xformers",),
    "vllm": ("vllm",),
}
_PIN = re.compile(r"^(torch|triton|xformers|flash-attn|flash_attn)\s*\(?\s*([=<>!~][^;)]*)\)?\s*(?:;|$)", re.I)


def _metadata(ctx: Context, dist: Distribution) -> Dict[str, List[str]]:
    text = try_read_text(ctx.host, posixpath.join(dist.dist_info, "METADATA"), 512 * 1024) or ""
    return parse_metadata_headers(text)


def _pins(headers: Dict[str, List[str]]) -> Dict[str, str]:
    """Requires-Dist lines without extras markers: {'torch': '==2.8.0', 'triton': '==3.4.0'}."""
    out: Dict[str, str] = {}
    for line in headers.get("Requires-Dist", []):
        if "extra ==" in line.replace("extra==", "extra =="):
            continue
        m = _PIN.match(line.strip())
        if m:
            name = m.group(1).lower().replace("_", "-")
            out.setdefault(name, re.sub(r"\s+", "", m.group(2)))
    return out


def _reader(name: str) -> Callable[[Context], Optional[FrameworkBuild]]:
    def read(ctx: Context) -> Optional[FrameworkBuild]:
        dist = ctx.distribution(*DISTRIBUTIONS[name])
        if dist is None:
            return None
        headers = _metadata(ctx, dist)
        version = (headers.get("Version") or [dist.version])[0].strip() or dist.version
        details = {f"requires_{k}": v for k, v in sorted(_pins(headers).items())}
        variant = cuda = None
        if name == "flash-attn":
            built = parse_flash_attn_local(version)
            if built:
                variant, cuda = "cuda", built["cuda_major"]
                details.update({"built_for_torch": built["torch"], "cxx11abi": built["cxx11abi"]})
            details["generation"] = {"flash-attn-3": "3", "flash-attn-4": "4"}.get(dist.name, version.split(".")[0])
        return FrameworkBuild(
            name=name, version=version, variant=variant, cuda=cuda,
            distribution=f"{dist.name}=={dist.version}", location=dist.site, details=details,
        )

    return read


READERS: List[Callable[[Context], Optional[FrameworkBuild]]] = [_reader(n) for n in DISTRIBUTIONS]
