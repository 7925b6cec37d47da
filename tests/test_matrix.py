"""The data layer as a whole: loading, schema checks, clear errors, the `data` commands, and
the data shipped inside an installed wheel."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from cudadoctor.matrix import DataError, Matrix
from cudadoctor.matrix.schema_check import validate
from helpers import cli

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "compat_data"


@pytest.fixture
def data_copy(tmp_path: Path) -> Path:
    target = tmp_path / "compat_data"
    shutil.copytree(DATA, target)
    return target


def edit(directory: Path, name: str, change: Any) -> None:
    path = directory / name
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


# ---------------------------------------------------------------------------- the validator


def test_validator_names_paths() -> None:
    schema = {
        "type": "object", "required": ["records"], "additionalProperties": False,
        "properties": {"records": {"type": "array", "items": {"$ref": "#/$defs/r"}}},
        "$defs": {"r": {"type": "object", "required": ["v"], "properties": {"v": {"type": "string", "pattern": "^\\d+$"}}}},
    }
    assert validate({"records": [{"v": "1"}]}, schema) == []
    assert validate({"records": [{"v": "x"}, {}], "extra": 1}, schema) == [
        "records[0].v: 'x' does not match ^\\d+$",
        "records[1].v: required",
        "extra: unknown field",
    ]


# ---------------------------------------------------------------------------- the shipped data


def test_shipped_data_loads_and_has_a_calendar_version() -> None:
    matrix = Matrix(str(DATA))
    year, month, serial = matrix.data_version.split(".")
    assert len(year) == 4 and 1 <= int(month) <= 12 and int(serial) >= 0


def test_every_record_cites_a_source() -> None:
    matrix = Matrix(str(DATA))
    for name in matrix.manifest.files:
        if not (DATA / name).exists():
            continue
        for i, record in enumerate(json.loads((DATA / name).read_text())["records"]):
            if name == "error_codes.json":  # generated from headers: each record names the headers it was read from
                assert record["seen_in"], f"{name}: records[{i}] names no header"
                continue
            assert str(record.get("source", "")).strip(), f"{name}: records[{i}] has no source"
            assert record.get("confidence") in ("primary", "secondary", "unverified"), f"{name}: records[{i}]"


def test_cuda_driver_spot_checks() -> None:
    cuda = Matrix(str(DATA)).cuda
    assert cuda.min_driver("12.4") == "550.54.14"  # CUDA 12.4 GA
    assert cuda.min_driver("12.4", "windows") == "551.61"
    assert cuda.floor(12) is not None and cuda.floor(12).linux_min_driver == "525.60.13"
    assert cuda.floor(11) is not None and cuda.floor(11).linux_min_driver == "450.80.02"
    assert cuda.driver_support("535.104.05", "12.4").kind == "minor_compat"
    assert cuda.driver_support("550.54.14", "12.4").kind == "native"
    assert cuda.driver_support("470.82.01", "12.4").kind == "too_old"
    assert cuda.newest_cuda_for_driver("470.82.01") == "11.4"
    assert cuda.newest_cuda_for_driver("535.104.05") == "12.2"
    assert cuda.newest_cuda_for_driver("580.159.03") == "13.0"


def test_cuda_toolkit_meta_package_versions() -> None:
    # PyPI's cuda-toolkit re-releases (12.8.2.0, 13.1.2.0, 13.4.3) install an earlier update's components
    cuda = Matrix(str(DATA)).cuda
    assert cuda.release_of_pypi("12.8.2.0").cuda == "12.8.1"  # type: ignore[union-attr]
    assert cuda.release_of_pypi("13.1.2").cuda == "13.1.1"  # type: ignore[union-attr]
    assert cuda.release_of_pypi("13.4.3").cuda == "13.4.2"  # type: ignore[union-attr]
    assert cuda.release_of_pypi("13.5.0").cuda == "13.5.0"  # type: ignore[union-attr]
    assert cuda.release_of_pypi("13.9.9") is None


# ---------------------------------------------------------------------------- broken data


def test_invalid_json_names_the_file_and_line(data_copy: Path) -> None:
    (data_copy / "driver_branches.json").write_text('{"table": "driver_branches",\n  oops}')
    with pytest.raises(DataError) as info:
        Matrix(str(data_copy)).cuda
    assert str(info.value).startswith("driver_branches.json: not valid JSON at line 2")


def test_a_wrong_value_names_the_record(data_copy: Path) -> None:
    edit(data_copy, "cuda_toolkits.json", lambda d: d["records"][39].update(linux_min_driver="five fifty"))
    with pytest.raises(DataError) as info:
        Matrix(str(data_copy)).cuda
    message = str(info.value)
    assert message.startswith("cuda_toolkits.json: records[39] (12.4.0): linux_min_driver:")
    assert "'five fifty' does not match" in message


def test_a_missing_source_is_an_error(data_copy: Path) -> None:
    edit(data_copy, "driver_branches.json", lambda d: d["records"][0].pop("source"))
    with pytest.raises(DataError, match=r"driver_branches.json: records\[0\] \(R410\): source: required"):
        Matrix(str(data_copy)).cuda


def test_unsorted_records_break_an_invariant(data_copy: Path) -> None:
    edit(data_copy, "cuda_toolkits.json", lambda d: d["records"].reverse())
    from cudadoctor.matrix import cuda

    matrix = Matrix(str(data_copy))
    assert "cuda_toolkits.json: records are not sorted by cuda version" in cuda.invariants(matrix.cuda, matrix)


def test_a_manifest_from_a_newer_schema_is_refused(data_copy: Path) -> None:
    edit(data_copy, "manifest.json", lambda d: d.update(schema_version=99))
    with pytest.raises(DataError, match="schema_version 99 is not the 1 this cudadoctor reads"):
        Matrix(str(data_copy))


def test_validate_command_reports_problems_without_a_traceback(data_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(data_copy, "driver_branches.json", lambda d: d["records"][3].update(max_cuda=11))
    code, _, err = cli(["data", "validate", str(data_copy)], capsys)
    assert code == 1
    assert "driver_branches.json: records[3] (R450): max_cuda: expected string, got 11" in err
    assert "Traceback" not in err


def test_validate_command_on_a_missing_folder(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(["data", "validate", "/no/such/folder"], capsys)
    assert code == 2 and "no such directory" in err


# ---------------------------------------------------------------------------- commands


def test_data_info(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["data", "info"], capsys)
    assert code == 0
    assert "data version    " in out and "cuda_toolkits.json" in out


def test_data_show(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["data", "show", "driver_branches"], capsys)
    assert code == 0 and "branch=R535" in out and "max_cuda=12.2" in out
    code, out, _ = cli(["data", "show", "driver_branches.json", "--json"], capsys)
    assert code == 0 and json.loads(out)["table"] == "driver_branches"
    code, _, err = cli(["data", "show", "nonsense"], capsys)
    assert code == 2 and "no table 'nonsense'" in err


# ---------------------------------------------------------------------------- the wheel


def _installed_copy(tmp_path: Path) -> Path:
    """Where `import cudadoctor` lands outside the source tree."""
    out = subprocess.run(
        [sys.executable, "-c", "import cudadoctor, os; print(os.path.dirname(cudadoctor.__file__))"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout.strip()
    return Path(out)


def test_an_installed_wheel_ships_the_data(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Outside the source tree, the data must come from inside the package (force-included)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    package = _installed_copy(tmp_path)
    if package.resolve() == (REPO / "cudadoctor").resolve():  # an editable install: the test run's wheel
        _, built = request.getfixturevalue("wheelhouse")
        site = tmp_path / "site"
        with zipfile.ZipFile(built) as wheel:
            wheel.extractall(site)
        env["PYTHONPATH"] = str(site)
    version = subprocess.run([sys.executable, "-m", "cudadoctor", "--version"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, check=True).stdout
    assert "(shipped: " in version
    result = subprocess.run([sys.executable, "-m", "cudadoctor", "data", "validate"], cwd=tmp_path, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok: ")
