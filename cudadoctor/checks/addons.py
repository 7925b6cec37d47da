"""Packages built against one torch release: Triton (``torch.compile``'s compiler), flash-attn,
xformers and vLLM. Each is read from its dist-info (probes/addons.py); the pins and minimum
compute capabilities come from ``triton.json``, ``flash_attn.json``, ``xformers.json`` and
``vllm.json`` (matrix.addons), the pins of the installed METADATA winning over the table."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

from cudadoctor.checks.base import Check, ref
from cudadoctor.checks.builds_facts import GpuFact, below, finding, gpu_facts
from cudadoctor.matrix.versions import major, major_minor
from cudadoctor.model import Category, Finding, FrameworkBuild, Severity, Snapshot
from cudadoctor.matrix.addons import NAMES as NAMES  # what probes/addons.py reads
from cudadoctor.model.shell import quote

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix


def spec_allows(spec: str, version: str) -> Optional[bool]:
    """matrix.addons.spec_allows, imported when a check needs it: the addons table module is not
    loaded on a machine without the extensions."""
    from cudadoctor.matrix.addons import spec_allows as allows

    return allows(spec, version)


E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
OTHER_TORCH = "extension-built-for-other-torch"
GPU_UNSUPPORTED = "extension-gpu-unsupported"


def _gpus(group: Sequence[GpuFact]) -> str:
    return ", ".join(g.label for g in group)


def _base(version: Optional[str]) -> str:
    return (version or "").split("+", 1)[0]


# ---------------------------------------------------------------------------- Triton


def check_triton(snap: Snapshot, matrix: "Matrix") -> List[Finding]:
    """The installed triton is the one torch pins; the GPUs are ones torch.compile (through Triton)
    supports."""
    torch, triton = snap.framework("torch"), snap.framework("triton")
    if torch is None or torch.variant != "cuda" or not torch.version:
        return []
    out: List[Finding] = []
    data = matrix.addons
    pin = data.triton_pin(torch.version)
    if triton is not None and triton.version and pin is not None and spec_allows(pin.spec, triton.version) is False:
        out.append(finding(
            "triton-version-mismatch", W, Category.COMPANION_VERSION_MISMATCH,
            f"triton {triton.version} is not the triton torch {torch.version} is built for (triton{pin.spec})",
            why=(f"torch {_base(torch.version)}'s wheels require triton{pin.spec}; torch.compile and the Triton "
                 f"kernels torch generates use the installed triton {triton.version}, whose compiler API differs: "
                 "expect ImportError or a crash inside torch._inductor when compiling."),
            fix=f"Install the triton this torch is built for: triton{pin.spec}.",
            commands=[f"pip install 'triton{pin.spec}'"],
            evidence=["frameworks.triton.version", "frameworks.torch.version"],
            source=[ref("triton.json", pin.torch)],
        ))
    facts = gpu_facts(snap, matrix)
    gate = data.inductor_min_compute_capability
    if triton is None or not facts:
        return out
    too_old = [g for g in facts if gate and below(g.cc, gate)]
    if too_old:
        out.append(finding(
            "triton-gpu-too-old", W, Category.ARCH_UNSUPPORTED,
            f"torch.compile cannot compile for {_gpus(too_old)}: Triton needs compute capability {gate} or newer",
            why=(f"torch.compile's inductor backend generates Triton kernels and refuses GPUs below compute "
                 f"capability {gate}: 'Found {too_old[0].name} which is too old to be supported by the triton GPU "
                 f"compiler' (GPUTooOldForTriton). Eager torch still runs on it."),
            fix="Run without torch.compile on this GPU (or torch.compile(backend='eager'/'aot_eager')), or use a newer GPU.",
            evidence=["gpus", "frameworks.triton.version"],
            source=["triton.json#inductor_min_compute_capability"],
        ))
    release = data.triton_release(triton.version or "")
    if release is not None:
        unsupported = [g for g in facts if g not in too_old and below(g.cc, release.min_compute_capability)]
        if unsupported:
            out.append(finding(
                "triton-gpu-too-old", INFO, Category.ARCH_UNSUPPORTED,
                f"{_gpus(unsupported)} is below what triton {triton.version} supports "
                f"(compute capability {release.min_compute_capability}+)",
                why=(f"From Triton {release.first} on, NVIDIA GPUs from compute capability "
                     f"{release.min_compute_capability} are supported; older ones get slower code without tensor "
                     "cores, and kernels that need them fail to compile. torch.compile may run, slower or with "
                     "compile errors in some kernels."),
                evidence=["gpus", "frameworks.triton.version"],
                source=[ref("triton.json", release.first)],
            ))
    return out


# ---------------------------------------------------------------------------- flash-attn, xformers, vLLM


def _torch_pin(matrix: "Matrix", b: FrameworkBuild) -> Optional[Tuple[str, str]]:
    """(spec, where it was read) of the torch an extension requires: its METADATA, else the table."""
    if b.details.get("requires_torch"):
        return b.details["requires_torch"], f"{b.distribution or b.name} METADATA"
    row = {"xformers": matrix.addons.xformers_torch, "vllm": matrix.addons.vllm_torch}.get(b.name)
    pin = row(b.version or "") if row else None
    return (pin.torch, f"{b.name}.json") if pin else None


def _other_torch(snap: Snapshot, matrix: "Matrix", b: FrameworkBuild, torch: FrameworkBuild) -> Optional[Finding]:
    if b.name == "flash-attn" and b.details.get("built_for_torch"):
        built, have = b.details["built_for_torch"], ".".join(map(str, major_minor(torch.version or "")))
        problems = []
        if built != have:
            problems.append(f"torch {built} (torch {have} is installed)")
        if b.cuda and torch.cuda and major(b.cuda) != major(torch.cuda):
            problems.append(f"CUDA {b.cuda} (torch uses CUDA {torch.cuda})")
        if not problems:
            return None
        what = " and ".join(problems)
        return finding(
            OTHER_TORCH, E, Category.COMPANION_VERSION_MISMATCH,
            f"flash-attn {b.version} was built for {what}",
            why=(f"Its wheel names its build in its version ({b.version.split('+', 1)[1] if b.version else ''}); a "
                 "compiled torch extension only loads under the torch (and CUDA major) it was built against: "
                 "'ImportError: ... flash_attn_2_cuda ... undefined symbol'."),
            fix=("Reinstall flash-attn so pip builds (or picks) the wheel for this torch; or install the torch it "
                 "was built for."),
            commands=["pip uninstall -y flash-attn", "pip install flash-attn --no-build-isolation"],
            evidence=["frameworks.flash-attn.version", "frameworks.torch.version", "frameworks.torch.cuda"],
            source=["flash_attn.json#local_version_scheme"],
        )
    pin = _torch_pin(matrix, b)
    if pin is None or spec_allows(pin[0], torch.version or "") is not False:
        return None
    spec, origin = pin
    return finding(
        OTHER_TORCH, E, Category.COMPANION_VERSION_MISMATCH,
        f"{b.name} {b.version} is built for torch{spec}; torch {torch.version} is installed",
        why=(f"{b.name} {b.version} requires torch{spec} ({origin}); its compiled kernels only load under that "
             f"torch. With torch {torch.version} they fail to import or {b.name} falls back and warns "
             f"('{b.name} was built for: PyTorch ... you have PyTorch ...')."),
        fix=f"Install the {b.name} release built for torch {_base(torch.version)}, or torch{spec}.",
        commands=[f"pip install {quote(b.name)} {quote(f'torch=={_base(torch.version)}')}" if b.name == "xformers"
                  else f"pip install {quote(f'torch{spec}')}"],
        evidence=[f"frameworks.{b.name}.version", "frameworks.torch.version"],
        source=[ref(f"{b.name}.json", b.version)] if origin.endswith(".json") else [],
    )


def _gpu_floor(matrix: "Matrix", b: FrameworkBuild) -> Optional[Tuple[str, Optional[str], str]]:
    """(minimum, maximum, source) compute capability of the extension's kernels."""
    if b.name == "flash-attn":
        package = (b.distribution or "flash-attn").split("==")[0]
        gen = matrix.addons.flash_attn_generation(package, b.version or "")
        return (gen.min_compute_capability, gen.max_compute_capability, ref("flash_attn.json", f"{gen.package}@{gen.first}")
                ) if gen else None
    if b.name == "vllm":
        fact = matrix.addons.vllm_min_compute_capability
        return (fact.value, None, "vllm.json#min_compute_capability") if fact else None
    return None


