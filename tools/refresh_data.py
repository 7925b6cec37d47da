#!/usr/bin/env python3
"""What compat_data/ lacks, read from the indexes (maintainers only; not in the wheel).

    python tools/refresh_data.py [--data compat_data] [--config tools/refresh_packages.json]
                                 [--check [--days N]] [--today YYYY-MM-DD] [--no-pytorch-index]
                                 [--pypi-json URL] [--pytorch-index URL] [--timeout S]

For every PyPI project the data tracks (``tools/refresh_packages.json``) it reads PyPI's JSON API
and, for torch, PyTorch's wheel index, then prints what the data lacks:

- a release (final, not yanked) newer than the table's oldest record that no record covers;
- a variant of a torch release (``2.14.0+cu129``) or a platform of one that ``pytorch.json`` lacks;
- a Python version the wheels of a known release are tagged for (``cp315``) that the record omits;
- a known release whose Requires-Python (as PyPI serves it) differs from the record's, or that the
  record lacks (``requires_python`` in refresh_packages.json: vLLM's Python floors);
- a pin the table keys by another project's release: the triton each torch release (patch releases
  included) pins is looked up in ``triton.json`` (``key: torch``; ``missing`` words the gap);
- a version of a meta-package that a record lists in a field (``match: field``, a list allowed: the
  ``pypi`` versions of PyPI's ``cuda-toolkit`` per CUDA release, re-releases such as 13.4.3 included).

Each missing release comes with a draft record: the pins read from one of its wheels' METADATA
(the PEP 658 ``.metadata`` file, else the ``METADATA`` member read from the wheel with HTTP range
requests), its Python versions from the wheel tags, its upload date and its source. Drafts are for
review: the tool never writes compat_data/.

``--check`` prints only the gaps and exits 1 when one is older than ``--days`` (default 30), so a
scheduled CI job says the data is stale; 0 when nothing older is missing. Index URLs come from
``compat_data/package_indexes.json`` (``pypi-json``, ``pytorch-wheels-all``) unless given.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import re
import sys
import zipfile
from dataclasses import dataclass, field
from email.parser import HeaderParser
from html.parser import HTMLParser
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple
from urllib.parse import urljoin

import requests
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from cudadoctor.matrix._ecocommon import in_range  # noqa: E402
from cudadoctor.matrix.versions import vkey  # noqa: E402

DATA = os.path.join(os.path.dirname(HERE), "compat_data")
CONFIG = os.path.join(HERE, "refresh_packages.json")
PINNED = re.compile(r"^(nvidia-|cuda-|jax|triton|tensorrt|torch)", re.I)  # the requirements a record cares about
PLATFORMS = (("manylinux", "x86_64", "linux-x86_64"), ("manylinux", "aarch64", "linux-aarch64"),
             ("linux", "x86_64", "linux-x86_64"), ("linux", "aarch64", "linux-aarch64"),
             ("win", "amd64", "windows-x86_64"), ("macosx", "arm64", "macos-arm64"))
PREFERRED = ("manylinux", "x86_64")  # the wheel whose METADATA a draft reads, when there is one


class RefreshError(Exception):
    """A failure of an index or of the data: one line, exit status 2."""


@dataclass(frozen=True)
class WheelFile:
    filename: str
    url: str
    uploaded: str  # YYYY-MM-DD
    size: int = 0
    metadata: bool = False  # the index says a PEP 658 .metadata file exists


@dataclass
class Gap:
    """One thing the data lacks."""

    kind: str  # release | variant | python
    package: str
    version: str
    table: str
    uploaded: str
    detail: str
    draft: Optional[Dict[str, Any]] = None

    def line(self) -> str:
        return f"{self.table}: {self.package} {self.version} ({self.kind}, uploaded {self.uploaded}): {self.detail}"


@dataclass
class Releases:
    """A project's final releases: version -> its wheel files (sdists ignored)."""

    name: str
    files: Dict[str, List[WheelFile]] = field(default_factory=dict)
    uploaded: Dict[str, str] = field(default_factory=dict)  # version -> its first upload, YYYY-MM-DD
    requires_python: Dict[str, Optional[str]] = field(default_factory=dict)  # version -> its wheels' Requires-Python


# --------------------------------------------------------------------------- the indexes


