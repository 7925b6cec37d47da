"""Run the composite action (action.yml) and the GitLab job of docs/ci.md on this machine, as
GitHub Actions and GitLab CI would, without either: for tests/test_action.py and for trying an
edit before pushing it.

    python tools/run_action.py --input package=dist/cudadoctor-0.1.0-py3-none-any.whl
    python tools/run_action.py --input fail-on=never --input args=--no-smoke
    python tools/run_action.py --gitlab docs/ci.md

What it does like GitHub: declared inputs with their defaults (an undeclared one is an error);
``${{ inputs.x }}``, ``${{ steps.<id>.outputs.<name> }}``, ``${{ steps.<id>.outcome }}`` and
``${{ runner.temp }}`` and ``${{ github.token }}`` in ``run:``, ``env:``, ``with:``, ``if:``, the outputs and the
inputs' defaults; ``if:`` with ``always()``,
``success()``, ``failure()``, ``==``, ``!=`` and ``&&`` (``success()`` is implied when no status
function is named); every ``run:`` step through ``bash --noprofile --norc -eo pipefail`` with
``$GITHUB_OUTPUT``, ``$GITHUB_ENV``, ``$GITHUB_PATH``, ``$GITHUB_STEP_SUMMARY`` and ``$RUNNER_TEMP``.
Like GitHub for composite actions it sets no ``INPUT_*`` variables, so a script that relies on
them fails here too. ``uses:`` steps are not run: actions/upload-artifact's ``with:`` is checked
(a ``path`` line that names no file fails the step under ``if-no-files-found: error``); any other
action is an error. Like GitLab: ``variables:`` expanded in order, the ``script:`` lines in one
``bash`` with ``set -eo pipefail``, and ``artifacts:`` (``paths``, ``when``) checked.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ci_yaml import Value, YamlSubsetError, load  # noqa: E402  (a sibling module when run as a script or imported by tests)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEP_KEYS = {"id", "name", "if", "shell", "run", "env", "uses", "with", "working-directory"}
UPLOAD = "actions/upload-artifact@v4"
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_MARKER = re.compile(r"<!--\s*ci-([a-z]+):\s*([\w.-]+)\s*-->\s*\n```[\w-]*\n(.*?)\n```", re.S)


class ActionError(Exception):
    """action.yml (or the GitLab job) asks for something this runner does not do, or is malformed."""


@dataclass(frozen=True)
class StepResult:
    id: str
    name: str
    outcome: str  # success | failure | skipped
    exit_code: Optional[int]  # None: not a run step, or skipped
    outputs: Dict[str, str] = field(default_factory=dict)
    log: str = ""


@dataclass(frozen=True)
class Upload:
    """What actions/upload-artifact was given, and which of its paths named no file."""

    name: str
    paths: Tuple[str, ...]
    missing: Tuple[str, ...]


@dataclass(frozen=True)
class ActionRun:
    success: bool
    steps: Tuple[StepResult, ...]
    outputs: Dict[str, str]
    summary: str  # $GITHUB_STEP_SUMMARY of every step, in order
    uploads: Tuple[Upload, ...]

    def step(self, step_id: str) -> StepResult:
        return next(s for s in self.steps if s.id == step_id)


@dataclass(frozen=True)
class GitlabRun:
    exit_code: int
    log: str
    artifacts: Tuple[str, ...]  # the paths collected (absolute)
    missing: Tuple[str, ...]  # artifact paths that named no file


def marked_blocks(markdown: str) -> List[Tuple[str, str, str]]:
    """``(kind, name, text)`` of each fenced block that follows ``<!-- ci-KIND: NAME -->``."""
    return [(m.group(1), m.group(2), m.group(3) + "\n") for m in _MARKER.finditer(markdown)]


def load_action(path: str) -> Dict[str, Value]:
    """action.yml, read and checked against what a composite action of this runner may hold."""
    with open(path, encoding="utf-8") as fh:
        action = load(fh.read())
    runs = _mapping(action.get("runs"), "runs")
    if runs.get("using") != "composite":
        raise ActionError("runs.using: only composite actions are run here")
    for i, step in enumerate(_steps(action)):
        unknown = set(step) - STEP_KEYS
        if unknown:
            raise ActionError(f"runs.steps[{i}]: unknown key {sorted(unknown)[0]!r}")
        if ("run" in step) == ("uses" in step):
            raise ActionError(f"runs.steps[{i}]: needs exactly one of run and uses")
        if "run" in step and step.get("shell") != "bash":
            raise ActionError(f"runs.steps[{i}]: a composite run step needs 'shell: bash' here")
    return action


def run_action(path: str, inputs: Mapping[str, str], *, env: Mapping[str, str], runner_temp: str,
               workspace: str, timeout_s: float = 600, github_token: str = "") -> ActionRun:
    """Run the composite action at ``path`` with ``inputs``, in ``workspace``, as one job would.
    ``github_token`` is the job's token (``${{ github.token }}``)."""
    action = load_action(path)
    declared = _mapping(action.get("inputs", {}), "inputs")
    unknown = set(inputs) - set(declared)
    if unknown:
        raise ActionError(f"unexpected input {sorted(unknown)[0]!r}")
    context = _Context({}, runner_temp, workspace, os.path.dirname(os.path.abspath(path)), github_token)
    # a default may be an expression (${{ github.token }}): GitHub evaluates it, so does this runner
    context.inputs = {name: inputs[name] if name in inputs else context.substitute(
        _text(_mapping(spec, f"inputs.{name}").get("default", ""), name)) for name, spec in declared.items()}
    job_env = dict(env)
    path_prefix: List[str] = []
    results: List[StepResult] = []
    summary: List[str] = []
    uploads: List[Upload] = []
    for i, step in enumerate(_steps(action)):
        step_id = _text(step.get("id", f"step{i}"), "id")
        name = _text(step.get("name", step_id), "name")
        failed = any(r.outcome == "failure" for r in results)
        if not context.condition(_text(step.get("if", ""), "if"), failed):
            results.append(StepResult(step_id, name, "skipped", None))
            context.steps[step_id] = ("skipped", {})
            continue
        if "uses" in step:
            upload = _upload(step, context)
            uploads.append(upload)
            outcome = "failure" if upload.missing and _if_no_files(step, context) == "error" else "success"
            results.append(StepResult(step_id, name, outcome, None))
            context.steps[step_id] = (outcome, {})
            continue
        result, files = _run_step(step, step_id, name, context, job_env, path_prefix, timeout_s)
        results.append(result)
        summary.append(files["GITHUB_STEP_SUMMARY"])
        job_env.update(_command_file(files["GITHUB_ENV"]))
        path_prefix[:0] = [line for line in files["GITHUB_PATH"].splitlines() if line.strip()]
        context.steps[step_id] = (result.outcome, result.outputs)
    outputs = {name: context.substitute(_text(_mapping(spec, f"outputs.{name}").get("value", ""), name))
               for name, spec in _mapping(action.get("outputs", {}), "outputs").items()}
    ok = all(r.outcome != "failure" for r in results)
    return ActionRun(ok, tuple(results), outputs, "".join(summary), tuple(uploads))


