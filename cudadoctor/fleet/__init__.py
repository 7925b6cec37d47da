"""``cudadoctor fleet``: many nodes' reports at once (docs/fleet.md).

:func:`summarize_paths` reads the reports (:mod:`.read`), keeps a compact record of each
(:mod:`.record`), groups the nodes by configuration (:mod:`.fingerprint`), says what each
configuration changes against the majority (:mod:`.compare`), and aggregates findings and hardware
signals (:mod:`.summary`); :mod:`.render` lays the result out as text, Markdown or JSON.
"""

from __future__ import annotations

from typing import Optional, Sequence

from cudadoctor.fleet.summary import FleetSummary


def summarize_paths(inputs: Sequence[str], expected: Optional[int] = None, nodes: Optional[Sequence[str]] = None,
                    max_compared: Optional[int] = None, jobs: Optional[int] = None) -> FleetSummary:
    """The summary of the reports in ``inputs`` (files, or directories of ``*.json``/``*.md``)."""
    from cudadoctor.fleet.read import discover, read_all
    from cudadoctor.fleet.summary import MAX_COMPARED, summarize

    paths = discover(inputs)
    return summarize(read_all(paths, jobs), expected=expected, nodes=nodes,
                     max_compared=MAX_COMPARED if max_compared is None else max_compared)


__all__ = ["FleetSummary", "summarize_paths"]
