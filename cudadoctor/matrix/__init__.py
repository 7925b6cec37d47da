"""The compatibility matrix: ``compat_data/`` as frozen typed rows, and every query on them.

Each concern lives in its own module (``cuda``, ``gpus``, ``frameworks``, ...) with its row
types, its queries and its invariants; :class:`Matrix` is the one entry point the rest of the
code uses. Tables load lazily, once, on first use, and are checked against their JSON Schema as
they load: a broken file raises :class:`DataError` naming the file and the record.
"""

from __future__ import annotations

import importlib
import os
import threading
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Tuple, cast

from cudadoctor.matrix.load import DataError, Manifest, read_manifest, read_table

if TYPE_CHECKING:
    from cudadoctor.matrix.addons import AddonData
    from cudadoctor.matrix.cuda import CudaData
    from cudadoctor.matrix.drivers import DriverData
    from cudadoctor.matrix.framework_archs import FrameworkArchData
    from cudadoctor.matrix.ecosystem import EcosystemData
    from cudadoctor.matrix.gpus import GpuData
    from cudadoctor.matrix.images import ImageData
    from cudadoctor.matrix.jetson import JetsonData
    from cudadoctor.matrix.peaks import PeakData
    from cudadoctor.matrix.pytorch import PytorchData
    from cudadoctor.matrix.signatures import SignatureData
    from cudadoctor.matrix.toolchain import ToolchainData

__all__ = ["DataError", "Matrix"]

# Each concern is a module of this package with TABLES (the files it reads), build(docs) -> its
# typed rows and queries, and invariants(data, matrix) -> problems. Imported when first used.
CONCERNS: Tuple[str, ...] = ("cuda", "gpus", "peaks", "toolchain", "pytorch", "ecosystem", "signatures", "jetson",
                             "addons", "drivers", "framework_archs", "images")

# The concerns whose invariants have a module of their own (only `cudadoctor data validate` and the
# tests need them); the others define ``invariants`` beside their rows.
INVARIANTS: Dict[str, str] = {name: f"_{name}_invariants" for name in ("gpus", "toolchain", "signatures")}


def _module(name: str) -> Any:
    return importlib.import_module(f"{__name__}.{name}")


class Matrix:
    """Compatibility data from one directory."""

    def __init__(self, directory: str, check_schemas: bool = True) -> None:
        self.directory = directory
        self.check_schemas = check_schemas
        self.origin = "folder"  # where the data came from; set by default_matrix()
        self.manifest: Manifest = read_manifest(directory)
        self._docs: Dict[str, Mapping[str, Any]] = {}
        self._built: Dict[str, Any] = {}
        self._lock = threading.RLock()

    @property
    def data_version(self) -> str:
        return self.manifest.data_version

    def doc(self, name: str) -> Mapping[str, Any]:
        """The raw (schema-checked) document of one table file."""
        with self._lock:
            if name not in self._docs:
                if name not in self.manifest.files:
                    raise DataError("manifest.json", [f"{name} is not listed in files"])
                self._docs[name] = read_table(self.directory, name, self.check_schemas)
            return self._docs[name]

    def concern(self, name: str) -> Any:
        with self._lock:
            if name not in self._built:
                module = _module(name)
                docs = {table: self.doc(table) for table in module.TABLES}
                try:
                    self._built[name] = module.build(docs)
                except (KeyError, TypeError, ValueError) as exc:  # schema let through what build cannot use
                    raise DataError(module.TABLES[0], [f"cannot be read: {type(exc).__name__}: {exc}"]) from None
            return self._built[name]

    # One property per concern; the queries are methods of what they return.
    @property
    def cuda(self) -> "CudaData":
        return cast("CudaData", self.concern("cuda"))

    @property
    def gpus(self) -> "GpuData":
        return cast("GpuData", self.concern("gpus"))

    @property
    def peaks(self) -> "PeakData":
        return cast("PeakData", self.concern("peaks"))

    @property
    def toolchain(self) -> "ToolchainData":
        return cast("ToolchainData", self.concern("toolchain"))

    @property
    def pytorch(self) -> "PytorchData":
        return cast("PytorchData", self.concern("pytorch"))

    @property
    def ecosystem(self) -> "EcosystemData":
        return cast("EcosystemData", self.concern("ecosystem"))

    @property
    def signatures(self) -> "SignatureData":
        return cast("SignatureData", self.concern("signatures"))

    @property
    def jetson(self) -> "JetsonData":
        return cast("JetsonData", self.concern("jetson"))

    @property
    def addons(self) -> "AddonData":
        return cast("AddonData", self.concern("addons"))

    @property
    def drivers(self) -> "DriverData":
        return cast("DriverData", self.concern("drivers"))

    @property
    def framework_archs(self) -> "FrameworkArchData":
        return cast("FrameworkArchData", self.concern("framework_archs"))

    @property
    def images(self) -> "ImageData":
        return cast("ImageData", self.concern("images"))

    # ------------------------------------------------------------------ whole-data operations

    def validate(self) -> List[str]:
        """Every problem in the data: unlisted or unreadable files, schema violations, broken
        invariants. [] when the data is sound. Always checks the schemas."""
        if not self.check_schemas:
            return Matrix(self.directory, check_schemas=True).validate()
        problems: List[str] = []
        listed = set(self.manifest.files)
        modules = {name: _module(name) for name in CONCERNS}
        owned = {table for module in modules.values() for table in module.TABLES}
        for name in sorted(owned - listed):
            problems.append(f"manifest.json: {name} is not listed in files")
        for name in sorted(listed - owned):
            problems.append(f"manifest.json: {name} is listed but no part of cudadoctor reads it")
        present = {f for f in os.listdir(self.directory) if f.endswith(".json") and f != "manifest.json"}
        for name in sorted(present - listed):
            problems.append(f"{name}: not listed in manifest.json")
        for name in sorted(listed & owned):
            try:
                self.doc(name)
            except DataError as exc:
                problems.extend(f"{exc.file}: {p}" for p in exc.problems)
        if problems:
            return problems
        for name, module in modules.items():
            try:
                checker = _module(INVARIANTS[name]) if name in INVARIANTS else module
                problems.extend(checker.invariants(self.concern(name), self))
            except DataError as exc:
                problems.extend(f"{exc.file}: {p}" for p in exc.problems)
        return problems

    def counts(self) -> List[Tuple[str, int, int]]:
        """(file, records, records citing a secondary or unverified source) per table."""
        out = []
        for name in self.manifest.files:
            records = self.doc(name).get("records", [])
            weak = sum(1 for r in records if r.get("confidence") in ("secondary", "unverified"))
            out.append((name, len(records), weak))
        return out