class _Context:
    """The expression contexts a composite action's steps see: inputs, steps, runner, github."""

    def __init__(self, inputs: Dict[str, str], runner_temp: str, workspace: str, action_path: str,
                 github_token: str = "") -> None:
        self.inputs = inputs
        self.values = {"runner.temp": runner_temp, "github.workspace": workspace, "github.action_path": action_path,
                       "github.token": github_token}
        self.steps: Dict[str, Tuple[str, Dict[str, str]]] = {}

    def value(self, expr: str) -> str:
        expr = expr.strip()
        literal = re.fullmatch(r"'((?:[^']|'')*)'", expr)
        if literal:
            return literal.group(1).replace("''", "'")
        if expr.startswith("inputs."):
            name = expr[len("inputs."):]
            if name not in self.inputs:
                raise ActionError(f"${{{{ {expr} }}}}: no such input")
            return self.inputs[name]
        match = re.fullmatch(r"steps\.([\w-]+)\.(outputs\.([\w-]+)|outcome|conclusion)", expr)
        if match:
            outcome, outputs = self.steps.get(match.group(1), ("", {}))
            return outputs.get(match.group(3), "") if match.group(3) else outcome
        if expr in self.values:
            return self.values[expr]
        raise ActionError(f"${{{{ {expr} }}}}: an expression this runner does not evaluate")

    def substitute(self, text: str) -> str:
        return _EXPR.sub(lambda m: self.value(m.group(1)), text)

    def condition(self, text: str, failed: bool) -> bool:
        """GitHub's ``if:``: ``&&`` of status functions and comparisons; success() unless one is named."""
        inner = _EXPR.fullmatch(text.strip())
        expr = inner.group(1) if inner else text.strip()
        if not expr:
            return not failed
        if re.search(r"\|\||!(?!=)|\(\s*[^)\s]", expr):
            raise ActionError(f"if: {text!r}: only '&&' of status functions and comparisons is evaluated here")
        status = {"always()": True, "success()": not failed, "failure()": failed, "cancelled()": False}
        result, named = True, False
        for term in (t.strip() for t in expr.split("&&")):
            if term in status:
                result, named = result and status[term], True
                continue
            match = re.fullmatch(r"(.+?)\s*(==|!=)\s*(.+)", term)
            if match is None:
                raise ActionError(f"if: {term!r}: not a status function or a comparison")
            equal = self.value(match.group(1)) == self.value(match.group(3))
            result = result and (equal if match.group(2) == "==" else not equal)
        return result and (named or not failed)


