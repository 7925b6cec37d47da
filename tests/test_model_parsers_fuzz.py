"""Hypothesis fuzzing of every public parser, and of the snapshot loader.

Parsers read text from outside (command outputs, files a user's machine happens to hold), so
each one must be total: any input gives a value of the documented type, never an exception.
Two kinds of input per parser: arbitrary unicode (lone surrogates included, since a recorded
machine's output may carry surrogate-escaped bytes), and near-valid text built from the real
format with random parts, which reaches the deeper branches arbitrary text never does.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import string
import time
import typing
from datetime import timedelta
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudadoctor import model
from cudadoctor.model import parsers as p
from cudadoctor.probes.driver import SMI_FIELDS
from cudadoctor.model.serialize import SnapshotError, snapshot_from_dict, snapshot_from_json

# A slow example means a regex that backtracks badly; a second is far beyond any real one.
FUZZ = settings(deadline=timedelta(seconds=1), max_examples=100)

# --------------------------------------------------------------------------- building blocks

any_text = st.text(alphabet=st.characters(blacklist_categories=()), max_size=300)  # surrogates too
ascii_noise = st.text(alphabet=string.printable, max_size=40)
digits = st.one_of(
    st.integers(min_value=0, max_value=10**6).map(str),
    st.text(alphabet="0123456789", min_size=1, max_size=12),
    st.sampled_from(["0", "00", "١٢", "１２", "²", "9" * 30, "-1", ""]),  # unicode digits, junk
)
versions = st.lists(digits, min_size=1, max_size=5).map(".".join)
separators = st.sampled_from([" ", "  ", "\t", "", ", ", ",", "\n", "\r\n"])


def lines_of(line: st.SearchStrategy[str], max_size: int = 8) -> st.SearchStrategy[str]:
    """Several near-valid lines mixed with noise, joined by assorted line ends."""
    return st.lists(st.one_of(line, line, ascii_noise, any_text), max_size=max_size).flatmap(
        lambda parts: st.sampled_from(["\n", "\r\n", "\r"]).map(lambda nl: nl.join(parts))
    )


def mixed(near: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(any_text, near)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)


def json_text(values: st.SearchStrategy[Any]) -> st.SearchStrategy[str]:
    """Valid JSON of ``values``, sometimes cut short, sometimes with a character flipped."""
    dumped = values.map(lambda v: json.dumps(v, allow_nan=True))
    cut = st.tuples(dumped, st.integers(min_value=0, max_value=200)).map(lambda t: t[0][: t[1]])
    return st.one_of(dumped, dumped, cut, any_text)


# --------------------------------------------------------------------------- near-valid inputs

nvcc_text = lines_of(
    st.one_of(
        st.builds("Cuda compilation tools, release {}, V{}".format, versions, versions),
        st.builds("Cuda compilation tools, release {}{}V{}".format, versions, separators, versions),
        st.builds("Build cuda_{}.r{}/compiler.{}_0".format, versions, versions, digits),
        st.just("nvcc: NVIDIA (R) Cuda compiler driver"),
    )
)
compiler_text = lines_of(
    st.one_of(
        st.builds("gcc ({} {}) {}".format, ascii_noise, versions, versions),
        st.builds("{} clang version {} ({})".format, st.sampled_from(["Ubuntu", "Apple", "Debian", ""]),
                  versions, ascii_noise),
        st.builds("{}version{}{}".format, ascii_noise, separators, versions),
    )
)
abi_tags = st.sampled_from(["libc6,x86-64", "libc6", "libc6,AArch64", "libc6,64bit", "libc6,x32",
                            "libc6,x86-64, OS ABI: Linux 3.2.0", "LINUX_VDSO", "", "libc6,x86-64, hwcap: \"x86-64-v3\""])
ldconfig_text = lines_of(
    st.one_of(
        st.builds("\t{}.so.{} ({}) => {}".format, ascii_noise, versions, abi_tags, ascii_noise),
        st.builds("{}{} ({}){}=>{}{}".format, separators, ascii_noise, abi_tags, separators, separators, any_text),
        st.builds("{} libs found in cache `/etc/ld.so.cache'".format, digits),
    ),
    max_size=12,
)
proc_text = lines_of(
    st.builds(
        "NVRM version: NVIDIA UNIX {} Kernel Module{}{}{}{}".format,
        st.sampled_from(["x86_64", "Open", "aarch64", "ppc64le", ""]),
        st.sampled_from(["", " for x86_64", " for aarch64", " for"]),
        separators,
        versions,
        ascii_noise,
    )
)
smi_cell = st.one_of(
    st.sampled_from(["[N/A]", "[Not Supported]", "N/A", "Unknown", "", " ", "[Unknown Error]", "[GPU requires reset]",
                     "Enabled", "Disabled", "Yes", "No", "0x233510DE", "inf", "nan", "²", "-1"]),
    versions,
    digits,
    ascii_noise.map(lambda s: s.replace(",", " ")),
    any_text,  # may hold commas: then the row has the wrong width and is skipped
)
smi_fields = st.one_of(
    st.just(list(SMI_FIELDS)),
    st.lists(st.sampled_from(SMI_FIELDS), min_size=0, max_size=6),
    st.lists(st.text(max_size=8), max_size=4),
)


@st.composite
def smi_csv(draw: st.DrawFn) -> Tuple[str, List[str]]:
    fields = draw(smi_fields)
    width = st.integers(min_value=max(0, len(fields) - 1), max_value=len(fields) + 1)
    rows = draw(st.lists(width.flatmap(lambda n: st.lists(smi_cell, min_size=n, max_size=n)), max_size=5))
    sep = draw(st.sampled_from([", ", ",", " , "]))
    lines = [sep.join(r) for r in rows] + draw(st.lists(any_text, max_size=2))
    return "\n".join(draw(st.permutations(lines))), fields


define_names = st.sampled_from(["CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL", "CUDNN_VERSION", "CUDA_VERSION",
                                "CUDNN_MAJOR_X", "cudnn_major"])
define_line = st.builds(
    "#{}define{}{}{}{}".format, st.sampled_from(["", " ", "  "]), st.sampled_from([" ", "\t", "  ", ""]),
    define_names, st.sampled_from([" ", "\t", "      ", ""]), st.one_of(digits, digits, ascii_noise),
)
# cudnn_version.h's three #defines (well formed, values fuzzed) among random ones and noise.
header_text = st.tuples(
    st.lists(st.one_of(define_line, ascii_noise), max_size=6),
    st.permutations([f"#define {n} " for n in ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL")]),
    st.lists(digits, min_size=3, max_size=3),
    st.integers(min_value=0, max_value=3),
).map(lambda t: "\n".join(t[0] + [d + v for d, v in zip(t[1][t[3]:], t[2])]))
cuda_json = json_text(
    st.one_of(
        json_values,
        st.fixed_dictionaries({"cuda": st.one_of(json_values, st.fixed_dictionaries(
            {"name": st.text(max_size=10), "version": st.one_of(versions, json_values)}))}),
    )
)
cuda_txt = st.builds("CUDA Version{}{}".format, separators, versions)
python_literals = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10) | st.floats(allow_nan=False),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)
identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)
py_expressions = st.one_of(
    python_literals.map(repr),
    python_literals.map(lambda v: f"collections.OrderedDict({list(v.items()) if isinstance(v, dict) else v!r})"),
    python_literals.map(lambda v: f"OrderedDict({v!r})"),
    python_literals.map(lambda v: f"dict({v!r})"),
    st.sampled_from(["os.environ['X']", "f(x)", "1 +", "(" * 200 + "1" + ")" * 200, "[" * 500 + "]" * 500,
                     "9" * 5000, "-" * 1000 + "1", "'\\x00'", "{[1]: 2}", "{{1}}", "lambda: 0", "*a",
                     "OrderedDict([1, 2])", "dict(1)", "OrderedDict(a=1)", "x.OrderedDict(None)"]),
)
python_text = lines_of(
    st.one_of(
        st.builds("{} = {}".format, identifiers, py_expressions),
        st.builds("{}: {} = {}".format, identifiers, st.sampled_from(["Optional[str]", "int", "x.y"]), py_expressions),
        st.builds("build_info = {}".format, py_expressions),
        st.sampled_from(["import collections", "if x:", "    y = 1", "def f(:", "\x00"]),
    ),
    max_size=8,
)
dist_names = st.one_of(
    st.builds("{}-{}{}".format, st.text(alphabet=string.ascii_letters + "_.-", max_size=12), versions,
              st.sampled_from([".dist-info", ".egg-info", "-py3.11.egg-info", "", ".dist-info/"])),
    any_text,
)
metadata_text = lines_of(
    st.one_of(
        st.builds("{}: {}".format, st.sampled_from(["Name", "Version", "Requires-Dist", "Summary", ""]), ascii_noise),
        st.builds(" {}".format, ascii_noise),
        st.just(""),
    ),
    max_size=10,
)
conda_json = json_text(
    st.one_of(
        json_values,
        st.fixed_dictionaries(
            {"name": st.one_of(st.text(max_size=10), json_values), "version": st.one_of(versions, json_values)},
            optional={"build": json_values | st.text(max_size=8),
                      "channel": st.one_of(json_values, st.builds("https://conda.anaconda.org/{}/{}".format,
                                                                  ascii_noise, ascii_noise))},
        ),
    )
)
manifest_entry = st.builds(
    '[[{}{}]]\n{}{}version{}={}"{}"\n'.format,
    st.sampled_from(["", "deps.", "deps.", "deps", "'"]), identifiers,
    st.sampled_from(["", 'uuid = "x"\n', "[deps.A.extensions]\n", "\n"]),
    st.sampled_from(["", "    "]), separators, separators, st.one_of(versions, ascii_noise),
)
manifest_text = st.lists(
    st.one_of(manifest_entry, manifest_entry, st.builds("[{}]\n".format, ascii_noise),
              st.builds('{} = "{}"\n'.format, identifiers, ascii_noise), any_text),
    max_size=8,
).map("".join)
julia_text = st.builds("julia version{}{}{}".format, separators, versions, ascii_noise)
cgroup_text = lines_of(
    st.builds("{}:{}:/{}/{}".format, digits, ascii_noise,
              st.sampled_from(["docker", "kubepods", "libpod-x", "containerd", "lxc", "user.slice", ""]), ascii_noise)
)
os_release_text = lines_of(st.builds("{}={}{}{}".format, identifiers, st.sampled_from(['"', "'", ""]),
                                     ascii_noise, st.sampled_from(['"', "'", ""])))
meminfo_text = lines_of(st.builds("{}:{}{}{}kB".format, st.sampled_from(["MemTotal", "MemFree", "memtotal"]),
                                  separators, digits, separators))
cpuinfo_text = lines_of(st.builds("{}{}:{}".format, st.sampled_from(["model name", "Model", "Hardware", "cpu model",
                                                                     "processor"]), separators, ascii_noise))

# --------------------------------------------------------------------------- properties


def is_opt_str(value: object) -> bool:
    return value is None or isinstance(value, str)


def test_every_public_parser_is_fuzzed() -> None:
    """A new parser must be added to this file: its totality is the module's contract."""
    public = {name for name, fn in inspect.getmembers(p, inspect.isfunction)
              if fn.__module__ == p.__name__ and not name.startswith("_")}
    assert public == FUZZED, f"not fuzzed: {sorted(public - FUZZED)}; gone: {sorted(FUZZED - public)}"


