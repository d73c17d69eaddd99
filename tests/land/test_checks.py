"""The `landbot` check run's pure part: whether to make it, its conclusion, its output (title,
summary, annotations), and the path and line an error line names, on real job logs.

Snapshots of the exact output are in tests/land/snapshots/checks/ (set
LANDBOT_UPDATE_SNAPSHOTS=1 to rewrite them after a deliberate change, then read the diff).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, cast, get_args

import pytest

from landbot.core.model import (
    Drop,
    Evidence,
    FailedCheck,
    FixerResult,
    JobFailure,
    Outcome,
    PrSnapshot,
)
from landbot.github.errors import GitHubError, MutationOutcomeUnknown, NetworkError, ServerError
from landbot.github.models import CheckOutput, CheckRun
from landbot.github.ops import GitHubOps
from landbot.land.checks import (
    _HANDBACK_TITLE,
    _STATUS_TITLE,
    MAX_ANNOTATIONS,
    CheckWriter,
    Place,
    check_output,
    conclusion,
    error_annotations,
    place,
    repo_path,
    start_output,
    wants_check,
)
from landbot.land.comments import HANDBACK_MARKER, render_handback
from landbot.land.model import (
    HANDBACK_TOPICS,
    STATUS_TOPICS,
    Decision,
    HandBack,
    Policy,
    Requeue,
    Status,
)
from landbot.store import Store
from landbot.triage.explain import explain_log
from landbot.triage.gather import log_verdict

from ..conftest import matches_snapshot

SNAPSHOTS = Path(__file__).parent / "snapshots" / "checks"
REAL = Path(__file__).parents[1] / "triage" / "real"
HEAD = "0123456789abcdef0123456789abcdef01234567"
PUSHED = "fedcba9876543210fedcba9876543210fedcba98"
DROP = Drop(repo="octo/app", pr=42, head_sha=HEAD, reason="failed_checks", source="webhook", id=7)
PR = PrSnapshot(
    state="open",
    head_sha=HEAD,
    in_queue=False,
    author="alice",
    base_ref="main",
    url="https://github.com/octo/app/pull/42",
)
JOB_URL = "https://github.com/octo/app/actions/runs/1/job/9"
PYTEST = Evidence(
    failed_checks=(FailedCheck("test (3.12)", "failure", JOB_URL),),
    triage_class="genuine",
    triage_reason="the pull request's own failure: 1 test failed",
    jobs=(
        JobFailure(
            job="test (3.12)",
            url=JOB_URL,
            step="Run pytest -q",
            error_lines=(120, 124, 131),
            excerpt=(
                (119, "    assert add(2, 2) == 5"),
                (120, "E   assert 4 == 5"),
                (123, "tests/test_math.py:12: in test_add"),
                (124, "tests/test_math.py:14: AssertionError"),
                (131, "FAILED tests/test_math.py::test_add - assert 4 == 5"),
            ),
            summary="tests/test_math.py::test_add failed: assert 4 == 5",
            class_="genuine",
            run="pytest -q",
        ),
    ),
)


def check_snapshot(name: str, output: CheckOutput) -> None:
    text = render(output)
    matches_snapshot(SNAPSHOTS / f"{name}.md", text)


def render(output: CheckOutput) -> str:
    """The output as a person sees it on the check's page: title, summary, annotations."""
    lines = [f"# {output.title}", "", output.summary.rstrip("\n")]
    if output.annotations:
        lines += ["", "---", "annotations:"]
        for a in output.annotations:
            lines.append(
                f"- {a.path}:{a.start_line}-{a.end_line} [{a.annotation_level}] "
                f"{a.title}: {a.message}"
            )
    return "\n".join(lines) + "\n"


# --- whether, and which conclusion ----------------------------------------------------------


def test_the_conclusion_of_each_outcome() -> None:
    expected: dict[str, str | None] = {
        "pending": None,
        "requeued": "success",
        "fixed": "success",
        "handed_back": "action_required",
        "failed": "action_required",
        "ignored": "neutral",
        "waiting_base": None,  # still landbot's: the check stays in progress
        "held": None,
    }
    assert set(expected) == set(get_args(Outcome))  # every outcome has its answer
    assert {o: conclusion(o) for o in get_args(Outcome)} == expected


