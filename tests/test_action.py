"""The GitHub Action (action.yml) and the GitLab job of docs/ci.md, run for real on this machine by
tools/run_action.py: a wheel built from this checkout, installed by the action into its own venv,
offline (the dependencies come from a wheelhouse repacked from this test environment).

On a machine without an NVIDIA GPU (this one, and CI's), `cudadoctor check` finds an error, so the
action must fail the job; with `fail-on: never`, or replaying a healthy recorded H200, it passes.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from ci_yaml import Value, YamlSubsetError, load  # noqa: E402
from run_action import (  # noqa: E402
    ActionError, ActionRun, load_action, marked_blocks, run_action, run_gitlab_job,
)

ACTION = REPO / "action.yml"
DOCS = REPO / "docs" / "ci.md"
H200 = REPO / "tests" / "machines" / "h200-driver580-torch211-cu130"
STEP_TIMEOUT_S = 300


def _job_env() -> Dict[str, str]:
    """This process's environment less what would point cudadoctor or pip at this test venv."""
    drop = ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PYTHONHOME", "CUDADOCTOR_DATA_DIR", "CUDADOCTOR_DATA_HOME")
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PIP_")}


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory, wheelhouse: Tuple[Path, Path]) -> Iterator[Dict[str, str]]:
    """One job's RUNNER_TEMP and workspace, and the inputs that install the wheel offline. The
    tests below use the action in this job one after the other, as a workflow may."""
    root = tmp_path_factory.mktemp("job")
    (root / "temp").mkdir()
    (root / "workspace").mkdir()
    house, wheel = wheelhouse
    yield {"runner_temp": str(root / "temp"), "workspace": str(root / "workspace"), "package": str(wheel),
           "pip-args": f"--no-index --find-links {house}", "python": sys.executable}


def _run(job: Dict[str, str], **inputs: str) -> ActionRun:
    given = {"package": job["package"], "pip-args": job["pip-args"], "python": job["python"], **inputs}
    return run_action(str(ACTION), given, env=_job_env(), runner_temp=job["runner_temp"],
                      workspace=job["workspace"], timeout_s=STEP_TIMEOUT_S)


def _log(run: ActionRun) -> str:
    return "\n".join(f"--- {s.id}: {s.outcome} ({s.exit_code})\n{s.log}" for s in run.steps)


# ---------------------------------------------------------------------------- the action, run


@pytest.fixture(scope="module")
def failing(job: Dict[str, str]) -> ActionRun:
    """The action with its defaults on this machine, which has no NVIDIA GPU."""
    return _run(job)


def test_the_action_fails_the_job_on_a_machine_without_a_gpu(failing: ActionRun) -> None:
    assert [(s.id, s.outcome) for s in failing.steps] == [
        ("install", "success"), ("check", "success"), ("report", "success"), ("upload", "success"),
        ("verdict", "failure"), ("triage", "skipped")], _log(failing)
    assert failing.success is False
    assert failing.step("verdict").exit_code == 1
    assert failing.outputs["exit-code"] == "1"
    assert "no-nvidia-gpu" in failing.outputs["verdict"] and "\n" not in failing.outputs["verdict"]
    assert "::error title=cudadoctor check exited 1::" in failing.step("verdict").log
    # the check's own output is in the job log, the verdict first
    assert "✗ 1 problem: this machine has no NVIDIA GPU" in failing.step("check").log


def test_the_summary_is_the_redacted_markdown_report(failing: ActionRun) -> None:
    assert failing.summary.startswith("### cudadoctor report\n")
    assert "this machine has no NVIDIA GPU" in failing.summary
    hostname = socket.gethostname().split(".")[0]
    assert not re.search(rf"(?i)\b{re.escape(hostname)}\b", failing.summary)
    assert "Redacted by cudadoctor" in failing.summary


def test_the_artifact_holds_the_json_report(failing: ActionRun, job: Dict[str, str]) -> None:
    report = failing.outputs["report"]
    assert report == os.path.join(job["runner_temp"], "cudadoctor", "report.json")
    (upload,) = failing.uploads
    assert upload.name == "cudadoctor-report"
    assert upload.missing == () and report in upload.paths
    document = json.loads(Path(report).read_text())
    assert document["format"] == "cudadoctor.report"
    assert document["snapshot"]["host"]["hostname"] == "<hostname>"
    assert any(f["code"] == "no-nvidia-gpu" for f in document["findings"])


