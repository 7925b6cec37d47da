"""Every ``cudadoctor ...`` command shown in the docs and the README runs (issue 16, item 19).

The commands are read from the fenced code blocks of README.md and docs/**/*.md. Those that can
run here (no GPU, network or root) run for real, in-process, on a recorded machine where they
probe (the hidden ``--machine``), with the files they name prepared in a temporary folder; they
must exit 0 or 1 (2 would be a usage error: the doc drifted from the options; 3 a crash). The
others (``smoke``, ``run``, ``data update``/``rollback``, ``--verify``) are parsed: ``--help``
appended, which click accepts only after every option named was recognised.
"""

from __future__ import annotations

import io
import os
import re
import shlex
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import click
import pytest

from cudadoctor.cli.app import cli as cli_group
from helpers import HERE, MACHINES, cli

ROOT = HERE.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
LAPTOP = MACHINES / "laptop-rtx3060-driver470-torch25-cu124"
FENCE = re.compile(r"^(`{3,})[^\n`]*\n(.*?)^\1", re.S | re.M)
PARSE_ONLY = {"smoke", "run", "update", "rollback", "triage"}  # a GPU, a command to run, the network (GitHub), the user's store


def _subcommands() -> Dict[str, Optional[click.Group]]:
    ctx = click.Context(cli_group)
    out: Dict[str, Optional[click.Group]] = {}
    for name in cli_group.list_commands(ctx):
        command = cli_group.get_command(ctx, name)
        out[name] = command if isinstance(command, click.Group) else None
    return out


SUBCOMMANDS = _subcommands()


def doc_commands() -> List[Tuple[str, str]]:
    """(where, command line) of every ``cudadoctor SUBCOMMAND ...`` line of a code block, its
    comment, prompt and shell redirections left out. Output lines (``cudadoctor 0.1.0 · ...``)
    are not commands: their second word is no subcommand."""
    found: Dict[str, str] = {}
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            for line in block.group(2).splitlines():
                line = re.sub(r"^\s*\$\s+", "", line).strip()
                words = line.split()
                if len(words) < 2 or words[0] != "cudadoctor" or words[1] not in SUBCOMMANDS or "·" in line:
                    continue
                found.setdefault(line, f"{path.relative_to(ROOT)}")
    return sorted((where, line) for line, where in found.items())


COMMANDS = doc_commands()


def _args(line: str, tmp: Path) -> List[str]:
    """The command's arguments, with the doc's placeholders made real: files in ``tmp``."""
    line = line.replace("$REPORTS", str(tmp / "reports")).replace("/shared/reports", str(tmp / "reports"))
    line = re.sub(r'"\$\(.*?\)"', "gpu-001,gpu-002", line)  # a shell substitution: a node list
    for placeholder in ("~/proj/.venv/bin/python", "/path/to/your/env/bin/python", "/path/to/project/python"):
        line = line.replace(placeholder, "/home/maya/proj/.venv/bin/python")  # the laptop's venv
    words = shlex.split(line, comments=True)[1:]
    for i, word in enumerate(words):
        if word in (">", "<", "|", "2>&1", "&&"):
            words = words[:i]
            break
    return [w for w in words if not re.fullmatch(r"\[.*\]|\.\.\.", w)]  # usage notation: [DIR], [OPTIONS]


def _stdin(line: str) -> Optional[str]:
    """The file a ``< FILE`` redirection feeds to the command."""
    m = re.search(r"<\s*(\S+)", line.split(" #")[0])
    return m.group(1) if m else None


def _parse_only(args: List[str]) -> bool:
    return bool(set(args[:2]) & PARSE_ONLY) or "--verify" in args or any(
        re.fullmatch(r"[A-Z_]+(\.\.\.)?", a) for a in args)  # usage lines: COMMAND [ARGS]...


def _takes(args: List[str], option: str) -> bool:
    ctx = click.Context(cli_group)
    command = cli_group.get_command(ctx, args[0])
    group = SUBCOMMANDS.get(args[0])
    if group is not None and len(args) > 1:
        command = group.get_command(ctx, args[1])
    return command is not None and any(option in p.opts for p in command.params)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the files the docs' commands name: report.md, report.json, facts.json, issue.md, reports/."""
    from contextlib import redirect_stdout

    from cudadoctor.cli.app import run

    tmp = tmp_path_factory.mktemp("docs")
    (tmp / "reports").mkdir()
    for name, fmt in (("report.md", "markdown"), ("report.json", "json"), ("fails.json", "json")):
        with redirect_stdout(io.StringIO()):
            assert run(["report", "--machine", str(LAPTOP), "--format", fmt, "-o", str(tmp / name)]) == 0
    with redirect_stdout(io.StringIO()):
        assert run(["report", "--machine", str(MACHINES / "h200-driver580-torch211-cu130"), "--format", "json",
                    "-o", str(tmp / "works.json")]) == 0
    for machine in ("laptop-rtx3060-driver470-torch25-cu124", "dgx-h100x8-driver570-torch27-cu128"):
        with redirect_stdout(io.StringIO()):
            run(["report", "--machine", str(MACHINES / machine), "--format", "json", "-o",
                 str(tmp / "reports" / f"{machine}.json")])
    # facts.json: the example docs/facts.md itself shows
    example = re.search(r"```json\n(.*?)```", (ROOT / "docs" / "facts.md").read_text(encoding="utf-8"), re.S)
    assert example, "docs/facts.md shows a facts.json"
    (tmp / "facts.json").write_text(example.group(1), encoding="utf-8")
    # issue.md: a real pasted report of the corpus (docs/pasted-reports.md shows its diagnosis)
    paste = HERE / "corpus" / "reports" / "a-pytorch-rtx5090d-sm120-torch26-cu126" / "paste.md"
    (tmp / "issue.md").write_text(paste.read_text(encoding="utf-8"), encoding="utf-8")
    # Dockerfile, compose.yaml: the worked example docs/docker.md shows; deploy.sh: a docker run line
    docker_md = (ROOT / "docs" / "docker.md").read_text(encoding="utf-8")
    for name, lang in (("Dockerfile", "dockerfile"), ("compose.yaml", "yaml")):
        block = re.search(rf"```{lang}\n(.*?)```", docker_md, re.S)
        assert block, f"docs/docker.md shows a {name}"
        (tmp / name).write_text(block.group(1), encoding="utf-8")
    (tmp / "deploy.sh").write_text("docker run --gpus all --ipc=host nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n",
                                   encoding="utf-8")
    return tmp


