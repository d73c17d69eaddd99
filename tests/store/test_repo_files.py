"""The store's record of each repository's own settings file (revision 0007): the last read,
the last good version, staleness after a push, reports once per blob sha; on both backends."""

from __future__ import annotations

import dataclasses
import datetime as dt

import sqlalchemy as sa

from landbot.store import Store, StoredRepoFile, db
from landbot.store.retention import prune
from landbot.store.tables import repo_files

from .conftest import downgrade, drop_at_revision

PATH = ".github/landbot.toml"
T0 = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
GOOD, BAD, OTHER = "a" * 40, "b" * 40, "c" * 40
C1, C2 = "1" * 40, "2" * 40
LEASE = dt.timedelta(minutes=5)


def _read(store: Store, *, blob: str | None, good: bool, at: dt.datetime, commit: str = C1) -> bool:
    return store.save_repo_file_read(
        "Acme/Widgets",
        path=PATH,
        commit_sha=commit,
        blob_sha=blob,
        text=None if blob is None else f"# {blob[:1]}\n",
        good=good,
        read_at=at,
    )


def test_the_record_has_one_field_per_column() -> None:
    assert {f.name for f in dataclasses.fields(StoredRepoFile)} == {
        c.name for c in repo_files.columns
    }


def test_a_good_read_is_in_effect_and_an_invalid_one_keeps_it(store: Store) -> None:
    assert store.repo_file("acme/widgets") is None
    assert _read(store, blob=GOOD, good=True, at=T0)
    row = store.repo_file("acme/widgets")  # names are case-insensitive
    assert row is not None
    assert (row.repo, row.blob_sha, row.good_sha, row.good_text) == (
        "acme/widgets", GOOD, GOOD, "# a\n",
    )  # fmt: skip
    assert (row.read_at, row.stale, row.invalid) == (T0, False, False)

    assert _read(store, blob=BAD, good=False, at=T0 + dt.timedelta(minutes=1), commit=C2)
    row = store.repo_file("ACME/widgets")
    assert row is not None
    assert (row.blob_sha, row.text, row.commit_sha) == (BAD, "# b\n", C2)
    assert (row.good_sha, row.good_text, row.good_commit_sha) == (GOOD, "# a\n", C1)
    assert row.invalid

    # Removed from the default branch: no file, and no good version either.
    assert _read(store, blob=None, good=False, at=T0 + dt.timedelta(minutes=2), commit=C2)
    row = store.repo_file("acme/widgets")
    assert row is not None and (row.blob_sha, row.good_sha, row.good_text) == (None, None, None)
    assert not row.invalid


def test_an_invalid_read_of_another_path_does_not_keep_the_old_paths_good_file(
    store: Store,
) -> None:
    assert _read(store, blob=GOOD, good=True, at=T0)
    assert store.save_repo_file_read(
        "acme/widgets", path="ci/landbot.toml", commit_sha=C2, blob_sha=BAD, text="x",
        good=False, read_at=T0 + dt.timedelta(minutes=1),
    )  # fmt: skip
    row = store.repo_file("acme/widgets")
    assert row is not None and (row.path, row.good_sha) == ("ci/landbot.toml", None)


def test_an_older_read_finishing_last_does_not_replace_a_newer_one(store: Store) -> None:
    assert _read(store, blob=BAD, good=False, at=T0 + dt.timedelta(seconds=10), commit=C2)
    assert not _read(store, blob=GOOD, good=True, at=T0)  # started first, finished second
    row = store.repo_file("acme/widgets")
    assert row is not None and (row.blob_sha, row.good_sha) == (BAD, None)
    # The control: a read that started later is written.
    assert _read(store, blob=GOOD, good=True, at=T0 + dt.timedelta(seconds=20))
    assert (store.repo_file("acme/widgets") or row).good_sha == GOOD


def test_a_push_after_the_read_makes_it_stale_and_the_next_read_clears_it(store: Store) -> None:
    assert _read(store, blob=GOOD, good=True, at=T0)
    store.mark_repo_file_stale("acme/widgets", PATH, at=T0 - dt.timedelta(seconds=1))
    assert not (store.repo_file("acme/widgets") or _never()).stale  # pushed before the read
    store.mark_repo_file_stale("acme/widgets", PATH, at=T0 + dt.timedelta(seconds=5))
    assert (store.repo_file("acme/widgets") or _never()).stale
    # A mark older than the one recorded does not move it back.
    store.mark_repo_file_stale("acme/widgets", PATH, at=T0 + dt.timedelta(seconds=2))
    row = store.repo_file("acme/widgets")
    assert row is not None and row.pushed_at == T0 + dt.timedelta(seconds=5)
    # A read that started before the push is still stale; one after it is not.
    assert _read(store, blob=GOOD, good=True, at=T0 + dt.timedelta(seconds=4))
    assert (store.repo_file("acme/widgets") or _never()).stale
    assert _read(store, blob=GOOD, good=True, at=T0 + dt.timedelta(seconds=6))
    assert not (store.repo_file("acme/widgets") or _never()).stale


