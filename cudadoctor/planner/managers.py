"""A plan as the commands of a package manager: pip, uv, conda or pixi.

pip and uv install the planned wheels from the index of the plan's variant (a mirror given with
``--index-url`` keeps the variant and replaces the base). conda installs from conda-forge with
``cuda-version=`` pinning the CUDA of the build, or, for torch releases that lived there, from
the pytorch channel with the CUDA package of that release (``pytorch-cuda=``, ``cudatoolkit=``);
the channels come from compat_data (``pytorch.json`` conda fields, ``package_indexes.json``).
pixi gets the ``[system-requirements]`` entry that lets it pick CUDA builds, and the same
conda-forge requirements as ``pixi add`` arguments and as pixi.toml lines.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple
from cudadoctor.record import frozen

from cudadoctor.matrix.versions import major, major_minor, vkey
from cudadoctor.planner.torch import INDEX, pip_install_line
from cudadoctor.planner.plan import PackagePlan, Pin
from cudadoctor.planner.target import Installed

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

MANAGERS = ("pip", "uv", "conda", "pixi")
_VARIANT_SEGMENT = re.compile(r"^(cu\d{3}|cpu|rocm\d+(\.\d+)*)$")

# conda-forge package names, and whether the package has CPU and CUDA builds of the same version
# that only the build string tells apart (pytorch-2.9.1-cuda128_... vs pytorch-2.9.1-cpu_...).
_CONDA_NAMES = {"torch": "pytorch", "onnxruntime-gpu": "onnxruntime", "jax": "jaxlib"}
_BUILD_SELECTED = ("pytorch", "tensorflow", "jaxlib", "onnxruntime")


@frozen
class Steps:
    """What to run, in order, and the file snippets a manager reads (pixi.toml)."""

    commands: Tuple[str, ...]
    files: Tuple[Tuple[str, str], ...] = ()
    notes: Tuple[str, ...] = ()


def render(matrix: Matrix, plan: PackagePlan, manager: str, uninstall: Sequence[Installed] = (),
           index_url: Optional[str] = None) -> Steps:
    """The commands installing ``plan`` with ``manager``, after uninstalling ``uninstall``."""
    removal = uninstall_commands(uninstall, manager)
    if manager in ("pip", "uv"):
        url, mode = index_for(plan, index_url)
        tool = "uv pip" if manager == "uv" else "pip"
        notes: Tuple[str, ...] = ()
        if manager == "uv" and plan.framework == "torch" and plan.mirror_variant and not index_url:
            notes = (f"uv can also pick this index itself: --torch-backend={plan.mirror_variant} in place of "
                     "--index-url (the pins stay)",)
        return Steps(removal + (pip_install_line([p.requirement for p in plan.pins], url, mode, tool),), notes=notes)
    notes = (f"--index-url applies to pip and uv; {manager} reads channels (mirror them with conda's "
             "channel_alias or pixi's mirrors setting)",) if index_url else ()
    if manager == "conda":
        return _conda(matrix, plan, removal, notes)
    return _pixi(matrix, plan, removal, notes)


def index_for(plan: PackagePlan, override: Optional[str]) -> Tuple[Optional[str], str]:
    """The index URL and how pip uses it; a mirror keeps the plan's variant (…/whl/cu128)."""
    if not override:
        return plan.index_url, plan.index_mode
    base = override.rstrip("/")
    if plan.mirror_variant:
        head, _, last = base.rpartition("/")
        if head and _VARIANT_SEGMENT.match(last):
            base = head
        return f"{base}/{plan.mirror_variant}", INDEX
    return base, plan.index_mode if plan.index_url else INDEX


def uninstall_commands(installed: Sequence[Installed], manager: str) -> Tuple[str, ...]:
    pip_names = [i.name for i in installed if i.installer != "conda"]
    conda_names = [i.name for i in installed if i.installer == "conda"]
    out = []
    if conda_names:
        out.append(f"pixi remove {' '.join(conda_names)}" if manager == "pixi"
                   else f"conda remove -y {' '.join(conda_names)}")
    if pip_names:
        out.append({"uv": "uv pip uninstall", "pixi": "pixi remove --pypi"}.get(manager, "pip uninstall -y")
                   + " " + " ".join(pip_names))
    return tuple(out)


# ---------------------------------------------------------------------- conda and pixi


def _conda_name(pin: Pin) -> str:
    """conda-forge's name: pytorch for torch, cupy for every cupy-cudaXXx wheel, ..."""
    return "cupy" if pin.name.startswith("cupy-") else _CONDA_NAMES.get(pin.name, pin.name)


def _match_spec(name: str, pin: Pin, build: Optional[str]) -> str:
    """conda's MatchSpec: 'pytorch=2.9.1=*cuda*', 'jaxlib=0.11.*=*cuda*', 'torchvision==0.24.1',
    'cupy=15' (any 15.x)."""
    if build:
        return f"{name}={pin.version if pin.exact else pin.version + '.*'}={build}"
    return f"{name}=={pin.version}" if pin.exact else f"{name}={pin.version}"


