"""The `landbot` check run and the fixing label, end to end through the simulated GitHub with
landbot authenticated as a GitHub App (GitHub takes check runs from Apps only; the sim
refuses a personal token the same way, and validates each request body against githubkit's
types generated from GitHub's OpenAPI description).

In progress while triage runs, then the conclusion of the drop's outcome with the hand-back
text as its summary and annotations on the lines the failing job names; one run even when
GitHub's answer to the create is lost; none for a pull request landbot leaves before
looking; landbot's own check-run webhooks start nothing."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from landbot.core.model import Drop, Evidence, FixerResult
from landbot.github.ops import GitHubOps
from landbot.intake import events
from landbot.land.checks import CHECK_NAME, external_id
from landbot.land.comments import HANDBACK_MARKER
from landbot.pipeline import deliveries
from landbot.pipeline.process import Lander
from landbot.pipeline.worker import Worker
from landbot.sim import CheckScenario
from landbot.store import Store
from landbot.triage.gather import Gatherer

from .conftest import SLUG, World
from .triage_support import fixture_log, handbacks, queue_and_fail

REAL = Path(__file__).parents[1] / "triage" / "real"
CREATE = "POST /repos/{owner}/{repo}/check-runs"
UPDATE = "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}"
LIST = "GET /repos/{owner}/{repo}/commits/{ref}/check-runs"
ADD_LABEL = "POST /repos/{owner}/{repo}/issues/{issue_number}/labels"
REMOVE_LABEL = "DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}"
# A real pytest job log (tests/triage/real/python/SOURCES.md: docling, two failed asserts
# at tests/test_backend_markdown.py:41 and tests/test_backend_msword.py:96), served as the
# failing job's log, byte for byte.
PYTEST_LOG = "docling-pytest-markdown-and-docx-asserts.log"
NPM_FLAKE = CheckScenario.failing(
    "build", step="Install dependencies", run="npm ci", log=fixture_log("npm-econnreset.log")
)

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)


def relander(world: World, **kw: Any) -> Lander:
    """A new Lander (and worker) for the World: a failpoint, a gather to watch, a fixer."""
    fixer = kw.pop("fixer", None)
    lander = Lander(world.settings, world.store, world.client, **kw)
    world.lander = lander
    world.worker = Worker(world.store, lambda: lander, fixer=fixer, name="test-worker")
    return lander


def runs(world: World, sha: str) -> list[Any]:
    """landbot's check runs on `sha`, as the sim holds them."""
    return world.gh.check_runs_by(world.repo, sha, SLUG)


def pr_url(world: World, number: int) -> str:
    return f"{world.gh.urls.web}/{world.repo.full_name}/pull/{number}"


def real_log(folder: str, name: str) -> str:
    return (REAL / folder / name).read_bytes().decode("utf-8")


def watching_gather(world: World, seen: list[tuple[str, str | None]]) -> Any:
    """Triage as usual, noting landbot's check run on the drop's head as triage starts."""
    real = Gatherer.from_settings(world.settings)

    def gather(gh: GitHubOps, store: Store, drop: Drop) -> Evidence:
        seen.extend((r.status, r.conclusion) for r in runs(world, drop.head_sha))
        return real(gh, store, drop)

    return gather