class Indexes:
    def __init__(self, pypi_json: str, pytorch_index: Optional[str], timeout: float) -> None:
        self.pypi_json = pypi_json  # with {project}
        self.pytorch_index = pytorch_index.rstrip("/") if pytorch_index else None
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers["User-Agent"] = "cudadoctor-refresh-data"
        self._pypi: Dict[str, Releases] = {}

    def _get(self, url: str, headers: Optional[Dict[str, str]] = None) -> requests.Response:
        try:
            response = self.session.get(url, headers=headers or {}, timeout=self.timeout)
        except requests.RequestException as exc:
            raise RefreshError(f"{url}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from None
        return response

    def pypi(self, name: str) -> Releases:
        if name not in self._pypi:  # a project two tables track (torch: pytorch.json, triton.json) is read once
            self._pypi[name] = self._read_pypi(name)
        return self._pypi[name]

    def _read_pypi(self, name: str) -> Releases:
        url = self.pypi_json.replace("{project}", name)
        response = self._get(url)
        if response.status_code != 200:
            raise RefreshError(f"{url}: HTTP {response.status_code}")
        try:
            doc = response.json()
        except ValueError:
            raise RefreshError(f"{url}: not JSON") from None
        out = Releases(name)
        for version, files in (doc.get("releases") or {}).items():
            if not _final(version):
                continue
            live = [f for f in files if not f.get("yanked")]
            if not live:
                continue  # no file, or every file yanked: not a release to record
            out.uploaded[version] = min((f.get("upload_time") or "")[:10] for f in live)
            specs = {f.get("requires_python") for f in live if f.get("filename", "").endswith(".whl")}
            out.requires_python[version] = _one_spec(specs)
            out.files[version] = [WheelFile(f["filename"], urljoin(url, f["url"]), (f.get("upload_time") or "")[:10],
                                            int(f.get("size") or 0),
                                            bool(f.get("core_metadata") or f.get("data_dist_info_metadata")))
                                  for f in live if f.get("filename", "").endswith(".whl")]
        return out

    def pytorch_files(self, name: str) -> List[Tuple[str, str]]:
        """(filename, url) of every file on PyTorch's project page (PEP 503 HTML)."""
        assert self.pytorch_index
        url = f"{self.pytorch_index}/{name}/"
        response = self._get(url)
        if response.status_code != 200:
            raise RefreshError(f"{url}: HTTP {response.status_code}")
        links = _Links()
        links.feed(response.text)
        return [(text.strip(), urljoin(url, href.split("#")[0])) for href, text in links.found]

    def metadata(self, wheel: WheelFile) -> str:
        """The wheel's METADATA: PEP 658's .metadata file, else the member read by range requests."""
        response = self._get(wheel.url + ".metadata")
        if response.status_code == 200 and response.content:
            return response.content.decode("utf-8", "replace")
        try:
            with zipfile.ZipFile(io.BufferedReader(_RangeFile(self, wheel.url, wheel.size), 1 << 16)) as z:
                member = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
                return z.read(member).decode("utf-8", "replace")
        except (zipfile.BadZipFile, StopIteration, OSError) as exc:
            raise RefreshError(f"{wheel.url}: no METADATA ({type(exc).__name__})") from None


class _RangeFile(io.RawIOBase):
    """A remote file read with HTTP range requests: zipfile reads only the central directory
    and the one member it is asked for."""

    def __init__(self, indexes: Indexes, url: str, size: int) -> None:
        self.indexes, self.url, self.pos = indexes, url, 0
        self.size = size or self._length()

    def _length(self) -> int:
        response = self.indexes._get(self.url, {"Range": "bytes=0-0"})
        match = re.search(r"/(\d+)$", response.headers.get("Content-Range", ""))
        if response.status_code != 206 or not match:
            raise OSError(f"no range requests (HTTP {response.status_code})")
        return int(match.group(1))

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else self.size + offset
        return self.pos

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self.size - self.pos)
        if n <= 0:
            return 0
        response = self.indexes._get(self.url, {"Range": f"bytes={self.pos}-{self.pos + n - 1}"})
        if response.status_code != 206:
            raise OSError(f"range request answered HTTP {response.status_code}")
        data = response.content[:n]
        buffer[: len(data)] = data
        self.pos += len(data)
        return len(data)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: List[Tuple[str, str]] = []
        self._href: Optional[str] = None

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self.found.append((self._href, data))
            self._href = None


