"""The worker's log lines: each delivery with its outcome, each fixer run from start to end,
each failed job, with the drop's identifiers as fields (a SQLite store, a stub lander)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from landbot.core.model import Drop, Evidence, FixerResult
from landbot.errors import LandbotError
from landbot.land.model import Decision
from landbot.pipeline.process import Lander
from landbot.pipeline.worker import Worker
from landbot.store import Store

REPO = "acme/widgets"
HEAD = "c" * 40
DELIVERY = "f0e1d2c3-0000-4000-8000-000000000001"
TTL = dt.timedelta(seconds=60)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(f"sqlite:///{tmp_path / 'landbot.db'}")
    yield s
    s.close()


def events(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    """The landbot lines as the JSON log has them: the bound and the event's own fields."""
    out = []
    for r in caplog.records:
        fields = {**getattr(r, "landbot_context", {}), **getattr(r, "landbot_fields", {})}
        out.append({"event": r.getMessage(), "level": r.levelname.lower(), **fields})
    return out


class StubLander:
    """The calls a fix job makes of the land loop: the drop, its decision, its failure."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.decided: list[FixerResult] = []

    def before_fix(self, drop_id: int) -> tuple[Drop, Evidence, Decision | None]:
        row = self.store.drop(drop_id)
        assert row is not None
        return row.drop, Evidence(), None

    def progress(self, msg: str) -> None:
        pass

    def process(self, drop_id: int, fixer: FixerResult | None = None) -> Decision:
        assert fixer is not None
        self.decided.append(fixer)
        return Decision("handed_back", (), "the fixer said so")

    def failed(self, drop_id: int, decision: Decision) -> None:
        pass  # the drop's check run: none in this stub


def fix_job(store: Store) -> int:
    drop_id, _ = store.add_drop(
        repo=REPO,
        pr=7,
        head_sha=HEAD,
        reason="failed_checks",
        source="webhook",
        dedupe_key=f"webhook:{DELIVERY}",
        delivery_id=DELIVERY,
    )
    store.add_job("fix", {"drop_id": drop_id, "mode": "agent"}, drop_id=drop_id)
    return drop_id


def run_fix(store: Store, fixer: Any) -> StubLander:
    lander = StubLander(store)
    worker = Worker(store, lambda: cast(Lander, lander), fixer=fixer, name="w")
    lease = store.lease_job("w", TTL)
    assert lease is not None
    worker.run_job(lease)
    return lander


@pytest.mark.parametrize("good", [True, False], ids=["done", "error"])
def test_each_delivery_is_one_line_with_its_outcome(
    store: Store, caplog: pytest.LogCaptureFixture, good: bool
) -> None:
    body = {"action": "opened", "number": 7, "repository": {"full_name": REPO}}
    store.record_delivery(
        DELIVERY, "pull_request", "opened", REPO, json.dumps(body).encode() if good else b"{oops"
    )
    worker = Worker(store, lambda: cast(Lander, StubLander(store)), name="w")
    with caplog.at_level("DEBUG", logger="landbot"):
        assert worker.step()
    [line] = [e for e in events(caplog) if e["event"] == "delivery processed"]
    assert line == {
        **line,
        "repo": REPO,
        "delivery_id": DELIVERY,
        "github_event": "pull_request",
        "action": "opened",
        "outcome": "done" if good else "error",
        "level": "info" if good else "warning",
    }
    if good:
        assert line["note"] == "not handled: pull_request.opened"
    else:
        assert "error" in line and "note" not in line


def test_a_fixer_run_is_a_line_at_its_start_and_at_its_end(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    drop_id = fix_job(store)

    def fixer(drop: Drop, evidence: Evidence) -> FixerResult:
        return FixerResult("needs_human", summary="cannot tell", recommendation="look")

    with caplog.at_level("INFO", logger="landbot"):
        lander = run_fix(store, fixer)
    assert [f.verdict for f in lander.decided] == ["needs_human"]
    ids = {"repo": REPO, "pr": 7, "head_sha": HEAD, "drop_id": drop_id, "delivery_id": DELIVERY}
    started, finished = [e for e in events(caplog) if e["event"].startswith("fixer ")]
    assert started == {**started, **ids, "event": "fixer started", "mode": "agent", "job": "fix"}
    assert finished == {
        **finished,
        **ids,
        "event": "fixer finished",
        "verdict": "needs_human",
        "summary": "cannot tell",
    }
    assert finished["duration_s"] >= 0


def test_a_fixer_that_cannot_run_ends_its_line_and_fails_its_job(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    drop_id = fix_job(store)

    def fixer(drop: Drop, evidence: Evidence) -> FixerResult:
        raise LandbotError("bubblewrap cannot create a user namespace")

    with caplog.at_level("INFO", logger="landbot"):
        lander = run_fix(store, fixer)
    assert lander.decided == []
    lines = events(caplog)
    [finished] = [e for e in lines if e["event"] == "fixer finished"]
    assert (finished["outcome"], finished["level"], finished["drop_id"]) == (
        "error",
        "warning",
        drop_id,
    )
    [failed] = [e for e in lines if e["event"] == "job failed"]
    assert failed["level"] == "error" and "user namespace" in str(failed["error"])
    assert (failed["repo"], failed["pr"], failed["delivery_id"]) == (REPO, 7, DELIVERY)
    [job] = store.jobs()
    assert job.status == "failed"