def _run_step(step: Mapping[str, Value], step_id: str, name: str, context: _Context, job_env: Mapping[str, str],
              path_prefix: Sequence[str], timeout_s: float) -> Tuple[StepResult, Dict[str, str]]:
    names = ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY")
    with tempfile.TemporaryDirectory(prefix=f"step-{step_id}-") as scratch:
        files = {n: os.path.join(scratch, n.lower()) for n in names}
        for file in files.values():
            open(file, "w").close()
        script = os.path.join(scratch, "script.sh")
        with open(script, "w", encoding="utf-8") as fh:
            # GitHub pastes expressions into the script before bash reads it (the injection that
            # tests/test_action.py guards against): so does this runner
            fh.write(context.substitute(_text(step["run"], "run")))
        env = dict(job_env)
        env.update({"RUNNER_TEMP": context.values["runner.temp"], "GITHUB_WORKSPACE": context.values["github.workspace"],
                    "GITHUB_ACTION_PATH": context.values["github.action_path"], "CI": "true", "GITHUB_ACTIONS": "true"})
        env.update(files)
        if path_prefix:
            env["PATH"] = os.pathsep.join([*path_prefix, env.get("PATH", "")])
        for key, value in _mapping(step.get("env", {}), f"{step_id}.env").items():
            env[key] = context.substitute(_text(value, key))
        cwd = context.values["github.workspace"]
        if "working-directory" in step:
            cwd = os.path.join(cwd, context.substitute(_text(step["working-directory"], "working-directory")))
        code, log = run_bash(["bash", "--noprofile", "--norc", "-eo", "pipefail", script], env, cwd, timeout_s)
        contents = {}
        for key, file in files.items():
            with open(file, encoding="utf-8") as fh:
                contents[key] = fh.read()
    outputs = _command_file(contents["GITHUB_OUTPUT"])
    return StepResult(step_id, name, "success" if code == 0 else "failure", code, outputs, log), contents


