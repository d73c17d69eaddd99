"""Which step failed: the jobs API's steps first, then the annotations, then the log."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from landbot.triage import explain_log
from landbot.triage.explain import explain_parsed
from landbot.triage.log import parse_log
from landbot.triage.steps import pick, same_title

from .conftest import SET_UP, gh_log, run_step

EXIT1 = "##[error]Process completed with exit code 1."


def api(*steps: tuple[str, str]) -> list[dict[str, object]]:
    """A job's steps as the jobs API lists them: set-up, ours, post, complete."""
    out: list[dict[str, object]] = [{"name": "Set up job", "number": 1, "conclusion": "success"}]
    for n, (name, conclusion) in enumerate(steps, 2):
        out.append({"name": name, "number": n, "conclusion": conclusion})
    out.append({"name": "Complete job", "number": len(steps) + 2, "conclusion": "success"})
    return out


# A `continue-on-error` step that failed (lint), then the real failure (tests).
CONTINUED = [
    *SET_UP,
    *run_step("npm run lint", "src/a.ts:1:1  error  no-unused-vars", EXIT1),
    *run_step("npm test", "FAIL src/cart.test.ts > applies the discount", EXIT1),
    "Post job cleanup.",
]


def test_the_log_alone_blames_the_first_failing_step() -> None:
    parsed = parse_log(gh_log(CONTINUED))
    assert [s.title for s in parsed.sections] == ["Run npm run lint", "Run npm test"]
    e = explain_parsed(parsed)
    assert (e.step, e.signal) == ("Run npm run lint", "log")


def test_a_continue_on_error_step_is_not_blamed_with_the_jobs_api() -> None:
    # The API's conclusion is taken after continue-on-error: the lint step "succeeded"
    # (actions/runner docs/adrs/0274-step-outcome-and-conclusion.md).
    steps = api(("Run npm run lint", "success"), ("Run npm test", "failure"))
    e = explain_log(gh_log(CONTINUED), steps=steps)
    assert (e.step, e.step_title, e.signal, e.step_number) == (
        "Run npm test",
        "Run npm test",
        "steps-api",
        3,
    )
    assert e.class_ == "genuine"
    assert e.parsed is not None and e.parsed.first_error == len(CONTINUED) - 1


def test_custom_step_names_are_matched_by_position() -> None:
    steps = api(("Lint", "success"), ("Unit tests", "failure"))
    e = explain_log(gh_log(CONTINUED), steps=steps)
    assert (e.step, e.step_title, e.signal) == ("Unit tests", "Run npm test", "steps-api")


def test_position_says_nothing_when_the_counts_differ() -> None:
    # One API step more than the log shows (a composite action prints its own steps):
    # the log's choice stands, named as the API names the failing step.
    steps = api(("Setup", "success"), ("Lint", "success"), ("Unit tests", "failure"))
    e = explain_log(gh_log(CONTINUED), steps=steps)
    assert (e.step, e.step_title, e.signal) == ("Unit tests", "Run npm run lint", "log")


def test_a_composites_own_steps_do_not_count_for_the_position() -> None:
    # cpp/godot-precommit-clang-format.log with its jobs API steps, both as recorded: the
    # log prints 8 step headers before the post-job cleanup, the API lists 4 steps that
    # ran; the 4 others are pre-commit/action's (its header's inputs are followed at once
    # by its first step's header), so the failing step is placed by its position.
    real = Path(__file__).parent / "real" / "cpp"
    steps = json.loads((real / "godot-precommit-clang-format.steps.json").read_text())[0]
    e = explain_log((real / "godot-precommit-clang-format.log").read_bytes(), steps=steps["steps"])
    assert (e.step, e.step_number, e.signal) == ("Style checks via pre-commit", 5, "steps-api")
    assert e.step_title == "Run pre-commit/action@v3.0.1"
    parsed = e.parsed
    assert parsed is not None and len(parsed.headers) == 8 and len(parsed.inner_headers) == 4


def test_a_failing_set_up_is_the_set_up_section() -> None:
    lines = [
        "Current runner version: '2.321.0'",
        "##[error]Unable to resolve action `actions/chekout@v4`, repository not found",
    ]
    steps = [{"name": "Set up job", "number": 1, "conclusion": "failure"}]
    e = explain_log(gh_log(lines), steps=steps)
    assert (e.step, e.step_title, e.signal) == ("Set up job", None, "steps-api")


def test_the_first_failing_api_step_wins_then_cancelled() -> None:
    lines = [
        *run_step("make test", "boom", EXIT1),
        *run_step("make upload", "##[error]The operation was canceled."),
    ]
    steps = api(("Run make test", "failure"), ("Run make upload", "cancelled"))
    assert explain_log(gh_log(lines), steps=steps).step == "Run make test"
    steps = api(("Run make test", "success"), ("Run make upload", "cancelled"))
    e = explain_log(gh_log(lines), steps=steps)
    assert (e.step, e.class_) == ("Run make upload", "cancelled")


@dataclass(frozen=True)
class Note:
    path: str
    start_line: int
    annotation_level: str
    message: str


def test_annotations_locate_the_failing_step() -> None:
    lines = [
        *run_step("npm run lint", "##[error]src/a.ts: 'x' is unused", EXIT1),
        *run_step("npm test", "##[error]cart.test.ts: expected 10 to be 9", EXIT1),
        "Post job cleanup.",
    ]
    parsed = parse_log(gh_log(lines))
    notes = [
        Note(".github", 1, "failure", "Process completed with exit code 1."),
        Note("cart.test.ts", 3, "failure", "cart.test.ts: expected 10 to be 9"),
        Note("src/a.ts", 1, "warning", "src/a.ts: 'x' is unused"),
    ]
    e = explain_parsed(parsed, annotations=notes)
    assert (e.step_title, e.signal) == ("Run npm test", "annotations")
    # Control: only the generic message, which the first failing step also holds.
    e = explain_parsed(parsed, annotations=notes[:1])
    assert (e.step_title, e.signal) == ("Run npm run lint", "annotations")
    # Control: the steps API outranks the annotations.
    steps = api(("Run npm run lint", "failure"), ("Run npm test", "failure"))
    assert explain_parsed(parsed, steps=steps, annotations=notes).signal == "steps-api"


def test_a_gate_named_by_the_jobs_api_is_policy() -> None:
    lines = [*run_step("actions/github-script@v7", EXIT1), "Post job cleanup."]
    steps = api(("Check PR title", "failure"))
    e = explain_log(gh_log(lines), steps=steps)
    assert (e.class_, e.evidence[0].signature) == ("policy", "pr-gate")
    # Control: from the log alone, nothing says it is a gate.
    assert explain_log(gh_log(lines)).class_ == "genuine"


def test_same_title() -> None:
    assert same_title("Run  npm test", "Run npm test")
    assert not same_title("Run npm test", "Run npm test:e2e")
    long = "Run ./gradlew check -PandroidBuild=true -PgraalBuild=true -x test"
    assert same_title(long, long + " -x test")  # one of them cut
    assert not same_title("Run npm", "Run npm test")
    assert not same_title(None, "Run x")


def test_pick_without_any_failure_is_the_log() -> None:
    parsed = parse_log(gh_log([*run_step("make", "ok"), "Post job cleanup."]))
    chosen = pick(parsed, steps=api(("Run make", "success")))
    assert (chosen.signal, chosen.step, chosen.parsed.first_error) == ("log", None, None)
