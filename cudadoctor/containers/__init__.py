"""Readers of container files: Dockerfiles, compose files and ``docker run`` lines, each into the
same :class:`~cudadoctor.containers.model.Spec` (what runs, from which image, with which installs,
environment and GPU request, each fact with its line). Pure and bounded: a reader never raises on
what it is given and never reads more than :data:`~cudadoctor.containers.model.MAX_BYTES`."""

from __future__ import annotations

from cudadoctor.containers.model import Install, Requirement, Spec, Unit
from cudadoctor.containers.read import read_spec

__all__ = ["Install", "Requirement", "Spec", "Unit", "read_spec"]
