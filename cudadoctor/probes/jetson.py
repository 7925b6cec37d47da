"""A Jetson's Jetson Linux (L4T) release and module: /etc/nv_tegra_release, the L4T packages
(``dpkg-query -W nvidia-l4t-core nvidia-jetpack``) and /proc/device-tree. On a Jetson the GPU
driver is part of L4T, so these facts, not a desktop driver branch, say what the GPU runs."""

from __future__ import annotations

from typing import Dict, List

from cudadoctor.host import try_read_text
from cudadoctor.model import ErrorKind, JetsonInfo, ProbeError
from cudadoctor.model.parsers_eco import (
    parse_device_tree_strings,
    parse_dpkg_query_w,
    parse_l4t_package_version,
    parse_nv_tegra_release,
)
from cudadoctor.probes.context import Context, ProbeOutput

RELEASE_FILE = "/etc/nv_tegra_release"
MODEL_FILE = "/proc/device-tree/model"
COMPATIBLE_FILE = "/proc/device-tree/compatible"
PACKAGES = ("nvidia-l4t-core", "nvidia-jetpack")


def probe_jetson(ctx: Context) -> ProbeOutput:
    """Only on Linux/aarch64 with a Tegra device tree or an L4T release file; elsewhere the section
    stays ``None`` (not a Jetson) and no command runs."""
    host = ctx.host
    plat = host.platform()
    if plat.system != "Linux" or plat.machine not in ("aarch64", "arm64"):
        return ProbeOutput()
    release = try_read_text(host, RELEASE_FILE, 64 * 1024)
    compatible = parse_device_tree_strings(try_read_text(host, COMPATIBLE_FILE, 4096) or "")
    tegra = [c for c in compatible if c.startswith("nvidia,tegra")]
    if release is None and not tegra:
        return ProbeOutput()
    errors: List[ProbeError] = []
    fields = parse_nv_tegra_release(release or "")
    if release is not None and not fields:
        errors.append(ProbeError("jetson", ErrorKind.BAD_OUTPUT,
                                 f"{RELEASE_FILE} has no '# R<n> (release), REVISION: <x>' line: {release[:80]!r}"))
    packages = _packages(ctx, errors)
    l4t, source = fields.get("l4t"), "nv_tegra_release" if fields.get("l4t") else None
    core = packages.get("nvidia-l4t-core")
    if l4t is None and core:
        l4t, source = parse_l4t_package_version(core), "dpkg"
    model = parse_device_tree_strings(try_read_text(host, MODEL_FILE, 4096) or "")
    info = JetsonInfo(
        l4t=l4t,
        l4t_source=source if l4t else None,
        board=fields.get("board"),
        l4t_core_package=core,
        jetpack_package=packages.get("nvidia-jetpack"),
        model=model[0] if model else None,
        soc=tegra[-1].split(",", 1)[1] if tegra else None,
    )
    return ProbeOutput({"jetson": info}, errors)


def _packages(ctx: Context, errors: List[ProbeError]) -> Dict[str, str]:
    """The L4T packages' versions; dpkg-query exits 1 when one of them is not installed and still
    prints the others, so its output is read whatever the exit status."""
    if ctx.host.which("dpkg-query") is None:
        return {}
    result = ctx.run("dpkg-query", "-W", *PACKAGES)
    found = parse_dpkg_query_w(result.stdout or "")
    if not found and result.error in ("timeout", "permission"):
        errors.append(ProbeError("jetson", ErrorKind.TIMEOUT if result.error == "timeout" else ErrorKind.PERMISSION,
                                 result.describe()))
    return found

