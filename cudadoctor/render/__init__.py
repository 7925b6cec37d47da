"""Renderers: a Report in, text on a stream out. They decide nothing."""

from __future__ import annotations

from typing import Callable, Dict, TextIO

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
