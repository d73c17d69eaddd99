"""The `push` route: a push to the default branch that touches the repository's settings
file marks it stale and queues its re-read; any other push does nothing. No GitHub call:
the route only writes to the store.

The published payloads are octokit's examples (fixtures/README.md); the others are built
per GitHub's documented push fields, each test saying which field it varies.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from landbot.intake import events, payloads
from landbot.pipeline import deliveries
from landbot.repo_config import REPO_FILE
from landbot.store import Store

FIXTURES = Path(__file__).parent / "fixtures"
T0 = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
REPO = "acme/widgets"


def push(
    *,
    ref: str = "refs/heads/main",
    default_branch: str = "main",
    commits: Any = None,
    **fields: Any,
) -> bytes:
    """A push payload with the fields the route reads (GitHub's names)."""
    if commits is None:
        commits = [{"id": "1" * 40, "added": [], "removed": [], "modified": ["README.md"]}]
    return json.dumps(
        {
            "ref": ref,
            "before": "a" * 40,
            "after": "b" * 40,
            "created": False,
            "deleted": False,
            "forced": False,
            "commits": commits,
            "repository": {"full_name": REPO, "default_branch": default_branch},
            **fields,
        }
    ).encode()


def handle(store: Store, body: bytes, guid: str = "g1") -> str:
    return deliveries.apply(events.parse(guid, "push", T0, body), store)


def commit(**files: list[str]) -> dict[str, Any]:
    return {"id": "1" * 40, "added": [], "removed": [], "modified": [], **files}


def test_a_push_touching_the_file_marks_it_stale_and_queues_its_re_read(store: Store) -> None:
    note = handle(store, push(commits=[commit(), commit(modified=[REPO_FILE, "app.py"])]))
    assert note == f"push to main touched {REPO_FILE}: re-read queued"
    row = store.repo_file(REPO)
    assert row is not None and row.stale and row.path == REPO_FILE
    [job] = store.jobs()
    assert (job.kind, job.payload) == ("repo_file", {"repo": REPO, "path": REPO_FILE})
    # The same delivery again queues nothing more.
    handle(store, push(commits=[commit(modified=[REPO_FILE])]))
    assert len(store.jobs()) == 1
    # Added and removed count as well.
    handle(store, push(commits=[commit(removed=[REPO_FILE])]), guid="g2")
    handle(store, push(commits=[commit(added=[REPO_FILE])]), guid="g3")
    assert len(store.jobs()) == 3


def test_a_push_leaving_the_file_alone_does_nothing(store: Store) -> None:
    note = handle(store, push(commits=[commit(modified=["app.py", ".github/other.toml"])]))
    assert note == f"push to main: {REPO_FILE} untouched"
    assert store.repo_file(REPO) is None and store.jobs() == []


def test_a_push_to_another_branch_does_nothing_even_when_it_touches_the_file(
    store: Store,
) -> None:
    touching = [commit(modified=[REPO_FILE])]
    assert handle(store, push(ref="refs/heads/feature", commits=touching)) == (
        "not a push to the default branch"
    )
    assert handle(store, push(ref="refs/tags/main", commits=touching), guid="g2") == (
        "not a push to the default branch"
    )
    assert store.jobs() == []
    # The control: the same commits on the default branch.
    handle(store, push(commits=touching), guid="g3")
    assert len(store.jobs()) == 1


def test_the_path_watched_is_the_one_last_read(store: Store) -> None:
    """A host reading another path (`[policy] repo_file`): the row names it."""
    store.save_repo_file_read(
        REPO, path="ci/landbot.toml", commit_sha="c" * 40, blob_sha=None, text=None,
        good=False, read_at=T0,
    )  # fmt: skip
    handle(store, push(commits=[commit(modified=[REPO_FILE])]))
    assert store.jobs() == []
    handle(store, push(commits=[commit(modified=["ci/landbot.toml"])]), guid="g2")
    [job] = store.jobs()
    assert job.payload["path"] == "ci/landbot.toml"


@pytest.mark.parametrize(
    ("why", "fields"),
    [
        # A force push can bring back an older file with no commit listed.
        ("forced", {"forced": True, "commits": []}),
        ("created", {"created": True, "commits": [commit(modified=["app.py"])]}),
        # GitHub lists a bounded number of commits (events.PUSH_COMMITS_LISTED says which).
        ("many commits", {"commits": [commit(modified=["app.py"])] * events.PUSH_COMMITS_LISTED}),
        # ... and of files per commit.
        (
            "many files",
            {"commits": [commit(modified=[f"f{i}" for i in range(events.PUSH_FILES_LISTED)])]},
        ),
        ("commits unreadable", {"commits": "not a list"}),
        ("files unreadable", {"commits": [{"id": "1" * 40, "modified": ["app.py"]}]}),
    ],
)
def test_a_push_that_may_not_list_everything_counts_as_touching_the_file(
    store: Store, why: str, fields: dict[str, Any]
) -> None:
    handle(store, push(**fields))
    assert [j.kind for j in store.jobs()] == ["repo_file"], why


def test_one_commit_fewer_than_the_bound_is_read_as_listed() -> None:
    """The control of the bounds: just under them, the lists are believed."""
    under = payloads.PushEvent.model_validate(
        json.loads(push(commits=[commit(modified=["app.py"])] * (events.PUSH_COMMITS_LISTED - 1)))
    )
    assert not events.touches(under, REPO_FILE)
    files = [f"f{i}" for i in range(events.PUSH_FILES_LISTED - 1)]
    assert not events.touches(
        payloads.PushEvent.model_validate(json.loads(push(commits=[commit(modified=files)]))),
        REPO_FILE,
    )


def test_a_deleted_default_branch_queues_nothing(store: Store) -> None:
    assert handle(store, push(deleted=True, commits=[])) == "the default branch was deleted"
    assert store.jobs() == []


def test_published_push_payloads_parse_and_route() -> None:
    """octokit's examples: a tag deleted (not a branch), and the default branch `master`
    created with README.md added (created: it may bring the file, so it is re-read)."""
    tag = events.parse("g1", "push", T0, (FIXTURES / "push.payload.json").read_bytes())
    assert isinstance(tag.payload, payloads.PushEvent)
    assert (tag.payload.ref, tag.payload.deleted, tag.payload.repository.default_branch) == (
        "refs/tags/simple-tag", True, "master",
    )  # fmt: skip
    assert tag.payload.commits == []
    new = events.parse(
        "g2", "push", T0, (FIXTURES / "push.with-new-branch.payload.json").read_bytes()
    )
    assert isinstance(new.payload, payloads.PushEvent)
    p = new.payload
    assert (p.repo, p.ref, p.created, p.forced, p.repository.default_branch) == (
        "Codertocat/Hello-World", "refs/heads/master", True, False, "master",
    )  # fmt: skip
    assert p.commits is not None and [c.added for c in p.commits] == [["README.md"]]
    assert [(c.removed, c.modified) for c in p.commits] == [([], [])]


def test_published_push_payloads_against_a_store(store: Store) -> None:
    tag = events.parse("g1", "push", T0, (FIXTURES / "push.payload.json").read_bytes())
    assert deliveries.apply(tag, store) == "not a push to the default branch"
    new = events.parse(
        "g2", "push", T0, (FIXTURES / "push.with-new-branch.payload.json").read_bytes()
    )
    deliveries.apply(new, store)
    [job] = store.jobs()
    assert job.payload == {"repo": "Codertocat/Hello-World", "path": REPO_FILE}


def test_push_is_an_event_landbot_handles() -> None:
    assert "push" in events.handled_events()
