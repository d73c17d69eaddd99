"""Classes from signatures: each one matched, each one's control, and their precedence."""

from __future__ import annotations

from typing import get_args

import pytest

from landbot.config import TriageRule
from landbot.core.model import TriageClass
from landbot.errors import LandbotError
from landbot.triage import compile_rules, explain_log
from landbot.triage.classify import RULE_CLASSES, SIGNATURES, classify, pr_fault
from landbot.triage.context import find_marks
from landbot.triage.explain import LogExplanation
from landbot.triage.log import parse_log

from .conftest import gh_log, run_step

EXIT1 = "##[error]Process completed with exit code 1."


def explain(
    *output: str, command: str = "make test", script: tuple[str, ...] = (), **kw: object
) -> LogExplanation:
    lines = [*run_step(command, *output, script=script), "Post job cleanup."]
    return explain_log(gh_log(lines), **kw)  # type: ignore[arg-type]


def signature(e: LogExplanation) -> str | None:
    return e.evidence[0].signature if e.evidence else None


# --- one positive case and one control per signature -----------------------------------

POSITIVE: list[tuple[str, TriageClass, dict[str, object]]] = [
    (
        "runner-shutdown",
        "infrastructure",
        {
            "output": (
                "##[error]The runner has received a shutdown signal. This can happen when the "
                "runner service is stopped, or a manually started runner is canceled.",
            )
        },
    ),
    (
        "runner-lost-communication",
        "infrastructure",
        {
            "output": (
                "The hosted runner: GitHub Actions 12 lost communication with the server. "
                "Anything in your workflow that terminates the runner process, starves it for "
                "CPU/Memory, or blocks its network access can cause this error.",
            )
        },
    ),
    (
        "max-execution-time",
        "timeout",
        {
            "output": (
                "##[error]The job running on runner GitHub Actions 7 has exceeded the maximum "
                "execution time of 360 minutes.",
            )
        },
    ),
    (
        # rust/ruff-wasm-pack-runner-shutdown-fragment.log lines 9-10: the runner's message
        # comes after the exit code the shutdown caused.
        "runner-shutdown",
        "infrastructure",
        {
            "output": (
                "test result: ok. 3 passed; 0 failed; 0 ignored",
                "##[error]Process completed with exit code 143.",
                "##[error]The runner has received a shutdown signal. This can happen when the "
                "runner service is stopped, or a manually started runner is canceled.",
            )
        },
    ),
    (
        "runner-deprovisioned",
        "infrastructure",
        {
            "output": (
                "##[error]Received request to deprovision: The request was cancelled by the "
                "remote provider.",
            )
        },
    ),
    ("step-timeout", "timeout", {"output": ("##[error]The action has timed out.",)}),
    (
        # go/hugo-windows-go-test-timeout-panic.log line 5970: the goroutine dump that
        # follows runs for hundreds of lines, so this one counts anywhere in the step.
        "go-test-timeout",
        "timeout",
        {
            "output": (
                "panic: test timed out after 10m0s",
                "running tests:",
                *(f"goroutine {i} [chan receive]:" for i in range(120)),
                "FAIL\tgithub.com/gohugoio/hugo/hugolib\t600.5s",
                EXIT1,
            )
        },
    ),
    (
        "step-timeout",
        "timeout",
        {"output": ("##[error]The action 'Run tests' has timed out after 10 minutes.",)},
    ),
    (
        "operation-cancelled",
        "cancelled",
        {"output": ("##[error]The operation was canceled.",)},
    ),
    (
        "cancelled-by-others",
        "cancelled",
        {
            "output": (
                "##[error]Canceling since a higher priority waiting request for 'ci-refs/pull/7' "
                "exists",
            )
        },
    ),
    (
        "dependencies-cancelled",
        "cancelled",
        {
            "command": "exit 1",
            "script": ('needs=\'{"test":{"result":"cancelled"},"lint":{"result":"success"}}\'',),
            "output": (EXIT1,),
        },
    ),
    (
        # Exit code 143 after a SIGTERM nothing in the job sent: the runner was stopped.
        "runner-signal",
        "infrastructure",
        {
            "output": (
                "npm ERR! signal SIGTERM",
                "npm ERR! command sh -c jest --runInBand",
                "##[error]Process completed with exit code 143.",
            )
        },
    ),
    (
        # runner/colossalai-gpu-runner-cuda-oom.log line 1828, a GPU runner's memory.
        "out-of-memory",
        "infrastructure",
        {"output": ("E       RuntimeError: CUDA error: out of memory", EXIT1)},
    ),
    (
        "out-of-memory",
        "infrastructure",
        {
            "output": (
                "/home/runner/work/_temp/a.sh: line 1:  2241 Killed   python train.py",
                "##[error]Process completed with exit code 137.",
            )
        },
    ),
    (
        "out-of-memory",
        "infrastructure",
        {
            "output": (
                "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
                "##[error]Process completed with exit code 134.",
            )
        },
    ),
    (
        "out-of-memory",
        "infrastructure",
        {
            "output": (
                "c++: fatal error: Killed signal terminated program cc1plus",
                "make: *** [Makefile:12: big.o] Error 1",
                "##[error]Process completed with exit code 2.",
            )
        },
    ),
    (
        "no-space-left",
        "infrastructure",
        {"output": ("write /var/lib/docker/tmp/x: no space left on device", EXIT1)},
    ),
    (
        "no-space-left",
        "infrastructure",
        {"output": ("npm ERR! code ENOSPC", EXIT1)},
    ),
    (
        # actions-runner-controller's container hooks when the job's pod never ran.
        "not-provisioned",
        "infrastructure",
        {
            "output": (
                "Error: Error: pod failed to come online with error: Error: Pod "
                "arc-runner-x7k2p-workflow is unhealthy with phase status Failed",
                "##[error]Executing the custom container implementation failed.",
            )
        },
    ),
    (
        # actions/runner ContainerOperationProvider.cs: a `services:` container unhealthy.
        "service-container",
        "infrastructure",
        {
            "output": (
                "##[error]Failed to initialize container postgres:16",
                "##[error]One or more containers failed to start.",
            )
        },
    ),
    (
        # actions/runner ActionManager.cs.
        "action-download",
        "infrastructure",
        {
            "output": (
                "##[error]Failed to download archive 'https://api.github.com/repos/actions/"
                "checkout/tarball/11bd71901bbe5b1630ceea73d27597364c9af683' after 3 attempts.",
            )
        },
    ),
    (
        # runner/dify-buildx-gha-cache-blob-not-found.log lines 1168-1169 (buildx's gha cache).
        "cache-service",
        "infrastructure",
        {
            "command": "docker/build-push-action@v6",
            "output": (
                "RESPONSE 404: 404 The specified blob does not exist.",
                "ERROR CODE: BlobNotFound",
                "##[error]buildx failed with: ------------------------------------------------",
            ),
        },
    ),
    (
        # network/github-api-rate-limit-exceeded.log line 301.
        "rate-limited",
        "infrastructure",
        {
            "command": "node scripts/clean-workflows.js",
            "output": (
                "Error in main process: RequestError [HttpError]: API rate limit exceeded for "
                "installation. If you reach out to GitHub Support for help, please include the "
                "request ID 7CC0:AA943:28FC04:2A10A3:67FFC942",
                EXIT1,
            ),
        },
    ),
    (
        "quest-finding",
        "policy",
        {"output": ("quest: quest/m0/a.md: quest title must be '# [XS|S|M|L|XL] Title'", EXIT1)},
    ),
    (
        # dotnet/powershell-cl-label-policy.log line 138: the gate says what it checks.
        "pr-gate",
        "policy",
        {
            "command": "actions/github-script@v7",
            "output": ("##[error]Every PR must have at least one label starting with 'cl-'.",),
        },
    ),
    (
        # julia/julia-blocking-labels-policy.log: the gate's action names it.
        "pr-gate",
        "policy",
        {
            "command": "yogevbd/enforce-label-action@a3c219da6b8fa73f6ba62b68ff09c469b3a1c024",
            "output": ("##[error]Process completed with exit code 1.",),
        },
    ),
    (
        "registry-network",
        "flaky",
        {
            "command": "npm ci",
            "output": ("npm error code ECONNRESET", "npm error network aborted", EXIT1),
        },
    ),
    (
        "registry-network",
        "flaky",
        {
            "command": "python -m pip install -r requirements.txt",
            "output": (
                "WARNING: Retrying (Retry(total=4)) after connection broken by "
                "'ReadTimeoutError(\"HTTPSConnectionPool(host='files.pythonhosted.org', "
                "port=443): Read timed out. (read timeout=15)\")': /packages/torch.whl",
                "ERROR: Could not install packages due to an OSError: "
                "HTTPSConnectionPool(host='files.pythonhosted.org', port=443): Read timed out.",
                EXIT1,
            ),
        },
    ),
    (
        "registry-network",
        "flaky",
        {
            "command": "./scripts/bootstrap",  # the registry shows in the lines around it
            "output": (
                "Fetching https://registry.yarnpkg.com/left-pad",
                "error An unexpected error occurred: socket hang up",
                EXIT1,
            ),
        },
    ),
    (
        # network/terraform-docker-mirror-layer-not-found.log line 809.
        "registry-unavailable",
        "flaky",
        {
            "command": "docker buildx build .",
            "output": (
                "#6 ERROR: failed to copy: httpReadSeeker: failed open: could not fetch content "
                "descriptor sha256:df9b9388f04a (application/vnd.docker.image.rootfs.diff.tar."
                "gzip) from remote: not found",
                EXIT1,
            ),
        },
    ),
    (
        # The shape of javascript/htmx-npm-test-econnrefused.log lines 159-169 (no test
        # ran), with a remote address in place of its 127.0.0.1 (a constructed input):
        # the loopback original is a control below.
        "network-error",
        "flaky",
        {
            "command": "npm test",
            "output": (
                "> tsc src/htmx.js --noEmit --checkJs --target es6 --lib dom,dom.iterable",
                "Promise Rejection:  Error: connect ECONNREFUSED 140.82.112.3:443",
                "    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1611:16) {",
                "Error: connect ECONNREFUSED 140.82.112.3:443",
                EXIT1,
            ),
        },
    ),
    (
        # network/terraform-e2e-provider-download-tls-timeout.log lines 193-207: a test
        # failed because a remote host did not answer, and nothing asserted otherwise.
        "network-error",
        "flaky",
        {
            "command": "go test ./internal/command/e2etest/...",
            "output": (
                "Error while installing hashicorp/null v3.1.0: Get",
                '"https://releases.hashicorp.com/terraform-provider-null/3.1.0/x.zip":',
                "net/http: TLS handshake timeout",
                "--- FAIL: TestProviderTampering (14.05s)",
                "FAIL",
                EXIT1,
            ),
        },
    ),
    (
        # runner/retrofit-android-emulator-package-zip-error.log lines 333-337: the emulator
        # package came corrupt; the refused connection to it is the consequence.
        "download-corrupt",
        "flaky",
        {
            "command": "reactivecircus/android-emulator-runner@v2",
            "output": (
                "Warning: An error occurred while preparing SDK package Android Emulator: "
                "Error on ZipFile unknown archive.",
                "[command]/usr/local/lib/android/sdk/platform-tools/adb -s emulator-5554 emu kill",
                "error: could not connect to TCP port 5554: Connection refused",
                "##[error]The process '/usr/bin/sh' failed with exit code 1",
            ),
        },
    ),
    (
        # pytest-rerunfailures' summary: the only failure passed when re-run.
        "flaky-marker",
        "flaky",
        {
            "command": "pytest --reruns 2",
            "output": ("==== 240 passed, 1 rerun in 31.2s ====", "Error: coverage upload", EXIT1),
        },
    ),
    (
        "pytest-failed",
        "genuine",
        {"output": ("FAILED tests/test_a.py::test_b - assert 1 == 2", EXIT1)},
    ),
    (
        "pytest-failed",
        "genuine",
        {"output": ("ERROR tests/test_a.py - ImportError: cannot import name 'x'", EXIT1)},
    ),
    (
        "vitest-failed",
        "genuine",
        {"output": (" FAIL  src/a.test.ts > suite > works", "AssertionError: nope", EXIT1)},
    ),
    (
        # jest: context.py names the file (`FAIL …`) apart from the failed test (`● …`).
        "test-failed",
        "genuine",
        {"output": ("FAIL src/App.test.jsx (5.2 s)", "  ● App › renders", EXIT1)},
    ),
    (
        "go-test-failed",
        "genuine",
        {"output": ("--- FAIL: TestParse (0.00s)", "FAIL\texample.com/x\t0.01s", EXIT1)},
    ),
    (
        "cargo-test-failed",
        "genuine",
        {"output": ("test parse::tests::empty ... FAILED", "test result: FAILED. 3 passed", EXIT1)},
    ),
    (
        "python-traceback",
        "genuine",
        {
            "output": (
                "Traceback (most recent call last):",
                '  File "/app/main.py", line 3, in <module>',
                "    main()",
                "ValueError: boom",
                EXIT1,
            )
        },
    ),
    (
        "test-failed",
        "genuine",
        {"output": ("   × cart > applies the discount 4ms", EXIT1)},
    ),
    (
        # Any other runner's failed test that context.py's recognisers name (mocha here).
        "failed-test",
        "genuine",
        {
            "command": "npm test",
            "output": (
                "  1 failing",
                "  1) Array",
                "       #indexOf()",
                "         should return -1:",
                "     AssertionError: expected 1 to equal -1",
                EXIT1,
            ),
        },
    ),
    (
        # A compiler's error line (gcc here).
        "tool-error",
        "genuine",
        {"command": "make", "output": ("main.c:3:1: error: expected ';' before '}' token", EXIT1)},
    ),
    ("step-error", "genuine", {"output": ("make: *** [all] Error 2", EXIT1)}),
    (
        # network/starship-crowdin-api-500.log 49-52: the action's annotation holds the
        # service's answer, on the lines after it.
        "server-error",
        "infrastructure",
        {
            "command": "starship/crowdin-pretranslate-action@v0.1.1",
            "output": (
                "##[error]Could not get project file IDs.",
                "##[error]{",
                '  "code": 500',
                "}",
            ),
        },
    ),
    (
        # dependabot/fabric-dependabot-updater-unknown-error.log 3360-3370.
        "dependabot-updater-crash",
        "infrastructure",
        {
            "command": "github/dependabot-action@main",
            "output": (
                "Dependabot encountered '1' error(s) during execution, please check the logs "
                "for more details.",
                "+---------------+",
                "|    Errors     |",
                "+---------------+",
                "| unknown_error |",
                "+---------------+",
                "Failure running container b87aa494427bd85a94925d8d12cc2e6dfa52f7894dcbc0b0648",
                "##[error]Dependabot encountered an error performing the update",
            ),
        },
    ),
]


