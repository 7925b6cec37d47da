"""What GPU code a framework wheel carries: the SASS and PTX targets of every CUDA library in it,
for framework_archs.json.

    python tools/wheel_archs.py WHEEL_OR_FOLDER...

For each wheel (or unpacked folder) it prints one JSON line: the wheel, every shared library with
CUDA code and its SASS targets ('9.0', '9.0a' for an arch-specific one), PTX targets and PTX ISA
versions (8.5 is CUDA 12.5's), and TensorFlow's build_info.py (cuda_compute_capabilities,
cuda_version) or ONNX Runtime's build_and_package_info.py where the wheel has one. It reads the
fatbin headers of the ELF files itself (no CUDA toolkit needed); `cuobjdump --list-elf/--list-ptx`
gives the same lists where a toolkit is installed. Get a wheel with
`pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 NAME==VERSION`.
"""

from __future__ import annotations

import json
import os
import re
import struct
import sys
import zipfile
from typing import Dict, Iterator, List, Optional, Tuple

MAGIC = b"\x50\xed\x55\xba"  # a fatbin's header
ARCH_SPECIFIC = 0x100000  # entry flag of an sm_XYa / compute_XYa target (cuobjdump 13 prints the same names)
MAX_HEADER = 4096


def fatbin_entries(data: bytes) -> List[Tuple[str, int, str, str]]:
    """(kind 'ELF'|'PTX', arch number 90, suffix '' | 'a', PTX ISA 'M.m') of every fatbin entry in
    ``data``. Malformed headers are skipped, never raised on."""
    out: List[Tuple[str, int, str, str]] = []
    pos, n = 0, len(data)
    while True:
        i = data.find(MAGIC, pos)
        if i < 0 or i + 16 > n:
            return out
        pos = i + 4
        _, version, header, size = struct.unpack_from("<IHHQ", data, i)
        if version != 1 or header != 16 or size == 0 or i + 16 + size > n:
            continue
        entry, end, found = i + header, i + header + size, []
        while entry + 64 <= end:
            kind, _, entry_header, entry_size = struct.unpack_from("<HHIQ", data, entry)
            if kind not in (1, 2) or not 64 <= entry_header <= MAX_HEADER:
                found = []
                break
            minor, major, arch = struct.unpack_from("<HHI", data, entry + 24)
            flags = struct.unpack_from("<Q", data, entry + 40)[0]
            found.append(("PTX" if kind == 1 else "ELF", arch, "a" if flags & ARCH_SPECIFIC else "", f"{major}.{minor}"))
            entry += entry_header + entry_size
        if found:
            out += found
            pos = max(pos, end)


def _cc(arch: int, suffix: str) -> str:
    return f"{arch // 10}.{arch % 10}{suffix}"


def _key(cc: str) -> Tuple[int, int, str]:
    major, minor = cc.rstrip("af").split(".")
    return int(major), int(minor), cc[len(cc.rstrip("af")):]


def library(data: bytes) -> Optional[Dict[str, List[str]]]:
    entries = fatbin_entries(data)
    if not entries:
        return None
    sass = sorted({_cc(a, s) for k, a, s, _ in entries if k == "ELF"}, key=_key)
    ptx = sorted({_cc(a, s) for k, a, s, _ in entries if k == "PTX"}, key=_key)
    isa = sorted({v for k, _, _, v in entries if k == "PTX"}, key=lambda v: tuple(map(int, v.split("."))))
    return {"sass": sass, "ptx": ptx, "ptx_isa": isa}


_BUILD_INFO = re.compile(r"\('(cuda_compute_capabilities|cuda_version)', (\[[^\]]*\]|'[^']*')\)")


def build_info(text: str) -> Dict[str, object]:
    """TensorFlow's build_info.py / ONNX Runtime's build_and_package_info.py: what the build says it targets."""
    out: Dict[str, object] = {}
    for name, value in _BUILD_INFO.findall(text):
        out[name] = re.findall(r"'([^']*)'", value) if value.startswith("[") else value.strip("'")
    m = re.search(r"cuda_version\s*=\s*['\"]([\d.]+)['\"]", text)
    if m and "cuda_version" not in out:
        out["cuda_version"] = m.group(1)
    return out


def _members(path: str) -> Iterator[Tuple[str, bytes]]:
    if os.path.isdir(path):
        for root, _, files in os.walk(path):
            for name in sorted(files):
                full = os.path.join(root, name)
                if ".so" in name or name.endswith("build_info.py") or name == "build_and_package_info.py":
                    with open(full, "rb") as fh:
                        yield os.path.relpath(full, path), fh.read()
        return
    with zipfile.ZipFile(path) as whl:
        for info in whl.infolist():
            name = info.filename
            if ".so" in os.path.basename(name) or name.endswith(("build_info.py", "build_and_package_info.py")):
                yield name, whl.read(info)


def scan(path: str) -> Dict[str, object]:
    libraries: Dict[str, object] = {}
    info: Dict[str, object] = {}
    for name, data in _members(path):
        if name.endswith(".py"):
            info.update(build_info(data.decode("utf-8", "replace")))
            continue
        found = library(data)
        if found is not None:
            libraries[name] = found
    return {"wheel": os.path.basename(path.rstrip("/")), "build_info": info or None, "libraries": libraries}


def main(argv: Optional[List[str]] = None) -> int:
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    for path in paths:
        try:
            print(json.dumps(scan(path), sort_keys=True))
        except (OSError, zipfile.BadZipFile) as exc:
            print(f"wheel_archs: {path}: {exc}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
