"""Node pseudonyms are keyed (issue 27): an unkeyed hash of ``ip-10-20-30-40`` gave the name, and
the address a report otherwise hides, back in a second; with a key nobody has, candidates cannot be
tried. The same host keeps its pseudonym across its reports (one installation key, made once)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from cudadoctor.reports import node


def test_the_pseudonym_is_not_the_unkeyed_hash() -> None:
    name = "ip-10-20-30-40"
    unkeyed = "host-" + hashlib.sha256(name.encode()).hexdigest()[:8]
    assert node.pseudonym(name) != unkeyed
    assert node.pseudonym(name, b"a" * 32) != node.pseudonym(name, b"b" * 32)
    assert node.pseudonym(name) == node.pseudonym(" IP-10-20-30-40 ")  # the same host, however written


def test_the_installation_key_is_made_once_private_and_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDADOCTOR_PSEUDONYM_KEY")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setattr(node, "_KEYS", {})
    first = node.pseudonym("gpu-01")
    path = tmp_path / "cudadoctor" / "pseudonym.key"
    assert path.is_file() and stat.S_IMODE(path.stat().st_mode) == 0o600
    monkeypatch.setattr(node, "_KEYS", {})  # a later run reads the same key
    assert node.pseudonym("gpu-01") == first
    assert node.pseudonym("gpu-01", path.read_bytes().strip()) == first


def test_without_a_place_for_the_key_a_run_has_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDADOCTOR_PSEUDONYM_KEY")
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(blocked))  # not a folder: nothing can be kept there
    monkeypatch.setattr(node, "_KEYS", {})
    assert node.pseudonym("gpu-01").startswith("host-")
    assert not os.path.exists(blocked / "cudadoctor")
