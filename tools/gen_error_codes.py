"""Regenerate compat_data/error_codes.json: every error code of the CUDA libraries, read from the
libraries' own headers, with the message each library's own string function returns where that
library can be loaded here.

    python tools/gen_error_codes.py                 # read what is installed, update the table
    python tools/gen_error_codes.py --check         # exit 1 when the table differs from the headers here
    python tools/gen_error_codes.py --include DIR --lib PATH ...

Offline: it reads header files and calls string functions of shared libraries, nothing else.
Where it looks (besides --include): $CUDA_HOME/include, /usr/local/cuda*/include and
targets/*/include, /usr/include (and its multiarch folder), and ``nvidia/*/include`` of every
site-packages folder of this interpreter (NVIDIA's pip wheels ship their headers there). The
NVML codes also come from the ``pynvml`` module of nvidia-ml-py (NVIDIA's binding), which
cudadoctor depends on, when no nvml.h is found.

Libraries and their enums: CUresult (cuda.h), cudaError_t (driver_types.h), cublasStatus_t
(cublas_api.h; cuBLASLt returns the same type), cudnnStatus_t (cuDNN 9's cudnn_graph.h with its
sub-codes, cuDNN 8's cudnn_ops_infer.h), cufftResult (cufft.h), cusolverStatus_t
(cusolver_common.h), cusparseStatus_t (cusparse.h), curandStatus_t (curand.h), nvrtcResult
(nvrtc.h), nvJitLinkResult (nvJitLink.h), ncclResult_t (nccl.h, or NCCL's source nccl.h.in),
nvmlReturn_t (nvml.h). A library whose header is not found here keeps its records as they are in
the table (the table is the union of every machine it was generated on); each record says which
headers (and versions) and which string function it was read from.

The meaning of each code (category, fix) is not generated: compat_data/errors.json gives it, by
code name or by a rule over names (docs/data-sources.md).
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import re
import site
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(REPO, "compat_data", "error_codes.json")
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Spec:
    """One library's error enum: where it is declared and how its version and strings are read."""

    library: str
    type: str
    headers: Tuple[str, ...]  # file names that may declare it, first found wins per folder
    enum: str  # regex of the enum; group 1 is its body
    version: Tuple[str, ...] = ()  # macros (major, minor, patch) in the header or version_headers
    version_headers: Tuple[str, ...] = ()
    sonames: Tuple[str, ...] = ()  # library files whose string function names the codes
    string_function: str = ""
    string_kind: str = "return"  # "return": const char* f(int); "out": int f(int, const char**)


