"""Fixtures shared by every test folder."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from landbot.sandbox.runner import (
    DEFAULT_GID,
    DEFAULT_UID,
    SandboxResult,
    SandboxUnavailable,
    check_host,
    prepare_workdir,
    run_sandboxed,
)

if TYPE_CHECKING:
    from landbot.store import Store


# --- slow tests: `./scripts/test --fast` (-m "not slow") leaves them out ------------------
# Every test of these folders runs the pipeline end to end (a simulated GitHub served over
# HTTP, real git, the sandbox, landbot processes); elsewhere a module that starts processes
# marks itself with `pytestmark = pytest.mark.slow`.
_SLOW_FOLDERS = frozenset({"integration", "demo"})
_TESTS = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        parts = item.path.relative_to(_TESTS).parts if item.path.is_relative_to(_TESTS) else ()
        if parts and parts[0] in _SLOW_FOLDERS:
            item.add_marker(pytest.mark.slow)


# --- one PostgreSQL server for every xdist worker ----------------------------------------
# Under `pytest -n N` the controller starts one throwaway server and hands its URL to each
# worker (workerinput, not the environment: a `landbot` subprocess must not see it); each
# worker makes databases of its own in it, named by its pid (PostgresDatabases). Without
# xdist the session fixture below starts the server itself, on first use.

_POSTGRES_KEY = "landbot_postgres_url"
_postgres_stash = pytest.StashKey[str]()


def _xdist_workers(config: pytest.Config) -> bool:
    """This process is xdist's controller and will start workers."""
    return not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", 0))


def pytest_configure(config: pytest.Config) -> None:
    if not _xdist_workers(config) or os.environ.get("LANDBOT_TEST_POSTGRES_URL"):
        return
    from landbot.sim.postgres import NotInstalled, throwaway_server

    stack = contextlib.ExitStack()
    try:
        url = stack.enter_context(throwaway_server(durable=False))
    except NotInstalled:
        stack.close()  # each worker's fixture skips (or, in CI, fails) with the reason
        return
    config.stash[_postgres_stash] = url
    config.add_cleanup(stack.close)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist's hook: a worker about to start gets the controller's server."""
    url = node.config.stash.get(_postgres_stash, None)
    if url is not None:
        node.workerinput[_POSTGRES_KEY] = url


@pytest.fixture(scope="session")
def postgres_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A throwaway PostgreSQL server on a unix socket, for the store's PostgreSQL tests: the
    one xdist's controller started, or one of this session's own.

    LANDBOT_TEST_POSTGRES_URL points the tests at an existing server instead.
    """
    from landbot.sim.postgres import NotInstalled, throwaway_server

    if os.environ.get("LANDBOT_TEST_POSTGRES_URL"):
        yield os.environ["LANDBOT_TEST_POSTGRES_URL"]
        return
    shared = getattr(request.config, "workerinput", {}).get(_POSTGRES_KEY)
    if shared:
        yield shared
        return
    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(throwaway_server(durable=False))
        except NotInstalled as exc:
            if os.environ.get("CI"):  # CI runs every store and integration test on both
                pytest.fail(f"CI must run the PostgreSQL tests: {exc}")
            pytest.skip(f"{exc}; skipping its tests")
        yield url


