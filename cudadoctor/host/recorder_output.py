"""Writing a recording to a machine folder: ``machine.json``, ``fs/`` and a README stub.

Split from :mod:`cudadoctor.host.recorder`, which records; this module only writes what it recorded.
"""

from __future__ import annotations

import json
import os
import posixpath
from typing import Any, List, Mapping, Sequence

from cudadoctor.model import Snapshot

FILE_CAP_DEFAULT = 256 * 1024


def _norm(path: str) -> str:
    out = posixpath.normpath("/" + path.lstrip("/"))
    return "/" if out == "//" else out


def write_machine(out_dir: str, data: Mapping[str, Any], files: Mapping[str, bytes]) -> List[str]:
    """Write ``machine.json`` and ``fs/``; return the paths that could not be written."""
    os.makedirs(out_dir, exist_ok=True)
    fs_root = os.path.join(out_dir, "fs")
    failed: List[str] = []
    for path, content in sorted(files.items()):
        target = os.path.join(fs_root, *[p for p in _norm(path).split("/") if p])
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as fh:
                fh.write(content)
        except OSError:
            failed.append(path)  # e.g. a file recorded where another recorded file needs a dir
    text = json.dumps(data, indent=1, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A file name or variable that is not UTF-8 (os keeps its bytes as lone surrogates):
        # \udcXX escapes load back to the same str.
        text = json.dumps(data, indent=1)
    with open(os.path.join(out_dir, "machine.json"), "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
    return failed


def readme_stub(data: Mapping[str, Any], summary: Sequence[str], description: str) -> str:
    rec = data.get("recording", {})
    lines = [
        f"# {rec.get('name', 'recorded machine')}",
        "",
        description or "TODO: one paragraph on what this machine is and why it is a fixture.",
        "",
        "## Provenance",
        "",
        "A real recording: every file, listing, command output and NVML answer in `machine.json`",
        "and `fs/` is what this machine answered, captured by `python -m cudadoctor.host.recorder`",
        f"(cudadoctor {rec.get('tool_version', '?')}) at {rec.get('recorded_at', '?')}.",
        "",
        *[f"- {line}" for line in summary],
        "",
        "## Trimmed",
        "",
        *_trim_notes(rec),
        "",
        "Before committing: review `env`, `platform.hostname`, `platform.username` and `fs/` for",
        "anything private (the recorder keeps them as they were).",
        "",
    ]
    return "\n".join(lines)


def _trim_notes(rec: Mapping[str, Any]) -> List[str]:
    notes = [f"- Files are kept up to {rec.get('file_cap_bytes', FILE_CAP_DEFAULT)} bytes each."]
    for path, info in rec.get("truncated_files", {}).items():
        notes.append(f"- `{path}`: {info['kept']} of at least {info['size_at_least']} bytes kept.")
    for directory, info in rec.get("trimmed_listings", {}).items():
        notes.append(
            f"- Listing of `{directory}`: {info['kept']} of {info['entries']} entries kept "
            "(CUDA and NVIDIA library names, dist-info folders)."
        )
    if rec.get("env_dropped"):
        notes.append(f"- Environment: {len(rec['env_dropped'])} variables no probe reads were left out "
                     "(names under `recording.env_dropped`).")
    return notes


def summarize(snapshot: Snapshot) -> List[str]:
    """A few facts of the live Snapshot, for the README stub."""
    out: List[str] = []
    host = snapshot.host
    if host is not None:
        out.append(" · ".join(str(v) for v in (host.distribution, host.kernel, host.architecture,
                                                  host.container and f"{host.container} container",
                                                  host.cpu_count and f"{host.cpu_count} CPUs") if v))
    driver = snapshot.driver
    if driver is not None:
        out.append(f"driver {driver.driver_version}" if driver.driver_version
                   else f"no driver answering ({driver.nvml_error or 'unknown'})")
    for gpu in snapshot.gpus or ():
        out.append(f"GPU {gpu.index}: {gpu.name} (sm {gpu.compute_capability})")
    for tk in snapshot.toolkits or ():
        out.append(f"CUDA toolkit {tk.version} at {tk.root}" + (" (active)" if tk.active else ""))
    py = snapshot.python
    if py is not None:
        out.append(f"target Python {py.version} at {py.executable} ({py.env_kind})")
    for fw in snapshot.frameworks or ():
        out.append(f"{fw.name} {fw.version} ({fw.variant or 'variant unknown'})")
    return out
