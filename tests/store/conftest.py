"""A fresh store on each backend: a SQLite file, and a new database on the session's
throwaway PostgreSQL (tests/conftest.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from landbot.store import Store, db


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    if request.param == "sqlite":
        s = Store.open(request.getfixturevalue("sqlite_url"))
    else:
        s = Store.open(request.getfixturevalue("postgres_databases").create())
    yield s
    s.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database with no schema yet, for the migration tests."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'landbot.db'}"
    url: str = request.getfixturevalue("postgres_databases").create(migrated=False)
    return url


def drop_at_revision(
    url: str, revision: str, *, absent: str, at: dt.datetime, outcome: str = "requeued"
) -> None:
    """Migrate the empty database at `url` to `revision` only (table `absent` is not there
    yet) and write one drop, o/r#7 at head "a" * 40, in SQL as that version's code would."""
    engine = db.make_engine(url)
    db.upgrade(engine, revision)
    assert db.current_revision(engine) == revision
    with engine.begin() as conn:
        assert absent not in sa.inspect(conn).get_table_names()
        conn.execute(
            sa.text(
                "INSERT INTO drops (repo, pr, head_sha, reason, source, dedupe_key, outcome,"
                " observed_at, created_at, updated_at) VALUES ('o/r', 7, :sha, 'failed_checks',"
                " 'webhook', 'k7', :outcome, :t, :t, :t)"
            ),
            {"sha": "a" * 40, "t": at, "outcome": outcome},
        )
    engine.dispose()


def downgrade(engine: sa.Engine, revision: str) -> None:
    from alembic import command

    with engine.connect() as conn:
        command.downgrade(db._alembic_config(conn), revision)
        conn.commit()
