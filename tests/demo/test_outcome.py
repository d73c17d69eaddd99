"""The demo's judgement of each story (pure): a record that tells the story passes, and
each way of not telling it is caught and named. Without these, a demo that hid a broken
pipeline behind "as described" would go unnoticed."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from landbot.demo.outcome import (
    CommentRecord,
    CommitRecord,
    DropRecord,
    PullRecord,
    final_state,
    happened,
    judge,
)
from landbot.demo.project import POLICY_FINDING
from landbot.land.comments import HANDBACK_MARKER, STATUS_MARKER

MERGED = DropRecord(9, "merged", None, "ignored", "the pull request has merged", "webhook")
STATUS = CommentRecord(1, "status", f"{STATUS_MARKER}\n…")
HANDBACK = CommentRecord(2, "handback", f"{HANDBACK_MARKER}\n@bob …\n  27 > {POLICY_FINDING}\n")
FIX = CommitRecord("a" * 40, "Fix stdev(): divide by n - 1", merge=False)
MERGE = CommitRecord("b" * 40, "Merge main into carol/plan-mode", merge=True)


def record(key: str, **kw: Any) -> PullRecord:
    base: dict[str, Any] = {
        "number": 2,
        "key": key,
        "author": "bob",
        "title": "t",
        "label": "l",
        "story": "s",
        "expected": "e",
        "state": "merged",
        "queued": False,
    }
    return PullRecord(**{**base, **kw})


GOOD = {
    "prelude": record("prelude", drops=(MERGED,)),
    "flaky": record(
        "flaky",
        drops=(
            DropRecord(1, "failed_checks", "infrastructure", "requeued", "re-enqueued", "webhook"),
            MERGED,
        ),
        comments=(STATUS,),
    ),
    "policy": record(
        "policy",
        state="open",
        drops=(
            DropRecord(1, "failed_checks", "policy", "handed_back", "", "webhook", "agent", "done"),
        ),
        comments=(STATUS, HANDBACK),
        findings=(POLICY_FINDING,),
    ),
    "conflict": record(
        "conflict",
        drops=(
            DropRecord(1, "merge_conflict", None, "fixed", "", "webhook", "merge_driver", "done"),
            MERGED,
        ),
        comments=(STATUS,),
        landbot_commits=(MERGE,),
    ),
    "genuine": record(
        "genuine",
        drops=(
            DropRecord(1, "failed_checks", "genuine", "fixed", "", "webhook", "agent", "done"),
            MERGED,
        ),
        comments=(STATUS,),
        landbot_commits=(FIX,),
    ),
}


@pytest.mark.parametrize("key", sorted(GOOD))
def test_the_story_as_told_passes(key: str) -> None:
    assert judge(GOOD[key]) == (judge(GOOD[key]).__class__(True))


def _drop(pull: PullRecord, **change: Any) -> PullRecord:
    first = dataclasses.replace(pull.drops[0], **change)
    return dataclasses.replace(pull, drops=(first, *pull.drops[1:]))


BROKEN = [
    ("prelude", dataclasses.replace(GOOD["prelude"], state="open"), "it did not merge"),
    ("flaky", _drop(GOOD["flaky"], outcome="handed_back"), "did not re-enqueue"),
    ("flaky", _drop(GOOD["flaky"], cls="genuine"), "did not re-enqueue"),
    ("flaky", dataclasses.replace(GOOD["flaky"], state="open"), "did not merge"),
    (
        "flaky",
        dataclasses.replace(GOOD["flaky"], comments=(STATUS, HANDBACK)),
        "handed it back",
    ),
    ("policy", dataclasses.replace(GOOD["policy"], state="merged"), "merged with a broken"),
    ("policy", _drop(GOOD["policy"], fix_mode=None), "fixer did not look"),
    ("flaky", _drop(GOOD["flaky"], fix_mode="agent"), "did not re-enqueue"),
    ("policy", _drop(GOOD["policy"], cls="genuine"), "not hand it back as a quest"),
    ("policy", dataclasses.replace(GOOD["policy"], comments=(STATUS,)), "no hand-back comment"),
    (
        "policy",
        dataclasses.replace(
            GOOD["policy"],
            comments=(STATUS, CommentRecord(2, "handback", f"{HANDBACK_MARKER}\n@bob quest")),
        ),
        "does not quote",
    ),
    ("policy", dataclasses.replace(GOOD["policy"], findings=()), "reported no finding"),
    ("conflict", _drop(GOOD["conflict"], fix_mode="agent"), "quest merge driver"),
    ("conflict", _drop(GOOD["conflict"], outcome="handed_back"), "quest merge driver"),
    (
        "conflict",
        dataclasses.replace(GOOD["conflict"], landbot_commits=(FIX,)),
        "no merge commit",
    ),
    ("conflict", dataclasses.replace(GOOD["conflict"], state="open"), "did not merge"),
    ("genuine", _drop(GOOD["genuine"], outcome="handed_back"), "did not fix it"),
    ("genuine", _drop(GOOD["genuine"], fix_mode="merge_driver"), "did not fix it"),
    ("genuine", dataclasses.replace(GOOD["genuine"], landbot_commits=()), "no fix commit"),
    ("genuine", dataclasses.replace(GOOD["genuine"], state="open"), "did not merge"),
]


@pytest.mark.parametrize(("key", "pull", "problem"), BROKEN)
def test_a_story_that_did_not_happen_is_named(key: str, pull: PullRecord, problem: str) -> None:
    verdict = judge(pull)
    assert not verdict.ok
    assert problem in verdict.problem


def test_what_happened_reads_the_record() -> None:
    assert happened(GOOD["flaky"]) == "dropped: failed_checks [infrastructure] → requeued; merged"
    assert happened(GOOD["conflict"]) == "dropped: merge_conflict → fixed (merge_driver); merged"
    assert happened(GOOD["policy"]) == "dropped: failed_checks [policy] → handed_back (agent)"
    assert final_state(GOOD["policy"]) == "handed back"
    assert final_state(dataclasses.replace(GOOD["flaky"], state="open", queued=True)) == (
        "in the queue"
    )
