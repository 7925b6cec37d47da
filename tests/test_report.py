"""`cudadoctor report`: redacted by default, under GitHub's size limit, replayable with `diagnose`.

Regenerate the golden Markdown after an intended change of wording:
CUDADOCTOR_UPDATE_GOLDEN=1 python -m pytest tests/test_report.py
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Dict, List

import pytest

import cudadoctor.api
from cudadoctor.api import collect, diagnose, make_report
from cudadoctor.model import (
    FrameworkBuild,
    Gpu,
    HostInfo,
    Library,
    LibraryCopy,
    Package,
    ProbeError,
    ErrorKind,
    PythonEnv,
    Report,
    SmokeResult,
    SmokeTest,
    Snapshot,
    DriverInfo,
)
from cudadoctor.host.recorded import RecordedHost
from cudadoctor.reports.redact import PLACEHOLDER, REDACTED, Pseudonyms, is_redacted, letters, redact
from cudadoctor.render.jsonout import render_json
from cudadoctor.render.report_fit import fit_markdown, size, shorten
from cudadoctor.render.report_markdown import GITHUB_LIMIT, extract_json
from cudadoctor.render.text import render_text
from cudadoctor.model.serialize import snapshot_from_dict
from helpers import HERE, MACHINES, cli

GOLDEN = ("laptop-rtx3060-driver470-torch25-cu124", "dgx-h100x8-driver570-torch27-cu128", "docker-nogpu-torch-cu126")


def codes(findings: Any) -> List[str]:
    return [f["code"] if isinstance(f, dict) else f.code for f in findings]


@pytest.fixture
def steady_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshots without the time they were taken or how long the probes ran (golden output)."""
    real = cudadoctor.api.collect

    def steady(*args: Any, **kwargs: Any) -> Snapshot:
        snap = real(*args, **kwargs)
        return dataclasses.replace(
            snap, created_at="2026-11-21T12:00:00Z", probe_durations_s={k: 0.01 for k in snap.probe_durations_s},
            errors=tuple(dataclasses.replace(e, duration_s=None) for e in snap.errors))

    monkeypatch.setattr(cudadoctor.api, "collect", steady)


# ------------------------------------------------------------------------------ planted secrets

USER = "qusr5marker"
HOST = "qhost3marker"
UUID = "GPU-5eedfa11-0b0e-4c1a-9d2e-7f3a6b8c9d0e"
SERIAL = "1650000777777"
CAPTURED_ENV = {  # variables the env probe keeps (GPU-related names), each with a private part
    "LD_LIBRARY_PATH": "/home/qother9marker/lib:/usr/local/cuda/lib64",
    "CUDA_VISIBLE_DEVICES": "GPU-5eedfa11",
    "NVIDIA_API_KEY": "nvapi-qnv8marker-xyz",
    "CUDA_REPO_URL": "https://qcudau3marker:qcudap4marker@repo.corp.example/cuda",
    "NCCL_COMM_ID": "10.77.88.99:5000",
    "NCCL_SOCKET_ADDR6": "fd12:3456:789a::4242",
    "NCCL_HOST_MAC": "02:42:ac:11:99:88",
    "NCCL_HOSTNAME_HINT": f"{HOST}.corp.example",
    "CONDA_PREFIX": f"/home/{USER}/miniconda3",
    "CUDA_CACHE_PATH": "/Users/qmac2marker/.nv/cache",
    "PYTHONPATH": "C:\\Users\\qwin4marker\\lib",
}
UNCAPTURED_ENV = {  # never kept by the env probe; planted in the snapshot directly below
    "HF_TOKEN": "hf_qtok1markerAAAAAAAAAAAAAAAAAAAAAAAAA",
    "AWS_SECRET_ACCESS_KEY": "qaws6marker/abcdEFGH1234+zz",
    "PIP_INDEX_URL": "https://qpipu1marker:qpipp2marker@pypi.corp.example/simple",
    "HOME": f"/home/{USER}",
    "USER": USER,
    "SESSION_COOKIE": "qcookie7marker",
}
MARKERS = [USER, HOST, "qother9marker", "5eedfa11", "7f3a6b8c9d0e", SERIAL, "qnv8marker", "qcudau3marker",
           "qcudap4marker", "10.77.88.99", "fd12:3456:789a::4242", "02:42:ac:11:99:88", "qmac2marker", "qwin4marker",
           "qtok1marker", "qaws6marker", "qpipu1marker", "qpipp2marker", "qcookie7marker", "qbear0marker",
           "192.168.77.66", "qghp5marker"]


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """The laptop machine, moved to a user, host, GPU and environment whose every private value is a marker."""
    src = MACHINES / "laptop-rtx3060-driver470-torch25-cu124"
    dst = tmp_path / "planted"
    shutil.copytree(src, dst)
    (dst / "fs" / "home" / "maya").rename(dst / "fs" / "home" / USER)
    text = (dst / "machine.json").read_text(encoding="utf-8")
    text = text.replace("maya-laptop", f"{HOST}.corp.example").replace("maya", USER)
    text = re.sub(r"GPU-[0-9a-f-]{36}", UUID, text)
    data = json.loads(text)
    data["env"].update(CAPTURED_ENV)
    data["env"].update(UNCAPTURED_ENV)
    data["env"]["PATH"] += ":/Users/qmac2marker/bin"
    data["nvml"]["devices"][0]["nvmlDeviceGetSerial"] = SERIAL
    (dst / "machine.json").write_text(json.dumps(data), encoding="utf-8")
    return dst


