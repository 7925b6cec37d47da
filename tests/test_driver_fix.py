"""Driver fixes by branch kind, kernel-module flavour and distribution (checks/driver_fix.py,
driver_packages.json, driver_branches.json). Expected answers cite NVIDIA's driver documentation:
https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html (branch
kinds and end of life), https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html
(open modules: default from R560, required by Blackwell, not for Maxwell/Pascal/Volta)."""

from __future__ import annotations

from cudadoctor.checks.driver_fix import choose_branch, driver_advice
from cudadoctor.matrix import Matrix


def test_blackwell_gets_open_modules_of_a_supported_branch(matrix: Matrix) -> None:
    a = driver_advice(matrix, "570.26", ["12.0"], distro_id="ubuntu", distro_version="24.04")
    assert a.branch == "R580" and a.flavour == "open"  # R570 (production) ended February 2026
    assert a.commands == ("sudo apt install nvidia-driver-580-open    # Ubuntu; then reboot",)


def test_a_feature_branch_is_not_offered_when_a_production_branch_serves(matrix: Matrix) -> None:
    # an A100 on 470 needing CUDA 11.8's 520.61.05: R520 is a new-feature branch, R525/R535/R570 have ended
    a = driver_advice(matrix, "520.61.05", ["8.0"], datacenter=True, distro_id="ubuntu", distro_version="22.04")
    assert a.branch == "R580" and "long-term-support" in a.text
    assert a.commands == ("sudo apt install nvidia-driver-580-server-open    # Ubuntu; then reboot",)


def test_pascal_gets_its_last_branch_with_proprietary_modules(matrix: Matrix) -> None:
    a = driver_advice(matrix, "550.54.14", ["6.1"], distro_id="rocky", distro_version="9.4")
    assert a.branch == "R580" and a.flavour == "proprietary" and "last branch for Pascal" in a.text
    assert a.commands == ("sudo dnf module enable nvidia-driver:580-dkms",
                          "sudo dnf install cuda-drivers    # RHEL/Rocky/Alma; then reboot")


def test_past_the_last_branch_there_is_no_upgrade(matrix: Matrix) -> None:
    a = driver_advice(matrix, "590.48.01", ["7.0"])
    assert a.branch is None and not a.commands and "Volta GPUs are supported up to driver branch R580" in a.text


def test_wsl_and_windows_get_the_windows_driver_only(matrix: Matrix) -> None:
    a = driver_advice(matrix, "570.26", ["12.0"], windows=True)
    assert not a.commands and "Windows driver" in a.text and "no NVIDIA Linux driver" in a.text


def test_blackwell_beside_pascal_cannot_share_a_driver(matrix: Matrix) -> None:
    a = driver_advice(matrix, "570.26", ["12.0", "6.1"])
    assert not a.commands and "one driver cannot serve both" in a.text


def test_distributions_have_their_own_packages(matrix: Matrix) -> None:
    rhel10 = driver_advice(matrix, "580.65.06", ["9.0"], distro_id="rhel", distro_version="10.0")
    assert rhel10.commands[0] == "sudo dnf versionlock '*nvidia*580*'"
    debian = driver_advice(matrix, "595.45.04", ["9.0"], distro_id="debian", distro_version="12")
    assert debian.commands == ("sudo apt install nvidia-driver-pinning-595",
                               "sudo apt install nvidia-open    # Debian, NVIDIA's CUDA repository; then reboot")
    unknown = driver_advice(matrix, "580.65.06", ["9.0"])
    assert [c.split("    #")[1] for c in unknown.commands if "#" in c] == [" Ubuntu; then reboot",
                                                                            " RHEL/Rocky/Alma; then reboot"]


def test_branch_choice_depends_on_the_data_not_the_clock(matrix: Matrix) -> None:
    branch, why = choose_branch(matrix, 535, None)
    assert branch is not None and branch.branch == "R580"  # R535 ended June 2026, before data 2026.11
    assert "supported until June 2028" in why