def test_a_failed_check_handed_back(app_world: World) -> None:
    world = app_world
    seen: list[tuple[str, str | None]] = []
    relander(world, gather=watching_gather(world, seen))
    scenario = CheckScenario.failing(
        "pytest", step="Run tests", run="pytest", log=real_log("python", PYTEST_LOG)
    )
    pr, _ = queue_and_fail(world, "feat-fail", scenario)
    before = world.server.requests.counts()
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back"
    assert seen == [("in_progress", None)]  # while triage ran
    [run] = runs(world, drop.head_sha)
    assert (run.name, run.status, run.conclusion) == (CHECK_NAME, "completed", "action_required")
    assert run.external_id == external_id(drop.id)
    [handback] = handbacks(world, pr.number)
    assert run.details_url == f"{pr_url(world, pr.number)}#issuecomment-{handback.id}"
    assert run.title == "Handed back: fix the failing checks"
    # The summary is the hand-back's text without its marker and its mention.
    assert "<!--" not in run.summary and "@alice" not in run.summary
    assert "**What to decide:** Fix the failing checks below" in run.summary
    body = handback.body.split("\n", 2)[2].rsplit("<!-- landbot:drop", 1)[0]
    assert body in run.summary
    places = [(a.path, a.start_line, a.end_line, a.annotation_level) for a in run.api_annotations]
    assert places == [
        ("tests/test_backend_markdown.py", 41, 41, "failure"),
        ("tests/test_backend_msword.py", 96, 96, "failure"),
    ]
    # One create and one update: the check costs two calls per drop.
    after = world.server.requests.counts()
    assert (after[CREATE] - before[CREATE], after[UPDATE] - before[UPDATE]) == (1, 1)


def test_a_flaky_failure_requeued_is_a_success(app_world: World) -> None:
    world = app_world
    queue_and_fail(world, "feat-flaky", NPM_FLAKE)
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "requeued"
    [run] = runs(world, drop.head_sha)
    assert (run.status, run.conclusion) == ("completed", "success")
    assert run.title == "Re-enqueued: the failure is not this pull request's fault"
    assert "landbot put it back in the queue once for this commit" in run.summary
    assert run.api_annotations == []  # not the author's to fix: no red marks
    assert run.details_url == pr_url(world, drop.pr)


def test_a_manual_removal_left_alone_is_neutral_and_by_default_costs_nothing(
    app_world: World,
) -> None:
    world = app_world
    pr = world.open_pr("feat-manual", {"b.txt": "b\n"})
    world.gh.enqueue(pr, actor="alice")
    world.gh.dequeue(pr, actor="alice")
    before = world.server.requests.total
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "ignored" and runs(world, drop.head_sha) == []
    assert world.server.requests.total == before  # decided from the webhook alone
    # A host that wants a note on a person's removal: landbot looks, and leaves it alone.
    world.settings.policy.reasons = {"manual": "note"}
    world.gh.enqueue(world.gh.pull(world.repo, pr.number), actor="alice")
    world.gh.dequeue(world.gh.pull(world.repo, pr.number), actor="alice")
    world.settle()
    noted = world.store.drops()[0]
    assert (noted.reason, noted.outcome) == ("manual", "ignored") and noted.id != drop.id
    [run] = runs(world, noted.head_sha)
    assert (run.status, run.conclusion) == ("completed", "neutral")
    assert run.title == "Left alone: landbot does not act on this reason"


def test_a_closed_pr_gets_no_check_run(app_world: World) -> None:
    world = app_world
    pr, _ = queue_and_fail(world, "feat-closed", CheckScenario.failing())
    world.gh.close_pull_request(pr, actor="alice")
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "ignored" and runs(world, drop.head_sha) == []
    assert world.server.requests.count(CREATE) == 0


def test_a_lost_answer_to_the_create_makes_one_check_run(app_world: World) -> None:
    world = app_world
    # GitHub makes the run, then answers 502: landbot finds it by its external_id.
    world.server.faults.fail(CREATE, 502, take_effect=True)
    queue_and_fail(world, "feat-lost", CheckScenario.failing())
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back"
    [run] = runs(world, drop.head_sha)
    assert run.conclusion == "action_required"
    assert world.server.requests.count(CREATE) == 1  # not sent again: it was there


class Crash(Exception):
    """A worker killed at a failpoint (the job is left to be taken again)."""


