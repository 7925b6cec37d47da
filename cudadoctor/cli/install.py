"""``cudadoctor install PACKAGE...``: the commands that install a build that works on a machine.

The machine is this one (its probes) unless a described-machine flag is given (--driver, --gpu,
--cc, --os, --platform): then the plan is for that machine and nothing of this one is used.
--python and --cuda apply to both. The planning is :func:`cudadoctor.planner.install.plan_install`;
this module reads the options, runs --verify, and prints (docs/install.md).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Optional, Tuple

import click

from cudadoctor.errors import CudadoctorError, ExitCode
from cudadoctor.host import DEFAULT_TIMEOUT_S
from cudadoctor.planner.managers import MANAGERS
from cudadoctor.planner.target import OSES, PLATFORMS

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix


@click.command()
@click.argument("packages", nargs=-1, required=True, metavar="PACKAGE...")
@click.option("--version", "version", metavar="VERSION", help="Keep the framework to this release or series.")
@click.option("--manager", type=click.Choice(MANAGERS), help="pip, uv, conda or pixi (default: pip, conda in a conda env).")
@click.option("--driver", metavar="VERSION", help="Plan for a machine with this NVIDIA driver (e.g. 535.104.05).")
@click.option("--gpu", "gpus", multiple=True, metavar="NAME", help="...with this GPU (repeatable): 'RTX 4090'.")
@click.option("--cc", "ccs", multiple=True, metavar="X.Y", help="...with a GPU of this compute capability (repeatable).")
@click.option("--python", "python", metavar="X.Y|PATH",
              help="The Python version to plan for (or an interpreter whose environment is the target).")
@click.option("--os", "os_name", type=click.Choice(OSES), help="...running this OS (wsl2: Linux wheels, Windows driver).")
@click.option("--platform", type=click.Choice(PLATFORMS), help="...with this wheel platform.")
@click.option("--jetpack", metavar="X.Y", help="...an NVIDIA Jetson with this JetPack release (6.2).")
@click.option("--l4t", metavar="X.Y.Z", help="...an NVIDIA Jetson with this Jetson Linux release (36.4.3).")
@click.option("--cuda", metavar="X.Y", help="Keep to builds of this CUDA (12.6, or a major: 12).")
@click.option("--upgrade", is_flag=True, help="Plan the newest build that fits even where the installed one works.")
@click.option("--index-url", "index_url", metavar="URL", help="A mirror of the plan's index (its variant path is kept).")
@click.option("--verify", is_flag=True, help="Check that the index serves the wheels before printing (network).")
@click.option("--timeout", type=click.FloatRange(min=0.1, max=600), default=DEFAULT_TIMEOUT_S, show_default=True,
              metavar="SECONDS", help="Time limit for each probe command and each --verify request.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.option("--machine", type=click.Path(file_okay=False), hidden=True, help="Replay a recorded machine folder.")
def install(packages: Tuple[str, ...], version: Optional[str], manager: Optional[str], driver: Optional[str],
            gpus: Tuple[str, ...], ccs: Tuple[str, ...], python: Optional[str], os_name: Optional[str],
            platform: Optional[str], jetpack: Optional[str], l4t: Optional[str], cuda: Optional[str], upgrade: bool,
            index_url: Optional[str], verify: bool, timeout: float,
            as_json: bool, machine: Optional[str]) -> int:
    """Plan the install of torch, tensorflow, jax, cupy or onnxruntime-gpu: the exact pins, the
    index or channel, and why; for this machine or a described one."""
    from cudadoctor.data.source import default_matrix
    from cudadoctor.planner.install import plan_install
    from cudadoctor.render.install import print_json, print_text

    matrix = default_matrix()
    if index_url is not None and not re.match(r"^(https?|file)://\S+$", index_url):
        raise CudadoctorError(f"--index-url {index_url}: not an http(s) URL")
    target, where = _target(matrix, driver, gpus, ccs, python, os_name, platform, timeout, machine, jetpack, l4t)
    result = plan_install(matrix, target, packages, manager, version, cuda, index_url, upgrade)
    checked = _verify(matrix, result, timeout) if verify else None
    (print_json if as_json else print_text)(result, where, checked, matrix.data_version)
    if checked is not None and not all(v.ok for v in checked.values()):
        return ExitCode.FINDINGS
    return ExitCode.OK if result.ok else ExitCode.FINDINGS


def _target(matrix: Matrix, driver: Optional[str], gpus: Tuple[str, ...], ccs: Tuple[str, ...], python: Optional[str],
            os_name: Optional[str], platform: Optional[str], timeout: float, machine: Optional[str],
            jetpack: Optional[str] = None, l4t: Optional[str] = None) -> Tuple[Any, str]:
    from cudadoctor.planner.target import described

    from cudadoctor.api import looks_like_path, machine_target
    from cudadoctor.host.recorded import replay

    if driver or gpus or ccs or os_name or platform or jetpack or l4t:
        if python and looks_like_path(python):
            raise CudadoctorError("--python PATH inspects this machine; a described machine takes --python X.Y")
        return (described(matrix, driver, gpus, ccs, python, os_name, platform, jetpack=jetpack, l4t=l4t),
                "the described machine")
    return machine_target(matrix, python, timeout, replay(machine), "--python "), "this machine"


def _verify(matrix: Matrix, result: Any, timeout: float) -> Any:
    """{package: VerifyResult} for each pip/uv plan's pins, against the index pip will use; what
    was not checked (no plan, the packages an extra brings, the GPU build behind a CPU plan) is
    said in each result's ``not_checked``, never left out silently."""
    from dataclasses import replace

    from cudadoctor.planner.managers import index_for
    from cudadoctor.planner.verify import VerifyResult, verify
    from cudadoctor.planner.wheel_tags import tag_target

    if result.manager not in ("pip", "uv"):
        raise CudadoctorError(f"--verify asks a pip index; --manager {result.manager} installs from channels")
    if not result.target.python:
        raise CudadoctorError("--verify needs the Python version", hint="add --python 3.11")
    pypi = matrix.pytorch.package_index("pypi")
    out = {}
    for r in result.results:
        if r.plan is None:
            target = tag_target(result.target.python, result.target.platform, None)
            out[r.name] = VerifyResult(False, "", target.interpreter, target.platform_label, (), None,
                                       (f"{r.name}: nothing fits this machine, so no wheel was checked",))
            continue
        url, mode = index_for(r.plan, result.index_url)
        if mode == "find-links" or not url:
            url = result.index_url or (pypi.url() if pypi is not None else None)
        # a series pin (cupy-cuda12x==14.*) resolves to its newest release there, as pip would resolve it
        pins = [(p.name, p.version if p.exact else f"{p.version}.*") for p in r.plan.pins]
        if url and pins:
            checked = verify(pins, url, result.target.python, result.target.platform, timeout)
            out[r.name] = replace(checked, not_checked=_not_checked(r))
    return out


def _not_checked(r: Any) -> Tuple[str, ...]:
    """What the index check of a plan's own pins does not reach."""
    lines = [f"{p.requirement}: only {p.name}'s own wheel was checked, not the packages its extra "
             f"[{','.join(p.extras)}] brings" for p in r.plan.pins if p.extras]
    if r.gpu_build is not None:
        lines.append(f"{r.name}: the GPU build shown after the CPU plan was not checked")
    return tuple(lines)
