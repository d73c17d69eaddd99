"""A fresh store on each backend: a SQLite file, and the session's throwaway PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from landbot.store import Store


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        s = Store.open(f"sqlite:///{tmp_path / 'landbot.db'}")
    else:
        url = request.getfixturevalue("postgres_url")
        engine = sa.create_engine(url)
        with engine.begin() as conn:  # a fresh schema for each test
            conn.exec_driver_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        engine.dispose()
        s = Store.open(url)
    yield s
    s.close()
