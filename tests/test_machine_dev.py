"""The dev container, recorded for real: Debian 12, CUDA 13.0 toolkit, no driver, torch CPU.

Every answer replayed here is what that machine gave `python -m cudadoctor.host.recorder`; see
tests/machines/dev-debian12-cuda13-nodriver-torch213cpu/README.md.
"""

from __future__ import annotations

import os
from typing import Callable

import pytest

from cudadoctor.cli.app import run
from cudadoctor.probes import collect
from cudadoctor.host.recorded import RecordedHost

NAME = "dev-debian12-cuda13-nodriver-torch213cpu"


@pytest.fixture
def dev_host(load_machine: Callable[[str], RecordedHost]) -> RecordedHost:
    return load_machine(NAME)


def test_toolkit_13_0_is_found_through_path_and_usr_local_cuda(dev_host: RecordedHost) -> None:
    snap = collect(dev_host)
    toolkit = snap.active_toolkit
    assert toolkit is not None
    assert (toolkit.root, toolkit.version, toolkit.exists) == ("/usr/local/cuda-13.0", "13.0.88", True)
    assert toolkit.nvcc == "/usr/local/cuda-13.0/bin/nvcc"
    assert "PATH (/usr/local/bin/nvcc)" in toolkit.found_via
    assert "/usr/local/cuda" in toolkit.found_via
    assert [tk.root for tk in snap.toolkits or ()] == ["/usr/local/cuda-13.0"]


def test_no_driver_is_loaded_and_nvml_says_why(dev_host: RecordedHost) -> None:
    snap = collect(dev_host)
    assert snap.driver is not None
    assert snap.driver.loaded is False
    assert snap.driver.nvml_error == "NVML_ERROR_LIBRARY_NOT_FOUND"
    assert snap.driver.device_nodes == ()
    assert not snap.gpus


def test_torch_is_the_cpu_build(dev_host: RecordedHost) -> None:
    torch = collect(dev_host).framework("torch")
    assert torch is not None
    assert (torch.version, torch.variant, torch.cuda) == ("2.13.0+cpu", "cpu", None)


def test_every_command_the_probes_run_was_recorded(dev_host: RecordedHost) -> None:
    collect(dev_host)
    assert dev_host.unrecorded == []


def test_the_target_is_the_venv(dev_host: RecordedHost) -> None:
    py = collect(dev_host).python
    assert py is not None
    assert (py.env_kind, py.version) == ("venv", "3.11.7")


def test_check_renders_the_recorded_machine(machines_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = run(["check", "--machine", os.path.join(machines_dir, NAME)])
    out = capsys.readouterr().out
    assert code == 1  # no NVIDIA GPU: the stack cannot work here
    assert out.splitlines()[2] == "✗ 1 problem: this machine has no NVIDIA GPU"
    assert "no NVIDIA driver is loaded" in out
    assert "CUDA 13.0.88 at /usr/local/cuda-13.0" in out
    assert "torch 2.13.0+cpu  CPU-only build" in out


def test_the_venv_is_not_externally_managed(dev_host: RecordedHost) -> None:
    py = collect(dev_host).python
    assert py is not None and py.externally_managed is False


def test_a_system_python_with_the_pep668_marker_is_externally_managed() -> None:
    from types import SimpleNamespace

    from cudadoctor.probes.packages import _externally_managed

    marker = "/usr/lib/python3.11/EXTERNALLY-MANAGED"
    ctx = SimpleNamespace(host=SimpleNamespace(is_file=lambda path: path == marker))
    facts = SimpleNamespace(base_prefix="/usr", version="3.11.2")
    assert _externally_managed(ctx, facts, "system") is True  # type: ignore[arg-type]
    assert _externally_managed(ctx, SimpleNamespace(base_prefix="/opt/py", version="3.11.2"), "system") is False  # type: ignore[arg-type]
    assert _externally_managed(ctx, facts, "venv") is False  # type: ignore[arg-type]
    assert _externally_managed(ctx, SimpleNamespace(base_prefix="/usr", version=None), "system") is None  # type: ignore[arg-type]