FUZZED = {
    "parse_os_release", "parse_nvcc_version", "parse_cuda_version_json", "parse_cuda_version_txt",
    "parse_cudnn_header", "parse_proc_driver_version", "parse_nvidia_smi_csv", "parse_ldconfig",
    "version_from_soname", "parse_compiler_version", "parse_meminfo_total_mib", "parse_cpu_model",
    "parse_python_assignments", "parse_tf_build_info", "parse_dist_info_dirname", "normalize_name",
    "parse_metadata_headers", "parse_conda_meta", "parse_julia_manifest", "parse_julia_version",
    "cuda_version_from_int", "detect_container_from_cgroup", "parse_secure_boot_efivar",
    "parse_smi_cuda_version", "parse_cupy_distribution",
}


@FUZZ
@given(st.one_of(st.from_regex(r"cupy(-cuda\d{0,4}x?|-rocm(-\d){0,3})?", fullmatch=True), st.text(max_size=40)))
def test_fuzz_parse_cupy_distribution(name: str) -> None:
    variant, cuda = p.parse_cupy_distribution(name)
    assert variant in (None, "cuda", "rocm") and (cuda is None or isinstance(cuda, str))


smi_header_text = st.builds(
    lambda label, version, tail: f"| NVIDIA-SMI 610.57.04   {label}: {version}   {tail} |",
    st.sampled_from(["CUDA Version", "CUDA UMD Version", "CUDA  Version", "Version"]),
    st.from_regex(r"\d{1,3}(\.\d{0,3}){0,2}", fullmatch=True), st.text(max_size=20),
)


