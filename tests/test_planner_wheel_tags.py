"""Wheel filenames and tag matching (cudadoctor.planner.wheel_tags), and fuzzing of everything in
`install --verify` that reads text from an index: filenames, HTML and JSON pages."""

from __future__ import annotations

import json
import string
from datetime import timedelta
from typing import Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version

from cudadoctor.planner import verify as pv
from cudadoctor.errors import CudadoctorError
from cudadoctor.planner.wheel_tags import (
    TagTarget,
    WheelName,
    describe_interpreters,
    normalize_name,
    parse_wheel_filename,
    tag_target,
)

FUZZ = settings(deadline=timedelta(seconds=1), max_examples=200)


# --------------------------------------------------------------------------- filenames


def test_parse_a_wheel_name_with_local_version_build_tag_and_compressed_tags() -> None:
    wheel = parse_wheel_filename("Torch_Vision-0.20.1+cu124-1abc-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl")
    assert wheel == WheelName(
        "torch-vision",
        Version("0.20.1+cu124"),
        "1abc",
        frozenset({("cp311", "cp311", "manylinux_2_17_x86_64"), ("cp311", "cp311", "manylinux2014_x86_64")}),
    )
    both = parse_wheel_filename("six-1.16.0-py2.py3-none-any.whl")
    assert both is not None and both.tags == {("py2", "none", "any"), ("py3", "none", "any")}


@pytest.mark.parametrize(
    "filename",
    [
        "torch-2.5.1.tar.gz",  # an sdist
        "torch-2.5.1-cp311-cp311.whl",  # four parts
        "torch-2.5.1-x-y-cp311-cp311-linux_x86_64.whl",  # seven parts
        "torch-latest-cp311-cp311-linux_x86_64.whl",  # not a PEP 440 version
        "torch-2.5.1-build-cp311-cp311-linux_x86_64.whl",  # a build tag starts with a digit
        "torch-2.5.1-cp311..cp312-cp311-linux_x86_64.whl",  # an empty tag in a set
        "-2.5.1-cp311-cp311-linux_x86_64.whl",  # no name
        "torch-2.5.1-cp311-cp311-linux x86_64.whl",  # a space
        "torch-" + "9" * 5000 + "-py3-none-any.whl",  # a number int() refuses
        ".whl",
        "",
    ],
)
def test_not_a_wheel_name(filename: str) -> None:
    assert parse_wheel_filename(filename) is None


def test_normalize_name() -> None:
    assert normalize_name("ONNXRuntime_GPU") == normalize_name("onnxruntime.gpu") == "onnxruntime-gpu"
    assert normalize_name("nvidia--cudnn__cu12") == "nvidia-cudnn-cu12"


# --------------------------------------------------------------------------- matching


