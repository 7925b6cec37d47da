"""What the CUDA wheels of TensorFlow, JAX, CuPy, ONNX Runtime and TensorRT carry
(``framework_archs.json``): per release range and CUDA major, the exact CUDA the build is made
with, the GPU architectures it has SASS for and those it has only PTX for, read from the wheels'
own binaries (``cuobjdump --list-elf/--list-ptx``) or the project's build flags; and the facts of
frameworks that compile kernels at run time with a toolkit of their own (XLA's ptxas, NVRTC), which
cannot target a GPU that toolkit does not know."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple

from cudadoctor.record import frozen
from cudadoctor.matrix._ecocommon import Checker, Fact, facts_of, find_fact, in_range, prov, strs
from cudadoctor.matrix.archs import parse_compute_capability
from cudadoctor.matrix.versions import vkey

__all__ = ["TABLES", "BuildArchs", "FrameworkArchData", "build", "invariants"]

TABLES = ("framework_archs.json",)
FILE = TABLES[0]
FRAMEWORKS = ("tensorflow", "jax", "cupy", "onnxruntime-gpu", "tensorrt")


@frozen
class BuildArchs:
    framework: str  # tensorflow | jax | cupy | onnxruntime-gpu | tensorrt
    distribution: str  # the wheel read: tensorflow, jax-cuda12-pjrt, cupy-cuda12x, onnxruntime-gpu
    first: str
    last: Optional[str]
    cuda_major: int
    cuda: Optional[str]  # the CUDA the build is made with ('12.5'); None: not known
    sass: Tuple[str, ...]  # compute capabilities with SASS ('8.0')
    ptx: Tuple[str, ...]  # compute capabilities with PTX ('9.0'; '9.0a': arch-specific, JIT for 9.0 only)
    source: str
    confidence: str
    note: Optional[str] = None

    def contains(self, version: str) -> bool:
        return in_range(version, self.first, self.last)

    @property
    def sass_targets(self) -> Tuple[str, ...]:
        """As archs.support_of reads them: 'sm_80'."""
        return tuple(_sm(c) for c in self.sass)

    @property
    def ptx_targets(self) -> Tuple[str, ...]:
        return tuple(_sm(c) for c in self.ptx)

    def describe(self) -> str:
        """'SASS for sm_60 sm_70 sm_80 sm_89 and PTX for compute_90'."""
        return (f"SASS for {' '.join(self.sass_targets) or 'none'} and PTX for "
                f"{' '.join('compute_' + t[3:] for t in self.ptx_targets) or 'none'}")


def _sm(cc: str) -> str:
    """'9.0' -> 'sm_90'; '9.0a' -> 'sm_90a' (arch-specific: that compute capability only)."""
    suffix = cc[-1] if cc[-1:] in ("a", "f") else ""
    parsed = parse_compute_capability(cc[:-1] if suffix else cc)
    return f"sm_{parsed[0]}{parsed[1]}{suffix}" if parsed else cc


@frozen
class FrameworkArchData:
    builds: Tuple[BuildArchs, ...]
    facts: Tuple[Fact, ...]

    def lookup(self, framework: str, version: str, cuda_major: Optional[int]) -> Optional[BuildArchs]:
        """The record of ``framework`` ``version`` ('2.21.0', or a series '0.12') for that CUDA major."""
        for b in self.builds:
            if b.framework != framework or (cuda_major is not None and b.cuda_major != cuda_major):
                continue
            if b.contains(version) or (len(vkey(version)) < 3 and (b.contains(version + ".0") or
                                                                    in_range(b.first, version, version))):
                return b
        return None

    def jit_toolkit(self, framework: str) -> Optional[Fact]:
        """The fact saying ``framework`` compiles kernels at run time with its own CUDA toolkit."""
        return find_fact(self.facts, f"{framework.replace('-', '_')}_compiles_with_own_toolkit")


def build(docs: Mapping[str, Mapping[str, Any]]) -> FrameworkArchData:
    doc = docs[FILE]
    builds = tuple(
        BuildArchs(framework=r["framework"], distribution=r["distribution"], first=r["first"], last=r["last"],
                   cuda_major=r["cuda_major"], cuda=r["cuda"], sass=strs(r["sass"]), ptx=strs(r["ptx"]), **prov(r))
        for r in doc["records"]
    )
    return FrameworkArchData(builds, facts_of(doc))


def invariants(data: FrameworkArchData, matrix: Any) -> List[str]:
    """Records sorted by framework, CUDA major and first release; ranges of one framework and CUDA
    major do not overlap; the CUDA a build is made with is of its major and a release in
    cuda_toolkits.json; compute capabilities sorted."""
    c = Checker(FILE, matrix)
    keys = [(FRAMEWORKS.index(b.framework) if b.framework in FRAMEWORKS else 99, b.cuda_major, vkey(b.first))
            for b in data.builds]
    if keys != sorted(keys):
        c.add("records", "not sorted by framework, CUDA major and first release")
    for i, b in enumerate(data.builds):
        where = f"{b.framework} {b.first} (CUDA {b.cuda_major})"
        if b.framework not in FRAMEWORKS:
            c.add(where, f"framework {b.framework} is not one of {', '.join(FRAMEWORKS)}")
        if b.cuda is not None:
            if vkey(b.cuda)[:1] != (b.cuda_major,):
                c.add(where, f"CUDA {b.cuda} is not of CUDA major {b.cuda_major}")
            c.cuda(where, b.cuda)
        for name, ccs in (("sass", b.sass), ("ptx", b.ptx)):
            parsed = [parse_compute_capability(x.rstrip("af")) for x in ccs]
            if None in parsed or parsed != sorted(set(p for p in parsed if p)):
                c.add(where, f"{name} is not a sorted list of compute capabilities")
        later = [x for x in data.builds[i + 1:] if x.framework == b.framework and x.cuda_major == b.cuda_major]
        if later and b.last is not None and vkey(later[0].first) <= vkey(b.last):
            c.add(where, f"overlaps {later[0].first}")
    c.facts(data.facts, ())
    return c.problems
