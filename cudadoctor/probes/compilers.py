"""Host compilers: nvcc and framework extension builds depend on their versions."""

from __future__ import annotations

from typing import List, Tuple

from cudadoctor.model import Compiler, ErrorKind, ProbeError
from cudadoctor.model.parsers import parse_compiler_version
from cudadoctor.probes.context import ProbeOutput, command_kind
from cudadoctor.probes.context import Context

COMPILERS = ("gcc", "g++", "clang", "clang++")


def compilers_on_path(ctx: Context) -> List[Tuple[str, str]]:
    """(name, path) of each compiler found: those of COMPILERS on PATH, and $CC, $CXX and
    $CUDAHOSTCXX where set. Looked up once per stage (the early start asks too)."""
    return ctx.once("compilers", lambda: _on_path(ctx))


def _on_path(ctx: Context) -> List[Tuple[str, str]]:
    env = ctx.env()
    names: List[str] = list(COMPILERS)
    for var in ("CC", "CXX", "CUDAHOSTCXX"):
        value = env.get(var, "").split(" ")[0]
        if value and value not in names:
            names.append(value)
    return [(name, path) for name, path in ((n, ctx.host.which(n)) for n in names) if path is not None]


def version_commands(located: List[Tuple[str, str]]) -> List[Tuple[str, ...]]:
    return [(path, "--version") for _, path in located]


def probe_compilers(ctx: Context) -> ProbeOutput:
    """Runs ``NAME --version`` for each compiler on PATH (and for $CC/$CXX when set).
    A compiler that is absent is simply not listed."""
    found: List[Compiler] = []
    errors: List[ProbeError] = []
    located = compilers_on_path(ctx)
    results = ctx.run_many(version_commands(located))
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
