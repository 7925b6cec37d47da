"""Host compilers: nvcc and framework extension builds depend on their versions."""

from __future__ import annotations

from typing import List

from cudadoctor.model import Compiler, ErrorKind, ProbeError
from cudadoctor.model.parsers import parse_compiler_version
from cudadoctor.probes.context import ProbeOutput, command_kind
from cudadoctor.probes.context import Context

COMPILERS = ("gcc", "g++", "clang", "clang++")


def probe_compilers(ctx: Context) -> ProbeOutput:
    """Runs ``NAME --version`` for each compiler on PATH (and for $CC/$CXX when set).
    A compiler that is absent is simply not listed."""
    env = ctx.env()
    names: List[str] = list(COMPILERS)
    for var in ("CC", "CXX", "CUDAHOSTCXX"):
        value = env.get(var, "").split(" ")[0]
        if value and value not in names:
            names.append(value)
    found: List[Compiler] = []
    errors: List[ProbeError] = []
    located = [(name, path) for name, path in ((n, ctx.host.which(n)) for n in names) if path is not None]
    results = ctx.run_many([(path, "--version") for _, path in located])
    for (name, path), result in zip(located, results):
        if not result.ok:
            errors.append(ProbeError("compilers", command_kind(result.error), result.describe()))
            found.append(Compiler(name=name, path=path))
            continue
        version = parse_compiler_version(result.stdout)
        if version is None:
            errors.append(ProbeError("compilers", ErrorKind.BAD_OUTPUT, f"{path} --version printed no version"))
        found.append(Compiler(name=name, version=version, path=path))
    return ProbeOutput({"compilers": tuple(found)}, errors)
