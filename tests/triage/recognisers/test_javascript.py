# ruff: noqa: E501  (real log lines are kept whole)
"""vitest, jest-style bullets, mocha, and uncaught Node errors."""

from __future__ import annotations

from landbot.triage.recognisers import javascript as rec

from .conftest import corpus, failures, found, kinds, pasted


def test_vitest_names_the_test_with_its_file() -> None:
    # tests/triage/real/javascript/n8n-vitest-test-timeout.log, 13455-13456, 13610-13617.
    log = "javascript/n8n-vitest-test-timeout.log"
    got = kinds(rec.ECOSYSTEM, corpus(log, 13455, 13456))
    assert got == {13455: "test-failed", 13456: "test-reason"}
    named = failures(rec.ECOSYSTEM, corpus(log, 13610, 13617))
    assert named == {
        13610: "src/plugins/codemirror/typescript/worker/typescript.worker.test.ts"
        " > Typescript Worker > should return diagnostics"
    }
    assert kinds(rec.ECOSYSTEM, corpus(log, 13611, 13617))[13616] == "test-summary"


def test_passing_vitest_lines_are_not_marked() -> None:
    # Control: n8n lines 274-275 (`✓ should return a valid uri (3 ms)`).
    assert kinds(rec.ECOSYSTEM, corpus("javascript/n8n-vitest-test-timeout.log", 274, 275)) == {}


# A jest run in a GitHub Actions job log (`/home/runner/work/MessageAI/MessageAI`), pasted
# whole in a stored public file (the code index's file id 1595468616; it names no
# repository): its first 31 lines after the `> jest --runInBand --passWithNoTests` echo.
JEST = """\
FAIL __tests__/services/urgencyClassifier.test.ts (8.518 s)
  ● Console

    console.log
      Urgency Classifier Performance:

      at Object.log (__tests__/services/urgencyClassifier.test.ts:423:13)

    console.log
      True Positives: 15/20

      at Object.log (__tests__/services/urgencyClassifier.test.ts:424:13)

    console.log
      False Positives: 0/20

      at Object.log (__tests__/services/urgencyClassifier.test.ts:425:13)

    console.log
      Precision: 100.0%

      at Object.log (__tests__/services/urgencyClassifier.test.ts:426:13)

  ● Urgency Classifier - Keyword Detection › Explicit Urgency Keywords › should detect URGENT keyword (high confidence)

    expect(received).toBe(expected) // Object.is equality

    Expected: "emergency"
    Received: "reschedule"
"""

# The same log, a passing file with console output: `PASS …` then `  ● Console`.
JEST_PASSING = """\
PASS src/hooks/__tests__/useMessages.test.ts
  ● Console

    console.log
      👂 Subscribing to messages (paginated) for: conv-123"""


def test_jest_bullet_gets_its_file() -> None:
    got = failures(rec.ECOSYSTEM, pasted(JEST.rstrip("\n")))
    assert got == {
        1: "__tests__/services/urgencyClassifier.test.ts",
        24: "__tests__/services/urgencyClassifier.test.ts > Urgency Classifier - Keyword"
        " Detection > Explicit Urgency Keywords > should detect URGENT keyword (high confidence)",
    }


def test_jest_console_blocks_and_passing_files_are_not_failures() -> None:
    assert failures(rec.ECOSYSTEM, pasted(JEST_PASSING)) == {}


def test_mocha_inline_and_summary() -> None:
    # tests/triage/real/javascript/mongoose-mocha-timeout-2000ms.log, 1745 and 4882-4887.
    log = "javascript/mongoose-mocha-timeout-2000ms.log"
    assert failures(rec.ECOSYSTEM, corpus(log, 1740, 1750)) == {}  # no summary in view
    got = found_subjects(corpus(log, 4882, 4887))
    assert got[4884] == "model: findOneAndReplace: middleware works with exec() (gh-439)"
    assert kinds(rec.ECOSYSTEM, corpus(log, 4882, 4887))[4882] == "mocha-summary"


def found_subjects(index: object) -> dict[int, str]:
    return {n: s for n, (k, s) in found(rec.ECOSYSTEM, index).items() if k == "mocha-failed"}  # type: ignore[arg-type]


def test_an_uncaught_error_with_its_stack() -> None:
    # tests/triage/real/javascript/htmx-npm-test-econnrefused.log, 169-178.
    got = kinds(rec.ECOSYSTEM, corpus("javascript/htmx-npm-test-econnrefused.log", 169, 178))
    assert got[169] == "js-uncaught" and got[177] == "js-uncaught"
    assert got[172] == "js-error-field"  # `code: 'ECONNREFUSED',`