@pytest.mark.parametrize(
    ("pr", "policy", "after_fixer", "wanted"),
    [
        (PR, Policy(), False, True),  # open, at the drop's head, out of the queue
        (replace(PR, state="closed"), Policy(), False, False),
        (replace(PR, state="merged"), Policy(), False, False),
        (replace(PR, head_sha="f" * 40), Policy(), False, False),  # someone pushed
        (replace(PR, in_queue=True), Policy(), False, False),  # back in the queue already
        (replace(PR, labels=("landbot:skip",)), Policy(), False, False),  # opted out
        (replace(PR, labels=("no-landbot",)), Policy(skip_label="no-landbot"), False, False),
        (replace(PR, labels=("landbot:skip",)), Policy(skip_label="no-landbot"), False, True),
        (PR, Policy(), True, False),  # after the fixer: made at the drop's first look
    ],
)
def test_wants_check(pr: PrSnapshot, policy: Policy, after_fixer: bool, wanted: bool) -> None:
    assert wants_check(DROP, pr, policy, after_fixer=after_fixer) is wanted


# --- the output -----------------------------------------------------------------------------


def test_every_topic_has_its_title() -> None:
    assert set(_HANDBACK_TITLE) == HANDBACK_TOPICS
    assert set(_STATUS_TITLE) == STATUS_TOPICS
    for title in [*_HANDBACK_TITLE.values(), *_STATUS_TITLE.values()]:
        assert "\n" not in title and len(title) <= 100, title


@pytest.mark.parametrize("topic", sorted(HANDBACK_TOPICS))
def test_a_hand_back_summary_is_the_comment_without_marker_or_mention(topic: str) -> None:
    action = HandBack(topic, cap="pushes" if topic == "cap_reached" else None)  # type: ignore[arg-type]
    decision = Decision("handed_back", (Status("handed_back"), action), "a person must look")
    out = check_output(decision, DROP, PR, PYTEST, policy=Policy())
    comment = render_handback(action.topic, DROP, PR, PYTEST, cap=action.cap, policy=Policy())
    assert "<!--" not in out.summary and "@alice" not in out.summary
    assert comment.startswith(f"{HANDBACK_MARKER}\n@alice ")
    # The same renderer: everything after the greeting is the comment's own text.
    assert out.summary.split("\n", 1)[1] == comment.split("\n", 2)[2]
    assert out.title == _HANDBACK_TITLE[action.topic]


def test_in_progress() -> None:
    check_snapshot("in_progress-failed_checks", start_output(DROP))
    conflict = start_output(replace(DROP, reason="merge_conflict"))
    assert conflict.title == "Working on it: landbot is merging the base branch to see the conflict"


def test_handed_back_with_annotations() -> None:
    decision = Decision(
        "handed_back",
        (Status("handed_back"), HandBack("failed_checks")),
        "no fixer is configured: handed back",
    )
    out = check_output(decision, DROP, PR, PYTEST)
    check_snapshot("action_required-failed_checks", out)
    # The two error lines that name a place; the `FAILED …::test_add` line names none, and
    # line 123 is context, not an error line.
    assert [(a.path, a.start_line, a.annotation_level) for a in out.annotations] == [
        ("tests/test_math.py", 14, "failure"),
    ]


def test_handed_back_at_a_cap_names_the_cap() -> None:
    decision = Decision(
        "handed_back",
        (Status("handed_back"), HandBack("cap_reached", cap="requeues")),
        "the PR's cap is reached",
    )
    out = check_output(decision, replace(DROP, reason="checks_timed_out"), PR, Evidence())
    check_snapshot("action_required-cap_reached", out)
    assert "cap of 3 re-enqueues" in out.summary and out.annotations == ()


def test_failed() -> None:
    decision = Decision("failed", (), "the enqueue failed: GitHub answered 403")
    out = check_output(decision, DROP, PR, PYTEST)
    check_snapshot("action_required-failed", out)
    assert out.annotations  # what triage found is still where the failure is


def test_requeued_not_its_fault() -> None:
    evidence = replace(PYTEST, triage_class="flaky", triage_reason="a runner lost connection")
    decision = Decision(
        "requeued",
        (Requeue(HEAD), Status("requeued_not_its_fault")),
        "re-enqueued (1 of 1 for this head)",
    )
    out = check_output(decision, DROP, PR, evidence)
    check_snapshot("success-requeued_not_its_fault", out)
    # Not the author's to fix: no red marks on the lines of a failure that was not theirs.
    assert out.annotations == ()


