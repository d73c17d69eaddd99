"""The counter-examples of issue 14's review of the tuned triage, each with its control.

Every input here is a constructed probe: the reviewer wrote these short logs to test the
rules (they are not real CI logs, and none is in ``tests/triage/real/``). Each probe is
copied line for line from the review's case file named in its comment; each control
changes the one thing the rule under test turns on, and must still come out as the
signature the rule exists for (so the fix did not switch the rule off).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from landbot.core.model import TriageClass
from landbot.triage import explain_log
from landbot.triage.context import find_marks
from landbot.triage.explain import LogExplanation

from .conftest import gh_log


def job(
    *output: str,
    title: str = "Run pytest -q",
    script: Sequence[str] | None = None,
    job_name: str = "test",
    workflow: str = "ci.yml",
    code: int | None = 1,
) -> LogExplanation:
    """A job log shaped as the review's case files are (its ``mk.py``): set-up, a checkout
    step, then the failing ``run:`` step with `output` and the runner's exit-code line."""
    lines = [
        "Current runner version: '2.323.0'",
        f"Job defined at: acme/widget/.github/workflows/{workflow}@refs/pull/12/merge",
        "Secret source: Actions",
        "Prepare workflow directory",
        "Prepare all required actions",
        f"Complete job name: {job_name}",
        "##[group]Run actions/checkout@v4",
        "with:",
        "  repository: acme/widget",
        "##[endgroup]",
        "Syncing repository: acme/widget",
        f"##[group]{title}",
        *(script if script is not None else [title.removeprefix("Run ")]),
        "shell: /usr/bin/bash -e {0}",
        "##[endgroup]",
        *output,
    ]
    if code is not None:
        lines.append(f"##[error]Process completed with exit code {code}.")
    lines += ["Post job cleanup.", "Cleaning up orphan processes"]
    return explain_log(gh_log(lines))


def decided(e: LogExplanation) -> tuple[TriageClass, str | None]:
    return e.class_, e.evidence[0].signature if e.evidence else None


# --- (1) genuine failures that were called flaky ----------------------------------------

CURL_LOCAL = "curl: (7) Failed to connect to localhost port 8000 after 0 ms: Connection refused"
CURL_REMOTE = (
    "curl: (7) Failed to connect to api.example.com port 443 after 0 ms: Connection refused"
)
SMOKE = "Run ./scripts/smoke.sh"
TRACEBACK = (
    "Starting server...",
    "Traceback (most recent call last):",
    '  File "/app/server.py", line 3, in <module>',
    "    import fastapi_extras",
    "ModuleNotFoundError: No module named 'fastapi_extras'",
)


def test_a_refusal_on_localhost_after_a_traceback_is_the_traceback() -> None:
    # Review case 01: the server the PR broke never listened; curl's refusal follows.
    e = job(*TRACEBACK, "Waiting for http://localhost:8000/health", CURL_LOCAL, title=SMOKE, code=7)
    assert decided(e) == ("genuine", "python-traceback")


def test_a_refusal_on_localhost_alone_is_not_flaky() -> None:
    # Review case 02: the server logged to a file; only the refusal shows.
    e = job(
        "Starting server in background", "Waiting for server...", CURL_LOCAL, title=SMOKE, code=7
    )
    assert decided(e) == ("genuine", "step-error")


def test_control_a_refusal_by_a_remote_host_alone_is_flaky() -> None:
    e = job("Uploading coverage...", CURL_REMOTE, title=SMOKE, code=7)
    assert decided(e) == ("flaky", "network-error")


def test_a_remote_refusal_after_another_failure_is_that_failure() -> None:
    # Case 01 with a remote host: what failed first decides, the refusal is its consequence.
    e = job(*TRACEBACK, CURL_REMOTE, title=SMOKE, code=7)
    assert decided(e) == ("genuine", "python-traceback")


def test_a_network_exception_is_no_other_failure() -> None:
    # Control of the one above: a traceback that is the network's own (a timeout chained
    # into the client's error) does not veto.
    e = job(
        "Traceback (most recent call last):",
        '  File "/app/fetch.py", line 9, in <module>',
        "TimeoutError: The read operation timed out",
        "During handling of the above exception, another exception occurred:",
        "requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='api.example.com', "
        "port=443): Read timed out. (read timeout=10)",
        title="Run python fetch.py",
    )
    assert decided(e) == ("flaky", "network-error")


