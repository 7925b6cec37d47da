"""The container readers on arbitrary and hostile text: they never raise, what they return stays
no larger than the input (no alias expansion, no runaway nesting), and the checks that follow
never crash on what the readers return."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings, strategies as st

from cudadoctor.checks.containers import check_spec
from cudadoctor.checks.containers_facts import host_facts
from cudadoctor.containers import read_spec
from cudadoctor.containers.model import MAX_BYTES
from cudadoctor.containers.yamlish import Node, parse
from cudadoctor.data.source import default_matrix
from cudadoctor.model import Severity
from cudadoctor.planner.target import described

MATRIX = default_matrix()
HOST = host_facts(MATRIX, described(MATRIX, "535.104.05", ["A100"], gpu=True), "the described machine")

PIECES = st.sampled_from([
    "FROM ", "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04", " AS ", "build", "ARG ", "ENV ", "RUN ", "CMD ",
    "pip install ", "torch==2.5.1+cu121", " --index-url https://download.pytorch.org/whl/cu118", "flash-attn",
    "uv pip install ", "conda install -c nvidia pytorch-cuda=12.1", "sh -c '", "&&", "\\\n", "<<EOF\n", "EOF\n",
    "${", "}", "$X", ":-", "\"", "'", "[", "]", "{", "}", ": ", "- ", "  ", "    ", "\n", "\t", "#", "&a ", "*a",
    "<<: *a", "|", ">", "services:", "image: ", "deploy:", "devices:", "capabilities: [gpu]", "driver: nvidia",
    "shm_size: 64m", "ipc: host", "environment:", "NVIDIA_VISIBLE_DEVICES=void", "CUDA_VISIBLE_DEVICES=",
    "docker run ", "--gpus all ", "--shm-size=", "-e ", "torchrun ", "---", "\x00", "é", "=",
])
TEXTS = st.lists(PIECES | st.text(max_size=8), max_size=60).map("".join)
NAMES = st.sampled_from(["Dockerfile", "compose.yaml", "run.sh", "notes.txt", "x.yml"])


def _size(node: Node) -> int:
    if isinstance(node.value, dict):
        return 1 + sum(_size(v) for v in node.value.values())
    if isinstance(node.value, list):
        return 1 + sum(_size(v) for v in node.value)
    return 1


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS, name=NAMES)
def test_readers_and_checks_never_raise_and_stay_bounded(text: str, name: str) -> None:
    spec = read_spec(name, text)
    lines = text.count("\n") + 1
    assert len(spec.units) <= lines
    assert sum(len(i.requirements) for u in spec.units for i in u.installs) <= len(text)
    assert all(0 <= u.line <= lines for u in spec.units)
    found = check_spec(spec, HOST, MATRIX)
    assert not [f for f in found if f.finding.severity is Severity.CRASHED], found
    assert all(0 <= f.line <= lines for f in found)
    # at most a sequence, a mapping and a value start on one line ('- key: value'), one more per flow item
    assert _size(parse(text)) <= 3 * (lines + text.count("[") + text.count("{") + text.count(",") + 1)


def test_aliases_are_not_expanded() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"] + [f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]"
                                                   for p, c in zip("abcdefgh", "bcdefghi")]
    node = parse("\n".join(lines))
    assert _size(node) < 200


def test_deep_nesting_is_cut() -> None:
    deep = "\n".join("  " * i + f"k{i}:" for i in range(5000))
    start = time.perf_counter()
    parse(deep)
    read_spec("compose.yaml", "services:\n" + deep)
    assert time.perf_counter() - start < 5


def test_a_huge_file_is_read_up_to_the_limit() -> None:
    text = "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n" + "RUN echo x\n" * (MAX_BYTES // 11 + 10)
    spec = read_spec("Dockerfile", text)
    assert spec.truncated and any("only the first" in note for _, note in spec.notes)


def test_long_continuations_and_unclosed_heredocs() -> None:
    text = "FROM python:3.11\nRUN pip install torch \\\n" + "  x \\\n" * 50000 + "\nRUN <<EOF\n" + "echo\n" * 20000
    start = time.perf_counter()
    spec = read_spec("Dockerfile", text)
    assert time.perf_counter() - start < 5 and spec.units


def test_line_numbers_are_an_editors() -> None:
    """CRLF files read as LF ones; a lone \\r or U+2028 inside a line is no line break (str.splitlines
    would make it one, and every later line number would be off)."""
    text = "FROM nvidia/cuda:12.4.1-base-ubuntu22.04\nENV A=x\rB\nENV NVIDIA_VISIBLE_DEVICES=none\u2028\n"
    for variant in (text, text.replace("\n", "\r\n")):
        spec = read_spec("Dockerfile", variant)
        found = check_spec(spec, HOST, MATRIX)
        assert [f.line for f in found if f.finding.code == "nvidia-visible-devices-none"] == [3]
        assert [f.line for f in found if f.finding.code == "driver-minor-version-compat"] == [1]
