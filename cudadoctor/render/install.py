"""How ``cudadoctor install`` prints a plan: the commands first, then why; or one JSON document.

The text is plain (no colour) so that it can be pasted and compared with golden files.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence

import click

from cudadoctor.version import __version__
from cudadoctor.model.printable import printable
from cudadoctor.planner.torch import Reason
from cudadoctor.planner.install import InstallResult, PackageResult
from cudadoctor.planner.managers import steps_dict
from cudadoctor.planner.plan import DriverFit, NoFit, PackagePlan

JSON_SCHEMA_VERSION = 1


def _echo(line: str = "") -> None:
    click.echo(printable(line))  # names and notes come from the data, which a bundle from a server can change


def _reason(r: Reason) -> str:
    return f"  - {r.text}" + (f"  [{', '.join(r.source)}]" if r.source else "")


def print_text(result: InstallResult, where: str, verified: Optional[Mapping[str, Any]], data_version: str) -> None:
    for steps in ([result.together] if result.together else [r.steps for r in result.results]):
        if steps is None:  # the commands first: what a user pastes
            continue
        for name, text in steps.files:
            _echo(f"# {name}:")
            for line in text.splitlines():
                _echo(line)
            _echo()
        for command in steps.commands:
            _echo(command)
    if result.commands:
        _echo()
    _echo(f"plan for {where}: {result.target.describe()} · {result.manager} · data {data_version}")
    for note in result.target.notes:
        _echo(f"  ! {note}")
    for r in result.results:
        _echo()
        _package_text(r)
    if result.together is not None and result.together.notes:
        _echo()
        _echo("together")
        for note in result.together.notes:
            _echo(f"  - {note}")
    for name, v in (verified or {}).items():
        _echo()
        _verify_text(name, v)


def _package_text(r: PackageResult) -> None:
    if r.kept is not None:
        _echo(f"{r.name}: nothing to install")
        _echo(f"  - {r.kept}")
        _echo("  - --upgrade plans the newest build that fits (or --version for another release)")
        return
    if r.plan is not None:
        _echo(f"{r.plan.label}: why")
        for reason in r.plan.reasons:
            _echo(_reason(reason))
        notes = list(r.plan.notes) + list(r.steps.notes if r.steps else ())
        if notes:
            _echo("notes")
            for note in notes:
                _echo(f"  - {note}")
        if r.gpu_build is not None:
            _gpu_text(r.gpu_build)
        return
    assert r.nofit is not None
    _echo(f"nothing fits: {r.name}")
    for reason in r.nofit.reasons:
        _echo(_reason(reason))
    would = r.nofit.what_would()
    if would:
        _echo("what would")
        for line in would:
            _echo(f"  - {line}")
    if r.gpu_build is not None:
        _gpu_text(r.gpu_build)


def _gpu_text(gpu: Any) -> None:
    if isinstance(gpu, PackagePlan):
        _echo(f"a GPU build would need: {gpu.label}")
        need = _needs(gpu.driver)
        if need:
            _echo(f"  - {need}")
        for reason in gpu.reasons:
            if not reason.text.startswith("the driver is unknown"):
                _echo(_reason(reason))
    elif isinstance(gpu, NoFit):
        _echo("a GPU build: none fits")
        for reason in gpu.reasons:
            _echo(_reason(reason))


def _needs(fit: Optional[DriverFit]) -> str:
    if fit is None:
        return ""
    text = f"an NVIDIA driver >= {fit.required}" if fit.required else "an NVIDIA driver"
    if fit.floor and fit.floor != fit.required:
        text += f" (>= {fit.floor} through minor-version compatibility)"
    return text + f" for CUDA {fit.cuda}" + (f"  [{', '.join(fit.source)}]" if fit.source else "")


def _verify_text(name: str, v: Any) -> None:
    if not v.packages and v.error is None:
        _echo(f"not verified: {name}")
    elif v.ok:
        found = ", ".join(f"{p.name}=={p.version}" for p in v.packages)
        _echo(f"verified: {v.index_url} serves {found} for {v.python} {v.platform}")
    else:
        _echo(f"verify failed for {name} at {v.index_url} ({v.python} {v.platform}):")
        for problem in v.problems:
            _echo(f"  - {problem}")
    for line in v.not_checked:
        _echo(f"  not checked: {line}")


# ---------------------------------------------------------------------- JSON


def _reasons(reasons: Sequence[Reason]) -> List[Dict[str, Any]]:
    return [{"text": r.text, "source": list(r.source)} for r in reasons]


def _driver(fit: Optional[DriverFit]) -> Optional[Dict[str, Any]]:
    if fit is None:
        return None
    return {"rule": fit.kind, "cuda": fit.cuda, "min_driver": fit.required, "floor_driver": fit.floor}


def plan_dict(plan: PackagePlan) -> Dict[str, Any]:
    return {
        "label": plan.label, "framework": plan.framework, "version": plan.version, "build": plan.build,
        "cuda": plan.cuda, "pins": [p.requirement for p in plan.pins], "exact": all(p.exact for p in plan.pins),
        "index_url": plan.index_url, "index_mode": plan.index_mode if plan.index_url else None,
        "driver": _driver(plan.driver), "reasons": _reasons(plan.reasons), "notes": list(plan.notes),
        "sources": list(plan.sources),
    }


def nofit_dict(nofit: NoFit) -> Dict[str, Any]:
    return {"reasons": _reasons(nofit.reasons), "driver": nofit.driver, "with_driver": nofit.with_driver,
            "python": nofit.python, "with_python": nofit.with_python, "newest_build": nofit.newest_build,
            "what_would": nofit.what_would()}


def _result_dict(r: PackageResult) -> Dict[str, Any]:
    gpu: Optional[Dict[str, Any]] = None
    if isinstance(r.gpu_build, PackagePlan):
        gpu = plan_dict(r.gpu_build)
    elif isinstance(r.gpu_build, NoFit):
        gpu = {"nothing_fits": nofit_dict(r.gpu_build)}
    return {
        "package": r.name, "packages": list(r.packages),
        "status": "kept" if r.kept else "plan" if r.plan else "nothing_fits", "kept": r.kept,
        "plan": plan_dict(r.plan) if r.plan else None, "nothing_fits": nofit_dict(r.nofit) if r.nofit else None,
        "uninstall": [{"name": i.name, "version": i.version, "installer": i.installer} for i in r.uninstall],
        "steps": steps_dict(r.steps) if r.steps else None, "gpu_build": gpu,
    }


def _verify_dict(v: Any) -> Dict[str, Any]:
    return {"ok": v.ok, "index_url": v.index_url, "python": v.python, "platform": v.platform, "error": v.error,
            "not_checked": list(v.not_checked), "packages": [{"name": p.name, "version": p.version, "status": p.status.value, "reason": p.reason,
                          "wheel": p.wheel.filename if p.wheel else None} for p in v.packages]}


def result_dict(result: InstallResult, where: str, verified: Optional[Mapping[str, Any]], data_version: str) -> Dict[str, Any]:
    t = result.target
    return {
        "schema_version": JSON_SCHEMA_VERSION, "tool_version": __version__, "data_version": data_version,
        "target": {
            "for": where, "os": t.os, "platform": t.platform, "wsl": t.wsl, "driver": t.driver, "python": t.python,
            "compute_capabilities": list(t.compute_capabilities), "gpus": list(t.gpu_names),
            "gpu_build": t.gpu_build, "cpu_because": t.cpu_because or None, "conda": t.conda, "notes": list(t.notes),
            "installed": [{"name": i.name, "version": i.version, "variant": i.variant, "cuda": i.cuda,
                           "installer": i.installer} for i in t.installed],
        },
        "manager": result.manager, "index_url": result.index_url, "ok": result.ok, "commands": result.commands,
        "results": [_result_dict(r) for r in result.results],
        "verify": {k: _verify_dict(v) for k, v in verified.items()} if verified is not None else None,
    }


def print_json(result: InstallResult, where: str, verified: Optional[Mapping[str, Any]], data_version: str) -> None:
    json.dump(result_dict(result, where, verified, data_version), sys.stdout, indent=2)
    sys.stdout.write("\n")