NODE_CRASH = (
    "> web@1.0.0 start",
    "> node server.js",
    "/home/runner/work/widget/widget/server.js:5",
    "const x = require('./config').port.value;",
    "                                    ^",
    "TypeError: Cannot read properties of undefined (reading 'value')",
    "    at Object.<anonymous> (/home/runner/work/widget/widget/server.js:5:37)",
)


def test_a_server_that_crashed_then_refused_on_loopback_is_genuine() -> None:
    # Review case 22 (wait-on after `node server.js` crashed).
    e = job(
        *NODE_CRASH,
        "Error: connect ECONNREFUSED 127.0.0.1:3000",
        "    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)",
        title="Run npm run e2e",
    )
    assert e.class_ == "genuine"


def test_control_the_same_refusal_from_a_remote_host_alone_is_flaky() -> None:
    e = job(
        "Error: connect ECONNREFUSED 140.82.112.3:443",
        "    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)",
        title="Run npm run e2e",
    )
    assert decided(e) == ("flaky", "network-error")


SENTRY_WARNING = (
    "WARNING  urllib3.connectionpool:connectionpool.py:870 Retrying (Retry(total=2)) after "
    "connection broken by 'NewConnectionError(\"<urllib3.connection.HTTPSConnection object "
    "at 0x7f>: Failed to establish a new connection: [Errno -3] Temporary failure in name "
    "resolution\")': /api/1/envelope/ (host='o1.ingest.sentry.io', port=443)"
)


def test_a_test_failing_on_a_key_error_next_to_a_remote_warning_is_genuine() -> None:
    # Review case 26.
    e = job(
        "=================================== FAILURES ===================================",
        "_______________________________ test_parse_order _______________________________",
        "",
        "    def test_parse_order():",
        ">       assert parse(ORDER)['total'] == 10",
        "",
        "tests/test_orders.py:12: ",
        "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ ",
        "    return {'total': data['amount']}",
        "E   KeyError: 'amount'",
        "",
        "widget/orders.py:30: KeyError",
        "------------------------------ Captured log call -------------------------------",
        SENTRY_WARNING,
        "=========================== short test summary info ============================",
        "FAILED tests/test_orders.py::test_parse_order - KeyError: 'amount'",
        "========================= 1 failed, 39 passed in 2.31s =========================",
    )
    assert decided(e) == ("genuine", "pytest-failed")


def test_control_a_test_failing_on_the_remote_host_itself_is_flaky() -> None:
    # The failing test's own error is the connection to the remote host.
    e = job(
        "E   requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.example.com',"
        " port=443): Max retries exceeded with url: /v1/rates (Caused by NewConnectionError("
        "'Failed to establish a new connection: [Errno -3] Temporary failure in name "
        "resolution'))",
        "FAILED tests/test_rates.py::test_live_rates - requests.exceptions.ConnectionError: "
        "HTTPSConnectionPool(host='api.example.com', port=443): Max retries exceeded",
        "========================= 1 failed, 39 passed in 2.31s =========================",
    )
    assert decided(e) == ("flaky", "network-error")


def test_a_jest_type_error_next_to_a_remote_console_error_is_genuine() -> None:
    # Review case 27.
    e = job(
        "FAIL src/cart.test.ts",
        "  ● cart › computes total",
        "",
        "    TypeError: Cannot read properties of undefined (reading 'price')",
        "",
        "      at total (src/cart.ts:8:20)",
        "      at Object.<anonymous> (src/cart.test.ts:5:12)",
        "",
        "  console.error",
        "    FetchError: request to https://analytics.example.com/v1/events failed, reason: "
        "getaddrinfo ENOTFOUND analytics.example.com",
        "",
        "Tests:       1 failed, 30 passed, 31 total",
        title="Run npx jest",
    )
    assert decided(e) == ("genuine", "test-failed")


def test_control_a_jest_test_failing_on_the_fetch_is_flaky() -> None:
    e = job(
        "FAIL src/cart.test.ts",
        "  ● cart › posts the order",
        "",
        "    FetchError: request to https://analytics.example.com/v1/events failed, reason: "
        "getaddrinfo ENOTFOUND analytics.example.com",
        "",
        "Tests:       1 failed, 30 passed, 31 total",
        title="Run npx jest",
    )
    assert decided(e) == ("flaky", "network-error")