@FUZZ
@given(st.one_of(smi_header_text, st.text()))
def test_fuzz_parse_smi_cuda_version(text: str) -> None:
    out = p.parse_smi_cuda_version(text)
    assert out is None or (isinstance(out, str) and out.count(".") == 1)


@FUZZ
@given(mixed(os_release_text))
def test_fuzz_parse_os_release(text: str) -> None:
    out = p.parse_os_release(text)
    assert isinstance(out, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in out.items())


@FUZZ
@given(mixed(nvcc_text))
def test_fuzz_parse_nvcc_version(text: str) -> None:
    out = p.parse_nvcc_version(text)
    assert is_opt_str(out)
    assert out is None or out in text


@FUZZ
@given(cuda_json)
def test_fuzz_parse_cuda_version_json(text: str) -> None:
    out = p.parse_cuda_version_json(text)
    assert is_opt_str(out)


@FUZZ
@given(mixed(cuda_txt))
def test_fuzz_parse_cuda_version_txt(text: str) -> None:
    out = p.parse_cuda_version_txt(text)
    assert out is None or (isinstance(out, str) and out in text)


@FUZZ
@given(mixed(header_text))
def test_fuzz_parse_cudnn_header(text: str) -> None:
    out = p.parse_cudnn_header(text)
    assert out is None or (isinstance(out, str) and all(part.isdigit() for part in out.split(".")))


