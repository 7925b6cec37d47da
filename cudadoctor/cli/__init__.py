"""The ``cudadoctor`` command: a small click group, one module per command, one error handler."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~3 ms to import, a sixth of `cudadoctor run`'s budget
    from typing import List, NoReturn, Optional


def version_line() -> str:
    from cudadoctor.cli import _version

    return _version.line()


def _version_out(line: str) -> int:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()  # a full disk says so here, inside the handler
    return 0


def main(argv: Optional[List[str]] = None, process: bool = False) -> NoReturn:
    """The command. ``process``: this is the whole process (the ``cudadoctor`` script, ``python -m
    cudadoctor``), so that ``check`` may leave without the interpreter's teardown."""
    args = sys.argv[1:] if argv is None else list(argv)
    if sys.stdout is None:  # started with stdout closed (>&-): every write would fail
        if sys.stderr is not None:
            sys.stderr.write("cudadoctor: error: standard output is closed\n")
        sys.exit(2)
    if args == ["--version"]:  # answered without importing click: it is on every bug report
        from cudadoctor.cli.handler import guarded

        sys.exit(guarded(lambda: _version_out(version_line()), args))
    if args[:1] == ["run"]:
        # `cudadoctor run -- CMD` wraps every run of a job: start CMD without importing click.
        # Anything its small parser does not take (--help, a bad value) goes to click below.
        from cudadoctor.oncall import run as oncall

        options = oncall.parse(args[1:])
        if options is not None:
            oncall.main(options)
    if args[:1] == ["check"]:
        # the command people run most: the common command lines are parsed without click
        if process:
            import gc

            gc.disable()  # a run of a tenth of a second makes no garbage worth collecting
            lazy("inspect")
        from cudadoctor.cli.check_run import fast_check

        code = fast_check(args[1:])
        if code is not None:
            if process:
                leave(code)
            sys.exit(code)
    from cudadoctor.cli.app import run

    sys.exit(run(args))


def leave(code: int) -> NoReturn:
    """Exit with ``code`` at once, once the output is written: the interpreter's teardown (freeing
    every module and object one by one) costs ``check`` a tenth of its run, and nothing is left to
    do (no thread runs, no file is open for writing, ``check`` registers no exit handler)."""
    import os

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # a closed pipe: the usual exit reports it
        sys.exit(code)
    os._exit(code)


def lazy(name: str) -> None:
    """Import the standard module ``name`` on its first use only: until an attribute of it is
    asked for, ``sys.modules`` holds a stand-in that loads the module then and hands each request
    on. For ``inspect``: dataclasses imports it (with ast, dis and tokenize, a twelfth of
    ``check``) and uses it only for a class without a docstring, which no record of cudadoctor's
    is. (importlib's LazyLoader does not serve: an ``import`` statement already loads it.)"""
    if name in sys.modules:
        return
    import importlib.util
    import types

    spec = importlib.util.find_spec(name)
    if spec is None:
        return

    class Later(types.ModuleType):
        def __getattr__(self, attr: str) -> object:
            if sys.modules.get(name) is self:
                del sys.modules[name]
            return getattr(importlib.import_module(name), attr)

    stand_in = Later(name)
    stand_in.__spec__ = spec
    sys.modules[name] = stand_in
