"""Migrations upgrade an existing database in place, and the head schema matches tables.py."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import sqlalchemy as sa

from landbot.store import Store, db
from landbot.store.tables import metadata


def test_upgrade_from_first_version_keeps_data(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'landbot.db'}"
    engine = db.make_engine(url)
    db.upgrade(engine, "0001")
    assert db.current_revision(engine) == "0001"
    now = dt.datetime(2026, 11, 1, 12, 0, 0)
    with engine.begin() as conn:
        assert "actions" not in sa.inspect(conn).get_table_names()
        conn.execute(
            sa.text(
                "INSERT INTO drops (repo, pr, head_sha, reason, source, dedupe_key, outcome,"
                " observed_at, created_at, updated_at) VALUES ('o/r', 7, :sha, 'failed_checks',"
                " 'webhook', 'k7', 'handed_back', :t, :t, :t)"
            ),
            {"sha": "a" * 40, "t": now},
        )
    engine.dispose()

    store = Store.open(url)  # opening upgrades to head
    assert db.current_revision(store.engine) == db.head_revision() != "0001"
    [row] = store.drops()
    assert (row.repo, row.pr, row.outcome, row.evidence) == ("o/r", 7, "handed_back", None)
    assert row.observed_at == now.replace(tzinfo=dt.UTC)
    # The table the second revision added is usable.
    assert store.begin_action("requeue:o/r#7@" + "a" * 40, "requeue", drop_id=row.id) == "new"
    store.close()


def test_head_schema_matches_tables_module(tmp_path: Path) -> None:
    engine = db.make_engine(f"sqlite:///{tmp_path / 'h.db'}")
    db.upgrade(engine)
    inspector = sa.inspect(engine)
    for table in metadata.sorted_tables:
        migrated = {c["name"] for c in inspector.get_columns(table.name)}
        assert migrated == {c.name for c in table.columns}, table.name


def test_upgrade_is_idempotent(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'i.db'}"
    Store.open(url).close()
    store = Store.open(url)
    assert db.current_revision(store.engine) == db.head_revision()


def test_sqlite_runs_in_wal_mode(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'w.db'}")
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
