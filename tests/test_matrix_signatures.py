"""Error signatures (compat_data/errors.json): the messages users see, mapped to root causes.

Spot checks of well-known messages through the query methods, the invariants on the shipped
data, speed-safe patterns, fuzzing of `match`, and hand-broken copies of the data that must give
a DataError or an invariant problem naming the file and the record.
"""

from __future__ import annotations

import json
import re
import random
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cudadoctor.matrix.signatures as sig
from cudadoctor.diagnosis.matching import match
from cudadoctor.matrix._signatures_invariants import invariants
from cudadoctor.matrix import DataError, Matrix
from cudadoctor.matrix.signatures import SignatureData, SignatureMatch
from cudadoctor.model import Category

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "compat_data"

# Categories no researched signature points to (none: every category has at least one).
UNCOVERED: List[Category] = []


@pytest.fixture(scope="module")
def data(matrix: Matrix) -> SignatureData:
    return matrix.signatures


def ids(found: List[SignatureMatch]) -> List[str]:
    return [m.signature.id for m in found]


# ---------------------------------------------------------------------------- the shipped data


def test_invariants_hold_on_the_shipped_data(data: SignatureData, matrix: Matrix) -> None:
    assert invariants(data, matrix) == []


def test_schema_category_enum_equals_the_model_vocabulary() -> None:
    schema = json.loads((DATA / "schemas" / "errors.schema.json").read_text())
    assert schema["$defs"]["category"]["enum"] == [c.value for c in Category]
    items = schema["$defs"]["record"]["properties"]["categories"]["items"]
    assert items == {"$ref": "#/$defs/category"}


def test_enough_signatures_and_every_category_covered(data: SignatureData) -> None:
    assert len(data.signatures) >= 60
    used = {c for s in data.signatures for c in s.categories}
    assert set(Category) - used == set(UNCOVERED)
    for category in Category:
        if category not in UNCOVERED:
            assert data.for_category(category), category


def test_records_are_sorted_unique_and_cite_https(data: SignatureData) -> None:
    found = [s.id for s in data.signatures]
    assert found == sorted(set(found))
    for s in data.signatures:
        assert s.seen_in and all(u.startswith("https://") for u in s.seen_in), s.id
        assert s.source.strip() and s.confidence in ("primary", "secondary", "unverified")
        assert s.categories and all(isinstance(c, Category) for c in s.categories)


def test_every_example_is_matched_first_by_its_own_or_the_named_signature(matrix: Matrix, data: SignatureData) -> None:
    for s in data.signatures:
        found = ids(match(s.example, matrix))
        assert s.id in found, s.id
        assert found[0] == (s.example_first_match or s.id), (s.id, found)


def test_every_pattern_is_safe_and_has_a_keyword(data: SignatureData) -> None:
    for s in data.signatures:
        if not s.pattern:  # a signature of error codes alone: the vocabulary finds it
            assert s.codes and s.regex is None, s.id
            continue
        assert sig.pattern_problems(s.pattern) == [], s.id
        assert s.keywords and all(k == k.lower() and len(k) >= sig.MIN_KEYWORD for k in s.keywords)
        assert s.regex is not None and s.regex.flags & re.IGNORECASE


# ---------------------------------------------------------------------------- well-known messages


def test_no_kernel_image_is_arch_unsupported(matrix: Matrix) -> None:
    found = match("RuntimeError: CUDA error: no kernel image is available for execution on the device", matrix)
    assert found[0].signature.id == "cuda-no-kernel-image"
    assert found[0].signature.category == Category.ARCH_UNSUPPORTED


def test_nvml_mismatch_is_driver_library_mismatch(data: SignatureData) -> None:
    first = data.first("Failed to initialize NVML: Driver/library version mismatch")
    assert first is not None and first.categories[0] == Category.DRIVER_LIBRARY_MISMATCH
    with_version = data.first("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.124")
    assert with_version is not None and with_version.groups["nvml_version"] == "570.124"


