"""The error-code vocabularies (compat_data/error_codes.json, docs/data-sources.md): generated from
the CUDA libraries' own headers by tools/gen_error_codes.py. The table holds every code of the
headers present wherever the tests run (here: the CUDA toolkit's cuda.h and driver_types.h, and
NVML's codes from nvidia-ml-py), with the messages of the libraries that load here (libcudart), and
every error code has a signature, so a category and a fix."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudadoctor.matrix import Matrix
from helpers import HERE

REPO = HERE.parent
sys.path.insert(0, str(REPO / "tools"))
import gen_error_codes as gen  # noqa: E402

TABLE = json.loads((REPO / "compat_data" / "error_codes.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def here() -> "tuple[dict, list, list]":
    codes, read, strings = gen.collect([], [])
    return codes, read, strings


def test_the_table_holds_every_code_of_the_headers_present(here: "tuple[dict, list, list]") -> None:
    codes, read, _ = here
    assert read, "no header found: the CUDA toolkit's include/ or nvidia-ml-py should be here"
    assert gen.differences(TABLE, codes) == []
    libraries = {lib for lib, _ in codes}
    for lib in libraries:  # counted: as many codes in the table as in the headers read here, or more
        in_headers = sum(1 for (x, _) in codes if x == lib)
        in_table = sum(1 for r in TABLE["records"] if r["library"] == lib)
        assert in_table >= in_headers > 0, lib


def test_the_table_covers_the_twelve_libraries() -> None:
    libraries = {r["library"] for r in TABLE["records"]}
    assert libraries == {s.library for s in gen.SPECS}
    counts = {lib: sum(1 for r in TABLE["records"] if r["library"] == lib) for lib in libraries}
    assert counts["cuda_driver"] >= 100 and counts["cuda_runtime"] >= 130 and counts["cudnn"] >= 50
    subcodes = [r for r in TABLE["records"] if r["name"].startswith("CUDNN_STATUS_BAD_PARAM_")]
    assert len(subcodes) >= 10  # cuDNN 9's sub-codes
    assert any("older_values" in r for r in TABLE["records"] if r["library"] == "cudnn")  # cuDNN 8's numbers


def test_every_error_code_has_a_signature_with_a_category(matrix: Matrix) -> None:
    data = matrix.signatures
    families = json.loads((REPO / "compat_data" / "error_families.json").read_text(encoding="utf-8"))["records"]
    not_errors = [f for f in families if not f["error"]]
    missing = []
    for code in data.codes:
        sig = data.for_code(code.name)
        if sig is None:
            import re

            assert any(re.search(f["names"], code.name) for f in not_errors), code.name
            continue
        if not sig.categories or not sig.explanation or not sig.verify:
            missing.append(code.name)
    assert missing == []


def test_the_messages_are_the_librarys_own(here: "tuple[dict, list, list]", matrix: Matrix) -> None:
    codes, _, strings = here
    if not any(s["library"] == "cuda_runtime" for s in strings):
        pytest.skip("no libcudart here to ask")
    illegal = matrix.signatures.code("cudaErrorIllegalAddress")
    assert illegal is not None and "an illegal memory access was encountered" in illegal.messages


def test_the_tool_runs_offline_and_checks_the_table(tmp_path: Path) -> None:
    table = tmp_path / "error_codes.json"
    shutil.copy(REPO / "compat_data" / "error_codes.json", table)
    done = subprocess.run([sys.executable, str(REPO / "tools" / "gen_error_codes.py"), "--check", "--table", str(table)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith("0 difference(s)")
    table.write_text(json.dumps({**TABLE, "records": TABLE["records"][5:]}), encoding="utf-8")
    stale = subprocess.run([sys.executable, str(REPO / "tools" / "gen_error_codes.py"), "--check", "--table", str(table)],
                           capture_output=True, text=True, timeout=120)
    assert stale.returncode == 1 and "missing from the table" in stale.stdout


@pytest.mark.parametrize("body, expected", [
    ("A = 0, B, C = 7, D", [("A", 0), ("B", 1), ("C", 7), ("D", 8)]),
    ("/** doc of X. More. */ X = 0x10, // trailing\n Y = X + 2", [("X", 16), ("Y", 18)]),
    ("CUDNN_STATUS_OLD CUDNN_DEPRECATED_ENUM = 4003, CUDNN_STATUS_NEW = 4004",
     [("CUDNN_STATUS_OLD", 4003), ("CUDNN_STATUS_NEW", 4004)]),
    ("NVML_SUCCESS = 0, //!< The operation was successful\n NVML_ERROR_X = 1 //!< It failed",
     [("NVML_SUCCESS", 0), ("NVML_ERROR_X", 1)]),
    ("#if defined(X)\n A = 1,\n#endif\n B = -2", [("A", 1), ("B", -2)]),
])
def test_enum_bodies_parse(body: str, expected: "list[tuple[str, int]]") -> None:
    assert [(n, v) for n, v, _ in gen.parse_enum(body)] == expected


def test_docs_come_from_the_comment_of_each_code() -> None:
    parsed = gen.parse_enum("/** This is A. Detail. */ A = 1, B = 2 ///< B's own\n, C = 3 //!< C's own")
    assert [(n, d) for n, _, d in parsed] == [("A", "This is A."), ("B", "B's own"), ("C", "C's own")]
