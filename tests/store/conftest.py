"""A fresh store on each backend: a SQLite file, and a new database on the session's
throwaway PostgreSQL (tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from landbot.store import Store


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        s = Store.open(f"sqlite:///{tmp_path / 'landbot.db'}")
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
