"""`landbot status` pages (--limit, --since), newest first, in design.md's JSON format."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from landbot.store import Store

LANDBOT = str(Path(sys.executable).parent / "landbot")
T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
CONTRACT_KEYS = {"repo", "pr", "head_sha", "reason", "class", "outcome", "updated_at"}


@pytest.fixture
def db(tmp_path: Path) -> str:
    """A store with 250 drops, one a minute from T0 (drop i observed at T0 + i minutes)."""
    url = f"sqlite:///{tmp_path / 'landbot.db'}"
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
