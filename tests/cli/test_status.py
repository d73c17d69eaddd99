"""`landbot status` pages (--limit, --since), newest first, in design.md's JSON format."""

from __future__ import annotations

import datetime as dt
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from landbot.store import Store

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

LANDBOT = str(Path(sys.executable).parent / "landbot")
T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
CONTRACT_KEYS = {"repo", "pr", "head_sha", "reason", "class", "outcome", "updated_at"}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store with 250 drops, one a minute from T0 (drop i observed at T0 + i minutes); made
    once for the module: `landbot status` only reads it."""
    url = f"sqlite:///{tmp_path_factory.mktemp('status') / 'landbot.db'}"
    store = Store.open(url)
    for i in range(250):
        store.add_drop(
            repo="o/r" if i % 2 else "o/other",
            pr=i,
            head_sha=f"{i:040x}",
            reason="failed_checks",
            source="webhook",
            dedupe_key=f"webhook:{i}",
            observed_at=T0 + dt.timedelta(minutes=i),
        )
    store.close()
    return url


def status(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    env["LANDBOT_DATABASE_URL"] = db
    return subprocess.run(
        [LANDBOT, "status", "--json", *args], capture_output=True, text=True, timeout=60, env=env
    )


def prs(out: str) -> list[int]:
    return [row["pr"] for row in json.loads(out)]


def test_the_default_shows_the_newest_200_and_says_there_are_more(db: str) -> None:
    r = status(db)
    assert r.returncode == 0, r.stderr
    assert prs(r.stdout) == list(range(249, 49, -1))
    assert "showing the newest 200" in r.stderr and "--limit 0" in r.stderr
    assert set(json.loads(r.stdout)[0]) >= CONTRACT_KEYS


def test_limit_0_shows_every_drop_and_a_limit_above_the_count_says_nothing(db: str) -> None:
    r = status(db, "--limit", "0")
    assert prs(r.stdout) == list(range(249, -1, -1))
    assert r.stderr == ""
    r = status(db, "--limit", "250")  # the control for the "more" line: exactly all
    assert len(prs(r.stdout)) == 250 and r.stderr == ""


def test_limit_and_since_page_newest_first(db: str) -> None:
    assert prs(status(db, "--limit", "3").stdout) == [249, 248, 247]
    since = (T0 + dt.timedelta(minutes=245)).isoformat()
    assert prs(status(db, "--since", since).stdout) == [249, 248, 247, 246, 245]
    # No offset means UTC; a date alone is its midnight; --repo still applies.
    naive = (T0 + dt.timedelta(minutes=245)).replace(tzinfo=None).isoformat()
    assert prs(status(db, "--since", naive).stdout) == [249, 248, 247, 246, 245]
    assert prs(status(db, "--since", naive, "--repo", "o/r").stdout) == [249, 247, 245]
    assert prs(status(db, "--since", "2026-12-01").stdout) == []
    # A date alone is its midnight: every drop of that day.
    assert len(prs(status(db, "--since", "2026-11-01", "--limit", "0").stdout)) == 250
    offset = "2026-11-01T16:05:00+02:00"  # 14:05 UTC: drop 125 on
    assert prs(status(db, "--since", offset, "--limit", "2").stdout) == [249, 248]
    assert prs(status(db, "--since", offset, "--limit", "0").stdout)[-1] == 125


@pytest.mark.parametrize(
    ("args", "says"),
    [(["--since", "yesterday"], "not an ISO 8601 time"), (["--limit", "-1"], "--limit")],
)
def test_bad_paging_is_one_line_and_exit_2(db: str, args: list[str], says: str) -> None:
    r = status(db, *args)
    assert r.returncode == 2 and r.stdout == ""
    assert says in r.stderr


def test_help_documents_the_paging_flags() -> None:
    r = subprocess.run([LANDBOT, "status", "--help"], capture_output=True, text=True, timeout=60)
    assert "--limit" in r.stdout and "--since" in r.stdout and "ISO 8601" in r.stdout


def test_a_summary_quoting_a_job_reaches_the_terminal_inert(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'hostile.db'}"
    store = Store.open(url)
    drop_id, _ = store.add_drop(
        repo="o/r",
        pr=1,
        head_sha="a" * 40,
        reason="failed_checks",
        source="webhook",
        dedupe_key="webhook:hostile",
        observed_at=T0,
    )
    store.update_drop(drop_id, summary="\x1b]0;owned\x07\x1b[2J[bold red]big[/] tail-marker")
    store.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    env.update(LANDBOT_DATABASE_URL=url, COLUMNS="300")
    done = subprocess.run([LANDBOT, "status"], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0 and "tail-marker" in done.stdout  # the row was printed
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "[bold red]big[/]" in done.stdout  # shown as text, not taken as rich markup


# --- readable at 80 columns; --repo case-insensitive and checked ------------------------

LONG_REPO = "octo-organisation/a-repository-with-long-name"


@pytest.fixture
def busy(tmp_path: Path) -> str:
    """Drops of two repositories, one with a long name, with long summaries."""
    url = f"sqlite:///{tmp_path / 'busy.db'}"
    store = Store.open(url)
    for i, repo in enumerate([LONG_REPO, "Octo-Org/Octo-Repo", LONG_REPO]):
        drop_id, _ = store.add_drop(
            repo=repo,
            pr=1000 + i,
            head_sha=f"{i:040x}",
            reason="branch_protections",
            source="webhook",
            dedupe_key=f"webhook:busy{i}",
            observed_at=T0 + dt.timedelta(minutes=i),
        )
        store.update_drop(
            drop_id,
            outcome="handed_back",
            class_="infrastructure",
            summary=f"summary {i}: the required check never reported on the merge group "
            "commit; the queue timed out waiting for it and landbot handed the PR back END",
        )
    store.close()
    return url


def table(db: str, *args: str, columns: int = 80, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    base.update(LANDBOT_DATABASE_URL=db, COLUMNS=str(columns), **env)
    return subprocess.run(
        [LANDBOT, "status", *args], capture_output=True, text=True, timeout=60, env=base
    )


def test_the_table_fits_80_columns_cutting_the_summary_not_the_repository(busy: str) -> None:
    done = table(busy, "--repo", "octo-org/octo-repo")
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()  # nothing wrapped
    assert len(row) <= 80 and header.split()[:2] == ["repo", "PR"]
    assert row.startswith("Octo-Org/Octo-Repo  #1001") and "handed_back" in row
    assert re.search(r" \d\d-\d\d \d\d:\d\d  summary 1: the required", row)
    assert row.endswith("…") and "END" not in row  # the summary, cut


def test_a_long_repository_name_keeps_whole_and_its_summary_goes_below(busy: str) -> None:
    done = table(busy)
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[0].split() == ["repo", "PR", "outcome", "updated"]
    rows = lines[1:]
    assert len(rows) == 6  # a line for each drop and one for its summary
    for (line, summary), (repo, pr) in zip(
        zip(rows[::2], rows[1::2], strict=True),
        [(LONG_REPO, 1002), ("Octo-Org/Octo-Repo", 1001), (LONG_REPO, 1000)],
        strict=True,
    ):
        assert line.startswith(repo) and f"#{pr}" in line and "handed_back" in line
        assert summary.startswith("    summary ") and summary.endswith("…")


def test_a_wide_terminal_shows_every_column_and_the_whole_summary(busy: str) -> None:
    done = table(busy, columns=400)
    lines = done.stdout.splitlines()
    assert lines[0].split() == [
        "repo", "PR", "head", "reason", "class", "outcome", "updated", "why",
    ]  # fmt: skip
    assert len(lines) == 4 and all(line.endswith("END") for line in lines[1:])
    assert "branch_protections" in lines[1] and "infrastructure" in lines[1]


def test_status_lines_at_any_width() -> None:
    from landbot.cli import status_lines

    row = {
        "repo": "o/r",
        "pr": 7,
        "head_sha": "a" * 40,
        "reason": "failed_checks",
        "class": "genuine",
        "outcome": "fixed",
        "updated_at": "2026-11-01T12:00:00+00:00",
        "summary": "word " * 40,
    }
    for width in (50, 60, 80, 100, 120, 160, 300):
        lines = status_lines([row], width)
        assert max(len(line) for line in lines) <= width, width
        assert re.match(r"o/r +#7 ", lines[1]), width
    # Narrow, the optional columns go (class first); wide, they stay.
    assert "genuine" not in status_lines([row], 80)[1]
    assert "genuine" in status_lines([row], 160)[1] and "aaaaaaa" in status_lines([row], 160)[1]
    # A repository wider than the terminal is never cut: its row is as long as it needs.
    long_row = row | {"repo": "x" * 90}
    assert status_lines([long_row], 80)[1].startswith("x" * 90 + "  #7")


def test_repo_is_case_insensitive(busy: str) -> None:
    done = table(busy, "--json", "--repo", "octo-org/octo-repo")
    assert [r["pr"] for r in json.loads(done.stdout)] == [1001]
    done = table(busy, "--json", "--repo", LONG_REPO.upper())
    assert [r["pr"] for r in json.loads(done.stdout)] == [1002, 1000]


def test_repo_is_checked_against_the_watched_repositories(busy: str) -> None:
    watched = {"LANDBOT_REPOS": f"Octo-Org/Octo-Repo,{LONG_REPO}"}
    done = table(busy, "--repo", "octo-org/octo-rep", **watched)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "landbot: --repo octo-org/octo-rep is not a watched repository; the watched ones are "
        f"Octo-Org/Octo-Repo, {LONG_REPO} (LANDBOT_REPOS, or repos in the settings file)\n"
    )
    done = table(busy, "--json", "--repo", "OCTO-ORG/octo-repo", **watched)  # the control
    assert done.returncode == 0 and [r["pr"] for r in json.loads(done.stdout)] == [1001]


def test_no_drops_of_a_repository(busy: str) -> None:
    done = table(busy, "--repo", "o/none")  # nothing watched: every repository is
    assert done.returncode == 0 and done.stdout == "no drops of o/none recorded yet\n"


# --- the dashboard's address ------------------------------------------------------------


def on_a_terminal(db: str, **env: str) -> tuple[str, str]:
    """`landbot status` with its stderr on a terminal (a pty), as a person runs it: what
    reached the terminal, and stdout."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    base.update(LANDBOT_DATABASE_URL=db, COLUMNS="80", **env)
    master, terminal = pty.openpty()
    try:
        proc = subprocess.Popen(
            [LANDBOT, "status"], env=base, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=terminal, start_new_session=True,
        )  # fmt: skip
        os.close(terminal)
        screen = bytearray()
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            screen.extend(chunk)
        out, _ = proc.communicate(timeout=60)
    finally:
        os.close(master)
    assert proc.returncode == 0, screen.decode(errors="replace")
    return screen.decode(errors="replace").replace("\r\n", "\n"), out.decode()