def test_missing_cudnn_captures_the_library(data: SignatureData) -> None:
    first = data.first("libcudnn.so.8: cannot open shared object file: No such file or directory")
    assert first is not None
    assert first.signature.id == "libcudnn-cannot-open"
    assert first.signature.category == Category.MISSING_LIBRARY
    assert first.groups["lib"] == "libcudnn.so.8" and first.groups["major"] == "8"


def test_torch_driver_too_old(data: SignatureData) -> None:
    first = data.first("The NVIDIA driver on your system is too old (found version 11040)")
    assert first is not None and first.signature.category == Category.DRIVER_TOO_OLD
    assert first.groups == {"driver_cuda_version": "11040"}


def test_cpu_only_torch(data: SignatureData) -> None:
    first = data.first("AssertionError: Torch not compiled with CUDA enabled")
    assert first is not None and first.signature.category == Category.CPU_ONLY_BUILD


def test_unsupported_gcc(data: SignatureData) -> None:
    first = data.first("unsupported GNU version! gcc versions later than 12 are not supported!")
    assert first is not None and first.signature.category == Category.HOST_COMPILER_UNSUPPORTED
    assert first.groups["max_gcc"] == "12"


def test_specific_cuda_error_beats_the_pytorch_wrapper(data: SignatureData) -> None:
    text = ("UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
            "functions before calling NumCudaDevices() that might have already set an error? Error 803: system has "
            "unsupported display driver / cuda driver combination")
    found = data.match(text)
    assert ids(found) == ["cuda-system-driver-mismatch", "torch-cudagetdevicecount-unexpected"]
    assert found[1].groups["code"] == "803"
    assert found[0].signature.specificity > found[1].signature.specificity


def test_tensorflow_dlopen_names_the_library(data: SignatureData) -> None:
    text = ("W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
            "'libcuda.so.1'; dlerror: libcuda.so.1: cannot open shared object file: No such file or directory")
    found = data.match(text)
    assert ids(found) == ["libcuda-so-1-missing", "tf-could-not-load-dynamic-library"]
    assert found[0].signature.category == Category.NO_DRIVER  # a container (a prompt, a docker line) puts container_no_gpu first
    assert found[1].groups["lib"] == "libcuda.so.1"


def test_alias_groups_are_reported_under_their_name(data: SignatureData) -> None:
    first = data.first("OSError: libnvrtc-builtins.so.12.4: cannot open shared object file: No such file or directory")
    assert first is not None and first.signature.id == "nvrtc-builtins-missing"
    assert first.groups == {"lib": "libnvrtc-builtins.so.12.4"}


def test_kernel_and_hardware_messages(data: SignatureData) -> None:
    secure = data.first("modprobe: ERROR: could not insert 'nvidia': Key was rejected by service")
    assert secure is not None and secure.signature.category == Category.KERNEL_MODULE_BLOCKED
    assert secure.groups["module"] == "nvidia"
    bus = data.first("[ 1234.5] NVRM: Xid (PCI:0000:41:00): 79, pid=0, GPU has fallen off the bus.")
    assert bus is not None and bus.signature.id == "xid-79-fallen-off-bus"
    assert bus.signature.category == Category.HARDWARE_FAULT and bus.groups["bus"] == "0000:41:00"


def test_a_message_over_two_lines(data: SignatureData) -> None:
    text = ("import torch\nFound GPU0 GeForce GT 710 which is of cuda capability 3.5.\r\n"
            "    PyTorch no longer supports this GPU because it is too old.\r\nmore output")
    first = data.first(text)
    assert first is not None and first.signature.id == "torch-gpu-too-old"
    assert first.groups["name"] == "GeForce GT 710" and first.groups["cc"] == "3.5"
    assert first.line_number == 2
    assert first.line.startswith("Found GPU0") and first.line.endswith("too old.")


def test_nothing_in_an_ordinary_log(data: SignatureData) -> None:
    assert data.match("") == []
    assert data.match("epoch 1 loss 0.25\nepoch 2 loss 0.21\n") == []
    assert data.first("all good") is None