def _cuda_version(plan: PackagePlan) -> Optional[str]:
    """cuda-version=12.8 (the build's CUDA) or =12 (a build for any 12.x)."""
    if not plan.cuda:
        return None
    key = major_minor(plan.cuda)
    return ".".join(map(str, key)) if len(vkey(plan.cuda)) > 1 else str(major(plan.cuda))


def conda_specs(plan: PackagePlan) -> List[Tuple[str, str]]:
    """(name, MatchSpec) for conda-forge: the framework pinned, its CUDA or CPU build chosen."""
    out = []
    build = "*cuda*" if plan.gpu else "*cpu*"
    for pin in plan.pins:
        name = _conda_name(pin)
        selected = name in _BUILD_SELECTED and (plan.gpu or name == "pytorch")
        out.append((name, _match_spec(name, pin, build if selected else None)))
        if plan.framework == "jax" and name == "jaxlib":
            out.insert(0, ("jax", _match_spec("jax", pin, None)))
    cuda = _cuda_version(plan)
    if cuda:
        out.append(("cuda-version", f"cuda-version={cuda}"))
    return out


def _pytorch_channel(matrix: Matrix, plan: PackagePlan) -> Optional[Tuple[List[str], List[str], str]]:
    """(specs, channels, why) from the pytorch channel, for releases published there."""
    info = matrix.pytorch.conda(plan.version) if plan.framework == "torch" else None
    if info is None or info.channel == "conda-forge":
        return None
    specs = [f"{'pytorch' if p.name == 'torch' else p.name}=={p.version}" for p in plan.pins]
    if plan.cuda:
        mm = ".".join(map(str, major_minor(plan.cuda)))
        if mm not in info.cuda_versions:
            return None
        specs.append(f"{info.cuda_package}={mm}")
    elif info.cpu_package:
        specs.append(info.cpu_package)
    why = (f"torch {plan.version} was published to the {info.channel} channel, with "
           + (f"{info.cuda_package}={'.'.join(map(str, major_minor(plan.cuda)))}" if plan.cuda else "its CPU build"))
    archs = dict(info.archs).get(".".join(map(str, major_minor(plan.cuda or "")))) if plan.cuda else None
    if archs:
        why += f"; that build has SASS for {' '.join(archs)} (pytorch.json conda archs)"
    return specs, list(info.channels if plan.cuda else (info.channel,)), why


def _conda(matrix: Matrix, plan: PackagePlan, removal: Tuple[str, ...], notes: Tuple[str, ...]) -> Steps:
    old = _pytorch_channel(matrix, plan)
    if old is not None:
        specs, channels, why = old
        flags = " ".join(f"-c {c}" for c in channels)
        return Steps(removal + (f"conda install {' '.join(_quote(s) for s in specs)} {flags}",), notes=notes + (why,))
    channel = _forge(matrix)
    specs = [spec for _, spec in conda_specs(plan)]
    return Steps(removal + (f"conda install -c {channel} {' '.join(_quote(s) for s in specs)}",),
                 notes=notes + _forge_note(plan))


def _pixi(matrix: Matrix, plan: PackagePlan, removal: Tuple[str, ...], notes: Tuple[str, ...]) -> Steps:
    specs = conda_specs(plan)
    lines: List[str] = []
    if plan.gpu:
        lines += ["[system-requirements]", f'cuda = "{major(plan.cuda or "")}"', ""]
    lines.append("[dependencies]")
    for name, spec in specs:
        lines.append(f"{name} = {_toml_spec(name, spec)}")
    first = ("add the [system-requirements] entry to pixi.toml first: without it pixi resolves CPU builds",) \
        if plan.gpu else ()
    command = f"pixi add {' '.join(_quote(s) for _, s in specs)}"
    return Steps(removal + (command,), files=(("pixi.toml", "\n".join(lines)),),
                 notes=notes + first + _forge_note(plan, channel=_forge(matrix)))


def _toml_spec(name: str, spec: str) -> str:
    """'pytorch=2.9.1=*cuda*' -> { version = "==2.9.1", build = "*cuda*" }; 'cupy=15' -> "15.*"."""
    rest = spec[len(name):]
    if rest.startswith("=="):
        return f'"{rest}"'
    parts = rest[1:].split("=")
    if len(parts) > 1:
        version = parts[0] if parts[0].endswith("*") else f"=={parts[0]}"
        return f'{{ version = "{version}", build = "{parts[1]}" }}'
    return f'"{parts[0]}.*"'


def _forge(matrix: Matrix) -> str:
    index = matrix.pytorch.conda_channel("conda-forge")
    return str(index.channel) if index is not None else "conda-forge"


