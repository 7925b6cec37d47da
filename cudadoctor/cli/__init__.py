"""The ``cudadoctor`` command: a small click group, one module per command, one error handler."""

from __future__ import annotations

import sys
from typing import List, NoReturn, Optional


def version_line() -> str:
    from . import _version

    return _version.line()


def main(argv: Optional[List[str]] = None) -> NoReturn:
    args = sys.argv[1:] if argv is None else list(argv)
    if args == ["--version"]:  # answered without importing click: it is on every bug report
        sys.stdout.write(version_line() + "\n")
        sys.exit(0)
    from .app import run

    sys.exit(run(args))
