"""Install commands in shell text: ``pip install``, ``python -m pip install``, ``uv pip install``,
``conda``/``mamba``/``micromamba install``, split at ``&&``, ``||``, ``;`` and ``|``. Each package
is read as pip reads a requirement (``packaging``); what is not a requirement (a path, ``.``, a
``-r`` file) is left out, never guessed."""

from __future__ import annotations

import re
import shlex
from typing import List, Optional, Sequence, Tuple

from cudadoctor.containers.model import Install, Requirement

_SEPARATORS = {"&&", "||", ";", "|", "&", ";;", "(", ")"}
_PIP = re.compile(r"^pip(?:\d(?:\.\d+)?)?$")
_PYTHON = re.compile(r"^python(?:\d(?:\.\d+)?)?$")
_CONDA = {"conda", "mamba", "micromamba"}
# pip/uv options that take a value (the next word, unless written --opt=value)
_VALUED = {
    "-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-r", "--requirement", "-c", "--constraint",
    "-t", "--target", "--prefix", "--root", "--platform", "--python-version", "--implementation", "--abi",
    "--no-binary", "--only-binary", "--trusted-host", "--cache-dir", "--src", "--upgrade-strategy", "--progress-bar",
    "--root-user-action", "-C", "--config-settings", "--global-option", "--log", "--timeout", "--retries", "--proxy",
    "--cert", "--client-cert", "--exists-action", "--report", "-e", "--editable", "--python", "-p",
    "--index-strategy", "--keyring-provider", "--resolution", "--prerelease", "--extra", "--group",
    "--override", "--build-constraint", "--default-index", "--index", "--channel", "-n", "--name",
    "--prefix-path", "--solver", "--override-channels-value",
}
_LOCAL = re.compile(r"\+([A-Za-z0-9.]+)$")
_URL_NAME = re.compile(r"/([A-Za-z0-9_.-]+?)(?:\.git)?(?:@[^/#]*)?(?:#.*)?$")
MAX_WORDS = 4096  # words of one shell text looked at


_PLAIN_WORDS = re.compile(r"&&|\|\||;;|[;&|()]|[^\s;&|()]+")
_SIMPLE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:==([0-9][A-Za-z0-9.!_-]*)(?:\+([A-Za-z0-9.]+))?)?$")


def _words(text: str) -> List[str]:
    """Shell words and separators; unbalanced quotes fall back to whitespace words. Text without
    quotes or escapes (most RUN lines) is split without shlex, which is slow."""
    if not any(c in text for c in "\"'\\#"):
        return _PLAIN_WORDS.findall(text)[:MAX_WORDS]
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        lexer.commenters = ""
        out: List[str] = []
        for word in lexer:
            out.append(word)
            if len(out) >= MAX_WORDS:
                break
        return out
    except ValueError:
        return text.split()[:MAX_WORDS]


def _commands(words: Sequence[str]) -> List[List[str]]:
    out: List[List[str]] = [[]]
    for w in words:
        if w in _SEPARATORS:
            out.append([])
        else:
            out[-1].append(w)
    return [c for c in out if c]


def _strip_prefix(cmd: List[str]) -> List[str]:
    """Leading VAR=value assignments, sudo/env/exec/time, and `RUN --mount=...` options go."""
    i = 0
    while i < len(cmd):
        w = cmd[i]
        if w in ("sudo", "env", "exec", "time", "nohup", "command") or w.startswith("--mount") or \
                w.startswith("--network") or w.startswith("--security") or \
                (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w) is not None):
            i += 1
            continue
        break
    return cmd[i:]