@FUZZ
@given(mixed(proc_text))
def test_fuzz_parse_proc_driver_version(text: str) -> None:
    version, flavor = p.parse_proc_driver_version(text)
    assert (version is None) == (flavor is None)
    assert version is None or (isinstance(version, str) and version in text)
    assert flavor in (None, "open", "proprietary")


@FUZZ
@given(smi_csv())
def test_fuzz_parse_nvidia_smi_csv(case: Tuple[str, List[str]]) -> None:
    text, fields = case
    rows = p.parse_nvidia_smi_csv(text, fields)
    assert isinstance(rows, list)
    for row in rows:
        assert set(row) == set(fields)
        assert all(is_opt_str(v) for v in row.values())
        assert not any(v is not None and (v.startswith("[") and v.endswith("]")) for v in row.values())


@FUZZ
@given(any_text, st.lists(st.text(max_size=6), max_size=4))
def test_fuzz_parse_nvidia_smi_csv_any_text(text: str, fields: List[str]) -> None:
    assert isinstance(p.parse_nvidia_smi_csv(text, fields), list)


@FUZZ
@given(mixed(ldconfig_text), st.sampled_from([None, "x86-64", "AArch64", "64bit", ""]))
def test_fuzz_parse_ldconfig(text: str, abi: Optional[str]) -> None:
    out = p.parse_ldconfig(text, abi)
    assert isinstance(out, list)
    assert all(isinstance(s, str) and isinstance(path, str) and path for s, path in out)
    if abi is not None:
        assert len(out) <= len(p.parse_ldconfig(text))


@FUZZ
@given(st.one_of(any_text, st.builds("{}.so.{}".format, ascii_noise, versions),
                 st.builds("{}64_{}.dll".format, ascii_noise, digits)),
       st.one_of(any_text, st.sampled_from(["libcudart", "libcudnn", "lib", "", ".*", "lib(", "libcu[da"])))
def test_fuzz_version_from_soname(filename: str, stem: str) -> None:
    assert is_opt_str(p.version_from_soname(filename, stem))


@FUZZ
@given(mixed(compiler_text))
def test_fuzz_parse_compiler_version(text: str) -> None:
    out = p.parse_compiler_version(text)
    assert out is None or (isinstance(out, str) and out in text)