def test_fail_on_never_lets_the_job_pass_and_target_python_is_inspected(job: Dict[str, str]) -> None:
    run = _run(job, **{"fail-on": "never", "artifact-name": "cudadoctor-never", "target-python": sys.executable})
    assert run.success, _log(run)
    assert run.outputs["exit-code"] == "0"
    assert run.uploads[0].name == "cudadoctor-never"
    # check and report both looked at this test environment, not at cudadoctor's own venv
    assert f"target {sys.executable} (" in run.step("check").log
    document = json.loads(Path(run.outputs["report"]).read_text())
    assert os.path.basename(document["snapshot"]["python"]["executable"]) == os.path.basename(sys.executable)
    assert "cudadoctor/venv" not in document["snapshot"]["python"]["executable"]


def test_a_healthy_machine_passes(job: Dict[str, str]) -> None:
    replay = f"--machine {H200}"
    run = _run(job, args=replay, **{"report-args": replay})
    assert run.success, _log(run)
    assert run.outputs["exit-code"] == "0"
    assert "✓ No problems found." in run.step("check").log
    assert run.outputs["verdict"].endswith("✓ no problems found")
    assert "NVIDIA H200" in run.outputs["verdict"]


def test_a_wrong_argument_fails_with_the_usage_code_and_stays_data(job: Dict[str, str]) -> None:
    """An input is data: a command substitution in it reaches cudadoctor as characters. (Pasted
    into the script as ${{ inputs.args }}, quoted or not, it would create the marker file.)"""
    marker = Path(job["workspace"]) / "pwned"
    run = _run(job, args=f"--no-such$(touch {marker})")
    assert not marker.exists()
    assert not run.success
    assert run.outputs["exit-code"] == "2", _log(run)
    log = run.step("check").log  # click words it "No such option: X" or "No such option 'X'" by version
    assert "No such option" in log and "--no-such$(touch" in log, log
    assert run.step("report").outcome == "success"  # the report is still written


def test_a_package_pip_cannot_install_stops_before_check(job: Dict[str, str]) -> None:
    run = _run(job, package=str(Path(job["package"]).with_name("cudadoctor-9.9.9-py3-none-any.whl")))
    assert [(s.id, s.outcome) for s in run.steps] == [
        ("install", "failure"), ("check", "skipped"), ("report", "skipped"), ("upload", "skipped"),
        ("verdict", "skipped"), ("triage", "skipped")]
    assert run.uploads == ()


# ---------------------------------------------------------------------------- the triage mode, run

TRIAGE_DOCS = REPO / "docs" / "triage.md"
JOB_TOKEN = "ghs_jobtoken"


def _triage_workflow() -> Dict[str, Value]:
    (text,) = [t for kind, name, t in marked_blocks(TRIAGE_DOCS.read_text()) if kind == "workflow" and name == "triage"]
    return _mapping(load(text))


def _triage_with() -> Dict[str, str]:
    """The ``with:`` of docs/triage.md's workflow: the test runs the action as the docs show it."""
    (step,) = _mapping(_mapping(_triage_workflow()["jobs"])["triage"])["steps"]  # type: ignore[misc]
    assert str(_mapping(step)["uses"]).startswith("OWNER/cudadoctor@")
    return {k: str(v) for k, v in _mapping(_mapping(step)["with"]).items()}


def test_the_triage_workflow_asks_for_issues_write_only_and_reads_no_issue_text() -> None:
    workflow = _triage_workflow()
    assert workflow["permissions"] == {"issues": "write"}
    assert workflow["on"] == {"issues": {"types": ["opened", "edited"]}}
    assert _triage_with()["mode"] == "triage"
    declared = load_action(str(ACTION))["inputs"]
    assert isinstance(declared, dict) and set(_triage_with()) <= set(declared)
    (block,) = [t for kind, name, t in marked_blocks(TRIAGE_DOCS.read_text()) if kind == "workflow"]
    for text in (block, ACTION.read_text()):
        assert "github.event" not in text  # the event reaches cudadoctor as $GITHUB_EVENT_PATH only


