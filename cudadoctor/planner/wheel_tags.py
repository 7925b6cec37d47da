"""Wheel filenames and tags: which files of an index a given Python and platform can install.

The rules are those of the packaging specifications, not compatibility data:

- a wheel is named ``name-version(-build)?-pytag-abitag-plattag.whl`` and each tag field may be a
  '.'-separated set ("compressed tag set"): binary distribution format,
  https://packaging.python.org/en/latest/specifications/binary-distribution-format/
- which tags an interpreter accepts (cpXY with its own ABI, abi3 of any earlier cp3Z, "none",
  py3*), https://packaging.python.org/en/latest/specifications/platform-compatibility-tags/
- manylinux_X_Y / musllinux_X_Y name the libc a wheel needs (PEP 600, PEP 656); the legacy
  manylinux1/2010/2014 names are aliases PEP 600 defines.
- project names compare after PEP 503 normalisation.

Nothing here raises on text read from an index: :func:`parse_wheel_filename` returns None for
anything that is not a wheel name. Bad *user* input (a Python or platform we cannot read) raises
:class:`~cudadoctor.errors.CudadoctorError`.
"""

from __future__ import annotations

import re
from typing import FrozenSet, Iterable, List, Optional, Set, Tuple
from cudadoctor.record import frozen

from packaging.version import Version

from cudadoctor.errors import CudadoctorError

Tag = Tuple[str, str, str]  # (interpreter, abi, platform)
Rank = Tuple[int, int, int]  # smaller is a better (more specific) match, as pip orders tags

_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._]*[A-Za-z0-9])?\Z")
_BUILD = re.compile(r"[0-9][A-Za-z0-9_.]*\Z")
_TAG_PART = re.compile(r"[A-Za-z0-9_]+\Z")
_PYTHON = re.compile(r"\s*(?:python\s*)?(\d{1,4})\.(\d{1,4})(?:\.\d{1,6})?(t?)\s*\Z", re.IGNORECASE | re.ASCII)
_LIBC = re.compile(r"\s*(glibc|musl)?\s*(?:(\d{1,4})\.(\d{1,4})(?:\.\d{1,6})*)?\s*\Z", re.IGNORECASE | re.ASCII)
_MANYLINUX = re.compile(r"(manylinux|musllinux)_(\d{1,4})_(\d{1,4})_(.+)\Z")
_MACOS = re.compile(r"macosx_\d+_\d+_(.+)\Z")

# PEP 600: the legacy manylinux names and the glibc each stands for.
_LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}

# Architecture spellings (sysconfig, uname, wheel tags) -> the one each OS's wheel tags use.
_ARCH_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64", "i386": "i686", "x86": "i686"}
_WINDOWS_PLATFORM = {"x86_64": "win_amd64", "aarch64": "win_arm64", "i686": "win32"}
# macOS: the binary formats a wheel may name that contain this CPU (packaging.tags' list).
_MACOS_FORMATS = {
    "aarch64": frozenset({"arm64", "universal2"}),
    "x86_64": frozenset({"x86_64", "intel", "fat64", "fat32", "universal2", "universal"}),
}


def normalize_name(name: str) -> str:
    """PEP 503: runs of '-', '_' and '.' become one '-', and the name is lower-cased."""
    return re.sub(r"[-_.]+", "-", name).lower()


@frozen
class WheelName:
    """What a wheel's filename says: project (PEP 503-normalised), version, build tag, tags."""

    project: str
    version: Version
    build: Optional[str]
    tags: FrozenSet[Tag]


def parse_wheel_filename(filename: str) -> Optional[WheelName]:
    """The parts of ``torch-2.5.1+cu124-cp311-cp311-linux_x86_64.whl``; None if it is not a
    well-formed wheel filename (an sdist, a stray link, garbage)."""
    if not filename.endswith(".whl"):
        return None
    parts = filename[: -len(".whl")].split("-")
    if len(parts) not in (5, 6):
        return None
    name, version_text = parts[0], parts[1]
    build = parts[2] if len(parts) == 6 else None
    if not _NAME.match(name) or (build is not None and not _BUILD.match(build)):
        return None
    try:
        version = Version(version_text)
    except ValueError:  # InvalidVersion, or a number too long for int()
        return None
    tag_sets = [field.split(".") for field in parts[-3:]]
    if any(not _TAG_PART.match(tag) for tags in tag_sets for tag in tags):
        return None
    tags = frozenset((py, abi, plat) for py in tag_sets[0] for abi in tag_sets[1] for plat in tag_sets[2])
    return WheelName(normalize_name(name), version, build, tags)


