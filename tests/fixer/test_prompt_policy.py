"""The fixer's task for a quest-policy failure (fixer/prompt.py): the findings, landbot's
explanations, what the agent may fix and what it must leave to a person, and the command
that reproduces it. A snapshot of the whole prompt, and the required parts by name, so a
reworded snapshot cannot drop them; every policy-only part has a control (a genuine
failure's prompt does not carry it)."""

from __future__ import annotations

from landbot.core.model import Drop, Evidence, JobFailure
from landbot.fixer.prompt import Task, build_prompt, evidence_from_json, evidence_json

from .test_agents import check_snapshot

HEAD = "0123456789abcdef0123456789abcdef01234567"
DROP = Drop(repo="octo/app", pr=42, head_sha=HEAD, reason="failed_checks", source="webhook")
FINDING = "quest: quest/m0/kix/sandbox/README.md: quest title must be '# [XS|S|M|L|XL] Title'"
LINK = "quest: quest/m0/opencode-sdk.md: required quest kix/sandbox/live-test.md does not exist"
EXPLAINED = (
    "quest/m0/kix/sandbox/README.md: quest title must be '# [XS|S|M|L|XL] Title' — deleting "
    "quest/m0/kix/sandbox/live-test.md left quest/m0/kix/sandbox/README.md without children, "
    "so it is now a standalone quest and needs a size",
    "quest/m0/opencode-sdk.md: required quest kix/sandbox/live-test.md does not exist — it "
    "requires quest/m0/kix/sandbox/live-test.md (line 5), which this pull request deletes",
)
QUEST_JOB = JobFailure(
    job="quest",
    url="https://github.com/octo/app/actions/runs/1/job/9",
    step='Run landbot quest check --base "origin/$GITHUB_BASE_REF"',
    error_lines=(107, 108),
    excerpt=(
        (
            106,
            "quest: quest/m0/old.md: (already on the base) quest title must be "
            "'# [XS|S|M|L|XL] Title'",
        ),
        (107, FINDING),
        (108, LINK),
    ),
    summary="quest check found 2 problems",
    class_="policy",
)
POLICY = Evidence(
    triage_class="policy",
    triage_reason="the quest check failed: job `quest`",
    jobs=(QUEST_JOB,),
    quest_explanations=EXPLAINED,
)
GENUINE = Evidence(
    triage_class="genuine",
    jobs=(
        JobFailure(
            "test", "", "Run pytest -q", (3,), ((3, "FAILED t.py::x"),), "1 failed", "genuine"
        ),
    ),
)


def test_prompt_for_a_quest_policy_failure() -> None:
    text = build_prompt(Task(DROP, POLICY, base_ref="main"))
    check_snapshot("prompt-policy", text)
    # The reproduce command runs here: the base as the job's clone names it, not CI's env.
    assert "landbot quest check --base origin/main" in text
    assert "$GITHUB_BASE_REF" not in text.split("## How to work", 1)[1]
    # The findings of the change, not the one already on the base.
    findings = text.split("## The quest findings", 1)[1].split("## How to work", 1)[0]
    assert FINDING in findings and LINK in findings
    assert "quest/m0/old.md" not in findings
    for explanation in EXPLAINED:
        assert explanation in text
    # What it may fix, and what it must leave to a person.
    assert "a `## Required` link to a quest this pull request deletes" in text
    assert "the size of a quest" in text and "Never invent a size" in text
    assert "whether a quest should still exist" in text
    assert "If any finding needs a person, commit nothing" in text
    assert "put in `recommendation` what to decide" in text
    assert "whether the quest check reported the findings above" in text


def test_control_a_genuine_failure_gets_no_quest_task() -> None:
    text = build_prompt(Task(DROP, GENUINE, base_ref="main"))
    assert "## The quest findings" not in text
    assert "landbot quest check" not in text
    assert "Never invent a size" not in text
    assert "pytest -q" in text  # its own reproduce command


def test_the_base_is_quoted_and_an_unknown_base_is_named_as_such() -> None:
    text = build_prompt(Task(DROP, POLICY, base_ref="release 1; rm -rf /"))
    assert "landbot quest check --base 'origin/release 1; rm -rf /'" in text
    unknown = build_prompt(Task(DROP, POLICY))
    assert "landbot quest check --base BASE" in unknown


def test_a_policy_prompt_without_explanations_still_lists_the_findings() -> None:
    bare = Evidence(triage_class="policy", jobs=(QUEST_JOB,))
    text = build_prompt(Task(DROP, bare, base_ref="main"))
    assert FINDING in text
    assert "landbot compared the pull request" not in text  # no explanation to introduce


def test_the_evidence_file_carries_the_explanations_both_ways() -> None:
    data = evidence_json(Task(DROP, POLICY, base_ref="main"))
    assert data["quest_explanations"] == list(EXPLAINED)
    _, back = evidence_from_json(data, head_sha=HEAD)
    assert back.quest_explanations == EXPLAINED
    _, none = evidence_from_json(evidence_json(Task(DROP, GENUINE)), head_sha=HEAD)
    assert none.quest_explanations == ()


def test_an_evidence_file_with_bad_explanations_is_refused() -> None:
    import pytest

    from landbot.fixer.prompt import EvidenceFormatError

    data = evidence_json(Task(DROP, POLICY, base_ref="main"))
    with pytest.raises(EvidenceFormatError, match="quest_explanations"):
        evidence_from_json({**data, "quest_explanations": [1, 2]}, head_sha=HEAD)
    evidence_from_json(data, head_sha=HEAD)  # control: the same file, as written, is read
