"""The Snapshot's JSON Schema and its documentation cannot drift from the dataclasses.

docs/snapshot.schema.json is the generated schema checked in; docs/snapshot.md documents every
field; a real snapshot of this machine, and one with every field filled, validate against the
schema with the small validator below (no jsonschema dependency).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from cudadoctor import model
from cudadoctor.api import collect, make_report
from cudadoctor.model import ErrorKind, Snapshot
from cudadoctor.host.recorded import RecordedHost
from cudadoctor.render.jsonout import envelope
from cudadoctor.model.schema import DESCRIPTIONS, REGENERATE, schema_json, snapshot_schema
from cudadoctor.model.serialize import SnapshotError, snapshot_from_dict, snapshot_to_dict

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_FILE = ROOT / "docs" / "snapshot.schema.json"
SNAPSHOT_DOC = ROOT / "docs" / "snapshot.md"
SCHEMA = snapshot_schema()

# ----------------------------------------------------------------------------- a small validator

KEYWORDS = {"$schema", "$comment", "$defs", "title", "description", "default", "$ref", "anyOf", "type", "enum",
            "items", "properties", "required", "additionalProperties"}
TYPES = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def validate(value: Any, schema: Dict[str, Any], path: str = "") -> List[str]:
    """Errors of ``value`` against ``schema`` (a node of SCHEMA); paths read like the loader's."""
    unknown = set(schema) - KEYWORDS
    assert not unknown, f"the test validator does not implement {sorted(unknown)}"
    where = path or "snapshot"
    errors: List[str] = []
    if "$ref" in schema:
        prefix = "#/$defs/"
        assert schema["$ref"].startswith(prefix), schema["$ref"]
        errors += validate(value, SCHEMA["$defs"][schema["$ref"][len(prefix):]], path)
    if "anyOf" in schema:
        results = [validate(value, option, path) for option in schema["anyOf"]]
        if all(results):
            errors += results[0]
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](value) for t in types):
            return errors + [f"{where}: expected {' or '.join(types)}, got {value!r}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += validate(item, schema["items"], f"{path}[{i}]")
    if isinstance(value, dict):
        errors += [f"{where}: missing required {key!r}" for key in schema.get("required", []) if key not in value]
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            sub = f"{path}.{key}" if path else key
            if key in properties:
                errors += validate(item, properties[key], sub)
            elif extra is False:
                errors.append(f"{sub}: unknown field")
            elif isinstance(extra, dict):
                errors += validate(item, extra, sub)
    return errors


# ----------------------------------------------------------------------------- helpers


def sections() -> List[type]:
    """Every dataclass reachable from Snapshot, walked independently of cudadoctor.model.schema."""
    found: List[type] = []

    def walk(tp: Any) -> None:
        for arg in typing.get_args(tp):
            walk(arg)
        if dataclasses.is_dataclass(tp) and isinstance(tp, type) and tp not in found:
            found.append(tp)
            for hint in typing.get_type_hints(tp, vars(model)).values():
                walk(hint)

    walk(Snapshot)
    return found


def node_of(cls: type) -> Dict[str, Any]:
    return SCHEMA if cls is Snapshot else SCHEMA["$defs"][cls.__name__]


def is_optional(tp: Any) -> bool:
    return typing.get_origin(tp) is typing.Union and type(None) in typing.get_args(tp)


def filled(tp: Any) -> Any:
    """A value of type ``tp`` with every optional part present: exercises every property."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union:
        return filled(next(a for a in args if a is not type(None)))
    if origin is tuple:
        return (filled(args[0]),)
    if origin is dict:
        return {"KEY": filled(args[1])}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp, vars(model))
        return tp(**{f.name: filled(hints[f.name]) for f in dataclasses.fields(tp)})
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return list(tp)[-1]
    return {str: "x", int: 1, float: 1.5, bool: True}[tp]


def doc_section(text: str, name: str) -> str:
    """The part of the doc under the heading ending in ``(name)``, up to the next heading."""
    m = re.search(rf"^(#+) [^\n]*\({name}\)$", text, re.M)
    assert m, f"docs/snapshot.md has no heading ending in ({name})"
    rest = text[m.end():]
    end = re.search(rf"^#{{1,{len(m.group(1))}}} ", rest, re.M)
    return rest[: end.start()] if end else rest


def json_blocks(text: str) -> List[Any]:
    return [json.loads(block) for block in re.findall(r"^```json\n(.*?)^```", text, re.M | re.S)]


# ----------------------------------------------------------------------------- the schema file


def test_checked_in_schema_is_the_generated_one() -> None:
    printed = subprocess.run(
        [sys.executable, "-m", "cudadoctor.model.schema"], capture_output=True, text=True, encoding="utf-8", check=True
    ).stdout
    assert printed == schema_json()
    current = SCHEMA_FILE.read_text(encoding="utf-8") if SCHEMA_FILE.exists() else ""
    assert current == printed, f"docs/snapshot.schema.json is out of date; regenerate it with: {REGENERATE}"


def test_every_field_is_a_described_property_with_the_right_nullability() -> None:
    for cls in sections():
        node = node_of(cls)
        hints = typing.get_type_hints(cls, vars(model))
        fields = dataclasses.fields(cls)
        assert list(node["properties"]) == [f.name for f in fields], cls.__name__
        assert node["additionalProperties"] is False
        defaults = (dataclasses.MISSING,) * 2
        required = [f.name for f in fields if (f.default, f.default_factory) == defaults]
        assert node.get("required", []) == required, cls.__name__
        for f in fields:
            prop = node["properties"][f.name]
            assert prop["description"].strip(), f"{cls.__name__}.{f.name}"
            accepts_null = not validate(None, prop, f.name)
            assert accepts_null == is_optional(hints[f.name]), f"{cls.__name__}.{f.name}"


def test_descriptions_name_only_existing_classes_and_fields() -> None:
    names = {cls.__name__: {f.name for f in dataclasses.fields(cls)} for cls in sections()}
    names[ErrorKind.__name__] = set()
    for key in DESCRIPTIONS:
        cls, _, field = key.partition(".")
        assert cls in names and (not field or field in names[cls]), f"DESCRIPTIONS[{key!r}] names nothing in model.py"


def test_enums_list_every_member() -> None:
    assert SCHEMA["$defs"]["ErrorKind"]["enum"] == [k.value for k in ErrorKind]


# ----------------------------------------------------------------------------- snapshots validate


def test_a_snapshot_of_this_machine_validates() -> None:
    snapshot = collect()
    assert validate(snapshot_to_dict(snapshot), SCHEMA) == []
    assert validate(envelope(make_report(snapshot))["snapshot"], SCHEMA) == []


MACHINES = sorted(p.parent for p in (ROOT / "tests" / "machines").glob("*/machine.json"))


@pytest.mark.parametrize("machine", MACHINES, ids=[m.name for m in MACHINES])
def test_the_snapshot_of_every_recorded_machine_validates(machine: Path) -> None:
    snapshot = collect(host=RecordedHost.load(str(machine)))
    assert validate(snapshot_to_dict(snapshot), SCHEMA) == []


def test_a_snapshot_with_every_field_filled_validates() -> None:
    assert validate(snapshot_to_dict(filled(Snapshot)), SCHEMA) == []


def test_empty_and_defaults_validate() -> None:
    assert validate({}, SCHEMA) == []
    assert validate(snapshot_to_dict(Snapshot()), SCHEMA) == []


WRONG: List[Tuple[Dict[str, Any], str]] = [
    ({"gpus": [{"index": 0, "memory_total_mib": "80 GB"}]}, "gpus[0].memory_total_mib"),
    ({"driver": {"driver_versoin": "570.86.15"}}, "driver.driver_versoin"),
    ({"errors": [{"probe": "driver", "kind": "oops", "detail": "d"}]}, "errors[0].kind"),
    ({"gpus": [{"name": "NVIDIA H200"}]}, "gpus[0]"),
    ({"host": {"wsl": "yes"}}, "host.wsl"),
    ({"host": {"cpu_count": True}}, "host.cpu_count"),
    ({"env": {"CUDA_HOME": 1}}, "env.CUDA_HOME"),
    ({"probe_durations_s": {"driver": "0.1"}}, "probe_durations_s.driver"),
    ({"frameworks": {"name": "torch"}}, "frameworks"),
]


@pytest.mark.parametrize("document,path", WRONG, ids=[p for _, p in WRONG])
def test_schema_and_loader_reject_the_same_documents_at_the_same_path(document: Dict[str, Any], path: str) -> None:
    errors = validate(document, SCHEMA)
    assert errors and errors[0].startswith(path + ":"), errors
    with pytest.raises(SnapshotError, match=r"^" + re.escape(path) + ":"):
        snapshot_from_dict(document)


# ----------------------------------------------------------------------------- docs/snapshot.md


def test_snapshot_doc_mentions_every_field_in_its_section() -> None:
    text = SNAPSHOT_DOC.read_text(encoding="utf-8")
    for cls in sections():
        section = doc_section(text, cls.__name__)
        missing = [f.name for f in dataclasses.fields(cls) if f"`{f.name}`" not in section]
        assert not missing, f"docs/snapshot.md, section {cls.__name__}, does not document {missing}"


def test_snapshot_doc_explains_error_kinds_and_the_envelope() -> None:
    text = SNAPSHOT_DOC.read_text(encoding="utf-8")
    for word in [k.value for k in ErrorKind] + list(envelope(make_report(Snapshot()))) + ["schema_version"]:
        assert f"`{word}`" in text, word


def test_snapshot_doc_examples_load_and_validate() -> None:
    blocks = json_blocks(SNAPSHOT_DOC.read_text(encoding="utf-8"))
    assert blocks, "docs/snapshot.md has no ```json examples"
    for block in blocks:
        document = block["snapshot"] if "format" in block else block
        snapshot_from_dict(document)
        assert validate(document, SCHEMA) == []