@pytest.fixture
def made(tmp_path: Path) -> tuple[dict[str, str], str]:
    """The settings of a state folder where serve made its token, and that token."""
    from landbot.config import Settings
    from landbot.web import access

    state = tmp_path / "state"
    token = access.load_or_make(Settings(fixer={"state_dir": state}))  # serve's first start
    assert token is not None
    return {"LANDBOT_FIXER__STATE_DIR": str(state), "LANDBOT_WEB__PORT": "9123"}, token


def test_status_prints_the_dashboard_address_with_its_token(busy: str, tmp_path: Path) -> None:
    from landbot.config import Settings
    from landbot.web import access

    state = tmp_path / "state"
    at = {"LANDBOT_FIXER__STATE_DIR": str(state), "LANDBOT_WEB__PORT": "9123"}
    before = table(busy, **at)
    assert before.returncode == 0, before.stderr
    assert "landbot: dashboard: no token yet; landbot serve makes it" in before.stderr
    assert str(state / "web-token") in before.stderr and not state.exists()  # nothing made
    token = access.load_or_make(Settings(fixer={"state_dir": state}))  # serve's first start
    assert token is not None
    screen, out = on_a_terminal(busy, **at)
    assert f"landbot: dashboard: http://127.0.0.1:9123/?token={token}\n" in screen
    assert token not in out and "summary 2" in out  # the table is unchanged
    # --json is for tools, whose output ends in logs: neither the token nor the line.
    tools = table(busy, "--json", **at)
    assert token not in tools.stdout + tools.stderr and "dashboard" not in tools.stderr
    # Switched off: the address, and why it has no token.
    off = table(busy, LANDBOT_WEB__AUTH="loopback", **at)
    assert 'dashboard: http://127.0.0.1:9123/ (no token: [web] auth is "loopback")' in off.stderr
    assert token not in off.stderr
    # A file others could read: said, and the drops still shown.
    (state / "web-token").chmod(0o644)
    loose = table(busy, **at)
    assert loose.returncode == 0 and "summary 2" in loose.stdout
    assert "readable or writable by others" in loose.stderr and token not in loose.stderr


