"""`landbot fixer run --workdir DIR [--evidence FILE] [--agent NAME]`, as a whole process:
one job on a local checkout, the verdict JSON on stdout; exit 0 when the agent gave a
verdict, 1 when it gave none, 2 for a usage or environment error."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import diverge, require_sandbox, sandbox_folder
from ..conftest import run_git as git

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

LANDBOT = str(Path(sys.executable).parent / "landbot")
FIXED = {
    "verdict": "fixed",
    "summary": "set ANSWER to 42",
    "recommendation": "",
    "reproduced": True,
}


@pytest.fixture
def root() -> Iterator[Path]:
    require_sandbox()
    with sandbox_folder("landbot-fixcli-") as path:
        yield path


@pytest.fixture
def checkout(root: Path) -> Path:
    work = root / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    git(work, "config", "user.name", "Operator")
    git(work, "config", "user.email", "op@example.invalid")
    (work / "app.py").write_text("ANSWER = 41\n")
    (work / "check.sh").write_text("grep -qx 'ANSWER = 42' app.py\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "initial")
    return work


def agent(root: Path, body: str) -> Path:
    path = root / "tools" / "agent.sh"
    path.parent.mkdir(mode=0o755, exist_ok=True)
    path.write_text("#!/bin/sh\nset -e\n" + body)
    path.chmod(0o755)
    return path


def landbot(
    root: Path, *args: str, command: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    if command is not None:
        base["LANDBOT_FIXER__COMMAND"] = json.dumps([str(command)])
    return subprocess.run(
        [LANDBOT, "fixer", "run", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**base, **(env or {})},
        cwd=root,  # no config/landbot.toml here
    )


WRITE_FIXED = f"printf '%s' '{json.dumps(FIXED)}' > \"$LANDBOT_VERDICT_FILE\"\n"


def test_a_command_agent_fixes_the_checkout_and_the_verdict_is_printed(
    root: Path, checkout: Path
) -> None:
    head = git(checkout, "rev-parse", "HEAD")
    # `landbot triage log --json` output as the evidence: its step gives the command.
    evidence = root / "triage.json"
    evidence.write_text(
        json.dumps(
            {
                "class": "genuine",
                "step": "Run sh check.sh",
                "error_lines": [3],
                "summary": "check.sh exited 1",
                "excerpt": [{"line": 3, "text": "Error: Process completed with exit code 1."}],
            }
        )
    )
    script = agent(
        root,
        "echo 'working on it' >&2\necho 'noise on stdout'\n"
        "grep -qx '   sh check.sh' \"$LANDBOT_PROMPT_FILE\"\n"
        "if sh check.sh; then exit 3; fi\n"
        "echo 'ANSWER = 42' > app.py\nsh check.sh\ngit commit -qam 'Set the answer'\n"
        + WRITE_FIXED,
    )
    done = landbot(root, "--workdir", str(checkout), "--evidence", str(evidence), command=script)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == FIXED  # stdout holds the verdict and nothing else
    assert done.stdout.count("\n") == 1
    assert "working on it" in done.stderr and "noise on stdout" in done.stderr
    assert git(checkout, "log", "-1", "--format=%P %s") == f"{head} Set the answer"
    assert not (checkout / ".git" / "landbot").exists()  # the exchange folder is cleaned up


def test_a_merge_in_progress_is_a_conflict_job(root: Path, checkout: Path) -> None:
    base, head = diverge(checkout)
    merge = subprocess.run(
        ["git", "merge", "-q", "main"], cwd=checkout, capture_output=True, text=True
    )
    assert merge.returncode == 1  # conflicted
    script = agent(
        root,
        "grep -q '^- `app.py`$' \"$LANDBOT_PROMPT_FILE\"\n"
        "grep -q 'middle of `git merge`' \"$LANDBOT_PROMPT_FILE\"\n"
        "echo 'ANSWER = 42' > app.py\ngit add app.py\ngit commit -q --no-edit\n" + WRITE_FIXED,
    )
    done = landbot(root, "--workdir", str(checkout), command=script)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verdict"] == "fixed"
    assert git(checkout, "log", "-1", "--format=%P").split() == [head, base]


def test_no_verdict_exits_1_and_still_prints_one(root: Path, checkout: Path) -> None:
    done = landbot(root, "--workdir", str(checkout), command=agent(root, "true\n"))
    assert done.returncode == 1
    verdict = json.loads(done.stdout)
    assert verdict["verdict"] == "needs_human"
    assert verdict["summary"] == "the agent wrote no verdict (it exited with code 0)"
    assert "landbot: the agent wrote no verdict" in done.stderr
    # The control: a verdict that says needs_human is still a verdict (exit 0).
    human = agent(
        root,
        'printf \'%s\' \'{"verdict":"needs_human","summary":"s","recommendation":"r",'
        '"reproduced":false}\' > "$LANDBOT_VERDICT_FILE"\n',
    )
    assert landbot(root, "--workdir", str(checkout), command=human).returncode == 0


def test_a_timeout_exits_1(root: Path, checkout: Path) -> None:
    script = agent(root, WRITE_FIXED + "sleep 60\n")
    done = landbot(root, "--workdir", str(checkout), "--timeout", "1", command=script)
    assert done.returncode == 1
    assert json.loads(done.stdout)["summary"] == "the agent timed out after 1 s and was stopped"


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("not a checkout", "is not a git checkout with its own .git folder"),
        ("evidence not JSON", "is not JSON"),
        ("evidence missing", "cannot read the evidence file"),
        ("bad evidence", "the evidence file is not usable"),
        ("unknown agent", "there is no fixer agent 'gpt'"),
        ("no command", "LANDBOT_FIXER__COMMAND"),
        ("codex without a model", "needs a model"),
        ("bad timeout", "--timeout and --memory must be positive"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    root: Path, checkout: Path, case: str, message: str
) -> None:
    script = agent(root, WRITE_FIXED)
    args = ["--workdir", str(checkout)]
    command: Path | None = script
    if case == "not a checkout":
        plain = root / "plain"
        plain.mkdir()
        args = ["--workdir", str(plain)]
    elif case.startswith("evidence") or case == "bad evidence":
        evidence = root / "evidence.json"
        if case == "evidence not JSON":
            evidence.write_text("{oops")
        elif case == "bad evidence":
            evidence.write_text(json.dumps({"format": 1, "drop": {"reason": "exploded"}}))
        args += ["--evidence", str(evidence)]
    elif case == "unknown agent":
        args += ["--agent", "gpt"]
    elif case == "no command":
        command = None
    elif case == "codex without a model":
        args += ["--agent", "codex"]
    elif case == "bad timeout":
        args += ["--timeout", "0"]
    done = landbot(root, *args, command=command)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("landbot: ") and message in lines[0], lines
    # Nothing was run: the checkout is as it was.
    if case != "not a checkout":
        assert git(checkout, "log", "--format=%s") == "initial"


def test_codex_through_the_cli(root: Path, checkout: Path) -> None:
    """What an operator runs to try Codex on a checkout before trusting it with a queue."""
    from landbot.fixer.agents import AgentUnavailable, find_codex
    from landbot.sim.model_server import ModelScript, ScriptedModelServer

    try:
        find_codex()
    except AgentUnavailable as exc:
        pytest.fail(f"{exc}. CI installs it; on this machine run scripts/setup first")
    script = ModelScript(
        commands=["echo 'ANSWER = 42' > app.py && git commit -qam 'Set the answer'"],
        verdict=FIXED,
    )
    with ScriptedModelServer(script) as model:
        done = landbot(
            root,
            "--workdir",
            str(checkout),
            "--agent",
            "codex",
            env={
                "LANDBOT_FIXER__MODEL_URL": model.url,
                "LANDBOT_FIXER__MODEL_API_KEY": "sk-operator-key",
            },
        )
        seen = model.requests
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == FIXED
    assert git(checkout, "log", "-1", "--format=%s") == "Set the answer"
    assert len(seen) == 2
    assert all(r.header("authorization") == "Bearer sk-operator-key" for r in seen)


# --- what a job leaves in the operator's .git (issue 12) ------------------------------

# The job plants a second repository whose config runs a command, points .git/commondir at
# it (git then reads that config as the checkout's own) and adds an info/attributes that
# sends every file through a filter that config defines.
PLANT = (
    """