@pytest.mark.parametrize(
    ("name", "cls", "case"), POSITIVE, ids=[f"{n}-{i}" for i, (n, _c, _k) in enumerate(POSITIVE)]
)
def test_signature_matches(name: str, cls: TriageClass, case: dict[str, object]) -> None:
    output = case["output"]
    assert isinstance(output, tuple)
    e = explain(
        *output,
        command=str(case.get("command", "make test")),
        script=case.get("script", ()),  # type: ignore[arg-type]
    )
    assert (e.class_, signature(e)) == (cls, name)
    ev = e.evidence[0]
    # The evidence of a class other than genuine is an error line; a genuine one's error
    # lines are the tool's own (context.py), the evidence is shown.
    assert ev.line in e.error_lines or cls == "genuine"
    assert ev.text == next(x.text for x in e.excerpt if x.line == ev.line)


# Signatures whose positive case is not one step's output: each has its own test below.
OWN_TEST = {"runner-vanished"}  # test_a_log_that_ends_in_the_set_up_is_a_runner_that_died


def test_every_signature_has_a_positive_case() -> None:
    assert {name for name, _c, _check in SIGNATURES} == {
        name for name, _c, _k in POSITIVE
    } | OWN_TEST


# Controls: text close to a signature that must not trigger it.
CONTROLS: list[tuple[str, tuple[str, ...], str, str]] = [
    # `Killed` without exit code 137 is not an OOM kill.
    ("out-of-memory", ("Killed 3 stale workers", EXIT1), "make test", "step-error"),
    # Issue 14 changed this one: a connection failure at the step's end with no failed
    # test is now flaky (network-error), not genuine. What stays genuine is a network word
    # far above the end, the real cause printed last.
    (
        "network-error",
        (
            "tests/test_api.py: ConnectionResetError: Connection reset by peer (retried, ok)",
            *(f"compiling module {i}" for i in range(80)),
            "src/lib.c:3:1: error: expected ';' before '}' token",
            EXIT1,
        ),
        "make test",
        "step-error",
    ),
    # javascript/htmx-npm-test-econnrefused.log lines 159-169: a refusal on the job's own
    # machine (127.0.0.1) is no network's fault (issue 14's review: a server of the job's
    # that never listened); the log's label accepted flaky, which this rule no longer gives.
    (
        "network-error",
        (
            "> tsc src/htmx.js --noEmit --checkJs --target es6 --lib dom,dom.iterable",
            "Promise Rejection:  Error: connect ECONNREFUSED 127.0.0.1:33095",
            "    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1611:16) {",
            "Error: connect ECONNREFUSED 127.0.0.1:33095",
            EXIT1,
        ),
        "npm test",
        "step-error",
    ),
    # A test asserting on a connection error it provoked (no remote host) is the PR's.
    (
        "network-error",
        ("FAILED tests/test_api.py::test_retry - ConnectionResetError: boom", EXIT1),
        "pytest",
        "pytest-failed",
    ),
    # A remote host did not answer, but a test also failed an assertion: the code's fault.
    (
        "network-error",
        (
            "WARNING: Read timed out talking to https://api.example.com/v1/carts",
            "E       AssertionError: assert 3 == 4",
            "FAILED tests/test_cart.py::test_total - AssertionError: assert 3 == 4",
            EXIT1,
        ),
        "pytest",
        "pytest-failed",
    ),
    # "could result in out of memory errors" says what may happen, not what did.
    (
        "out-of-memory",
        (
            "warning: a heap this small could result in out of memory errors",
            "src/a.rs:1:5: error[E0425]: cannot find value `x` in this scope",
            EXIT1,
        ),
        "cargo build",
        "step-error",
    ),
    # An OOM phrase thousands of lines above the end is not the cause.
    (
        "out-of-memory",
        (
            "java.lang.OutOfMemoryError: Java heap space (recovered, retrying with -Xmx4g)",
            *(f"> Task :module{i}:compileJava" for i in range(200)),
            "error: package org.junit does not exist",
            EXIT1,
        ),
        "./gradlew build",
        "step-error",
    ),
    # A label mentioned by a failing build is not a gate.
    ("pr-gate", ("error: label 'done' used but not defined", EXIT1), "gcc -c a.c", "step-error"),
    # A job named after labels whose step ran tests that failed: the tests decide.
    (
        "pr-gate",
        ("FAILED tests/test_labels.py::test_sync - assert 1 == 2", EXIT1),
        "actions/labeler@v5 && pytest",
        "pytest-failed",
    ),
    # Exit code 143 with no signal line: a test that killed its own child, not the runner.
    (
        "runner-signal",
        ("Terminated child 4312", "##[error]Process completed with exit code 143."),
        "make test",
        "step-error",
    ),
    # A Kubernetes project's own e2e test saying a pod failed is its own failure.
    (
        "not-provisioned",
        (
            "--- FAIL: TestDeploy (3.2s)",
            "    deploy_test.go:41: pod nginx-7c9 failed to start",
            EXIT1,
        ),
        "go test ./e2e/...",
        "go-test-failed",
    ),
    # A download the runner retried and then got is not why the step failed.
    (
        "action-download",
        (
            "##[warning]Failed to download action 'https://api.github.com/repos/a/b/tarball/c'. "
            "Error: Response status code does not indicate success: 502.",
            "main.c:3:1: error: expected ';'",
            EXIT1,
        ),
        "make",
        "step-error",
    ),
    # pytest re-ran a test and it still failed: the failure counts, not the rerun.
    (
        "flaky-marker",
        ("==== 1 failed, 240 passed, 1 rerun in 31.2s ====", EXIT1),
        "pytest --reruns 1",
        "step-error",
    ),
    # Playwright counts a flaky test apart; with a failed one the job failed for that one.
    (
        "flaky-marker",
        ("  1 failed", "    [chromium] › a.spec.ts:3:1 › works", "  2 flaky", EXIT1),
        "npx playwright test",
        "step-error",
    ),
    # An install step with failed tests: the network error may be the tests' own.
    (
        "registry-network",
        ("FAILED tests/test_api.py::test_fetch - ECONNRESET", EXIT1),
        "pip install -e . && pytest",
        "pytest-failed",
    ),
    # A quest finding that was already on the base is not the change's fault.
    (
        "quest-finding",
        ("quest: quest/a.md: (already on the base) quest title must be sized", EXIT1),
        "landbot quest check",
        "step-error",
    ),
    # A gate whose needs include a failure is failing for that failure.
    (
        "dependencies-cancelled",
        ('{"a":{"result":"cancelled"},"b":{"result":"failure"}}', EXIT1),
        "gate",
        "step-error",
    ),
    # Cancelled dependencies that were allowed to fail do not count.
    (
        "dependencies-cancelled",
        ("📝 docs → ❌ cancelled [allowed to fail]", EXIT1),
        "gate",
        "step-error",
    ),
    # ERROR: with a colon is pip's, not a pytest error line.
    ("pytest-failed", ("ERROR: No matching distribution found for x", EXIT1), "make", "step-error"),
    # Words inside other words are not signatures.
    ("operation-cancelled", ("echo The operation was canceled.", EXIT1), "make", "step-error"),
    # A 500 the step printed, not one its error annotation reports.
    ("server-error", ("GET /api/items -> status: 500", EXIT1), "make test", "step-error"),
    # Dependabot's other error types are the repository's (bubbletea's log 159-167).
    (
        "dependabot-updater-crash",
        (
            "+---------------------------+",
            "|          Errors           |",
            "+---------------------------+",
            "| dependency_file_not_found |",
            "+---------------------------+",
            "##[error]Dependabot encountered an error performing the update",
        ),
        "github/dependabot-action@main",
        "step-error",
    ),
]


