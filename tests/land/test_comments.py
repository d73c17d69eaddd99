"""Snapshot tests of the exact comment text (set LANDBOT_UPDATE_SNAPSHOTS=1 to rewrite them
after a deliberate change, then read the diff)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from landbot.core.model import Drop, Evidence, FailedCheck, FixerResult, JobFailure, PrSnapshot
from landbot.land.comments import (
    _DECIDE,
    _STATUS_NEXT,
    HANDBACK_MARKER,
    STATUS_MARKER,
    render_handback,
    render_status,
)
from landbot.land.model import HANDBACK_TOPICS, STATUS_TOPICS

from ..conftest import matches_snapshot

SNAPSHOTS = Path(__file__).parent / "snapshots"
HEAD = "0123456789abcdef0123456789abcdef01234567"
DROP = Drop(repo="octo/app", pr=42, head_sha=HEAD, reason="failed_checks", source="webhook")
PR = PrSnapshot(state="open", head_sha=HEAD, in_queue=False, author="alice", base_ref="main")
CHECKS = Evidence(
    failed_checks=(
        FailedCheck("test (3.12)", "failure", "https://github.com/octo/app/runs/9"),
        FailedCheck("lint", "cancelled", ""),
    )
)
JOBS = Evidence(
    triage_class="genuine",
    triage_reason="pytest reported 1 failed test",
    jobs=(
        JobFailure(
            job="test (3.12)",
            url="https://github.com/octo/app/actions/runs/1/job/9",
            step="Run pytest -q",
            error_lines=(120, 131),
            excerpt=(
                (119, "    assert add(2, 2) == 5"),
                (120, "E   assert 4 == 5"),
                (131, "FAILED tests/test_math.py::test_add"),
            ),
            summary="tests/test_math.py::test_add failed: assert 4 == 5",
            class_="genuine",
        ),
    ),
)


def check_snapshot(name: str, text: str) -> None:
    matches_snapshot(SNAPSHOTS / f"{name}.md", text)


def test_every_topic_has_exactly_one_template() -> None:
    # A topic without a template would fail at the moment landbot comments; one without a
    # topic is text no decision can reach.
    assert set(_STATUS_NEXT) == STATUS_TOPICS
    assert set(_DECIDE) == HANDBACK_TOPICS


def test_a_topic_without_a_template_is_an_error_not_a_fallback() -> None:
    with pytest.raises(KeyError):
        render_status("requeued_manual", DROP, PR, JOBS)  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        render_handback("manual_again", DROP, PR, JOBS)  # type: ignore[arg-type]


@pytest.mark.parametrize("topic", sorted(STATUS_TOPICS))
def test_status_snapshots(topic: str) -> None:
    text = render_status(topic, DROP, PR, JOBS, FixerResult("fixed", pushed_sha="f" * 40))
    assert text.startswith(STATUS_MARKER + "\n")
    check_snapshot(f"status-{topic}", text)


@pytest.mark.parametrize("topic", sorted(HANDBACK_TOPICS))
def test_handback_snapshots(topic: str) -> None:
    reason = "merge_conflict" if topic.startswith("conflict") else DROP.reason
    evidence = (
        Evidence(conflict_files=("src/app.py", "quest/m0/README.md"))
        if reason == "merge_conflict"
        else JOBS
    )
    fixer = (
        FixerResult(
            "needs_human",
            summary="test_add asserts 2 + 2 == 5",
            recommendation="decide whether the test or add() is wrong",
        )
        if topic == "needs_human"
        else FixerResult("fixed", refused="the fix touches .github/workflows/ci.yml")
        if topic == "fix_refused"
        else None
    )
    text = render_handback(topic, replace(DROP, reason=reason), PR, evidence, fixer)
    assert text.startswith(HANDBACK_MARKER + "\n@alice ")
    check_snapshot(f"handback-{topic}", text)


def test_handback_with_failed_checks_only() -> None:
    check_snapshot("handback-checks-only", render_handback("failed_checks", DROP, PR, CHECKS))


def test_unknown_reason_names_the_raw_value() -> None:
    drop = replace(DROP, reason="unknown", raw_reason="BRANCH_REMOVED")
    text = render_status("unknown_reason", drop, PR, Evidence())
    assert "`BRANCH_REMOVED`, a reason landbot does not know" in text


# --- text the job or the log wrote is inert ---------------------------------------------

HOSTILE = (
    "done @octocat @acme/admins #7 https://evil.example/x [click](https://evil.example) "
    '<img src="https://evil.example/p.png"> <!-- landbot:handback --> \x1b[31mred\x1b[0m'
)


def _live(text: str) -> list[str]:
    """What would notify, link, embed or mark up in `text`, outside landbot's own parts."""
    import re

    found = re.findall(r"@[A-Za-z0-9]", text.replace(f"@{PR.author} ", ""))
    found += re.findall(r"https?://(?!github\.com/octo/app/)", text)
    found += re.findall(r"<(?!details>|/details>|summary>|/summary>|!-- landbot:handback)", text)
    found += ["ESC"] if "\x1b" in text else []
    found += re.findall(r"(?<!\\)\]\((?!https://github\.com/octo/app/)", text)
    return found


