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
    ("step-timeout", "timeout", {"output": ("##[error]The action has timed out.",)}),
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
        "dependencies-cancelled",
        "cancelled",
        {
            "command": "exit 1",
            "script": ('needs=\'{"test":{"result":"cancelled"},"lint":{"result":"success"}}\'',),
            "output": (EXIT1,),
        },
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
        "quest-finding",
        "policy",
        {"output": ("quest: quest/m0/a.md: quest title must be '# [XS|S|M|L|XL] Title'", EXIT1)},
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
        "vitest-failed",
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
    ("step-error", "genuine", {"output": ("make: *** [all] Error 2", EXIT1)}),
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
    assert ev.line in e.error_lines
    assert ev.text == next(x.text for x in e.excerpt if x.line == ev.line)


def test_every_signature_has_a_positive_case() -> None:
    assert {name for name, _c, _check in SIGNATURES} == {name for name, _c, _k in POSITIVE}


# Controls: text close to a signature that must not trigger it.
CONTROLS: list[tuple[str, tuple[str, ...], str, str]] = [
    # `Killed` without exit code 137 is not an OOM kill.
    ("out-of-memory", ("Killed 3 stale workers", EXIT1), "make test", "step-error"),
    # A network error in the PR's own tests, with no registry in sight, is the PR's.
    (
        "registry-network",
        ("tests/test_api.py: ConnectionResetError: Connection reset by peer", EXIT1),
        "make test",
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
]


@pytest.mark.parametrize(("name", "output", "command", "instead"), CONTROLS)
def test_signature_control(name: str, output: tuple[str, ...], command: str, instead: str) -> None:
    e = explain(*output, command=command)
    assert signature(e) == instead
    assert signature(e) != name


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
    assert e.error_lines == (5, 6)


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