@pytest.mark.parametrize(("name", "output", "command", "instead"), CONTROLS)
def test_signature_control(name: str, output: tuple[str, ...], command: str, instead: str) -> None:
    e = explain(*output, command=command)
    # "step-error" stands for the generic genuine: the step's error, or the tool's error
    # line context.py's recognisers name in it.
    assert signature(e) in (GENERIC if instead == "step-error" else {instead})
    assert signature(e) != name


GENERIC = {"step-error", "tool-error"}


def test_no_error_is_unknown_even_with_scary_words() -> None:
    e = explain("Killed 3 workers", "No space left on device (just kidding)", "ECONNRESET retry ok")
    assert e.class_ == "unknown"
    assert e.error_lines == () and e.excerpt == () and e.evidence == ()
    assert e.step is None
    assert e.pr_fault is None


# --- precedence --------------------------------------------------------------------------

PRECEDENCE = [
    # (output, expected class, expected signature)
    (
        (
            "##[error]The runner has received a shutdown signal.",
            "##[error]Process completed with exit code 143.",
            "##[error]The operation was canceled.",
        ),
        "infrastructure",
        "runner-shutdown",
    ),
    (
        (
            "##[error]The job running on runner X has exceeded the maximum execution time "
            "of 5 minutes.",
            "##[error]The operation was canceled.",
        ),
        "timeout",
        "max-execution-time",
    ),
    (
        ("FAILED tests/test_a.py::test_b - assert 1", "##[error]The operation was canceled."),
        "cancelled",
        "operation-cancelled",
    ),
    (
        (
            "Killed",
            "FAILED tests/test_a.py::test_b",
            "##[error]Process completed with exit code 137.",
        ),
        "infrastructure",
        "out-of-memory",
    ),
    (
        ("quest: quest/a.md: bad", "npm ERR! code ECONNRESET", EXIT1),
        "policy",
        "quest-finding",
    ),
    (
        ("npm ERR! code ECONNRESET", "FAILED tests/x.py::t - boom", EXIT1),
        "flaky",
        "registry-network",
    ),
    (
        ("Traceback (most recent call last):", "ValueError: x", "FAILED tests/x.py::t", EXIT1),
        "genuine",
        "pytest-failed",
    ),
]


