#!/usr/bin/env python3
"""Build a cudadoctor data bundle from compat_data/ (maintainers only; not in the wheel).

    python tools/build_data_bundle.py OUT_DIR [--data compat_data] [--min-tool-version 0.1.0]

OUT_DIR gets ``bundle.json`` (the bundle manifest) and a copy of every compat_data file
(``manifest.json``, the tables, ``schemas/*.schema.json``), laid out so that each file is fetched
relative to the folder of ``bundle.json``. The data is validated first (schemas + invariants).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from cudadoctor import __version__  # noqa: E402
from cudadoctor.data.store import file_hashes, validate_bundle  # noqa: E402
from cudadoctor.matrix.load import read_manifest  # noqa: E402

BUNDLE_FORMAT = "cudadoctor-data-bundle"
BUNDLE_VERSION = 1
BUNDLE_MANIFEST = "bundle.json"
# What goes into a bundle: JSON files (tables, manifest) and the schemas; docs stay out.
INCLUDED_SUFFIXES = (".json",)


def bundle_files(data_dir: str) -> List[str]:
    return sorted(rel for rel in file_hashes(data_dir) if rel.endswith(INCLUDED_SUFFIXES))


def build(data_dir: str, out_dir: str, min_tool_version: Optional[str] = None,
          validate: bool = True) -> Dict[str, Any]:
    """Write the bundle of ``data_dir`` into ``out_dir``; returns the bundle manifest."""
    if validate:
        problems = validate_bundle(data_dir)
        if problems:
            raise SystemExit(f"{data_dir} is not valid: " + "; ".join(problems[:5]))
    manifest = read_manifest(data_dir)
    os.makedirs(out_dir, exist_ok=True)
    for rel in bundle_files(data_dir):
        target = os.path.join(out_dir, *rel.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(data_dir, *rel.split("/")), target)
    hashes = file_hashes(out_dir)
    hashes.pop(BUNDLE_MANIFEST, None)
    bundle = {
        "format": BUNDLE_FORMAT,
        "bundle_version": BUNDLE_VERSION,
        "data_version": manifest.data_version,
        "schema_version": manifest.schema_version,
        "min_tool_version": min_tool_version or __version__,
        "files": {rel: hashes[rel] for rel in sorted(hashes) if rel in set(bundle_files(data_dir))},
    }
    with open(os.path.join(out_dir, BUNDLE_MANIFEST), "w", encoding="utf-8") as fh:
        json.dump(bundle, fh, indent=1, sort_keys=True)
        fh.write("\n")
    return bundle


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--data", default=os.path.join(os.path.dirname(HERE), "compat_data"))
    parser.add_argument("--min-tool-version", default=None, help=f"default: this tool's version ({__version__})")
    args = parser.parse_args(argv)
    bundle = build(args.data, args.out_dir, args.min_tool_version)
    print(f"bundle {bundle['data_version']}: {len(bundle['files'])} files in {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