# --------------------------------------------------------------------------- the data


def _final(version: str) -> bool:
    try:
        v = Version(version)
    except InvalidVersion:
        return False
    return not (v.is_prerelease or v.is_devrelease or v.local)


def _one_spec(specs: Set[Optional[str]]) -> Optional[str]:
    """The Requires-Python the wheels of a release share, normalised ('>=3.11, <3.15' -> '<3.15,>=3.11');
    None when they have none or disagree."""
    if len(specs) != 1 or None in specs:
        return None
    return ",".join(sorted(c.replace(" ", "") for c in str(next(iter(specs))).split(",") if c.strip()))


def _records(data: str, table: str) -> Dict[str, Any]:
    with open(os.path.join(data, table), encoding="utf-8") as handle:
        doc: Dict[str, Any] = json.load(handle)
    return doc


def index_urls(data: str) -> Tuple[str, Optional[str]]:
    """(PyPI's JSON API with {project}, PyTorch's wheel index root) from package_indexes.json."""
    by_id = {r["id"]: r for r in _records(data, "package_indexes.json")["records"]}
    pypi = by_id.get("pypi-json", {}).get("url_pattern")
    if not pypi:
        raise RefreshError("package_indexes.json has no pypi-json record")
    torch = by_id.get("pytorch-wheels-all", {}).get("url_pattern")
    return pypi, torch


class Known:
    """Which releases a table covers, per the package's match rule."""

    def __init__(self, doc: Dict[str, Any], spec: Dict[str, Any]) -> None:
        self.doc, self.spec, self.name = doc, spec, canonicalize_name(spec["name"])
        self.match = spec["match"]
        recs = doc["records"]
        key = spec.get("key")
        if self.match in ("exact", "patch", "minor", "field"):  # a field may hold one value or a list
            self.values = [str(v) for r in recs if r.get(key)
                           for v in (r[key] if isinstance(r[key], list) else [r[key]])]
        elif self.match == "range":
            self.ranges = [(r.get("first"), r.get("last")) for r in recs]
        elif self.match == "cupy":
            self.majors = {str(m["version"]) for m in doc["majors"]}
            self.dists = [(r.get("first_cupy"), r.get("last_cupy")) for r in recs if r["distribution"] == self.name]
        else:
            raise RefreshError(f"{spec['name']}: unknown match rule {self.match!r}")

    def floor(self) -> Tuple[int, ...]:
        """The oldest version the table speaks of: older releases are out of its scope."""
        if self.match == "range":
            return min((vkey(f or "0") for f, _ in self.ranges), default=())
        if self.match == "cupy":
            return min((vkey(f or "0") for f, _ in self.dists), default=())
        return min((vkey(v) for v in self.values), default=())

    def covers(self, version: str) -> bool:
        key = vkey(version)
        if self.match in ("exact", "field"):  # 13.4.1.0 is 13.4.1
            return any(Version(v) == Version(version) for v in self.values)
        if self.match in ("patch", "minor"):
            n = 3 if self.match == "patch" else 2
            return any(vkey(v)[:n] == key[:n] for v in self.values)
        if self.match == "range" and self.spec.get("minor"):  # a record per minor: 10.13.0.35 is in 10.13.2-10.13
            mm, cut = ".".join(map(str, key[:2])), (lambda v: ".".join(map(str, vkey(v)[:2])) if v else v)
            return any(in_range(mm, cut(f), last) for f, last in self.ranges)
        if self.match == "range":
            return any(in_range(version, f, last) for f, last in self.ranges)
        return str(key[0]) in self.majors and any(in_range(version, f, last) for f, last in self.dists)

    def requires_python(self, version: str) -> Tuple[bool, Optional[str]]:
        """(whether the spec asks, the Requires-Python the record of ``version`` says, normalised)."""
        fname = self.spec.get("requires_python")
        if not fname:
            return False, None
        key = self.spec["key"]
        rows = [r for r in self.doc["records"] if r.get(key) and Version(str(r[key])) == Version(version)]
        said = {r.get(fname) for r in rows}
        return True, _one_spec(said) if said else None

    def pythons(self, version: str) -> Optional[Set[str]]:
        """The Python versions the record of ``version`` lists (None: no list to compare)."""
        fname = self.spec.get("python")
        if not fname:
            return None
        if self.match == "cupy":
            rows = [m for m in self.doc["majors"] if str(m["version"]) == str(vkey(version)[0])]
        elif self.match == "range":
            rows = [r for r in self.doc["records"] if in_range(version, r.get("first"), r.get("last"))]
        else:
            key = self.spec["key"]
            n = 2 if self.match == "minor" else 3
            rows = [r for r in self.doc["records"] if vkey(str(r.get(key, "")))[:n] == vkey(version)[:n]]
        lists = [r.get(fname) for r in rows if r.get(fname) is not None]
        return {p for lst in lists for p in lst} if lists else None