def test_the_triage_mode_replies_to_the_issue_of_the_event(job: Dict[str, str], tmp_path: Path) -> None:
    """The action in triage mode, as docs/triage.md's workflow uses it, on an `issues` event whose
    body is a real report and carries shell syntax: the reply is posted (then edited in place on
    the next event), the label added, the job passes, and nothing in the issue runs."""
    from github_stub import FakeGitHub, User
    from helpers import corpus_right_today

    slug, category, text, _, _ = [c for c in corpus_right_today() if c[3] == "holds"][0]
    marker = Path(job["workspace"]) / "pwned"
    hostile = f"\n$(touch {marker}) `touch {marker}` \"; touch {marker}; #\n"
    stub = FakeGitHub(tokens={JOB_TOKEN: User("github-actions[bot]", "Bot")}).start()
    try:
        key = stub.add_issue("acme", "trainer", 5, text + hostile, title=f"CUDA fails $(touch {marker})")
        event = tmp_path / "event.json"

        def run_event(action: str) -> ActionRun:
            event.write_text(json.dumps({"action": action, "issue": stub.issues[key], "repository": {
                "full_name": "acme/trainer", "url": f"{stub.url}/repos/acme/trainer"}}))
            env = {**_job_env(), "GITHUB_EVENT_PATH": str(event), "GITHUB_EVENT_NAME": "issues",
                   "GITHUB_API_URL": stub.url}
            env.pop("GITHUB_TOKEN", None)
            env.pop("GH_TOKEN", None)
            given = {"package": job["package"], "pip-args": job["pip-args"], "python": job["python"], **_triage_with()}
            return run_action(str(ACTION), given, env=env, runner_temp=job["runner_temp"], workspace=job["workspace"],
                              timeout_s=STEP_TIMEOUT_S, github_token=JOB_TOKEN)

        run = run_event("opened")
        assert [(s.id, s.outcome) for s in run.steps] == [
            ("install", "success"), ("check", "skipped"), ("report", "skipped"), ("upload", "skipped"),
            ("verdict", "skipped"), ("triage", "success")], _log(run)
        assert run.success and run.outputs["exit-code"] == "1" and run.outputs["category"] == category
        (reply,) = stub.comments[key]
        assert reply["user"]["login"] == "github-actions[bot]"
        assert reply["body"].startswith("<!-- cudadoctor-triage -->") and f"`{slug}`" not in reply["body"]
        assert Path(run.outputs["reply"]).read_text() == reply["body"]
        assert reply["body"] in run.summary
        assert stub.labels[key] == [f"cudadoctor: {category}"]
        assert all(s.authorization == f"Bearer {JOB_TOKEN}" for s in stub.seen)

        stub.issues[key]["body"] = "Edited: more below.\n" + stub.issues[key]["body"]  # the lines move
        run = run_event("edited")
        assert run.success, _log(run)
        assert len(stub.comments[key]) == 1 and len(stub.requests("PATCH")) == 1
        assert not marker.exists()
    finally:
        stub.stop()


def test_the_triage_mode_fails_the_job_only_when_triage_fails(job: Dict[str, str], tmp_path: Path) -> None:
    event = tmp_path / "push.json"
    event.write_text(json.dumps({"ref": "refs/heads/main", "commits": []}))
    env = {**_job_env(), "GITHUB_EVENT_PATH": str(event)}
    given = {"package": job["package"], "pip-args": job["pip-args"], "python": job["python"], "mode": "triage"}
    run = run_action(str(ACTION), given, env=env, runner_temp=job["runner_temp"], workspace=job["workspace"],
                     timeout_s=STEP_TIMEOUT_S, github_token=JOB_TOKEN)
    assert not run.success and run.step("triage").exit_code == 2
    assert "not an issue" in run.step("triage").log
    run = run_action(str(ACTION), {**given, "mode": "tirage"}, env=env, runner_temp=job["runner_temp"],
                     workspace=job["workspace"], timeout_s=STEP_TIMEOUT_S)
    assert run.step("install").outcome == "failure" and "mode must be check or triage" in run.step("install").log


# ---------------------------------------------------------------------------- the GitLab job, run


def _gitlab_job() -> Tuple[str, Dict[str, Value]]:
    (text,) = [t for kind, name, t in marked_blocks(DOCS.read_text()) if kind == "job" and name == "gitlab"]
    config = load(text)
    assert len(config) == 1
    name, job = next(iter(config.items()))
    assert isinstance(job, dict)
    return name, job


