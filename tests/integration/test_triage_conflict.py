"""A MERGE_CONFLICT drop: the base merged into the head in a real git mirror fetched from
the simulated GitHub, the conflicting files listed, and a quest-only conflict sent to the
quest merge driver instead of a person."""

from __future__ import annotations

from pathlib import Path

from .conftest import World
from .triage_support import evidence_of, handbacks

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)

CONFLICT_CALLS = 7
QUEST = "# [S] Widgets\n\n## Required\n\n- [base](../README.md)\n"


def use_mirrors(world: World, root: Path) -> None:
    # Read at the first conflict, as the fixer reads it: both share the mirrors there.
    world.settings.fixer.state_dir = root


def conflict(world: World, head: str, path: str, ours: str, theirs: str) -> tuple[object, str]:
    """A PR and the base branch both change `path`: the queue drops the PR on a conflict."""
    world.gh.push(world.repo, "main", {path: "base\n"}, message="Add")
    pr = world.open_pr(head, {path: ours})
    base = world.gh.push(world.repo, "main", {path: theirs}, message="Change on main")
    world.gh.enqueue(pr, actor="alice")
    [step] = world.gh.run_queue(world.repo)
    assert (step.action, step.reason) == ("dropped", "MERGE_CONFLICT")
    return pr, base


def test_a_code_conflict_lists_its_files(world: World, tmp_path: Path) -> None:
    use_mirrors(world, tmp_path / "state")
    pr, base = conflict(world, "feat-conflict", "app.py", "ours\n", "theirs\n")
    before = world.calls()
    world.settle()
    cost = world.calls() - before
    [drop] = world.store.drops()
    ev = evidence_of(drop)
    assert (drop.reason, drop.outcome) == ("merge_conflict", "handed_back")
    assert ev["conflict_files"] == ["app.py"] and ev["conflicts_all_quest"] is False
    assert ev["base_sha"] == base  # the base as fetched: main after the conflicting push
    assert ev["triage_reason"] == f"1 conflicting file merging `main` at {base[:7]}"
    [handback] = handbacks(world, pr.number)
    assert "**Conflicting files:**\n- `app.py`" in handback.body
    # The mirror is a real bare repository holding the PR head and the base.
    mirror = tmp_path / "state" / "mirrors" / "acme" / "widgets.git"
    assert (mirror / "HEAD").is_file()
    # Cost (README figure): the re-read, one more GraphQL read for the base branch, then
    # the comments (GET /user, the listing, the status, the hand-back), and the `landbot`
    # check run's create (refused to this World's personal token); git is not GitHub's API.
    assert world.server.requests.count("POST /graphql") == 2
    assert cost <= CONFLICT_CALLS, world.server.requests.counts()


def test_a_quest_only_conflict_goes_to_the_merge_driver(world: World, tmp_path: Path) -> None:
    use_mirrors(world, tmp_path / "state")
    conflict(
        world,
        "feat-quest-conflict",
        "quest/m0/widgets.md",
        QUEST + "- [a](a.md)\n",
        QUEST + "- [b](b.md)\n",
    )
    world.gh.webhooks.flush()
    # Work until the drop is decided (the fixer's own job is not this test's business).
    while not any(j.kind == "fix" for j in world.store.jobs()):
        assert world.worker.step(), "the worker ran out of work before deciding the drop"
    [drop] = world.store.drops()
    ev = evidence_of(drop)
    assert ev["conflict_files"] == ["quest/m0/widgets.md"] and ev["conflicts_all_quest"] is True
    assert "all quest files: the quest merge driver can merge them" in ev["triage_reason"]
    [fix] = [j for j in world.store.jobs() if j.kind == "fix"]
    assert fix.payload["mode"] == "merge_driver"
    assert drop.plan["outcome"] == "pending"


def test_a_conflict_that_is_gone_says_so(world: World, tmp_path: Path) -> None:
    """The base moved back after the drop: triage merges what it fetched, and says the
    conflict is gone rather than listing stale files."""
    use_mirrors(world, tmp_path / "state")
    conflict(world, "feat-gone", "app.py", "ours\n", "theirs\n")
    world.gh.push(world.repo, "main", {"app.py": "ours\n"}, message="Agree with the PR")
    world.settle()
    [drop] = world.store.drops()
    ev = evidence_of(drop)
    assert ev["conflict_files"] == [] and ev["conflicts_all_quest"] is False
    assert "now merges cleanly" in ev["triage_reason"]
