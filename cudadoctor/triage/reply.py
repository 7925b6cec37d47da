"""The reply to an issue, in Markdown, from the diagnosis of its text: the likely cause in words,
the lines of the issue that show it, the fix as commands, and, when the facts are not enough,
exactly what to paste next. It decides nothing: the causes, their order and the asks are the
diagnosis's (:mod:`cudadoctor.diagnosis.paste`).

Safe to post on a public tracker: from the issue it repeats only the lines that show the cause
(at most :data:`MAX_QUOTES`, each cut at :data:`MAX_LINE` characters), and every text that comes
from the issue or was read from it (the quoted lines, the facts in a cause's words, a fix's
commands) goes through the redaction rules of reports (:func:`redact_texts`), has its control
characters escaped (:mod:`cudadoctor.model.printable`) and is escaped for Markdown (prose) or
fenced (lines and commands), so that nothing in an issue can add a link, a mention or HTML to
the reply. The whole reply is held under a report's size budget.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple
from cudadoctor.record import frozen

from cudadoctor.model.printable import printable
from cudadoctor.triage.issue import MARKER, Joined

if TYPE_CHECKING:
    from cudadoctor.model import Finding
    from cudadoctor.diagnosis.paste import PasteDiagnosis, RankedCause

MAX_QUOTES = 6
MAX_LINE = 200  # characters of a quoted line
MAX_WHY = 600
MAX_COMMANDS = 8
MAX_COMMAND = 400
MAX_OTHERS = 3  # other causes named after the first
MAX_VERIFY = 3
FORMAT = "cudadoctor.triage"
FORMAT_VERSION = 1
_ON_LINE = re.compile(r"\bon line (\d+)\b")


@frozen
class Quote:
    line: int  # in the joined text
    where: str  # "body line 3"
    text: str  # redacted and escaped: safe to show


@frozen
class ShownCause:
    category: str
    label: str
    verdict: str
    why: str  # redacted, one line (control characters escaped), lines named as in the issue
    line: Optional[int]
    where: str
    source: str


@frozen
class Reply:
    markdown: str
    found: bool  # a cause was found
    confident: bool  # the first cause holds: the facts show it
    causes: Tuple[ShownCause, ...]
    quotes: Tuple[Quote, ...]
    asks: Tuple[str, ...]
    fix: Optional[Tuple[str, Tuple[str, ...]]]  # (what to do, the commands), redacted
    redacted: str  # what redaction replaced, in words ("1 home directory"), or ""

    @property
    def top(self) -> Optional[ShownCause]:
        return self.causes[0] if self.causes else None


def build_reply(d: PasteDiagnosis, joined: Joined, budget: Optional[int] = None,
                secrets: Sequence[str] = ()) -> Reply:
    """The reply to the issue whose joined text ``d`` diagnosed. ``secrets`` (triage's token) are
    replaced wherever they appear, in whatever is quoted and in the reply as a whole."""
    from cudadoctor.reports.redact import redact_texts
    from cudadoctor.render.report_fit import DEFAULT_BUDGET

    lines = d.intake.text.split("\n")
    original = joined.text.split("\n")
    causes = d.ranked[: 1 + MAX_OTHERS]
    top = causes[0] if causes else None
    quote_lines = _evidence(d, top)
    finding = _fix_finding(d, top)
    fix_text = finding.fix.text if finding and finding.fix else ""
    commands = [c.run for c in finding.fix.commands][:MAX_COMMANDS] if finding and finding.fix else []
    meaning, verify = _meaning(d, top)

    # one redaction over every text that comes from the issue or quotes it: one set of pseudonyms
    raw_quotes = [_quoted(lines, original, n) for n in quote_lines]
    texts = [*raw_quotes, *(c.why for c in causes), fix_text, *commands]
    clean, summary = redact_texts(texts, d.intake.snapshot(), secrets=secrets)
    quotes_clean = clean[: len(raw_quotes)]
    whys = clean[len(raw_quotes): len(raw_quotes) + len(causes)]
    fix_clean = clean[len(raw_quotes) + len(causes)]
    commands_clean = clean[len(raw_quotes) + len(causes) + 1:]

    quotes = tuple(Quote(n, joined.where(n), _cut(printable(q), MAX_LINE)) for n, q in zip(quote_lines, quotes_clean))
    shown = tuple(ShownCause(c.category.value, c.label, c.verdict, _cut(_lines_named(_one_line(w), joined), MAX_WHY),
                             c.line, joined.where(c.line), c.source) for c, w in zip(causes, whys))
    fix = (_cut(_one_line(fix_clean), MAX_WHY), tuple(_cut(printable(c), MAX_COMMAND) for c in commands_clean)) \
        if finding else None
    confident = top is not None and top.verdict == "holds"
    markdown = _markdown(shown, quotes, fix, d.asks if not confident else (), meaning, verify,
                         d.explanation.data_version)
    for secret in secrets:
        markdown = markdown.replace(secret, "<redacted>") if secret else markdown
    markdown = _fit(markdown, budget or DEFAULT_BUDGET)
    return Reply(markdown, top is not None, confident, shown, quotes, tuple(d.asks), fix,
                 summary.describe() if summary.total else "")


# ---------------------------------------------------------------------------- what to quote


def _evidence(d: PasteDiagnosis, top: Optional[RankedCause]) -> List[int]:
    """The lines that show the first cause: its own line, the lines of the facts its finding
    names (by value), then the lines of the other causes that hold."""
    if top is None:
        return []
    out: List[int] = [top.line] if top.line else []
    finding = next((f for f in d.findings if f.code == top.source), None)
    if finding is not None:
        words = f"{finding.title} {finding.why}"
        for fact in d.intake.chosen().values():
            value = fact.value
            if isinstance(value, str) and len(value) >= 4 and (any(ch.isdigit() for ch in value) or len(value) >= 6) \
                    and re.search(rf"(?<![\w.]){re.escape(value)}(?![\w])", words):
                out.append(fact.line)
    for cause in d.ranked[1:]:
        if cause.verdict == "holds" and cause.line:
            out.append(cause.line)
    return sorted(dict.fromkeys(out))[:MAX_QUOTES]


def _quoted(lines: Sequence[str], original: Sequence[str], n: int) -> str:
    """Line ``n`` as the intake read it (Markdown and quote marks taken off), else as written."""
    text = lines[n - 1] if 0 < n <= len(lines) else ""
    if not text.strip() and 0 < n <= len(original):
        text = original[n - 1]
    return text.strip()


def _fix_finding(d: PasteDiagnosis, top: Optional[RankedCause]) -> Optional[Finding]:
    """The finding whose fix the first cause calls for: its own, else an error of its category."""
    if top is None:
        return None
    from cudadoctor.model import Severity

    for f in d.findings:
        if f.code == top.source and f.fix is not None:
            return f
    for f in d.findings:
        if f.category is top.category and f.severity is Severity.ERROR and f.fix is not None:
            return f
    return None


def _meaning(d: PasteDiagnosis, top: Optional[RankedCause]) -> Tuple[str, Tuple[str, ...]]:
    """What the error behind the first cause means, and how to tell its causes apart (the data's words)."""
    if top is None:
        return "", ()
    for x in d.explanation.matches:
        if x.signature == top.source or x.line_number == top.line:
            return _one_line(x.meaning), tuple(_one_line(v) for v in x.verify[:MAX_VERIFY])
    return "", ()


# ---------------------------------------------------------------------------- Markdown


def md(text: str) -> str:
    """Prose from outside made inert in Markdown (:func:`cudadoctor.render.md.text`)."""
    from cudadoctor.render.md import text as inert

    return inert(text)


def fenced(lines: Sequence[str], info: str = "") -> List[str]:
    """A fenced code block that no line can close (:func:`cudadoctor.render.md.fence`)."""
    from cudadoctor.render.md import fence

    return fence(lines, info)


def _markdown(causes: Sequence[ShownCause], quotes: Sequence[Quote], fix: Optional[Tuple[str, Tuple[str, ...]]],
              asks: Sequence[str], meaning: str, verify: Sequence[str], data_version: str) -> str:
    from cudadoctor.version import __version__

    out = [MARKER]
    top = causes[0] if causes else None
    if top is None:
        out.append("**cudadoctor** read this issue and found no GPU error message or machine output that it knows.")
    elif top.verdict == "holds":
        out.append(f"**cudadoctor** read this issue: the cause is **{md(top.label)}**.")
    else:
        words = "most likely" if top.verdict == "likely" else "a possible"
        out.append(f"**cudadoctor** read this issue: the {words} cause is **{md(top.label)}**, but what is "
                   "here is not enough to be sure.")
    if top is not None:
        out += ["", md(top.why[:1].upper() + top.why[1:]) + ("" if top.why.endswith((".", ")")) else ".")]
    if quotes:
        width = max(len(q.where) for q in quotes) + 1
        out += ["", "What shows it:", "", *fenced([f"{q.where + ':':<{width}} {q.text}" for q in quotes], "text")]
    if fix is not None:
        text, commands = fix
        out += ["", f"**Fix:** {md(text)}"]
        if commands:
            out += ["", *fenced(list(commands), "sh")]
    if meaning and top is not None and top.verdict != "holds":
        out += ["", f"What the error means: {md(meaning)}"]
    if asks:
        lead = "To tell, please paste" if top is not None else "If this is a problem with a GPU setup, please paste"
        out += ["", f"{lead} (in a comment, or by editing the issue):", ""]
        out += [f"- {a}" for a in asks]  # the diagnosis's own words (constants, with their `code`)
    if verify and top is not None and top.verdict != "holds":
        out += ["", "<details><summary>How to tell the causes apart</summary>", ""]
        out += [f"- {md(v)}" for v in verify]
        out += ["", "</details>"]
    others = [c for c in causes[1:]]
    if others:
        named = "; ".join(f"{md(c.label)} ({c.verdict}" + (f", {md(c.where)})" if c.where else ")") for c in others)
        out += ["", f"Other possible causes, most likely first: {named}."]
    out += ["", f"<sub>An automatic first look by cudadoctor {__version__} (data {md(data_version)}) at the text "
            "of this issue; nothing in it was run. If it is wrong, say so: a person will read this too.</sub>"]
    return "\n".join(out) + "\n"


def _fit(markdown: str, budget: int) -> str:
    """The reply within ``budget`` characters as GitHub counts them (the report's rule): cut at a
    line, said in the reply. Every part is capped, so only a budget far below the default cuts."""
    from cudadoctor.render.report_fit import size

    if size(markdown) <= budget:
        return markdown
    marker = "\n… (cut to fit a comment)\n"
    lines = markdown.split("\n")
    while lines and size("\n".join(lines)) + size(marker) > budget:
        lines.pop()
    text = "\n".join(lines)
    fences = sum(1 for line in lines if re.match(r"`{3,}", line))
    if fences % 2:  # a code block left open would swallow the marker
        text += "\n```"
    return text + marker


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _lines_named(text: str, joined: Joined) -> str:
    """'the error on line 14' -> 'the error on comment by @maya, line 2': lines as the issue numbers them."""
    return _ON_LINE.sub(lambda m: f"on {joined.where(int(m.group(1)))}", text)


# ---------------------------------------------------------------------------- JSON


def reply_document(reply: Reply, joined: Joined, d: PasteDiagnosis, issue: Dict[str, Any],
                   posted: Dict[str, Any], labels: Sequence[str]) -> Dict[str, Any]:
    """``cudadoctor triage --json`` (format ``cudadoctor.triage``): what was read, the causes, the
    asks, the reply, and what was done with it."""
    from cudadoctor.version import __version__

    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "tool_version": __version__,
        "data_version": d.explanation.data_version,
        "issue": issue,
        "read": {
            "parts": [{"origin": p.origin, "author": p.author, "comment_id": p.comment_id, "first_line": p.first,
                       "last_line": p.last} for p in joined.parts],
            "left_out": [{"who": who, "why": why} for who, why in joined.left_out],
            "truncated": joined.truncated,
        },
        "found": reply.found,
        "confident": reply.confident,
        "causes": [{"category": c.category, "label": c.label, "verdict": c.verdict, "why": c.why, "line": c.line,
                    "where": c.where, "source": c.source} for c in reply.causes],
        "quoted": [{"line": q.line, "where": q.where, "text": q.text} for q in reply.quotes],
        "fix": {"text": reply.fix[0], "commands": list(reply.fix[1])} if reply.fix else None,
        "ask": list(reply.asks),
        "redacted": reply.redacted or None,
        "reply": reply.markdown,
        "posted": posted,
        "labels": list(labels),
    }