def test_the_gitlab_job_writes_its_artifacts_and_fails_without_a_gpu(
        tmp_path: Path, wheelhouse: Tuple[Path, Path]) -> None:
    name, job = _gitlab_job()
    assert job["tags"] == ["gpu"]
    house, wheel = wheelhouse
    # pipeline variables outrank the job's own (GitLab's precedence): the wheel, offline
    overrides = {"CUDADOCTOR_PACKAGE": str(wheel), "CUDADOCTOR_PIP_ARGS": f"--no-index --find-links {house}",
                 "CUDADOCTOR_PYTHON": sys.executable}
    run = run_gitlab_job(job, env=_job_env(), overrides=overrides, project_dir=str(tmp_path),
                         timeout_s=STEP_TIMEOUT_S)
    assert run.exit_code == 1, run.log
    assert run.missing == ()
    assert sorted(os.path.relpath(p, tmp_path) for p in run.artifacts) == [
        ".cudadoctor/report.json", ".cudadoctor/report.md", ".cudadoctor/verdict.txt"]
    assert (tmp_path / ".cudadoctor" / "report.md").read_text().startswith("### cudadoctor report\n")
    assert "✗ no-nvidia-gpu" in run.log  # the verdict line, printed before check decides


# ---------------------------------------------------------------------------- the docs match


def _commands(script: str) -> List[str]:
    """The lines that run the chosen Python, the venv's pip or cudadoctor: they start with
    "$CUDADOCTOR_ (the rest of a script is plumbing for one CI system or the other)."""
    return [line.strip() for line in script.splitlines() if line.strip().startswith('"$CUDADOCTOR_')]


def _action_scripts() -> Dict[str, str]:
    steps = load_action(str(ACTION))["runs"]
    assert isinstance(steps, dict) and isinstance(steps["steps"], list)
    return {str(s["id"]): str(s["run"]) for s in steps["steps"] if isinstance(s, dict) and "run" in s}


def test_the_docs_spell_out_the_actions_commands() -> None:
    scripts = _action_scripts()
    blocks = {name: text for kind, name, text in marked_blocks(DOCS.read_text()) if kind == "step"}
    assert sorted(blocks) == ["check", "install", "report"]
    for step, text in blocks.items():
        assert _commands(text) == _commands(scripts[step]), step
        assert _commands(text)


def test_the_gitlab_job_runs_the_same_commands() -> None:
    scripts = _action_scripts()
    _, job = _gitlab_job()
    script = job["script"]
    assert isinstance(script, list)
    # GitLab stops at the first failing line, so check, which decides, comes last
    expected = _commands(scripts["install"]) + _commands(scripts["report"]) + _commands(scripts["check"])
    assert _commands("\n".join(str(line) for line in script)) == expected


def test_the_docs_workflows_use_only_declared_inputs() -> None:
    declared = load_action(str(ACTION))["inputs"]
    assert isinstance(declared, dict)
    workflows = [text for kind, _, text in marked_blocks(DOCS.read_text()) if kind == "workflow"]
    assert len(workflows) == 2
    used: List[str] = []
    for text in workflows:
        for job in _mapping(load(text)["jobs"]).values():
            steps = _mapping(job)["steps"]
            assert isinstance(steps, list)
            for step in steps:
                if str(_mapping(step).get("uses", "")).startswith("OWNER/cudadoctor@"):
                    used.extend(_mapping(_mapping(step).get("with", {})))
    assert used and set(used) <= set(declared)


def _mapping(value: object) -> Dict[str, Value]:
    assert isinstance(value, dict)
    return value


# ---------------------------------------------------------------------------- injection


def test_no_run_script_interpolates_an_expression() -> None:
    """GitHub pastes ${{ ... }} into a script before bash reads it: an input holding `"; rm -rf ~`
    would run. Inputs reach the scripts through env: only."""
    for step, script in _action_scripts().items():
        assert "${{" not in script, step
    text = ACTION.read_text()
    for block in re.findall(r"run: \|\n((?:[ ]{8}.*\n|\n)+)", text):
        assert "${{" not in block


# ---------------------------------------------------------------------------- the YAML subset