@frozen
class TagTarget:
    """An interpreter and platform to install for, and the wheel tags it accepts."""

    python: Tuple[int, int]  # (3, 11)
    free_threaded: bool  # a 3.13t-style build: its own ABI, no abi3
    os: str  # linux | windows | macos
    arch: str  # x86_64, aarch64, i686, ppc64le, ...
    libc: str = "glibc"  # linux only: glibc | musl
    libc_version: Optional[Tuple[int, int]] = None  # None: any manylinux/musllinux is accepted

    @property
    def interpreter(self) -> str:
        """The tag pip reports for this Python: cp311, cp313t."""
        return f"cp{self.python[0]}{self.python[1]}" + ("t" if self.free_threaded else "")

    @property
    def platform_label(self) -> str:
        """The platform in wheel-tag words, for messages: linux_x86_64, win_amd64, macosx_arm64."""
        if self.os == "windows":
            return _WINDOWS_PLATFORM.get(self.arch, f"win_{self.arch}")
        if self.os == "macos":
            return "macosx_" + ("arm64" if self.arch == "aarch64" else self.arch)
        return ("musllinux_" if self.libc == "musl" else "linux_") + self.arch

    def rank(self, tags: Iterable[Tag]) -> Optional[Rank]:
        """The best rank among ``tags`` this target accepts; None if it accepts none of them."""
        ranks = [r for r in (self._tag_rank(tag) for tag in tags) if r is not None]
        return min(ranks) if ranks else None

    def _tag_rank(self, tag: Tag) -> Optional[Rank]:
        interpreter, abi, platform = (part.lower() for part in tag)
        abi_rank = self._abi_rank(interpreter, abi)
        platform_rank = self._platform_rank(platform)
        if abi_rank is None or platform_rank is None:
            return None
        return (platform_rank, abi_rank[0], abi_rank[1])

    def _abi_rank(self, interpreter: str, abi: str) -> Optional[Tuple[int, int]]:
        major, minor = self.python
        own = f"cp{major}{minor}"
        if interpreter == own and abi == own + ("t" if self.free_threaded else ""):
            return (0, 0)
        if interpreter == own and abi == own + "m" and (major, minor) <= (3, 7) and not self.free_threaded:
            return (0, 1)  # CPython 3.7 and older named their ABI cp37m
        if abi == "abi3" and not self.free_threaded:
            m = re.fullmatch(rf"cp{major}(\d{{1,4}})", interpreter)
            if m and int(m.group(1)) <= minor:
                return (1, minor - int(m.group(1)))  # the newest abi3 floor first
            return None
        if abi != "none":
            return None
        if interpreter == own:
            return (2, 0)
        if interpreter == f"py{major}{minor}":
            return (3, 0)
        if interpreter == f"py{major}":
            return (4, 0)
        m = re.fullmatch(rf"py{major}(\d{{1,4}})", interpreter)
        if m and int(m.group(1)) < minor:
            return (5, minor - int(m.group(1)))
        return None

    def _platform_rank(self, platform: str) -> Optional[int]:
        if platform == "any":
            return 9
        if self.os == "windows":
            return 0 if platform == _WINDOWS_PLATFORM.get(self.arch, f"win_{self.arch}") else None
        if self.os == "macos":
            m = _MACOS.match(platform)
            return 0 if m and m.group(1) in _MACOS_FORMATS.get(self.arch, {self.arch}) else None
        return self._linux_rank(platform)

    def _linux_rank(self, platform: str) -> Optional[int]:
        if platform == f"linux_{self.arch}":
            return 5  # a plain linux wheel (PyTorch's own index names its wheels so)
        family, sep, arch = platform.partition("_")
        if family in _LEGACY_MANYLINUX and sep and arch == self.arch:
            return 0 if self.libc == "glibc" and self._libc_ok(_LEGACY_MANYLINUX[family]) else None
        m = _MANYLINUX.match(platform)
        if not m or m.group(4) != self.arch:
            return None
        wanted = "manylinux" if self.libc == "glibc" else "musllinux"
        version = (int(m.group(2)), int(m.group(3)))
        return 0 if m.group(1) == wanted and self._libc_ok(version) else None

    def _libc_ok(self, needed: Tuple[int, int]) -> bool:
        return self.libc_version is None or needed <= self.libc_version


