"""Several packages are one solve: one pip/uv line, one conda install, one pixi.toml (planner/managers.combine)."""

from __future__ import annotations

from cudadoctor.matrix import Matrix
from cudadoctor.planner.install import plan_install
from cudadoctor.planner.target import described


def _plan(matrix: Matrix, manager: str, *packages: str):  # type: ignore[no-untyped-def]
    return plan_install(matrix, described(matrix, driver="550.54.14", gpus=["RTX 4090"]), list(packages), manager)


def test_conda_is_one_install_with_one_cuda_version(matrix: Matrix) -> None:
    r = _plan(matrix, "conda", "torch", "cupy", "jax")
    assert len(r.commands) == 1 and r.commands[0].startswith("conda install -c conda-forge ")
    assert r.commands[0].count("cuda-version=") == 1 and r.commands[0].endswith("cuda-version=12.6")


def test_pixi_is_one_table_per_section(matrix: Matrix) -> None:
    r = _plan(matrix, "pixi", "torch", "tensorflow")
    assert r.together is not None and len(r.together.files) == 1
    toml = r.together.files[0][1]
    assert toml.count("[dependencies]") == 1 and toml.count("[system-requirements]") == 1
    assert toml.count("cuda-version") == 1
    assert len(r.commands) == 1 and r.commands[0].startswith("pixi add ")


def test_pip_and_uv_are_one_line_with_torch_pinned_to_its_build(matrix: Matrix) -> None:
    for manager, tool in (("pip", "pip install"), ("uv", "uv pip install")):
        r = _plan(matrix, manager, "torch", "cupy", "onnxruntime-gpu")
        assert len(r.commands) == 1 and r.commands[0].startswith(tool)
        line = r.commands[0]
        assert "torch==2.14.1+cu126" in line and "--extra-index-url https://download.pytorch.org/whl/cu126" in line
        assert "--index-url" not in line.replace("--extra-index-url", "")


def test_one_package_keeps_its_own_command(matrix: Matrix) -> None:
    r = _plan(matrix, "pip", "torch")
    assert r.together is None and r.commands[-1].endswith("--index-url https://download.pytorch.org/whl/cu126")


def test_an_interpreter_path_gets_its_own_pip(matrix: Matrix) -> None:
    import dataclasses

    from cudadoctor.planner.managers import Steps, for_interpreter

    steps = Steps(("pip uninstall -y torch", "pip install torch==2.9.1 --index-url U", "uv pip install cupy"))
    out = for_interpreter(steps, "/opt/my python/bin/python3")
    assert out.commands == ("'/opt/my python/bin/python3' -m pip uninstall -y torch",
                            "'/opt/my python/bin/python3' -m pip install torch==2.9.1 --index-url U",
                            "uv pip install --python '/opt/my python/bin/python3' cupy")
    target = dataclasses.replace(described(matrix, driver="550.54.14", gpus=["RTX 4090"]),
                                 interpreter="/usr/bin/python3", externally_managed=True)
    r = plan_install(matrix, target, ["torch"], "pip")
    assert r.commands[-1].startswith("/usr/bin/python3 -m pip install torch==")
    assert any("PEP 668" in n and "python3 -m venv" in n for n in r.target.notes)
    assert not any("PEP 668" in n for n in plan_install(matrix, target, ["torch"], "conda").target.notes)