def test_a_worker_killed_after_the_create_resumes_with_the_same_run(app_world: World) -> None:
    world = app_world
    armed = ["after_check_create"]

    def failpoint(name: str) -> None:
        if name in armed:
            armed.remove(name)
            raise Crash(name)

    lander = relander(world, failpoint=failpoint)
    queue_and_fail(world, "feat-crash", CheckScenario.failing())
    with pytest.raises(Crash):
        world.settle()
    [drop] = world.store.drops()
    assert drop.id is not None
    [made] = runs(world, drop.head_sha)
    assert made.status == "in_progress"
    lander.process(drop.id)  # the next worker: the ledger says "started", so it looks first
    [run] = runs(world, drop.head_sha)
    assert (run.id, run.conclusion) == (made.id, "action_required")
    assert world.server.requests.count(CREATE) == 1
    assert world.store.drop(drop.id).outcome == "handed_back"  # type: ignore[union-attr]


def test_a_refused_check_run_does_not_fail_the_drop(world: World) -> None:
    # conftest's World uses a personal token: GitHub refuses it check runs (403).
    pr, _ = queue_and_fail(world, "feat-token", CheckScenario.failing())
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back"  # the comment is the notification
    assert len(handbacks(world, pr.number)) == 1
    assert world.server.requests.count(CREATE, status=403) == 1
    assert world.server.requests.count(UPDATE) == 0  # nothing to complete
    assert world.gh.check_runs_by(world.repo, drop.head_sha, "landbot") == []


def test_after_a_403_the_next_drop_does_not_ask_again(world: World) -> None:
    # Each drop paying a refused call and a warning under a personal token would be noise.
    queue_and_fail(world, "feat-token-1", CheckScenario.failing())
    world.settle()
    queue_and_fail(world, "feat-token-2", CheckScenario.failing())
    world.settle()
    assert [d.outcome for d in world.store.drops()] == ["handed_back", "handed_back"]
    assert world.server.requests.count(CREATE) == 1


def test_two_drops_get_two_check_runs_where_github_allows_them(app_world: World) -> None:
    # The control of the pause above: an App is asked for each drop.
    world = app_world
    queue_and_fail(world, "feat-app-1", CheckScenario.failing())
    world.settle()
    queue_and_fail(world, "feat-app-2", CheckScenario.failing())
    world.settle()
    assert world.server.requests.count(CREATE, status=201) == 2
    for drop in world.store.drops():
        [run] = runs(world, drop.head_sha)
        assert run.conclusion == "action_required"


def test_landbot_ignores_its_own_check_run_webhooks(app_world: World) -> None:
    world = app_world
    pr, _ = queue_and_fail(world, "feat-own", CheckScenario.failing())
    world.settle()
    [drop] = world.store.drops()
    # GitHub told landbot of its own run's creation and completion...
    own = [
        d
        for d in world.gh.deliveries_of("check_run")
        if d.payload["check_run"]["app"]["slug"] == SLUG
    ]
    assert sorted(d.payload["action"] for d in own) == ["completed", "created"]
    assert own[-1].payload["check_run"]["conclusion"] == "action_required"
    # ...and of the merge group's failed run (the control: that one is recorded).
    groups = world.store.groups_for(world.repo.full_name, pr.number)
    names = [f["name"] for g in groups for f in g.failures or ()]
    assert names and CHECK_NAME not in names, names
    # Sent again, landbot's own deliveries start nothing: no drop, no job, no call.
    before, jobs = world.server.requests.total, len(world.store.jobs())
    for d in own:
        assert d.send(world.webhook_url).status_code in (200, 202)
    world.settle()
    assert [d.id for d in world.store.drops()] == [drop.id]
    assert len(world.store.jobs()) == jobs and world.server.requests.total == before
    # GitHub names the suite's branch (the sim leaves it null): for landbot's run, the PR's
    # own branch, which is not a merge group's, so the route records nothing...
    [completed] = [d for d in own if d.action == "completed"]
    payload = copy.deepcopy(completed.payload)
    payload["check_run"]["check_suite"]["head_branch"] = pr.head_ref
    assert apply(world, payload) == "not a failed merge-group check run"
    # ...while the same failed run on a merge group's branch would be recorded (the control).
    group = f"gh-readonly-queue/main/pr-{pr.number}-{'a' * 40}"
    payload["check_run"]["check_suite"]["head_branch"] = group
    assert apply(world, payload) == f"failed check run {CHECK_NAME} on group of #{pr.number}"


