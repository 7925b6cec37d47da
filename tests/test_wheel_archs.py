"""tools/wheel_archs.py reads the SASS and PTX targets of a wheel's CUDA libraries from their fatbin
headers (framework_archs.json's source); the fatbins here are built by hand, byte by byte."""

from __future__ import annotations

import io
import os
import struct
import sys
import zipfile
from typing import List, Tuple

from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tools"))
import wheel_archs  # noqa: E402


def _entry(kind: int, arch: int, isa: Tuple[int, int] = (8, 5), arch_specific: bool = False) -> bytes:
    payload = b"\0" * 8
    head = struct.pack("<HHIQ", kind, 0, 64, len(payload)) + b"\0" * 8
    head += struct.pack("<HHI", isa[1], isa[0], arch) + b"\0" * 8
    head += struct.pack("<Q", wheel_archs.ARCH_SPECIFIC if arch_specific else 0)
    return head + b"\0" * (64 - len(head)) + payload


def _fatbin(entries: List[bytes]) -> bytes:
    body = b"".join(entries)
    return wheel_archs.MAGIC + struct.pack("<HHQ", 1, 16, len(body)) + body


def test_sass_ptx_and_arch_specific_targets() -> None:
    data = b"ELF junk" + _fatbin([_entry(2, 80), _entry(2, 90, arch_specific=True), _entry(1, 90, (9, 0))]) + b"tail"
    assert wheel_archs.library(data) == {"sass": ["8.0", "9.0a"], "ptx": ["9.0"], "ptx_isa": ["9.0"]}


def test_a_wheel_with_tensorflows_build_info() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as whl:
        whl.writestr("tensorflow/python/platform/build_info.py",
                     "build_info = collections.OrderedDict([('cuda_compute_capabilities', ['sm_60', 'compute_90']), "
                     "('cuda_version', '12.5.1')])")
        whl.writestr("tensorflow/libtensorflow_cc.so.2", _fatbin([_entry(2, 60), _entry(1, 90)]))
        whl.writestr("tensorflow/libplain.so", b"no CUDA here")
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "tf_test_wheel_archs.whl")
    with open(path, "wb") as fh:
        fh.write(buf.getvalue())
    try:
        found = wheel_archs.scan(path)
    finally:
        os.unlink(path)
    assert found["build_info"] == {"cuda_compute_capabilities": ["sm_60", "compute_90"], "cuda_version": "12.5.1"}
    assert found["libraries"] == {"tensorflow/libtensorflow_cc.so.2": {"sass": ["6.0"], "ptx": ["9.0"],
                                                                       "ptx_isa": ["8.5"]}}


@settings(max_examples=200)
@given(st.binary(max_size=400), st.integers(min_value=0, max_value=400))
def test_any_bytes_are_read_without_an_exception(noise: bytes, cut: int) -> None:
    framed = noise[:cut] + wheel_archs.MAGIC + noise[cut:]
    wheel_archs.fatbin_entries(framed)
    wheel_archs.library(noise)
