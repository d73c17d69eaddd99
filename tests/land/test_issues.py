"""landbot's own issues through the client on the simulated GitHub: each operation, and a
create claimed before its POST so a 502 after an applied create never makes two issues."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from landbot.config import GitHubSettings
from landbot.github.client import GitHubClient
from landbot.github.errors import MutationOutcomeUnknown
from landbot.github.retry import RetryPolicy
from landbot.land.issues import find_marked, issue_key, open_issue_once
from landbot.sim import FakeGitHub, FakeGitHubServer
from landbot.sim.state import Repository
from landbot.store import Store

REPO = "acme/widgets"
CREATE = "POST /repos/{owner}/{repo}/issues"
LIST = "GET /repos/{owner}/{repo}/issues"
CONTENTS = "GET /repos/{owner}/{repo}/contents/{path}"
LABEL = "landbot:flaky"
MARKER = "<!-- landbot:flaky-test tests/test_app.py::test_answer -->"
BOT = "landbot-bot"


@pytest.fixture
def gh(tmp_path: Path) -> FakeGitHub:
    return FakeGitHub(tmp_path / "github")


@pytest.fixture
def repo(gh: FakeGitHub) -> Repository:
    repo = gh.create_repo(REPO, files={"app.py": "x = 1\n"})
    gh.add_collaborator(repo, BOT, "write")
    gh.add_collaborator(repo, "alice", "write")
    return repo


@pytest.fixture
def server(gh: FakeGitHub, repo: Repository) -> Iterator[FakeGitHubServer]:
    with FakeGitHubServer(gh) as server:
        yield server


@pytest.fixture
def client(server: FakeGitHubServer, gh: FakeGitHub) -> Iterator[GitHubClient]:
    settings = GitHubSettings(api_url=server.url, token=gh.create_token(BOT))
    c = GitHubClient(settings, mutation_gap=0, sleep=lambda _: None, policy=RetryPolicy())
    yield c
    c.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(f"sqlite:///{tmp_path / 'x.db'}")
    yield s
    s.close()


def test_each_operation(client: GitHubClient, gh: FakeGitHub, repo: Repository) -> None:
    made = client.create_issue(REPO, "Flaky: test_answer", f"{MARKER}\nfirst", labels=(LABEL,))
    assert (made.state, made.labels, made.user) == ("open", (LABEL,), BOT)
    assert gh.issue(repo, made.number).body == f"{MARKER}\nfirst"
    edited = client.update_issue(REPO, made.number, title="Flaky: again", body=f"{MARKER}\nsecond")
    assert (edited.title, edited.body) == ("Flaky: again", f"{MARKER}\nsecond")
    closed = client.close_issue(REPO, made.number)
    assert (closed.state, closed.state_reason) == ("closed", "completed")
    assert client.reopen_issue(REPO, made.number).state == "open"
    assert client.issue(REPO, made.number) == client.reopen_issue(REPO, made.number)
    assert [d.action for d in gh.deliveries_of("issues")] == [
        "opened",
        "edited",
        "closed",
        "reopened",
    ]


def test_own_issues_are_the_bots_with_the_label(
    client: GitHubClient, gh: FakeGitHub, repo: Repository
) -> None:
    pr = gh.open_pull_request(repo, head="feature", files={"x.txt": "1\n"})
    gh.add_label(pr, LABEL)  # a pull request with the label: not an issue
    gh.create_issue(repo, "a person's copy", MARKER, author="alice", labels=[LABEL])
    mine = client.create_issue(REPO, "mine", MARKER, labels=(LABEL,))
    closed = client.create_issue(REPO, "mine, closed", MARKER, labels=(LABEL,))
    client.close_issue(REPO, closed.number)
    client.create_issue(REPO, "another label", MARKER, labels=("bug",))
    assert [i.number for i in client.own_issues(REPO, LABEL)] == [mine.number, closed.number]
    assert [i.number for i in client.own_issues(REPO, LABEL, state="open")] == [mine.number]
    # The open one is the marked one found, before the newer closed one.
    found = find_marked(client, REPO, LABEL, MARKER)
    assert found is not None and found.number == mine.number
    assert find_marked(client, REPO, LABEL, "<!-- landbot:flaky-test other -->") is None


def test_codeowners_is_read_where_github_looks(
    client: GitHubClient, gh: FakeGitHub, repo: Repository, server: FakeGitHubServer
) -> None:
    assert client.codeowners(REPO) is None
    assert server.requests.count(CONTENTS) == 3  # the three places, none there
    gh.commit_file(repo, "docs/CODEOWNERS", "* @docs-team\n")
    found = client.codeowners(REPO)
    assert found is not None and (found.path, found.text) == ("docs/CODEOWNERS", "* @docs-team\n")
    gh.commit_file(repo, ".github/CODEOWNERS", "* @first\n")
    first = client.codeowners(REPO)
    assert first is not None and first.path == ".github/CODEOWNERS"  # the first place wins


def test_a_502_after_an_applied_create_makes_one_issue(
    client: GitHubClient, gh: FakeGitHub, repo: Repository, server: FakeGitHubServer, store: Store
) -> None:
    key = issue_key(REPO, "flaky-test", "tests/test_app.py::test_answer")
    server.faults.fail(CREATE, 502, take_effect=True)
    ref = open_issue_once(
        store, client, REPO, key=key, marker=MARKER, label=LABEL, title="t", body="b", owner="w"
    )
    assert [i.number for i in gh.issues_of(repo)] == [ref.number]
    assert not ref.created  # found by its marker after the lost answer
    assert server.requests.count(CREATE) == 1 and server.requests.count(LIST) == 1
    # Kept as posted: asked again, nothing is sent at all.
    server.requests.reset()
    again = open_issue_once(
        store, client, REPO, key=key, marker=MARKER, label=LABEL, title="t", body="b", owner="w"
    )
    assert again.number == ref.number and server.requests.total == 0


def test_a_502_before_the_create_applied_creates_it_once_more(
    client: GitHubClient, gh: FakeGitHub, repo: Repository, server: FakeGitHubServer, store: Store
) -> None:
    key = issue_key(REPO, "flaky-test", "x")
    server.faults.fail(CREATE, 502)  # control: GitHub did nothing
    ref = open_issue_once(
        store, client, REPO, key=key, marker=MARKER, label=LABEL, title="t", body="b", owner="w"
    )
    assert ref.created and [i.number for i in gh.issues_of(repo)] == [ref.number]
    assert server.requests.count(CREATE) == 2


def test_a_claim_left_posting_looks_before_creating(
    client: GitHubClient, gh: FakeGitHub, repo: Repository, server: FakeGitHubServer, store: Store
) -> None:
    """A worker killed between the POST and keeping its number: the next one finds it."""
    key = issue_key(REPO, "flaky-test", "x")
    store.claim_post(key, repo=REPO, pr=0, marker=MARKER, owner="dead")
    made = client.create_issue(REPO, "t", f"{MARKER}\nb", labels=(LABEL,))
    server.requests.reset()
    ref = open_issue_once(
        store, client, REPO, key=key, marker=MARKER, label=LABEL, title="t", body="b", owner="w"
    )
    assert ref.number == made.number and server.requests.count(CREATE) == 0
    # Control: a claim left posting whose POST never applied is created once.
    other = issue_key(REPO, "flaky-test", "y")
    store.claim_post(other, repo=REPO, pr=0, marker="<!-- y -->", owner="dead")
    fresh = open_issue_once(
        store,
        client,
        REPO,
        key=other,
        marker="<!-- y -->",
        label=LABEL,
        title="t",
        body="b",
        owner="w",
    )
    assert fresh.created and server.requests.count(CREATE) == 1


def test_a_second_unknown_outcome_is_not_repeated(
    client: GitHubClient, repo: Repository, server: FakeGitHubServer, store: Store
) -> None:
    server.faults.fail(CREATE, 502, times=2)
    with pytest.raises(MutationOutcomeUnknown):
        open_issue_once(
            store,
            client,
            REPO,
            key="k",
            marker=MARKER,
            label=LABEL,
            title="t",
            body="b",
            owner="w",
        )
    post = store.post("k")
    assert post is not None and post.state == "posting"  # the next attempt looks first


def test_long_names_make_bounded_keys() -> None:
    assert issue_key(REPO, "flaky-test", "t") == "issue:acme/widgets:flaky-test:t"
    long = issue_key(REPO, "flaky-test", "t" * 400)
    assert len(long) <= 300 and "sha256" in long
    assert long != issue_key(REPO, "flaky-test", "u" * 400)


def test_a_fresh_claim_of_another_process_is_left_to_it(
    client: GitHubClient, repo: Repository, server: FakeGitHubServer, store: Store
) -> None:
    """Two workers' sweeps: the second leaves a create claimed a moment ago to the first."""
    from landbot.land.issues import IssueBusy

    store.claim_post("k", repo=REPO, pr=0, marker=MARKER, owner="other")
    busy = dt.timedelta(minutes=2)
    with pytest.raises(IssueBusy):
        open_issue_once(
            store, client, REPO, key="k", marker=MARKER, label=LABEL, title="t", body="b",
            owner="me", busy=busy,
        )  # fmt: skip
    assert server.requests.total == 0
    # The control: the same claim two minutes later is an earlier attempt's: looked, made.
    later = dt.datetime.now(dt.UTC) + busy
    ref = open_issue_once(
        store, client, REPO, key="k", marker=MARKER, label=LABEL, title="t", body="b",
        owner="me", busy=busy, now=later,
    )  # fmt: skip
    assert ref.created and server.requests.count(CREATE) == 1
