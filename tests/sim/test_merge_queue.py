"""The merge-queue simulation on real git repositories."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from landbot.sim import CheckScenario, FakeGitHub
from landbot.sim.git import read_file
from landbot.sim.scenarios import CheckContext
from landbot.sim.state import Repository

RunGit = Callable[..., str]


def _events(gh: FakeGitHub) -> list[tuple[str, str | None, object]]:
    return [(d.event, d.action, d.payload.get("reason")) for d in gh.deliveries]


def _parents(repo: Repository, sha: str) -> list[str]:
    out = subprocess.run(
        ["git", f"--git-dir={repo.git_dir}", "rev-list", "--parents", "-n1", sha],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return out[1:]


def test_a_passing_pr_merges_with_real_git(
    gh: FakeGitHub, repo: Repository, tmp_path: Path, run_git: RunGit
) -> None:
    base_before = repo.known_refs["refs/heads/main"]
    pr = gh.open_pull_request(
        repo, head="feature", files={"app.py": "ANSWER = 42\n"}, author="alice"
    )
    gh.enqueue(pr, actor="maintainer")
    gh.webhooks.clear()

    built = gh.queue_step(repo)
    assert built is not None and built.action == "built"
    group_sha = built.group_sha
    assert group_sha is not None
    group_ref = f"refs/heads/gh-readonly-queue/main/pr-{pr.number}-{base_before}"
    assert repo.known_refs[group_ref] == group_sha
    assert _parents(repo, group_sha) == [base_before, pr.head_sha]
    [requested] = gh.deliveries_of("merge_group", "checks_requested")
    assert requested.payload["merge_group"]["head_sha"] == group_sha
    assert requested.payload["merge_group"]["head_ref"] == group_ref
    assert requested.payload["merge_group"]["base_sha"] == base_before
    assert requested.payload["merge_group"]["base_ref"] == "refs/heads/main"
    [run] = gh.deliveries_of("workflow_run", "completed")
    assert run.payload["workflow_run"]["event"] == "merge_group"
    assert run.payload["workflow_run"]["head_branch"] == group_ref.removeprefix("refs/heads/")
    assert run.payload["workflow_run"]["pull_requests"] == []

    decided = gh.queue_step(repo)
    assert decided is not None and (decided.action, decided.reason) == ("merged", "MERGE")
    assert repo.known_refs["refs/heads/main"] == group_sha
    assert group_ref not in repo.known_refs  # GitHub deletes the temporary branch
    assert pr.merged and pr.graphql_state == "MERGED" and pr.merge_commit_sha == group_sha
    assert _events(gh)[-5:] == [
        ("push", None, None),  # main fast-forwards to the group commit
        ("merge_group", "destroyed", "merged"),
        ("push", None, None),  # the temporary branch is deleted
        ("pull_request", "dequeued", "MERGE"),
        ("pull_request", "closed", None),
    ]
    pushes = [d.payload for d in gh.deliveries_of("push")[-2:]]
    assert [(p["ref"], p["after"], p["deleted"]) for p in pushes] == [
        ("refs/heads/main", group_sha, False),
        (group_ref, "0" * 40, True),
    ]
    closed = gh.deliveries_of("pull_request", "closed")[0].payload
    assert closed["pull_request"]["merged"] is True

    # What landbot would fetch through LANDBOT_GITHUB__GIT_URL is the merged tree.
    checkout = tmp_path / "checkout"
    run_git("clone", "--quiet", gh.clone_url(repo), str(checkout))
    assert (checkout / "app.py").read_text() == "ANSWER = 42\n"
    assert run_git("rev-parse", "HEAD", cwd=checkout) == group_sha


def test_a_failing_pr_is_dropped_with_ci_failure(gh: FakeGitHub, repo: Repository) -> None:
    base_before = repo.known_refs["refs/heads/main"]
    pr = gh.open_pull_request(
        repo, head="feature", files={"app.py": "ANSWER = 43\n"}, author="alice"
    )
    gh.set_checks(
        repo,
        CheckScenario.failing(
            output=["E   assert 43 == 42", "FAILED tests/test_app.py::test_answer"]
        ),
        pr=pr,
        event="merge_group",
    )
    gh.enable_auto_merge(pr, actor="maintainer")  # PR checks pass: queued at once
    assert gh.queue_entry(pr) is not None
    gh.webhooks.clear()

    steps = gh.run_queue(repo)

    assert [(s.action, s.reason) for s in steps] == [("built", None), ("dropped", "CI_FAILURE")]
    assert repo.known_refs["refs/heads/main"] == base_before
    assert not pr.merged and pr.state == "open"
    assert pr.auto_merge is None  # GitHub switches auto-merge off
    assert [e for e in _events(gh) if e[0] in ("pull_request", "merge_group")] == [
        ("merge_group", "checks_requested", None),
        ("merge_group", "destroyed", "dequeued"),
        ("pull_request", "auto_merge_disabled", "Removed from the merge queue"),
        ("pull_request", "dequeued", "CI_FAILURE"),
    ]
    dequeued = gh.deliveries_of("pull_request", "dequeued")[0].payload
    assert dequeued["number"] == pr.number
    assert dequeued["pull_request"]["head"]["sha"] == pr.head_sha
    [removed] = [e for e in pr.timeline if e.typename == "RemovedFromMergeQueueEvent"]
    assert removed.data["reason"] == "failed_checks"
    assert removed.data["before_commit"] == pr.head_sha

    # The failed job and its log are there for triage, on the merge-group commit.
    group_sha = steps[0].group_sha
    [job] = [j for j in gh.jobs.values() if j.head_sha == group_sha]
    assert job.conclusion == "failure"
    assert [s.conclusion for s in job.steps if s.name == "Run tests"] == ["failure"]
    assert "E   assert 43 == 42" in job.log
    assert job.log.rstrip().splitlines()[-1].endswith("Cleaning up orphan processes")


def test_a_conflicting_pr_is_dropped_with_merge_conflict(gh: FakeGitHub, repo: Repository) -> None:
    first = gh.open_pull_request(repo, head="first", files={"app.py": "ANSWER = 42\n"})
    second = gh.open_pull_request(repo, head="second", files={"app.py": "ANSWER = 44\n"})
    gh.enqueue(first, actor="maintainer")
    gh.enqueue(second, actor="maintainer")
    gh.webhooks.clear()

    steps = gh.run_queue(repo)

    assert [(s.pr, s.action, s.reason) for s in steps] == [
        (first.number, "built", None),
        (first.number, "merged", "MERGE"),
        (second.number, "dropped", "MERGE_CONFLICT"),
    ]
    assert steps[-1].conflicts == ("app.py",)
    assert second.state == "open" and not second.merged
    # No merge group was ever made for the conflicting PR.
    groups = [
        d.payload["merge_group"]["head_ref"]
        for d in gh.deliveries_of("merge_group", "checks_requested")
    ]
    assert groups == [f"refs/heads/gh-readonly-queue/main/pr-{first.number}-{first.base_sha}"]
    assert gh.deliveries_of("pull_request", "dequeued")[-1].payload["reason"] == "MERGE_CONFLICT"
    removed = [e for e in second.timeline if e.typename == "RemovedFromMergeQueueEvent"]
    assert removed[-1].data["reason"] == "merge_conflict"
    main = repo.known_refs["refs/heads/main"]
    assert read_file(repo.require_git(), main, "app.py") == b"ANSWER = 42\n"


def test_checks_that_never_report_time_out(gh: FakeGitHub, repo: Repository) -> None:
    pr = gh.open_pull_request(repo, head="slow", files={"app.py": "ANSWER = 42\n"})
    gh.set_checks(repo, CheckScenario.pending(), pr=pr, event="merge_group")
    gh.enqueue(pr, actor="maintainer")
    assert gh.queue_step(repo).action == "built"  # type: ignore[union-attr]
    gh.clock.advance(minutes=59)
    assert gh.queue_step(repo).action == "waiting"  # type: ignore[union-attr]  # control
    gh.clock.advance(minutes=2)
    dropped = gh.queue_step(repo)
    assert dropped is not None and (dropped.action, dropped.reason) == ("dropped", "CI_TIMEOUT")
    removed = [e for e in pr.timeline if e.typename == "RemovedFromMergeQueueEvent"]
    assert removed[-1].data["reason"] == "checks_timed_out"
    assert gh.deliveries_of("pull_request", "dequeued")[-1].payload["reason"] == "CI_TIMEOUT"


def test_pending_checks_completed_later_merge(gh: FakeGitHub, repo: Repository) -> None:
    pr = gh.open_pull_request(repo, head="slow", files={"app.py": "ANSWER = 42\n"})
    gh.set_checks(repo, CheckScenario.pending(), pr=pr, event="merge_group")
    gh.enqueue(pr, actor="maintainer")
    built = gh.queue_step(repo)
    assert built is not None and built.group_sha is not None
    assert gh.queue_step(repo).action == "waiting"  # type: ignore[union-attr]
    assert gh.complete_checks(repo, built.group_sha, "success") == 1
    assert gh.queue_step(repo).action == "merged"  # type: ignore[union-attr]


def test_auto_merge_waits_for_passing_checks(gh: FakeGitHub, repo: Repository) -> None:
    gh.set_checks(repo, CheckScenario.failing(), event="pull_request")
    red = gh.open_pull_request(repo, head="red", files={"red.txt": "1\n"})
    gh.enable_auto_merge(red, actor="maintainer")
    assert gh.queue_entry(red) is None and red.auto_merge is not None  # armed, not queued

    gh.set_checks(repo, CheckScenario.passing(), pr=red, event="pull_request")
    gh.push(repo, "red", {"red.txt": "2\n"}, author="maintainer")  # new head, checks re-run
    assert gh.queue_entry(red) is not None  # control: green checks enqueue it
    assert (
        gh.deliveries_of("pull_request", "enqueued")[-1].payload["sender"]["login"] == "maintainer"
    )


def test_a_push_without_write_access_switches_auto_merge_off(
    gh: FakeGitHub, repo: Repository
) -> None:
    gh.set_checks(repo, CheckScenario.pending(), event="pull_request")
    pr = gh.open_pull_request(repo, head="feature", files={"x.txt": "1\n"}, author="alice")
    gh.enable_auto_merge(pr, actor="maintainer")
    gh.push(repo, "feature", {"x.txt": "2\n"}, author="maintainer")
    assert pr.auto_merge is not None  # control: a writer's push keeps it
    gh.push(repo, "feature", {"x.txt": "3\n"}, author="alice")  # alice can only read
    assert pr.auto_merge is None
    assert (
        gh.deliveries_of("pull_request", "auto_merge_disabled")[-1].payload["sender"]["login"]
        == "alice"
    )


def test_a_git_push_to_a_queued_head_removes_it(
    gh: FakeGitHub, repo: Repository, tmp_path: Path, run_git: RunGit
) -> None:
    pr = gh.open_pull_request(repo, head="feature", files={"app.py": "ANSWER = 42\n"})
    gh.enqueue(pr, actor="maintainer")
    gh.queue_step(repo)
    assert gh.queue_entry(pr) is not None  # control: queued until the push
    old_head = pr.head_sha

    work = tmp_path / "work"
    run_git("clone", "--quiet", "--branch", "feature", gh.clone_url(repo), str(work))
    (work / "app.py").write_text("ANSWER = 42  # fixed\n")
    run_git("commit", "--quiet", "-am", "fix", cwd=work)
    # Pushed the way landbot pushes, hooks off: the model notices on its next sync.
    run_git("-c", "core.hooksPath=/dev/null", "push", "--quiet", "origin", "feature", cwd=work)
    new_head = run_git("rev-parse", "HEAD", cwd=work)

    changes = gh.sync()

    assert ("acme/widgets", "refs/heads/feature", old_head, new_head) in changes
    assert pr.head_sha == new_head
    assert gh.queue_entry(pr) is None
    assert (
        gh.deliveries_of("pull_request", "dequeued")[-1].payload["reason"]
        == "UNKNOWN_REMOVAL_REASON"
    )
    sync = gh.deliveries_of("pull_request", "synchronize")[-1].payload
    assert (sync["before"], sync["after"]) == (old_head, new_head)
    assert gh.deliveries_of("merge_group", "destroyed")[-1].payload["reason"] == "dequeued"
    pull_ref = subprocess.run(
        ["git", f"--git-dir={repo.git_dir}", "rev-parse", f"refs/pull/{pr.number}/head"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert pull_ref == new_head


def test_a_push_to_the_base_invalidates_a_built_group(gh: FakeGitHub, repo: Repository) -> None:
    pr = gh.open_pull_request(repo, head="feature", files={"feature.txt": "x\n"})
    gh.enqueue(pr, actor="maintainer")
    first = gh.queue_step(repo)
    gh.push(repo, "main", {"README.md": "# widgets, moved on\n"}, author="maintainer")
    assert gh.deliveries_of("merge_group", "destroyed")[-1].payload["reason"] == "invalidated"
    rebuilt = gh.queue_step(repo)
    assert rebuilt is not None and rebuilt.action == "built"
    assert first is not None and rebuilt.group_sha != first.group_sha
    assert gh.queue_step(repo).action == "merged"  # type: ignore[union-attr]
    main = repo.known_refs["refs/heads/main"]
    assert read_file(repo.require_git(), main, "README.md") == b"# widgets, moved on\n"
    assert read_file(repo.require_git(), main, "feature.txt") == b"x\n"


def test_a_fork_pr_merges_through_the_queue(gh: FakeGitHub, repo: Repository) -> None:
    pr = gh.open_pull_request(
        repo,
        head="patch",
        files={"app.py": "ANSWER = 42\n"},
        fork="contributor",
        author="contributor",
    )
    assert pr.is_fork and pr.head_repo.full_name == "contributor/widgets"
    payload = gh.deliveries_of("pull_request", "opened")[-1].payload
    assert payload["pull_request"]["head"]["repo"]["full_name"] == "contributor/widgets"
    assert payload["pull_request"]["head"]["repo"]["fork"] is True
    gh.enqueue(pr, actor="maintainer")
    steps = gh.run_queue(repo)
    assert steps[-1].action == "merged"
    main = repo.known_refs["refs/heads/main"]
    assert read_file(repo.require_git(), main, "app.py") == b"ANSWER = 42\n"


def test_a_scenario_can_read_the_commit_under_test(gh: FakeGitHub, repo: Repository) -> None:
    seen: list[CheckContext] = []

    def ci(ctx: CheckContext) -> CheckScenario:
        seen.append(ctx)
        broken = "BROKEN" in (ctx.read_file("app.py") or "")
        return CheckScenario.failing() if broken else CheckScenario.passing()

    gh.set_checks(repo, ci)
    good = gh.open_pull_request(repo, head="good", files={"good.txt": "ok\n"})
    bad = gh.open_pull_request(repo, head="bad", files={"app.py": "BROKEN\n"})
    assert gh.checks_state(repo, good.head_sha) == "success"
    assert gh.checks_state(repo, bad.head_sha) == "failure"
    gh.enqueue(good, actor="maintainer")
    gh.enqueue(bad, actor="maintainer")
    steps = gh.run_queue(repo)
    assert [(s.pr, s.action) for s in steps if s.action != "built"] == [
        (good.number, "merged"),
        (bad.number, "dropped"),
    ]
    assert {c.event for c in seen} == {"pull_request", "merge_group"}


def test_queue_refuses_what_github_refuses(gh: FakeGitHub, repo: Repository) -> None:
    from landbot.sim import Unprocessable

    pr = gh.open_pull_request(repo, head="feature", files={"x.txt": "1\n"})
    with pytest.raises(Unprocessable, match="not in the queue"):
        gh.dequeue(pr, actor="maintainer")
    gh.set_merge_queue(repo, "main", enabled=False)
    with pytest.raises(Unprocessable, match="not enabled"):
        gh.enqueue(pr, actor="maintainer")
    gh.set_merge_queue(repo, "main", enabled=True)
    gh.enqueue(pr, actor="maintainer")  # control
    with pytest.raises(Unprocessable, match="already in the queue"):
        gh.enqueue(pr, actor="maintainer")


def test_a_repository_can_start_from_existing_history(
    gh: FakeGitHub, tmp_path: Path, run_git: RunGit
) -> None:
    src = tmp_path / "src"
    run_git("init", "--quiet", "--initial-branch=main", str(src))
    (src / "a.txt").write_text("1\n")
    run_git("add", "a.txt", cwd=src)
    run_git("commit", "--quiet", "-m", "one", cwd=src)
    (src / "a.txt").write_text("2\n")
    run_git("commit", "--quiet", "-am", "two", cwd=src)
    head = run_git("rev-parse", "HEAD", cwd=src)

    repo = gh.create_repo("acme/history", import_git=src)
    assert repo.known_refs["refs/heads/main"] == head
    pr = gh.open_pull_request(repo, head="feature", files={"b.txt": "x\n"})
    assert _parents(repo, pr.head_sha) == [head]

    from_dir = gh.create_repo("acme/flat", source_dir=src)  # files only, one commit
    main = from_dir.known_refs["refs/heads/main"]
    assert _parents(from_dir, main) == []
    assert read_file(from_dir.require_git(), main, "a.txt") == b"2\n"
    assert read_file(from_dir.require_git(), main, ".git/HEAD") is None