def apply(world: World, payload: dict[str, Any]) -> str:
    """Hand one check_run delivery to intake as the worker does."""
    body = json.dumps(payload).encode()
    delivery = events.parse(f"test-{id(payload)}", "check_run", world.gh.clock.now(), body)
    return deliveries.apply(delivery, world.store)


# --- the fixing label ---------------------------------------------------------------------


def fake_fixer(world: World, labels_seen: list[tuple[str, ...]]) -> Any:
    """A fixer that needs a person, noting the PR's labels while it runs."""

    def fix(drop: Drop, evidence: Evidence) -> FixerResult:
        labels_seen.append(tuple(world.gh.pull(world.repo, drop.pr).labels))
        return FixerResult("needs_human", summary="the test and the code disagree")

    return fix


def test_the_fixing_label_is_on_while_the_fixer_works(app_world: World) -> None:
    world = app_world
    world.settings.policy.fixing_label = "landbot:fixing"
    labels: list[tuple[str, ...]] = []
    relander(world, fixer_enabled=True, fixer=fake_fixer(world, labels))
    pr, _ = queue_and_fail(world, "feat-fixing", CheckScenario.failing())
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "handed_back"
    assert labels == [("landbot:fixing",)]  # on while the fixer ran
    assert "landbot:fixing" not in world.gh.pull(world.repo, pr.number).labels  # off after
    assert world.server.requests.count(ADD_LABEL) == 1
    assert world.server.requests.count(REMOVE_LABEL) == 1
    [run] = runs(world, drop.head_sha)
    assert run.conclusion == "action_required" and "the test and the code disagree" in run.summary


def test_no_label_call_at_all_when_it_is_off(app_world: World) -> None:
    world = app_world
    assert world.settings.policy.fixing_label == ""  # the default
    labels: list[tuple[str, ...]] = []
    relander(world, fixer_enabled=True, fixer=fake_fixer(world, labels))
    pr, _ = queue_and_fail(world, "feat-nolabel", CheckScenario.failing())
    world.settle()
    assert world.store.drops()[0].outcome == "handed_back" and labels == [()]
    assert world.server.requests.count(ADD_LABEL) == 0
    assert world.server.requests.count(REMOVE_LABEL) == 0
    assert HANDBACK_MARKER in handbacks(world, pr.number)[0].body


def test_a_push_while_the_fix_job_waits_ends_the_check_and_takes_the_label_off(
    app_world: World,
) -> None:
    world = app_world
    world.settings.policy.fixing_label = "landbot:fixing"
    labels: list[tuple[str, ...]] = []
    lander = relander(world, fixer_enabled=True, fixer=fake_fixer(world, labels))
    # No fix job is handed out (all the fixer's slots are taken): it waits in the queue.
    world.worker = Worker(
        world.store,
        lambda: lander,
        fixer=fake_fixer(world, labels),
        fixer_concurrency=0,
        name="test-worker",
    )
    pr, _ = queue_and_fail(world, "feat-waits", CheckScenario.failing())
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "pending"
    [run] = runs(world, drop.head_sha)
    assert run.status == "in_progress"
    assert "landbot:fixing" in world.gh.pull(world.repo, pr.number).labels
    # The author pushes: the waiting fix job is cancelled, and with it the drop.
    world.gh.push(world.repo, "feat-waits", {"app.py": "def answer():\n    return 42\n"})
    world.settle()
    [drop] = world.store.drops()
    assert drop.outcome == "ignored" and labels == []  # the fixer never ran
    [run] = runs(world, drop.head_sha)
    assert (run.status, run.conclusion) == ("completed", "neutral")
    assert "landbot:fixing" not in world.gh.pull(world.repo, pr.number).labels
    assert world.server.requests.count(REMOVE_LABEL) == 1