@pytest.mark.parametrize(
    ("tags", "python", "platform", "libc", "fits"),
    [
        ("cp311-cp311-linux_x86_64", "3.11", "linux-x86_64", None, True),
        ("cp311-cp311-linux_x86_64", "3.12", "linux-x86_64", None, False),
        ("cp311-cp311-linux_x86_64", "3.11", "linux-aarch64", None, False),
        ("cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64", "3.11", "linux-x86_64", "glibc 2.17", True),
        ("cp311-cp311-manylinux2014_x86_64", "3.11", "linux-x86_64", "glibc 2.12", False),
        ("cp311-cp311-manylinux_2_28_x86_64", "3.11", "linux-x86_64", "2.17", False),
        ("cp311-cp311-manylinux_2_28_x86_64", "3.11", "linux-x86_64", None, True),
        ("cp311-cp311-manylinux_2_28_aarch64", "3.11", "linux-aarch64", "glibc 2.35", True),
        ("cp311-cp311-manylinux_2_28_aarch64", "3.11", "linux-arm64", None, True),
        ("cp311-cp311-musllinux_1_2_x86_64", "3.11", "linux-x86_64", None, False),
        ("cp311-cp311-musllinux_1_2_x86_64", "3.11", "linux-x86_64", "musl 1.2", True),
        ("cp311-cp311-musllinux_1_2_x86_64", "3.11", "linux-x86_64", "musl 1.1", False),
        ("cp311-cp311-manylinux_2_17_x86_64", "3.11", "linux-x86_64", "musl 1.2", False),
        ("cp311-cp311-win_amd64", "3.11", "windows-x86_64", None, True),
        ("cp311-cp311-win_amd64", "3.11", "win-amd64", None, True),
        ("cp311-cp311-win_amd64", "3.11", "linux-x86_64", None, False),
        ("cp311-cp311-win_arm64", "3.11", "windows-x86_64", None, False),
        ("cp311-cp311-win32", "3.11", "win32", None, True),
        ("cp311-cp311-macosx_11_0_arm64", "3.11", "macos-arm64", None, True),
        ("cp311-cp311-macosx_11_0_arm64", "3.11", "macosx-14.0-arm64", None, True),
        ("cp311-cp311-macosx_10_9_universal2", "3.11", "macos-x86_64", None, True),
        ("cp311-cp311-macosx_10_9_x86_64", "3.11", "macos-arm64", None, False),
        ("cp39-abi3-manylinux_2_17_x86_64", "3.11", "linux-x86_64", None, True),
        ("cp312-abi3-manylinux_2_17_x86_64", "3.11", "linux-x86_64", None, False),
        ("cp39-abi3-manylinux_2_17_x86_64", "3.13t", "linux-x86_64", None, False),
        ("cp313-cp313t-manylinux_2_17_x86_64", "3.13t", "linux-x86_64", None, True),
        ("cp313-cp313t-manylinux_2_17_x86_64", "3.13", "linux-x86_64", None, False),
        ("cp313-cp313-manylinux_2_17_x86_64", "3.13t", "linux-x86_64", None, False),
        ("cp37-cp37m-linux_x86_64", "3.7", "linux-x86_64", None, True),
        ("cp311-none-linux_x86_64", "3.11", "linux-x86_64", None, True),
        ("cp310-none-linux_x86_64", "3.11", "linux-x86_64", None, False),
        ("py3-none-any", "3.11.7", "linux-x86_64", None, True),
        ("py2.py3-none-any", "3.11", "windows-x86_64", None, True),
        ("py310-none-any", "3.11", "linux-x86_64", None, True),
        ("py312-none-any", "3.11", "linux-x86_64", None, False),
        ("py2-none-any", "3.11", "linux-x86_64", None, False),
        ("pp310-pypy310_pp73-manylinux_2_17_x86_64", "3.10", "linux-x86_64", None, False),
    ],
)
def test_which_tags_a_target_accepts(tags: str, python: str, platform: str, libc: Optional[str], fits: bool) -> None:
    wheel = parse_wheel_filename(f"pkg-1.0-{tags}.whl")
    assert wheel is not None
    assert (tag_target(python, platform, libc).rank(wheel.tags) is not None) is fits


def test_more_specific_tags_rank_first() -> None:
    target = tag_target("3.11", "linux-x86_64")
    order = [
        ("cp311", "cp311", "manylinux_2_17_x86_64"),
        ("cp311", "abi3", "manylinux_2_17_x86_64"),
        ("cp39", "abi3", "manylinux_2_17_x86_64"),
        ("py3", "none", "manylinux_2_17_x86_64"),
        ("cp311", "cp311", "linux_x86_64"),
        ("py3", "none", "any"),
    ]
    ranks = [target.rank([tag]) for tag in order]
    assert all(rank is not None for rank in ranks)
    assert ranks == sorted(ranks)  # type: ignore[type-var]


def test_target_words_for_messages() -> None:
    assert (tag_target("3.13t", "linux-x86_64").interpreter, tag_target("3.13t", "linux-x86_64").platform_label) == (
        "cp313t",
        "linux_x86_64",
    )
    assert tag_target("3.11", "windows-x86_64").platform_label == "win_amd64"
    assert tag_target("3.11", "macos-arm64").platform_label == "macosx_arm64"
    assert tag_target("3.11", "linux-x86_64", "musl 1.2").platform_label == "musllinux_x86_64"


@pytest.mark.parametrize(
    ("python", "platform", "libc"),
    [("2.7", "linux-x86_64", None), ("3", "linux-x86_64", None), ("3.11", "linux", None),
     ("3.11", "x86_64", None), ("3.11", "linux-x86_64", "uclibc 1.0")],
)
def test_unreadable_targets_are_usage_errors(python: str, platform: str, libc: Optional[str]) -> None:
    with pytest.raises(CudadoctorError):
        tag_target(python, platform, libc)