def test_status_into_a_pipe_shows_the_token_masked_and_where_it_is(
    busy: str, made: tuple[dict[str, str], str], tmp_path: Path
) -> None:
    # stderr a pipe, as in cron or CI, whose output ends in logs: serve's rule, the token's
    # first characters and where the whole one is; the terminal control is the test above.
    at, token = made
    piped = table(busy, **at)
    assert piped.returncode == 0, piped.stderr
    assert token not in piped.stderr + piped.stdout and "?token=" not in piped.stderr
    assert (
        f"landbot: dashboard: http://127.0.0.1:9123/ needs the token {token[:4]}… (the whole "
        f"one: {(tmp_path / 'state' / 'web-token').absolute()}; on a terminal, landbot status "
        "prints the address with it)\n"
    ) in piped.stderr
    assert "summary 2" in piped.stdout  # the table is unchanged


def test_a_token_set_in_the_settings_is_whole_on_a_terminal_only(busy: str) -> None:
    own = "the-operator-s-own-dashboard-token"
    at = {"LANDBOT_WEB__TOKEN": own, "LANDBOT_WEB__PORT": "9124"}
    screen, _ = on_a_terminal(busy, **at)
    assert f"landbot: dashboard: http://127.0.0.1:9124/?token={own}\n" in screen
    piped = table(busy, **at)
    assert own not in piped.stderr and "needs the token the-…" in piped.stderr
    assert "(the whole one: [web] token (LANDBOT_WEB__TOKEN);" in piped.stderr