class PostgresDatabases:
    """New databases on the test server: empty, or a copy of one migrated to the newest
    schema once per session (CREATE DATABASE ... TEMPLATE costs a few ms; migrating costs
    ~0.3 s, which the integration suite would pay per test)."""

    _names = itertools.count()

    def __init__(self, server_url: str) -> None:
        import sqlalchemy as sa

        self.server_url = server_url
        self._admin = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
        self._template: str | None = None
        self._version: int | None = None
        self.created: list[str] = []

    def url(self, name: str) -> str:
        from landbot.sim.postgres import database_url

        return database_url(self.server_url, name)

    def _run(self, sql: str) -> None:
        with self._admin.connect() as conn:
            conn.exec_driver_sql(sql)

    def _strategy(self) -> str:
        # FILE_COPY (PostgreSQL 15+) copies the files: ~15 ms, against ~200 ms for WAL_LOG.
        if self._version is None:
            with self._admin.connect() as conn:
                self._version = int(conn.exec_driver_sql("SHOW server_version_num").scalar_one())
        return " STRATEGY FILE_COPY" if self._version >= 150000 else ""

    def template(self) -> str:
        if self._template is None:
            from landbot.store import db

            name = f"landbot_template_{os.getpid()}"
            self._run(f"DROP DATABASE IF EXISTS {name}")
            self._run(f"CREATE DATABASE {name}{self._strategy()}")
            engine = db.make_engine(self.url(name))
            db.upgrade(engine)
            engine.dispose()  # a template must have no connections when it is copied
            self._template = name
        return self._template

    def create(self, *, migrated: bool = True) -> str:
        """A new database's URL: at the newest schema, or empty (for migration tests)."""
        name = f"landbot_test_{os.getpid()}_{next(self._names)}"
        template = f" TEMPLATE {self.template()}" if migrated else ""
        self._run(f"CREATE DATABASE {name}{template}{self._strategy()}")
        self.created.append(name)
        return self.url(name)

    def drop_created(self) -> None:
        while self.created:
            # FORCE: a test's leftover connection (a killed worker's) must not keep it.
            self._run(f"DROP DATABASE IF EXISTS {self.created.pop()} WITH (FORCE)")

    def close(self) -> None:
        self.drop_created()
        if self._template is not None:
            self._run(f"DROP DATABASE IF EXISTS {self._template} WITH (FORCE)")
        self._admin.dispose()


@pytest.fixture(scope="session")
def _postgres_databases(postgres_url: str) -> Iterator[PostgresDatabases]:
    dbs = PostgresDatabases(postgres_url)
    try:
        yield dbs
    finally:
        dbs.close()


@pytest.fixture
def postgres_databases(_postgres_databases: PostgresDatabases) -> Iterator[PostgresDatabases]:
    """Databases for one test, dropped after it."""
    try:
        yield _postgres_databases
    finally:
        _postgres_databases.drop_created()