TB_LINE = (
    "============================= test session starts ==============================",
    "collected 40 items",
    "tests/test_client.py ....F....",
)
RESET_WARNING = (
    "WARNING  widget.client:client.py:40 retrying after ConnectionResetError: [Errno 104] "
    "Connection reset by peer (https://api.example.com:443)"
)


def test_a_tb_line_assertion_is_the_tests_own_failure() -> None:
    # Review case 06: pytest --tb=line prints `path:88: assert 3 == 2`.
    e = job(
        *TB_LINE,
        "/home/runner/work/widget/widget/tests/test_client.py:88: assert 3 == 2",
        "----------------------------- Captured log call ------------------------------",
        RESET_WARNING,
        "=========================== short test summary info ============================",
        "FAILED tests/test_client.py::test_retry_count - assert 3 == 2",
        "========================= 1 failed, 39 passed in 2.31s =========================",
    )
    assert decided(e) == ("genuine", "pytest-failed")


def test_control_a_tb_line_failure_on_the_reset_itself_is_flaky() -> None:
    e = job(
        *TB_LINE,
        "/home/runner/work/widget/widget/widget/client.py:40: ConnectionResetError: [Errno 104]"
        " Connection reset by peer (https://api.example.com:443)",
        "=========================== short test summary info ============================",
        "FAILED tests/test_client.py::test_fetch - ConnectionResetError: [Errno 104] "
        "Connection reset by peer",
        "========================= 1 failed, 39 passed in 2.31s =========================",
    )
    assert decided(e) == ("flaky", "network-error")


def test_a_syntax_errors_unexpected_eof_is_no_network_word() -> None:
    # Review case 19: the step installs packages, then the PR's manage.py does not parse.
    e = job(
        "Successfully installed widget-0.1.0",
        "Traceback (most recent call last):",
        '  File "manage.py", line 22',
        "    main(",
        "         ^",
        "SyntaxError: unexpected EOF while parsing",
        title="Run pip install -e . && python manage.py check",
        script=["pip install -e .", "python manage.py check"],
    )
    assert decided(e) == ("genuine", "python-traceback")


def test_control_a_download_cut_short_is_still_flaky() -> None:
    e = job(
        "go: github.com/acme/lib@v1.2.3: Get "
        '"https://proxy.golang.org/github.com/acme/lib/@v/v1.2.3.zip": unexpected EOF',
        title="Run go mod download",
    )
    assert decided(e) == ("flaky", "registry-network")


NOT_GZIP = (
    "gzip: stdin: not in gzip format",
    "tar: Child returned status 1",
    "tar: Error is not recoverable: exiting now",
)
FETCH = "Run curl -sL https://github.com/acme/tool/releases/download/v9.9.9/tool.tar.gz | tar xz"


def test_not_in_gzip_format_is_a_wrong_url_not_a_flake() -> None:
    # Review case 18: a release URL the PR names answered with a page, not an archive.
    e = job(*NOT_GZIP, title=FETCH, code=2)
    assert e.class_ == "genuine"


def test_control_a_download_truncated_mid_stream_is_flaky() -> None:
    e = job(
        "gzip: stdin: unexpected end of file",
        "tar: Child returned status 1",
        "tar: Error is not recoverable: exiting now",
        title=FETCH,
        code=2,
    )
    assert decided(e) == ("flaky", "download-corrupt")


def test_a_truncated_archive_the_step_did_not_download_is_not_flaky() -> None:
    e = job(
        "gzip: stdin: unexpected end of file",
        "tar: Child returned status 1",
        "tar: Error is not recoverable: exiting now",
        title="Run tar xzf build/dist.tar.gz",
        code=2,
    )
    assert e.class_ == "genuine"


# --- (2) infrastructure words inside a failing test's own message --------------------------


def test_a_test_expecting_429_is_not_a_rate_limit() -> None:
    # Review case 12.
    e = job(
        "FAILED tests/test_api.py::test_returns_429 - AssertionError: expected '429 Too Many "
        "Requests', got '200 OK'",
        "========================= 1 failed, 10 passed in 1.01s =========================",
    )
    assert decided(e) == ("genuine", "pytest-failed")