def test_a_one_megabyte_log_with_one_error(matrix: Matrix) -> None:
    rng = random.Random(7)
    words = ["step", "loss", "cuda", "device", "error", "library", "not", "found", "GPU", "0.125", "shared", "open"]
    lines = [" ".join(rng.choice(words) for _ in range(10)) for _ in range(20000)]
    lines[14321] = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has 1 GiB free"
    text = "\n".join(lines)
    assert len(text) > 1_000_000
    found = match(text, matrix)
    assert ids(found) == ["cuda-out-of-memory"]
    assert found[0].line_number == 14322 and found[0].line == lines[14321]
    assert found[0].groups["requested"] == "2.50 GiB"
    assert text[found[0].start:].startswith("out of memory. Tried to allocate")


def test_a_long_single_line_is_cut_around_the_match(matrix: Matrix) -> None:
    # a longer line than the reader keeps is read at its head and its tail (issue 27: linear time)
    text = "x" * 500_000 + " CUDA error: invalid device ordinal " + "y" * 1_000
    found = match(text, matrix)
    first = found[0] if found else None
    assert first is not None and first.signature.id == "cuda-invalid-device-ordinal"
    assert "invalid device ordinal" in first.line and len(first.line) <= sig.MAX_LINE


def test_by_id_and_for_category(data: SignatureData) -> None:
    s = data.by_id("nvml-driver-library-version-mismatch")
    assert s is not None and s.categories == (Category.DRIVER_LIBRARY_MISMATCH,)
    assert data.by_id("no-such-signature") is None
    compilers = data.for_category(Category.HOST_COMPILER_UNSUPPORTED)
    assert [x.id for x in compilers] == ["msvc-build-tools-missing", "nvcc-host-compiler-unsupported-os",
                                         "nvcc-no-supported-host-compiler", "nvcc-unsupported-gcc", "nvcc-unsupported-msvc"]
    assert [x.id for x in data.for_category("host_compiler_unsupported")] == [x.id for x in compilers]
    hidden = data.for_category(Category.VISIBLE_DEVICES_HIDDEN)
    firsts = [x for x in hidden if x.category == Category.VISIBLE_DEVICES_HIDDEN]
    assert hidden[:len(firsts)] == firsts and len(firsts) < len(hidden)
    assert data.for_category("not_a_category") == []


# ---------------------------------------------------------------------------- pattern analysis


def test_pattern_problems_catch_backtracking_and_missing_keywords() -> None:
    assert sig.pattern_problems(r"unsupported GNU version! gcc versions later than (?P<max_gcc>\d+)") == []
    assert any("nested quantifier" in p for p in sig.pattern_problems(r"loading (\w+\s?)* failed"))
    assert any("nested quantifier" in p for p in sig.pattern_problems(r"error: (?:a+)+b"))
    assert any("alternatives inside" in p for p in sig.pattern_problems(r"error: (?:a|ab)*c"))
    assert any("no literal" in p for p in sig.pattern_problems(r"\d+\s*\w+"))
    assert any("shorter than" in p for p in sig.pattern_problems(r"ab\d+"))
    assert any("cannot be analysed" in p for p in sig.pattern_problems(r"(?P<x>ab)(?P=x) error"))


def test_keywords_are_literals_every_match_holds() -> None:
    assert sig.keywords(r"Failed to initialize NVML: Unknown Error") == ("failed to initialize nvml: unknown error",)
    assert sig.keywords(r"foo(?:bar)?baz|cudaErrorNoDevice") == ("cudaerrornodevice", "foo")
    assert sig.keywords(r"(?P<lib>libcublas(?:Lt)?\.so\.(?P<major>\d+))(?:: cannot open| not found)") == ("libcublas",)
    assert sig.keywords(r"\d+") == ()
    assert sig.spans_lines(r"compiled\s+against") and sig.spans_lines(r"\(from versions: [^)]*\)")
    assert not sig.spans_lines(r"Could not load library (?P<lib>[\w-]+\.so)\. Error: (?P<cause>[^\n]+)")


