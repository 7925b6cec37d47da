"""`cudadoctor install`: a table of machine profiles with the plan each must get, run for every
manager; golden text for a few; the plan the findings' fixes give; wrong variants uninstalled
first; mirrors; --verify against a local index; one-line errors.

Regenerate the golden files after an intended change of wording:
CUDADOCTOR_UPDATE_GOLDEN=1 python -m pytest tests/test_install.py
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

from cudadoctor.api import collect, diagnose
from cudadoctor.cli.app import run
from cudadoctor.matrix import Matrix
from cudadoctor.data.source import default_matrix
from cudadoctor.matrix.versions import major, major_minor
from cudadoctor.planner.install import plan_install
from cudadoctor.planner.target import Installed, described
from cudadoctor.host.recorded import RecordedHost
from helpers import HERE, MACHINES

MANAGERS = ("pip", "uv", "conda", "pixi")


@pytest.fixture(scope="module")
def m() -> Matrix:
    return default_matrix()


def cli_json(args: List[str], capsys: pytest.CaptureFixture[str]) -> Tuple[int, Dict[str, Any]]:
    code = run(["install", *args, "--json"])
    out, err = capsys.readouterr()
    assert err == "", err
    return code, json.loads(out)


def cli_text(args: List[str], capsys: pytest.CaptureFixture[str]) -> Tuple[int, str, str]:
    code = run(["install", *args])
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- the table


@dataclasses.dataclass(frozen=True)
class Profile:
    id: str
    args: str  # packages and described-machine flags
    plans: Tuple[str, ...]  # the label of each package's plan, or "none" when nothing fits
    would: Optional[str] = None  # for "none": a phrase of what would fit


PROFILES = (
    # driver floors, at their exact boundary
    Profile("cu12-floor-exact", "torch --driver 525.60.13 --cc 8.9 --python 3.12", ("torch 2.14.1+cu126",)),
    Profile("cu12-floor-minus-one", "torch --driver 525.60.12 --cc 8.9 --python 3.12", ("torch 2.7.1+cu118",)),
    Profile("cu13-floor-exact", "torch --driver 580.65.06 --cc 9.0 --python 3.12", ("torch 2.15.0+cu130",)),
    Profile("cu13-floor-minus-one", "torch --driver 580.65.05 --cc 9.0 --python 3.12", ("torch 2.14.1+cu126",)),
    Profile("cu132-native-exact", "torch --driver 595.45.04 --cc 9.0 --python 3.12", ("torch 2.15.0+cu132",)),
    Profile("cu132-native-minus-one", "torch --driver 595.45.03 --cc 9.0 --python 3.12", ("torch 2.15.0+cu130",)),
    Profile("tf-cu12-floor-minus-one", "tensorflow --driver 525.60.12 --cc 8.9 --python 3.11",
            ("tensorflow 2.14.0 (CUDA 11.8)",)),
    Profile("driver-418-too-old", "torch --driver 418.39 --cc 7.5 --python 3.10", ("none",),
            "install NVIDIA driver 580.65.06 or newer: then torch 2.14.1+cu130 fits"),
    # Blackwell
    Profile("blackwell-5090-r570", "torch --driver 570.124.06 --gpu 'RTX 5090' --python 3.12", ("torch 2.11.0+cu128",)),
    Profile("blackwell-5090-r560", "torch --driver 560.35.03 --gpu 'RTX 5090' --python 3.12", ("none",),
            "install NVIDIA driver 595.45.04 or newer"),
    Profile("blackwell-b200-r575", "torch --driver 575.57.08 --gpu B200 --python 3.12", ("torch 2.11.0+cu128",)),
    # Pascal and Kepler
    Profile("pascal-1080-r580", "torch --driver 580.65.06 --gpu 'GTX 1080' --python 3.12", ("torch 2.14.1+cu126",)),
    Profile("pascal-windows", "torch --os windows --driver 576.88 --cc 6.1 --python 3.12", ("torch 2.14.1+cu126",)),
    Profile("kepler-k80-r470", "torch --driver 470.82.01 --gpu K80 --python 3.9", ("torch 2.7.1+cu118",)),
    Profile("kepler-k80-r535", "torch --driver 535.104.05 --gpu K80 --python 3.9", ("none",)),
    Profile("kepler-python-too-new", "torch --driver 470.82.01 --gpu K80 --python 3.14", ("none",),
            "use Python 3.13: then torch 2.7.1+cu118 fits"),
    # heterogeneous boxes
    Profile("hetero-sm61-sm89", "torch --driver 580.65.06 --cc 6.1 --cc 8.9 --python 3.12", ("torch 2.14.1+cu126",)),
    Profile("hetero-sm75-sm120", "torch --driver 580.65.06 --cc 7.5 --cc 12.0 --python 3.12", ("torch 2.15.0+cu130",)),
    Profile("hetero-sm37-sm86", "torch --driver 470.82.01 --cc 3.7 --cc 8.6 --python 3.10", ("torch 2.7.1+cu118",)),
    # Python
    Profile("python-too-new", "torch --driver 580.65.06 --cc 9.0 --python 3.16", ("none",),
            "use Python 3.15: then torch 2.15.0+cu130 fits"),
    Profile("python-3.8", "torch --driver 580.65.06 --cc 8.0 --python 3.8", ("torch 2.4.1+cu124",)),
    # Windows and WSL2
    Profile("windows-4090", "torch --os windows --driver 566.36 --gpu 'RTX 4090' --python 3.12", ("torch 2.14.1+cu126",)),
    Profile("wsl2-4090", "torch --os wsl2 --driver 566.36 --gpu 'RTX 4090' --python 3.12", ("torch 2.14.1+cu126",)),
    Profile("tf-windows-py310", "tensorflow --os windows --driver 566.36 --cc 8.6 --python 3.10",
            ("tensorflow 2.10.0 (CUDA 11.2)",)),
    Profile("tf-windows-py312", "tensorflow --os windows --driver 566.36 --cc 8.6 --python 3.12", ("none",),
            "use Python 3.10: then tensorflow 2.10.0 (CUDA 11.2) fits"),
    Profile("jax-windows", "jax --os windows --driver 576.88 --cc 8.9 --python 3.12", ("none",)),
    # CPU-only and aarch64
    Profile("cpu-only", "torch --os linux --python 3.11", ("torch 2.15.0+cpu",)),
    Profile("cupy-cpu-only", "cupy --os linux --python 3.11", ("none",)),
    Profile("gh200-aarch64", "torch --platform linux-aarch64 --driver 580.65.06 --cc 9.0 --python 3.12",
            ("torch 2.15.0+cu130",)),
    Profile("aarch64-r550", "torch --platform linux-aarch64 --driver 550.54.14 --cc 9.0 --python 3.12",
            ("torch 2.14.1+cu126",)),
    Profile("cupy-aarch64", "cupy --platform linux-aarch64 --driver 580.65.06 --cc 9.0 --python 3.12",
            ("cupy 14.* (cupy-cuda13x)",)),
    # forced CUDA, kept version, unknowns
    Profile("cuda-12.6", "torch --driver 580.65.06 --cc 8.9 --python 3.12 --cuda 12.6", ("torch 2.14.1+cu126",)),
    Profile("cuda-11.8", "torch --driver 580.65.06 --cc 8.9 --python 3.12 --cuda 11.8", ("torch 2.7.1+cu118",)),
    Profile("laptop-keeps-2.5.1", "torch --driver 470.82.01 --cc 8.6 --python 3.10 --version 2.5.1",
            ("torch 2.5.1+cu118",)),
    Profile("driver-unknown", "torch --cc 8.9 --python 3.12", ("torch 2.15.0+cu132",)),
    Profile("gpus-unknown", "torch --driver 550.54.14 --python 3.11", ("torch 2.7.1+cu118",)),
    # the other frameworks
    Profile("tf-4090-r535", "tensorflow --driver 535.104.05 --gpu 'RTX 4090' --python 3.11",
            ("tensorflow 2.21.0 (CUDA 12.5)",)),
    Profile("tf-maxwell", "tensorflow --driver 580.65.06 --cc 5.2 --python 3.11", ("tensorflow 2.16.1 (CUDA 12.3)",)),
    Profile("jax-cuda13", "jax --driver 580.65.06 --cc 9.0 --python 3.12", ("jax 0.12.* (cuda13)",)),
    Profile("jax-r575", "jax --driver 575.57.08 --cc 9.0 --python 3.12", ("jax 0.12.* (cuda12)",)),
    Profile("jax-pascal", "jax --driver 580.65.06 --cc 6.1 --python 3.12", ("jax 0.12.* (cuda12)",)),
    # jax 0.11 and later require Python 3.12 (their wheels' Requires-Python): 3.11 gets 0.10
    Profile("jax-py311", "jax --driver 575.57.08 --cc 9.0 --python 3.11", ("jax 0.10.* (cuda12)",)),
    Profile("cupy-r535", "cupy --driver 535.104.05 --cc 8.9 --python 3.11", ("cupy 14.* (cupy-cuda12x)",)),
    # 1.18's CUDA 11 build is CUDA 11.8: R470 (CUDA 11.4) runs it only through minor-version compatibility,
    # which holds for SASS only; the wheel has SASS for sm_80, which runs on 8.6 (framework_archs.json)
    Profile("ort-r470", "onnxruntime-gpu --driver 470.82.01 --cc 8.6 --python 3.10", ("onnxruntime-gpu 1.18.* (CUDA 11)",)),
    Profile("ort-r580", "onnxruntime-gpu --driver 580.65.06 --cc 8.9 --python 3.12", ("onnxruntime-gpu 1.31.* (CUDA 13)",)),
    # several packages share the CUDA major
    Profile("stack-cuda13", "torch cupy jax --driver 580.65.06 --cc 9.0 --python 3.12",
            ("torch 2.15.0+cu130", "cupy 14.* (cupy-cuda13x)", "jax 0.12.* (cuda13)")),
    Profile("stack-cuda-12.6", "torch cupy --driver 580.65.06 --cc 9.0 --python 3.12 --cuda 12.6",
            ("torch 2.14.1+cu126", "cupy 14.* (cupy-cuda12x)")),
)


def test_the_table_covers_at_least_thirty_profiles() -> None:
    assert len(PROFILES) >= 30
    assert len({p.id for p in PROFILES}) == len(PROFILES)


@pytest.mark.parametrize("manager", MANAGERS)
@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.id)
def test_profile(profile: Profile, manager: str, m: Matrix, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = cli_json([*shlex.split(profile.args), "--manager", manager], capsys)
    labels = tuple(r["plan"]["label"] if r["plan"] else "none" for r in doc["results"])
    assert labels == profile.plans
    assert code == (0 if "none" not in labels else 1)
    for r in doc["results"]:
        if r["plan"] is None:
            assert r["steps"] is None and r["nothing_fits"]["reasons"]
            if profile.would:
                assert any(profile.would in line for line in r["nothing_fits"]["what_would"])
            continue
        assert_manager_tokens(m, manager, r["plan"], r["steps"])


def assert_manager_tokens(m: Matrix, manager: str, plan: Dict[str, Any], steps: Dict[str, Any]) -> None:
    """What each manager's commands must say for this plan."""
    install = steps["commands"][-1]
    cuda = plan["cuda"]
    if manager in ("pip", "uv"):
        assert install.startswith("uv pip install " if manager == "uv" else "pip install ")
        for pin in plan["pins"]:
            assert pin in install
        if plan["index_url"]:
            flag = {"index": "--index-url", "extra-index": "--extra-index-url", "find-links": "-f"}[plan["index_mode"]]
            assert install.endswith(f"{flag} {plan['index_url']}")
        if plan["framework"] == "torch":
            assert plan["exact"] and plan["index_url"] == m.pytorch.index_url(plan["build"])
        return
    conda_cuda = ".".join(map(str, major_minor(cuda))) if cuda and "." in cuda else (str(major(cuda)) if cuda else None)
    if manager == "conda":
        assert install.startswith("conda install ")
        info = m.pytorch.conda(plan["version"]) if plan["framework"] == "torch" else None
        if info is not None and info.channel != "conda-forge" and (not cuda or conda_cuda in info.cuda_versions):
            assert f"-c {info.channel}" in install
            assert (f"{info.cuda_package}={conda_cuda}" if cuda else str(info.cpu_package)) in install
        else:
            assert install.startswith("conda install -c conda-forge ")
            assert (f"cuda-version={conda_cuda}" in install) == bool(cuda)
        return
    assert install.startswith("pixi add ")
    toml = steps["files"]["pixi.toml"]
    assert ("[system-requirements]" in toml) == bool(cuda)
    if cuda:
        assert f'cuda = "{major(cuda)}"' in toml and f"cuda-version={conda_cuda}" in install