def test_control_a_rate_limit_without_failed_tests_is_infrastructure() -> None:
    e = job("##[error]API rate limit exceeded for installation ID 123.", title="Run ./release.sh")
    assert decided(e) == ("infrastructure", "rate-limited")


def test_a_storage_tests_blob_not_found_is_not_the_cache_service() -> None:
    # Review case 20.
    e = job(
        "E       azure.core.exceptions.ResourceNotFoundError: The specified blob does not exist.",
        "E       ErrorCode:BlobNotFound",
        "FAILED tests/test_storage.py::test_download_report - azure.core.exceptions."
        "ResourceNotFoundError: The specified blob does not exist.",
        "========================= 1 failed, 10 passed in 1.01s =========================",
    )
    assert decided(e) == ("genuine", "pytest-failed")


def test_control_a_cache_blob_lost_in_a_build_is_infrastructure() -> None:
    e = job(
        "#24 ERROR: error writing layer blob: GET https://results.blob.core.windows.net/"
        "actions-cache/2d3: RESPONSE 404: 404 The specified blob does not exist.",
        "ERROR: failed to solve: error writing layer blob: BlobNotFound",
        title="Run docker buildx build --cache-from type=gha .",
    )
    assert decided(e) == ("infrastructure", "cache-service")


GO_OOM_TEST = (
    "=== RUN   TestAllocReportsOOM",
    '    alloc_test.go:19: want error "out of memory", got nil',
    "--- FAIL: TestAllocReportsOOM (0.00s)",
    "FAIL\tgithub.com/acme/widget/alloc\t0.010s",
)


def test_a_test_quoting_out_of_memory_is_not_an_oom() -> None:
    # Review case 11.
    e = job(*GO_OOM_TEST, title="Run go test ./...")
    assert decided(e) == ("genuine", "go-test-failed")
    assert "killed for running out of memory" not in e.summary
    assert "TestAllocReportsOOM" in e.summary


def test_control_a_test_binary_out_of_memory_is_infrastructure() -> None:
    e = job(
        "=== RUN   TestBigAlloc",
        "fatal error: runtime: out of memory",
        "--- FAIL: TestBigAlloc (3.10s)",
        "FAIL\tgithub.com/acme/widget/alloc\t3.200s",
        title="Run go test ./...",
    )
    assert decided(e) == ("infrastructure", "out-of-memory")


# --- (3) pr_gate: gate words in the code's own diagnostics ------------------------------------


@pytest.mark.parametrize(
    ("case", "output", "title"),
    [
        (
            "03 tsc",
            (
                "> web@1.0.0 typecheck",
                "> tsc --noEmit",
                "##[error]src/Button.tsx(12,5): error TS2741: Property 'label' is missing in "
                "type '{ onClick: () => void; }' but required in type 'ButtonProps'.",
                "Error: src/Button.tsx(12,5): error TS2741: Property 'label' is missing in "
                "type '{ onClick: () => void; }' but required in type 'ButtonProps'.",
            ),
            "Run npm run typecheck",
        ),
        (
            "29 eslint a11y",
            (
                "/home/runner/work/widget/widget/src/Form.tsx",
                "##[error]  12:7  error  A form label must be associated with a control  "
                "jsx-a11y/label-has-associated-control",
                "",
                "✖ 1 problem (1 error, 0 warnings)",
            ),
            "Run npm run lint",
        ),
        (
            "10 kubeconform",
            (
                "##[error]deployment.yaml: metadata.labels: Required value: selector must "
                "match labels",
            ),
            "Run kubeconform -strict manifests/",
        ),
        (
            "04 ENOENT",
            (
                "> site@1.0.0 build",
                "> node scripts/build.js",
                "node:internal/fs/utils:347",
                "##[error]Error: ENOENT: no such file or directory, open "
                "'/home/runner/work/widget/widget/CHANGELOG.md'",
            ),
            "Run npm run build",
        ),
        (
            "28 vitest",
            (
                " FAIL  src/changelog.test.ts > renderChangelog > groups entries by type",
                "AssertionError: expected '## Fixes\\n- a' to deeply equal '## Bug Fixes\\n- a'",
                " ❯ src/changelog.test.ts:14:22",
                "##[error]AssertionError: expected changelog to contain '## 1.2.0'",
                " Test Files  1 failed | 12 passed (13)",
                "      Tests  1 failed | 80 passed (81)",
            ),
            "Run pnpm test",
        ),
    ],
)
def test_gate_words_in_a_diagnostic_are_not_a_gate(
    case: str, output: tuple[str, ...], title: str
) -> None:
    e = job(*output, title=title)
    assert e.class_ == "genuine", case