@pytest.mark.parametrize(("output", "cls", "sig"), PRECEDENCE)
def test_precedence(output: tuple[str, ...], cls: TriageClass, sig: str) -> None:
    e = explain(*output)
    assert (e.class_, signature(e)) == (cls, sig)


def test_signatures_after_the_failing_step_do_not_count() -> None:
    lines = [
        *run_step("make test", "FAILED tests/a.py::t - no", EXIT1),
        *run_step("upload", "##[error]The operation was canceled."),
    ]
    e = explain_log(gh_log(lines))
    assert (e.class_, signature(e)) == ("genuine", "pytest-failed")
    assert 5 in e.error_lines and not any(n > 6 for n in e.error_lines)


# --- repository rules ----------------------------------------------------------------------


def test_rule_takes_precedence_over_builtins() -> None:
    rules = [TriageRule.model_validate({"pattern": r"^FAILED .*test_network_", "class": "flaky"})]
    e = explain("FAILED tests/test_x.py::test_network_fetch - timeout", EXIT1, rules=rules)
    assert e.class_ == "flaky"
    assert e.evidence[0].signature == r"rule 1: /^FAILED .*test_network_/"
    assert e.evidence[0].line == 5
    assert "triage rule 1" in e.summary
    # Control: without the rule, the same log is genuine.
    assert (
        explain("FAILED tests/test_x.py::test_network_fetch - timeout", EXIT1).class_ == "genuine"
    )