def test_the_fixers_words_are_inert_in_the_hand_back() -> None:
    fixer = FixerResult(
        "needs_human", summary=HOSTILE, recommendation=HOSTILE, refused=f"{HOSTILE} /etc/x"
    )
    text = render_handback("needs_human", DROP, PR, JOBS, fixer)
    assert text.count(HANDBACK_MARKER) == 1  # the job cannot forge a second marker
    assert _live(text) == []
    # Control: the same words rendered raw would be live.
    assert len(_live(HOSTILE)) >= 6


def test_names_from_the_repository_cannot_break_out_of_code() -> None:
    evidence = replace(
        JOBS,
        conflict_files=("a`b.md", "x\n\n<img src=https://evil.example>.md", "``"),
        jobs=(replace(JOBS.jobs[0], step="Run echo ```\n<img src=https://evil.example>"),),
    )
    drop = replace(DROP, reason="merge_conflict")
    text = render_handback("conflict", drop, PR, evidence)
    assert "\n<img" not in text
    assert "- ``a`b.md``" in text
    # The commands name the files quoted, in a fence no backtick run inside can close.
    fence_lines = [line for line in text.splitlines() if line.startswith("```")]
    assert fence_lines[-2] == "```sh" and fence_lines[-1] == "```"
    assert "git add 'a`b.md' 'x <img src=https://evil.example>.md' '``' &&" in text


def test_a_check_url_that_is_not_a_plain_https_url_is_no_link() -> None:
    evidence = Evidence(
        failed_checks=(
            FailedCheck("evil", "failure", "javascript:alert(1)"),
            FailedCheck("paren", "failure", "https://github.com/x) [y](https://evil.example"),
            FailedCheck("good", "failure", "https://github.com/octo/app/runs/9"),
        )
    )
    text = render_handback("failed_checks", DROP, PR, evidence)
    assert "- evil: `failure`" in text and "javascript" not in text
    assert "evil.example" not in text
    assert "- [good](https://github.com/octo/app/runs/9): `failure`" in text  # the control


def test_a_patch_is_shown_in_a_fence_it_cannot_close() -> None:
    fixer = FixerResult("fixed", summary="s", refused="fork", patch="+```\n+<img src=x>\n")
    text = render_handback("fix_refused", DROP, PR, JOBS, fixer)
    assert "````diff\n+```\n+<img src=x>\n````" in text


def test_the_fix_announcement_notifies_the_author_and_keeps_the_fixers_words_inert() -> None:
    from landbot.land.comments import FIX_MARKER, render_fix_pushed

    fixer = FixerResult(
        "fixed",
        summary=HOSTILE,
        pushed_sha="f" * 40,
        reproduce="pytest -q",
        files=(("src/a`b.py", 2, 1),),
    )
    text = render_fix_pushed(DROP, PR, JOBS, fixer)
    assert text.startswith(FIX_MARKER + "\n@alice ")
    assert text.count("@alice") == 1
    assert _live(text.replace(FIX_MARKER, "", 1)) == []  # landbot's own marker aside
    assert text.count(FIX_MARKER) == 1
    assert "- ``src/a`b.py`` (+2 −1)" in text


def test_the_configured_skip_label_is_named() -> None:
    from landbot.land.model import Policy

    text = render_handback("failed_checks", DROP, PR, JOBS, policy=Policy(skip_label="hold"))
    assert "add the `hold` label" in text and "landbot:skip" not in text
    # Control: without a policy, the default label.
    assert "add the `landbot:skip` label" in render_handback("failed_checks", DROP, PR, JOBS)
