"""Redaction against a marker planted in every place a report can carry (issue 16, items 3-7).

One recorded machine (the conda-forge one: it has conda-meta) is moved to a user, a host, a home
outside /home and an environment whose every private value spells ``zqxmarker``; the report,
in every format, must not contain it in any case. The rules behind each plant have unit tests below.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any, Dict, List

import pytest

from cudadoctor.api import make_report
from cudadoctor.model import HostInfo, Package, PythonEnv, Snapshot
from cudadoctor.model.parsers import parse_conda_meta
from cudadoctor.probes.system import ENV_NAMES
from cudadoctor.reports.redact import REDACTED, redact
from cudadoctor.reports.redact_rules import Identity, is_secret_name, local_identity
from helpers import MACHINES, cli

MARKER = "zqxmarker"
# Values that cannot spell the marker (addresses, UUIDs, serials): each must be gone as well.
OTHER_MARKERS = ["10.9.8.1", "10.9.8.200", "172.31.9.44", "7d5c3e2b", "9e4f6c70", "1321021034217"]
HOME = f"/u/{MARKER}home"  # outside /home: known only from the environment of the process writing
SECRET = f"{MARKER}sec1"  # a secret variable's value, which also appears inside XLA_FLAGS

# A value per kind of private thing, each spelling the marker in a way only its own rule removes.
PLANTS = [
    f"{HOME}/proj/lib",  # the writer's HOME, outside /home
    f"/home/{MARKER}/lib",  # the username in a home folder
    f"/data/{MARKER}/lib",  # the username as a word, lower case
    f"/data/{MARKER.upper()}/lib",  # and upper case
    f"/scratch/{MARKER}login-cache",  # LOGNAME, which differs from USER
    f"/scratch/{MARKER}u2-cache",  # USER, which differs from LOGNAME
    f"https://{MARKER}u1:p@ss{MARKER}p1@repo.example/simple",  # a URL password holding '@'
    f"https://conda.example/t/{MARKER}tok1/private/linux-64",  # a conda channel token
    f"https://{MARKER}host.corp.example:8443/x",  # the hostname in a URL
    f"{MARKER.upper()}HOST.CORP.EXAMPLE",  # the hostname in upper case
    f"/mnt/{MARKER}Host/x",  # the hostname's first label, mixed case
    "10.9.8.1-10.9.8.200",  # an IPv4 range
    "172.31.9.44",
]
SECRETS = {  # secret-looking names beyond TOKEN/KEY/PASSWORD
    "NCCL_DB_PASS": f"{MARKER}pass",
    "NCCL_SSH_PASSPHRASE": f"{MARKER}phrase",
    "NVIDIA_FTP_PWD": f"{MARKER}pwd",
    "CUDA_REPO_CREDS": f"{MARKER}creds",
    "NVIDIA_GITLAB_PAT": f"{MARKER}pat",
    "NVIDIA_API_TOKEN": SECRET,
}


def planted_env() -> Dict[str, str]:
    """Every variable the env probe keeps, each holding one of the plants (cycled)."""
    env = {name: PLANTS[i % len(PLANTS)] for i, name in enumerate(sorted(ENV_NAMES))}
    env["PATH"] = ":".join([f"{HOME}/miniforge3/envs/train/bin", *PLANTS[:6], "/usr/bin:/bin"])
    env["LD_LIBRARY_PATH"] = ":".join(PLANTS)
    env["CUDA_VISIBLE_DEVICES"] = "GPU-7d5c3e2b"  # a UUID prefix
    env["XLA_FLAGS"] = f"--xla_gpu_cuda_data_dir={HOME}/cuda --xla_dump_to=/tmp/{SECRET}/dump"
    env["NCCL_IB_ADDR_RANGE"] = "10.9.8.1-10.9.8.200"
    env.update(SECRETS)
    return env


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The conda-forge machine moved to HOME=/u/zqxmarkerhome, user zqxmarker, host
    zqxmarkerhost.corp.example, conda channels with tokens and credentials, every variable planted;
    the process writing the report has that HOME and USER/LOGNAME (monkeypatched, restored after)."""
    src = MACHINES / "conda-forge-pytorch-cuda12"
    dst = tmp_path / "planted"
    shutil.copytree(src, dst)
    (dst / "fs" / "u").mkdir()
    (dst / "fs" / "home" / "alice").rename(dst / "fs" / "u" / f"{MARKER}home")
    meta = dst / "fs" / "u" / f"{MARKER}home" / "miniforge3" / "envs" / "train" / "conda-meta"
    for i, path in enumerate(sorted(meta.glob("*.json"))):
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["channel"] = [f"https://conda.anaconda.org/t/{MARKER}tok2/conda-forge/linux-64",
                          f"https://{MARKER}cu:p@{MARKER}cp@conda.corp.example/t/{MARKER}tok3/gpu/linux-64",
                          f"https://conda.corp.example/{MARKER}/linux-64"][i % 3]
        doc["url"] = doc["channel"] + "/" + str(doc.get("fn", "x.conda"))
        path.write_text(json.dumps(doc), encoding="utf-8")
    text = (dst / "machine.json").read_text(encoding="utf-8").replace("/home/alice", HOME)
    data: Dict[str, Any] = json.loads(text.replace("ws-alice", f"{MARKER}host.corp.example").replace("alice", MARKER))
    data["env"].update(planted_env())
    data["nvml"]["devices"][0]["nvmlDeviceGetName"] = "NVIDIA RTX A6000"
    (dst / "machine.json").write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setenv("HOME", HOME)
    monkeypatch.setenv("USER", f"{MARKER}u2")
    monkeypatch.setenv("LOGNAME", f"{MARKER}login")
    return dst


