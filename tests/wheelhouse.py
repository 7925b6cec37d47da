"""A wheelhouse for tests that install cudadoctor as a user would: the wheel built from this
checkout, and its dependencies (plus pytest's, for the plugin) repacked from this test environment,
so that `pip install --no-index --find-links HOUSE cudadoctor-*.whl` works offline."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import re
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path
from typing import Iterable, List

REPO = Path(__file__).resolve().parents[1]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requires(metadata_text: str) -> List[str]:
    """The distributions a METADATA file requires, without extras' and other platforms' ones."""
    from packaging.requirements import Requirement

    out = []
    for line in Parser().parsestr(metadata_text).get_all("Requires-Dist") or []:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            out.append(req.name)
    return out


def repack(dist: importlib.metadata.Distribution, out: Path) -> None:
    """A wheel of an installed distribution, made of the files its RECORD lists (the compiled ones
    too, under the tag it was installed with), with a fresh RECORD: pip installs it offline."""
    files = [f for f in dist.files or () if not f.as_posix().startswith("..") and "__pycache__" not in f.parts]
    info = next(f.parts[0] for f in files if f.parts[0].endswith(".dist-info"))
    tag = next(line.split(":", 1)[1].strip() for line in (dist.read_text("WHEEL") or "").splitlines()
               if line.startswith("Tag:"))
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"]).lower()
    record: List[str] = []
    with zipfile.ZipFile(out / f"{name}-{dist.version}-{tag}.whl", "w", zipfile.ZIP_DEFLATED) as wheel:
        for f in files:
            if f.parts[0] == info and f.name in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json"):
                continue
            data = Path(str(dist.locate_file(f))).read_bytes()
            wheel.writestr(f.as_posix(), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{f.as_posix()},sha256={digest},{len(data)}")
        wheel.writestr(f"{info}/RECORD", "\n".join(record + [f"{info}/RECORD,,"]) + "\n")


def build(house: Path, extra: Iterable[str] = ("pytest",), timeout: float = 300) -> Path:
    """Fill ``house``; return the cudadoctor wheel in it."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(house), str(REPO)],
                   check=True, capture_output=True, timeout=timeout)
    wheel = next(house.glob("cudadoctor-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        metadata = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    todo, seen = requires(metadata) + list(extra), set()
    while todo:
        name = canonical(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        dist = importlib.metadata.distribution(name)
        repack(dist, house)
        todo.extend(requires(dist.read_text("METADATA") or ""))
    return wheel
