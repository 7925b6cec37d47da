"""The data store: installing bundles, rollback, which data is used, and crash safety."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

from cudadoctor.data import store as data_store
from cudadoctor.cli.app import run
from cudadoctor.data.location import shipped_data_dir
from cudadoctor.data.source import DataSource, use
from cudadoctor.data.source import default_matrix

SHIPPED = shipped_data_dir() or ""
SHIPPED_VERSION = json.loads(Path(SHIPPED, "manifest.json").read_text())["data_version"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("CUDADOCTOR_DATA_HOME", str(tmp_path / "home"))
    previous = use(DataSource())
    yield tmp_path / "home"
    use(previous)


def make_data(tmp_path: Path, version: str) -> Path:
    """A copy of the shipped compat_data calling itself ``version``."""
    out = tmp_path / f"src-{version}"
    shutil.copytree(SHIPPED, out, ignore=shutil.ignore_patterns("*.md"))
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["data_version"] = version
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return out


def state(home: Path) -> Dict[str, Any]:
    loaded: Dict[str, Any] = json.loads((home / "state.json").read_text())
    return loaded


def test_user_data_dir_override(home: Path) -> None:
    assert data_store.user_data_dir() == str(home)


def test_user_data_dir_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CUDADOCTOR_DATA_HOME")
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert data_store.user_data_dir() == str(tmp_path / "cudadoctor")


def test_nothing_installed_uses_shipped(home: Path) -> None:
    choice = data_store.choose_data_dir()
    assert choice.directory == SHIPPED and choice.origin in ("shipped", "source") and choice.warning is None
    assert data_store.installed() is None


def test_newer_installed_bundle_is_used(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = data_store.install_bundle(str(make_data(tmp_path, "2099.1.0")), "2099.1.0", "0.0.1")
    assert result.directory == str(home / "bundles" / "2099.1.0") and result.previous is None
    choice = data_store.choose_data_dir()
    assert (choice.origin, choice.data_version, choice.warning) == ("installed", "2099.1.0", None)
    assert default_matrix().data_version == "2099.1.0"
    assert run(["--version"]) == 0
    assert "compat data 2099.1.0 (installed: " in capsys.readouterr().out


def test_older_installed_bundle_loses_to_shipped(home: Path, tmp_path: Path) -> None:
    data_store.install_bundle(str(make_data(tmp_path, "2000.1.0")), "2000.1.0")
    assert data_store.choose_data_dir().directory == SHIPPED


def test_env_and_option_win(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    data_store.install_bundle(str(make_data(tmp_path, "2099.1.0")), "2099.1.0")
    other = make_data(tmp_path, "2001.1.0")
    monkeypatch.setenv("CUDADOCTOR_DATA_DIR", str(other))
    assert data_store.choose_data_dir().origin == "env"
    assert data_store.choose_data_dir(str(other)).origin == "option"
    monkeypatch.delenv("CUDADOCTOR_DATA_DIR")
    assert run(["--data", str(other), "--version"]) == 0
    assert "compat data 2001.1.0 (option: " in capsys.readouterr().out


def test_invalid_bundle_is_refused(home: Path, tmp_path: Path) -> None:
    bad = make_data(tmp_path, "2099.1.0")
    (bad / "gpus.json").write_text('{"records": "nope"}')
    with pytest.raises(data_store.StoreError, match="not valid"):
        data_store.install_bundle(str(bad), "2099.1.0")
    assert not (home / "state.json").exists()
    with pytest.raises(data_store.StoreError, match="needs cudadoctor"):
        data_store.install_bundle(str(make_data(tmp_path, "2099.2.0")), "2099.2.0", "99.0.0")


@pytest.mark.parametrize("damage", ["file", "marker", "schema_version", "min_tool", "folder"])
def test_bundle_failing_at_load_time_is_ignored_with_a_warning(
    home: Path, tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    data_store.install_bundle(str(make_data(tmp_path, "2099.1.0")), "2099.1.0")
    bundle = home / "bundles" / "2099.1.0"
    st = state(home)
    if damage == "file":
        (bundle / "gpus.json").write_text("{")
    elif damage == "marker":
        st["bundles"]["2099.1.0"]["validated"] = False
    elif damage == "schema_version":
        manifest = json.loads((bundle / "manifest.json").read_text())
        manifest["schema_version"] = 99
        text = json.dumps(manifest)
        (bundle / "manifest.json").write_text(text)
        st["bundles"]["2099.1.0"]["files"]["manifest.json"]["size"] = len(text)
    elif damage == "min_tool":
        st["bundles"]["2099.1.0"]["min_tool_version"] = "99.0"
    else:
        shutil.rmtree(bundle)
    (home / "state.json").write_text(json.dumps(st))
    choice = data_store.choose_data_dir()
    assert choice.directory == SHIPPED
    assert choice.warning and "installed data 2099.1.0 ignored" in choice.warning
    assert default_matrix().directory == SHIPPED
    assert "warning: installed data 2099.1.0 ignored" in capsys.readouterr().err


def test_rollback_and_pruning(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["data", "rollback"]) != 0
    assert "no previous data bundle" in capsys.readouterr().err
    for version in ("2099.1.0", "2099.2.0", "2099.3.0"):
        data_store.install_bundle(str(make_data(tmp_path, version)), version)
    assert sorted(os.listdir(home / "bundles")) == ["2099.2.0", "2099.3.0"]
    assert (state(home)["current"], state(home)["previous"]) == ("2099.3.0", "2099.2.0")
    assert run(["data", "rollback"]) == 0
    assert "data 2099.2.0 is current again" in capsys.readouterr().out
    assert data_store.choose_data_dir().data_version == "2099.2.0"
    assert data_store.rollback() == "2099.3.0"  # and back again
    # reinstalling the current version keeps the previous one
    data_store.install_bundle(str(make_data(tmp_path / "again", "2099.3.0")), "2099.3.0")
    assert (state(home)["current"], state(home)["previous"]) == ("2099.3.0", "2099.2.0")


def test_install_from_a_staging_dir_moves_it(home: Path, tmp_path: Path) -> None:
    staging = data_store.new_staging_dir()
    src = make_data(tmp_path, "2099.1.0")
    shutil.rmtree(staging)
    shutil.copytree(src, staging)
    data_store.install_bundle(staging, "2099.1.0")
    assert not os.path.exists(staging)
    assert os.listdir(home / "bundles") == ["2099.1.0"]


_CHILD = """
import sys
from cudadoctor.data import store as data_store
data_store.install_bundle(sys.argv[1], sys.argv[2])
"""


@pytest.mark.parametrize("point", ["staged", "placed"])
def test_kill_during_install_leaves_old_or_new(home: Path, tmp_path: Path, point: str) -> None:
    data_store.install_bundle(str(make_data(tmp_path, "2099.1.0")), "2099.1.0")
    new = make_data(tmp_path, "2099.2.0")
    flag = tmp_path / "paused"
    env = dict(os.environ, CUDADOCTOR_INSTALL_PAUSE=f"{point}:{flag}")
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(new), "2099.2.0"], env=env)
    try:
        deadline = time.time() + 60
        while not flag.exists() and child.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert flag.exists(), "the child never reached the pause point"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    choice = data_store.choose_data_dir()
    assert (choice.origin, choice.data_version, choice.warning) == ("installed", "2099.1.0", None)
    assert data_store.validate_bundle(choice.directory, "2099.1.0") == []
    # a later install completes and cleans up
    data_store.install_bundle(str(new), "2099.2.0")
    assert data_store.choose_data_dir().data_version == "2099.2.0"
    assert (state(home)["current"], state(home)["previous"]) == ("2099.2.0", "2099.1.0")


def test_build_data_bundle_script(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parent.parent / "tools" / "build_data_bundle.py"
    out = tmp_path / "bundle"
    subprocess.run([sys.executable, str(script), str(out), "--data", SHIPPED], check=True, capture_output=True)
    bundle = json.loads((out / "bundle.json").read_text())
    assert bundle["format"] == "cudadoctor-data-bundle" and bundle["bundle_version"] == 1
    assert bundle["data_version"] == SHIPPED_VERSION and bundle["schema_version"] == 1
    assert "manifest.json" in bundle["files"] and "schemas/gpus.schema.json" in bundle["files"]
    for rel, info in bundle["files"].items():
        assert (out / rel).stat().st_size == info["size"]


def test_rolling_back_the_first_update_returns_to_the_shipped_data(home: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    data_store.install_bundle(str(make_data(tmp_path, "2099.1.0")), "2099.1.0")
    assert data_store.choose_data_dir().data_version == "2099.1.0"
    assert run(["data", "rollback"]) == 0
    assert "the shipped data is in use again" in capsys.readouterr().out
    assert data_store.choose_data_dir().directory == SHIPPED
    assert data_store.rollback() == "2099.1.0"  # and forward again
    assert data_store.choose_data_dir().data_version == "2099.1.0"


def test_reports_name_installed_data(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_store.install_bundle(str(make_data(tmp_path, "2099.1.0")), "2099.1.0")
    machine = Path(__file__).resolve().parent / "machines" / "h200-driver580-torch211-cu130"
    assert run(["check", "--machine", str(machine), "--no-checks"]) == 0
    assert " · data 2099.1.0 (installed) · " in capsys.readouterr().out.splitlines()[0]
    assert run(["check", "--machine", str(machine), "--no-checks", "--json"]) == 0
    envelope = json.loads(capsys.readouterr().out)
    assert (envelope["data_version"], envelope["data_origin"]) == ("2099.1.0", "installed")