def leaks(text: str) -> List[str]:
    return [m for m in [MARKER, *OTHER_MARKERS] if m.lower() in text.lower()]


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_the_marker_planted_everywhere_appears_in_no_format(planted: Path, fmt: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(["report", "--machine", str(planted), "--format", fmt, "--no-smoke"], capsys)
    assert code == 0, err
    assert leaks(out) == [], [line for line in out.splitlines() if leaks(line)][:5]
    _, plain, _ = cli(["report", "--machine", str(planted), "--format", "json", "--no-redact"], capsys)
    for plant in [*PLANTS, *SECRETS.values(), HOME, "tok3", "cp@"]:  # every plant reached the report (tok2: the parser drops it)
        assert plant in plain, plant
    if fmt == "json":
        doc = json.loads(out)
        env = doc["snapshot"]["env"]
        assert env["NCCL_DB_PASS"] == env["NVIDIA_GITLAB_PAT"] == REDACTED
        assert env["XLA_FLAGS"] == "--xla_gpu_cuda_data_dir=<home>/cuda --xla_dump_to=/tmp/<redacted>/dump"
        channels = {p["channel"] for p in doc["snapshot"]["packages"] if p.get("channel")}
        assert "https://<redacted>@conda.corp.example/t/<redacted>/gpu/linux-64" in channels
        assert "conda-forge" in channels  # the token is no channel name


# ------------------------------------------------------------------------------ the rules, one by one


def rd(snapshot: Snapshot, local: Identity = Identity()) -> Snapshot:
    return redact(make_report(snapshot), local=local)[0].snapshot


def test_home_outside_home_is_learned_from_the_writer() -> None:
    snap = Snapshot(python=PythonEnv(executable="/scratch/maya/env/bin/python", prefix="/scratch/maya/env"),
                    env={"CUDA_CACHE_PATH": "/scratch/maya/.nv", "NCCL_X": "/scratch/mayan/x /scratch/maya"})
    out = rd(snap, Identity(homes=("/scratch/maya/",)))
    assert out.python and out.python.executable == "<home>/env/bin/python"
    assert out.env == {"CUDA_CACHE_PATH": "<home>/.nv", "NCCL_X": "/scratch/mayan/x <home>"}
    assert rd(snap, Identity(homes=("/tmp", "/root", "/"))) == snap  # no one's home: nothing replaced


def test_local_identity_reads_the_environment_and_passwd() -> None:
    who = local_identity({"HOME": "/u/m", "USER": "maya", "LOGNAME": "mlogin", "SUDO_USER": "sue"})
    assert who.users[:3] == ("maya", "mlogin", "sue") and who.homes[0] == "/u/m"
    assert len(who.homes) == 2 or len(who.homes) == 1  # plus the passwd entry's home (the same or not)


def test_user_and_logname_that_differ_are_both_user_names() -> None:
    snap = Snapshot(host=HostInfo(username="maya"), env={"USER": "maya", "LOGNAME": "mkoval", "CUDA_X": "/d/mkoval/x"})
    assert (rd(snap).env or {})["CUDA_X"] == "/d/<user-2>/x"
    snap = Snapshot(env={"CUDA_X": "/d/MKOVAL/x and /d/Sue/y"})
    assert (rd(snap, Identity(users=("mkoval", "sue"))).env or {})["CUDA_X"] == "/d/<user>/x and /d/<user-2>/y"


def test_a_user_named_like_a_path_word_leaves_the_paths_alone() -> None:
    snap = Snapshot(host=HostInfo(username="dev"), env={"CUDA_X": "/dev/nvidia0", "CUDA_Y": "/usr/lib/torch"})
    assert rd(snap, Identity(users=("torch", "lib"))).env == snap.env


def test_conda_channel_tokens() -> None:
    url = "https://conda.anaconda.org/t/ab-1234-cdef/conda-forge/linux-64"
    snap = Snapshot(packages=(Package("pytorch", "2.5.1", "conda", channel=url),), env={"CONDA_X": f"{url}/x.conda"})
    out = rd(snap)
    assert out.packages and out.packages[0].channel == "https://conda.anaconda.org/t/<redacted>/conda-forge/linux-64"
    assert (out.env or {})["CONDA_X"] == "https://conda.anaconda.org/t/<redacted>/conda-forge/linux-64/x.conda"
    assert parse_conda_meta(json.dumps({"name": "x", "version": "1", "channel": url})) == \
        {"name": "x", "version": "1", "channel": "conda-forge"}


def test_a_url_password_with_at_signs_goes_whole() -> None:
    snap = Snapshot(env={"CUDA_URL": "https://me:p@ss@w0rd@host.example/x https://a@b.example/ y@z"})
    assert (rd(snap).env or {})["CUDA_URL"] == "https://<redacted>@host.example/x https://<redacted>@b.example/ y@z"


@pytest.mark.parametrize("name", ["DB_PASS", "SSH_PASSPHRASE", "FTP_PWD", "AWS_CREDS", "CREDENTIALS_FILE",
                                  "GITLAB_PAT", "nccl_db_pass", "HF_TOKEN", "API_KEY"])
def test_secret_looking_names(name: str) -> None:
    assert is_secret_name(name)
    snap = Snapshot(env={name: "s3cr3tvalue", "CUDA_Y": f"{name}=other1 and --{name.lower()} other2"})
    assert rd(snap).env == {name: REDACTED, "CUDA_Y": f"{name}=<redacted> and --{name.lower()} <redacted>"}


@pytest.mark.parametrize("name", ["PATH", "LD_LIBRARY_PATH", "PWD", "OLDPWD", "COMPASS", "CUDA_PATCH", "BYPASS_X",
                                  "CUDA_COMPAT", "NCCL_PASSTHROUGH"])
def test_names_that_only_look_like_secret_ones(name: str) -> None:
    assert not is_secret_name(name)


def test_ip_ranges() -> None:
    snap = Snapshot(env={"NCCL_RANGE": "10.0.0.1-10.0.0.9", "NCCL_ONE": "10.0.0.1", "CUDA_V": "cuda-12.4.1.2"})
    assert rd(snap).env == {"NCCL_RANGE": "<ip-1>-<ip-2>", "NCCL_ONE": "<ip-1>", "CUDA_V": "cuda-12.4.1.2"}


def test_a_secret_value_inside_another_variable_whatever_its_length() -> None:
    env = {"NVIDIA_API_KEY": "k9Zx", "HF_TOKEN": "longersecretvalue", "DEBUG_TOKEN": "true", "ONE_KEY": "1",
           "XLA_FLAGS": "--a=k9Zx --b=/x/longersecretvalue.d --c=true --d=1 --e=k9Zxy"}
    out = rd(Snapshot(env=env)).env or {}
    # 4+ characters: replaced where it stands as a word; 8+: inside words too; "true" or "1": kept
    assert out["XLA_FLAGS"] == "--a=<redacted> --b=/x/<redacted>.d --c=true --d=1 --e=k9Zxy"
    assert all(out[k] == REDACTED for k in ("NVIDIA_API_KEY", "HF_TOKEN", "DEBUG_TOKEN", "ONE_KEY"))


def test_redacting_twice_changes_nothing_more() -> None:
    snap = Snapshot(env={"CUDA_URL": "https://u:p@q@h.example/t/tok/x", "NCCL_RANGE": "10.0.0.1-10.0.0.9"})
    once = rd(snap)
    assert rd(once) == once
    assert not re.search(r"tok|p@q", json.dumps(once.env))


def test_redact_texts_tells_versions_from_addresses() -> None:
    """Lines outside a report (what triage quotes): a dotted quad after a version word or in a
    package list's column is a version; after an address word or in prose, an address."""
    from cudadoctor.reports.redact import redact_texts

    texts = ["nvidia-cudnn-cu12        8.9.2.26", "cuDNN version: 8.9.7.29", "torch==1.2.3.4",
             "inet 34.12.1.9/24", "connect to 52.1.2.3 failed", "again 52.1.2.3",
             "  File \"/home/maya/x.py\", line 3", "https://bob:pw@host.example/y", "token ghp_" + "a" * 36]
    out, summary = redact_texts(texts)
    assert out[:3] == tuple(texts[:3])
    assert out[3:6] == ("inet <ip-1>/24", "connect to <ip-2> failed", "again <ip-2>")
    assert out[6:] == ('  File "/home/<user>/x.py", line 3', "https://<redacted>@host.example/y", "token <redacted>")
    assert summary.counts["ip"] == 2
