"""Edges of the `landbot` check run, through the simulated GitHub as an App: a hand-back
too long for a check's summary (GitHub caps it at 65535 characters) still completes the
run; a completing PATCH GitHub refuses is sent once more, bare, so the conclusion lands;
the fixing label comes off only when landbot put it on; a fix job that fails completes
the run and takes the label off."""

from __future__ import annotations

from landbot.core.model import Drop, Evidence, FixerResult
from landbot.land.checks import COMMENT_TRIMMED, MAX_COMMENT, MAX_SUMMARY, TRIMMED
from landbot.sim import CheckScenario
from landbot.sim.scenarios import JobSpec, StepSpec, WorkflowSpec, standard_steps

from .conftest import World
from .test_check_run import ADD_LABEL, REMOVE_LABEL, UPDATE, pr_url, relander, runs
from .triage_support import handbacks, queue_and_fail

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)

LABEL = "landbot:fixing"


def many_failing_jobs(jobs: int = 8, lines: int = 60, width: int = 400) -> CheckScenario:
    """`jobs` jobs whose test step fails with `lines` long assertion lines each: a hand-back
    far longer than a check run's summary may be."""
    specs = []
    for j in range(jobs):
        out = tuple(
            f"FAILED tests/test_mod{j}.py::test_{i} - AssertionError: {'x' * width}"
            for i in range(lines)
        )
        step = StepSpec("Run tests", "failure", run="pytest", output=out)
        specs.append(JobSpec(f"test-{j}", steps=standard_steps((step,))))
    return CheckScenario(workflows=(WorkflowSpec("CI", jobs=tuple(specs)),))


# --- the summary cap ---------------------------------------------------------------------


def test_a_hand_back_longer_than_a_summary_may_be_is_trimmed_and_the_run_completes(
    app_world: World,
) -> None:
    world = app_world
    pr, _ = queue_and_fail(world, "feat-long", many_failing_jobs())
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back", drop.summary
    # The comment too would be longer than GitHub takes (65536): it is trimmed the same way
    # (before the fix it was refused, and the drop failed without a word to the author).
    [handback] = handbacks(world, pr.number)
    assert COMMENT_TRIMMED in handback.body and len(handback.body) <= MAX_COMMENT
    assert 0 < handback.body.count("<details>") < 8
    [run] = runs(world, drop.head_sha)
    assert (run.status, run.conclusion) == ("completed", "action_required")
    assert world.server.requests.count(UPDATE, status=422) == 0
    assert len(run.summary) <= MAX_SUMMARY
    # Excerpts went, the rest stayed: what to decide, the jobs, how to reproduce, the link.
    assert "**What to decide:**" in run.summary and "test-7" in run.summary
    assert "Comment `/landbot retry`" in run.summary
    link = f"{pr_url(world, pr.number)}#issuecomment-{handback.id}"
    assert TRIMMED in run.summary and link in run.summary and run.details_url == link
    assert run.summary.count("<details>") <= handback.body.count("<details>")


def test_a_short_hand_back_is_not_trimmed(app_world: World) -> None:
    # The control: one job, a few lines; the whole hand-back text is the summary.
    world = app_world
    pr, _ = queue_and_fail(world, "feat-short", many_failing_jobs(jobs=1, lines=3, width=20))
    world.settle()
    [drop] = world.store.drops()
    [run] = runs(world, drop.head_sha)
    [handback] = handbacks(world, pr.number)
    assert run.conclusion == "action_required" and TRIMMED not in run.summary
    assert COMMENT_TRIMMED not in handback.body
    assert run.summary.count("<details>") == handback.body.count("<details>") == 1


def test_a_refused_complete_is_sent_once_more_bare_and_the_conclusion_lands(
    app_world: World,
) -> None:
    world = app_world
    world.server.faults.fail(UPDATE, 422, times=1)
    queue_and_fail(world, "feat-refused", CheckScenario.failing())
    world.settle()
    [drop] = world.store.drops()
    [run] = runs(world, drop.head_sha)
    assert (run.status, run.conclusion) == ("completed", "action_required")
    assert world.server.requests.count(UPDATE, status=422) == 1
    assert world.server.requests.count(UPDATE) == 2
    assert run.title == "Handed back: fix the failing checks"
    assert len(run.summary.splitlines()) == 1 and "hand-back comment" in run.summary
    assert run.api_annotations == []  # the bare output carries none