@FUZZ
@given(mixed(meminfo_text))
def test_fuzz_parse_meminfo_total_mib(text: str) -> None:
    out = p.parse_meminfo_total_mib(text)
    assert out is None or (isinstance(out, int) and out >= 0)


@FUZZ
@given(mixed(cpuinfo_text))
def test_fuzz_parse_cpu_model(text: str) -> None:
    out = p.parse_cpu_model(text)
    assert out is None or (isinstance(out, str) and out.strip() == out and out)


@FUZZ
@given(mixed(python_text))
def test_fuzz_parse_python_assignments(text: str) -> None:
    out = p.parse_python_assignments(text)
    assert isinstance(out, dict) and all(isinstance(k, str) for k in out)


@FUZZ
@given(mixed(python_text))
def test_fuzz_parse_tf_build_info(text: str) -> None:
    out = p.parse_tf_build_info(text)
    assert isinstance(out, dict) and all(isinstance(k, str) for k in out)


@FUZZ
@given(dist_names)
def test_fuzz_parse_dist_info_dirname(name: str) -> None:
    out = p.parse_dist_info_dirname(name)
    if out is not None:
        dist, version = out
        assert isinstance(dist, str) and isinstance(version, str) and dist and version
        assert dist == p.normalize_name(dist)


@FUZZ
@given(any_text)
def test_fuzz_normalize_name(name: str) -> None:
    out = p.normalize_name(name)
    assert isinstance(out, str) and p.normalize_name(out) == out


@FUZZ
@given(mixed(metadata_text))
def test_fuzz_parse_metadata_headers(text: str) -> None:
    out = p.parse_metadata_headers(text)
    assert isinstance(out, dict)
    assert all(isinstance(k, str) and isinstance(v, list) and all(isinstance(x, str) for x in v) for k, v in out.items())


@FUZZ
@given(conda_json)
def test_fuzz_parse_conda_meta(text: str) -> None:
    out = p.parse_conda_meta(text)
    if out is not None:
        assert isinstance(out, dict) and out["name"] and out["version"]
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in out.items())


@FUZZ
@given(mixed(manifest_text))
def test_fuzz_parse_julia_manifest(text: str) -> None:
    out = p.parse_julia_manifest(text)
    assert isinstance(out, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in out.items())


@FUZZ
@given(mixed(julia_text))
def test_fuzz_parse_julia_version(text: str) -> None:
    assert is_opt_str(p.parse_julia_version(text))


@FUZZ
@given(st.one_of(st.integers(), st.booleans(), st.floats(), st.none(), any_text, json_values))
def test_fuzz_cuda_version_from_int(value: Any) -> None:
    out = p.cuda_version_from_int(value)
    assert out is None or (isinstance(out, str) and out.count(".") == 1)


@FUZZ
@given(mixed(cgroup_text))
def test_fuzz_detect_container_from_cgroup(text: str) -> None:
    assert p.detect_container_from_cgroup(text) in (None, "kubernetes", "docker", "podman", "containerd", "lxc")


@FUZZ
@given(st.binary(max_size=16))
def test_fuzz_parse_secure_boot_efivar(data: bytes) -> None:
    assert p.parse_secure_boot_efivar(data) in (None, True, False)