def test_fixed_links_the_announcement() -> None:
    fixer = FixerResult("fixed", summary="add() returned a - b", pushed_sha=PUSHED)
    decision = Decision("fixed", (Status("fixed"),), "fixed and pushed; auto-merge is armed")
    url = "https://github.com/octo/app/pull/42#issuecomment-1001"
    out = check_output(decision, DROP, PR, PYTEST, fixer, fix_comment_url=url)
    check_snapshot("success-fixed", out)
    assert out.title == "Fixed: landbot pushed fedcba9; auto-merge is armed"
    assert f"]({url})" in out.summary


def test_ignored_with_and_without_a_word_on_the_pr() -> None:
    note = Decision(
        "ignored", (Status("unknown_reason"),), "removed for `BRANCH_REMOVED`: not acted on"
    )
    odd = replace(DROP, reason="unknown", raw_reason="BRANCH_REMOVED")
    check_snapshot("neutral-unknown_reason", check_output(note, odd, PR, Evidence()))
    closed = Decision("ignored", (), "the pull request is closed")
    out = check_output(closed, DROP, PR, Evidence())
    check_snapshot("neutral-closed", out)
    assert out.title == "Left alone: the pull request is closed"


def test_untrusted_text_stays_inert_in_the_summary() -> None:
    decision = Decision("failed", (), "GitHub said @everyone see <img src=x> https://evil.test")
    out = check_output(decision, DROP, PR, Evidence())
    assert "@everyone" not in out.summary and "<img" not in out.summary
    assert "https://evil.test" not in out.summary


# --- the place an error line names ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tests/test_x.py:12: AssertionError", ("tests/test_x.py", 12)),
        ("error[E0308]: mismatched types\n  --> src/a.rs:3:5", ("src/a.rs", 3)),
        ('  File "pkg/m.py", line 9, in run', ("pkg/m.py", 9)),
        ("##[error]File docs/README.md, line 35, Link x is broken.", ("docs/README.md", 35)),
        ("src/App.tsx(666,11): error TS2322: nope", ("src/App.tsx", 666)),
        ("/home/runner/work/widgets/widgets/src/lib.c:480:19: error: x", ("src/lib.c", 480)),
        ("/Users/runner/work/app/app/ios/a.h:103:38: error: x", ("ios/a.h", 103)),
        (r"D:\a\app\app\pkg\tty_windows.go:59:12: G302", ("pkg/tty_windows.go", 59)),
        ('File "/__w/app/app/tests/t.py", line 19, in run', ("tests/t.py", 19)),
        ("e: file:///home/runner/work/r/r/app/Main.kt:72:5 Unresolved", ("app/Main.kt", 72)),
        ("/srv/actions-runner/_work/app/app/lib/x.rb:7: boom", ("lib/x.rb", 7)),
        ("  Makefile:12: recipe for target 'all' failed", ("Makefile", 12)),
    ],
)
def test_place_of_an_error_line(text: str, expected: tuple[str, int]) -> None:
    assert place(text) == Place(*expected)


@pytest.mark.parametrize(
    "text",
    [
        "/usr/lib/python3.12/site-packages/pkg/m.py:3: DeprecationWarning",  # outside
        'File "/opt/conda/lib/python3.10/x.py", line 68, in _wrap',  # outside
        "/home/runner/work/_temp/3d95.sh: line 1: pnpm: command not found",  # the runner's
        "/home/runner/work/a/b/src/x.c:3: error",  # not <repo>/<repo>: not the workspace
        "../../go/pkg/mod/k8s.io/client-go/register.go:53:2: Get failed",  # climbs out
        "/home/runner/work/k/k/out/../drivers/q.c:365: undefined reference",  # climbs out
        "connect to github.com:443 failed",  # a host, not a file
        "see https://example.com/docs/a.py:3 for more",  # the tail of a URL
        "at 12:34:56.789 the step ended",  # a time
        "tests/test_x.py::test_add FAILED",  # no line
        "src/a.py:0: nothing",  # no line 0
        r"C:\Users\me\x.py:3: elsewhere",  # a Windows path outside the workspace
    ],
)
def test_no_place(text: str) -> None:
    assert place(text) is None


def test_repo_path_of_a_workspace_path_and_of_others() -> None:
    assert repo_path("/home/runner/work/w/w/a/b.py") == "a/b.py"
    assert repo_path("./a/b.py") == "a/b.py"
    assert repo_path("a//b.py") is None
    assert repo_path("~/b.py") is None