# --------------------------------------------------------------------------- golden output

GOLDEN = {
    "install-laptop-described": ["torch", "--driver", "470.82.01", "--cc", "8.6", "--python", "3.10"],
    "install-dev-cpu": ["torch", "--machine", str(MACHINES / "dev-debian12-cuda13-nodriver-torch213cpu")],
    "install-5090-pixi": ["torch", "--driver", "570.124.06", "--gpu", "RTX 5090", "--python", "3.12", "--manager", "pixi"],
    "install-conda-pytorch-channel": ["torch", "--driver", "470.82.01", "--cc", "8.6", "--python", "3.10",
                                      "--version", "2.5.1", "--manager", "conda"],
    "install-tf-windows-nothing-fits": ["tensorflow", "--os", "windows", "--driver", "566.36", "--cc", "8.6",
                                        "--python", "3.12"],
    "install-laptop-machine-stack": ["torch", "cupy", "onnxruntime-gpu", "--machine",
                                     str(MACHINES / "laptop-rtx3060-driver470-torch25-cu124")],
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli_text(GOLDEN[name], capsys)
    assert err == "" and code in (0, 1)
    golden = HERE / "golden" / f"{name}.txt"
    if os.environ.get("CUDADOCTOR_UPDATE_GOLDEN"):
        golden.write_text(out, encoding="utf-8")
    assert out == golden.read_text(encoding="utf-8"), f"regenerate with CUDADOCTOR_UPDATE_GOLDEN=1 if intended: {golden}"


# --------------------------------------------------------------------------- the CPU machine


def test_the_dev_machine_gets_a_cpu_plan_and_what_a_gpu_build_needs(m: Matrix, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli_text(["torch", "--machine", str(MACHINES / "dev-debian12-cuda13-nodriver-torch213cpu")], capsys)
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith("pip install torch==") and first.endswith(f"--index-url {m.pytorch.index_url('cpu')}")
    assert "no NVIDIA driver" in out and "the CPU build" in out
    gpu = out[out.index("a GPU build would need"):]
    assert "an NVIDIA driver >= " in gpu and "has SASS for" in gpu


def test_a_kernel_module_whose_library_does_not_answer_is_still_planned_for(capsys: pytest.CaptureFixture[str]) -> None:
    """In a container without the GPU passed in, the host's kernel module is the driver the build
    will meet once it is; the plan says that it assumes so."""
    code, doc = cli_json(["torch", "--machine", str(MACHINES / "docker-nogpu-torch-cu126")], capsys)
    target = doc["target"]
    assert code == 0 and target["gpu_build"] and target["driver"] and target["notes"]
    assert "kernel module" in target["notes"][0] and doc["results"][0]["plan"]["cuda"]


def test_this_machine_without_a_driver_gets_the_cpu_plan(m: Matrix, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = collect(only=("driver",))
    if snapshot.driver is not None and snapshot.driver.loaded:
        pytest.skip("an NVIDIA driver is loaded here")
    code, out, _ = cli_text(["torch"], capsys)
    assert code == 0
    assert out.splitlines()[0].endswith(f"--index-url {m.pytorch.index_url('cpu')}")
    assert "a GPU build would need" in out


# --------------------------------------------------------------------------- advice and install agree


def test_the_laptop_fix_and_install_give_the_same_command(m: Matrix, capsys: pytest.CaptureFixture[str]) -> None:
    """The driver-too-old-for-build fix keeps the installed release (the smallest change that
    works); `install --version` of that release plans the very same command."""
    snap = collect(host=RecordedHost.load(str(MACHINES / "laptop-rtx3060-driver470-torch25-cu124")))
    finding = next(f for f in diagnose(snap) if f.code == "driver-too-old-for-build")
    assert finding.fix is not None
    fix_pip = [c.run for c in finding.fix.commands if c.run.startswith("pip install ")]
    code, doc = cli_json(["torch", "--driver", "470.82.01", "--cc", "8.6", "--python", "3.10", "--version", "2.5.1"],
                         capsys)
    assert code == 0 and fix_pip == doc["commands"]
    code, doc = cli_json(["torch", "--machine", str(MACHINES / "laptop-rtx3060-driver470-torch25-cu124"),
                          "--version", "2.5.1"], capsys)
    fix_all = [c.run.split("    #")[0] for c in finding.fix.commands if c.run.startswith("pip ")]
    assert code == 0 and fix_all == doc["commands"]


def test_without_version_install_plans_the_newest_release_the_fix_does_not_keep(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Without --version, install plans the newest release that fits the same machine; the fix
    stays on the installed release. Same planner function, different version argument."""
    _, kept = cli_json(["torch", "--driver", "470.82.01", "--cc", "8.6", "--python", "3.10", "--version", "2.5.1"], capsys)
    _, newest = cli_json(["torch", "--driver", "470.82.01", "--cc", "8.6", "--python", "3.10"], capsys)
    assert kept["results"][0]["plan"]["build"] == newest["results"][0]["plan"]["build"]
    assert kept["results"][0]["plan"]["version"] != newest["results"][0]["plan"]["version"]


# --------------------------------------------------------------------------- wrong variants


def target_with(m: Matrix, installed: Tuple[Installed, ...], **kw: Any) -> Any:
    return dataclasses.replace(described(m, **kw), installed=installed)


def test_a_cpu_torch_on_a_gpu_machine_is_uninstalled_first(m: Matrix) -> None:
    """pip keeps an installed torch whose version matches the pin, whatever its build: the CPU
    build of the planned release goes first (another release is replaced by pip itself)."""
    t = target_with(m, (Installed("torch", "2.15.0+cpu", "torch", "cpu"),
                        Installed("torchvision", "0.29.2+cpu", "torchvision", "cpu")),
                    driver="580.65.06", ccs=["8.9"], python="3.12")
    r = plan_install(m, t, ["torch"]).results[0]
    assert r.steps is not None and r.plan is not None
    assert r.steps.commands[0] == "pip uninstall -y torch torchvision"
    assert any("build cpu, not" in x.text for x in r.plan.reasons)


def test_the_same_variant_is_upgraded_in_place(m: Matrix) -> None:
    t = target_with(m, (Installed("torch", "2.13.0+cu130", "torch", "cuda", "13.0"),), driver="580.65.06", ccs=["9.0"],
                    python="3.12")
    r = plan_install(m, t, ["torch"]).results[0]
    assert r.steps is not None and r.steps.commands[0].startswith("pip install torch==")


def test_cupy_of_another_cuda_major_goes_first(m: Matrix) -> None:
    t = target_with(m, (Installed("cupy-cuda11x", "13.3.0", "cupy", "cuda", "11"),), driver="535.104.05", ccs=["8.9"],
                    python="3.11")
    r = plan_install(m, t, ["cupy"], manager="uv").results[0]
    assert r.steps is not None
    assert r.steps.commands == ("uv pip uninstall cupy-cuda11x", 'uv pip install "cupy-cuda12x==14.*"')


def test_the_cpu_onnxruntime_goes_before_onnxruntime_gpu(m: Matrix) -> None:
    t = target_with(m, (Installed("onnxruntime", "1.22.0", "onnxruntime", "cpu"),), driver="580.65.06", ccs=["8.9"],
                    python="3.12")
    r = plan_install(m, t, ["onnxruntime-gpu"]).results[0]
    assert r.steps is not None and r.steps.commands[0] == "pip uninstall -y onnxruntime"


def test_a_jax_plugin_of_another_cuda_major_goes_first(m: Matrix) -> None:
    t = target_with(m, (Installed("jax-cuda12-plugin", "0.7.2", "jax", "cuda", "12"),
                        Installed("jax", "0.7.2", "jax")), driver="580.65.06", ccs=["9.0"], python="3.12")
    r = plan_install(m, t, ["jax"]).results[0]
    assert r.steps is not None and r.steps.commands[0] == "pip uninstall -y jax-cuda12-plugin"


def test_a_conda_env_defaults_to_conda_and_conda_replaces_its_own_torch(capsys: pytest.CaptureFixture[str]) -> None:
    machine = str(MACHINES / "conda-forge-pytorch-cuda12")
    code, doc = cli_json(["torch", "--machine", machine], capsys)
    assert code == 0 and doc["manager"] == "conda" and doc["target"]["conda"]
    assert doc["commands"][0].startswith("conda install -c conda-forge ")
    code, doc = cli_json(["torch", "--machine", machine, "--manager", "pip"], capsys)
    assert doc["commands"][0] == "conda remove -y pytorch pytorch-gpu" and doc["commands"][1].startswith("pip install ")


# --------------------------------------------------------------------------- mirrors


@pytest.mark.parametrize("mirror", ["https://mirror.example/pytorch/whl", "https://mirror.example/pytorch/whl/",
                                    "https://mirror.example/pytorch/whl/cu124"])
def test_a_mirror_keeps_the_variant_and_replaces_the_base(mirror: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = cli_json(["torch", "--driver", "580.65.06", "--cc", "8.9", "--python", "3.12", "--cuda", "12.6",
                       "--index-url", mirror], capsys)
    assert doc["commands"][0].endswith("--index-url https://mirror.example/pytorch/whl/cu126")


def test_a_mirror_of_pypi_replaces_the_whole_url(capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = cli_json(["cupy", "--driver", "580.65.06", "--cc", "8.9", "--python", "3.12",
                       "--index-url", "https://pypi.mirror.example/simple"], capsys)
    assert doc["commands"][0].endswith("--index-url https://pypi.mirror.example/simple")


def test_conda_says_the_mirror_is_for_pip(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = cli_text(["torch", "--driver", "580.65.06", "--cc", "8.9", "--python", "3.12", "--manager", "conda",
                          "--index-url", "https://mirror.example/whl"], capsys)
    assert "--index-url applies to pip and uv" in out


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("args, message", [
    (["torch", "--gpu", "RTX 9999"], "no GPU of that name"),
    (["torch", "--cc", "8.x"], "not a compute capability"),
    (["torch", "--driver", "latest"], "not an NVIDIA driver version"),
    (["torch", "--cuda", "12.7", "--cc", "8.9"], "not a CUDA release in compat_data"),
    (["torch", "cupy", "--version", "2.5.1", "--cc", "8.9"], "--version names the release of one framework"),
    (["tensorflow-cpu", "--cc", "8.9"], "cannot plan"),
    (["torch", "--os", "windows", "--platform", "linux-x86_64"], "does not go with"),
    (["torch", "--python", "three", "--cc", "8.9"], "not a Python version"),
    (["torch", "--version", "9.9", "--cc", "8.9"], "compat_data knows no such release of torch"),
    (["jax", "--version", "9.0", "--cc", "8.9"], "compat_data knows no such release of jax"),
])
def test_bad_input_is_one_line_and_exit_2(args: List[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli_text(args, capsys)
    assert code == 2 and out == ""
    assert message in err.splitlines()[0] and "Traceback" not in err


def test_the_conda_managers_do_not_verify(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli_text(["torch", "--cc", "8.9", "--python", "3.12", "--manager", "conda", "--verify"], capsys)
    assert code == 2 and "installs from channels" in err


# --------------------------------------------------------------------------- --verify


class _Index:
    """A fake simple index on 127.0.0.1: every /<anything>/<project>/ page lists ``files``."""

    def __init__(self, files: Dict[str, List[str]]) -> None:
        index = self
        self.files = files

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                project = self.path.rstrip("/").rsplit("/", 1)[-1]
                names = index.files.get(project)
                body = ("<html><body>" + "".join(f'<a href="/f/{n}">{n}</a>' for n in names or ()) + "</body></html>"
                        ).encode()
                self.send_response(200 if names is not None else 404)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/whl"


@pytest.fixture
def fake_index(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Index]:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    index = _Index({"torch": ["torch-2.5.1+cu118-cp310-cp310-linux_x86_64.whl"],
                    "torchvision": ["torchvision-0.20.1+cu118-cp310-cp310-linux_x86_64.whl"],
                    "torchaudio": ["torchaudio-2.5.1+cu118-cp311-cp311-linux_x86_64.whl"]})
    index.thread.start()
    yield index
    index.server.shutdown()
    index.server.server_close()


def test_verify_reports_the_wheel_the_mirror_lacks(fake_index: _Index, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli_text(["torch", "--driver", "470.82.01", "--cc", "8.6", "--python", "3.10", "--version", "2.5.1",
                             "--index-url", fake_index.url, "--verify", "--timeout", "5"], capsys)
    assert code == 1
    assert f"--index-url {fake_index.url}/cu118" in out.splitlines()[0]
    assert "verify failed for torch" in out and "torchaudio" in out


def test_verify_passes_when_every_wheel_is_there(fake_index: _Index, capsys: pytest.CaptureFixture[str]) -> None:
    fake_index.files["torchaudio"] = ["torchaudio-2.5.1+cu118-cp310-cp310-linux_x86_64.whl"]
    code, doc = cli_json(["torch", "--driver", "470.82.01", "--cc", "8.6", "--python", "3.10", "--version", "2.5.1",
                          "--index-url", fake_index.url, "--verify", "--timeout", "5"], capsys)
    assert code == 0 and doc["verify"]["torch"]["ok"]


def test_verify_says_what_it_did_not_check(fake_index: _Index, capsys: pytest.CaptureFixture[str]) -> None:
    # jax[cuda13]==0.12.*: the series resolves to the index's newest 0.12 wheel, and the extra's packages
    # (the CUDA plugin, the nvidia-* wheels) are said to be unchecked instead of passing silently
    fake_index.files["jax"] = ["jax-0.12.0.1-py3-none-any.whl", "jax-0.11.2-py3-none-any.whl"]
    code, out, _ = cli_text(["jax", "--driver", "580.65.06", "--cc", "9.0", "--python", "3.12",
                             "--index-url", fake_index.url, "--verify", "--timeout", "5"], capsys)
    assert code == 0, out
    assert f"verified: {fake_index.url} serves jax==0.12.* for cp312 linux_x86_64" in out
    assert ("  not checked: jax[cuda13]==0.12.*: only jax's own wheel was checked, not the packages its extra "
            "[cuda13] brings") in out
    _, doc = cli_json(["jax", "--driver", "580.65.06", "--cc", "9.0", "--python", "3.12",
                       "--index-url", fake_index.url, "--verify", "--timeout", "5"], capsys)
    assert doc["verify"]["jax"]["packages"][0]["wheel"] == "jax-0.12.0.1-py3-none-any.whl"
    assert len(doc["verify"]["jax"]["not_checked"]) == 1


def test_verify_of_a_plan_that_does_not_fit_says_nothing_was_checked(fake_index: _Index,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli_text(["cupy", "--os", "linux", "--python", "3.11", "--index-url", fake_index.url, "--verify",
                             "--timeout", "5"], capsys)
    assert code == 1
    assert "not verified: cupy\n  not checked: cupy: nothing fits this machine, so no wheel was checked" in out


def test_verify_against_a_server_that_is_down_is_one_clear_failure(capsys: pytest.CaptureFixture[str]) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    url = f"http://127.0.0.1:{server.server_address[1]}/whl"
    server.server_close()  # nothing listens there now
    code, out, _ = cli_text(["torch", "--driver", "470.82.01", "--cc", "8.6", "--python", "3.10", "--index-url", url,
                             "--verify", "--timeout", "2"], capsys)
    assert code == 1 and "verify failed for torch" in out and "not reachable" in out


# --------------------------------------------------------------------------- JSON


def test_the_json_document_keeps_its_keys(capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = cli_json(["torch", "cupy", "--driver", "580.65.06", "--cc", "9.0", "--python", "3.12"], capsys)
    assert set(doc) == {"schema_version", "tool_version", "data_version", "target", "manager", "index_url", "ok",
                        "commands", "results", "verify"}
    plan = doc["results"][0]["plan"]
    assert set(plan) == {"label", "framework", "version", "build", "cuda", "pins", "exact", "index_url", "index_mode",
                         "driver", "reasons", "notes", "sources"}
    assert all(r["source"] or r["text"].startswith(("CUDA ", "uninstalled")) for r in plan["reasons"])


# ---------------------------------------------------------------------------- CUDA 13 and old GPUs
# CUDA 13's toolkits build nothing below sm_75 (toolkit_archs.json): no framework's CUDA 13 build
# is planned for a Pascal or Volta GPU, in every planner, not only torch's.


@pytest.mark.parametrize("package, build", [("cupy", "cupy-cuda12x"), ("onnxruntime", "(CUDA 12)"),
                                            ("jax", "(cuda12)")])
def test_no_cuda13_build_is_planned_for_a_gpu_below_sm75(package: str, build: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code = run(["install", package, "--gpu", "GTX 1080", "--driver", "580.65.06"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert build in out and "13x" not in out.splitlines()[0]
    assert "needs compute capability >= 7.5 (not 6.1)" in out


def test_cupy_says_why_its_cuda13_build_was_passed_over(capsys: pytest.CaptureFixture[str]) -> None:
    run(["install", "cupy", "--gpu", "GTX 1080", "--driver", "580.65.06"])
    out = capsys.readouterr().out
    assert ("the builds for a newer CUDA were passed over (cupy 14.* (cupy-cuda13x): needs compute capability "
            ">= 7.5 (not 6.1))") in out


def test_the_cuda_floor_per_major() -> None:
    toolchain = default_matrix().toolchain
    assert (toolchain.cuda_floor(13), toolchain.cuda_floor(12), toolchain.cuda_floor(11)) == ("7.5", "5.0", "3.5")


# ---------------------------------------------------------------------- a working stack is kept


H100 = "h100-driver580-torch211-cu130"


def test_a_working_torch_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    """The real H100 of the proof kit: torch 2.11.0 from PyPI (its cu130 build) works there."""
    code, out, err = cli_text(["torch", "--machine", str(MACHINES / H100)], capsys)
    assert code == 0 and err == ""
    assert "torch: nothing to install" in out and "torch 2.11.0+cu130 works here" in out
    assert "pip install" not in out and "pip uninstall" not in out


def test_an_upgrade_never_removes_a_pure_python_dependent(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli_text(["torch", "--upgrade", "--machine", str(MACHINES / H100)], capsys)
    assert code == 0
    assert "torch-geometric" not in out  # pure Python: it works with the new torch
    assert out.splitlines()[0] == "pip uninstall -y torchaudio"  # no torchaudio release pairs with 2.15.0
    assert "no torchaudio release pairs with torch 2.15.0+cu130" in out


def test_torch_named_distributions_are_not_torch(m: Matrix) -> None:
    from cudadoctor.planner.target import _family

    assert [_family(n) for n in ("torch", "pytorch", "torch-geometric", "torchvision", "xformers", "flash_attn")] == \
        ["torch", "torch", None, "torchvision", "torch-extension", "torch-extension"]


def test_compiled_extensions_go_with_the_torch_they_were_built_for(m: Matrix) -> None:
    target = dataclasses.replace(described(m, driver="580.65.06", gpus=["H100"], python="3.12"), installed=(
        Installed("torch", "2.8.0+cu128", "torch", "cuda", "12.8"), Installed("xformers", "0.0.32.post1", "torch-extension"),
        Installed("torch-geometric", "2.8.0", "torch-geometric")))
    r = plan_install(m, target, ["torch"]).results[0]
    assert [i.name for i in r.uninstall] == ["xformers"]  # torch 2.8.0 is replaced by pip itself
    assert any("compiled extension" in x.text for x in r.plan.reasons) if r.plan else False


def test_a_broken_torch_is_not_kept(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli_text(["torch", "--machine", str(MACHINES / "laptop-rtx3060-driver470-torch25-cu124")], capsys)
    assert "nothing to install" not in out and "pip install torch==" in out