def planted_snapshot(machine: Path) -> Snapshot:
    """The probed planted machine, plus what only a hand-written snapshot would carry."""
    snap = collect(host=RecordedHost.load(str(machine)))
    env = dict(snap.env or {})
    env.update(UNCAPTURED_ENV)
    smoke = (SmokeResult(
        suite="torch", status="failed", reason=f"RuntimeError on {HOST}: connect to 192.168.77.66 failed",
        stderr_tail=(f"File \"/home/{USER}/proj/train.py\", line 3\nAuthorization: Bearer qbear0marker\n"
                     f"export GH_TOKEN=ghp_qghp5markerAAAAAAAAAAAAAAAAAAAA\nGPU {UUID} serial {SERIAL} on {HOST}"),
        tests=(SmokeTest(name="matmul", status="failed", gpu=0, error=f"in /home/{USER}/x: nccl 10.77.88.99"),),
        details={"libcudart": f"/home/{USER}/proj/.venv/lib/libcudart.so.12"}),)
    return dataclasses.replace(snap, env=env, smoke=smoke,
                               error_message=f"token {UNCAPTURED_ENV['HF_TOKEN']} leaked from /home/{USER} on {HOST}")


def leaks(text: str) -> List[str]:
    return [m for m in MARKERS if m.lower() in text.lower()]


def render_all(report: Report) -> Dict[str, str]:
    out: Dict[str, str] = {"markdown": fit_markdown(report)[0]}
    for name, fn in (("text", lambda r, s: render_text(r, s, verbose=True)), ("json", render_json)):
        stream = io.StringIO()
        fn(report, stream)
        out[name] = stream.getvalue()
    return out


def test_planted_markers_appear_in_no_format_and_the_diagnosis_stays(planted: Path) -> None:
    snap = planted_snapshot(planted)
    original = make_report(snap, diagnose(snap))
    assert all(m.lower() in json.dumps(dataclasses.asdict(snap)).lower() for m in MARKERS), "every marker is planted"
    redacted, summary = redact(original)
    for name, text in render_all(redacted).items():
        assert leaks(text) == [], name
    assert codes(redacted.findings) == codes(original.findings)
    assert codes(diagnose(redacted.snapshot)) == codes(original.findings), "a maintainer's replay finds the same"
    for kind in ("username", "hostname", "home", "gpu_uuid", "gpu_serial", "ip", "mac", "secret", "url_credentials"):
        assert summary.counts.get(kind), kind
    assert redacted.redaction and "--no-redact" in redacted.redaction