def _install_args(cmd: List[str]) -> Optional[Tuple[str, List[str]]]:
    """(manager, the words after `install`) when ``cmd`` is an install command."""
    if not cmd:
        return None
    head = cmd[0].rsplit("/", 1)[-1]
    rest = cmd[1:]
    if _PYTHON.match(head) and len(rest) >= 2 and rest[0] == "-m" and _PIP.match(rest[1]):
        head, rest = "pip", rest[2:]
    if _PIP.match(head) and rest[:1] == ["install"]:
        return "pip", rest[1:]
    if head == "uv" and rest[:2] == ["pip", "install"]:
        return "uv", rest[2:]
    if head in _CONDA and rest[:1] in (["install"], ["create"]):
        return "conda", rest[1:]
    return None


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement(word: str, no_binary: Sequence[str]) -> Optional[Requirement]:
    if "://" in word or word.startswith("git+"):
        m = _URL_NAME.search(word.split("#egg=")[0])
        egg = word.split("#egg=", 1)[1].split("&")[0] if "#egg=" in word else None
        name = egg or (m.group(1) if m else None)
        return Requirement(normalise(name), word, from_source=True) if name else None
    if word.startswith((".", "/", "~", "$")) or word.endswith((".txt", ".whl", ".tar.gz", ".zip")):
        return None
    simple = _SIMPLE.match(word)
    if simple:  # name, or name==version[+local]: what packaging would read, without its parser
        name = normalise(simple.group(1))
        return Requirement(name, word, simple.group(2), simple.group(3), (),
                           ":all:" in no_binary or name in no_binary)
    from packaging.requirements import InvalidRequirement, Requirement as PepRequirement  # slow to import: rarely needed

    try:
        req = PepRequirement(word)
    except InvalidRequirement:
        return None
    name = normalise(req.name)
    version = local = None
    specs = list(req.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "==="):
        raw = specs[0].version
        m = _LOCAL.search(raw)
        local = m.group(1) if m else None
        version = raw[: m.start()] if m else raw
    source = ":all:" in no_binary or name in no_binary
    return Requirement(name, word, version, local, tuple(sorted(req.extras)), source)


def _conda_requirement(word: str) -> Optional[Requirement]:
    """'pytorch=2.1.0', 'pytorch-cuda=12.1', 'cudatoolkit==11.8', 'conda-forge::pytorch'."""
    word = word.split("::", 1)[-1]
    m = re.match(r"^([A-Za-z0-9_.-]+)\s*(?:==?\s*([0-9][A-Za-z0-9.*]*))?", word)
    if not m:
        return None
    version = m.group(2).rstrip(".*") if m.group(2) else None
    return Requirement(normalise(m.group(1)), word, version or None)


def read_installs(text: str, line: int, depth: int = 0) -> List[Install]:
    """The install commands in ``text`` (a RUN instruction, a compose command), at ``line``; the
    script of ``sh -c '...'`` / ``bash -c '...'`` too."""
    if "install" not in text and "create" not in text:
        return []
    out: List[Install] = []
    for cmd in _commands(_words(text)):
        cmd = _strip_prefix(cmd)
        if depth < 2 and len(cmd) >= 3 and cmd[0].rsplit("/", 1)[-1] in ("sh", "bash", "dash") and "-c" in cmd[1:-1]:
            out.extend(read_installs(cmd[cmd.index("-c") + 1], line, depth + 1))
            continue
        found = _install_args(cmd)
        if found is None:
            continue
        manager, args = found
        out.append(_install(manager, args, line, " ".join(cmd)))
    return out


def _install(manager: str, args: List[str], line: int, text: str) -> Install:
    index: Optional[str] = None
    extra: List[str] = []
    links: List[str] = []
    channels: List[str] = []
    no_binary: List[str] = []
    words: List[str] = []
    isolation = True
    i = 0
    while i < len(args):
        w = args[i]
        opt, eq, val = w.partition("=")
        if w.startswith("-") and opt in _VALUED:
            if not eq:
                val = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            if opt in ("-i", "--index-url", "--default-index"):
                index = val
            elif opt in ("--extra-index-url", "--index"):
                extra.append(val)
            elif opt in ("-f", "--find-links"):
                links.append(val)
            elif opt in ("-c", "--channel") and manager == "conda":
                channels.append(val)
            elif opt == "--no-binary":
                no_binary.extend(normalise(n) if n != ":all:" else n for n in val.split(","))
        elif w == "--no-build-isolation":
            isolation = False
        elif not w.startswith("-"):
            words.append(w)
        i += 1
    reqs = [(_conda_requirement(w) if manager == "conda" else _requirement(w, no_binary)) for w in words]
    return Install(line, manager, tuple(r for r in reqs if r is not None), index, tuple(extra), tuple(links),
                   tuple(channels), isolation, text[:300])
