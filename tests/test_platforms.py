"""Windows, macOS and WSL2 are recognised and degrade gracefully: facts that cannot exist there
are unknown or recorded as not supported, and nothing crashes."""

from __future__ import annotations

from typing import Any, Dict

from cudadoctor.model import ErrorKind
from cudadoctor.probes import collect
from cudadoctor.host.recorded import RecordedHost


def machine(system: str, release: str, machine: str, **extra: Any) -> Dict[str, Any]:
    data: Dict[str, Any] = {
        "platform": {"system": system, "release": release, "machine": machine, "hostname": "h",
                     "username": "u", "cpu_count": 8, "libc": ""},
        "env": {"PATH": ""},
        "interpreter": {"executable": "python", "version": "3.12.7", "implementation": "cpython",
                        "prefix": "p", "base_prefix": "p", "platform_tag": "x", "site_packages": []},
    }
    data.update(extra)
    return data


def test_windows_with_a_working_driver() -> None:
    host = RecordedHost(
        machine(
            "Windows", "10", "AMD64",
            env={"PATH": "", "CUDA_PATH": "C:/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v12.6"},
            nvml={"system": {"nvmlSystemGetDriverVersion": "566.36", "nvmlSystemGetCudaDriverVersion_v2": 12070},
                  "devices": [{"nvmlDeviceGetName": "NVIDIA GeForce RTX 4070", "nvmlDeviceGetCudaComputeCapability": [8, 9]}]},
        )
    )
    snap = collect(host)
    assert snap.host is not None and snap.host.os == "windows"
    assert snap.driver is not None and snap.driver.driver_version == "566.36"
    assert snap.driver.cuda_driver_version == "12.7"
    assert snap.gpus is not None and snap.gpus[0].compute_capability == "8.9"
    assert snap.toolkits is not None
    # CUDA_PATH names a toolkit this recorded machine does not have: known, and said to be missing
    assert [t.exists for t in snap.toolkits] == [False]
    assert not [e for e in snap.errors if e.kind == ErrorKind.ERROR]


def test_macos_has_no_cuda_driver() -> None:
    snap = collect(RecordedHost(machine("Darwin", "24.1.0", "arm64")))
    assert snap.host is not None and snap.host.os == "macos"
    assert snap.driver is not None and snap.driver.driver_version is None
    assert any(e.probe == "host" and e.kind == ErrorKind.NOT_SUPPORTED for e in snap.errors)
    assert not [e for e in snap.errors if e.kind == ErrorKind.ERROR]


def test_wsl2_is_recognised_by_its_kernel_release() -> None:
    snap = collect(RecordedHost(machine("Linux", "5.15.167.4-microsoft-standard-WSL2", "x86_64", dirs=["/dev"])))
    assert snap.host is not None and snap.host.wsl is True
