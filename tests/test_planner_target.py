"""Which environment is inspected: --python, else the active venv or conda env, else the
interpreter running cudadoctor (docs/user-guide.md, "Which environment")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

from cudadoctor.probes import collect
from cudadoctor.host.recorded import RecordedHost


def facts(prefix: str, version: str) -> Dict[str, Any]:
    return {"executable": f"{prefix}/bin/python3", "version": version, "implementation": "cpython",
            "prefix": prefix, "base_prefix": "/usr", "platform_tag": "linux-x86_64",
            "site_packages": [f"{prefix}/lib/python3/site-packages"]}


def machine(env: Dict[str, str]) -> RecordedHost:
    return RecordedHost(
        {
            "platform": {"system": "Linux", "machine": "x86_64"},
            "env": env,
            "files": {"/proj/.venv/bin/python3": "", "/opt/conda/envs/ml/bin/python3": ""},
            "interpreter": facts("/home/u/.local/pipx/venvs/cudadoctor", "3.12.7"),
            "interpreters": {
                "/proj/.venv/bin/python3": facts("/proj/.venv", "3.10.14"),
                "/opt/conda/envs/ml/bin/python3": facts("/opt/conda/envs/ml", "3.11.9"),
            },
        }
    )


def test_the_active_venv_is_the_default_target() -> None:
    snap = collect(machine({"VIRTUAL_ENV": "/proj/.venv", "CONDA_PREFIX": "/opt/conda/envs/ml"}), only=["python"])
    assert snap.python is not None
    assert (snap.python.prefix, snap.python.version, snap.python.is_current) == ("/proj/.venv", "3.10.14", False)


def test_the_active_conda_env_when_no_venv_is_active() -> None:
    snap = collect(machine({"CONDA_PREFIX": "/opt/conda/envs/ml"}), only=["python"])
    assert snap.python is not None and snap.python.prefix == "/opt/conda/envs/ml"


def test_without_an_active_env_the_running_interpreter() -> None:
    snap = collect(machine({}), only=["python"])
    assert snap.python is not None and snap.python.is_current is True


def test_an_active_env_without_a_python_falls_back_to_the_running_interpreter() -> None:
    snap = collect(machine({"VIRTUAL_ENV": "/gone/.venv"}), only=["python"])
    assert snap.python is not None and snap.python.is_current is True


def test_for_real_a_venv_activated_in_the_shell(tmp_path: Path) -> None:
    """cudadoctor run from one environment inspects the venv the shell has activated."""
    venv = tmp_path / "proj"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    env = {**os.environ, "VIRTUAL_ENV": str(venv)}
    env.pop("CONDA_PREFIX", None)
    out = subprocess.run([sys.executable, "-m", "cudadoctor", "check", "--json"], env=env,
                         capture_output=True, text=True).stdout
    python = json.loads(out)["snapshot"]["python"]
    assert python["prefix"] == str(venv)
    assert python["is_current"] is False
    assert python["env_kind"] == "venv"