def wheel_pythons(files: Iterable[WheelFile]) -> Set[str]:
    """'3.12' for each cp312 (CPython, not free-threaded) wheel tag."""
    out: Set[str] = set()
    for f in files:
        try:
            tags = parse_wheel_filename(f.filename)[3]
        except InvalidWheelFilename:
            continue
        for tag in tags:
            m = re.fullmatch(r"cp3(\d+)", tag.interpreter)
            if m and not tag.abi.endswith("t") and tag.abi != "abi3":
                out.add(f"3.{m.group(1)}")
    return out


def platform_of(filename: str) -> Optional[str]:
    for marker, machine, name in PLATFORMS:
        if marker in filename and machine in filename:
            return name
    return None


# --------------------------------------------------------------------------- comparing


def compare(indexes: Indexes, data: str, specs: Sequence[Dict[str, Any]], drafts: bool,
            pytorch: bool) -> List[Gap]:
    gaps: List[Gap] = []
    for spec in specs:
        doc = _records(data, spec["table"])
        known = Known(doc, spec)
        releases = indexes.pypi(spec["name"])
        floor = known.floor()
        for version in sorted(releases.files, key=Version):
            wheels = releases.files[version]
            if vkey(version) < floor:
                continue
            uploaded = releases.uploaded[version]
            if not known.covers(version):
                gap = Gap("release", spec["name"], version, spec["table"], uploaded,
                          spec.get("missing", "no record covers it"))
                if drafts:
                    gap.draft = draft(indexes, spec, version, wheels)
                gaps.append(gap)
                continue
            listed = known.pythons(version)
            tagged = wheel_pythons(wheels)
            if listed is not None and tagged - listed:
                extra = ", ".join(sorted(tagged - listed, key=vkey))
                gaps.append(Gap("python", spec["name"], version, spec["table"], uploaded,
                                f"wheels for Python {extra}, which the record does not list"))
            asks, said = known.requires_python(version)
            served = releases.requires_python.get(version)
            if asks and served and said != served:
                gaps.append(Gap("python", spec["name"], version, spec["table"], uploaded,
                                f"Requires-Python {served} on the index; the record says "
                                f"{said if said else 'nothing'} ({spec['requires_python']})"))
        if pytorch and spec.get("pytorch_index") and indexes.pytorch_index:
            gaps += variant_gaps(indexes, doc, spec, floor)
    return gaps


def variant_gaps(indexes: Indexes, doc: Dict[str, Any], spec: Dict[str, Any], floor: Tuple[int, ...]) -> List[Gap]:
    """(release, variant, platform) on PyTorch's index that pytorch.json lacks."""
    records = {r["version"]: r for r in doc["records"]}
    seen: Dict[Tuple[str, str], Set[str]] = {}
    for filename, _ in indexes.pytorch_files(spec["name"]):
        try:
            _, version, _, _ = parse_wheel_filename(filename)
        except InvalidWheelFilename:
            continue
        if not version.local or version.is_prerelease or version.is_devrelease or vkey(str(version)) < floor:
            continue
        platform = platform_of(filename)
        if platform:
            seen.setdefault((version.public, version.local), set()).add(platform)
    gaps = []
    for (release, variant), platforms in sorted(seen.items(), key=lambda kv: (Version(kv[0][0]), kv[0][1])):
        record = records.get(release)
        if record is None:
            continue  # a release PyPI has not got yet is reported from PyPI's side, or not at all
        have = next((v for v in record["variants"] if v["name"] == variant), None)
        if have is None:
            gaps.append(Gap("variant", spec["name"], f"{release}+{variant}", spec["table"], "",
                            f"on PyTorch's index for {', '.join(sorted(platforms))}; pytorch.json has no {variant} "
                            f"variant of {release}"))
        elif platforms - set(have.get("platforms", [])):
            missing = ", ".join(sorted(platforms - set(have.get("platforms", []))))
            gaps.append(Gap("variant", spec["name"], f"{release}+{variant}", spec["table"], "",
                            f"wheels for {missing}, which the variant does not list"))
    return gaps


