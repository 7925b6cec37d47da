"""The facts vocabulary of `cudadoctor diagnose --facts FILE`: every key documented in
docs/facts.md, unknown keys refused by name, null and missing kept apart as documented, and the
documented full example true to what the command prints."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List

import pytest

from cudadoctor.model.facts import FACT_KEYS, FactsError, snapshot_from_facts
from helpers import cli

DOC = Path(__file__).resolve().parents[1] / "docs" / "facts.md"


def doc() -> str:
    return DOC.read_text(encoding="utf-8")


def documented_keys() -> List[str]:
    """The keys of the tables under '## The keys': the first cell of each row."""
    section = doc().split("## The keys", 1)[1].split("## A full example", 1)[0]
    return re.findall(r"^\| `([a-z_]+)` \|", section, re.M)


def example() -> Dict[str, Any]:
    found = re.search(r"## A full example.*?```json\n(.*?)\n```", doc(), re.S)
    assert found, "docs/facts.md has a full example in a ```json block"
    data: Dict[str, Any] = json.loads(found.group(1))
    return data


# ---------------------------------------------------------------------------- the doc


def test_every_fact_key_is_documented_once() -> None:
    keys = documented_keys()
    assert sorted(keys) == sorted(FACT_KEYS), (set(FACT_KEYS) ^ set(keys))
    assert len(keys) == len(set(keys))


def test_every_key_row_has_type_meaning_example_and_null() -> None:
    section = doc().split("## The keys", 1)[1].split("## A full example", 1)[0]
    for key in FACT_KEYS:
        row = next(line for line in section.splitlines() if line.startswith(f"| `{key}` |"))
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
        assert len(cells) == 5 and all(cells), (key, cells)


def test_the_full_example_uses_every_key_and_loads() -> None:
    facts = example()
    assert sorted(facts) == sorted(FACT_KEYS)
    snap = snapshot_from_facts(facts)
    assert snap.driver is not None and snap.driver.driver_version == facts["driver_version"]


def test_the_documented_output_is_what_diagnose_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(example()))
    code, out, _ = cli(["diagnose", "--facts", str(path), "--no-color"], capsys)
    assert code == 1
    shown = doc().split("`cudadoctor diagnose --facts facts.json` says:", 1)[1]
    block = re.search(r"```\n(.*?)\n```", shown, re.S)
    assert block
    documented = re.findall(r"  \[([a-z0-9-]+)\]$", block.group(1), re.M)
    assert documented, "the documented output shows findings"
    printed = re.findall(r"  \[([a-z0-9-]+)\]$", out, re.M)
    assert printed[:len(documented)] == documented, "regenerate the output in docs/facts.md"
    first = next(line for line in block.group(1).splitlines() if line.endswith(f"[{documented[0]}]"))
    assert first in out.splitlines()


# ---------------------------------------------------------------------------- errors


def test_an_unknown_key_is_an_error_naming_it() -> None:
    with pytest.raises(FactsError, match=r"^gpu_nmae: unknown fact"):
        snapshot_from_facts({"gpu_name": "NVIDIA GeForce RTX 4090", "gpu_nmae": "NVIDIA GeForce RTX 4090"})


def test_diagnose_refuses_an_unknown_key_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps({"driver_version": "550.120", "torch_cuda_version": "12.4"}))
    code, out, err = cli(["diagnose", "--facts", str(path)], capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "torch_cuda_version: unknown fact" in lines[0] and "docs/facts.md" in lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize("facts, message", [
    ({"gpu_count": "two"}, "gpu_count: expected a whole number"),
    ({"gpu_count": -1}, "gpu_count: expected a whole number"),
    ({"wsl": "yes"}, "wsl: expected true, false or null"),
    ({"os": "beos"}, "os: 'beos' is not one of linux, windows, macos"),
    ({"driver_version": ["550"]}, "driver_version: expected a string"),
    ({"container": 3}, "container: expected a runtime name"),
    ({"env": ["CUDA_VISIBLE_DEVICES=0"]}, "env: expected an object"),
    ({"pip_packages": ["torch=="]}, "pip_packages[0]: expected 'name==version' or 'name'"),
    ({"torch_version": "2.5.1", "torch_arch_list": 90}, "torch_arch_list: expected a list"),
    (["driver_version", "550.120"], "facts must be a JSON object"),
])
def test_a_wrong_value_is_an_error_naming_the_key(facts: Any, message: str) -> None:
    with pytest.raises(FactsError) as info:
        snapshot_from_facts(facts)
    assert str(info.value).startswith(message)


# ---------------------------------------------------------------------------- null versus missing


def test_missing_is_unknown() -> None:
    snap = snapshot_from_facts({})
    assert (snap.host, snap.driver, snap.gpus, snap.toolkits, snap.libraries, snap.frameworks, snap.packages,
            snap.env) == (None,) * 8


def test_null_driver_is_no_driver() -> None:
    driver = snapshot_from_facts({"driver_version": None}).driver
    assert driver is not None and driver.loaded is False
    loaded = snapshot_from_facts({"driver_version": "550.120"}).driver
    assert loaded is not None and loaded.loaded is True


def test_null_runtime_is_a_cpu_build_and_missing_is_unknown() -> None:
    cpu = snapshot_from_facts({"torch_version": "2.5.1", "torch_cuda": None}).framework("torch")
    unknown = snapshot_from_facts({"torch_version": "2.5.1"}).framework("torch")
    tagged = snapshot_from_facts({"torch_version": "2.5.1+cpu"}).framework("torch")
    assert cpu is not None and (cpu.variant, cpu.cuda) == ("cpu", None)
    assert unknown is not None and unknown.variant is None
    assert tagged is not None and tagged.variant == "cpu"
    tf = snapshot_from_facts({"tensorflow_version": "2.18.0", "tensorflow_cuda": None}).framework("tensorflow")
    assert tf is not None and tf.variant == "cpu"
    jax = snapshot_from_facts({"jax_version": "0.4.35", "jax_cuda_plugin": None}).framework("jax")
    assert jax is not None and jax.variant == "cpu"
    plugin = snapshot_from_facts({"jax_version": "0.4.35", "jax_cuda_plugin": "jax-cuda12-plugin==0.4.35"})
    assert (plugin.framework("jax") or pytest.fail("no jax")).cuda == "12"


def test_null_nvcc_is_no_toolkit() -> None:
    assert snapshot_from_facts({"nvcc_version": None}).toolkits == ()
    assert snapshot_from_facts({}).toolkits is None


def test_zero_gpus_is_no_gpu() -> None:
    snap = snapshot_from_facts({"gpu_count": 0})
    assert (snap.gpus, snap.gpus_source) == ((), "facts")
    assert snapshot_from_facts({"gpu_count": None}).gpus is None


def test_one_framework_makes_the_others_known_absent() -> None:
    snap = snapshot_from_facts({"torch_version": "2.5.1+cu124"})
    assert snap.frameworks is not None and snap.framework("tensorflow") is None


def test_versions_stay_strings_and_may_be_partial() -> None:
    python = snapshot_from_facts({"python": "3.10"}).python
    assert python is not None and python.version == "3.10"
    snap = snapshot_from_facts({"driver_version": "535", "gpu_name": "NVIDIA GeForce RTX 5090"})
    from cudadoctor.checks import access, run_checks
    from cudadoctor.data.source import default_matrix

    found = run_checks(snap, default_matrix(), access.CHECKS)
    assert [f.code for f in found] == ["driver-too-old-for-gpu"]
    assert "535 is R535" in found[0].why


def test_variables_given_by_key_land_in_env() -> None:
    snap = snapshot_from_facts({"cuda_visible_devices": "", "ld_library_path": "/opt/cuda/lib64",
                                "env": {"CUDA_VISIBLE_DEVICES": "0", "NVIDIA_VISIBLE_DEVICES": "all"}})
    assert snap.env == {"CUDA_VISIBLE_DEVICES": "", "LD_LIBRARY_PATH": "/opt/cuda/lib64", "NVIDIA_VISIBLE_DEVICES": "all"}