def test_a_complete_refused_twice_is_given_up_without_failing_the_drop(app_world: World) -> None:
    world = app_world
    world.server.faults.fail(UPDATE, 422, times=2)
    pr, _ = queue_and_fail(world, "feat-refused-twice", CheckScenario.failing())
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back" and len(handbacks(world, pr.number)) == 1
    assert world.server.requests.count(UPDATE) == 2  # not a third time
    [run] = runs(world, drop.head_sha)
    assert run.status == "in_progress"


# --- the fixing label a person set -------------------------------------------------------


def labels_of(world: World, number: int) -> tuple[str, ...]:
    return tuple(world.gh.pull(world.repo, number).labels)


def needs_human(drop: Drop, evidence: Evidence) -> FixerResult:
    return FixerResult("needs_human", summary="the test and the code disagree")


def test_a_fixing_label_a_person_set_stays_on(app_world: World) -> None:
    world = app_world
    world.settings.policy.fixing_label = LABEL
    relander(world, fixer_enabled=True, fixer=needs_human)
    pr, _ = queue_and_fail(world, "feat-theirs", CheckScenario.failing())
    world.gh.add_label(world.gh.pull(world.repo, pr.number), LABEL, actor="alice")
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back"
    assert LABEL in labels_of(world, pr.number)  # the person's label: not landbot's to take
    assert world.server.requests.count(ADD_LABEL) == 0
    assert world.server.requests.count(REMOVE_LABEL) == 0


def test_a_fixing_label_landbot_set_comes_off(app_world: World) -> None:
    # The control: without the person's label, landbot adds it and takes it off.
    world = app_world
    world.settings.policy.fixing_label = LABEL
    relander(world, fixer_enabled=True, fixer=needs_human)
    pr, _ = queue_and_fail(world, "feat-mine", CheckScenario.failing())
    world.settle()
    assert world.store.drops()[0].outcome == "handed_back"
    assert LABEL not in labels_of(world, pr.number)
    assert world.server.requests.count(ADD_LABEL) == 1
    assert world.server.requests.count(REMOVE_LABEL) == 1


# --- a fix job that fails ----------------------------------------------------------------


def test_a_failed_fix_job_completes_the_check_and_takes_the_label_off(app_world: World) -> None:
    world = app_world
    world.settings.policy.fixing_label = LABEL
    ran: list[int] = []

    def broken(drop: Drop, evidence: Evidence) -> FixerResult:
        ran.append(1)
        raise ValueError("the sandbox is misconfigured: set fixer.command")

    relander(world, fixer_enabled=True, fixer=broken)
    pr, _ = queue_and_fail(world, "feat-broken", CheckScenario.failing())
    world.settle()
    assert ran == [1]
    [drop] = world.store.drops()
    assert drop.outcome == "failed"
    [fix] = [j for j in world.store.jobs() if j.kind == "fix"]
    assert fix.status == "failed"
    [run] = runs(world, drop.head_sha)
    assert (run.status, run.conclusion) == ("completed", "action_required")
    assert "the sandbox is misconfigured" in run.summary
    assert LABEL not in labels_of(world, pr.number)
    assert world.server.requests.count(REMOVE_LABEL) == 1


def test_a_fix_job_that_ends_well_is_the_control(app_world: World) -> None:
    world = app_world
    world.settings.policy.fixing_label = LABEL
    relander(world, fixer_enabled=True, fixer=needs_human)
    queue_and_fail(world, "feat-fine", CheckScenario.failing())
    world.settle()
    [drop] = world.store.drops()
    [fix] = [j for j in world.store.jobs() if j.kind == "fix"]
    assert (drop.outcome, fix.status) == ("handed_back", "done")
    [run] = runs(world, drop.head_sha)
    assert "the sandbox is misconfigured" not in run.summary
