"""``cudadoctor fleet``: the reports of many nodes at once (docs/fleet.md).

``fleet summarize DIR|FILE...`` groups the nodes by configuration, names the majority and what
every other configuration changes against it, counts findings across nodes, and lists hardware
signals and the reports that are missing or unreadable. Exit codes: 0 healthy, 1 when a node has a
finding at or above --fail-on or a report is missing or unreadable (not with --fail-on never),
2 for a usage error (no reports, a path that does not exist).
"""

from __future__ import annotations

import sys
from typing import Optional, Tuple

import click

from cudadoctor.errors import CudadoctorError
from cudadoctor.cli.output import FAIL_ON, terminal_color

FORMATS = ("text", "markdown", "json")

fleet = click.Group("fleet", help="Summarise the reports of many nodes (a cluster, a fleet of workstations).")


@fleet.command("summarize", short_help="Group nodes by configuration; count findings, hardware signals, missing reports.")
@click.argument("inputs", nargs=-1, required=True, metavar="DIR|FILE...")
@click.option("--expected", type=click.IntRange(min=1), default=None, metavar="N",
              help="How many nodes should have reported: the others are counted as missing.")
@click.option("--nodes", "nodes_arg", metavar="FILE|LIST",
              help="The nodes that should have reported, to name the missing ones (and the nodes of redacted "
                   "reports): a file with one name per line, or a list such as gpu-[001-128],login1.")
@click.option("--compare", "max_compared", type=click.IntRange(min=0), default=50, show_default=True, metavar="N",
              help="Compare at most N configurations with the majority (the rest are counted).")
@click.option("--jobs", type=click.IntRange(min=1, max=64), default=None, metavar="N",
              help="Processes reading the reports (default: one per CPU, at most 8; used from 2,000 reports).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help="Output format (default text).")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("-v", "--verbose", is_flag=True, help="Name every node, change and hardware signal (default: the first few).")
@click.option("--color/--no-color", default=None, help="Colour the text output (default: when a terminal).")
@click.option("--fail-on", type=click.Choice(FAIL_ON), default="error", show_default=True,
              help="Exit 1 when a node has a finding at least this severe, or a report is missing or unreadable "
                   "(never: always 0).")
def summarize(inputs: Tuple[str, ...], expected: Optional[int], nodes_arg: Optional[str], max_compared: int,
              jobs: Optional[int], as_json: bool, fmt: Optional[str], verbose: bool, color: Optional[bool],
              fail_on: str) -> int:
    """Summarise node reports: DIR stands for its *.json and *.md files, each written on a node with
    `cudadoctor report --format json --keep-hostname -o DIR/{host}.json`.

    Groups the nodes by configuration (driver, GPUs, CUDA, framework builds, cuDNN/NCCL/cuBLAS,
    data version), says what each differs from the majority, counts findings across nodes, and
    lists hardware signals and missing or unreadable reports. Exits 1 when a node has a finding
    at or above --fail-on, or a report is missing or unreadable (not with --fail-on never)."""
    from cudadoctor.fleet import render, summarize_paths
    from cudadoctor.fleet.nodes import expected_nodes
    from cudadoctor.fleet.summary import exit_code

    if expected is not None and nodes_arg is not None:
        raise CudadoctorError("give --expected N or --nodes FILE|LIST, not both",
                              hint="--nodes names the nodes, and so counts them too")
    nodes = expected_nodes(nodes_arg) if nodes_arg is not None else None
    summary = summarize_paths(inputs, expected=expected if nodes is None else len(nodes), nodes=nodes,
                              max_compared=max_compared, jobs=jobs)
    code = exit_code(summary, fail_on)
    name = "json" if as_json else (fmt or "text")
    if name == "json":
        render.render_json(summary, sys.stdout, fail_on, code)
    elif name == "markdown":
        render.render_markdown(summary, sys.stdout, verbose)
    else:
        use_color = terminal_color(color)
        render.render_text(summary, sys.stdout, use_color, verbose)
    return code
