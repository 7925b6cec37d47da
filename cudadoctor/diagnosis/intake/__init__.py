"""Text in: what people paste into a bug report, read into facts.

A GitHub issue body, a forum post or a terminal scroll-back holds blocks of machine output
(``python -m torch.utils.collect_env``, ``nvidia-smi``, ``pip list``, ``nvcc --version``, a
traceback, ``dmesg`` lines, a ``docker run`` line ...) amid prose, Markdown and quote marks.
:func:`read_text` finds each known block and turns it into facts of the vocabulary of
docs/facts.md, each with the line it came from, and notes what was ambiguous (two values of one
fact, a GPU name the data does not know). Pure: the text and the data in, an :class:`Intake` out;
no exception escapes for any text (fuzzed in tests/test_intake_fuzz.py).

The facts then become a partial Snapshot (:meth:`Intake.snapshot`), which the checks judge like
any other; the error lines go through the signature matcher with the snapshot as their machine.
"""

from __future__ import annotations

from cudadoctor.diagnosis.intake.model import BLOCK_NAMES, CONTEXT_KEYS, Block, Fact, Found, Intake
from cudadoctor.diagnosis.intake.read import read_text

__all__ = ["BLOCK_NAMES", "CONTEXT_KEYS", "Block", "Fact", "Found", "Intake", "read_text"]