def test_require_stack_under_cannot_find_module() -> None:
    # tests/triage/real/javascript/prettier-eslint-missing-module.log, 207-209.
    got = kinds(rec.ECOSYSTEM, corpus("javascript/prettier-eslint-missing-module.log", 207, 212))
    assert got[208] == "js-require-stack" and got[209] == "js-require-stack"


def test_npm_echoes_the_script_it_runs() -> None:
    # htmx lines 158-159: `> htmx.org@2.0.4 test` then the command.
    got = kinds(rec.ECOSYSTEM, corpus("javascript/htmx-npm-test-econnrefused.log", 158, 159))
    assert got == {159: "npm-script"}


def test_cypress_run_table_names_the_failed_spec() -> None:
    # tests/triage/real/javascript/n8n-cypress-e2e-no-error-annotation.log, 1592-1598: the
    # failed spec's row (1594) and, as the control, skipped specs' rows (1596, 1598).
    log = "javascript/n8n-cypress-e2e-no-error-annotation.log"
    assert failures(rec.ECOSYSTEM, corpus(log, 1592, 1598)) == {1594: "5-ndv.cy.ts"}


def test_octokit_http_error_fields_each_once() -> None:
    # tests/triage/real/actions/powershell-github-script-pulls-404.log, 202-255: the
    # `RequestError [HttpError]` (202), its `status` (207), the response's `url` (209; the
    # response's own `status` at 210 repeats the field), `message` (236), `method` (242).
    got = kinds(rec.ECOSYSTEM, corpus("actions/powershell-github-script-pulls-404.log", 202, 255))
    assert [n for n, k in got.items() if k == "js-error-field"] == [207, 209, 236, 242]


def test_under_a_jest_bullet_the_message_values_and_where() -> None:
    # tests/triage/real/javascript/pixijs-jest-visual-pixel-diff-macos.log, 238-256: the
    # matcher (243), `Expected:`/`Received:` (245-246), the test's frame (256); the code
    # frame (248-254) is not marked.
    log = "javascript/pixijs-jest-visual-pixel-diff-macos.log"
    got = found(rec.ECOSYSTEM, corpus(log, 238, 256))
    assert {n: k for n, (k, _s) in got.items()} == {
        238: "jest-file",
        239: "jest-failed",
        241: "jest-failed",
        243: "jest-message",
        245: "jest-value",
        246: "jest-value",
        256: "jest-location",
    }
    assert got[256][1] == "tests/visual/visuals.test.ts:98:29"


def test_a_jest_frame_in_node_modules_is_not_where() -> None:
    # Control: tests/triage/real/javascript/n8n-mariadb-insights-hook-timeout.log,
    # 863-869: the message (866) is marked, the jest-worker frame in node_modules (868) is
    # not; the passing file after it (870-872) is not.
    log = "javascript/n8n-mariadb-insights-hook-timeout.log"
    got = kinds(rec.ECOSYSTEM, corpus(log, 863, 872))
    assert got == {863: "jest-file", 864: "jest-failed", 866: "jest-message"}


def test_vitepress_build_error_its_message_and_file() -> None:
    # tests/triage/real/docs/starship-vitepress-enoent-preset.log, 163-172.
    got = found(rec.ECOSYSTEM, corpus("docs/starship-vitepress-enoent-preset.log", 163, 172))
    assert got[168] == ("build-error", "")
    assert got[169][0] == "build-error-detail"
    assert got[170] == (
        "build-error-file",
        "/home/runner/work/starship/starship/docs/ar-SA/presets/catppuccin-powerline.md",
    )
    # The spinner's `✖ building client + server bundles...` (167) and the repeat of the
    # message after the file (171-172) are not marked.
    assert {167, 171, 172}.isdisjoint(got)


def test_npm_and_pnpm_errors() -> None:
    # tests/triage/real/javascript/niaoleme-npm-install-etarget.log, 6187-6193: the code
    # (6189) and two message lines; npm's `A complete log …` (6193) is not marked.
    log = "javascript/niaoleme-npm-install-etarget.log"
    got = found(rec.ECOSYSTEM, corpus(log, 6187, 6193))
    assert got == {
        6189: ("npm-error", "ETARGET"),
        6190: ("npm-error-detail", ""),
        6191: ("npm-error-detail", ""),
    }
    # tests/triage/real/javascript/tailwindcss-pnpm-publish-bundled-deps.log, 1394-1402:
    # pnpm's code (1400); its `WARN Unsupported platform` lines (1398-1399) are not.
    log = "javascript/tailwindcss-pnpm-publish-bundled-deps.log"
    assert failures(rec.ECOSYSTEM, corpus(log, 1394, 1402)) == {
        1400: "ERR_PNPM_BUNDLED_DEPENDENCIES_WITHOUT_HOISTED"
    }