def real_job(folder: str, name: str) -> JobFailure:
    """The JobFailure the land stage gets for a real log (triage's own path to it)."""
    path = REAL / folder / name
    with path.open("rb") as f:
        explanation = explain_log(f)
    check = CheckRun(1, name, "completed", "failure", JOB_URL, None, "github-actions", None, None)
    return log_verdict(check, None, explanation).failure


# Real logs, cited in each folder's SOURCES.md; the places are what a person reading the
# log would click on.
@pytest.mark.parametrize(
    ("folder", "name", "first"),
    [
        # pytest: `tests/test_backend_markdown.py:41: AssertionError`
        (
            "python",
            "docling-pytest-markdown-and-docx-asserts.log",
            [("tests/test_backend_markdown.py", 41), ("tests/test_backend_msword.py", 96)],
        ),
        # clang-tidy, absolute under the Linux runner's workspace
        (
            "cpp",
            "duckdb-clang-tidy-narrowing.log",
            [("extension/parquet/parquet_reader.cpp", 1229)],
        ),
        # clang on macOS, under /Users/runner/work
        (
            "cpp",
            "englishapp-flutter-ios-grpc-missing-template-arg.log",
            [("ios/Pods/gRPC-Core/src/core/lib/promise/detail/basic_seq.h", 103)],
        ),
        # tsc's `path(line,col)`
        (
            "javascript",
            "autogpt-tsc-type-check.log",
            [("src/components/Flow.tsx", 666), ("src/components/ui/form.stories.tsx", 143)],
        ),
        # golangci-lint on Windows: backslashes
        (
            "go",
            "bubbletea-golangci-lint-windows.log",
            [
                ("charmbracelet/bubbletea/tty_windows.go", 59),
                ("charmbracelet/bubbletea/key_windows.go", 120),
            ],
        ),
        # kotlinc's `file:///home/runner/work/...`
        (
            "java",
            "radio-area-gradle-kotlin-unresolved-reference.log",
            [
                (
                    "app/src/main/java/com/example/radioarealocator/data/location/LocationHelper.kt",
                    72,
                )
            ],
        ),
        # a link checker's `File README.md, line 9`
        (
            "docs",
            "genai-beginners-broken-urls-composite.log",
            [("README.md", 9), ("README.md", 35), ("18-fine-tuning/RESOURCES.md", 36)],
        ),
        # rustc's `--> tests/e2e.rs:14:5`
        ("rust", "wishapp-actions-rs-cargo-matcher-e0061.log", [("tests/e2e.rs", 14)]),
    ],
)
def test_annotations_of_real_logs(folder: str, name: str, first: list[tuple[str, int]]) -> None:
    job = real_job(folder, name)
    found = error_annotations(Evidence(jobs=(job,)))
    assert [(a.path, a.start_line) for a in found[: len(first)]] == first
    assert all(a.annotation_level == "failure" and a.end_line == a.start_line for a in found)
    assert all(a.title.startswith(name) for a in found)  # the job's name
    assert all(not a.message.startswith("##[error]") for a in found)


@pytest.mark.parametrize(
    ("folder", "name", "why"),
    [
        # every error line is under /home/runner/work/<r>/<r>/out/../drivers/...
        ("cpp", "kernel-aarch64-ld-undefined-qtaguid-debug-mask.log", "climbs out with .."),
        # a docker build: /opt/netdata.git/src/... is inside the image, not the workspace
        ("docker", "netdata-buildx-gcc-lto-recursive-inlining.log", "outside the workspace"),
        # /home/runner/work/_temp/<uuid>.sh: the runner's own script
        ("javascript", "dify-pnpm-command-not-found.log", "the runner's temporary script"),
    ],
)
def test_real_logs_whose_error_lines_name_no_repository_file(
    folder: str, name: str, why: str
) -> None:
    job = real_job(folder, name)
    assert job.error_lines  # there are error lines, and they do name a path...
    texts = dict(job.excerpt)
    assert any(("/" in texts.get(n, "")) for n in job.error_lines), why
    assert error_annotations(Evidence(jobs=(job,))) == (), why  # ...but not one to annotate