def test_first_matching_rule_wins_and_rules_accept_mappings() -> None:
    rules = [
        {"pattern": "never matches", "class": "policy"},
        {"pattern": "disk quota", "class": "infrastructure"},
        {"pattern": "quota", "class": "flaky"},
    ]
    e = explain("disk quota exceeded", EXIT1, rules=rules)
    assert (e.class_, e.evidence[0].signature) == ("infrastructure", "rule 2: /disk quota/")


def test_rules_do_not_see_the_echoed_script() -> None:
    rules = [{"pattern": "retry-me", "class": "flaky"}]
    e = explain("oops", EXIT1, script=("# retry-me",), rules=rules)
    assert e.class_ == "genuine"
    assert explain("retry-me", EXIT1, rules=rules).class_ == "flaky"  # control


def test_a_rule_cannot_blame_the_pr_for_a_cancelled_job() -> None:
    rules = [{"pattern": "canceled", "class": "genuine"}]
    e = explain("##[error]The operation was canceled.", rules=rules)
    assert e.class_ == "cancelled"
    assert [ev.signature for ev in e.evidence] == ["operation-cancelled", "rule 1: /canceled/"]
    assert e.pr_fault is False
    # A rule that does not blame the PR may still reclassify it.
    e2 = explain(
        "##[error]The operation was canceled.", rules=[{"pattern": "canceled", "class": "flaky"}]
    )
    assert e2.class_ == "flaky"