def test_control_a_gates_own_message_is_policy() -> None:
    e = job(
        "##[error]Every PR must have at least one label starting with 'cl-'.",
        title="Run ./check-labels.sh",
    )
    assert decided(e) == ("policy", "pr-gate")


def test_control_a_changelog_gates_message_is_policy() -> None:
    e = job(
        "##[error]Please add a changelog entry in .changes/ for this pull request.",
        title="Run ./scripts/changelog-check.sh",
    )
    assert decided(e) == ("policy", "pr-gate")


ESLINT = (
    "> web@1.0.0 lint",
    "> eslint src",
    "",
    "/home/runner/work/widget/widget/src/App.tsx",
    "  3:8  error  'React' is defined but never used  no-unused-vars",
    "",
    "✖ 1 problem (1 error, 0 warnings)",
)


def test_a_linter_in_a_pr_lint_workflow_is_genuine() -> None:
    # Review case 16 (and the same log in ci.yml, which was already genuine).
    for workflow in ("pr-lint.yml", "ci.yml"):
        e = job(*ESLINT, title="Run npm run lint", job_name="lint", workflow=workflow)
        assert e.class_ == "genuine", workflow


def test_a_ruff_finding_in_a_pull_request_lint_workflow_is_genuine() -> None:
    # Review case 17.
    e = job(
        "src/app.py:1:8: F401 [*] `os` imported but unused",
        "Found 1 error.",
        "[*] 1 fixable with the `--fix` option.",
        title="Run ruff check .",
        job_name="ruff",
        workflow="pull-request-lint.yml",
    )
    assert decided(e) == ("genuine", "tool-error")


def test_a_linter_in_a_label_gates_workflow_is_still_genuine() -> None:
    # The guard is the recognisers' failure marks, whatever the workflow is called.
    e = job(*ESLINT, title="Run npm run lint", job_name="lint", workflow="check-labels.yml")
    assert e.class_ == "genuine"


def test_control_a_gate_named_by_its_workflow_is_policy() -> None:
    e = job(
        "Labels on this pull request: bug",
        title="Run ./scripts/check.sh",
        job_name="labels",
        workflow="check-labels.yml",
    )
    assert decided(e) == ("policy", "pr-gate")


def test_a_changelog_generator_that_crashed_is_genuine() -> None:
    # Review case 05: `Generate changelog` is a release script, not a changelog check.
    e = job(
        "Reading commits since v1.2.0",
        "/home/runner/work/widget/widget/scripts/changelog.mjs:14",
        "  const title = commit.subject.trim()",
        "                              ^",
        "TypeError: Cannot read properties of undefined (reading 'trim')",
        "Node.js v20.11.0",
        title="Run node scripts/changelog.mjs",
        job_name="Generate changelog",
    )
    assert e.class_ == "genuine"


def test_control_a_changelog_check_job_is_policy() -> None:
    e = job(
        "No entry for #12 under .changes/unreleased",
        title="Run ./scripts/check.sh",
        job_name="changelog-check",
    )
    assert decided(e) == ("policy", "pr-gate")


# --- (4) an EXIT trap's xtrace lines do not demote the real error ------------------------

GCC = (
    "+ trap cleanup EXIT",
    "+ gcc -Wall -Werror -c src/main.c -o build/main.o",
    "src/main.c:10:5: error: implicit declaration of function 'foo' "
    "[-Werror=implicit-function-declaration]",
    "   10 |     foo();",
    "      |     ^~~",
    "cc1: all warnings being treated as errors",
)


def _line_of(e: LogExplanation, text: str) -> int:
    return next(x.line for x in e.excerpt if x.text.startswith(text))