def test_a_push_to_a_repository_never_read_makes_a_row_to_read(store: Store) -> None:
    store.mark_repo_file_stale("acme/gadgets", PATH, at=T0)
    row = store.repo_file("acme/gadgets")
    assert row is not None
    assert (row.path, row.read_at, row.blob_sha, row.good_sha, row.stale) == (
        PATH, None, None, None, True,
    )  # fmt: skip
    assert [r.repo for r in store.repo_files()] == ["acme/gadgets"]


def test_each_invalid_version_is_reported_once(store: Store) -> None:
    assert _read(store, blob=BAD, good=False, at=T0)
    assert store.claim_repo_file_report("acme/widgets", BAD, lease=LEASE, now=T0) == "new"
    # Another worker meanwhile: it leaves the report to the first.
    assert store.claim_repo_file_report("acme/widgets", BAD, lease=LEASE, now=T0) == "started"
    store.finish_repo_file_report("acme/widgets", BAD, done=True)
    assert store.claim_repo_file_report("acme/widgets", BAD, lease=LEASE, now=T0) == "done"
    row = store.repo_file("acme/widgets")
    assert row is not None and row.reported(BAD) and not row.reported(OTHER)
    # Another version is reported on its own.
    assert store.claim_repo_file_report("acme/widgets", OTHER, lease=LEASE, now=T0) == "new"


def test_a_failed_report_is_tried_again_and_a_dead_workers_claim_is_retaken(store: Store) -> None:
    assert _read(store, blob=BAD, good=False, at=T0)
    assert store.claim_repo_file_report("acme/widgets", BAD, lease=LEASE, now=T0) == "new"
    store.finish_repo_file_report("acme/widgets", BAD, done=False)  # GitHub refused
    assert store.claim_repo_file_report("acme/widgets", BAD, lease=LEASE, now=T0) == "new"
    # The claimer died: within the lease it is someone else's, after it, retaken.
    later = T0 + LEASE - dt.timedelta(seconds=1)
    assert store.claim_repo_file_report("acme/widgets", BAD, lease=LEASE, now=later) == "started"
    after = T0 + LEASE + dt.timedelta(seconds=1)
    assert store.claim_repo_file_report("acme/widgets", BAD, lease=LEASE, now=after) == "retake"
    assert store.claim_repo_file_report("acme/widgets", BAD, lease=LEASE, now=after) == "started"


def test_reports_remembered_are_bounded(store: Store) -> None:
    from landbot.store.store import REPO_FILE_REPORTS_KEPT

    assert _read(store, blob=BAD, good=False, at=T0)
    shas = [f"{i:040x}" for i in range(REPO_FILE_REPORTS_KEPT + 5)]
    for i, sha in enumerate(shas):
        when = T0 + dt.timedelta(seconds=i)
        assert store.claim_repo_file_report("acme/widgets", sha, lease=LEASE, now=when) == "new"
    row = store.repo_file("acme/widgets")
    assert row is not None and row.reports is not None
    assert set(row.reports) == set(shas[-REPO_FILE_REPORTS_KEPT:])


def test_claiming_before_any_read_is_refused(store: Store) -> None:
    import pytest

    with pytest.raises(ValueError, match="save the read first"):
        store.claim_repo_file_report("acme/widgets", BAD, lease=LEASE)


def test_retention_keeps_the_repository_files(store: Store) -> None:
    assert _read(store, blob=GOOD, good=True, at=T0 - dt.timedelta(days=400))
    # The control: retention does remove something old in the same run.
    store.add_job("drop", {"drop_id": 1}, dedupe_key="old")
    [job] = store.jobs()
    lease = store.lease_job("w", dt.timedelta(seconds=60))
    assert lease is not None and store.finish_job(job.id, "w")
    with store.tx() as conn:
        from landbot.store.tables import jobs

        conn.execute(jobs.update().values(updated_at=T0 - dt.timedelta(days=400)))
    pruned = prune(store, dt.timedelta(days=7))
    assert pruned.jobs == 1
    row = store.repo_file("acme/widgets")
    assert row is not None and row.good_sha == GOOD


def test_0007_adds_the_table_to_a_database_with_rows_and_goes_back(empty_url: str) -> None:
    """A database at 0006 holding a drop upgrades in place; the table is usable at once,
    and 0007 downgrades to 0006 keeping the drop."""
    drop_at_revision(empty_url, "0006", absent="repo_files", at=T0)
    store = Store.open(empty_url)
    assert db.current_revision(store.engine) == db.head_revision()
    assert _read(store, blob=GOOD, good=True, at=T0)
    assert (store.repo_file("acme/widgets") or _never()).good_sha == GOOD
    downgrade(store.engine, "0006")
    with store.engine.connect() as conn:
        assert "repo_files" not in sa.inspect(conn).get_table_names()
    assert [d.pr for d in store.drops()] == [7]
    store.close()


def _never() -> StoredRepoFile:
    raise AssertionError("no row")
