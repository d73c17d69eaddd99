"""The real Codex CLI, end to end: landbot's sandbox, its model proxy, a scripted model.

    scripted model (host loopback)  <-  landbot's model proxy (adds the real provider key)
        <-  unix socket  <-  relay on the sandbox's own loopback  <-  codex exec (sandboxed)

The model's one tool call edits and commits in the checkout; its final message is the
verdict (held to the schema by `--output-schema`, written by `-o`); landbot publishes the
commit to the simulated GitHub's repository and arms auto-merge. Codex is required: CI
installs it with scripts/setup, and a machine without it fails here instead of skipping.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from landbot.config import FixerSettings, GitHubSettings, Settings
from landbot.core.model import Drop, Evidence, JobFailure
from landbot.fixer.agents import AgentUnavailable, CodexAgent, find_codex
from landbot.fixer.job import JobLimits
from landbot.fixer.verdict import SCHEMA
from landbot.git.workspace import Workspaces
from landbot.github.client import GitHubClient
from landbot.pipeline.fix import run_fix_job
from landbot.sandbox.proxy import KEY_PLACEHOLDER
from landbot.sandbox.runner import SandboxUnavailable, check_host
from landbot.sim import FakeGitHub, FakeGitHubServer
from landbot.sim.model_server import ModelScript, ScriptedModelServer

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

REAL_KEY = "sk-real-provider-key-e2e-7f3a"
BOT = "landbot-bot"
FILES = {"app.py": "ANSWER = 41\n", "check.sh": "grep -qx 'ANSWER = 42' app.py\n"}
EVIDENCE = Evidence(
    triage_class="genuine",
    triage_reason="check.sh exited 1",
    jobs=(
        JobFailure("check", "", "Run sh check.sh", (9,), ((9, "Error: exit 1"),), "", "genuine"),
    ),
)
LIMITS = JobLimits(timeout=120, memory_mb=2048)


@pytest.fixture(scope="module")
def codex() -> CodexAgent:
    try:
        binary = find_codex()
    except AgentUnavailable as exc:
        pytest.fail(f"{exc}. CI installs it; on this machine run scripts/setup first")
    try:
        check_host()
    except SandboxUnavailable as exc:
        pytest.fail(f"the Codex end-to-end test needs the sandbox: {exc}")
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True)
    assert "0.171.0" in version.stdout, f"codex 0.171.0 expected, found {version.stdout!r}"
    return CodexAgent(binary)


@pytest.fixture
def world() -> Iterator[tuple[Path, FakeGitHub, FakeGitHubServer]]:
    root = Path(tempfile.mkdtemp(prefix="landbot-codex-", dir="/tmp"))
    os.chmod(root, 0o755)
    gh = FakeGitHub(root / "github", auto_checks=False)
    try:
        with FakeGitHubServer(gh) as server:
            yield root, gh, server
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_codex_fixes_in_the_sandbox_through_the_proxy_and_the_fix_is_published(
    codex: CodexAgent, world: tuple[Path, FakeGitHub, FakeGitHubServer]
) -> None:
    root, gh, server = world
    repo = gh.create_repo("acme/widgets", files=FILES)
    token = gh.create_token(BOT)
    gh.add_collaborator(repo, BOT, "write")
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 40\n"})
    head = pr.head_sha
    script = ModelScript(
        commands=[
            "if sh check.sh; then exit 3; fi; echo 'ANSWER = 42' > app.py && sh check.sh && "
            'git commit -qam "Set the answer (uid $(id -u) on $(hostname))"'
        ],
        verdict={
            "verdict": "fixed",
            "summary": "check.sh wants ANSWER = 42; set it",
            "recommendation": "",
            "reproduced": True,
        },
    )
    with ScriptedModelServer(script) as model:
        settings = Settings(
            github=GitHubSettings(api_url=server.url, token=token, git_url=gh.git_url),
            fixer=FixerSettings(agent="codex", model_url=model.url, model_api_key=REAL_KEY),
        )
        with GitHubClient(settings.github, mutation_gap=0) as client:
            result = run_fix_job(
                settings,
                client,
                Workspaces(root / "state", git_url=gh.git_url, uid=65534, gid=65534),
                Drop("acme/widgets", pr.number, head, "failed_checks", "webhook"),
                EVIDENCE,
                agent=codex,
                limits=LIMITS,
            )
        seen = model.requests

    # The verdict is codex's final message, read from its -o file.
    assert result.verdict == "fixed", result
    assert result.summary == "check.sh wants ANSWER = 42; set it"
    assert result.refused == ""

    # The model's tool call ran inside the sandbox and committed; landbot published it.
    now = gh.pull(repo, pr.number)
    assert now.head_sha == result.pushed_sha != head
    assert now.auto_merge is not None and now.auto_merge.enabled_by == BOT

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", f"--git-dir={repo.git_dir}", *args], check=True, capture_output=True, text=True
        ).stdout.strip()

    assert git("show", f"{now.head_sha}:app.py") == "ANSWER = 42"
    assert git("log", "-1", "--format=%P", now.head_sha) == head
    assert git("log", "-1", "--format=%s", now.head_sha) == (
        "Set the answer (uid 65534 on landbot-sandbox)"
    )

    # The model saw two turns, both through the proxy: the real key (which only the proxy
    # holds) on every request, never the placeholder the sandbox has.
    turns = [r for r in seen if r.path == "/v1/responses"]
    assert len(turns) == 2 and len(seen) == 2, [r.path for r in seen]
    for request in seen:
        assert request.header("authorization") == f"Bearer {REAL_KEY}"
        assert KEY_PLACEHOLDER not in request.raw
    first, second = (r.json() for r in turns)
    assert "landbot land fixer" in json.dumps(first["input"])  # the task prompt
    assert "sh check.sh" in json.dumps(first["input"])  # with the reproduce command
    outputs = [i for i in second["input"] if i.get("type") == "function_call_output"]
    assert len(outputs) == 1 and "exited with code 0" in outputs[0]["output"]
    # --output-schema reached the model as the response format.
    assert second["text"]["format"]["schema"] == SCHEMA


def test_codex_needs_human_verdict_publishes_nothing(
    codex: CodexAgent, world: tuple[Path, FakeGitHub, FakeGitHubServer]
) -> None:
    root, gh, server = world
    repo = gh.create_repo("acme/widgets", files=FILES)
    token = gh.create_token(BOT)
    gh.add_collaborator(repo, BOT, "write")
    pr = gh.open_pull_request(repo, head="feat", files={"app.py": "ANSWER = 40\n"})
    head = pr.head_sha
    script = ModelScript(
        commands=["sh check.sh || true"],
        verdict={
            "verdict": "needs_human",
            "summary": "the PR sets 40 on purpose; check.sh wants 42",
            "recommendation": "decide which value is right",
            "reproduced": True,
        },
    )
    with ScriptedModelServer(script) as model:
        settings = Settings(
            github=GitHubSettings(api_url=server.url, token=token, git_url=gh.git_url),
            fixer=FixerSettings(agent="codex", model_url=model.url, model_api_key=REAL_KEY),
        )
        with GitHubClient(settings.github, mutation_gap=0) as client:
            result = run_fix_job(
                settings,
                client,
                Workspaces(root / "state", git_url=gh.git_url, uid=65534, gid=65534),
                Drop("acme/widgets", pr.number, head, "failed_checks", "webhook"),
                EVIDENCE,
                agent=codex,
                limits=LIMITS,
            )
    assert result.verdict == "needs_human"
    assert result.recommendation == "decide which value is right"
    now = gh.pull(repo, pr.number)
    assert now.head_sha == head and now.auto_merge is None