def test_an_exit_traps_xtrace_lines_do_not_tolerate_the_error() -> None:
    # Review case 21: `+ cleanup` and `+ rm -rf build/tmp` come before the runner's
    # exit-code line, which is no later failure.
    e = job(*GCC, "+ cleanup", "+ rm -rf build/tmp", title="Run ./ci/build.sh")
    gcc = _line_of(e, "src/main.c:10:5: error:")
    assert decided(e) == ("genuine", "tool-error")
    assert gcc in e.error_lines
    assert "implicit declaration" in e.summary


def test_control_without_the_trap_the_error_is_reported() -> None:
    # Review case 21b.
    e = job(*GCC, title="Run ./ci/build.sh")
    assert _line_of(e, "src/main.c:10:5: error:") in e.error_lines


def test_control_an_error_the_script_went_on_after_is_still_tolerated() -> None:
    # The `|| echo` pattern the demotion exists for: a later failure stopped the step.
    e = job(
        "+ git branch -D stale",
        "error: branch 'stale' not found.",
        "+ echo 'no stale branch'",
        "no stale branch",
        "+ gcc -c src/main.c",
        "src/main.c:3:1: error: expected ';' before '}' token",
        title="Run ./ci/build.sh",
    )
    assert _line_of(e, "src/main.c:3:1: error:") in e.error_lines
    assert _line_of(e, "error: branch 'stale' not found.") not in e.error_lines


# --- what a genuine failure is reported with ----------------------------------------------

NODE_TOP_LEVEL = (
    "Reading commits since v1.2.0",
    "/home/runner/work/widget/widget/scripts/changelog.mjs:14",
    "  const title = commit.subject.trim()",
    "                              ^",
    "TypeError: Cannot read properties of undefined (reading 'trim')",
    "Node.js v20.11.0",
)


def test_a_node_crash_without_a_stack_is_the_error_line() -> None:
    # Review case 05's output: Node's crash report (caret, error, runtime version).
    e = job(*NODE_TOP_LEVEL, title="Run node scripts/changelog.mjs")
    crash = _line_of(e, "TypeError:")
    assert e.error_lines == (crash,)
    assert "TypeError: Cannot read properties of undefined (reading 'trim')" in e.summary


def test_control_an_error_word_without_nodes_report_is_not_a_crash() -> None:
    # No caret above it: the recogniser does not call the line Node's crash (the summary
    # does not name it). Issue 26's generic rules still report it as an error line: a
    # `TypeError:` header just before the step's exit is what a person reads first.
    lines = [t for t in NODE_TOP_LEVEL if t.strip() != "^"]
    e = job(*lines, title="Run node scripts/changelog.mjs")
    assert e.parsed is not None
    crash = _line_of(e, "TypeError:")
    assert not any(m.line == crash and m.kind == "js-uncaught" for m in find_marks(e.parsed))
    assert "TypeError" not in e.summary


def test_the_summary_of_a_crash_then_refusal_names_the_crash() -> None:
    # Review case 22: the refusal is the tail of the crash above it.
    e = job(
        *NODE_CRASH,
        "Error: connect ECONNREFUSED 127.0.0.1:3000",
        "    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)",
        title="Run npm run e2e",
    )
    assert "TypeError: Cannot read properties of undefined (reading 'value')" in e.summary


def test_a_source_location_is_no_remote_host() -> None:
    # pytest's `tests/test_api.py:12` looks like `name:port`; the test's own server (on
    # the job's machine) refused, so the failure is the test's.
    e = job(
        "tests/test_api.py:12: ConnectionRefusedError: [Errno 111] Connection refused",
        "FAILED tests/test_api.py::test_ping - ConnectionRefusedError: [Errno 111] "
        "Connection refused",
        "========================= 1 failed, 10 passed in 1.01s =========================",
    )
    assert decided(e) == ("genuine", "pytest-failed")


def test_control_a_named_remote_host_and_port_is_remote() -> None:
    e = job(
        "tests/test_api.py:12: ConnectionRefusedError: [Errno 111] Connection refused "
        "(redis.internal.example.com:6379)",
        "FAILED tests/test_api.py::test_ping - ConnectionRefusedError: [Errno 111] "
        "Connection refused",
        "========================= 1 failed, 10 passed in 1.01s =========================",
    )
    assert decided(e) == ("flaky", "network-error")