def tag_target(python_version: str, platform_tag: str, libc: Optional[str] = None) -> TagTarget:
    """Read ``"3.11"`` (or ``"3.13t"``, ``"3.11.7"``), a platform (``linux-x86_64``,
    ``linux-aarch64``, ``windows-x86_64``, ``macos-arm64``, or sysconfig's ``win-amd64``,
    ``macosx-11.0-arm64``) and an optional libc (``"glibc 2.31"``, ``"musl 1.2"``, ``"2.31"``).

    Raises CudadoctorError (a usage error) for anything it cannot read."""
    m = _PYTHON.match(python_version or "")
    if not m or m.group(1) != "3":
        raise CudadoctorError(f"cannot read Python version {python_version!r}", hint="give it as 3.11 (or 3.13t)")
    python = (3, int(m.group(2)))
    os_name, arch = _read_platform(platform_tag)
    libc_name, libc_version = _read_libc(libc) if os_name == "linux" else ("glibc", None)
    return TagTarget(python, bool(m.group(3)), os_name, arch, libc_name, libc_version)


def _read_platform(platform_tag: str) -> Tuple[str, str]:
    text = (platform_tag or "").strip().lower()
    if text == "win32":
        return "windows", "i686"
    head, _, tail = text.partition("-")
    arch = tail.rpartition("-")[2] if head == "macosx" else tail  # macosx-11.0-arm64
    arch = _ARCH_ALIASES.get(arch, arch)
    os_name = {"linux": "linux", "windows": "windows", "win": "windows", "macos": "macos", "macosx": "macos"}.get(head)
    if os_name is None or not re.fullmatch(r"[a-z0-9_]+", arch):
        raise CudadoctorError(
            f"cannot read platform {platform_tag!r}",
            hint="give it as linux-x86_64, linux-aarch64, windows-x86_64 or macos-arm64",
        )
    return os_name, arch


def _read_libc(libc: Optional[str]) -> Tuple[str, Optional[Tuple[int, int]]]:
    if libc is None:
        return "glibc", None
    m = _LIBC.match(libc)
    if not m or not (m.group(1) or m.group(2)):
        raise CudadoctorError(f"cannot read libc {libc!r}", hint='give it as "glibc 2.31" or "musl 1.2"')
    version = (int(m.group(2)), int(m.group(3))) if m.group(2) else None
    return (m.group(1) or "glibc").lower(), version


def describe_interpreters(tags: Iterable[Tag]) -> str:
    """What Pythons a set of wheel tags serves, compactly: 'cp39–cp312, cp313t, cp38-abi3, py3'."""
    minors: Set[int] = set()
    others: Set[str] = set()
    for py, abi, _ in ((py.lower(), abi.lower(), plat) for py, abi, plat in tags):
        m = re.fullmatch(r"cp3(\d{1,4})", py)
        if m and abi in (py, py + "m"):
            minors.add(int(m.group(1)))
        else:
            others.add(py + "t" if abi == py + "t" else py if abi == "none" else f"{py}-{abi}")
    runs: List[List[int]] = []
    for minor in sorted(minors):
        if runs and runs[-1][1] == minor - 1:
            runs[-1][1] = minor
        else:
            runs.append([minor, minor])
    words = [f"cp3{a}" if a == b else f"cp3{a}–cp3{b}" for a, b in runs]
    return ", ".join(words + sorted(others))