def _forge_note(plan: PackagePlan, channel: str = "conda-forge") -> Tuple[str, ...]:
    return (f"{channel} builds its own packages; compat_data does not list them, so the solver picks a build the pins "
            "and cuda-version allow" + (" (it must carry kernels for the GPUs)" if plan.gpu else ""),)


def _quote(spec: str) -> str:
    return f'"{spec}"' if any(c in spec for c in "*<>[]") else spec


def steps_dict(steps: Steps) -> Dict[str, Any]:
    return {"commands": list(steps.commands), "files": {name: text for name, text in steps.files},
            "notes": list(steps.notes)}


# ---------------------------------------------------------------------- several packages, one solve


def combine(matrix: Matrix, plans: Sequence[Tuple[PackagePlan, Sequence[Installed]]], manager: str,
            index_url: Optional[str] = None) -> Optional[Steps]:
    """One command (one solve) installing every plan: pip and uv read each plan's index as an extra
    one (torch pinned to its build, '+cu126', so the solver cannot take another), conda and pixi get
    one set of conda-forge specs with one cuda-version. None when the plans cannot be one solve
    (a mirror given with --index-url, the pytorch channel of an old release, two CUDA majors under
    conda), and each plan keeps its own commands."""
    if len(plans) < 2:
        return None
    removal = uninstall_commands([i for _, gone in plans for i in gone], manager)
    gpu = [p for p, _ in plans if p.gpu]
    majors = {major(p.cuda or "") for p in gpu}
    if manager in ("pip", "uv"):
        if index_url:
            return None
        return Steps(removal + (_pip_together([p for p, _ in plans], manager),),
                     notes=("one command, so that one resolver sees every requirement: the torch build is pinned "
                            "with its local version, and the other packages come from PyPI",)
                     if any(p.mirror_variant for p, _ in plans) else ())
    if len(majors) > 1 or any(_pytorch_channel(matrix, p) is not None for p, _ in plans):
        return None
    specs: Dict[str, str] = {}
    for p, _ in plans:
        for name, spec in conda_specs(p):
            if name == "cuda-version" and name in specs and len(spec) <= len(specs[name]):
                continue  # the first exact one (torch's, planned first) holds; cuda-version=12 admits it
            specs[name] = spec
    if "cuda-version" in specs:  # last: conda reads it as one more constraint
        specs["cuda-version"] = specs.pop("cuda-version")
    forge = _forge(matrix)
    notes = _forge_note(gpu[0] if gpu else plans[0][0], channel=forge)
    if manager == "conda":
        return Steps(removal + (f"conda install -c {forge} {' '.join(_quote(s) for s in specs.values())}",),
                     notes=notes)
    lines: List[str] = []
    if gpu:
        lines += ["[system-requirements]", f'cuda = "{majors.pop()}"', ""]
    lines.append("[dependencies]")
    lines += [f"{name} = {_toml_spec(name, spec)}" for name, spec in specs.items()]
    first = ("add the [system-requirements] entry to pixi.toml first: without it pixi resolves CPU builds",) \
        if gpu else ()
    return Steps(removal + (f"pixi add {' '.join(_quote(s) for s in specs.values())}",),
                 files=(("pixi.toml", "\n".join(lines)),), notes=first + notes)


def _pip_together(plans: Sequence[PackagePlan], manager: str) -> str:
    requirements: List[str] = []
    extra: List[str] = []
    links: List[str] = []
    for p in plans:
        for pin in p.pins:
            req = pin.requirement
            if p.mirror_variant and pin.exact and pin.version and not pin.url and "+" not in pin.version:
                req = f"{req}+{p.mirror_variant}"  # the build of that index, which PyPI's same version is not
            if req not in requirements:
                requirements.append(req)
        if p.index_url and p.index_mode == "find-links":
            links.append(p.index_url)
        elif p.index_url and p.index_url not in extra:
            extra.append(p.index_url)
    tool = "uv pip" if manager == "uv" else "pip"
    quoted = [f'"{r}"' if any(c in r for c in "[]*<>") else r for r in requirements]
    flags = "".join(f" --extra-index-url {u}" for u in extra) + "".join(f" -f {u}" for u in links)
    return f"{tool} install {' '.join(quoted)}{flags}"


def for_interpreter(steps: Steps, interpreter: str) -> Steps:
    """The pip and uv commands of ``steps`` for one interpreter: 'PATH -m pip install ...',
    'uv pip install --python PATH ...' (a bare pip could be another Python's)."""
    path = shlex.quote(interpreter)
    out = []
    for command in steps.commands:
        if command.startswith("pip "):
            command = f"{path} -m {command}"
        elif command.startswith(("uv pip install ", "uv pip uninstall ")):
            verb = command.split()[2]
            command = f"uv pip {verb} --python {path} " + command[len(f"uv pip {verb} "):]
        out.append(command)
    return replace(steps, commands=tuple(out))
