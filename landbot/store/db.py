"""Engines and schema migrations.

SQLite (the default, in WAL mode so the web process and workers read while one writes) or
PostgreSQL by URL. Migrations are Alembic revisions shipped inside the package and applied
programmatically: `landbot` upgrades the database in place when it opens it.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

from landbot.errors import LandbotError

MIGRATIONS = Path(__file__).parent / "migrations"


EXAMPLES = "use sqlite:///./landbot.db or postgresql+psycopg://user@host/db"


def url_problem(url: str, *, look: bool = True) -> str | None:
    """What stops landbot from opening `url`, with the fix; None when nothing does.

    Pure but for two looks at the machine: whether the PostgreSQL driver is installed, and
    (with `look`) whether a SQLite file's folder exists and may be written. landbot never
    creates that folder: a mistyped path must not become a new, empty store."""
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        return f"{_masked(url)!r} is not a database URL; {EXAMPLES}"
    scheme = parsed.drivername
    backend, _, driver = scheme.partition("+")
    if backend == "postgres":  # Heroku's and libpq's spelling, which SQLAlchemy refuses
        fixed = parsed.set(drivername="postgresql+psycopg")
        return (
            f"{backend}:// is not a scheme SQLAlchemy knows; write "
            f"{fixed.render_as_string(hide_password=True)}"
        )
    if backend == "postgresql":
        if driver not in ("", "psycopg"):
            fixed = parsed.set(drivername="postgresql+psycopg")
            return (
                f"landbot talks to PostgreSQL through psycopg 3, not {driver}; write "
                f"{fixed.render_as_string(hide_password=True)}"
            )
        import importlib.util

        if importlib.util.find_spec("psycopg") is None:
            return (
                "PostgreSQL needs the psycopg driver, which is not installed; "
                "pip install 'landbot[postgres]'"
            )
        return None
    if backend != "sqlite":
        return f"landbot keeps its state in SQLite or PostgreSQL, not {backend}; {EXAMPLES}"
    if driver not in ("", "pysqlite"):
        return f"landbot opens SQLite with Python's sqlite3, not {driver}; write sqlite:///PATH"
    database = parsed.database
    if not look or not database or database == ":memory:" or database.startswith("file:"):
        return None
    parent = Path(database).parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "does not exist"
        return (
            f"the SQLite file's folder {parent} {what}; create it, or point the URL at an "
            "existing folder (sqlite:////absolute/path/landbot.db)"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        return (
            f"the SQLite file's folder {parent} is not writable (SQLite writes its journal "
            "next to the file); make it writable or choose another folder"
        )
    return None


def _masked(url: str) -> str:
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return url.split("@", 1)[-1] if "@" in url else url


def make_engine(url: str) -> sa.Engine:
    """An engine for `url`; SQLite gets WAL, a busy timeout and foreign keys.

    The SQLite folder is not looked at here (an engine opens nothing; the commands check
    the operator's URL first, with ready.check_store): a missing one fails on connecting."""
    problem = url_problem(url, look=False)
    if problem is not None:
        raise LandbotError(
            f"cannot open the store: {problem} (LANDBOT_DATABASE_URL, or database_url in "
            "config/landbot.toml)"
        )
    parsed = sa.engine.make_url(url)
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")  # psycopg 3, not psycopg2
    kwargs: dict[str, Any] = {"future": True}
    if parsed.get_backend_name() == "sqlite":
        kwargs["connect_args"] = {"timeout": 30, "check_same_thread": False}
    else:
        kwargs["pool_pre_ping"] = True
    engine = sa.create_engine(parsed, **kwargs)
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
        # pysqlite's own transaction handling defers BEGIN; take it over so a write
        # transaction (Store.tx) starts with BEGIN IMMEDIATE and lease races serialize
        # cleanly, while reads (health, metrics, the dashboard) never wait behind a writer.
        event.listen(engine, "begin", _sqlite_begin)
    return engine


WRITE = "landbot_write"


def _sqlite_begin(conn: sa.Connection) -> None:
    write = conn.get_execution_options().get(WRITE, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.isolation_level = None  # autocommit at the driver; SQLAlchemy emits BEGIN
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    # In WAL mode, NORMAL syncs the log at checkpoints instead of on every commit: a commit
    # survives the process being killed (kill -9) but the last ones may be lost to a power
    # cut or kernel crash (the poller re-finds those drops). FULL costs an fsync per commit,
    # ~4 ms on a VM disk, and capped webhook acknowledgements near 150/s (bench/README.md).
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def _alembic_config(connection: sa.Connection) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    return cfg


def upgrade(engine: sa.Engine, revision: str = "head") -> None:
    """Bring the schema to `revision` (default: the newest), keeping the data."""
    # A store already at the newest schema (every start but the first) skips alembic
    # altogether: importing it and loading every migration script cost about 0.5 s of CPU
    # per `landbot` process (status, worker, serve...), more than the command itself.
    if revision == "head" and current_revision(engine) == head_revision():
        return
    from alembic import command

    with engine.connect() as conn:
        command.upgrade(_alembic_config(conn), revision)
        conn.commit()


def current_revision(engine: sa.Engine) -> str | None:
    """The store's schema revision as alembic records it (None: a store never migrated)."""
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table(VERSION_TABLE):
            return None
        rows = conn.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
    # landbot's migrations are one line (tests/store/test_migrations.py): one row at most.
    return str(rows[0]) if rows else None


VERSION_TABLE = "alembic_version"  # alembic's default, which landbot's env.py keeps
_REVISION = re.compile(
    r"""^(down_revision|revision)\s*(?::[^=]*)?=\s*["']?([\w.-]+|None)["']?""", re.M
)


@functools.cache  # the scripts ship with the package: their head cannot change while it runs
def head_revision() -> str:
    """The newest migration: the one revision no other names as its `down_revision`. Read
    from the scripts' text rather than through alembic, which costs a landbot start 0.5 s
    (tests/store/test_migrations.py checks the two agree)."""
    revisions: set[str] = set()
    downs: set[str] = set()
    for script in (MIGRATIONS / "versions").glob("*.py"):
        for key, value in _REVISION.findall(script.read_text(encoding="utf-8")):
            (revisions if key == "revision" else downs).add(value)
    heads = revisions - downs
    if len(heads) != 1:
        raise RuntimeError(f"landbot's migrations have {len(heads)} heads: {sorted(heads)}")
    return heads.pop()