def test_rules_never_invent_a_failure() -> None:
    e = explain("all fine", rules=[{"pattern": "fine", "class": "genuine"}])
    assert e.class_ == "unknown"


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"pattern": "(", "class": "flaky"}, "is not a valid regular expression"),
        ({"pattern": "x", "class": "bogus"}, "has class 'bogus'; use one of genuine"),
        ({"pattern": "x", "class": "unknown"}, "has class 'unknown'"),
        ({"pattern": "", "class": "flaky"}, "has no pattern"),
    ],
)
def test_bad_rules_fail_with_one_line(rule: dict[str, str], message: str) -> None:
    with pytest.raises(LandbotError) as err:
        compile_rules([{"pattern": "ok", "class": "flaky"}, rule])
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith("triage rule 2 ")
    assert message in text


def test_rule_classes_are_every_class_but_unknown() -> None:
    assert set(RULE_CLASSES) == set(get_args(TriageClass)) - {"unknown"}


def test_pr_fault_per_class() -> None:
    assert {c: pr_fault(c) for c in get_args(TriageClass)} == {
        "genuine": True,
        "policy": True,
        "flaky": False,
        "infrastructure": False,
        "cancelled": False,
        "timeout": None,
        "unknown": None,
    }


def test_classify_is_pure_over_a_parsed_log() -> None:
    parsed = parse_log(gh_log(run_step("x", "quest: quest/a.md: bad", EXIT1)))
    marks = find_marks(parsed)
    first = classify(parsed, marks)
    assert classify(parsed, marks) == first
    assert first.class_ == "policy"