@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated to the newest schema, once per test process: a test's store
    starts as a copy of it (migrating a new file costs 0.1-0.4 s, which the integration
    suite would pay per test; copying costs about a millisecond). bench/README.md."""
    from landbot.store import db

    path = tmp_path_factory.mktemp("sqlite-template") / "landbot.db"
    engine = db.make_engine(f"sqlite:///{path}")
    db.upgrade(engine)
    engine.dispose()  # the last connection closing checkpoints the WAL into the file
    assert not path.with_name(path.name + "-wal").exists()
    return path


def _migrated_copy(template: Path, path: Path) -> str:
    shutil.copyfile(template, path)
    return f"sqlite:///{path}"


@pytest.fixture
def sqlite_url(_sqlite_template: Path, tmp_path: Path) -> str:
    """A SQLite store's URL in the test's own folder (landbot.db), at the newest schema."""
    return _migrated_copy(_sqlite_template, tmp_path / "landbot.db")


@pytest.fixture
def store(_sqlite_template: Path, tmp_path: Path) -> Iterator[Store]:
    """A store in a SQLite file of the test's own (a folder that runs on PostgreSQL as well
    defines its own `store`)."""
    from landbot.store import Store

    s = Store.open(_migrated_copy(_sqlite_template, tmp_path / "l.db"))
    yield s
    s.close()


def matches_snapshot(path: Path, text: str) -> None:
    """`text` is the snapshot at `path` to the letter; LANDBOT_UPDATE_SNAPSHOTS=1 writes it
    first (after a deliberate change: then read the diff)."""
    if os.environ.get("LANDBOT_UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no snapshot {path.name}: run with LANDBOT_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text()


# --- the sandbox: real git checkouts, real bubblewrap -----------------------------------
# Work trees live under a folder of /tmp with mode 755: pytest's own tmp_path is under a
# mode-700 folder the sandbox uid cannot traverse, so bubblewrap could not bind it.

SANDBOX_UID = DEFAULT_UID
SANDBOX_GID = DEFAULT_GID


def _host_problem() -> str | None:
    try:
        check_host()
    except SandboxUnavailable as exc:
        return str(exc)
    return None


HOST_PROBLEM = _host_problem()


def require_sandbox() -> None:
    """Skip (with the reason) on a host that cannot sandbox; in CI that is a failure."""
    if HOST_PROBLEM is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI must be able to run the sandbox: {HOST_PROBLEM}")
    pytest.skip(f"this host cannot run the sandbox: {HOST_PROBLEM}")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def run_git(cwd: Path, *args: str) -> str:
    """git's output, stripped; `cwd` is trusted even when the sandbox uid owns it."""
    return subprocess.run(
        ["git", "-c", f"safe.directory={cwd}", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def diverge(work: Path) -> tuple[str, str]:
    """Branch `feature` of `work`'s main sets ANSWER = 42 in app.py, and main moves on to
    ANSWER = 40: merging main into feature conflicts. Leaves feature checked out; gives
    (main's tip, feature's tip)."""
    run_git(work, "checkout", "-qb", "feature")
    (work / "app.py").write_text("ANSWER = 42\n")
    run_git(work, "commit", "-qam", "feature")
    run_git(work, "checkout", "-q", "main")
    (work / "app.py").write_text("ANSWER = 40\n")
    run_git(work, "commit", "-qam", "main moves")
    run_git(work, "checkout", "-q", "feature")
    return run_git(work, "rev-parse", "main"), run_git(work, "rev-parse", "HEAD")


@contextlib.contextmanager
def sandbox_folder(prefix: str) -> Iterator[Path]:
    """A folder under /tmp with mode 755, removed after (pytest's tmp_path is mode 700: the
    sandbox uid could not reach a checkout in it)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@dataclass
class Box:
    """One test's folders: a checkout (the work tree) and things outside it."""

    root: Path  # mode 755, under /tmp
    work: Path  # a git checkout with one commit
    secrets: Path  # a fake bot database and App key (under /var/tmp), readable by everyone

    @property
    def db(self) -> Path:
        return self.secrets / "landbot.db"

    @property
    def app_key(self) -> Path:
        return self.secrets / "app-key.pem"


@pytest.fixture
def box() -> Iterator[Box]:
    require_sandbox()
    root = Path(tempfile.mkdtemp(prefix="landbot-sbx-", dir="/tmp"))
    os.chmod(root, 0o755)
    work = root / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    git(work, "config", "user.name", "Fixer")
    git(work, "config", "user.email", "fixer@example.invalid")
    (work / "README.md").write_text("hello\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "initial")
    # The bot's files live outside /tmp (as /srv or /var/lib would), so only the sandbox's
    # allowlist of visible paths hides them, not its private /tmp.
    secrets = Path(tempfile.mkdtemp(prefix="landbot-sbx-secrets-", dir="/var/tmp"))
    os.chmod(secrets, 0o755)
    (secrets / "landbot.db").write_text("SQLite format 3\0 drops, jobs, DB-SECRET-ROW\n")
    (secrets / "app-key.pem").write_text(
        "-----BEGIN RSA PRIVATE KEY-----\nAPP-KEY-SECRET\n-----END RSA PRIVATE KEY-----\n"
    )
    for f in secrets.iterdir():
        os.chmod(f, 0o644)  # readable by the sandbox uid on the host: only the sandbox hides it
    try:
        yield Box(root=root, work=work, secrets=secrets)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(secrets, ignore_errors=True)


class Helpers:
    """Run a command with and without the sandbox (a fixture, since test modules cannot
    import each other under --import-mode=importlib)."""

    uid = SANDBOX_UID
    gid = SANDBOX_GID

    @staticmethod
    def unconfined(
        argv: Sequence[str],
        cwd: Path,
        *,
        env: dict[str, str] | None = None,
        timeout: float = 30,
        as_root: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        """The control: the same command, as the sandbox uid (or root), unconfined."""
        drop = (
            []
            if as_root
            else [
                "setpriv",
                f"--reuid={SANDBOX_UID}",
                f"--regid={SANDBOX_GID}",
                "--clear-groups",
                "--",
            ]
        )
        return subprocess.run(
            [*drop, *argv],
            cwd=cwd,
            env=env if env is not None else {"PATH": "/usr/bin:/bin", "HOME": "/tmp"},
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    @staticmethod
    def confined(
        argv: Sequence[str],
        work: Path,
        *,
        timeout: float = 30,
        memory_mb: int = 512,
        **kw: Any,
    ) -> SandboxResult:
        return run_sandboxed(argv, work, timeout=timeout, memory_mb=memory_mb, capture=True, **kw)

    git = staticmethod(git)

    @staticmethod
    def text(data: bytes | None) -> str:
        return (data or b"").decode(errors="replace")

    @staticmethod
    def give_to_sandbox_uid(path: Path) -> None:
        """Chown a checkout as the sandbox runner does, so a control runs on equal terms."""
        prepare_workdir(path, SANDBOX_UID, SANDBOX_GID)


@pytest.fixture
def h() -> type[Helpers]:
    return Helpers
