"""The name of the node a report comes from, as a fleet knows it (docs/fleet.md).

On a cluster the scheduler's name for a node is what an admin drains or reboots, and it need not be
the hostname (two slurmd on one box, a pod whose hostname is the pod's). So the node name is, in
order: ``CUDADOCTOR_NODE_NAME`` (set it from Kubernetes' ``spec.nodeName``), Slurm's
``SLURMD_NODENAME``, then the hostname the probes read.

A redacted report names its node by a pseudonym, ``host-`` and the first 8 hex digits of the
HMAC-SHA256 of the lower-cased name under a secret key: without the key a name cannot be found by
trying candidates (``ip-10-20-30-40`` from an unsalted hash took a second, and with it the address
the report otherwise hides). The key is ``CUDADOCTOR_PSEUDONYM_KEY`` when set (one key for a whole
fleet), else this installation's own, made once at random and kept in
``$XDG_CONFIG_HOME/cudadoctor/pseudonym.key`` (``~/.config/...``; a cluster's shared home gives
every node the same key): the same host gets the same pseudonym in all its reports, and a fleet
summary run with the same key maps pseudonyms back to the names of ``--nodes``. Where no key can
be kept (a read-only home), a key of this run is used.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from typing import Dict, Mapping, Optional

from cudadoctor.model import Snapshot

NODE_VARIABLES = ("CUDADOCTOR_NODE_NAME", "SLURMD_NODENAME")
KEY_VARIABLE = "CUDADOCTOR_PSEUDONYM_KEY"
KEY_FILE = ("cudadoctor", "pseudonym.key")
_KEYS: Dict[str, bytes] = {}  # the installation's key, read once a process
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


def pseudonym(name: str, key: Optional[bytes] = None) -> str:
    """``host-1a2b3c4d``: the node's name in a redacted report, keyed (:func:`pseudonym_key`)."""
    secret = pseudonym_key() if key is None else key
    digest = hmac.new(secret, name.strip().lower().encode("utf-8", "surrogateescape"), hashlib.sha256)
    return "host-" + digest.hexdigest()[:8]


def pseudonym_key(environ: Optional[Mapping[str, str]] = None) -> bytes:
    """``CUDADOCTOR_PSEUDONYM_KEY``, else this installation's key (made at random the first time,
    readable by its owner only), else one of this run."""
    env = os.environ if environ is None else environ
    given = env.get(KEY_VARIABLE, "")
    if given:
        return given.encode("utf-8", "surrogateescape")
    if "installation" not in _KEYS:
        _KEYS["installation"] = _installation_key(env) or secrets.token_hex(32).encode()
    return _KEYS["installation"]


def _installation_key(env: Mapping[str, str]) -> Optional[bytes]:
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    path = os.path.join(base, *KEY_FILE)
    try:
        with open(path, "rb") as fh:
            key = fh.read(256).strip()
        if len(key) >= 32:
            return key
    except OSError:
        pass
    key = secrets.token_hex(32).encode()
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(key + b"\n")
        return key
    except FileExistsError:  # another process made it meanwhile: its key
        try:
            with open(path, "rb") as fh:
                found = fh.read(256).strip()
            return found if len(found) >= 32 else None
        except OSError:
            return None
    except OSError:
        return None


def file_part(node: Optional[str]) -> str:
    """The node name as it may stand in a file name (``{host}`` in ``report -o``)."""
    cleaned = _UNSAFE.sub("_", node or "").strip("._")
    return cleaned or "unknown-host"


def expand(path: str, node: Optional[str]) -> str:
    """``DIR/{host}.json`` with the node's (file-safe) name in place of ``{host}``."""
    return path.replace(PLACEHOLDER, file_part(node))
