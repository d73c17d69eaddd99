"""The demo's CI: it runs `landbot quest check` and the project's tests for real on the
commit under test, and the logs it serves are ones landbot's triage reads the way the
stories need (policy, infrastructure, genuine), each with a control that passes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from landbot.demo import project
from landbot.demo.ci import DemoCI
from landbot.sim import FakeGitHub
from landbot.sim.state import PullRequest, Repository
from landbot.triage.explain import explain_log


@dataclass
class CiWorld:
    gh: FakeGitHub
    repo: Repository
    ci: DemoCI
    pulls: dict[str, PullRequest]

    def group(self, key: str) -> tuple[str, dict[str, str]]:
        """Queue one pull request alone; (what the queue did, job name -> log)."""
        pr = self.pulls[key]
        self.gh.enqueue(pr, actor=pr.author)
        built = self.gh.queue_step(self.repo)
        assert built is not None and built.action == "built", built
        decided = self.gh.queue_step(self.repo)
        assert decided is not None
        logs = {
            job.name: job.log for job in self.gh.jobs.values() if job.head_sha == built.group_sha
        }
        return decided.action, logs


def make_world(root: Path, *, pr_checks: bool) -> CiWorld:
    project.build_repository(root / "calc")
    gh = FakeGitHub(root / "github", auto_checks=pr_checks)
    repo = gh.create_repo(project.REPO, import_git=root / "calc")
    assert repo.git_dir is not None
    ci = DemoCI(bare=repo.git_dir, runners=root / "runners")
    gh.set_checks(repo, ci)
    pulls = {
        p.key: gh.open_pull_request(repo, head=p.branch, title=p.title, author=p.author)
        for p in project.PULLS
    }
    ci.flaky_pulls = frozenset({pulls["flaky"].number})
    return CiWorld(gh, repo, ci, pulls)


@pytest.fixture
def world(root: Path) -> CiWorld:
    """Merge groups only (the pull requests' own checks are the first test's)."""
    return make_world(root, pr_checks=False)


def explain(log: str) -> dict[str, object]:
    import json

    data: dict[str, object] = json.loads(explain_log([log.encode()]).to_json())
    return data


def test_pull_requests_get_the_quest_check_and_pass(root: Path) -> None:
    world = make_world(root, pr_checks=True)
    runs = [r for r in world.ci.runs if r.event == "pull_request"]
    assert len(runs) == len(project.PULLS)
    for run in runs:
        assert [(j.name, j.conclusion, j.exit_code) for j in run.jobs] == [("quest", "success", 0)]
        assert run.base == world.gh.branch_sha(world.repo, "main")


def test_before_the_prelude_lands_the_policy_story_passes(world: CiWorld) -> None:
    # The control of the next test: nothing requires the quest #3 deletes yet.
    action, _ = world.group("policy")
    assert action == "merged"


def test_after_the_prelude_the_policy_story_fails_with_the_finding(world: CiWorld) -> None:
    assert world.group("prelude")[0] == "merged"
    action, logs = world.group("policy")
    assert action == "dropped"
    run = world.ci.runs[-1]
    assert {j.name: j.conclusion for j in run.jobs} == {"quest": "failure", "test": "success"}
    assert run.jobs[0].findings == (project.POLICY_FINDING,)
    triage = explain(logs["quest"])
    assert triage["class"] == "policy"
    excerpt = triage["excerpt"]
    assert isinstance(excerpt, list)
    assert project.POLICY_FINDING in [line["text"] for line in excerpt]


def test_the_flaky_runner_dies_once_then_the_tests_run_and_pass(world: CiWorld) -> None:
    action, logs = world.group("flaky")
    assert action == "dropped"
    died = world.ci.runs[-1].jobs[1]
    assert died.name == "test" and died.exit_code is None  # the tests never ran
    assert explain(logs["test"])["class"] == "infrastructure"
    action, logs = world.group("flaky")
    assert action == "merged"
    ran = world.ci.runs[-1].jobs[1]
    assert ran.exit_code == 0 and ran.output[-1] == "OK"  # unittest's closing line


def test_the_stdev_bug_fails_the_tests_genuinely_and_its_fix_passes(world: CiWorld) -> None:
    action, logs = world.group("genuine")
    assert action == "dropped"
    triage = explain(logs["test"])
    assert triage["class"] == "genuine"
    assert "test_sample_standard_deviation" in str(triage["summary"])
    # Control: the one-line fix on the branch, and the same CI passes.
    fixed = project.STATS_WITH_STDEV.replace(project.STDEV_BUG, project.STDEV_FIX)
    world.gh.push(world.repo, "dave/stdev", {"calc/stats.py": fixed}, author="dave")
    world.gh.sync()
    action, _ = world.group("genuine")
    assert action == "merged"
