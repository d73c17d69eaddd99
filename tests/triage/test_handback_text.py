"""How triage's evidence reads in the hand-back comment (landbot.land.comments): text taken
from logs and check names is untrusted, and the excerpt must stay one intact code block."""

from __future__ import annotations

import re

from landbot.core.model import Drop, Evidence, FailedCheck, JobFailure, PrSnapshot
from landbot.land.comments import render_handback, render_status

HEAD = "0123456789abcdef0123456789abcdef01234567"
DROP = Drop(repo="octo/app", pr=42, head_sha=HEAD, reason="failed_checks", source="webhook")
PR = PrSnapshot(state="open", head_sha=HEAD, in_queue=False, author="alice", base_ref="main")
URL = "https://github.com/octo/app/actions/runs/1/job/9"


def evidence(excerpt: tuple[tuple[int, str], ...], **kw: object) -> Evidence:
    job = JobFailure(
        job=str(kw.pop("job", "test")),
        url=URL,
        step="Run make test",
        error_lines=tuple(kw.pop("error_lines", (12,))),  # type: ignore[arg-type]
        excerpt=excerpt,
        summary=str(kw.pop("summary", "1 test failed")),
        class_="genuine",
    )
    return Evidence(
        failed_checks=(FailedCheck(job.job, "failure", URL),),
        triage_class="genuine",
        triage_reason=str(kw.pop("reason", "the pull request's own failure")),
        jobs=(job,),
    )


def test_error_lines_are_marked_and_gaps_shown() -> None:
    ev = evidence(((9, "def test():"), (10, "    assert x"), (12, "E  assert 1 == 2")))
    body = render_handback("failed_checks", DROP, PR, ev)
    assert "<details><summary>log excerpt (error lines 12)</summary>" in body
    block = body[body.index("```text") : body.index("</details>")]
    assert block.splitlines()[1:5] == [
        "   9 | def test():",
        "  10 |     assert x",
        "   ⋮",
        "  12 > E  assert 1 == 2",
    ]
    assert f"- [test]({URL}) `failure`, step **Run make test**: 1 test failed" in body


def test_a_log_line_with_backticks_cannot_close_the_excerpt() -> None:
    ev = evidence(((12, "```"), (13, "echo ````x````")), error_lines=(12,))
    body = render_handback("failed_checks", DROP, PR, ev)
    fences = re.findall(r"^  (`{3,})(?:text)?$", body, re.M)
    assert fences == ["`````", "`````"]  # longer than the longest run (4) in the log


def test_mentions_and_issue_references_from_a_log_notify_nobody() -> None:
    ev = evidence(
        ((12, "@alice look #7"),),
        job="test @org/team",
        summary="failed: ping @octocat about #12",
        reason="the pull request's own failure: job `x`, log line 12: @bob",
    )
    body = render_handback("failed_checks", DROP, PR, ev)
    prose = body.split("```text")[0]
    assert not re.search(r"[@#][A-Za-z0-9]", prose.replace("@alice The merge", ""))
    assert "@\u200boctocat about #\u200b12" in body
    # Inside the code block nothing is rewritten: a code block mentions nobody.
    assert "12 > @alice look #7" in body
    status = render_status("requeued_not_its_fault", DROP, PR, ev)
    assert "@\u200bbob" in status and "@bob" not in status


def test_a_reason_without_a_class_is_still_shown() -> None:
    ev = Evidence(triage_reason="landbot found no merge-group commit for this drop")
    body = render_handback("failed_checks", DROP, PR, ev)
    assert "**Triage:** landbot found no merge-group commit for this drop" in body
