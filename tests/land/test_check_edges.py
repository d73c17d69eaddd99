"""Edges of the `landbot` check run's pure part and of the fixing label's claim
(landbot/land/checks.py): a text longer than GitHub takes gives way longest excerpt first;
the output sent once more after a refusal; a label a person set is not landbot's; the
reply to a command whose action failed (landbot/land/replies.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from landbot.core.model import Drop, Evidence, JobFailure, PrSnapshot
from landbot.github.models import CheckOutput
from landbot.land.checks import (
    TRIMMED,
    bare_output,
    claim_fixing_label,
    fit_excerpts,
    label_key,
    trimmed_note,
)
from landbot.land.replies import render_failed
from landbot.store import Store

HEAD = "0123456789abcdef0123456789abcdef01234567"
DROP = Drop(repo="octo/app", pr=42, head_sha=HEAD, reason="failed_checks", source="webhook", id=7)
PR = PrSnapshot(state="open", head_sha=HEAD, in_queue=False, author="alice", base_ref="main")
URL = "https://github.com/octo/app/pull/42#issuecomment-5"


def job(name: str, lines: int) -> JobFailure:
    excerpt = tuple((n, f"E {name} line {n} " + "x" * 50) for n in range(1, lines + 1))
    return JobFailure(name, "", "Run tests", (1,), excerpt, "1 failed", "genuine")


def render(evidence: Evidence) -> str:
    """A stand-in for render_handback: the job names, and each excerpt's lines."""
    parts = ["**What to decide:** fix it"]
    for j in evidence.jobs:
        parts.append(f"- {j.job}")
        parts += [text for _, text in j.excerpt]
    return "\n".join(parts) + "\n"


EVIDENCE = Evidence(jobs=(job("small", 2), job("big", 40), job("middle", 10)))


def test_a_text_that_fits_is_left_whole() -> None:
    text = render(EVIDENCE)
    assert fit_excerpts(render, EVIDENCE, len(text), "NOTE") == text


def test_the_longest_excerpt_goes_first_and_the_note_says_so() -> None:
    whole = render(EVIDENCE)
    fitted = fit_excerpts(render, EVIDENCE, len(whole) - 100, "NOTE")
    assert "E big" not in fitted and "E middle" in fitted and "E small" in fitted
    assert "- big" in fitted  # the job's line stays
    assert fitted.endswith("\n\nNOTE\n") and len(fitted) <= len(whole) - 100


def test_then_the_next_longest() -> None:
    without_big = render(Evidence(jobs=(job("small", 2), job("big", 0), job("middle", 10))))
    fitted = fit_excerpts(render, EVIDENCE, len(without_big) - 50, "NOTE")
    assert "E big" not in fitted and "E middle" not in fitted and "E small" in fitted


def test_a_text_too_long_without_any_excerpt_is_cut_at_a_line() -> None:
    fitted = fit_excerpts(render, EVIDENCE, 40, "NOTE")
    assert len(fitted) <= 40 and fitted.endswith("…\n\nNOTE\n")
    assert all(line in render(EVIDENCE) for line in fitted.split("\n")[:-4])


def test_the_trimmed_note_links_the_hand_back_only_when_it_is_a_url() -> None:
    assert TRIMMED in trimmed_note(URL) and URL in trimmed_note(URL)
    assert "(" not in trimmed_note(None) and "javascript" not in trimmed_note("javascript:x")


def test_the_bare_output_is_the_title_and_one_line() -> None:
    full = CheckOutput(title="Handed back: fix it", summary="long\n" * 10, annotations=())
    bare = bare_output(full, 422, URL, URL)
    assert bare.title == full.title and bare.annotations == ()
    assert bare.summary.count("\n") == 0 and f"[the hand-back comment]({URL})" in bare.summary
    pr_only = bare_output(full, 422, "https://github.com/octo/app/pull/42", None)
    assert "[the pull request](https://github.com/octo/app/pull/42)" in pr_only.summary


# --- the fixing label's claim --------------------------------------------------------------


class Labels:
    """The label calls a claim makes."""

    def __init__(self) -> None:
        self.added: list[str] = []

    def add_label(self, repo: str, number: int, name: str) -> None:
        self.added.append(name)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(f"sqlite:///{tmp_path / 'x.db'}")
    s.add_drop(
        repo="octo/app",
        pr=42,
        head_sha=HEAD,
        reason="failed_checks",
        raw_reason="FAILED_CHECKS",
        source="webhook",
        dedupe_key="d",
        observed_at=None,
    )
    yield s
    s.close()


def claim(store: Store, gh: Labels, labels: tuple[str, ...], drop_id: int) -> bool:
    drop = Drop(
        repo="octo/app",
        pr=42,
        head_sha=HEAD,
        reason="failed_checks",
        source="webhook",
        id=drop_id,
    )
    pr = PrSnapshot(
        state="open", head_sha=HEAD, in_queue=False, author="a", base_ref="main", labels=labels
    )
    gh_any: Any = gh
    return claim_fixing_label(store, gh_any, drop, pr, "landbot:fixing")


def test_a_label_already_on_is_not_landbots(store: Store) -> None:
    drop_id = store.drops()[0].id
    gh = Labels()
    assert claim(store, gh, ("landbot:fixing",), drop_id) is False
    assert gh.added == [] and store.actions(drop_id) == []


def test_a_label_not_on_is_put_on_and_is_landbots(store: Store) -> None:
    drop_id = store.drops()[0].id
    gh = Labels()
    assert claim(store, gh, (), drop_id) is True and gh.added == ["landbot:fixing"]
    # Run again (the RunFixer resumed): the ledger says landbot put it on, though it is on.
    assert claim(store, gh, ("landbot:fixing",), drop_id) is True
    assert gh.added == ["landbot:fixing"]


def test_a_claim_that_died_before_its_add_is_landbots_on_resume(store: Store) -> None:
    drop_id = store.drops()[0].id
    store.begin_action(label_key(drop_id), "fixinglabel", drop_id)  # then the worker died
    gh = Labels()
    # The label is on (its add applied before the crash): landbot's, sent again, harmless.
    assert claim(store, gh, ("landbot:fixing",), drop_id) is True
    assert gh.added == ["landbot:fixing"]


# --- the reply to a command whose action failed --------------------------------------------


def test_the_failure_reply_says_what_failed_and_what_to_do() -> None:
    body = render_failed(
        "/landbot skip", "skip", "the skip label failed: GitHub answered 403: @x no", "a:b"
    )
    assert "could not finish `/landbot skip`: the skip label failed: GitHub answered 403" in body
    assert "@x" not in body  # inert: the error cannot mention anyone
    assert "Add the `a:b` label yourself" in body
    retry = render_failed("/landbot retry", "retry", "x" * 1000, "a:b")
    assert "…" in retry and len(retry) < 1000
    assert "put the pull request back in the merge queue yourself" in retry
