"""Renderers: a Report in, text on a stream out. They decide nothing."""

from __future__ import annotations

import io
from typing import Callable, Dict, Optional, TextIO

from cudadoctor.model import Report


def _text(report: Report, stream: TextIO, color: bool, verbose: bool) -> None:
    from cudadoctor.render.text import render_text

    render_text(report, stream, color=color, verbose=verbose)


def _json(report: Report, stream: TextIO, color: bool, verbose: bool) -> None:
    from cudadoctor.render.jsonout import render_json

    render_json(report, stream)


def _markdown(report: Report, stream: TextIO, color: bool, verbose: bool) -> None:
    from cudadoctor.render.markdown import render_markdown

    render_markdown(report, stream)


def _line(report: Report, stream: TextIO, color: bool, verbose: bool) -> None:
    from cudadoctor.render.oneline import render_line

    render_line(report, stream)


RENDERERS: Dict[str, Callable[[Report, TextIO, bool, bool], None]] = {
    "text": _text,
    "json": _json,
    "markdown": _markdown,
    "line": _line,
}


def render_report(report: Report, fmt: str, color: bool = False, max_length: Optional[int] = None) -> str:
    """The report as text: Markdown sized for an issue body (at most ``max_length`` characters,
    default 60,000), text, or the JSON envelope."""
    if fmt == "markdown":
        from cudadoctor.render.report_fit import DEFAULT_BUDGET, fit_markdown

        return fit_markdown(report, max_length or DEFAULT_BUDGET)[0]
    stream = io.StringIO()
    RENDERERS[fmt](report, stream, color, True)
    return stream.getvalue()