def test_annotations_are_deduplicated_in_order_and_at_most_fifty() -> None:
    excerpt = tuple((n, f"src/m{n % 60}.py:{n % 60 + 1}: E999 boom") for n in range(1, 200))
    job = JobFailure("lint", "", "Run ruff", tuple(n for n, _ in excerpt), excerpt, "", "genuine")
    found = error_annotations(Evidence(jobs=(job, replace(job, job="lint again"))))
    assert len(found) == MAX_ANNOTATIONS
    assert [a.path for a in found[:3]] == ["src/m1.py", "src/m2.py", "src/m3.py"]
    assert len({(a.path, a.start_line) for a in found}) == MAX_ANNOTATIONS
    # Fewer places than the cap: each once, whichever job named it first.
    few = replace(job, excerpt=excerpt[:5], error_lines=(1, 2, 1, 3))
    again = replace(few, job="lint again", error_lines=(2, 4))
    found = error_annotations(Evidence(jobs=(few, again)))
    assert [(a.path, a.title) for a in found] == [
        ("src/m1.py", "lint: Run ruff"),
        ("src/m2.py", "lint: Run ruff"),
        ("src/m3.py", "lint: Run ruff"),
        ("src/m4.py", "lint again: Run ruff"),
    ]


def test_a_settle_without_actions_says_what_happened() -> None:
    merged = Decision("fixed", (), "fixed and pushed; it has merged")
    out = check_output(merged, DROP, PR, Evidence())
    assert out.title == "Fixed: fixed and pushed; it has merged"
    assert out.summary.endswith("\n\nFixed: fixed and pushed; it has merged.\n")
    assert "left it alone" not in out.summary


# --- the writer, against a GitHub that loses answers or refuses ----------------------------


class FakeChecks:
    """The check-run calls of GitHubOps, with scripted failures (one per call, in order)."""

    def __init__(self, *, create: list[Exception | None] | None = None) -> None:
        self.runs: dict[int, CheckRun] = {}
        self.create_fails = list(create or [])
        self.update_fails: list[Exception | None] = []
        self.remove_fails: list[Exception | None] = []
        self.calls: list[str] = []

    def create_check_run(self, repo: str, head_sha: str, **kw: Any) -> CheckRun:
        self.calls.append("create")
        run = CheckRun(
            len(self.runs) + 1,
            kw["name"],
            kw["status"],
            None,
            "u",
            None,
            "landbot",
            None,
            None,
            head_sha=head_sha,
            external_id=kw["external_id"],
        )
        self.runs[run.id] = run
        fail = self.create_fails.pop(0) if self.create_fails else None
        if fail is not None and not isinstance(fail, MutationOutcomeUnknown):
            del self.runs[run.id]  # refused or never sent: nothing made
        if fail is not None:
            raise fail
        return run

    def update_check_run(self, repo: str, check_run_id: int, **kw: Any) -> CheckRun:
        self.calls.append("update")
        fail = self.update_fails.pop(0) if self.update_fails else None
        if fail is not None and not isinstance(fail, MutationOutcomeUnknown):
            raise fail
        run = replace(self.runs[check_run_id], status="completed", conclusion=kw["conclusion"])
        self.runs[check_run_id] = run
        if fail is not None:
            raise fail  # applied, the answer lost
        return run

    def check_runs(self, repo: str, ref: str) -> list[CheckRun]:
        self.calls.append("list")
        return [r for r in self.runs.values() if r.head_sha == ref]

    def remove_label(self, repo: str, number: int, name: str) -> bool:
        self.calls.append("unlabel")
        fail = self.remove_fails.pop(0) if self.remove_fails else None
        if fail is not None:
            raise fail
        return True


def stored_drop(store: Store) -> Drop:
    drop_id, _ = store.add_drop(
        repo=DROP.repo,
        pr=DROP.pr,
        head_sha=HEAD,
        reason="failed_checks",
        source="webhook",
        dedupe_key="k",
    )
    return replace(DROP, id=drop_id)


HANDED_BACK = Decision(
    "handed_back", (Status("handed_back"), HandBack("failed_checks")), "no fixer: handed back"
)
UNKNOWN = MutationOutcomeUnknown(502, "Server Error")
REFUSED = GitHubError(422, "Invalid request")


def writer(store: Store, gh: FakeChecks) -> CheckWriter:
    return CheckWriter(store, cast(GitHubOps, gh), policy_for=lambda repo: Policy())


def test_a_lost_answer_to_the_create_finds_the_run_made(store: Store) -> None:
    gh = FakeChecks(create=[UNKNOWN])
    drop = stored_drop(store)
    writer(store, gh).start(drop, PR)
    assert gh.calls == ["create", "list"] and len(gh.runs) == 1
    writer(store, gh).start(drop, PR)  # claimed and done: nothing more
    assert gh.calls == ["create", "list"]


