"""Migrations upgrade an existing database in place, and the head schema matches tables.py."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from landbot.store import Store, db
from landbot.store.tables import metadata

from .conftest import downgrade, drop_at_revision


def test_upgrade_from_first_version_keeps_data(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'landbot.db'}"
    now = dt.datetime(2026, 11, 1, 12, 0, 0)
    drop_at_revision(url, "0001", absent="actions", at=now, outcome="handed_back")
    store = Store.open(url)  # opening upgrades to head
    assert db.current_revision(store.engine) == db.head_revision() != "0001"
    [row] = store.drops()
    assert (row.repo, row.pr, row.outcome, row.evidence) == ("o/r", 7, "handed_back", None)
    assert row.observed_at == now.replace(tzinfo=dt.UTC)
    # The table the second revision added is usable.
    assert store.begin_action("requeue:o/r#7@" + "a" * 40, "requeue", drop_id=row.id) == "new"
    store.close()


def _length(kind: Any) -> int | None:
    if isinstance(kind, sa.types.TypeDecorator):
        kind = kind.impl_instance
    return kind.length if isinstance(kind, sa.String) else None


def test_head_schema_matches_tables_module(empty_url: str) -> None:
    """The migrations build what tables.py declares, down to each string's length, on both
    backends (a widened column must be widened in a migration, not only in tables.py)."""
    engine = db.make_engine(empty_url)
    db.upgrade(engine)
    inspector = sa.inspect(engine)
    for table in metadata.sorted_tables:
        migrated = {c["name"]: _length(c["type"]) for c in inspector.get_columns(table.name)}
        assert migrated == {c.name: _length(c.type) for c in table.columns}, table.name
    engine.dispose()


def test_0004_widens_free_text_and_keeps_the_rows(empty_url: str) -> None:
    """A database at 0003 holding rows upgrades in place; afterwards the values 0003 could
    not hold (issue 11: `destroyed:invalidated` in a 20-character status) are stored."""
    engine = db.make_engine(empty_url)
    db.upgrade(engine, "0003")
    now = dt.datetime(2026, 11, 1, 12, 0, 0, tzinfo=dt.UTC)
    sha = "a" * 40
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO merge_groups (repo, pr, head_sha, head_ref, status, created_at,"
                " updated_at) VALUES ('o/r', 7, :sha, 'gh-readonly-queue/main/pr-7-x',"
                " 'destroyed:merged', :t, :t)"
            ),
            {"sha": sha, "t": now},
        )
        conn.execute(
            sa.text(
                "INSERT INTO drops (repo, pr, head_sha, reason, raw_reason, source, dedupe_key,"
                " outcome, observed_at, created_at, updated_at) VALUES ('o/r', 7, :sha,"
                " 'unknown', 'SOMETHING_NEW', 'webhook', 'k7', 'ignored', :t, :t, :t)"
            ),
            {"sha": sha, "t": now},
        )
    engine.dispose()

    store = Store.open(empty_url)
    assert db.current_revision(store.engine) == db.head_revision()
    [group] = store.groups_for("o/r", 7)
    assert (group.status, group.head_ref) == ("destroyed:merged", "gh-readonly-queue/main/pr-7-x")
    [drop] = store.drops()
    assert (drop.raw_reason, drop.outcome) == ("SOMETHING_NEW", "ignored")
    store.remember_group(
        repo="o/r",
        pr=7,
        head_sha=sha,
        head_ref=group.head_ref,
        base_ref="main",
        base_sha=None,
        status="destroyed:invalidated",
    )
    assert store.groups_for("o/r", 7)[0].status == "destroyed:invalidated"
    store.close()


def test_downgrade_from_0004_refuses_to_cut_a_longer_value(empty_url: str) -> None:
    """Narrowing back is allowed while every value fits (the control), and on PostgreSQL
    refused when one does not: a downgrade never truncates silently."""
    store = Store.open(empty_url)
    store.remember_group(
        repo="o/r",
        pr=7,
        head_sha="a" * 40,
        head_ref="r",
        base_ref=None,
        base_sha=None,
        status="destroyed:merged",
    )
    store.close()
    engine = db.make_engine(empty_url)
    downgrade(engine, "0003")
    assert db.current_revision(engine) == "0003"
    db.upgrade(engine)
    engine.dispose()
    if not empty_url.startswith("postgresql"):
        return  # SQLite keeps any length in any column
    store = Store.open(empty_url)
    store.remember_group(
        repo="o/r",
        pr=7,
        head_sha="a" * 40,
        head_ref="r",
        base_ref=None,
        base_sha=None,
        status="destroyed:invalidated",
    )
    store.close()
    engine = db.make_engine(empty_url)
    with pytest.raises(sa.exc.DataError):
        downgrade(engine, "0003")
    assert db.current_revision(engine) == db.head_revision()
    engine.dispose()


def test_upgrade_is_idempotent(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'i.db'}"
    Store.open(url).close()
    store = Store.open(url)
    assert db.current_revision(store.engine) == db.head_revision()


def test_sqlite_runs_in_wal_mode(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'w.db'}")
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


def test_0006_adds_the_ledger_to_a_database_with_rows_and_goes_back(empty_url: str) -> None:
    """A database at 0005 holding a drop upgrades in place to the flaky-test ledger; the
    ledger is usable at once, and 0006 downgrades to 0005 keeping the drop."""
    now = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=dt.UTC)
    drop_at_revision(empty_url, "0005", absent="test_failures", at=now)
    store = Store.open(empty_url)
    assert db.current_revision(store.engine) == db.head_revision()
    assert store.record_test_failures(
        repo="o/r", pr=7, head_sha="a" * 40, sha="b" * 40, failures={"test": ["t::x"]}
    )
    assert store.record_merged("o/r", 7) == 1  # the drop 0005 held was a re-enqueue
    [top] = store.flakiest_tests(since=now)
    assert (top.test, top.passed_prs) == ("t::x", (7,))
    downgrade(store.engine, "0005")
    with store.engine.connect() as conn:
        assert "test_failures" not in sa.inspect(conn).get_table_names()
    assert [d.pr for d in store.drops()] == [7]
    store.close()


def test_the_head_read_from_the_scripts_is_alembics() -> None:
    """`db.head_revision` reads the scripts' text so that a landbot start need not import
    alembic: it must name the head alembic itself would, and `current_revision` read the
    version alembic wrote."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(db._alembic_config(None))  # type: ignore[arg-type]
    assert db.head_revision() == script.get_current_head()
    assert len(script.get_heads()) == 1


@pytest.mark.parametrize("revision", ["0001", "0007"])
def test_the_revision_read_without_alembic_is_the_one_alembic_reads(
    tmp_path: Path, revision: str
) -> None:
    from alembic.runtime.migration import MigrationContext

    engine = db.make_engine(f"sqlite:///{tmp_path / 'landbot.db'}")
    assert db.current_revision(engine) is None  # never migrated: no version table
    db.upgrade(engine, revision)
    with engine.connect() as conn:
        theirs = MigrationContext.configure(conn).get_current_revision()
    assert db.current_revision(engine) == theirs == revision
    db.upgrade(engine)  # "head" from there: alembic runs, since the store is behind
    assert db.current_revision(engine) == db.head_revision()
    engine.dispose()
