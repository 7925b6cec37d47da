"""The Dockerfile reader: instructions with their continuation lines and heredocs, stages
(``FROM image AS name``, a stage built on an earlier one inherits what it installed and set),
``ARG`` defaults substituted where they are literal, ``ENV``, ``RUN`` installs, ``CMD`` and
``ENTRYPOINT``. The last stage is what runs; the others are build stages."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Dict, List, Optional, Tuple

from cudadoctor.containers.installs import read_installs
from cudadoctor.containers.model import MAX_LINE, EnvVar, Install, Spec, Unit

_INSTRUCTION = re.compile(r"^\s*([A-Za-z]+)(?:\s+(.*))?$", re.S)
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-+]([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")
_HEREDOC = re.compile(r"<<-?\s*[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?")
MAX_STAGES = 10000
MAX_VALUE = 4096  # an ENV value longer than this is cut (PATH=...:$PATH in every stage grows)
MAX_HEREDOC_LINES = 10000


def instructions(lines: List[str]) -> List[Tuple[int, str, str]]:
    """(line, KEYWORD, arguments) of each instruction; continuation lines joined, comment lines
    inside them dropped, a heredoc's body appended to its instruction."""
    out: List[Tuple[int, str, str]] = []
    i, n = 0, len(lines)
    while i < n:
        raw = lines[i]
        start = i
        i += 1
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        parts = [raw.rstrip()]
        size = len(parts[0])
        while parts[-1].endswith("\\") and i < n and size < MAX_LINE:
            parts[-1] = parts[-1][:-1]
            nxt = lines[i]
            i += 1
            if nxt.strip().startswith("#"):
                parts.append("\\")  # a comment inside a continuation is dropped; the continuation goes on
                continue
            parts.append(nxt.rstrip())
            size += len(parts[-1]) + 1
        text = " ".join(p for p in parts if p != "\\")[:MAX_LINE]
        heredoc = _HEREDOC.search(text)
        if heredoc and text.lstrip().upper().startswith(("RUN", "COPY")):
            body: List[str] = []
            while i < n and lines[i].strip() != heredoc.group(1) and len(body) < MAX_HEREDOC_LINES:
                body.append(lines[i])
                i += 1
            i += 1
            text = text[: heredoc.start()] + " ; " + " ; ".join(body)
        m = _INSTRUCTION.match(text)
        if m:
            out.append((start + 1, m.group(1).upper(), (m.group(2) or "").strip()))
    return out


def substitute(text: str, values: Dict[str, str]) -> Tuple[str, List[str]]:
    """``$X``/``${X}``/``${X:-default}`` replaced from ``values``; the names left unresolved."""
    missing: List[str] = []

    def one(m: "re.Match[str]") -> str:
        name = m.group(1) or m.group(3)
        if name in values:
            return values[name]
        if m.group(2) is not None and "-" in m.group(0).split(name, 1)[1][:2]:
            return m.group(2)
        missing.append(name)
        return m.group(0)

    return _VAR.sub(one, text), missing


def _key_values(args: str) -> List[Tuple[str, str]]:
    """ENV/ARG arguments: 'A=1 B="two words"' or the legacy 'A value with spaces'."""
    if "=" not in args.split(" ", 1)[0]:
        name, _, value = args.partition(" ")
        return [(name, value.strip().strip('"').strip("'"))] if name else []
    out = []
    for m in re.finditer(r"([A-Za-z_][A-Za-z0-9_.-]*)=(\"(?:[^\"\\]|\\.)*\"|'[^']*'|\S*)", args):
        value = m.group(2)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out.append((m.group(1), value))
    return out


def _exec_form(args: str) -> str:
    """CMD ["python", "train.py"] -> 'python train.py'."""
    if args.startswith("["):
        return " ".join(re.findall(r"\"((?:[^\"\\]|\\.)*)\"", args))
    return args