def test_a_server_error_with_failed_tests_is_the_tests() -> None:
    # A test may expect a server's 500: with failed tests the annotation is theirs.
    e = explain(
        "FAILED tests/test_api.py::test_bad_body - assert 200 == 500",
        "##[error]Request failed with status code 500",
        EXIT1,
        command="pytest",
    )
    assert e.class_ == "genuine" and signature(e) != "server-error"
    # Control: the same annotation from a step without tests is the service's.
    e = explain("##[error]Request failed with status code 500", EXIT1, command="deploy")
    assert (e.class_, signature(e)) == ("infrastructure", "server-error")


def test_a_script_that_crashed_on_the_api_is_no_gate_whatever_the_job_is_called() -> None:
    # actions/jan-github-script-not-accessible.log 35-71: a job that assigns a milestone,
    # whose github-script crashed on a token without the permission.
    set_up = ["Complete job name: assign_milestone"]
    step = run_step(
        "actions/github-script@v3",
        "RequestError [HttpError]: Resource not accessible by integration",
        "##[error]Unhandled error: HttpError: Resource not accessible by integration",
    )
    e = explain_log(gh_log([*set_up, *step, "Post job cleanup."]))
    assert e.class_ == "genuine" and signature(e) != "pr-gate"
    # Control: the same job whose script said no with its own message is the gate.
    said = run_step("actions/github-script@v3", "##[error]This PR has no milestone set")
    e = explain_log(gh_log([*set_up, *said, "Post job cleanup."]))
    assert (e.class_, signature(e)) == ("policy", "pr-gate")


def test_a_gate_named_by_its_job_is_policy() -> None:
    # go/vault-milestone-check-policy.log: the whole step is `false`; only the job's name
    # and its workflow file say what it checks.
    set_up = [
        "Job defined at: hashicorp/vault/.github/workflows/milestone-checker.yml@refs/pull/1/merge",
        "Complete job name: milestone-check",
    ]
    e = explain_log(gh_log([*set_up, *run_step("false", EXIT1)]))
    assert (e.class_, signature(e)) == ("policy", "pr-gate")
    assert e.evidence[0].text == "Complete job name: milestone-check"
    # The job's set-up lines are shown, though they are outside the step.
    assert {1, 2} <= {x.line for x in e.excerpt}
    assert "checks the pull request itself" in e.summary and "milestone" in e.summary
    # Control: the same job whose step is a build that failed is the build's failure.
    e = explain_log(gh_log([*set_up, *run_step("make", "main.c:3:1: error: expected ';'", EXIT1)]))
    assert e.class_ == "genuine"
    # Control: a job named for something else.
    other = ["Complete job name: build (3.11)"]
    assert explain_log(gh_log([*other, *run_step("false", EXIT1)])).class_ == "genuine"


def test_a_cause_is_weighed_by_where_it_sits() -> None:
    # The same OOM line decides at the step's end, and not 500 lines above it.
    oom = "c++: fatal error: Killed signal terminated program cc1plus"
    filler = [f"[{i}/900] Building CXX object src/f{i}.o" for i in range(500)]
    near = explain("building", *filler, oom, "make: *** [all] Error 1", EXIT1, command="make")
    far = explain(oom, *filler, "make: *** [all] Error 1", EXIT1, command="make")
    assert (near.class_, signature(near)) == ("infrastructure", "out-of-memory")
    assert far.class_ == "genuine" and signature(far) in GENERIC
    # The runner's own messages count anywhere in the step.
    shutdown = "##[error]The runner has received a shutdown signal."
    e = explain(shutdown, *filler, EXIT1, command="make")
    assert signature(e) == "runner-shutdown"