def test_a_create_never_made_is_made_once_more_and_a_second_loss_retries_the_job(
    store: Store,
) -> None:
    drop = stored_drop(store)
    gh = FakeChecks(create=[NetworkError("timed out", may_have_sent=False)])
    with pytest.raises(NetworkError):  # GitHub did nothing: the job is retried
        writer(store, gh).start(drop, PR)
    assert gh.runs == {}
    writer(store, gh).start(drop, PR)  # the retry: "started", so it looks, then makes it
    assert gh.calls == ["create", "list", "create"] and len(gh.runs) == 1


def test_a_refused_create_is_logged_and_the_drop_goes_on(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    drop = stored_drop(store)
    gh = FakeChecks(create=[REFUSED])
    writer(store, gh).start(drop, PR)
    assert "check run refused" in caplog.text
    assert drop.id is not None
    writer(store, gh).finish(drop.id, drop, HANDED_BACK, pr=PR, evidence=PYTEST)
    assert gh.calls == ["create"]  # nothing to complete, nothing else tried


def test_a_lost_answer_to_the_update_is_not_sent_twice_when_it_applied(store: Store) -> None:
    drop = stored_drop(store)
    assert drop.id is not None
    gh = FakeChecks()
    writer(store, gh).start(drop, PR)
    gh.update_fails = [UNKNOWN]
    writer(store, gh).finish(drop.id, drop, HANDED_BACK, pr=PR, evidence=PYTEST)
    # Annotations are appended by GitHub: a second PATCH would show them twice.
    assert gh.calls == ["create", "update", "list"]
    assert gh.runs[1].conclusion == "action_required"
    writer(store, gh).finish(drop.id, drop, HANDED_BACK, pr=PR, evidence=PYTEST)
    assert gh.calls == ["create", "update", "list"]  # once per settled outcome


def test_an_update_that_did_not_apply_is_sent_once_more(store: Store) -> None:
    drop = stored_drop(store)
    assert drop.id is not None
    gh = FakeChecks()
    writer(store, gh).start(drop, PR)
    gh.update_fails = [ServerError(502, "Bad Gateway")]
    with pytest.raises(ServerError):
        writer(store, gh).finish(drop.id, drop, HANDED_BACK, pr=PR, evidence=PYTEST)
    writer(store, gh).finish(drop.id, drop, HANDED_BACK, pr=PR, evidence=PYTEST)  # resumed
    assert gh.calls == ["create", "update", "list", "update"]
    assert gh.runs[1].conclusion == "action_required"


def test_a_refused_update_or_label_removal_does_not_fail_the_drop(store: Store) -> None:
    drop = stored_drop(store)
    assert drop.id is not None
    gh = FakeChecks()
    writer(store, gh).start(drop, PR)
    key = "drop:1:0:RunFixer"
    store.begin_action(key, "runfixer", drop.id)
    store.finish_action(key, "done", {"job": 1, "label": "landbot:fixing"})
    # Refused twice: the full output, then the bare one sent once more (RF2; one refusal
    # and a bare success: tests/integration/test_check_run_edges.py).
    gh.update_fails = [REFUSED, REFUSED]
    gh.remove_fails = [GitHubError(403, "Resource not accessible by integration")]
    writer(store, gh).finish(drop.id, drop, HANDED_BACK, pr=PR, evidence=PYTEST)
    assert gh.calls == ["create", "update", "update", "unlabel"]
    [done] = [a for a in store.actions(drop.id) if a.kind == "checkfinish"]
    assert done.status == "done" and done.result["label_removed"] is False
    assert done.result["check_run"].startswith("refused")


def test_nothing_is_written_or_claimed_for_a_drop_without_a_check_or_a_label(
    store: Store,
) -> None:
    drop = stored_drop(store)
    assert drop.id is not None
    gh = FakeChecks()
    writer(store, gh).start(drop, replace(PR, state="closed"))
    writer(store, gh).finish(drop.id, drop, Decision("ignored", (), "closed"))
    assert gh.calls == [] and store.actions(drop.id) == []
    # The control: the same drop, open, gets its check run created and completed.
    writer(store, gh).start(drop, PR)
    writer(store, gh).finish(drop.id, drop, Decision("ignored", (), "closed"), pr=PR)
    assert gh.calls == ["create", "update"] and gh.runs[1].conclusion == "neutral"