def draft(indexes: Indexes, spec: Dict[str, Any], version: str, wheels: List[WheelFile]) -> Dict[str, Any]:
    """A record to review: what the release's own wheel says, and where it was read."""
    out: Dict[str, Any] = {"table": spec["table"], "package": spec["name"], "version": version,
                           "uploaded": min((w.uploaded for w in wheels if w.uploaded), default=None),
                           "python": sorted(wheel_pythons(wheels), key=vkey) or None,
                           "platforms": sorted({p for w in wheels for p in [platform_of(w.filename)] if p})}
    if not wheels:
        out.update(source=f"https://pypi.org/project/{spec['name']}/{version}/", confidence="unverified",
                   note="DRAFT: no wheel to read METADATA from (an sdist only).")
        return out
    wheel = sorted(wheels, key=lambda w: (not all(p in w.filename for p in PREFERRED), w.filename))[0]
    headers = HeaderParser().parsestr(indexes.metadata(wheel))
    requires = [r.strip() for r in headers.get_all("Requires-Dist") or [] if PINNED.match(r.strip())]
    out.update(requires_python=headers.get("Requires-Python"), requires=requires,
               source=f"https://pypi.org/project/{spec['name']}/{version}/ ({wheel.filename}: METADATA)",
               confidence="primary",
               note="DRAFT from the wheel's METADATA and the index's file list: map it to the table's fields "
                    "and check what METADATA cannot say (drivers, compute capabilities) before adding it.")
    return out


# --------------------------------------------------------------------------- the command


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DATA, help="the compat_data folder (default: this checkout's)")
    ap.add_argument("--config", default=CONFIG, help="the packages to compare (default: tools/refresh_packages.json)")
    ap.add_argument("--check", action="store_true", help="print only the gaps; exit 1 if one is older than --days")
    ap.add_argument("--days", type=int, default=30, help="with --check: how old a missing release may be (default 30)")
    ap.add_argument("--today", help="the date to count --days from (YYYY-MM-DD; default: today, UTC)")
    ap.add_argument("--pypi-json", help="PyPI's JSON API, with {project} (default: package_indexes.json#pypi-json)")
    ap.add_argument("--pytorch-index", help="PyTorch's wheel index root (default: package_indexes.json)")
    ap.add_argument("--no-pytorch-index", action="store_true", help="do not read PyTorch's wheel index")
    ap.add_argument("--package", action="append", help="only this project (repeatable)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per request (default 30)")
    args = ap.parse_args(argv)
    try:
        today = dt.date.fromisoformat(args.today) if args.today else dt.datetime.now(dt.timezone.utc).date()
        with open(args.config, encoding="utf-8") as handle:
            specs = json.load(handle)["packages"]
        if args.package:
            wanted = {canonicalize_name(p) for p in args.package}
            specs = [s for s in specs if canonicalize_name(s["name"]) in wanted]
        pypi, torch = index_urls(args.data)
        indexes = Indexes(args.pypi_json or pypi, None if args.no_pytorch_index else (args.pytorch_index or torch),
                          args.timeout)
        gaps = compare(indexes, args.data, specs, drafts=not args.check, pytorch=not args.no_pytorch_index)
    except (RefreshError, OSError, ValueError, KeyError) as exc:
        print(f"refresh_data: {exc}", file=sys.stderr)
        return 2
    cutoff = (today - dt.timedelta(days=args.days)).isoformat()
    stale = [g for g in gaps if not g.uploaded or g.uploaded <= cutoff]
    for gap in gaps:
        print(("STALE " if args.check and gap in stale else "") + gap.line())
    if not args.check:
        drafts = [g.draft for g in gaps if g.draft]
        if drafts:
            print(json.dumps(drafts, indent=1))
    if not gaps:
        print(f"nothing missing: {len(specs)} packages compared with {os.path.abspath(args.data)}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
