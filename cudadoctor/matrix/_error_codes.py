"""The error-code vocabularies: every code of error_codes.json (generated from the CUDA libraries'
headers by tools/gen_error_codes.py) turned into a signature of its own, unless a record of
errors.json claims it under ``codes``. A code's meaning comes from the first family of
error_families.json whose ``names`` pattern matches it; its id is its name in kebab case
(``cudaErrorLaunchOutOfResources`` -> ``cuda-error-launch-out-of-resources``), one id for a
driver code and a runtime code that say the same (same value, same message).

Pure data building; finding codes in a text is :mod:`cudadoctor.diagnosis.vocabulary`'s job.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from cudadoctor.record import frozen

# What each library is called in a sentence.
LIBRARY_NAMES = {
    "cuda_driver": "the CUDA driver API", "cuda_runtime": "the CUDA runtime", "cublas": "cuBLAS", "cudnn": "cuDNN",
    "cufft": "cuFFT", "cusolver": "cuSOLVER", "cusparse": "cuSPARSE", "curand": "cuRAND", "nvrtc": "NVRTC",
    "nvjitlink": "nvJitLink", "nccl": "NCCL", "nvml": "NVML",
}


@frozen
class ErrorCode:
    """One code of one library, as its header declares it and its string function names it."""

    library: str
    name: str
    value: int
    messages: Tuple[str, ...]
    doc: str
    seen_in: Tuple[str, ...]

    @property
    def message(self) -> str:
        """The library's own message for it, else the header's sentence, else the name."""
        return self.messages[0] if self.messages else (self.doc or self.name)


@frozen
class Family:
    id: str
    libraries: Tuple[str, ...]
    names: "re.Pattern[str]"
    error: bool
    record: Mapping[str, Any]


def kebab(name: str) -> str:
    """'cudaErrorLaunchOutOfResources' -> 'cuda-error-launch-out-of-resources';
    'CUDA_ERROR_NO_DEVICE' -> 'cuda-error-no-device'; 'ncclInvalidUsage' -> 'nccl-invalid-usage'."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", name)
    return re.sub(r"[^a-z0-9]+", "-", spaced.lower()).strip("-")


def nvml_alias(name: str) -> Optional[str]:
    """pynvml's exception class for an NVML code: NVML_ERROR_LIB_RM_VERSION_MISMATCH ->
    NVMLError_LibRmVersionMismatch (nvidia-ml-py builds them so from the constants)."""
    if not name.startswith("NVML_ERROR_"):
        return None
    return "NVMLError_" + "".join(w.capitalize() for w in name[len("NVML_ERROR_"):].split("_"))


def read_codes(doc: Mapping[str, Any]) -> Tuple[ErrorCode, ...]:
    return tuple(ErrorCode(library=r["library"], name=r["name"], value=int(r["value"]),
                           messages=tuple(r.get("messages", ())), doc=r.get("doc", ""), seen_in=tuple(r.get("seen_in", ())))
                 for r in doc["records"])


def read_families(doc: Mapping[str, Any]) -> Tuple[Family, ...]:
    return tuple(Family(r["id"], tuple(r["library"]), re.compile(r["names"]), bool(r["error"]), r) for r in doc["records"])


def family_of(code: ErrorCode, families: Sequence[Family]) -> Optional[Family]:
    for fam in families:
        if code.library in fam.libraries and fam.names.search(code.name):
            return fam
    return None


def _fill(template: str, code: ErrorCode) -> str:
    doc = code.doc or code.message
    return (template.replace("{code}", code.name).replace("{value}", str(code.value))
            .replace("{message}", code.message.rstrip(".")).replace("{doc}", doc)
            .replace("{library}", LIBRARY_NAMES.get(code.library, code.library)))


def generated(codes: Sequence[ErrorCode], families: Sequence[Family], claimed: Mapping[str, str]
              ) -> List[Dict[str, Any]]:
    """The signature records (as errors.json would write them, plus ``codes``) of every error code
    no errors.json record claims: one a code, one for a driver code and a runtime code that share
    their value and message. A code no family takes is left out here (the invariants name it)."""
    pending: Dict[str, List[ErrorCode]] = {}
    fams: Dict[str, Family] = {}
    cuda_pairs: Dict[Tuple[int, str, str], str] = {}
    for code in codes:
        if code.name in claimed:
            continue
        fam = family_of(code, families)
        if fam is None or not fam.error:
            continue
        key = kebab(code.name)
        if code.library in ("cuda_driver", "cuda_runtime") and code.messages:
            pair = (code.value, code.messages[0], fam.id)
            key = cuda_pairs.setdefault(pair, key) if code.library == "cuda_runtime" else cuda_pairs.get(pair, key)
        pending.setdefault(key, []).append(code)
        fams[key] = fam
    # a runtime code read after its driver twin: join them under the runtime name's id
    for (value, message, fam_id), key in list(cuda_pairs.items()):
        for other, members in list(pending.items()):
            if other != key and len(members) == 1 and members[0].library == "cuda_driver" \
                    and members[0].value == value and members[0].messages[:1] == (message,) and fams[other].id == fam_id:
                pending[key].extend(pending.pop(other))
                fams.pop(other)
    out = []
    for key, members in sorted(pending.items()):
        fam = fams[key]
        r = fam.record
        main = next((c for c in members if c.library == "cuda_runtime"), members[0])
        sources = sorted({s for c in members for s in c.seen_in})
        out.append({
            "id": key, "codes": [c.name for c in members], "specificity": r["specificity"],
            "example": f"{main.name}: {main.message}", "frameworks": ["any"], "categories": list(r["categories"]),
            "explanation": _fill(r["explanation"], main), "verify": list(r["verify"]), "seen_in": list(r["seen_in"]),
            "source": f"{r['source']} (family {fam.id} of error_families.json); read from {', '.join(sources[:4])}",
            "confidence": r["confidence"], **({"other": r["other"]} if r.get("other") else {}),
            **({"container_first": r["container_first"]} if r.get("container_first") else {}),
        })
    return out