class _Stage:
    """A stage being read: lists that grow, turned into a :class:`Unit` once (appending to a
    frozen tuple per instruction would make a long Dockerfile quadratic)."""

    def __init__(self, unit: Unit) -> None:
        self.unit = unit
        self.installs: List[Install] = []
        self.env: List[EnvVar] = []
        self.commands: List[Tuple[str, int]] = []

    def done(self, runs: bool) -> Unit:
        return replace(self.unit, installs=tuple(self.installs), env=tuple(self.env), commands=tuple(self.commands),
                       runs=runs)


def read_dockerfile(path: str, lines: List[str]) -> Spec:
    global_args: Dict[str, str] = {}
    stages: List[_Stage] = []
    by_name: Dict[str, Unit] = {}
    notes: List[Tuple[int, str]] = []
    args: Dict[str, str] = {}
    env: Dict[str, str] = {}
    env_of: Dict[str, Dict[str, str]] = {}  # each finished stage's ENV values
    for line, keyword, rest in instructions(lines):
        if keyword == "FROM":
            if len(stages) >= MAX_STAGES:
                notes.append((line, f"more than {MAX_STAGES} stages: the rest is not read"))
                break
            if stages:
                finished = stages[-1].done(False)
                stages[-1].unit = finished
                by_name[finished.name.lower()] = finished
                env_of[finished.name.lower()] = env
            unit = _from(line, rest, global_args, by_name, len(stages))
            env = dict(env_of.get(unit.parent.lower(), {})) if unit.parent else {}
            stages.append(_Stage(unit))
            args = dict(global_args)
            if unit.image_note:
                notes.append((line, unit.image_note))
            continue
        if keyword == "ARG":
            _arg(rest, global_args, args, env, bool(stages))
            continue
        if not stages:
            continue
        stage = stages[-1]
        if keyword == "ENV":
            values = {**args, **env}
            new = [EnvVar(k, substitute(v, values)[0][:MAX_VALUE], line) for k, v in _key_values(rest)]
            env.update((v.name, v.value) for v in new)
            stage.env.extend(new)
        elif keyword == "RUN":
            text = substitute(rest, {**args, **env})[0] if "$" in rest else rest
            stage.installs.extend(read_installs(text, line))
        elif keyword in ("CMD", "ENTRYPOINT"):
            stage.commands.append((_exec_form(rest)[:500], line))
    units = tuple(s.done(i == len(stages) - 1) for i, s in enumerate(stages))
    return Spec(path, "dockerfile", units, tuple(notes), len(lines))


def _arg(rest: str, global_args: Dict[str, str], args: Dict[str, str], env: Dict[str, str], in_stage: bool) -> None:
    """ARG NAME=default sets it; a bare ARG NAME in a stage takes the global default, if any."""
    for word in rest.split():
        name, eq, value = word.partition("=")
        if not eq:
            if in_stage and name in global_args:
                args[name] = global_args[name]
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if in_stage:
            args[name] = substitute(value, {**args, **env})[0]
        else:
            global_args[name] = value


def _from(line: int, rest: str, global_args: Dict[str, str], by_name: Dict[str, Unit], index: int) -> Unit:
    words = [w for w in rest.split() if not w.startswith("--")]
    ref = words[0] if words else ""
    name = words[2] if len(words) >= 3 and words[1].lower() == "as" else ""
    image, missing = substitute(ref, global_args)
    label = name or str(index)
    parent = by_name.get(image.lower())
    if parent is not None:
        return Unit("stage", label, line, parent.image, parent.image_line, parent.image_note, parent=parent.name,
                    runs=False, inherits=parent)
    note = ""
    if missing:
        note = f"FROM {ref}: ARG {', '.join(missing)} has no literal default, so the base image is not known"
        image_value: Optional[str] = None
    elif image.lower() == "scratch" or not image:
        image_value = None
        note = "" if image else "FROM without an image"
    else:
        image_value = image
    return Unit("stage", label, line, image_value, line, note)
