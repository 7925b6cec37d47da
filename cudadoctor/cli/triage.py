"""``cudadoctor triage``: a GitHub issue in, a diagnosis and a reply out (docs/triage.md)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, Optional, Tuple

import click

from cudadoctor.cli.output import FAIL_ON, exit_code
from cudadoctor.errors import CudadoctorError, ExitCode

MAX_PREFIX = 20  # GitHub's label names hold 50 characters; the longest category takes 26


@click.command()
@click.argument("issue", metavar="OWNER/REPO#N|URL|FILE|-")
@click.option("--post", is_flag=True,
              help="Post the reply as a comment, or edit this command's earlier reply; not when nothing was found.")
@click.option("--post-always", is_flag=True, help="Post (or edit) the reply even when nothing was found.")
@click.option("--label", is_flag=True, help="Add the label PREFIX+CATEGORY for the cause found (holds or likely).")
@click.option("--label-prefix", default="cudadoctor: ", show_default=True, metavar="PREFIX",
              help="What the label's name starts with.")
@click.option("--no-comments", is_flag=True, help="Diagnose the title and body only, not the reporter's comments.")
@click.option("--api-url", metavar="URL",
              help="GitHub's REST API (default: $GITHUB_API_URL, else https://api.github.com, or "
                   "https://HOST/api/v3 for an Enterprise URL).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0.1, max=300), default=15.0, show_default=True,
              metavar="SECONDS", help="How long all the calls to GitHub may take together (connecting, every page, every write).")
@click.option("--json", "as_json", is_flag=True, help="Print the diagnosis, the reply and what was done as JSON.")
@click.option("--fail-on", type=click.Choice(FAIL_ON), default="error", show_default=True,
              help="Exit 1 when a cause is found (holds or likely) or a finding is at least this severe.")
def triage(issue: str, post: bool, post_always: bool, label: bool, label_prefix: str, no_comments: bool,
           api_url: Optional[str], timeout_s: float, as_json: bool, fail_on: str) -> int:
    """Diagnose a GitHub issue and print a reply in Markdown.

    The issue is OWNER/REPO#N or its URL (read through GitHub's REST API, with the token in
    GH_TOKEN or GITHUB_TOKEN when set), or a FILE ('-': stdin) holding the issue's JSON, a
    workflow's event payload or its text. Its title, body and the reporter's comments are
    diagnosed; nothing in them is run."""
    from cudadoctor.model.printable import json_printable
    from cudadoctor.triage.run import Options, triage as run_triage

    if len(label_prefix) > MAX_PREFIX or "," in label_prefix:
        raise CudadoctorError(f"--label-prefix {label_prefix!r}: at most {MAX_PREFIX} characters, no comma")
    options = Options(source=issue, api_url=api_url, timeout_s=timeout_s, post=post, post_always=post_always,
                      label=label, label_prefix=label_prefix, comments=not no_comments, environ=dict(os.environ))
    outcome = run_triage(options)
    for note in outcome.notes:
        sys.stderr.write(f"cudadoctor: {note}\n")
    if as_json:
        sys.stdout.write(json_printable(json.dumps(outcome.document(), indent=2, ensure_ascii=False)) + "\n")
    else:
        sys.stdout.write(outcome.reply.markdown)
        _say(outcome.posted, outcome.labels)
    if outcome.diagnosis.explanation.crashed:
        return ExitCode.INTERNAL
    code = exit_code(outcome.diagnosis.findings, fail_on)
    top = outcome.reply.top
    if code == ExitCode.OK and fail_on != "never" and top is not None and top.verdict in ("holds", "likely"):
        return ExitCode.FINDINGS
    return code


def _say(posted: Dict[str, Any], labels: Tuple[str, ...]) -> None:
    """What was done on GitHub, on stderr (stdout holds the reply alone)."""
    action = posted.get("action")
    where = f": {posted['url']}" if posted.get("url") else ""
    if action == "created":
        sys.stderr.write(f"cudadoctor: posted the reply{where}\n")
    elif action == "edited":
        sys.stderr.write(f"cudadoctor: edited the earlier reply{where}\n")
    elif action == "unchanged":
        sys.stderr.write(f"cudadoctor: the earlier reply says this already{where}\n")
    elif posted.get("why", "").startswith("nothing found"):
        sys.stderr.write(f"cudadoctor: not posted: {posted['why']}\n")
    for name in labels:
        sys.stderr.write(f"cudadoctor: labelled {name!r}\n")