# What each signature's summary says (summary.py): one line a person can act on.
SUMMARY_SAYS = {
    "runner-shutdown": "runner shut down",
    "runner-lost-communication": "lost communication",
    "runner-vanished": "runner died",
    "runner-deprovisioned": "deprovisioned",
    "max-execution-time": "maximum execution time",
    "step-timeout": "timeout",
    "go-test-timeout": "-timeout",
    "operation-cancelled": "cancelled",
    "cancelled-by-others": "cancelled by another run",
    "dependencies-cancelled": "jobs it needs were cancelled",
    "runner-signal": "SIGTERM",
    "out-of-memory": "out of memory",
    "no-space-left": "disk space",
    "not-provisioned": "never provisioned",
    "service-container": "service container",
    "action-download": "download an action",
    "cache-service": "cache service",
    "rate-limited": "rate limit",
    "server-error": "server error (HTTP 5xx)",
    "dependabot-updater-crash": "updater crashed",
    "quest-finding": "quest check found",
    "pr-gate": "checks the pull request itself",
    "registry-network": "package registry",
    "registry-unavailable": "container registry",
    "download-corrupt": "truncated or corrupt",
    "network-error": "network error",
    "flaky-marker": "passed on retry",
    "pytest-failed": "failed",
    "vitest-failed": "failed",
    "go-test-failed": "failed",
    "cargo-test-failed": "failed",
    "python-traceback": "raised",
    "test-failed": "failed",
    "failed-test": "failed",
    "tool-error": "error: expected",
    "step-error": "failed with exit code",
}


@pytest.mark.parametrize(
    ("name", "cls", "case"), POSITIVE, ids=[f"{n}-{i}" for i, (n, _c, _k) in enumerate(POSITIVE)]
)
def test_every_signature_has_its_own_summary(
    name: str, cls: TriageClass, case: dict[str, object]
) -> None:
    output = case["output"]
    assert isinstance(output, tuple)
    e = explain(
        *output, command=str(case.get("command", "make test")), script=case.get("script", ())
    )  # type: ignore[arg-type]
    assert "\n" not in e.summary and len(e.summary) <= 300
    assert SUMMARY_SAYS[name] in e.summary, e.summary


def test_every_signature_has_a_summary_entry() -> None:
    assert {name for name, _c, _check in SIGNATURES} == set(SUMMARY_SAYS)


def test_a_log_that_ends_in_the_set_up_is_a_runner_that_died() -> None:
    # runner/conda-forge-self-hosted-runner-lost-raw-log.log, the whole raw log.
    lines = [
        "Requested labels: cirun-openstack-cpu-large--8075232475-linux_aarch64_, linux, x64",
        "Job defined at: conda-forge/mongodb-feedstock/.github/workflows/conda-build.yml@refs/x",
        "Waiting for a runner to pick up this job...",
        "Job is about to start running on the runner: cirun-conda-forge--mongodb-fd6a0cc (repo)",
    ]
    e = explain_log(gh_log(lines))
    assert (e.class_, signature(e), e.step) == ("infrastructure", "runner-vanished", None)
    assert e.evidence[0].line == 4 and 4 in e.error_lines
    assert SUMMARY_SAYS["runner-vanished"] in e.summary
    # Control: the set-up completed and a step ran (and passed): no failure.
    done = [*lines, "Complete job name: build", *run_step("make", "ok"), "Post job cleanup."]
    assert explain_log(gh_log(done)).class_ == "unknown"
    # Control: a log that is not a runner's (no set-up lines) shows no failure.
    assert explain_log(gh_log(["just some text"])).class_ == "unknown"


def test_the_summary_names_a_composites_failing_step() -> None:
    # actions/powershell-github-script-pulls-404.log: the step is the local composite
    # path-filters; its github-script step is what failed.
    from pathlib import Path

    log = Path(__file__).parent / "real" / "actions" / "powershell-github-script-pulls-404.log"
    e = explain_log(log.read_bytes())
    assert e.step == "Run ./.github/actions/infrastructure/path-filters"
    assert "(at its step 'Run actions/github-script@v7.0.1')" in e.summary
    # Control: a step of the job's own is named once.
    e = explain("make: *** [all] Error 2", EXIT1)
    assert "at its step" not in e.summary and "step 'Run make test'" in e.summary