# ---------------------------------------------------------------------------- fuzzing

FUZZ = settings(deadline=timedelta(seconds=2), max_examples=150)
any_text = st.text(alphabet=st.characters(blacklist_categories=()), max_size=2000)  # surrogates too
near_text = st.lists(  # fragments of real messages, so that the regular expressions get far
    st.one_of(st.sampled_from(["CUDA error: ", "Error 804: ", "cannot open shared object file", "libcudnn.so.",
                               "could not insert 'nvidia", "Xid (PCI:", "(from versions: ", "\n", "\r\n", " ", ")",
                               "Found GPU", " which is of cuda capability ", "PyTorch", "\u0130", "K"]),
              st.text(max_size=8)),
    max_size=60).map("".join)
_MATRIX = Matrix(str(DATA))


def _data() -> SignatureData:
    return _MATRIX.signatures


@FUZZ
@given(text=st.one_of(any_text, near_text))
def test_match_never_raises(text: str) -> None:
    data = _data()
    found = data.match(text)
    assert isinstance(found, list)
    keys = [(-m.signature.specificity, m.start, m.signature.id) for m in found]
    assert keys == sorted(keys)
    for m in found:
        assert m.text and m.text in text and m.line_number >= 1
        assert m.signature.regex.search(m.text)


@FUZZ
@given(picks=st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=4),
       noise=st.lists(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=60), max_size=6),
       seed=st.integers(min_value=0, max_value=1000))
def test_examples_are_found_inside_other_output(picks: List[int], noise: List[str], seed: int) -> None:
    data = _data()
    chosen = [data.signatures[i % len(data.signatures)] for i in picks]
    parts = [s.example for s in chosen] + [n.replace("\n", " ") for n in noise]
    random.Random(seed).shuffle(parts)
    text = "\n".join(parts)
    found = set(ids(match(text, _MATRIX)))
    assert {s.id for s in chosen} <= found
    assert found <= {s.id for s in data.signatures if _in(s, text)}


def _in(s: sig.Signature, text: str) -> bool:
    """Whether the text holds what the signature stands for: its pattern, or one of its codes by
    name or message (whatever wraps it)."""
    if s.regex is not None and s.regex.search(text):
        return True
    low = " ".join(text.lower().split())
    for name in s.codes:
        code = _data().code(name)
        if name in text or (code is not None and any(" ".join(m.lower().split()) in low for m in code.messages)):
            return True
        if name.startswith("NVML_ERROR_") and "NVMLError_" in text:
            return True
    return bool(s.codes) and bool(re.search(r"cuda(?:[ _](?:runtime|driver))?[ _]?(?:error|failure)", low))


# ---------------------------------------------------------------------------- broken data


@pytest.fixture
def data_copy(tmp_path: Path) -> Path:
    target = tmp_path / "compat_data"
    shutil.copytree(DATA, target)
    return target


def edit_errors(directory: Path, change: Callable[[Dict[str, Any]], None]) -> None:
    path = directory / "errors.json"
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def record(doc: Dict[str, Any], rid: str) -> Dict[str, Any]:
    return next(r for r in doc["records"] if r["id"] == rid)


def problems_of(directory: Path) -> List[str]:
    m = Matrix(str(directory))
    return invariants(m.signatures, m)


def load_error(directory: Path) -> DataError:
    with pytest.raises(DataError) as info:
        Matrix(str(directory)).signatures
    return info.value


def test_a_pattern_that_does_not_compile(data_copy: Path) -> None:
    edit_errors(data_copy, lambda d: record(d, "cuda-no-device").update(pattern="no CUDA-capable (device"))
    err = load_error(data_copy)
    assert err.file == "errors.json" and "cuda-no-device" in str(err) and "does not compile" in str(err)


def test_an_unknown_category(data_copy: Path) -> None:
    edit_errors(data_copy, lambda d: record(d, "torch-not-compiled-with-cuda").update(categories=["cpu_only", "other"]))
    err = load_error(data_copy)
    assert err.file == "errors.json" and "torch-not-compiled-with-cuda" in str(err) and "cpu_only" in str(err)