def test_describe_interpreters() -> None:
    tags = [(f"cp3{m}", f"cp3{m}", "linux_x86_64") for m in (9, 10, 11, 12)]
    tags += [("cp313", "cp313t", "linux_x86_64"), ("cp38", "abi3", "win_amd64"), ("py3", "none", "any"), ("cp37", "cp37m", "x")]
    assert describe_interpreters(tags) == "cp37, cp39–cp312, cp313t, cp38-abi3, py3"
    assert describe_interpreters([("cp39", "cp39", "a"), ("cp311", "cp311", "a")]) == "cp39, cp311"


# --------------------------------------------------------------------------- fuzzing

any_text = st.text(alphabet=st.characters(blacklist_categories=()), max_size=200)
tag_word = st.text(alphabet=string.ascii_letters + string.digits + "_", min_size=0, max_size=12)
near_filename = st.builds(
    lambda parts, sep, end: sep.join(parts) + end,
    st.lists(st.one_of(tag_word, st.sampled_from(["torch", "2.5.1+cu124", "cp311", "abi3", "none", "any", "1"]),
                       st.lists(tag_word, max_size=3).map(".".join)), max_size=8),
    st.sampled_from(["-", "-", "_", "."]),
    st.sampled_from([".whl", ".whl", ".tar.gz", ""]),
)


@FUZZ
@given(st.one_of(any_text, near_filename))
def test_parse_wheel_filename_is_total(filename: str) -> None:
    result = parse_wheel_filename(filename)
    assert result is None or isinstance(result, WheelName)


@FUZZ
@given(st.lists(st.tuples(tag_word, tag_word, tag_word), max_size=5), st.sampled_from(["3.11", "3.13t", "3.7"]),
       st.sampled_from(["linux-x86_64", "linux-aarch64", "windows-x86_64", "macos-arm64", "macos-x86_64"]))
def test_rank_is_total(tags: list, python: str, platform: str) -> None:  # type: ignore[type-arg]
    rank = tag_target(python, platform, "glibc 2.28").rank(tags)
    assert rank is None or isinstance(rank, tuple)
    assert isinstance(describe_interpreters(tags), str)


@FUZZ
@given(any_text, any_text, st.one_of(st.none(), any_text))
def test_tag_target_accepts_or_raises_a_usage_error(python: str, platform: str, libc: Optional[str]) -> None:
    try:
        assert isinstance(tag_target(python, platform, libc), TagTarget)
    except CudadoctorError:
        pass


html_near = st.lists(
    st.one_of(
        any_text,
        st.builds(lambda href, attr: f'<a href="{href}"{attr}>x</a>', any_text,
                  st.sampled_from(["", " data-yanked", ' data-requires-python="&gt;=3.8"'])),
        st.sampled_from(["<base href='http://[::1'>", '<a href="http://[bad">', "<![if x]>", "<!-->", "</a>"]),
    ),
    max_size=6,
).map("".join)


@FUZZ
@given(st.one_of(any_text, html_near))
def test_html_pages_never_raise(text: str) -> None:
    for f in pv._parse_html(text, "http://127.0.0.1/simple/x/"):
        assert isinstance(f.filename, str) and isinstance(f.url, str)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
json_near = st.builds(
    lambda files, meta: {"meta": meta, "files": files},
    st.lists(st.one_of(json_values, st.fixed_dictionaries({"filename": json_values, "url": json_values,
                                                             "yanked": json_values, "requires-python": json_values}))),
    json_values,
)


@FUZZ
@given(st.one_of(any_text, json_near.map(json.dumps), json_values.map(json.dumps)))
def test_json_pages_parse_or_fail_as_an_index_error(text: str) -> None:
    try:
        files = pv._parse_json(text, "http://127.0.0.1/simple/x/", "http://127.0.0.1/simple/", "x")
    except pv._IndexFailure as exc:
        assert "\n" not in str(exc)
    else:
        assert all(isinstance(f.filename, str) and isinstance(f.url, str) for f in files)