def check_extensions(snap: Snapshot, matrix: "Matrix") -> List[Finding]:
    torch = snap.framework("torch")
    out: List[Finding] = []
    facts = gpu_facts(snap, matrix)
    for b in snap.frameworks or ():
        if b.name not in ("flash-attn", "xformers", "vllm"):
            continue
        if torch is not None and torch.version:
            found = _other_torch(snap, matrix, b, torch)
            if found is not None:
                out.append(found)
        floor = _gpu_floor(matrix, b)
        if floor is None or not facts:
            continue
        low, high, source = floor
        bad = [g for g in facts if below(g.cc, low) or (high is not None and g.cc_tuple > tuple(map(int, high.split("."))))]
        if bad:
            span = f"compute capability {low}" + (f" to {high}" if high and high != low else " only" if high else " or newer")
            out.append(finding(
                GPU_UNSUPPORTED, E, Category.ARCH_UNSUPPORTED,
                f"{b.name} {b.version} does not run on {_gpus(bad)}: it needs {span}",
                why=(f"{b.name}'s CUDA kernels are built for {span}; on {_gpus(bad)} they fail "
                     f"('{'FlashAttention only supports Ampere GPUs or newer' if b.name == 'flash-attn' else 'no kernel image is available for execution on the device'}')."),
                fix=(f"Use {b.name} on a GPU with {span}, or run without it (e.g. attn_implementation='sdpa' "
                     "instead of flash_attention_2)."),
                evidence=["gpus", f"frameworks.{b.name}.version"],
                source=[source],
            ))
    return out


CHECKS = (
    Check("triton", check_triton, ("triton-version-mismatch", "triton-gpu-too-old"), 3,
          "triton is the one torch pins, on GPUs torch.compile supports"),
    Check("torch-extensions", check_extensions, (OTHER_TORCH, GPU_UNSUPPORTED), 3,
          "flash-attn, xformers and vLLM match the installed torch and the GPUs"),
)