def test_a_wrong_type(data_copy: Path) -> None:
    edit_errors(data_copy, lambda d: record(d, "nouveau-in-use").update(specificity="high"))
    err = load_error(data_copy)
    assert "errors.json" in str(err) and "nouveau-in-use" in str(err) and "specificity" in str(err)


def test_a_seen_in_without_https(data_copy: Path) -> None:
    edit_errors(data_copy, lambda d: record(d, "xid-79-fallen-off-bus").update(seen_in=["http://example.com/x"]))
    err = load_error(data_copy)
    assert "xid-79-fallen-off-bus" in str(err) and "seen_in" in str(err)


def test_an_example_its_pattern_does_not_match(data_copy: Path) -> None:
    edit_errors(data_copy, lambda d: record(d, "torch-no-cuda-gpus-available").update(example="RuntimeError: something else"))
    assert "errors.json: torch-no-cuda-gpus-available: example is not matched by its own pattern" in problems_of(data_copy)


def test_a_code_signature_whose_example_names_none_of_its_codes(data_copy: Path) -> None:
    edit_errors(data_copy, lambda d: record(d, "cuda-no-kernel-image").update(example="RuntimeError: CUDA error: something else"))
    assert "errors.json: cuda-no-kernel-image: example names none of its codes" in problems_of(data_copy)


def test_an_example_won_by_another_signature(data_copy: Path) -> None:
    def change(d: Dict[str, Any]) -> None:
        record(d, "torch-cudagetdevicecount-unexpected").pop("example_first_match")

    edit_errors(data_copy, change)
    found = [p for p in problems_of(data_copy) if "torch-cudagetdevicecount-unexpected" in p]
    assert found and found[0].startswith("errors.json: torch-cudagetdevicecount-unexpected: cuda-compat-not-supported-on-device")


def test_a_wrong_example_first_match(data_copy: Path) -> None:
    edit_errors(data_copy, lambda d: record(d, "torch-no-cuda-gpus-available").update(example_first_match="cuda-no-device"))
    assert any(p.startswith("errors.json: torch-no-cuda-gpus-available: example_first_match") for p in problems_of(data_copy))


def test_equal_specificity_on_an_overlap(data_copy: Path) -> None:
    edit_errors(data_copy, lambda d: record(d, "pip-no-local-cuda-build").update(specificity=20))
    assert any("pip-no-local-cuda-build" in p and p.startswith("errors.json") for p in problems_of(data_copy))


def test_a_nested_quantifier(data_copy: Path) -> None:
    edit_errors(data_copy, lambda d: record(d, "torch-no-cuda-gpus-available").update(pattern=r"No CUDA (?:GPUs? ?)+are available"))
    assert any(p.startswith("errors.json: torch-no-cuda-gpus-available: nested quantifier") for p in problems_of(data_copy))


def test_unsorted_and_duplicate_ids(data_copy: Path) -> None:
    first: Dict[str, str] = {}

    def change(d: Dict[str, Any]) -> None:
        first["id"] = d["records"][0]["id"]
        d["records"].append(dict(d["records"][0]))

    edit_errors(data_copy, change)
    found = problems_of(data_copy)
    assert "errors.json: records are not sorted by id" in found
    assert f"errors.json: {first['id']}: id is listed twice" in found


def test_a_schema_out_of_step_with_the_vocabulary(data_copy: Path) -> None:
    path = data_copy / "schemas" / "errors.schema.json"
    schema = json.loads(path.read_text())
    schema["$defs"]["category"]["enum"].append("gremlins")
    path.write_text(json.dumps(schema))
    assert any(p.startswith("errors.schema.json: $defs.category.enum differs") for p in problems_of(data_copy))


def test_an_unknown_field(data_copy: Path) -> None:
    edit_errors(data_copy, lambda d: record(d, "cuda-stub-library").update(sources=["x"]))
    err = load_error(data_copy)
    assert "cuda-stub-library" in str(err) and "unknown field" in str(err)