mkdir -p .git/evil
cp -r .git/objects .git/refs .git/HEAD .git/evil/
cat > .git/evil/config <<'END'
[core]
	repositoryformatversion = 0
	fsmonitor = "touch MARK/fsmonitor; false"
[filter "x"]
	clean = "touch MARK/filter; cat"
END
echo evil > .git/commondir
echo '* filter=x' > .git/info/attributes
ln -s /etc .git/refs/linked
echo x >> app.py
"""
    + WRITE_FIXED
)


def _operator_status(work: Path) -> None:
    # What an operator does next in that checkout (safe.directory: it now belongs to the
    # sandbox uid). No check: git may well fail; what matters is what it ran.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work.parent), "GIT_CONFIG_NOSYSTEM": "1"}
    for command in ("status", "diff"):
        subprocess.run(
            ["git", "-c", "safe.directory=*", command], cwd=work, capture_output=True, env=env
        )


def test_a_job_s_planted_git_layout_does_not_run_for_the_operator(
    root: Path, checkout: Path
) -> None:
    mark = root / "mark"
    mark.mkdir(mode=0o777)
    os.chmod(mark, 0o777)
    body = PLANT.replace("MARK", str(mark))
    # The control: the same plant, written unconfined into a copy, runs both commands at
    # the operator's `git status`.
    control = root / "control"
    shutil.copytree(checkout, control, symlinks=True)
    planted = subprocess.run(
        ["sh", "-c", "set -e\nLANDBOT_VERDICT_FILE=/dev/null\n" + body], cwd=control
    )
    assert planted.returncode == 0
    _operator_status(control)
    assert "fsmonitor" in {p.name for p in mark.iterdir()}
    for p in mark.iterdir():
        p.unlink()
    # Through landbot: the job ran (its edit is there), the plant is gone, nothing runs.
    done = landbot(root, "--workdir", str(checkout), command=agent(root, body))
    assert done.returncode == 0, done.stderr
    assert (checkout / "app.py").read_text().endswith("x\n")  # the marker: the job ran
    gitdir = checkout / ".git"
    for planted in ("commondir", "evil", "info/attributes", "refs/linked"):
        assert not os.path.lexists(gitdir / planted), planted
    _operator_status(checkout)
    assert list(mark.iterdir()) == []
    # A second run on the same checkout reads its state in the sandbox and works.
    again = landbot(root, "--workdir", str(checkout), command=agent(root, WRITE_FIXED))
    assert again.returncode == 0, again.stderr
    assert list(mark.iterdir()) == []


def test_a_checkout_with_a_linked_layout_is_refused_before_the_job(
    root: Path, checkout: Path
) -> None:
    # The control: a plain clone runs.
    ok = landbot(root, "--workdir", str(checkout), command=agent(root, WRITE_FIXED))
    assert ok.returncode == 0, ok.stderr
    (checkout / ".git" / "commondir").write_text("elsewhere\n")
    done = landbot(root, "--workdir", str(checkout), command=agent(root, WRITE_FIXED))
    assert done.returncode == 2 and ".git/commondir is not part of a plain clone" in done.stderr


def test_the_checkout_runs_under_a_disk_cap(root: Path, checkout: Path) -> None:
    """Issue 29: a job under `fixer run` (what the Actions backend runs on a runner) wrote
    2 GiB to the host; with `--disk` its checkout is on a file system of that size."""
    head = git(checkout, "rev-parse", "HEAD")
    control = agent(
        root,
        "head -c 4194304 /dev/zero > data.bin\n"
        "echo 'ANSWER = 42' > app.py\ngit commit -qam 'Set the answer'\n" + WRITE_FIXED,
    )
    done = landbot(root, "--workdir", str(checkout), "--disk", "16", command=control)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0].startswith("landbot fixer run: disk capped at 16 MB")
    assert (checkout / "data.bin").stat().st_size == 4 << 20  # copied back, with the commit
    assert git(checkout, "log", "-1", "--format=%P %s") == f"{head} Set the answer"

    hostile = agent(root, "head -c 67108864 /dev/zero > big.bin\n" + WRITE_FIXED)
    done = landbot(root, "--workdir", str(checkout), "--disk", "16", command=hostile)
    assert done.returncode == 1  # the agent died on ENOSPC: no verdict
    assert "No space left on device" in done.stderr
    assert (checkout / "big.bin").stat().st_size < 16 << 20  # not 64 MB on the host