@pytest.mark.parametrize("text, message", [
    ("a: &x 1\n", "outside the subset"),
    ("a: *x\n", "outside the subset"),
    ("a: !tag 1\n", "outside the subset"),
    ("a: {b: 1}\n", "outside the subset"),
    ("a: >\n  folded\n", "outside the subset"),
    ("a: |+\n  kept\n", "only '|' and '|-'"),
    ("a: |2\n  x\n", "only '|' and '|-'"),
    ("a:\n", "empty value"),
    ("a: b\na: c\n", "duplicate key"),
    ("a: one\n  two\n", "unexpected indentation"),
    ("a: 'open\n", "must end on its line"),
    ('a: "\\x41"\n', "escape"),
    ("a: b: c\n", "': ' in a plain scalar"),
    ("---\na: 1\n", "document markers"),
    ("a:\n\tb: 1\n", "tab"),
    ("- a\n", "must be a mapping"),
    ("a: [b, {c: d}]\n", "flow sequence"),
    ("? a\n: b\n", "expected 'key: value'"),
])
def test_the_reader_refuses_yaml_outside_its_subset(text: str, message: str) -> None:
    with pytest.raises(YamlSubsetError, match=re.escape(message)):
        load(text)


def test_the_reader_reads_its_subset() -> None:
    text = (
        "# a comment\n"
        "name: plain words  # and a comment\n"
        "quoted: 'it''s'\n"
        'double: "a \\"b\\"\\n"\n'
        "tags: [self-hosted, 'gpu']\n"
        "list:\n"
        "- x\n"
        "steps:\n"
        "  - id: one\n"
        "    run: |\n"
        "      echo \"$A\"  # not a comment: shell\n"
        "\n"
        "      exit 0\n"
        "    with:\n"
        "      path: |-\n"
        "        a\n"
        "        b\n"
        "  - '\"$X\" -m venv'\n"
    )
    assert load(text) == {
        "name": "plain words", "quoted": "it's", "double": 'a "b"\n', "tags": ["self-hosted", "gpu"], "list": ["x"],
        "steps": [{"id": "one", "run": 'echo "$A"  # not a comment: shell\n\nexit 0\n', "with": {"path": "a\nb"}},
                  '"$X" -m venv'],
    }


def test_the_runner_refuses_what_it_cannot_emulate(tmp_path: Path) -> None:
    action = tmp_path / "action.yml"
    action.write_text("runs:\n  using: composite\n  steps:\n    - run: echo\n      shell: pwsh\n")
    with pytest.raises(ActionError, match="shell: bash"):
        load_action(str(action))
    action.write_text("runs:\n  using: node20\n  main: index.js\n")
    with pytest.raises(ActionError, match="composite"):
        load_action(str(action))
    action.write_text("runs:\n  using: composite\n  steps:\n    - run: echo\n      shell: bash\n"
                      "      if: github.event_name == 'push' || failure()\n")
    with pytest.raises(ActionError, match="only '&&'"):
        run_action(str(action), {}, env=_job_env(), runner_temp=str(tmp_path), workspace=str(tmp_path))


def test_the_runner_behaves_like_github_on_a_small_action(tmp_path: Path) -> None:
    """Expressions pasted into run: (the injection the test above guards against), $GITHUB_ENV
    for later steps, multi-line outputs, and failure() after a failed step."""
    action = tmp_path / "action.yml"
    action.write_text(
        "inputs:\n  who:\n    default: world\noutputs:\n  said:\n    value: ${{ steps.two.outputs.said }}\n"
        "runs:\n  using: composite\n  steps:\n"
        "    - id: one\n      shell: bash\n      run: |\n        echo \"GREETING=hello ${{ inputs.who }}\" >> \"$GITHUB_ENV\"\n"
        "    - id: two\n      shell: bash\n      run: |\n"
        "        printf 'said<<EOF\\n%s\\nagain\\nEOF\\n' \"$GREETING\" >> \"$GITHUB_OUTPUT\"\n        exit 3\n"
        "    - id: three\n      shell: bash\n      run: echo never\n"
        "    - id: four\n      if: failure() && steps.two.outcome == 'failure'\n      shell: bash\n      run: echo cleanup\n"
    )
    run = run_action(str(action), {"who": "$(echo you)"}, env=_job_env(), runner_temp=str(tmp_path),
                     workspace=str(tmp_path))
    assert [(s.id, s.outcome, s.exit_code) for s in run.steps] == [
        ("one", "success", 0), ("two", "failure", 3), ("three", "skipped", None), ("four", "success", 0)]
    assert run.outputs == {"said": "hello you\nagain"}
    assert run.step("four").log == "cleanup\n"
