"""GitHub's limits met mid-drop (issue 28, point 6), on the simulated GitHub enforcing them on
a fake clock that landbot's client shares (sim/limits.py): the primary limit at 0 until its
reset, a secondary 403 with retry-after, the content-creation limit, and GitHub answering
nothing for 60 s. Each time: no request is sent while the limit holds (the sim would refuse
it, and counts what it refuses), the drop reaches its outcome afterwards, nothing is done
twice, and it costs the calls of the control (the same drop, no limit) and no more, but for
the requests GitHub itself refused or left unanswered."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from landbot.config import Settings
from landbot.github.budget import BudgetPolicy, Planner
from landbot.github.client import GitHubClient
from landbot.intake.poll import sweep_report
from landbot.land.comments import STATUS_MARKER
from landbot.pipeline.process import Lander
from landbot.pipeline.worker import Worker
from landbot.sim import FakeGitHub, FakeGitHubServer
from landbot.sim.faults import RecordedRequest
from landbot.sim.limits import START, FakeTime, Limits
from landbot.store import Store

from .conftest import FILES, REPO, SECRET, World, github_settings, serving

# A timed-out drop, re-enqueued: re-read the PR, the check run's create (refused: the
# World's personal token may not make check runs), enqueue, the bot's login, find and
# write the status comment (README, "What each drop costs on GitHub").
DROP_CALLS = 6
COMMENTS = "POST /repos/{owner}/{repo}/issues/{issue_number}/comments"
CLIENT_TIMEOUT = 30.0  # GitHubClient's: what an unanswered request costs on the fake clock


@dataclass
class Limited:
    world: World
    time: FakeTime
    limits: Limits

    def drop(self) -> int:
        """A PR the queue drops (its checks time out); the number of the requests before
        landbot hears of it."""
        pr = self.world.open_pr("feat-slow", {"app.py": "def answer():\n    return 42  # s\n"})
        assert self.world.time_out_in_queue(pr) == "CI_TIMEOUT"
        self.pr = pr.number
        return self.world.calls()

    def requests(self, since: int) -> list[RecordedRequest]:
        return self.world.server.requests.entries[since:]

    def assert_done_once(self) -> None:
        """The drop re-enqueued, once; one status comment."""
        [drop] = self.world.store.drops()
        assert drop.outcome == "requeued", drop
        assert self.world.mutations() == ["EnqueuePullRequest"]
        status = [c for c in self.world.bot_comments(self.pr) if STATUS_MARKER in c.body]
        assert len(status) == 1


@contextmanager
def limited_world(
    tmp_path: Path, database_url: str, *, policy: BudgetPolicy | None = None
) -> Iterator[Limited]:
    """The conftest's World (a personal token), with the sim's limits and landbot's client
    on one fake clock."""
    time = FakeTime()
    limits = Limits(clock=time.clock)
    gh = FakeGitHub(tmp_path / "github", webhook_secret=SECRET)
    repo = gh.create_repo(REPO, files=FILES)
    bot = "landbot-bot"
    token = gh.create_token(bot)
    gh.add_collaborator(repo, bot, "write")
    gh.add_collaborator(repo, "alice", "write")
    with FakeGitHubServer(gh, limits=limits) as server:
        settings = Settings(
            github=github_settings(server, gh, token=token), database_url=database_url, repos=[REPO]
        )
        store = Store.open(settings.database_url)
        client = GitHubClient(
            settings.github,
            mutation_gap=0,
            sleep=time.sleep,
            clock=time.clock,
            rand=lambda: 0.5,
            planner=Planner(policy, clock=time.clock, sleep=time.sleep),
        )
        lander = Lander(settings, store, client)
        worker = Worker(store, lambda: lander, name="test-worker")
        with serving(gh, settings, store, client, server) as url:
            world = World(gh, server, repo, store, settings, client, lander, worker, url, bot)
            yield Limited(world, time, limits)


def test_control_a_drop_with_no_limit_goes_straight_through(
    tmp_path: Path, database_url: str
) -> None:
    with limited_world(tmp_path, database_url) as w:
        before = w.drop()
        w.world.settle()
        w.assert_done_once()
        assert w.world.calls() - before == DROP_CALLS, w.world.server.requests.counts()
        assert w.time.sleeps == [] and w.limits.refused == 0


def test_the_primary_limit_at_0_holds_every_call_until_its_reset(
    tmp_path: Path, database_url: str
) -> None:
    with limited_world(tmp_path, database_url) as w:
        before = w.drop()
        # Two requests left of each resource for ten minutes: the re-read and the enqueue
        # (GraphQL), the check run and the login (REST); the comments wait for the reset.
        w.limits.primary(2, reset_in=600, resources=("core", "graphql"))
        reset = float(int(START + 600))
        w.world.settle()

        w.assert_done_once()
        assert w.limits.refused == 0  # nothing was sent while the limit held
        sent = w.requests(before)
        assert len(sent) == DROP_CALLS  # and nothing more than the control
        assert [r.at for r in sent] == [START] * 4 + [pytest.approx(reset + 1)] * 2
        assert w.time.sleeps == [pytest.approx(reset + 1 - START)]


def test_a_secondary_403_with_retry_after_holds_until_it_passes(
    tmp_path: Path, database_url: str
) -> None:
    with limited_world(tmp_path, database_url) as w:
        before = w.drop()
        # The status comment meets a secondary limit; GitHub refuses anything for 60 s.
        w.world.server.faults.secondary_rate_limit(COMMENTS, retry_after=60, holds=True)
        w.world.settle()

        w.assert_done_once()
        assert w.limits.refused == 0  # nothing was sent while it held
        sent = w.requests(before)
        assert len(sent) == DROP_CALLS + 1  # the refused comment, once more
        refused = [i for i, r in enumerate(sent) if r.status == 403 and r.route == COMMENTS]
        assert len(refused) == 1
        after = sent[refused[0] + 1 :]
        assert after and all(r.at >= START + 60 for r in after)
        assert w.time.sleeps == [60.0]


@pytest.mark.parametrize(("per_minute", "waits"), [(1, [60.0]), (2, [])], ids=["limit", "control"])
def test_the_content_creation_limit_mid_drop_makes_the_comment_wait(
    tmp_path: Path, database_url: str, per_minute: int, waits: list[float]
) -> None:
    # N content-creating requests a minute, for landbot and for GitHub: the check run's
    # create goes; at 1 the status comment waits the minute out, then goes; at 2 (the
    # control) it goes at once.
    policy = BudgetPolicy(content_per_minute=per_minute)
    with limited_world(tmp_path, database_url, policy=policy) as w:
        w.limits.content(per_minute)
        before = w.drop()
        w.world.settle()

        w.assert_done_once()
        assert w.limits.refused == 0
        sent = w.requests(before)
        assert len(sent) == DROP_CALLS
        [comment] = [r for r in sent if r.route == COMMENTS]
        assert comment.at == pytest.approx(START + sum(waits))
        assert w.time.sleeps == pytest.approx(waits)


def test_github_answering_nothing_for_60_s_then_the_drop_finishes_once(
    tmp_path: Path, database_url: str
) -> None:
    with limited_world(tmp_path, database_url) as w:
        before = w.drop()
        # Each unanswered request costs the client its whole timeout on the fake clock.
        w.limits.silence(60, on_request=lambda: w.time.advance(CLIENT_TIMEOUT))
        w.world.settle()

        w.assert_done_once()
        sent = w.requests(before)
        unanswered = [r for r in sent if r.status == 0]
        # The re-read, unanswered twice (at 0 and 30.75 s), answered at 62.25 s after the
        # retry policy's backoff (0.75 s, 1.5 s): a read, so repeating it is safe.
        assert [r.at for r in unanswered] == [START, START + 30.75]
        assert len(sent) == DROP_CALLS + 2
        assert all(r.at >= START + 60 for r in sent if r.status != 0)
        assert w.time.sleeps == [0.75, 1.5]


def test_a_sweep_under_the_reserve_yields_while_a_drop_still_goes(
    tmp_path: Path, database_url: str
) -> None:
    with limited_world(tmp_path, database_url) as w:
        # 400 GraphQL points of 5,000 left: under the sweep's reserve (10 %).
        w.limits.primary(400, reset_in=600, resources=("graphql",))
        now, repo = w.world.gh.clock.now(), w.world.repo.full_name
        first = sweep_report(w.world.store, w.world.client, repo, now=now)
        assert first.deferred is None and w.world.calls() == 1  # control: it went
        second = sweep_report(w.world.store, w.world.client, repo, now=now)
        assert second.deferred is not None and "399 of 5000 graphql left" in second.deferred
        assert w.world.calls() == 1  # the second sent nothing

        before = w.drop()
        w.world.settle()  # a drop's calls still go, on the same budget
        w.assert_done_once()
        assert w.world.calls() - before == DROP_CALLS
        assert w.time.sleeps == [] and w.limits.refused == 0