@pytest.mark.parametrize("fmt", ["markdown", "text", "json"])
def test_report_command_redacts_the_planted_machine(planted: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["report", "--machine", str(planted), "--format", fmt], capsys)
    assert code == 0, err
    assert leaks(out) == []
    _, checked, _ = cli(["check", "--machine", str(planted), "--json"], capsys)
    expected = codes(json.loads(checked)["findings"])
    assert expected, "the planted machine has findings to keep"
    if fmt == "json":
        doc = json.loads(out)
        assert codes(doc["findings"]) == expected
        assert doc["redaction"].startswith("Redacted")
        assert doc["snapshot"]["host"]["hostname"] == "<hostname>"
        assert doc["snapshot"]["gpus"][0]["uuid"] == "GPU-a"
        assert doc["snapshot"]["env"]["CUDA_VISIBLE_DEVICES"] == "GPU-a"  # the prefix names the same GPU
        assert doc["snapshot"]["env"]["NVIDIA_API_KEY"] == REDACTED
        assert doc["snapshot"]["env"]["CUDA_REPO_URL"] == "https://<redacted>@repo.corp.example/cuda"
    else:
        assert "Redacted by cudadoctor" in out


def test_no_redact_keeps_the_values(planted: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["report", "--machine", str(planted), "--format", "json", "--no-redact"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["redaction"] is None
    assert doc["snapshot"]["host"]["username"] == USER
    assert doc["snapshot"]["gpus"][0]["uuid"] == UUID
    assert doc["snapshot"]["env"]["NVIDIA_API_KEY"] == CAPTURED_ENV["NVIDIA_API_KEY"]
    _, md, _ = cli(["report", "--machine", str(planted), "--no-redact"], capsys)
    assert "Not redacted" in md and USER in md


def test_redact_pattern_and_its_errors(planted: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["report", "--machine", str(planted), "--redact", r"proj\b", "--redact", "RTX 30[0-9]0"], capsys)
    assert code == 0
    assert "RTX 3060" not in out and "/proj/" not in out and "<redacted>/.venv" in out
    assert "2 --redact matches" in out
    for bad in (["--redact", "("], ["--redact", "x*"], ["--no-redact", "--redact", "x"]):
        code, _, err = cli(["report", "--machine", str(planted), *bad], capsys)
        assert code == 2 and "cudadoctor: error:" in err


def test_keep_hostname(planted: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = cli(["report", "--machine", str(planted), "--format", "json", "--keep-hostname"], capsys)
    doc = json.loads(out)
    assert doc["snapshot"]["host"]["hostname"] == f"{HOST}.corp.example"
    assert doc["snapshot"]["host"]["username"] == "<user>"


# ------------------------------------------------------------------------------ redaction rules


def rd(snapshot: Snapshot, *patterns: str) -> Snapshot:
    return redact(make_report(snapshot), patterns)[0].snapshot


def test_versions_are_not_addresses_and_loopback_stays() -> None:
    snap = Snapshot(
        libraries=(Library("libcurand", (LibraryCopy("/x/libcurand.so.10", "10.3.5.147", "pip:nvidia-curand-cu12==10.3.5.147"),)),),
        packages=(Package("nvidia-cublas-cu12", "12.4.5.8"),),
        env={"NCCL_COMM_ID": "10.3.5.147:80", "NCCL_X": "127.0.0.1 ::1 0.0.0.0", "CUDA_Y": "10.1.2.3"},
        error_message="libcurand 10.3.5.147 and cuBLAS 12.4.5.8 loaded; peer 10.1.2.3 gone; c10::cuda::Error at 12:34:56",
    )
    out = rd(snap)
    assert out.libraries == snap.libraries and out.packages == snap.packages
    assert out.env == {"NCCL_COMM_ID": "10.3.5.147:80", "NCCL_X": "127.0.0.1 ::1 0.0.0.0", "CUDA_Y": "<ip-1>"}
    assert out.error_message == "libcurand 10.3.5.147 and cuBLAS 12.4.5.8 loaded; peer <ip-1> gone; c10::cuda::Error at 12:34:56"


def test_pseudonyms_are_stable_and_in_gpu_order() -> None:
    uuids = [f"GPU-{i:08x}-0000-4000-8000-{i:012x}" for i in range(1, 4)]
    gpus = tuple(Gpu(index=i, uuid=u, serial=f"16500000000{i}") for i, u in enumerate(uuids))
    snap = Snapshot(gpus=gpus, env={"CUDA_VISIBLE_DEVICES": f"{uuids[2]},{uuids[0][:12]},GPU-ffffffff"},
                    error_message=f"Xid 79 on {uuids[1]} (serial 165000000001); MIG-{uuids[0][4:]} too")
    out = rd(snap)
    assert [g.uuid for g in out.gpus or ()] == ["GPU-a", "GPU-b", "GPU-c"]
    assert [g.serial for g in out.gpus or ()] == ["<serial-a>", "<serial-b>", "<serial-c>"]
    assert (out.env or {})["CUDA_VISIBLE_DEVICES"] == "GPU-c,GPU-a,GPU-unmatched-1"
    assert out.error_message == "Xid 79 on GPU-b (serial <serial-b>); MIG-d too"  # a MIG device is another device
    assert [letters(n) for n in (0, 24, 25, 26, 50)] == ["a", "y", "za", "zb", "zza"]
    names = Pseudonyms()
    assert names.name("ip", "10.0.0.1") == names.name("ip", "10.0.0.1") == "<ip-1>" != names.name("ip", "10.0.0.2")
    assert is_redacted("/home/<user>/x") and is_redacted("GPU-a") and is_redacted("GPU-unmatched-1")
    assert not is_redacted("GPU-0 /home/maya") and not is_redacted("GPU-ab12cd34")
    assert PLACEHOLDER.fullmatch("<serial-b>")


def test_homes_users_hosts_and_secrets_in_free_text() -> None:
    snap = Snapshot(
        host=HostInfo(hostname="gpu-node-17.cluster.example", username="alice", os="linux"),
        python=PythonEnv(executable="/scratch/alice/envs/a/bin/python", prefix="/home/alice/env"),
        env={"HOME": "/scratch/alice", "PATH": "/home/bob/bin:/Users/carol/bin:/home/linuxbrew/.linuxbrew/bin",
             "NVIDIA_TOKEN": "short", "CUDA_FLAGS": "--password hunter22 api_key=abc123 Authorization: token zzz"},
        error_message="ssh gpu-node-17 failed; GPU-NODE-17.cluster.example down; alice's root cause; alice-gpu-node-17 "
                      "see https://bob:pw@git.example/x.git and 00-1A-2B-3C-4D-5E",
    )
    out = rd(snap)
    assert out.host == HostInfo(hostname="<hostname>", username="<user>", os="linux")
    assert out.python and out.python.executable == "<home>/envs/a/bin/python" and out.python.prefix == "/home/<user>/env"
    env = out.env or {}
    assert env["HOME"] == "<home>"
    assert env["PATH"] == "/home/<user-2>/bin:/Users/<user-3>/bin:/home/linuxbrew/.linuxbrew/bin"
    assert env["NVIDIA_TOKEN"] == REDACTED
    assert env["CUDA_FLAGS"] == "--password <redacted> api_key=<redacted> Authorization: token <redacted>"
    assert out.error_message == ("ssh <hostname> failed; <hostname> down; <user>'s root cause; <user>-<hostname> "
                                 "see https://<redacted>@git.example/x.git and <mac-1>")


def test_redaction_is_idempotent_and_keeps_identifiers(load_machine: Any) -> None:
    snap = collect(host=load_machine("two-toolkits-ldpath-cudnn8-shadow"))
    once, _ = redact(make_report(snap, diagnose(snap)))
    twice, summary = redact(once)
    assert dataclasses.replace(twice, redaction=None) == dataclasses.replace(once, redaction=None)
    assert summary.total == 0 and summary.describe() == "nothing private found"
    assert [(f.code, f.category, f.severity, f.evidence, f.source) for f in once.findings] == \
           [(f.code, f.category, f.severity, f.evidence, f.source) for f in diagnose(snap)]


# ------------------------------------------------------------------------------ golden Markdown


@pytest.mark.parametrize("machine", GOLDEN)
def test_golden_report(machine: str, steady_clock: None, capsys: pytest.CaptureFixture[str],
                       monkeypatch: pytest.MonkeyPatch) -> None:
    # the data as a wheel ships it, whether these tests import the package from a checkout or not
    import dataclasses

    from cudadoctor.data.source import DataSource, data_info

    info = data_info()
    assert info is not None
    monkeypatch.setattr(DataSource, "info", lambda self: dataclasses.replace(info, origin="shipped"))
    code, out, err = cli(["report", "--machine", str(MACHINES / machine), "--format", "markdown"], capsys)
    assert code == 0, err
    golden = HERE / "golden" / f"report-{machine}.md"
    if os.environ.get("CUDADOCTOR_UPDATE_GOLDEN"):
        golden.write_text(out, encoding="utf-8")
    assert out == golden.read_text(encoding="utf-8"), f"regenerate with CUDADOCTOR_UPDATE_GOLDEN=1 if intended: {golden}"


@pytest.mark.parametrize("machine", sorted(p.name for p in MACHINES.iterdir() if (p / "machine.json").is_file()))
def test_markdown_json_block_replays_to_the_same_findings(machine: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "report.md"
    code, _, err = cli(["report", "--machine", str(MACHINES / machine), "-o", str(target)], capsys)
    assert code == 0 and "wrote the report" in err
    markdown = target.read_text(encoding="utf-8")
    block = extract_json(markdown)
    assert block is not None
    (tmp_path / "report.json").write_text(block, encoding="utf-8")
    recorded = json.loads(block)["findings"]
    for source in ("report.json", "report.md"):  # the extracted block, and the Markdown itself
        code, out, err = cli(["diagnose", str(tmp_path / source), "--json", "--fail-on", "never"], capsys)
        assert code == 0, err
        assert json.loads(out)["findings"] == recorded


def test_default_format_follows_the_output_suffix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    machine = str(MACHINES / "docker-nogpu-torch-cu126")
    for name, check in (("r.json", lambda t: json.loads(t)["format"] == "cudadoctor.report"),
                        ("r.txt", lambda t: t.startswith("cudadoctor ")),
                        ("r.md", lambda t: t.startswith("### cudadoctor report"))):
        assert cli(["report", "--machine", machine, "-o", str(tmp_path / name)], capsys)[0] == 0
        assert check((tmp_path / name).read_text(encoding="utf-8")), name
    code, out, _ = cli(["report", "--machine", machine], capsys)  # stdout is not a terminal here
    assert code == 0 and out.startswith("### cudadoctor report")


# ------------------------------------------------------------------------------ size


def huge_snapshot() -> Snapshot:
    """Thousands of packages and library copies, long environment values, a chatty smoke run."""
    site = "/home/biguser/envs/huge/lib/python3.11/site-packages"
    packages = tuple(Package(f"some-package-{i}", f"1.{i}.0", location=site) for i in range(3000))
    packages += tuple(Package(f"nvidia-lib{i}-cu12", "12.4.1", location=site) for i in range(40))
    packages += (Package("torch", "2.5.1+cu124", location=site),)
    libraries = tuple(
        Library(f"libfamily{f}", tuple(LibraryCopy(f"/opt/stack{c}/lib/libfamily{f}.so.12", f"12.{c % 3}.0", "LD_LIBRARY_PATH")
                                       for c in range(60)))
        for f in range(40))
    env = {f"CUDA_LONG_{i}": ":".join(f"/opt/very/long/path/number/{j}/lib" for j in range(400)) for i in range(20)}
    passed = tuple(SmokeTest(name=f"t{i}", status="passed", gpu=0, message="x" * 200) for i in range(300))
    stderr = "\n".join(f"line {i} " + "y" * 150 for i in range(400))
    smoke = (SmokeResult(suite="driver", status="passed", tests=passed),
             SmokeResult(suite="torch", status="failed", reason="boom", stderr_tail=stderr))
    errors = tuple(ProbeError("libraries", ErrorKind.PERMISSION, f"/opt/stack{i}: permission denied", 0.1) for i in range(500))
    return Snapshot(
        host=HostInfo(os="linux", distribution="Ubuntu 22.04.4 LTS", architecture="x86_64", hostname="bighost",
                      username="biguser"),
        python=PythonEnv(version="3.11.9", executable="/home/biguser/envs/huge/bin/python", site_packages=(site,)),
        driver=DriverInfo(loaded=True, driver_version="550.54.15", cuda_driver_version="12.4", source="nvml"),
        gpus=tuple(Gpu(index=i, name="NVIDIA H100 80GB HBM3", uuid=f"GPU-{i:08x}-0000-4000-8000-{i:012x}",
                       compute_capability="9.0", source="nvml") for i in range(8)),
        gpus_source="nvml", toolkits=(), libraries=libraries, packages=packages,
        frameworks=(FrameworkBuild("torch", "2.5.1+cu124", "cuda", "12.4", "9.1.0.70", location=f"{site}/torch",
                                   distribution="torch==2.5.1+cu124"),),
        compilers=(), env=env, errors=errors, probe_durations_s={"libraries": 0.123456}, smoke=smoke)


def test_a_huge_environment_fits_says_what_was_cut_and_its_json_loads() -> None:
    snap = huge_snapshot()
    report, _ = redact(make_report(snap, diagnose(snap)))
    full = io.StringIO()
    render_json(report, full)
    assert size(full.getvalue()) > 10 * GITHUB_LIMIT
    markdown, cuts = fit_markdown(report)
    assert size(markdown) < GITHUB_LIMIT
    assert cuts and "Shortened" in markdown and "the package list" in markdown
    assert "bighost" not in markdown and "biguser" not in markdown
    block = extract_json(markdown)
    assert block is not None, "the JSON block survives the cuts"
    doc = json.loads(block)
    replayed = snapshot_from_dict(doc)
    assert [p.name for p in replayed.packages or ()][-1] == "torch"
    assert codes(diagnose(replayed)) == codes(doc["findings"]) == codes(report.findings)


def test_small_budgets_cut_more_and_always_fit() -> None:
    snap = huge_snapshot()
    report = make_report(snap, diagnose(snap))
    for budget in (40_000, 20_000, 8_000, 3_000):
        markdown, cuts = fit_markdown(report, budget)
        assert size(markdown) <= budget, budget
        assert cuts
    markdown, _ = fit_markdown(report, 8_000)
    assert "the JSON block" in markdown


def test_max_length_option(capsys: pytest.CaptureFixture[str]) -> None:
    machine = str(MACHINES / "dgx-h100x8-driver570-torch27-cu128")
    code, out, _ = cli(["report", "--machine", machine, "--max-length", "12000"], capsys)
    assert code == 0 and size(out) <= 12000 and "Shortened" in out
    assert json.loads(extract_json(out) or "null")["format"] == "cudadoctor.report"


def test_a_normal_report_is_not_cut(load_machine: Any) -> None:
    snap = collect(host=load_machine("dgx-h100x8-driver570-torch27-cu128"))
    markdown, cuts = fit_markdown(redact(make_report(snap, diagnose(snap)))[0])
    assert cuts == () and "Shortened" not in markdown


def test_shorten_keeps_whole_path_entries() -> None:
    value = ":".join(f"/opt/p{i}" for i in range(200))
    short = shorten(value, 100)
    assert len(short) <= 100 and short.startswith("/opt/p0:/opt/p1:") and short.endswith("more)")
    assert shorten("abc", 100) == "abc"