# Inputs that broke, or could break, a parser in the past: huge numbers (int() refuses more than
# 4300 digits), deep nesting (recursion), NUL bytes, and long runs that make regexes backtrack.
HOSTILE = [
    "9" * 5000,
    "#define CUDNN_MAJOR " + "9" * 5000 + "\n#define CUDNN_MINOR 1\n",
    "MemTotal: " + "9" * 5000 + " kB\n",
    "[" * 100_000,
    "{" * 100_000,
    "a = " + "(" * 5000 + ")" * 5000,
    "build_info = OrderedDict(" + "[" * 5000 + "]" * 5000 + ")",
    "\x00" * 1000,
    "\ud800\udfff" * 100,
    "release " * 50_000,
    "1." * 200_000,
    " " * 500_000 + "x",
    "\t" + "a" * 500_000 + " (libc6) =>",
    "NVRM version: " + "Kernel Module " * 20_000,
    "[[deps." + "A" * 200_000 + "]]",
    "version = \"" + "\"" * 100_000,
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_inputs(text: str) -> None:
    """Each parser on each hostile input: no exception, and no pathological slowness."""
    calls: List[Callable[[], Any]] = [
        lambda: p.parse_os_release(text), lambda: p.parse_nvcc_version(text),
        lambda: p.parse_cuda_version_json(text), lambda: p.parse_cuda_version_txt(text),
        lambda: p.parse_cudnn_header(text), lambda: p.parse_proc_driver_version(text),
        lambda: p.parse_nvidia_smi_csv(text, list(SMI_FIELDS)), lambda: p.parse_ldconfig(text, "x86-64"),
        lambda: p.version_from_soname(text, "libcudnn"), lambda: p.parse_compiler_version(text),
        lambda: p.parse_meminfo_total_mib(text), lambda: p.parse_cpu_model(text),
        lambda: p.parse_python_assignments(text), lambda: p.parse_tf_build_info(text),
        lambda: p.parse_dist_info_dirname(text), lambda: p.normalize_name(text),
        lambda: p.parse_metadata_headers(text), lambda: p.parse_conda_meta(text),
        lambda: p.parse_julia_manifest(text), lambda: p.parse_julia_version(text),
        lambda: p.cuda_version_from_int(text), lambda: p.detect_container_from_cgroup(text),
        lambda: p.parse_secure_boot_efivar(text.encode("utf-8", "surrogatepass")),
    ]
    start = time.monotonic()
    for call in calls:
        call()
    assert time.monotonic() - start < 10  # generous: a quadratic regex takes minutes here


# --------------------------------------------------------------------------- snapshot loading


def _near(tp: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values shaped like ``tp`` (a model type), with a wrong-typed value now and then."""
    wrong = json_values
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union:
        return st.one_of(*[_near(a, depth) for a in args if a is not type(None)], st.none())
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp, vars(model))
        fields = {f.name: _near(hints[f.name], depth + 1) for f in dataclasses.fields(tp)}
        extra = st.dictionaries(st.sampled_from(["bogus", "x"]), wrong, max_size=1)
        valid = st.fixed_dictionaries({}, optional=fields)
        return st.one_of(valid, valid, valid, st.tuples(valid, extra).map(lambda t: {**t[0], **t[1]}), wrong)
    if origin in (tuple, typing.Tuple):
        return st.one_of(st.lists(_near(args[0], depth + 1), max_size=2), wrong)
    if origin in (dict, typing.Dict):
        return st.one_of(st.dictionaries(st.text(max_size=6), _near(args[1], depth + 1), max_size=3), wrong)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.one_of(st.sampled_from([m.value for m in tp]), wrong)
    simple: Dict[Any, st.SearchStrategy[Any]] = {
        str: st.text(max_size=10), int: st.integers(), float: st.floats(), bool: st.booleans(),
    }
    if tp in simple:
        return st.one_of(simple[tp], simple[tp], wrong)
    return wrong


near_snapshots = _near(model.Snapshot).map(
    lambda d: d if not isinstance(d, dict) else {"schema_version": 1, **d}
)


@FUZZ
@given(st.one_of(json_values, near_snapshots, st.dictionaries(st.text(max_size=8), json_values, max_size=5)))
def test_fuzz_snapshot_from_dict(data: Any) -> None:
    """Anything JSON can hold: a Snapshot, or a SnapshotError; never another exception."""
    try:
        snapshot = snapshot_from_dict(data)
    except SnapshotError as exc:
        assert str(exc)
    else:
        assert isinstance(snapshot, model.Snapshot)


@FUZZ
@given(st.dictionaries(st.sampled_from(["schema_version", "tool_version", "gpus", "errors", "env"]),
                       json_values, max_size=5))
def test_fuzz_snapshot_from_json_text(data: Dict[str, Any]) -> None:
    try:
        snapshot_from_json(json.dumps(data))
    except SnapshotError:
        pass


def test_snapshot_from_dict_huge_int() -> None:
    with pytest.raises(SnapshotError):
        snapshot_from_dict({"gpus": 10**5000})


@pytest.mark.parametrize("text", ["[" * 100_000, '{"schema_version": ' + "1" * 5000 + "}"], ids=["deep", "huge-int"])
def test_snapshot_from_json_hostile(text: str) -> None:
    with pytest.raises(SnapshotError):
        snapshot_from_json(text)
