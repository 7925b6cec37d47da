"""The name of the node a report comes from, as a fleet knows it (docs/fleet.md).

On a cluster the scheduler's name for a node is what an admin drains or reboots, and it need not be
the hostname (two slurmd on one box, a pod whose hostname is the pod's). So the node name is, in
order: ``CUDADOCTOR_NODE_NAME`` (set it from Kubernetes' ``spec.nodeName``), Slurm's
``SLURMD_NODENAME``, then the hostname the probes read.

A redacted report names its node by a pseudonym, ``host-`` and the first 8 hex digits of the
SHA-256 of the lower-cased name: stable across runs and nodes, so a fleet summary can tell nodes
apart and an admin can map a pseudonym back by hashing the node list; it hides the name from a
reader of a pasted report who does not already have a list of candidate names.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Mapping, Optional

from cudadoctor.model import Snapshot

NODE_VARIABLES = ("CUDADOCTOR_NODE_NAME", "SLURMD_NODENAME")
PLACEHOLDER = "{host}"
# A node name becomes part of a file name: keep what is safe in one on every filesystem.
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def node_name(snapshot: Snapshot, environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The node's name: the first of ``NODE_VARIABLES`` that is set, else the probed hostname."""
    env = os.environ if environ is None else environ
    for variable in NODE_VARIABLES:
        value = env.get(variable, "").strip()
        if value:
            return value
    return snapshot.host.hostname if snapshot.host and snapshot.host.hostname else None


def pseudonym(name: str) -> str:
    """``host-1a2b3c4d``: the node's name in a redacted report."""
    return "host-" + hashlib.sha256(name.strip().lower().encode("utf-8")).hexdigest()[:8]


def file_part(node: Optional[str]) -> str:
    """The node name as it may stand in a file name (``{host}`` in ``report -o``)."""
    cleaned = _UNSAFE.sub("_", node or "").strip("._")
    return cleaned or "unknown-host"


def expand(path: str, node: Optional[str]) -> str:
    """``DIR/{host}.json`` with the node's (file-safe) name in place of ``{host}``."""
    return path.replace(PLACEHOLDER, file_part(node))
