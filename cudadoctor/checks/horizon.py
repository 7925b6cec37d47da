"""The data's horizon: a release, toolkit or driver branch newer than the compatibility data
knows (torch, TensorFlow, JAX, CuPy, ONNX Runtime; the CUDA toolkit; the driver branch). The checks judge what the data holds; past its end they would judge by guesswork, so each
such fact is said, with what was assumed and how to get newer data (shared/DESIGN.md: "A release,
GPU or driver newer than the data knows is said, never passed silently"). A GPU the data does not
know is ``gpu-not-in-data`` (checks/access.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

from cudadoctor.checks.base import Check, driver_version, finding
from cudadoctor.checks.builds_facts import build_version
from cudadoctor.matrix.versions import vkey
from cudadoctor.model import Category, Finding, Severity, Snapshot

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix

CODE = "newer-than-data"
UPDATE = "cudadoctor data update"


# the frameworks whose tables give a release series: (snapshot name, shown name, what the checks assumed)
_SERIES = (
    ("tensorflow", "tensorflow", "Its tested CUDA and cuDNN and its [and-cuda] pins are not in the data: they are "
                                 "assumed to be those of the newest release the data knows."),
    ("jax", "jax", "Its CUDA plugins' CUDA, cuDNN and NCCL floors and its Python versions are assumed to be those of "
                   "the newest series the data knows."),
    ("cupy", "CuPy", "The CUDA versions and GPUs its wheels support are assumed to be those of the newest major the "
                     "data knows."),
    ("onnxruntime", "onnxruntime", "The CUDA and cuDNN its GPU build needs are assumed to be those of the newest "
                                   "series the data knows."),
)


def check_horizon(snap: Snapshot, matrix: Matrix) -> List[Finding]:
    found = [_torch(snap, matrix)] + [_series(snap, matrix, *s) for s in _SERIES]
    found += [_toolkit(snap, matrix), _driver(snap, matrix)]
    return [f for f in found if f is not None]


def _note(what: str, newest: str, assumed: str, evidence: str) -> Finding:
    return finding(
        CODE, Severity.INFO, Category.OTHER,
        f"{what} is newer than the compatibility data knows",
        why=f"The data knows up to {newest}. {assumed}",
        fix="Get newer compatibility data; where none knows it yet, treat the verdicts on it as unchecked.",
        commands=[UPDATE],
        evidence=[evidence],
    )


def _torch(snap: Snapshot, matrix: Matrix) -> Optional[Finding]:
    build = next((b for b in snap.frameworks or () if b.name == "torch"), None)
    version = build_version(build) if build else None
    releases = matrix.pytorch.releases
    if not version or not releases or matrix.pytorch.release(version) is not None:
        return None
    base = version.split("+")[0]
    newest = max(releases, key=lambda r: vkey(r.version)).version
    if not vkey(base) or vkey(base) <= vkey(newest) or any(c.isalpha() for c in base):
        return None  # older or a pre-release: not past the horizon
    return _note(f"torch {version}", f"torch {newest}",
                 "Its wheels' CUDA builds and GPU architectures are not in the data: the checks of the build "
                 "against the GPU and the driver did not judge it.", "frameworks.torch.version")


def _series(snap: Snapshot, matrix: Matrix, name: str, shown: str, assumed: str) -> Optional[Finding]:
    """A release newer than the series the framework's table reaches ('0.13.0' past jax '0.12')."""
    build = next((b for b in snap.frameworks or () if b.name == name and b.version), None)
    if build is None or not build.version:
        return None  # (before the table: a machine without the framework does not load it)
    newest = matrix.ecosystem.horizon(name)
    if not newest:
        return None
    base = build.version.split("+")[0]
    depth = len(vkey(newest))
    if not vkey(base) or vkey(base)[:depth] <= vkey(newest) or any(c.isalpha() for c in base):
        return None  # known, older, or a pre-release
    dist = (build.distribution or "").split("==")[0].strip()  # cupy-cuda13x, onnxruntime-gpu
    return _note(f"{dist or shown} {build.version}", f"{shown} {newest}" + (".x" if depth < 3 else ""), assumed,
                 f"frameworks.{name}.version")


def _toolkit(snap: Snapshot, matrix: Matrix) -> Optional[Finding]:
    tk = snap.active_toolkit
    toolkits = matrix.cuda.toolkits
    if tk is None or not tk.version or not toolkits:
        return None
    newest = max(toolkits, key=lambda t: vkey(t.cuda)).cuda
    known_minor = vkey(newest)[:2]
    if vkey(tk.version)[:2] <= known_minor:
        return None
    return _note(f"the CUDA toolkit {tk.version}", f"CUDA {newest}",
                 "Its minimum driver and the GPU architectures its nvcc builds for are assumed to be those of "
                 f"CUDA {'.'.join(map(str, known_minor))}.", "toolkits")


def _driver(snap: Snapshot, matrix: Matrix) -> Optional[Finding]:
    version = driver_version(snap)
    branches = matrix.cuda.branches
    number = vkey(version)[0] if version and vkey(version) else None
    if number is None or not branches:
        return None
    newest = max(branches, key=lambda b: b.major)
    if number <= newest.major:
        return None
    return _note(f"driver {version} (branch R{number})", f"branch {newest.branch}",
                 f"It is assumed to run at least what {newest.branch} runs (CUDA {newest.max_cuda}) and to support "
                 "the same GPUs.", "driver.driver_version")


CHECKS = (
    Check("data-horizon", check_horizon, (CODE,), 3,
          "every release, toolkit and driver branch is one the data knows"),
)
