"""Which compatibility data is in use, held by one object.

A :class:`DataSource` knows the folder chosen (``--data DIR``, else ``$CUDADOCTOR_DATA_DIR``, else
the newer of the shipped data and a usable installed bundle: :func:`cudadoctor.data.store.choose_data_dir`)
and keeps what it read from it: the manifest and the :class:`~cudadoctor.matrix.Matrix`. The CLI
makes one from its ``--data`` option and installs it with :func:`use`; everything else asks
:func:`current` (or the shortcuts :func:`default_matrix`, :func:`data_info`, :func:`data_version`).
Nothing else caches the choice, so a new source is all it takes to see other data.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import List, Optional

from cudadoctor.data.location import DataInfo
from cudadoctor.data.store import DataChoice, choose_data_dir
from cudadoctor.matrix import Matrix
from cudadoctor.matrix.load import DataError


class DataSource:
    """The data chosen for one run; each answer is read once, on first use."""

    def __init__(self, option_dir: Optional[str] = None) -> None:
        self.option_dir = os.path.abspath(option_dir) if option_dir else None
        self._lock = threading.RLock()  # info() and matrix() ask choice() while holding it
        self._choice: Optional[DataChoice] = None
        self._info: Optional[DataInfo] = None
        self._info_read = False
        self._matrix: Optional[Matrix] = None

    def choice(self) -> DataChoice:
        """The folder in use. Raises :class:`DataError` when there is no data at all."""
        with self._lock:
            if self._choice is None:
                self._choice = choose_data_dir(self.option_dir)
            return self._choice

    def info(self) -> Optional[DataInfo]:
        """The manifest of the data in use, or ``None`` when no data can be found or read."""
        with self._lock:
            if not self._info_read:
                try:
                    self._info = _read_info(self.choice())
                except DataError:
                    self._info = None
                self._info_read = True
            return self._info

    def matrix(self) -> Matrix:
        """The data in use as a Matrix. An installed bundle that cannot be used is skipped with a
        one-line warning on stderr.

        Its schemas are not re-checked on every run: the shipped files are checked by the test
        suite before a release (tests/test_matrix.py) and by `cudadoctor data validate`, an
        installed bundle in full when it was installed, and checking all tables would cost a
        diagnosis more time than everything else it does. A broken file still fails with a
        DataError when its rows are built."""
        choice = self.choice()
        with self._lock:
            if self._matrix is None:
                if choice.warning:
                    sys.stderr.write(f"cudadoctor: warning: {choice.warning}\n")
                matrix = Matrix(choice.directory, check_schemas=False)
                matrix.origin = choice.origin
                self._matrix = matrix
            return self._matrix


def _read_info(choice: DataChoice) -> Optional[DataInfo]:
    try:
        with open(os.path.join(choice.directory, "manifest.json"), encoding="utf-8") as fh:
            manifest = json.load(fh)
    except (OSError, ValueError):
        return None
    if isinstance(manifest, dict) and isinstance(manifest.get("data_version"), str):
        schema = manifest.get("schema_version")
        return DataInfo(choice.directory, manifest["data_version"], schema if isinstance(schema, int) else 0,
                        choice.origin, choice.warning)
    return None


_current: List[DataSource] = [DataSource()]


def current() -> DataSource:
    """The data source of this process (the CLI's ``--data`` sets it)."""
    return _current[0]


def use(source: DataSource) -> DataSource:
    """Make ``source`` the data in use; returns the one it replaces."""
    previous, _current[0] = _current[0], source
    return previous


def default_matrix() -> Matrix:
    """The data in use (see :class:`DataSource`)."""
    return current().matrix()


def data_info() -> Optional[DataInfo]:
    """The manifest of the data in use, or ``None`` when no data can be found or read."""
    return current().info()


def data_version() -> str:
    info = data_info()
    return info.data_version if info else "unknown"