def test_the_docs_show_commands() -> None:
    assert len(COMMANDS) > 40
    shown = {line.split()[1] for _, line in COMMANDS}
    assert {"check", "report", "diagnose", "install", "fleet", "data", "smoke", "run"} <= shown


@pytest.mark.parametrize("where,line", COMMANDS, ids=[f"{w}: {c}"[:90] for w, c in COMMANDS])
def test_every_command_in_the_docs_runs(where: str, line: str, workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(workdir)
    args = _args(line, workdir)
    if _parse_only(args):
        args = [a for a in args if not re.fullmatch(r"[A-Z_]+(\.\.\.)?", a)]
        if "--" in args:  # run's own options only: what follows is the user's command
            args = args[:args.index("--")]
        code, out, err = cli([*args, "--help"], capsys)
        assert code == 0 and "Usage:" in out, f"{where}: {line}\n{err}"
        return
    if _takes(args, "--machine") and not {"--no-check", "--facts", "--snapshot"} & set(args):
        args += ["--machine", str(LAPTOP)]
    feed = _stdin(line)
    if feed:
        monkeypatch.setattr("sys.stdin", io.StringIO((workdir / feed).read_text(encoding="utf-8")))
    if _takes(args, "--no-smoke"):
        args.append("--no-smoke")
    code, out, err = cli(args, capsys)
    assert code in (0, 1), f"{where}: {line}\nexit {code}\n{err}"
    assert "Traceback" not in err


def test_install_plans_for_windows_as_docs_install_says(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/install.md: with the driver unknown, a CUDA 13 build may be planned for Windows; with
    a Windows driver known, none is (NVIDIA publishes no Windows minimum for CUDA 13)."""
    code, out, _ = cli(["install", "torch", "--gpu", "RTX 4090", "--os", "windows"], capsys)
    assert code == 0 and re.search(r"whl/cu13\d", out.splitlines()[0])
    code, out, _ = cli(["install", "torch", "--gpu", "RTX 4090", "--os", "windows", "--driver", "581.57"], capsys)
    assert code == 0 and re.search(r"whl/cu12\d", out.splitlines()[0])
    text = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    assert "no CUDA 13 build is\n  planned for Windows or WSL2." not in text


def test_docs_do_not_break_off_mid_sentence() -> None:
    """A paragraph of prose ends with a full stop, a colon or a closing mark, not "Details, bounds and"."""
    for path in DOCS:
        text = re.sub(r"^(`{3,}).*?^\1", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
        for paragraph in re.split(r"\n\s*\n", text):
            last = paragraph.strip().splitlines()[-1].strip() if paragraph.strip() else ""
            if not last or last.startswith(("#", "|", "<", "-", "*", ">", "[", "!")) or re.match(r"\d+\.", last):
                continue
            assert not re.search(r"\b(and|or|the|of|a|to|with|bounds)$", last), f"{path.name}: {last}"


def test_help_lists_what_the_docs_promise(capsys: pytest.CaptureFixture[str]) -> None:
    import pydoc

    import cudadoctor

    code, out, _ = cli(["data", "--help"], capsys)
    summary = out.split("Options:")[0]
    for sub in ("info", "validate", "show", "update", "rollback"):
        assert sub in summary, sub
    text = pydoc.render_doc(cudadoctor, renderer=pydoc.plaintext)
    for name in cudadoctor.__all__:
        if name[0].islower():
            assert re.search(rf"\b{name}\(", text), name
    code, out, _ = cli(["explain", "--help"], capsys)
    exit_doc = (ROOT / "docs" / "exit-codes.md").read_text(encoding="utf-8")
    assert ("--fail-on" in out) == bool(re.search(r"`explain`[^.]*take `--fail-on", exit_doc))


def test_verify_commands_paste_as_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """A quoted command (python -c '...') in a fix or a verify step is never wrapped inside its quotes."""
    code, out, _ = cli(["explain", "--no-check",
                        "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False"],
                       capsys)
    assert code == 0
    quoted = [line for line in out.splitlines() if "python -c" in line]
    assert quoted and all(line.count("'") % 2 == 0 for line in quoted), quoted
    assert os.linesep not in quoted[0]
