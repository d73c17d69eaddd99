"""One land-fixer job end to end: the simulated GitHub (real bare git repositories), the
workspace's mirror and checkout, a command agent (a shell script given by absolute path) in
the real sandbox, the verdict, and publishing to the pull request's branch.

Every refusal has its control: the same job publishing where nothing is wrong.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from landbot.config import FixerSettings, GitHubSettings, SandboxSettings, Settings
from landbot.core.model import Drop, Evidence, FixerResult, JobFailure
from landbot.errors import LandbotError
from landbot.fixer.agents import Agent, Invocation, JobPaths, ModelAccess
from landbot.fixer.job import JobLimits
from landbot.git.workspace import Workspaces
from landbot.github.client import GitHubClient
from landbot.github.models import PullState
from landbot.pipeline.fix import run_fix_job
from landbot.sim import FakeGitHub, FakeGitHubServer
from landbot.sim.model_server import ModelScript, ScriptedModelServer
from landbot.sim.state import PullRequest, Repository

from ..conftest import require_sandbox

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

BOT = "landbot-bot"
QUEST = "# [S] Ship it\n\n## Required\n\n- [Design](design.md)\n"
FILES = {
    "app.py": "ANSWER = 41\n",
    "check.sh": "grep -qx 'ANSWER = 42' app.py\n",
    ".github/workflows/ci.yml": "on: merge_group\njobs: {}\n",
    "quest/ship.md": QUEST,
    "quest/design.md": "# [M] Design\n",
}
LIMITS = JobLimits(timeout=30, memory_mb=512)
FIXED = {
    "verdict": "fixed",
    "summary": "set ANSWER to 42",
    "recommendation": "",
    "reproduced": True,
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeGitHubServer]:
    with FakeGitHubServer(FakeGitHub(tmp_path_factory.mktemp("unused"))) as s:
        yield s


@dataclass
class World:
    root: Path
    gh: FakeGitHub
    repo: Repository
    server: FakeGitHubServer
    client: GitHubClient
    workspaces: Workspaces
    token: str

    def settings(self, **fixer: Any) -> Settings:
        return Settings(
            github=GitHubSettings(
                api_url=self.server.url, token=self.token, git_url=self.gh.git_url
            ),
            fixer=FixerSettings(**fixer),
        )

    def agent(self, body: str, name: str = "agent.sh") -> Path:
        """A command agent: a shell script, by absolute path, outside the checkout."""
        folder = self.root / "tools"
        folder.mkdir(mode=0o755, exist_ok=True)
        path = folder / name
        path.write_text("#!/bin/sh\nset -e\n" + body)
        path.chmod(0o755)
        return path

    def command_settings(self, body: str, **fixer: Any) -> Settings:
        return self.settings(agent="command", command=[str(self.agent(body))], **fixer)

    def drop(self, pr: PullRequest, reason: str = "failed_checks") -> Drop:
        return Drop(
            repo=self.repo.full_name,
            pr=pr.number,
            head_sha=pr.head_sha,
            reason=reason,  # type: ignore[arg-type]
            source="webhook",
        )

    def run(
        self,
        settings: Settings,
        pr: PullRequest,
        *,
        reason: str = "failed_checks",
        evidence: Evidence = Evidence(),
        client: Any = None,
        limits: JobLimits = LIMITS,
        agent: Agent | None = None,
    ) -> FixerResult:
        return run_fix_job(
            settings,
            client or self.client,
            self.workspaces,
            self.drop(pr, reason),
            evidence,
            limits=limits,
            agent=agent,
        )

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", f"--git-dir={self.repo.git_dir}", *args],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    def pr_now(self, pr: PullRequest) -> PullRequest:
        return self.gh.pull(self.repo, pr.number)


@pytest.fixture
def world(server: FakeGitHubServer) -> Iterator[World]:
    require_sandbox()
    # Under /tmp with mode 755: the sandbox uid must reach the work trees and the scripts.
    root = Path(tempfile.mkdtemp(prefix="landbot-job-", dir="/tmp"))
    os.chmod(root, 0o755)
    gh = server.use(FakeGitHub(root / "github", auto_checks=False))
    repo = gh.create_repo("acme/widgets", files=FILES)
    token = gh.create_token(BOT)
    gh.add_collaborator(repo, BOT, "write")
    client = GitHubClient(GitHubSettings(api_url=server.url, token=token), mutation_gap=0)
    workspaces = Workspaces(root / "state", git_url=gh.git_url, uid=65534, gid=65534)
    try:
        yield World(root, gh, repo, server, client, workspaces, token)
    finally:
        client.close()
        shutil.rmtree(root, ignore_errors=True)


WRITE_FIXED = f"printf '%s' '{json.dumps(FIXED)}' > \"$LANDBOT_VERDICT_FILE\"\n"
FIX_APP = "echo 'ANSWER = 42' > app.py\ngit commit -qam 'Set the answer'\n" + WRITE_FIXED
CHECK_FAILED = Evidence(
    triage_class="genuine",
    triage_reason="check.sh exited 1",
    jobs=(
        JobFailure("check", "", "Run sh check.sh", (9,), ((9, "Error: exit 1"),), "", "genuine"),
    ),
)


def test_a_fix_is_committed_in_the_sandbox_and_published(world: World) -> None:
    pr = world.gh.open_pull_request(world.repo, head="feat", files={"app.py": "ANSWER = 40\n"})
    head = pr.head_sha  # the PullRequest object follows the branch; keep the sha
    # The agent reproduces with the command from the prompt, fixes, and checks again.
    script = (
        'cmd=$(sed -n "/^   \\`\\`\\`sh$/{n;p;q}" "$LANDBOT_PROMPT_FILE" | sed "s/^ *//")\n'
        'test "$cmd" = "sh check.sh"\n'
        "if sh check.sh; then exit 3; fi\n"
        "echo 'ANSWER = 42' > app.py\n"
        "sh check.sh\n"
        'git commit -qam "Set the answer as uid $(id -u) on $(hostname)"\n' + WRITE_FIXED
    )
    result = world.run(world.command_settings(script), pr, evidence=CHECK_FAILED)
    assert result.verdict == "fixed" and result.refused == ""
    assert result.summary == "set ANSWER to 42"
    now = world.pr_now(pr)
    assert now.head_sha == result.pushed_sha
    assert now.auto_merge is not None and now.auto_merge.enabled_by == BOT
    assert world.git("show", f"{now.head_sha}:app.py") == "ANSWER = 42"
    assert world.git("log", "-1", "--format=%P", now.head_sha) == head
    # It ran confined: the sandbox uid, the sandbox's own hostname.
    assert world.git("log", "-1", "--format=%s", now.head_sha) == (
        "Set the answer as uid 65534 on landbot-sandbox"
    )


def test_the_agent_sees_its_files_read_only_and_outside_the_checkout(world: World) -> None:
    pr = world.gh.open_pull_request(world.repo, head="feat", files={"app.py": "ANSWER = 40\n"})
    script = (
        'test -r "$LANDBOT_PROMPT_FILE" && test -r "$LANDBOT_EVIDENCE_FILE"\n'
        'if echo hacked >> "$LANDBOT_PROMPT_FILE" 2>/dev/null\n'
        "then p=writable; else p=read-only; fi\n"
        'case "$LANDBOT_PROMPT_FILE" in "$PWD"/*) where=inside;; *) where=outside;; esac\n'
        "clean=$(git status --porcelain --ignored | wc -l)\n"
        "reason=$(python3 -c 'import json, os\n"
        'f = open(os.environ["LANDBOT_EVIDENCE_FILE"])\n'
        'print(json.load(f)["drop"]["reason"])\')\n'
        "model=${LANDBOT_MODEL_URL:-none}\n"
        'printf \'{"verdict":"needs_human","summary":"%s %s %s %s %s",\''
        '\'"recommendation":"r","reproduced":false}\' '
        '"$p" "$where" "$clean" "$reason" "$model" > "$LANDBOT_VERDICT_FILE"\n'
    )
    result = world.run(world.command_settings(script), pr)
    assert result == FixerResult("needs_human", "read-only outside 0 failed_checks none", "r")


def _conflicting(world: World, *, code: bool) -> tuple[PullRequest, str, str]:
    """A PR and a base that both add a Required quest to quest/ship.md (and, with `code`,
    both change app.py's one line). Returns (PR, its head sha, the new base sha)."""
    head_files: dict[str, str | bytes | None] = {
        "quest/ship.md": QUEST + "- [Docs](docs.md)\n",
        "quest/docs.md": "# [S] Docs\n",
    }
    base_files: dict[str, str | bytes | None] = {
        "quest/ship.md": QUEST + "- [Tests](tests.md)\n",
        "quest/tests.md": "# [S] Tests\n",
    }
    if code:
        head_files["app.py"] = "ANSWER = 42\n"
        base_files["app.py"] = "ANSWER = 40\n"
    pr = world.gh.open_pull_request(world.repo, head="feat", files=head_files)
    return pr, pr.head_sha, world.gh.push(world.repo, "main", base_files)


class NoAgent(Agent):
    """Fails the test if the job asks for an agent at all."""

    name = "none"

    def invocation(self, paths: JobPaths, prompt: str, model: ModelAccess | None) -> Invocation:
        raise AssertionError("the job started an agent")


def test_a_quest_only_conflict_is_merged_on_the_host_without_an_agent(world: World) -> None:
    pr, head, base = _conflicting(world, code=False)
    result = world.run(world.settings(), pr, reason="merge_conflict", agent=NoAgent())
    assert result.verdict == "fixed" and result.refused == "", result
    assert "quest merge driver resolved every conflict" in result.summary
    now = world.pr_now(pr)
    assert now.head_sha == result.pushed_sha and now.auto_merge is not None
    assert world.git("log", "-1", "--format=%P", now.head_sha).split() == [head, base]
    ship = world.git("show", f"{now.head_sha}:quest/ship.md")
    assert "- [Docs](docs.md)" in ship and "- [Tests](tests.md)" in ship


def test_a_code_conflict_is_resolved_by_the_command_agent(world: World) -> None:
    pr, head, base = _conflicting(world, code=True)
    # The control for the test above: a conflict the driver cannot resolve needs an agent.
    with pytest.raises(AssertionError, match="started an agent"):
        world.run(world.settings(), pr, reason="merge_conflict", agent=NoAgent())
    script = (
        "test -f .git/MERGE_HEAD\n"
        'grep -q "^- \\`app.py\\`$" "$LANDBOT_PROMPT_FILE"\n'
        "grep -q '^<<<<<<<' app.py\n"
        "echo 'ANSWER = 42' > app.py\n"
        "git add app.py\n"
        "git commit -q --no-edit\n"
        'printf \'%s\' \'{"verdict":"fixed","summary":"kept 42","recommendation":"",'
        '"reproduced":true}\' > "$LANDBOT_VERDICT_FILE"\n'
    )
    result = world.run(world.command_settings(script), pr, reason="merge_conflict")
    assert result.verdict == "fixed" and result.refused == "", result
    now = world.pr_now(pr)
    assert now.head_sha == result.pushed_sha and now.auto_merge is not None
    assert world.git("log", "-1", "--format=%P", now.head_sha).split() == [head, base]
    assert world.git("show", f"{now.head_sha}:app.py") == "ANSWER = 42"
    ship = world.git("show", f"{now.head_sha}:quest/ship.md")
    assert "- [Docs](docs.md)" in ship and "- [Tests](tests.md)" in ship


def test_needs_human_comes_back_with_its_recommendation(world: World) -> None:
    pr = world.gh.open_pull_request(world.repo, head="feat", files={"app.py": "ANSWER = 40\n"})
    head = pr.head_sha  # the PullRequest object follows the branch; keep the sha
    script = (
        "echo 'ANSWER = 42' > app.py\ngit commit -qam 'a guess'\n"  # committed, yet not a fix
        'printf \'%s\' \'{"verdict":"needs_human","summary":"check.sh wants 42, the PR '
        'says 40","recommendation":"decide which answer is right","reproduced":true}\' '
        '> "$LANDBOT_VERDICT_FILE"\n'
    )
    result = world.run(world.command_settings(script), pr, evidence=CHECK_FAILED)
    assert result == FixerResult(
        "needs_human", "check.sh wants 42, the PR says 40", "decide which answer is right"
    )
    now = world.pr_now(pr)
    assert now.head_sha == head and now.auto_merge is None  # nothing published


@pytest.mark.parametrize(
    ("path", "published"), [(".github/workflows/ci.yml", False), ("app.py", True)]
)
def test_a_fix_touching_workflows_is_refused(world: World, path: str, published: bool) -> None:
    pr = world.gh.open_pull_request(world.repo, head="feat", files={"app.py": "ANSWER = 40\n"})
    head = pr.head_sha  # the PullRequest object follows the branch; keep the sha
    script = f"echo '# changed' >> {path}\ngit commit -qam 'Change {path}'\n" + WRITE_FIXED
    result = world.run(world.command_settings(script), pr, evidence=CHECK_FAILED)
    assert result.verdict == "fixed"
    now = world.pr_now(pr)
    if published:  # the control: the same job changing app.py is pushed
        assert result.refused == "" and now.head_sha == result.pushed_sha
        return
    assert result.pushed_sha is None
    assert ".github/workflows/ci.yml" in result.refused and "protected" in result.refused
    assert now.head_sha == head and now.auto_merge is None


class MovingClient:
    """The real client, with the PR's author pushing at a chosen moment of the job."""

    def __init__(self, world: World, pr: PullRequest, moment: str) -> None:
        self.world, self.pr, self.moment = world, pr, moment
        self.reads = self.tokens = 0
        self.pushed: str | None = None

    def _push(self) -> None:
        self.pushed = self.world.gh.push(self.world.repo, "feat", {"NOTES.md": "author's\n"})

    def pull_request(self, repo: str, number: int) -> PullState:
        self.reads += 1
        if self.reads == 2 and self.moment == "before re-read":
            self._push()
        return self.world.client.pull_request(repo, number)

    def git_token(self, repo: str) -> str:
        self.tokens += 1
        if self.tokens == 2 and self.moment == "before push":  # publish's token, last step
            self._push()
        return self.world.client.git_token(repo)

    def enable_auto_merge(self, *args: Any, **kwargs: Any) -> None:
        self.world.client.enable_auto_merge(*args, **kwargs)


def test_a_head_that_moved_before_the_job_gets_nothing_pushed(world: World) -> None:
    pr = world.gh.open_pull_request(world.repo, head="feat", files={"app.py": "ANSWER = 40\n"})
    drop = world.drop(pr)
    pushed = world.gh.push(world.repo, "feat", {"NOTES.md": "author's\n"})
    settings = world.command_settings(FIX_APP)
    result = run_fix_job(settings, world.client, world.workspaces, drop, Evidence(), limits=LIMITS)
    assert result.verdict == "needs_human" and result.pushed_sha is None
    assert "moved before the fixer ran" in result.refused
    assert world.pr_now(pr).head_sha == pushed  # the author's commit stays
    # The control: at the head the PR has now, the same agent fixes it and it is published.
    drop = world.drop(world.pr_now(pr))
    result = run_fix_job(settings, world.client, world.workspaces, drop, Evidence(), limits=LIMITS)
    assert result.pushed_sha is not None and result.pushed_sha == world.pr_now(pr).head_sha


@pytest.mark.parametrize("moment", ["before re-read", "before push", "never"])
def test_a_head_that_moved_during_the_job_gets_nothing_pushed(world: World, moment: str) -> None:
    pr = world.gh.open_pull_request(world.repo, head="feat", files={"app.py": "ANSWER = 40\n"})
    client = MovingClient(world, pr, moment)
    result = world.run(world.command_settings(FIX_APP), pr, client=client)
    now = world.pr_now(pr)
    if moment == "never":  # the control
        assert result.pushed_sha == now.head_sha and result.refused == ""
        return
    assert client.pushed is not None
    assert result.pushed_sha is None and "moved during the job" in result.refused
    assert now.head_sha == client.pushed and now.auto_merge is None  # the author's commit stays


def test_an_agent_that_writes_no_verdict_gets_needs_human(world: World) -> None:
    pr = world.gh.open_pull_request(world.repo, head="feat", files={"app.py": "ANSWER = 40\n"})
    head = pr.head_sha  # the PullRequest object follows the branch; keep the sha
    no_verdict = "echo 'ANSWER = 42' > app.py\ngit commit -qam 'Set the answer'\n"
    result = world.run(world.command_settings(no_verdict), pr)
    assert result.verdict == "needs_human"
    assert result.summary == "the agent wrote no verdict (it exited with code 0)"
    assert world.pr_now(pr).head_sha == head  # its commit is not published
    garbage = world.run(
        world.command_settings("echo 'all good!' > \"$LANDBOT_VERDICT_FILE\"\n"), pr
    )
    assert garbage.verdict == "needs_human"
    assert garbage.summary.startswith("the agent's verdict is unusable: it is not JSON")
    crashed = world.run(world.command_settings("exit 7\n"), pr)
    assert crashed.summary == "the agent wrote no verdict (it exited with code 7)"


def test_an_agent_over_its_timeout_is_killed(world: World) -> None:
    pr = world.gh.open_pull_request(world.repo, head="feat", files={"app.py": "ANSWER = 40\n"})
    head = pr.head_sha  # the PullRequest object follows the branch; keep the sha
    # A verdict and a commit first, then it hangs: a job stopped half-way is not a fix.
    script = FIX_APP + "sleep 120\n"
    start = time.monotonic()
    result = world.run(
        world.command_settings(script), pr, limits=JobLimits(timeout=1, memory_mb=512)
    )
    assert time.monotonic() - start < 30  # killed, not waited for
    assert result.verdict == "needs_human"
    assert result.summary == "the agent timed out after 1 s and was stopped"
    assert world.pr_now(pr).head_sha == head


def test_a_verdict_linked_to_a_host_file_is_not_read(world: World) -> None:
    # A root-readable host file, shaped like a verdict, that the sandbox cannot see.
    secret = Path(tempfile.mkdtemp(prefix="landbot-secret-", dir="/var/tmp")) / "v.json"
    try:
        secret.write_text(json.dumps({**FIXED, "summary": "HOST SECRET"}))
        secret.chmod(0o600)
        script = f'ln -s {secret} "$LANDBOT_VERDICT_FILE"\ntest -L "$LANDBOT_VERDICT_FILE"\n'
        pr = world.gh.open_pull_request(world.repo, head="feat", files={"app.py": "ANSWER = 40\n"})
        result = world.run(world.command_settings(script), pr)
    finally:
        shutil.rmtree(secret.parent, ignore_errors=True)
    assert result.verdict == "needs_human" and "HOST SECRET" not in result.summary
    assert result.summary == "the agent wrote no verdict (it exited with code 0)"


def test_a_command_agent_reaches_the_model_only_through_the_proxy(world: World) -> None:
    pr = world.gh.open_pull_request(world.repo, head="feat", files={"app.py": "ANSWER = 40\n"})
    script = (
        "python3 - <<'EOF'\n"
        "import json, os, urllib.request\n"
        "url = os.environ['LANDBOT_MODEL_URL'] + '/responses'\n"
        "req = urllib.request.Request(url, data=b'{\"input\": []}', headers={\n"
        "    'Authorization': 'Bearer ' + os.environ['LANDBOT_MODEL_KEY_PLACEHOLDER']})\n"
        "body = urllib.request.urlopen(req, timeout=10).read().decode()\n"
        "verdict = {'verdict': 'needs_human', 'summary': url, 'recommendation': body[:40],\n"
        "           'reproduced': False}\n"
        "open(os.environ['LANDBOT_VERDICT_FILE'], 'w').write(json.dumps(verdict))\n"
        "EOF\n"
    )
    with ScriptedModelServer(ModelScript(commands=["true"])) as model:
        settings = world.command_settings(
            script, model_url=model.url, model_api_key="sk-real-provider-key"
        )
        result = world.run(settings, pr)
        seen = model.requests
    assert result.summary == "http://127.0.0.1:18080/v1/responses"  # the sandbox's own loopback
    assert result.recommendation.startswith("event: response.created")
    assert len(seen) == 1
    assert seen[0].header("authorization") == "Bearer sk-real-provider-key"
    assert "landbot-placeholder-key" not in seen[0].raw


@pytest.mark.parametrize("visible", [True, False], ids=["key-visible", "control"])
def test_a_job_that_would_see_the_app_key_does_not_start(world: World, visible: bool) -> None:
    # The operator lists a toolchain folder that happens to hold the App's key.
    tools = world.root / "toolchain"
    tools.mkdir(mode=0o755)
    key = (tools if visible else world.root) / "app.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\nAPP-KEY-SECRET\n")
    settings = world.command_settings(FIX_APP)
    settings = settings.model_copy(
        update={
            "github": settings.github.model_copy(update={"private_key_file": key}),
            "sandbox": SandboxSettings(read_only=[tools]),
        }
    )
    pr = world.gh.open_pull_request(world.repo, head="feat", files={"app.py": "ANSWER = 40\n"})
    if visible:
        with pytest.raises(LandbotError, match=r"app\.pem would be visible inside the sandbox"):
            world.run(settings, pr)
        assert world.pr_now(pr).head_sha == pr.head_sha  # nothing ran, nothing pushed
    else:
        assert world.run(settings, pr).verdict == "fixed"  # the same job, the key elsewhere