def run_bash(argv: Sequence[str], env: Mapping[str, str], cwd: str, timeout_s: float) -> Tuple[int, str]:
    """Exit code and output (stdout and stderr together); on timeout the whole process group is
    killed (pip and cudadoctor's children with it) and the code is 124, as timeout(1) gives."""
    proc = subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return 124, out.decode("utf-8", "replace") + f"\n[run_action] killed after {timeout_s:g} s\n"
    return proc.returncode, out.decode("utf-8", "replace")


def _command_file(text: str) -> Dict[str, str]:
    """``name=value`` lines and ``name<<DELIMITER`` blocks, as in $GITHUB_OUTPUT and $GITHUB_ENV."""
    out: Dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        heredoc = re.fullmatch(r"([^=<]+)<<(.+)", line)
        if heredoc:
            body: List[str] = []
            while i < len(lines) and lines[i] != heredoc.group(2):
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise ActionError(f"command file: {heredoc.group(1)}: no closing {heredoc.group(2)}")
            i += 1
            out[heredoc.group(1)] = "\n".join(body)
        elif "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
        else:
            raise ActionError(f"command file: {line!r} is neither name=value nor name<<DELIMITER")
    return out


def _upload(step: Mapping[str, Value], context: _Context) -> Upload:
    if step["uses"] != UPLOAD:
        raise ActionError(f"uses: {step['uses']!r}: only {UPLOAD} is known to this runner")
    given = {k: context.substitute(_text(v, k)) for k, v in _mapping(step.get("with", {}), "with").items()}
    unknown = set(given) - {"name", "path", "if-no-files-found", "retention-days", "compression-level", "overwrite"}
    if unknown or not given.get("name") or not given.get("path", "").strip():
        raise ActionError(f"{UPLOAD}: needs a name and a path (unknown: {sorted(unknown)})")
    paths = tuple(line.strip() for line in given["path"].splitlines() if line.strip())
    missing = tuple(p for p in paths if not glob.glob(p))
    return Upload(given["name"], paths, missing)


def _if_no_files(step: Mapping[str, Value], context: _Context) -> str:
    value = _mapping(step.get("with", {}), "with").get("if-no-files-found", "warn")
    return context.substitute(_text(value, "if-no-files-found"))


def run_gitlab_job(job: Mapping[str, Value], *, env: Mapping[str, str], project_dir: str,
                   overrides: Optional[Mapping[str, str]] = None, timeout_s: float = 600) -> GitlabRun:
    """The job's ``script:`` in one bash, its ``variables:`` expanded, its ``artifacts:`` checked.
    ``overrides`` are pipeline variables (the "Run pipeline" form, a trigger): they outrank the
    job's own, as in GitLab."""
    job_env = dict(env)
    job_env.update({"CI": "true", "GITLAB_CI": "true", "CI_PROJECT_DIR": project_dir})
    for key, value in _mapping(job.get("variables", {}), "variables").items():
        job_env[key] = _expand(_text(value, key), job_env)
    job_env.update(overrides or {})
    script = job.get("script")
    if not isinstance(script, list) or not all(isinstance(line, str) for line in script):
        raise ActionError("script: a list of command lines")
    with tempfile.TemporaryDirectory(prefix="gitlab-job-") as scratch:
        path = os.path.join(scratch, "script.sh")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("set -eo pipefail\n" + "\n".join(str(line) for line in script) + "\n")
        code, log = run_bash(["bash", "--noprofile", "--norc", path], job_env, project_dir, timeout_s)
    artifacts = _mapping(job.get("artifacts", {}), "artifacts")
    when = _text(artifacts.get("when", "on_success"), "when")
    if when not in ("on_success", "on_failure", "always"):
        raise ActionError(f"artifacts.when: {when!r}")
    collect = when == "always" or (when == "on_success") == (code == 0)
    paths = artifacts.get("paths", [])
    if not isinstance(paths, list):
        raise ActionError("artifacts.paths: a list")
    found: List[str] = []
    missing: List[str] = []
    for pattern in paths if collect else []:
        matches = glob.glob(os.path.join(project_dir, _text(pattern, "paths")))
        found.extend(matches)
        if not matches:
            missing.append(str(pattern))
    return GitlabRun(code, log, tuple(found), tuple(missing))


