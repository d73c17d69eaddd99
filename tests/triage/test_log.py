"""The streaming parser: structure, first error, region, bounds, true line numbers."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from landbot.triage.log import LINE_CAP, _blocks, _Scanner, clean_line, parse_log

from .conftest import BOM, SET_UP, gh_log, run_step

EXIT1 = "##[error]Process completed with exit code 1."


def numbered(lines: list[str]) -> dict[str, int]:
    """1-based line of each distinct text (for readable assertions)."""
    return {text: i for i, text in enumerate(lines, 1)}


def test_finds_the_step_section_before_the_first_error() -> None:
    lines = [
        *SET_UP,
        *run_step("actions/checkout@v4"),
        *run_step("make build", "building", "built"),
        *run_step(
            "make test", "running 3 tests", "boom", "##[error]Process completed with exit code 2."
        ),
        "Post job cleanup.",
        "Cleaning up orphan processes",
    ]
    at = numbered(lines)
    parsed = parse_log(gh_log(lines))
    assert parsed.first_error == at["##[error]Process completed with exit code 2."]
    assert parsed.step_title == "Run make test"
    assert parsed.step_line == at["##[group]Run make test"]
    assert parsed.step_script == ("make test", "shell: /usr/bin/bash -e {0}")
    assert parsed.exit_code == 2
    assert parsed.line_count == len(lines)
    # The region is the failing step: from its header to its end, header lines marked.
    numbers = [line.number for line in parsed.region]
    assert numbers == list(range(at["##[group]Run make test"], at["Post job cleanup."]))
    assert [line.text for line in parsed.region if not line.header] == [
        "running 3 tests",
        "boom",
        "##[error]Process completed with exit code 2.",
    ]
    assert parsed.error_annotations == (at["##[error]Process completed with exit code 2."],)
    assert not parsed.region_truncated


def test_a_log_without_error_has_no_failing_step() -> None:
    lines = [*SET_UP, *run_step("make test", "ok"), "##[warning]slow", "Post job cleanup."]
    parsed = parse_log(gh_log(lines))
    assert parsed.first_error is None
    assert parsed.step_title is None and parsed.step_line is None
    assert parsed.region == ()
    assert parsed.line_count == len(lines)


def test_error_text_inside_a_step_script_is_not_an_error() -> None:
    # The header group echoes the script: a line there is what ran, not what happened.
    lines = [
        *run_step(
            "./check.sh",
            "all good",
            script=[
                "##[error]this is a comment in the script",
                'echo "The runner has received a shutdown signal"',
            ],
        ),
        "Post job cleanup.",
    ]
    assert parse_log(gh_log(lines)).first_error is None
    # Control: the same text as output is an error.
    lines_out = [*run_step("./check.sh", "##[error]this is output"), "Post job cleanup."]
    assert parse_log(gh_log(lines_out)).first_error == 5


def test_error_marker_must_start_the_line() -> None:
    lines = [*run_step("grep x log.txt", "log.txt: ##[error]old failure quoted"), "done"]
    assert parse_log(gh_log(lines)).first_error is None
    # Control: at the start of the line (after the timestamp) it counts.
    lines = [*run_step("grep x log.txt", "##[error]old failure"), "done"]
    assert parse_log(gh_log(lines)).first_error == 5


def test_nested_tool_groups_do_not_end_the_step() -> None:
    lines = [
        *run_step(
            "npm test",
            "##[group]Installing",
            "##[group]inner",
            "x",
            "##[endgroup]",
            "##[endgroup]",
            "##[group]Testing",
            "fail!",
            "##[endgroup]",
            "##[error]Process completed with exit code 1.",
        ),
    ]
    parsed = parse_log(gh_log(lines))
    assert parsed.step_title == "Run npm test"
    assert parsed.step_line == 1
    assert parsed.first_error == len(lines)


def test_an_error_after_post_job_cleanup_has_no_run_step() -> None:
    lines = [
        *run_step("make test", "ok"),
        "Post job cleanup.",
        "##[error]Failed to save cache",
        "Cleaning up orphan processes",
    ]
    parsed = parse_log(gh_log(lines))
    assert parsed.first_error == 7
    assert parsed.step_title is None and parsed.step_line is None
    assert [line.number for line in parsed.region] == [6, 7, 8]


def test_an_error_in_set_up_has_no_step() -> None:
    lines = [
        "Current runner version: '2.321.0'",
        "Prepare all required actions",
        "##[error]Unable to resolve action `actions/chekout@v4`, repository not found",
    ]
    parsed = parse_log(gh_log(lines))
    assert parsed.first_error == 3
    assert parsed.step_title is None


def test_runner_message_without_prefix_is_an_error() -> None:
    lines = [
        *run_step("sleep 9000", "sleeping"),
        "The hosted runner: GitHub Actions 3 lost communication with the server.",
    ]
    parsed = parse_log(gh_log(lines))
    assert parsed.first_error == 6
    assert parsed.step_title == "Run sleep 9000"


def test_region_stops_at_the_next_step() -> None:
    lines = [
        *run_step("make test", "bad", "##[error]Process completed with exit code 1."),
        *run_step("upload logs", "uploaded", "##[error]later error"),
    ]
    parsed = parse_log(gh_log(lines))
    assert parsed.first_error == 6
    assert parsed.region[-1].number == 6
    assert parsed.error_annotations == (6,)


@pytest.mark.parametrize("bom", [True, False])
@pytest.mark.parametrize("stamps", [True, False])
def test_bom_and_timestamps_are_optional(bom: bool, stamps: bool) -> None:
    lines = [*run_step("make", "oops"), "##[error]Process completed with exit code 2."]
    data = gh_log(lines, bom=bom) if stamps else (BOM if bom else b"") + "\n".join(lines).encode()
    parsed = parse_log(data)
    assert parsed.first_error == 6
    assert parsed.step_title == "Run make"
    assert parsed.step_line == 1


def test_clean_line_strips_timestamp_ansi_bom_and_controls() -> None:
    raw = (
        BOM + b"2026-11-03T10:15:30.1234567Z \x1b[31mFAILED\x1b[0m x\x07 \x1b]8;;http://x\x07y\r\n"
    )
    assert clean_line(raw) == "FAILED x y"
    assert clean_line(b"progress 10%\rprogress 100%") == "progress 100%"
    assert clean_line(b"\xff\xfebad utf-8") == "\ufffd\ufffdbad utf-8"
    # Only a leading timestamp is a prefix.
    assert clean_line(b"at 2026-11-03T10:15:30.1234567Z ok") == "at 2026-11-03T10:15:30.1234567Z ok"


def chunked(data: bytes, size: int) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


def big_failing_log(filler_lines: int) -> tuple[bytes, int, int]:
    """A step with many output lines then a failure: (log, header line, error line)."""
    lines = [
        *SET_UP,
        *run_step("pytest -v"),
        *(f"tests/test_mod.py::test_{i} PASSED" for i in range(filler_lines)),
        "FAILED tests/test_mod.py::test_last - assert 1 == 2",
        "##[error]Process completed with exit code 1.",
        "Post job cleanup.",
    ]
    return gh_log(lines), len(SET_UP) + 1, len(lines) - 1


def test_line_numbers_stay_true_when_the_start_is_dropped() -> None:
    data, header, error = big_failing_log(50_000)
    assert len(data) > 3_000_000
    parsed = parse_log(chunked(data, 65_536), max_bytes=100_000)
    assert parsed.first_error == error
    assert parsed.step_line == header  # remembered although its bytes were dropped
    assert parsed.step_title == "Run pytest -v"
    assert parsed.region_truncated
    assert parsed.region[0].number > header
    assert parsed.region[-1].number == error
    texts = {line.number: line.text for line in parsed.region}
    assert texts[error - 1] == "FAILED tests/test_mod.py::test_last - assert 1 == 2"
    # The witness of the bound: never much more than max_bytes plus one chunk.
    assert parsed.retained_peak <= 100_000 + 65_536 * 2
    # Control: unbounded, the same numbers and the whole step.
    full = parse_log(data, context_lines=10**6)
    assert (full.first_error, full.step_line) == (error, header)
    assert full.region[0].number == header and not full.region_truncated


def test_context_lines_bound_the_region() -> None:
    data, _header, error = big_failing_log(1000)
    parsed = parse_log(data, context_lines=10)
    assert parsed.region[0].number == error - 10
    assert parsed.region_truncated


def test_an_early_error_is_kept_when_megabytes_follow_it() -> None:
    # A step fails, then an `if: always()` step prints a lot: the failure is still found.
    lines = [
        *run_step("make test", "E: broken", "##[error]Process completed with exit code 1."),
        *run_step("cat debug.log", *(f"debug {i}" for i in range(100_000))),
    ]
    parsed = parse_log(chunked(gh_log(lines), 32_768), max_bytes=50_000)
    assert parsed.first_error == 6
    assert parsed.step_title == "Run make test"
    assert parsed.line_count == len(lines)


def test_a_file_object_is_read_in_chunks() -> None:
    data, header, error = big_failing_log(100)

    class Recording(io.BytesIO):
        sizes: list[int]

        def read(self, size: int | None = -1, /) -> bytes:
            self.sizes.append(-1 if size is None else size)
            return super().read(size)

    stream = Recording(data)
    stream.sizes = []
    parsed = parse_log(stream)
    assert parsed.first_error == error and parsed.step_line == header
    assert stream.sizes and all(s > 0 for s in stream.sizes)  # never read() whole


def test_an_overlong_line_keeps_its_start_and_the_count() -> None:
    huge = "x" * (LINE_CAP * 5)
    lines = [*run_step("make", huge), "##[error]Process completed with exit code 1."]
    parsed = parse_log(chunked(gh_log(lines), 4096))
    assert parsed.first_error == 6
    long = next(line for line in parsed.region if line.number == 5)
    assert long.text.startswith("xxx")
    assert parsed.retained_peak < LINE_CAP * 3


def test_crlf_lines() -> None:
    data = gh_log([*run_step("make", "oops"), "##[error]Process completed with exit code 2."])
    parsed = parse_log(data.replace(b"\n", b"\r\n"))
    assert parsed.first_error == 6
    assert parsed.region[-1].text == "##[error]Process completed with exit code 2."
    assert parsed.step_title == "Run make"


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError):
        parse_log(b"", max_bytes=0)
    with pytest.raises(ValueError):
        parse_log(b"", context_lines=0)


def test_empty_log() -> None:
    parsed = parse_log(b"")
    assert (parsed.line_count, parsed.first_error, parsed.region) == (0, None, ())


def test_the_lines_before_the_error_fill_three_quarters_of_the_bound() -> None:
    # Every line is exactly 100 bytes with its timestamp and newline.
    filler = [f"out {i:04d} " + "." * 61 for i in range(50)]
    lines = [*run_step("make"), *filler, "##[error]Process completed with exit code 1."]
    data = gh_log(lines, bom=False)
    assert all(len(raw) == 99 for raw in data.split(b"\n")[4:54])
    error = len(lines)
    parsed = parse_log(data, max_bytes=1000)
    # 750 bytes of whole lines before the error: 7 lines of 100 bytes.
    assert [line.number for line in parsed.region] == list(range(error - 7, error + 1))


def test_the_tail_ring_keeps_the_longest_whole_line_suffix() -> None:
    lines = [b"%03d" % i + b"x" * 96 + b"\n" for i in range(10)]  # 100 bytes each
    for bound in (200, 250, 299):  # exactly two lines fit, with room to spare, just
        scanner = _Scanner(max_bytes=bound, context_lines=100)
        for i in range(0, 10, 3):
            scanner.feed(b"".join(lines[i : i + 3]))
            kept = b"".join(block.data for block in scanner.ring)
            assert scanner.ring_bytes == len(kept) <= bound
            # The most whole lines that fit: two.
            assert kept == b"".join(lines[: min(i + 3, 10)][-2:])
            assert scanner.ring[0].first == min(i + 3, 10) - 1


def test_an_overlong_line_split_over_chunks_keeps_only_its_start() -> None:
    line = b"a" * LINE_CAP + b"b" * LINE_CAP + b"END\nnext\n"
    chunks = [line[i : i + 1000] for i in range(0, len(line), 1000)]
    blocks = list(_blocks(chunks))
    assert b"".join(blocks) == b"a" * LINE_CAP + b"\nnext\n"


# --- every failing step, not only the first error (issue 14) ---------------------------


def test_every_failing_step_is_kept_and_the_first_is_chosen() -> None:
    lines = [
        *SET_UP,
        *run_step("make lint", "a.c:1: style", "##[error]Process completed with exit code 2."),
        *run_step("make test", "ok 1", "not ok 2", EXIT1),
        *run_step("upload", "uploaded"),
        "Post job cleanup.",
        "##[error]Failed to save cache",
    ]
    at = numbered(lines)
    parsed = parse_log(gh_log(lines))
    assert [(s.title, s.signal, s.post) for s in parsed.sections] == [
        ("Run make lint", "error", False),
        ("Run make test", "error", False),
        (None, "error", True),
    ]
    assert parsed.chosen == 0 and parsed.step_title == "Run make lint"
    # The lint step ran with continue-on-error, or the tests with if: always(): the log
    # alone cannot tell; steps ran after both.
    assert [s.steps_after for s in parsed.sections] == [2, 1, 0]
    other = parsed.with_section(1)
    assert (other.step_title, other.first_error, other.exit_code) == ("Run make test", at[EXIT1], 1)
    assert [line.text for line in other.region if not line.header] == ["ok 1", "not ok 2", EXIT1]
    assert other.sections == parsed.sections and other.chosen == 1


def test_a_post_job_error_is_chosen_only_alone() -> None:
    lines = [*run_step("make", "ok"), "Post job cleanup.", "##[error]Failed to save cache"]
    parsed = parse_log(gh_log(lines))
    assert parsed.chosen == 0 and parsed.step_title is None and parsed.first_error == 7


def test_a_failure_without_annotation_is_the_last_steps_end() -> None:
    # javascript/n8n-cypress-e2e-no-error-annotation.log: the container action died and
    # the runner printed no ##[error]; the step's last lines say it failed.
    lines = [
        *run_step("actions/checkout@v4", "checked out"),
        *run_step("cypress-io/github-action@v6", "Running: login.cy.ts", "  1 failing", "Error: "),
        "Post job cleanup.",
        "Cleaning up orphan processes",
    ]
    parsed = parse_log(gh_log(lines))
    assert [(s.title, s.signal) for s in parsed.sections] == [
        ("Run cypress-io/github-action@v6", "last")
    ]
    assert parsed.first_error == numbered(lines)["Error: "]
    # Control: a last step whose end reports nothing is no failure (a successful job).
    ok = [*run_step("pytest -q", "57 passed in 1.79s"), "Post job cleanup."]
    assert parse_log(gh_log(ok)).first_error is None


def test_the_region_keeps_the_steps_end_after_an_early_error() -> None:
    lines = [
        *run_step(
            "./gradlew build",
            "##[error]src/A.java:3: warning as error",
            *(f"> Task :m{i}:compile" for i in range(500)),
            "BUILD FAILED in 3m",
            EXIT1,
        ),
        "Post job cleanup.",
    ]
    at = numbered(lines)
    parsed = parse_log(gh_log(lines), context_lines=50)
    numbers = [line.number for line in parsed.region]
    assert at["##[error]src/A.java:3: warning as error"] in numbers
    assert at["BUILD FAILED in 3m"] in numbers and at[EXIT1] in numbers
    assert at["> Task :m100:compile"] not in numbers  # the middle is what is dropped
    assert parsed.exit_code == 1


def test_an_inner_step_of_a_remote_composite_action_is_the_actions() -> None:
    # network/spring-boot-docs-rsync-ssh-timeout.log lines 550-614.
    action = "spring-io/spring-doc-actions/rsync-antora-reference@v0.0.20"
    inner = "PATH=$PATH:/home/runner/work/_actions/spring-io/spring-doc-actions/v0.0.20/src"
    lines = [
        "##[group]Run " + action,
        "with:",
        "##[endgroup]",
        *run_step(inner, "ssh: connect to host *** port 22: Connection timed out", EXIT1),
        "Post job cleanup.",
    ]
    section = parse_log(gh_log(lines)).sections[0]
    assert (section.title, section.line, section.inner_title) == (
        "Run " + action,
        1,
        "Run " + inner,
    )
    # Control: a `run:` step with the runner's default shell is never a composite's step.
    local = [
        "##[group]Run ./.github/actions/run-test",
        "##[endgroup]",
        *run_step('echo "::group::npm run build"', "error TS2304", EXIT1),
    ]
    section = parse_log(gh_log(local)).sections[0]
    assert (section.title, section.inner_title) == ('Run echo "::group::npm run build"', None)


REAL = Path(__file__).parent / "real"


def real(path: str, first: int, last: int) -> bytes:
    """Lines `first` to `last` (1-based, inclusive) of a log of the corpus, byte for byte."""
    lines = (REAL / path).read_bytes().splitlines(keepends=True)
    return b"".join(lines[first - 1 : last])


def test_a_remote_composite_is_told_by_its_header_followed_at_once_by_a_step() -> None:
    # cpp/godot-precommit-clang-format.log 178-371: `pre-commit/action` prints no output of
    # its own, its first step's header follows its inputs; the step that fails is its
    # fourth (after an action, actions/cache), and runs no file of the action's copy.
    parsed = parse_log(real("cpp/godot-precommit-clang-format.log", 178, 371))
    assert parsed.step_title == "Run pre-commit/action@v3.0.1" and parsed.step_line == 1
    assert parsed.section is not None and parsed.section.inner_title is not None
    assert parsed.section.inner_title.startswith("Run pre-commit run --show-diff-on-failure")
    assert parsed.command_title == parsed.section.inner_title  # what a person re-runs
    assert parsed.step_script[0].startswith("pre-commit run")


def test_a_local_composite_whose_first_step_is_an_action_is_the_step() -> None:
    # actions/powershell-github-script-pulls-404.log 128-257: the failing action step is
    # the composite's first; the jobs API names the composite ("Change Detection").
    parsed = parse_log(real("actions/powershell-github-script-pulls-404.log", 128, 257))
    assert parsed.step_title == "Run ./.github/actions/infrastructure/path-filters"
    assert parsed.command_title == "Run actions/github-script@v7.0.1"


def test_a_composite_opened_as_anothers_first_step_is_nested_in_it() -> None:
    # java/spring-boot-windows-gradle-test-retries.log 162-1212: `./.github/actions/build`
    # prepares its actions (`Prepare all required actions` right after its inputs), and
    # its first step is the composite prepare-gradle-build; `./gradlew build` fails later.
    parsed = parse_log(real("java/spring-boot-windows-gradle-test-retries.log", 162, 1212))
    assert parsed.step_title == "Run ./.github/actions/build"
    assert parsed.command_title == "Run ./gradlew build"


def test_a_composite_opened_after_anothers_steps_is_the_next_step() -> None:
    # javascript/pixijs-jest-visual-pixel-diff-macos.log 127-322: `./.github/actions/setup`
    # runs four steps, then `./.github/actions/unit` opens and its first step fails.
    parsed = parse_log(real("javascript/pixijs-jest-visual-pixel-diff-macos.log", 127, 322))
    assert parsed.step_title == "Run ./.github/actions/unit"
    assert parsed.command_title == "Run npm run test:scene -- --maxWorkers=50%"


def test_a_default_shell_step_after_a_composite_is_the_jobs_own() -> None:
    # rust/zip-dioxus-clippy-265-errors.log 1132-6822: dtolnay/rust-toolchain is a
    # composite (its steps follow its inputs at once); `cargo clippy` after it has the
    # runner's default shell (`/usr/bin/bash -e {0}`), which a composite's step cannot.
    parsed = parse_log(real("rust/zip-dioxus-clippy-265-errors.log", 1132, 6822))
    assert parsed.step_title == "Run cargo clippy --all-targets --all-features -- -D warnings"
    assert parsed.section is not None and parsed.section.inner_title is None


def test_an_action_step_after_a_composites_steps_is_the_jobs_own() -> None:
    # rust/meilisearch-cargo-test-failed.log 893-2807: after dtolnay/rust-toolchain's 13
    # steps, Swatinem/rust-cache and actions-rs/cargo are steps of the job: an action is
    # placed in a composite only as its first step.
    parsed = parse_log(real("rust/meilisearch-cargo-test-failed.log", 893, 2807))
    assert parsed.step_title == "Run actions-rs/cargo@v1"
    assert parsed.command_title == "Run actions-rs/cargo@v1"


def test_an_action_with_output_or_a_script_opens_no_composite() -> None:
    # Control: an action that prints its own output (setup-node) is no composite, so the
    # `shell: bash` step after it (pipefail form, as in a composite) is the job's own; and
    # a script step whose title looks like a local path (`Run ./build.sh`) is a script.
    lines = [
        "##[group]Run actions/setup-node@v4",
        "with:",
        "  node-version: 18",
        "##[endgroup]",
        "Found in cache @ /opt/hostedtoolcache/node/18.20.8/x64",
        "##[group]Run ./build.sh",
        "./build.sh",
        "shell: /usr/bin/bash --noprofile --norc -e -o pipefail {0}",
        "##[endgroup]",
        "##[group]Run npm test",
        "npm test",
        "shell: /usr/bin/bash --noprofile --norc -e -o pipefail {0}",
        "##[endgroup]",
        "FAIL src/a.test.js",
        EXIT1,
        "Post job cleanup.",
    ]
    parsed = parse_log(gh_log(lines))
    assert parsed.step_title == "Run npm test" and parsed.command_title == "Run npm test"
    # The same lines with the action printing nothing: it is a composite, the steps its.
    quiet = [line for line in lines if not line.startswith("Found in cache")]
    assert parse_log(gh_log(quiet)).step_title == "Run actions/setup-node@v4"


def test_the_jobs_name_and_workflow_are_kept() -> None:
    lines = [
        "Job defined at: hashicorp/vault/.github/workflows/milestone-checker.yml@refs/pull/1/merge",
        *SET_UP,
        *run_step("false", EXIT1),
        "Post job cleanup.",
    ]
    parsed = parse_log(gh_log(lines))
    assert parsed.workflow is not None and parsed.workflow.number == 1
    assert parsed.workflow.text.endswith("milestone-checker.yml@refs/pull/1/merge")
    assert parsed.job_name is not None and parsed.job_name.text == "Complete job name: test"
    assert parsed.post_line == len(lines)
    assert [title for _line, title in parsed.headers] == ["Run false"]


def test_many_failing_steps_keep_the_first_and_the_latest_within_the_bound() -> None:
    steps = [
        line
        for i in range(10)
        for line in run_step(f"check {i}", *(f"out {i} {j} " + "." * 80 for j in range(300)), EXIT1)
    ]
    data = gh_log(steps)
    parsed = parse_log(chunked(data, 8192), max_bytes=40_000)
    assert [s.title for s in parsed.sections] == [
        "Run check 0",
        "Run check 7",
        "Run check 8",
        "Run check 9",
    ]
    assert parsed.sections_dropped == 6
    assert parsed.retained_peak <= 40_000 + 8192 * 2
    # Every kept section still holds its first error.
    for section in parsed.sections:
        assert section.first_error in {line.number for line in section.region}
    # Control: with room for all of them, the same choice and the whole first step.
    full = parse_log(data)
    assert full.step_title == parsed.step_title == "Run check 0"
    assert not full.region_truncated and parsed.sections[0].truncated


def test_shrinking_finished_steps_does_not_depend_on_the_chunks() -> None:
    # Found by test_properties: four failing sections fill more than half the bound, so
    # the finished ones are shrunk; which lines go must not depend on where chunks end.
    lines = [
        "##[group]Fetching",
        *["##[error]Process completed with exit code 1."] * 3,
        "##[group]Run make test",
        "##[endgroup]",
        *["##[error]Process completed with exit code 137."] * 9,
        "##[group]Run make test",
        "##[endgroup]",
        EXIT1,
        "##[group]Run make test",
    ]
    data = gh_log(lines)
    whole = parse_log(data, max_bytes=1200)
    assert len(whole.sections) == 3 and any(s.truncated for s in whole.sections)
    for cut in range(0, len(data), 37):
        parts = parse_log([data[:cut], data[cut:]], max_bytes=1200)
        assert [s.region for s in parts.sections] == [s.region for s in whole.sections], cut
        assert [s.truncated for s in parts.sections] == [s.truncated for s in whole.sections]


def test_composite_markers_place_the_steps_when_the_runner_prints_them() -> None:
    # actions/runner (PR #4243, CompositeActionHandler.RunStepsAsync): behind a feature
    # flag, the runner prints `##[start-action display=…;id=…]` before each step of a
    # composite and `##[end-action id=…;outcome=…;conclusion=…;duration_ms=…]` after it.
    # No log of the corpus has them; these lines follow the runner's format strings.
    bash = "shell: /usr/bin/bash --noprofile --norc -e -o pipefail {0}"
    composite = [
        "##[group]Run ./.github/actions/setup",
        "with:",
        "  node-version: 18",
        "##[endgroup]",
        "##[start-action display=Run npm ci;id=__self.__run]",
        "##[group]Run npm ci",
        "npm ci",
        bash,
        "##[endgroup]",
        "added 120 packages in 3s",
        "##[end-action id=__self.__run;outcome=success;conclusion=success;duration_ms=3120]",
    ]
    after = ["##[group]Run npm test", "npm test", bash, "##[endgroup]", "FAIL src/a.test.js", EXIT1]
    # A step after the composite's end marker is the job's own, though its shell is one a
    # composite's step could have (the heuristics alone would place it in the composite).
    parsed = parse_log(gh_log([*composite, *after, "Post job cleanup."]))
    assert parsed.step_title == "Run npm test" and parsed.command_title == "Run npm test"
    # Control: the same step inside the markers is the composite's.
    inside = [
        *composite[:-1],
        *after,
        "##[end-action id=__self.__run;outcome=failure;conclusion=failure;duration_ms=3120]",
        "Post job cleanup.",
    ]
    parsed = parse_log(gh_log(inside))
    assert parsed.step_title == "Run ./.github/actions/setup"
    assert parsed.command_title == "Run npm test"
    # Without markers, the heuristics: the step after the composite's steps is taken as
    # the composite's (a `shell: bash` step cannot be told from its own).
    plain = [line for line in composite if "-action " not in line]
    assert parse_log(gh_log([*plain, *after, "Post job cleanup."])).step_title == (
        "Run ./.github/actions/setup"
    )


def test_failing_steps_of_one_composite_are_one_section() -> None:
    # docs/genai-beginners-broken-urls-composite.log 483-643: the composite's
    # markdown-checker step reports broken links as `##[error]` lines (564-602) and goes
    # on; a later step of the same composite fails it with `exit 1` (642).
    parsed = parse_log(real("docs/genai-beginners-broken-urls-composite.log", 483, 643))
    [section] = parsed.sections
    assert section.title == "Run john0isaac/action-check-markdown@v1.1.0"
    numbers = {line.number for line in section.region}
    assert {564 - 482, 642 - 482} <= numbers
    assert section.first_error == 564 - 482
    # Control: two failing steps of the job stay two sections.
    two = [*run_step("make lint", EXIT1), *run_step("make test", EXIT1), "Post job cleanup."]
    assert len(parse_log(gh_log(two)).sections) == 2
