"""A quest-check failure in the merge group is handed back with the exact finding.

The merge group's CI runs the real quest checker on the group commit's tree (a callable
scenario reads the commit's files), so the finding in the log, and then in the comment,
comes from the pull request's own quest file."""

from __future__ import annotations

import tempfile
from pathlib import Path

from landbot.core.text import inert
from landbot.quest.check import check_tree
from landbot.quest.findings import failing
from landbot.sim import CheckScenario, JobSpec, StepSpec, WorkflowSpec
from landbot.sim.scenarios import CheckContext, standard_steps

from .conftest import World
from .triage_support import evidence_of, handbacks

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)

QUEST_STEP = "Check that the PR leaves its quest accurate"
QUEST_COMMAND = 'landbot quest check --base "origin/$GITHUB_BASE_REF"'
FINDING = "quest: quest/m0/widgets.md: quest title must be '# [XS|S|M|L|XL] Title'"


def quest_ci(ctx: CheckContext) -> CheckScenario:
    """The repository's quest job: `landbot quest check` over the commit under test."""
    with tempfile.TemporaryDirectory(prefix="landbot-quest-ci-") as root:
        for path in ctx.files():
            if path.startswith("quest/"):
                text = ctx.read_file(path)
                assert text is not None
                target = Path(root, path)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
        findings = failing(check_tree(root))
    step = StepSpec(
        QUEST_STEP,
        "failure" if findings else "success",
        run=QUEST_COMMAND,
        output=tuple(f.render() for f in findings),
    )
    job = JobSpec("quest", steps=standard_steps((step,)))
    return CheckScenario(workflows=(WorkflowSpec("Quest", jobs=(job,)),))


def test_a_quest_finding_is_handed_back_word_for_word(world: World) -> None:
    world.gh.set_checks(world.repo, quest_ci, event="merge_group")
    pr = world.open_pr("feat-quest", {"quest/m0/widgets.md": "# Widgets\n"})
    world.gh.enqueue(pr, actor="alice")
    assert world.gh.run_queue(world.repo)[-1].action == "dropped"
    world.settle()

    [policy] = world.store.drops()
    ev = evidence_of(policy)
    assert (policy.outcome, ev["triage_class"]) == ("handed_back", "policy")
    [job] = ev["jobs"]
    assert job["class_"] == "policy"
    assert FINDING in [text for _, text in job["excerpt"]]
    [handback] = handbacks(world, pr.number)
    body = handback.body
    assert "**What to decide:** The quest check failed." in body
    assert "**Triage:** policy: the quest check failed: job `quest`" in body
    assert f"> {FINDING}\n" in body  # the finding as an error line of the excerpt
    # Outside the excerpt's fence the summary is inert Markdown (brackets escaped), which
    # renders as the same words.
    assert (
        inert(
            "quest check found 1 problem in step "
            f"'{QUEST_STEP}': quest/m0/widgets.md: quest title must be '# [XS|S|M|L|XL] Title'"
        )
        in body
    )
    assert world.mutations() == []


def test_control_an_accurate_quest_merges(world: World) -> None:
    world.gh.set_checks(world.repo, quest_ci, event="merge_group")
    pr = world.open_pr("feat-quest-ok", {"quest/m0/widgets.md": "# [S] Widgets\n"})
    world.gh.enqueue(pr, actor="alice")
    steps = world.gh.run_queue(world.repo)
    assert [s.action for s in steps] == ["built", "merged"]
    world.settle()
    assert all(d.outcome == "ignored" for d in world.store.drops())
    assert handbacks(world, pr.number) == []