def _expand(text: str, env: Mapping[str, str]) -> str:
    """GitLab's expansion of ``$NAME`` and ``${NAME}`` in a variable's value (unknown: empty)."""
    return re.sub(r"\$(?:\{(\w+)\}|(\w+))", lambda m: env.get(m.group(1) or m.group(2), ""), text)


def _steps(action: Mapping[str, Value]) -> List[Dict[str, Value]]:
    steps = _mapping(action.get("runs"), "runs").get("steps")
    if not isinstance(steps, list):
        raise ActionError("runs.steps: a list of steps")
    return [_mapping(s, f"runs.steps[{i}]") for i, s in enumerate(steps)]


def _mapping(value: Optional[Value], where: str) -> Dict[str, Value]:
    if not isinstance(value, dict):
        raise ActionError(f"{where}: a mapping")
    return value


def _text(value: Value, where: str) -> str:
    if not isinstance(value, str):
        raise ActionError(f"{where}: a string")
    return value


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("action", nargs="?", default=os.path.join(REPO, "action.yml"))
    parser.add_argument("--input", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--gitlab", metavar="MARKDOWN", help="run the ci-job block of this file instead")
    parser.add_argument("--workspace", default=os.getcwd(), help="GITHUB_WORKSPACE / CI_PROJECT_DIR")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per step")
    parser.add_argument("--variable", action="append", default=[], metavar="NAME=VALUE",
                        help="a pipeline variable for --gitlab (outranks the job's own)")
    args = parser.parse_args(argv)
    for item in args.input + args.variable:
        if "=" not in item:
            parser.error(f"{item!r}: write NAME=VALUE")
    try:
        if args.gitlab:
            variables = dict(item.split("=", 1) for item in args.variable)
            return _main_gitlab(args.gitlab, args.workspace, variables, args.timeout)
        inputs = dict(item.split("=", 1) for item in args.input)
        with tempfile.TemporaryDirectory(prefix="runner-temp-") as temp:
            run = run_action(args.action, inputs, env=os.environ, runner_temp=temp, workspace=args.workspace,
                             timeout_s=args.timeout, github_token=os.environ.get("GITHUB_TOKEN", ""))
            for step in run.steps:
                print(f"── {step.name}: {step.outcome}" + (f" (exit {step.exit_code})" if step.exit_code else ""))
                sys.stdout.write(step.log)
            for upload in run.uploads:
                print(f"── artifact {upload.name}: {', '.join(upload.paths)}"
                      + (f" (missing: {', '.join(upload.missing)})" if upload.missing else ""))
            for key, value in run.outputs.items():
                print(f"output {key}={value}")
            return 0 if run.success else 1
    except (ActionError, YamlSubsetError) as exc:
        print(f"run_action: error: {exc}", file=sys.stderr)
        return 2


def _main_gitlab(markdown: str, project_dir: str, variables: Mapping[str, str], timeout_s: float) -> int:
    with open(markdown, encoding="utf-8") as fh:
        jobs = [text for kind, _, text in marked_blocks(fh.read()) if kind == "job"]
    if not jobs:
        raise ActionError(f"{markdown}: no <!-- ci-job: NAME --> block")
    config = load(jobs[0])
    name, job = next(iter(config.items()))
    run = run_gitlab_job(_mapping(job, name), env=os.environ, project_dir=os.path.abspath(project_dir),
                         overrides=variables, timeout_s=timeout_s)
    sys.stdout.write(run.log)
    print(f"── job {name}: exit {run.exit_code}; artifacts: {', '.join(run.artifacts) or 'none'}"
          + (f" (missing: {', '.join(run.missing)})" if run.missing else ""))
    return run.exit_code


if __name__ == "__main__":
    sys.exit(main())