SPECS: Tuple[Spec, ...] = (
    Spec("cuda_driver", "CUresult", ("cuda.h",), r"typedef\s+enum\s+cudaError_enum\s*\{(.*?)\}\s*CUresult\s*;",
         ("CUDA_VERSION",), (), ("libcuda.so.1", "libcuda.so"), "cuGetErrorString", "out"),
    Spec("cuda_runtime", "cudaError_t", ("driver_types.h",), r"enum\s+(?:__device_builtin__\s+)?cudaError\s*\{(.*?)\}\s*;",
         ("CUDART_VERSION",), ("cuda_runtime_api.h",), ("libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                                                          "libcudart.so"), "cudaGetErrorString"),
    Spec("cublas", "cublasStatus_t", ("cublas_api.h",), r"typedef\s+enum\s*\{(.*?)\}\s*cublasStatus_t\s*;",
         ("CUBLAS_VER_MAJOR", "CUBLAS_VER_MINOR", "CUBLAS_VER_PATCH"), (),
         ("libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"), "cublasGetStatusString"),
    Spec("cudnn", "cudnnStatus_t", ("cudnn_graph.h", "cudnn_ops_infer.h", "cudnn_ops.h", "cudnn.h"),
         r"typedef\s+enum\s*\{(.*?)\}\s*cudnnStatus_t\s*;", ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"),
         ("cudnn_version.h",), ("libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"), "cudnnGetErrorString"),
    Spec("cufft", "cufftResult", ("cufft.h",), r"typedef\s+enum\s+cufftResult_t\s*\{(.*?)\}\s*cufftResult\s*;",
         ("CUFFT_VER_MAJOR", "CUFFT_VER_MINOR", "CUFFT_VER_PATCH")),
    Spec("cusolver", "cusolverStatus_t", ("cusolver_common.h",), r"typedef\s+enum\s*\{(.*?)\}\s*cusolverStatus_t\s*;",
         ("CUSOLVER_VER_MAJOR", "CUSOLVER_VER_MINOR", "CUSOLVER_VER_PATCH")),
    Spec("cusparse", "cusparseStatus_t", ("cusparse.h",), r"typedef\s+enum\s*\{(.*?)\}\s*cusparseStatus_t\s*;",
         ("CUSPARSE_VER_MAJOR", "CUSPARSE_VER_MINOR", "CUSPARSE_VER_PATCH"), (),
         ("libcusparse.so.12", "libcusparse.so.11", "libcusparse.so"), "cusparseGetErrorString"),
    Spec("curand", "curandStatus_t", ("curand.h",), r"enum\s+curandStatus\s*\{(.*?)\}\s*;",
         ("CURAND_VER_MAJOR", "CURAND_VER_MINOR", "CURAND_VER_PATCH")),
    Spec("nvrtc", "nvrtcResult", ("nvrtc.h",), r"typedef\s+enum\s*\{(.*?)\}\s*nvrtcResult\s*;", (), (),
         ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"), "nvrtcGetErrorString"),
    Spec("nvjitlink", "nvJitLinkResult", ("nvJitLink.h",), r"typedef\s+enum\s*\{(.*?)\}\s*nvJitLinkResult\s*;"),
    Spec("nccl", "ncclResult_t", ("nccl.h", "nccl.h.in"), r"typedef\s+enum\s*\{(.*?)\}\s*ncclResult_t\s*;",
         ("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH"), (), ("libnccl.so.2", "libnccl.so"), "ncclGetErrorString"),
    Spec("nvml", "nvmlReturn_t", ("nvml.h",), r"typedef\s+enum\s+nvmlReturn_enum\s*\{(.*?)\}\s*nvmlReturn_t\s*;",
         ("NVML_API_VERSION",), (), ("libnvidia-ml.so.1",), "nvmlErrorString"),
)
BY_LIBRARY = {s.library: s for s in SPECS}


@dataclass
class Code:
    library: str
    name: str
    value: int
    doc: str = ""
    messages: List[str] = field(default_factory=list)
    seen_in: List[str] = field(default_factory=list)  # "cuda.h 13.0", "libcudart.so.13 cudaGetErrorString"


# --------------------------------------------------------------------------- headers


_COMMENT = re.compile(r"/\*(.*?)\*/|//([^\n]*)", re.S)


def _doc_text(raw: str) -> str:
    """The first sentence of a comment, without its decoration and Doxygen markup."""
    raw = re.sub(r"^[\s/!*]*<\s*", "", raw)  # a trailing doc's marker: ///< //!< /**<
    text = re.sub(r"^\s*\*+ ?", "", raw.replace("/**", "").replace("*/", ""), flags=re.M)
    text = re.sub(r"\\(?:brief|note|sa|deprecated)\b.*", "", text, flags=re.S)
    text = " ".join(text.replace("::", "").split())
    first = re.match(r"(.+?\.)(?:\s|$)", text)
    return (first.group(1) if first else text)[:300]


def parse_enum(body: str) -> List[Tuple[str, int, str]]:
    """(name, value, doc) of each enumerator of an enum body, in order. Values may be decimal, hex,
    negative, a name seen before, or absent (one more than the last)."""
    out: List[Tuple[str, int, str]] = []
    known: Dict[str, int] = {}
    last = -1
    pending_doc = ""
    pos = 0
    # NAME, NAME = VALUE, or NAME ATTRIBUTE_MACRO = VALUE (cuDNN 9 marks deprecated codes so)
    entry = re.compile(r"\s*([A-Za-z_]\w*)(?:\s+[A-Z][A-Z0-9_]*(?=\s*[=,]))?\s*(?:=\s*([^,}/]+?))?\s*(,|$|(?=/[/*]))")
    while pos < len(body):
        comment = _COMMENT.match(body, pos) if body[pos:pos + 2] in ("/*", "//") else None
        if comment:
            raw = comment.group(1) if comment.group(1) is not None else comment.group(2) or ""
            if raw.lstrip("*/!").startswith("<") or raw.startswith(("!<", "*<")):  # Doxygen's trailing doc
                if out and not out[-1][2]:
                    out[-1] = (out[-1][0], out[-1][1], _doc_text(raw.lstrip("*!<")))
            else:
                pending_doc = _doc_text(raw)
            pos = comment.end()
            continue
        if body[pos].isspace() or body[pos] == ",":
            pos += 1
            continue
        if body[pos] == "#":  # a preprocessor line inside the enum
            end = body.find("\n", pos)
            pos = len(body) if end < 0 else end
            continue
        m = entry.match(body, pos)
        if not m:  # something this parser does not know: go on after the next comma
            nxt = body.find(",", pos)
            pos = len(body) if nxt < 0 else nxt + 1
            continue
        name, raw_value = m.group(1), (m.group(2) or "").strip()
        value = _value(raw_value, known, last)
        pos = m.end()
        trailing = re.match(r"[ \t]*(?:/\*(.*?)\*/|//([^\n]*))", body[pos:], re.S)
        doc = pending_doc
        if trailing:
            text = trailing.group(1) if trailing.group(1) is not None else trailing.group(2) or ""
            if not doc:
                doc = _doc_text(text.lstrip("*!<"))
            pos += trailing.end()
        pending_doc = ""
        if value is None:
            continue
        known[name] = value
        last = value
        out.append((name, value, doc))
    return out


def _value(raw: str, known: Dict[str, int], last: int) -> Optional[int]:
    if not raw:
        return last + 1
    raw = raw.strip("() ")
    raw = re.sub(r"(?<=\d)[uUlL]+$", "", raw)
    try:
        return int(raw, 0)
    except ValueError:
        pass
    m = re.fullmatch(r"([A-Za-z_]\w*)\s*([+-])\s*(\d+)", raw)
    if m and m.group(1) in known:
        return known[m.group(1)] + (int(m.group(3)) if m.group(2) == "+" else -int(m.group(3)))
    return known.get(raw)


def _macro(text: str, name: str) -> Optional[str]:
    m = re.search(rf"^\s*#\s*define\s+{name}\s+\(?\s*(\d+)", text, re.M)
    return m.group(1) if m else None


def header_version(spec: Spec, folder: str, text: str) -> str:
    """The library version the header says (or its folder's cudnn_version.h, cuda_runtime_api.h)."""
    sources = [text] + [_read(os.path.join(folder, h)) for h in spec.version_headers]
    if spec.library == "nccl" and not _macro(text, "NCCL_MAJOR"):  # NCCL's source: makefiles/version.mk
        mk = _read(os.path.join(os.path.dirname(os.path.dirname(folder)), "makefiles", "version.mk")) or \
            _read(os.path.join(os.path.dirname(folder), "makefiles", "version.mk"))
        parts = [re.search(rf"^{k}\s*:=\s*(\d+)", mk, re.M) for k in ("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH")]
        if all(parts):
            return ".".join(p.group(1) for p in parts if p)
    for src in sources:
        if not src:
            continue
        values = [_macro(src, m) for m in spec.version]
        if values and all(values):
            if len(values) == 1 and spec.library in ("cuda_driver", "cuda_runtime"):
                v = int(values[0] or 0)
                return f"{v // 1000}.{v % 1000 // 10}"
            return ".".join(v for v in values if v)
    cuda = _read(os.path.join(folder, "cuda.h"))  # nvrtc.h, nvJitLink.h: the toolkit beside them
    version = _macro(cuda, "CUDA_VERSION") if cuda else None
    if version:
        return f"{int(version) // 1000}.{int(version) % 1000 // 10}"
    wheel = re.search(r"(nvidia[-_][\w-]+?)[-_]cu(\d+)", folder)
    return f"from {wheel.group(0)}" if wheel else "version not stated"


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def include_dirs(extra: Sequence[str]) -> List[str]:
    """Folders that may hold the headers, in the order searched."""
    found: List[str] = list(extra)
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        found.append(os.path.join(home, "include"))
    for root in sorted(glob.glob("/usr/local/cuda*")):
        found.append(os.path.join(root, "include"))
        found.extend(sorted(glob.glob(os.path.join(root, "targets", "*", "include"))))
    found += ["/usr/include", "/usr/include/x86_64-linux-gnu", "/usr/include/aarch64-linux-gnu"]
    for sp in _site_packages():
        found.extend(sorted(glob.glob(os.path.join(sp, "nvidia", "*", "include"))))
        found.extend(sorted(glob.glob(os.path.join(sp, "nvidia", "cu*", "include"))))
    seen, out = set(), []
    for d in found:
        real = os.path.realpath(d)
        if os.path.isdir(real) and real not in seen:
            seen.add(real)
            out.append(d)
    return out


def _site_packages() -> List[str]:
    dirs = list(getattr(site, "getsitepackages", lambda: [])())
    user = getattr(site, "getusersitepackages", lambda: "")()
    return [d for d in dirs + [user] + sys.path if d and ("site-packages" in d or "dist-packages" in d)]


def read_headers(dirs: Sequence[str]) -> Tuple[Dict[Tuple[str, str], Code], List[Dict[str, str]]]:
    """Every code of every header found: {(library, name): Code}, and what was read."""
    codes: Dict[Tuple[str, str], Code] = {}
    read: List[Dict[str, str]] = []
    for spec in SPECS:
        for folder in dirs:
            for header in spec.headers:
                path = os.path.join(folder, header)
                text = _read(path)
                m = re.search(spec.enum, text, re.S) if text else None
                if not m:
                    continue
                version = header_version(spec, folder, text)
                where = f"{header} {version}"
                read.append({"library": spec.library, "header": header, "version": version, "path": path})
                for name, value, doc in parse_enum(m.group(1)):
                    code = codes.setdefault((spec.library, name), Code(spec.library, name, value, doc))
                    if where not in code.seen_in:
                        code.seen_in.append(where)
                    if not code.doc and doc:
                        code.doc = doc
                break  # one declaring header per folder
    return codes, read


def pynvml_codes() -> Tuple[Dict[Tuple[str, str], Code], List[Dict[str, str]]]:
    """NVML's return codes from NVIDIA's Python binding (its module constants), when no nvml.h is here."""
    try:
        import importlib.metadata as md
        import pynvml  # noqa: F401
        path = getattr(sys.modules["pynvml"], "__file__", "") or ""
        version = md.version("nvidia-ml-py")
    except Exception:
        return {}, []
    text = _read(path)
    where = f"pynvml.py (nvidia-ml-py {version})"
    codes: Dict[Tuple[str, str], Code] = {}
    for m in re.finditer(r"^(NVML_(?:SUCCESS|ERROR_\w+))\s*=\s*(-?\d+)", text, re.M):
        codes[("nvml", m.group(1))] = Code("nvml", m.group(1), int(m.group(2)), "", [], [where])
    return codes, [{"library": "nvml", "header": "pynvml.py", "version": f"nvidia-ml-py {version}", "path": path}]


# --------------------------------------------------------------------------- strings


def library_strings(codes: Dict[Tuple[str, str], Code], libs: Sequence[str]) -> List[Dict[str, str]]:
    """Each code's message from its library's own string function, where the library loads here."""
    used: List[Dict[str, str]] = []
    for spec in SPECS:
        if not spec.string_function:
            continue
        mine = [c for (lib, _), c in codes.items() if lib == spec.library]
        if not mine:
            continue
        handle, path = _load(spec, libs)
        if handle is None:
            continue
        fn = getattr(handle, spec.string_function, None)
        if fn is None:
            continue
        if spec.string_kind == "out":
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        else:
            fn.restype = ctypes.c_char_p
            fn.argtypes = [ctypes.c_int]
        where = f"{os.path.basename(path)} {spec.string_function}"
        for code in mine:
            text = _call(fn, spec.string_kind, code.value)
            if text and text not in code.messages:
                code.messages.append(text)
            if text and where not in code.seen_in:
                code.seen_in.append(where)
        used.append({"library": spec.library, "strings": where, "path": path})
    return used


def _load(spec: Spec, libs: Sequence[str]) -> Tuple[Any, str]:
    candidates = [p for p in libs if any(os.path.basename(p).startswith(s.split(".so")[0] + ".so") for s in spec.sonames)]
    for sp in _site_packages():
        for s in spec.sonames:
            candidates.extend(sorted(glob.glob(os.path.join(sp, "nvidia", "*", "lib", s))))
    for root in sorted(glob.glob("/usr/local/cuda*")):
        for s in spec.sonames:
            candidates.extend(sorted(glob.glob(os.path.join(root, "lib*", s))))
    candidates.extend(spec.sonames)
    for path in candidates:
        try:
            return ctypes.CDLL(path), path
        except OSError:
            continue
    return None, ""


def _call(fn: Callable[..., Any], kind: str, value: int) -> str:
    try:
        if kind == "out":
            out = ctypes.c_char_p()
            if fn(value, ctypes.byref(out)) != 0:
                return ""
            raw = out.value
        else:
            raw = fn(value)
    except Exception:
        return ""
    text = (raw or b"").decode("utf-8", "replace").strip()
    return "" if not text or text.lower().startswith(("unrecognized", "unknown error code", "<unknown")) else text


# --------------------------------------------------------------------------- the table


def merge(old: Dict[str, Any], codes: Dict[Tuple[str, str], Code], read: Iterable[Dict[str, str]],
          strings: Iterable[Dict[str, str]]) -> Dict[str, Any]:
    """The union of the table and what was read here: a code read here updates its record (value,
    doc when missing) and adds its messages and sources; every other record stays, since it may
    come from another version of its library (cuDNN 8 beside 9) read on another machine."""
    by_key = {(r["library"], r["name"]): dict(r) for r in old.get("records", [])}
    for code in codes.values():
        rec = by_key.setdefault((code.library, code.name), {"library": code.library, "name": code.name,
                                                            "value": code.value, "messages": [], "doc": "",
                                                            "seen_in": []})
        if rec["value"] != code.value:  # another version of the library numbers it otherwise
            newest = max(_version_key(w) for w in code.seen_in)
            older = dict(rec.get("older_values", {}))
            if newest >= max((_version_key(w) for w in rec.get("seen_in", [])), default=()):
                older.update({w: rec["value"] for w in rec.get("seen_in", []) if w not in code.seen_in and ".h" in w})
                rec["value"] = code.value
            else:
                older.update({w: code.value for w in code.seen_in if ".h" in w})
            rec["older_values"] = dict(sorted(older.items()))
        rec["doc"] = rec.get("doc") or code.doc
        rec["messages"] = list(dict.fromkeys(list(rec.get("messages", [])) + code.messages))
        rec["seen_in"] = sorted(set(rec.get("seen_in", [])) | set(code.seen_in))
    order = {s.library: i for i, s in enumerate(SPECS)}
    records = sorted(by_key.values(), key=lambda r: (order.get(r["library"], 99), r["value"], r["name"]))
    libraries = list(old.get("libraries", []))
    libraries += [{"library": x["library"], "type": BY_LIBRARY[x["library"]].type, "header": x["header"],
                   "version": x["version"]} for x in read]
    libraries += [{"library": x["library"], "type": BY_LIBRARY[x["library"]].type, "strings": x["strings"]}
                  for x in strings]
    unique = {tuple(sorted(d.items())): d for d in libraries}
    libraries = sorted(unique.values(), key=lambda d: (order.get(d["library"], 99), d.get("header", ""),
                                                       d.get("version", ""), d.get("strings", "")))
    return {
        "table": "error_codes",
        "schema_version": SCHEMA_VERSION,
        "description": old.get("description") or (
            "Every error code of the CUDA libraries, generated by tools/gen_error_codes.py from the libraries' "
            "own headers (names, values, the header's first doc sentence) and, where the library could be "
            "loaded, its own string function (messages). What each code means (category, fix) is in "
            "errors.json."),
        "libraries": libraries,
        "records": records,
    }


def _version_key(source: str) -> Tuple[int, ...]:
    """(9, 19, 0) of 'cudnn_graph.h 9.19.0'; () for a source without a version."""
    m = re.search(r"\s(\d+(?:\.\d+)*)$", source)
    return tuple(int(x) for x in m.group(1).split(".")) if m else ()


def differences(old: Dict[str, Any], codes: Dict[Tuple[str, str], Code]) -> List[str]:
    """What the headers and libraries read here say that the table does not: a code missing, another
    value, a message missing; and a code the table says it read from a header version read here
    that this header does not have."""
    table = {(r["library"], r["name"]): r for r in old.get("records", [])}
    out: List[str] = []
    here_sources = {s for c in codes.values() for s in c.seen_in}
    for key, code in sorted(codes.items()):
        rec = table.get(key)
        if rec is None:
            out.append(f"{key[0]} {key[1]}: missing from the table")
            continue
        if rec["value"] != code.value and code.value not in rec.get("older_values", {}).values():
            out.append(f"{key[0]} {key[1]}: value {rec['value']} in the table, {code.value} here")
        missing = [m for m in code.messages if m not in rec.get("messages", [])]
        if missing:
            out.append(f"{key[0]} {key[1]}: message {missing[0]!r} not in the table")
    for key, rec in sorted(table.items()):
        if key not in codes and here_sources & set(rec.get("seen_in", [])):
            out.append(f"{key[0]} {key[1]}: in the table from a header read here, which does not declare it")
    return out


def collect(includes: Sequence[str], libs: Sequence[str]) -> Tuple[Dict[Tuple[str, str], Code], List[Dict[str, str]],
                                                                   List[Dict[str, str]]]:
    codes, read = read_headers(include_dirs(includes))
    if not any(lib == "nvml" for lib, _ in codes):
        extra, how = pynvml_codes()
        codes.update(extra)
        read += how
    strings = library_strings(codes, libs)
    return codes, read, strings


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--include", action="append", default=[], metavar="DIR", help="another folder of headers")
    p.add_argument("--lib", action="append", default=[], metavar="PATH", help="a library file to take strings from")
    p.add_argument("--table", default=TABLE, help=f"the table (default {os.path.relpath(TABLE, REPO)})")
    p.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    args = p.parse_args(argv)
    codes, read, strings = collect(args.include, args.lib)
    try:
        with open(args.table, encoding="utf-8") as fh:
            old = json.load(fh)
    except (OSError, ValueError):
        old = {}
    new = merge(old, codes, read, strings)
    libs = sorted({lib for lib, _ in codes})
    for x in read:
        print(f"read {x['library']}: {x['header']} {x['version']} ({x['path']})")
    for x in strings:
        print(f"strings {x['library']}: {x['strings']} ({x['path']})")
    diff = differences(old, codes)
    if args.check:
        for line in diff:
            print(line)
        print(f"{len(diff)} difference(s) for {', '.join(libs) or 'no library'}")
        return 1 if diff else 0
    with open(args.table, "w", encoding="utf-8") as fh:
        json.dump(new, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    print(f"{args.table}: {len(new['records'])} codes of {len({r['library'] for r in new['records']})} libraries "
          f"({len(diff)} changed here)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
