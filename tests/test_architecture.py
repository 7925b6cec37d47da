"""The package's shape (docs/architecture.md, "The rooms"): no import cycles between modules, at
most ten modules at the top level, each room importing only the rooms its row of the table lists,
and only the integrations that wrap the API importing it. Imports are read with ``ast``, at module
and at function level; those under ``if TYPE_CHECKING:`` are for mypy and are left out."""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).resolve().parent.parent / "cudadoctor"

# Room -> the rooms it may import (docs/architecture.md). A room is a subpackage or a top-level module.
ALLOWED: Dict[str, Set[str]] = {
    "version": set(), "errors": set(), "record": set(),
    "model": {"version", "errors"},
    "host": {"model", "version", "errors", "probes"},  # probes: the recorder's command line only
    "matrix": {"model"},
    "diagnosis": {"matrix", "model", "render", "version"},
    "data": {"matrix", "host", "model", "version"},
    "planner": {"matrix", "model", "errors", "version"},
    "checks": {"matrix", "planner", "model", "diagnosis", "containers"},
    "containers": {"model"},  # readers of Dockerfiles, compose files and docker run lines
    "probes": {"host", "model", "version"},
    "smoke": {"model"},
    "reports": {"data", "smoke", "model", "errors", "version"},
    "render": {"reports", "planner", "host", "model", "version"},
    "fleet": {"reports", "render", "checks", "model", "errors", "version"},
    "oncall": {"api", "checks", "data", "diagnosis", "reports", "render", "host", "model", "errors", "version"},
    "api": {"checks", "containers", "data", "diagnosis", "errors", "host", "model", "oncall", "planner", "probes", "render", "reports",
            "smoke", "version"},
    "triage": {"api", "diagnosis", "oncall", "reports", "render", "model", "errors", "version"},  # run wraps the API
    "pytest_plugin": {"api", "checks", "diagnosis", "errors", "host", "model", "render", "reports", "data", "version"},
    "cli": {"api", "checks", "containers", "data", "diagnosis", "errors", "fleet", "host", "matrix", "model", "oncall", "planner",
            "render", "reports", "smoke", "triage", "version"},
    "__init__": {"api", "diagnosis", "errors", "oncall", "smoke", "version"},
    "__main__": {"cli"},
}
# The modules that wrap the API (and so may import it) besides the CLI.
WRAPPERS = {"cudadoctor.oncall.excepthook", "cudadoctor.oncall.run_diagnose", "cudadoctor.pytest_plugin",
            "cudadoctor.triage.run"}


def _modules() -> Dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _type_checking_nodes(tree: ast.AST) -> Set[int]:
    skip: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(x) for stmt in node.body for x in ast.walk(stmt))
    return skip


@functools.lru_cache(maxsize=None)
def _tree(name: str) -> ast.Module:
    """Module ``name``'s syntax tree, parsed once for all the tests here."""
    return ast.parse(MODULES[name].read_text(encoding="utf-8"))


def _imports(name: str) -> Set[str]:
    """The modules of ours that module ``name`` imports (``from a import b``: a.b when b is a module)."""
    path = MODULES[name]
    tree = _tree(name)
    skip = _type_checking_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: Set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


@functools.lru_cache(maxsize=None)
def graph() -> Dict[str, Set[str]]:
    """Module -> the modules of ours it imports; read when a test first asks, not at collection."""
    return {name: _imports(name) for name in MODULES}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_no_import_cycles() -> None:
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    cycles: List[List[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph()[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph()):
        if module not in index:
            visit(module)
    assert cycles == []


def test_at_most_ten_modules_at_the_top_level() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 10, top
    assert set(top) == {"__init__.py", "__main__.py", "api.py", "errors.py", "record.py", "version.py"}


def test_each_room_imports_only_the_rooms_below_it() -> None:
    wrong = []
    for module, imported in sorted(graph().items()):
        room = _room(module)
        for target in sorted(imported):
            other = _room(target)
            if other != room and other not in ALLOWED[room] and other not in ("__init__", "record"):
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_only_the_cli_and_the_integrations_import_the_api() -> None:
    importers = sorted(m for m, imported in graph().items() if "cudadoctor.api" in imported)
    assert [m for m in importers if not m.startswith("cudadoctor.cli") and m not in WRAPPERS
            and m != "cudadoctor"] == []


def test_the_smoke_suites_import_nothing_of_ours_outside_their_folder() -> None:
    for module, imported in graph().items():
        if module.startswith("cudadoctor.smoke.suites"):
            assert all(t.startswith("cudadoctor.smoke.suites") for t in imported), (module, imported)


def test_no_module_imports_a_private_name_of_another_room() -> None:
    wrong = []
    for module in MODULES:
        for node in ast.walk(_tree(module)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cudadoctor"):
                source_room = _room(node.module) if node.module in MODULES else None
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__") \
                            and f"{node.module}.{alias.name}" not in MODULES and source_room != _room(module):
                        wrong.append(f"{module}: {node.module}.{alias.name}")
    assert wrong == []
