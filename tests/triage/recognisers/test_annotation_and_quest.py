"""The ``##[error]`` annotation (exit codes are wrappers) and quest findings."""

from __future__ import annotations

from landbot.triage.log import Line, TextIndex, clean_line
from landbot.triage.recognisers import annotation, quest

from .conftest import REAL, corpus, kinds

FIXTURES = REAL.parent / "fixtures"


def test_exit_code_annotations_are_told_apart() -> None:
    # tests/triage/real/rust/meilisearch-cargo-test-failed.log, 2806, and
    # tests/triage/real/javascript/pixijs-pr-title-policy.log, 148.
    exit_line = corpus("rust/meilisearch-cargo-test-failed.log", 2806, 2806).lines[0].text
    assert annotation.is_exit_code(exit_line)
    message = corpus("javascript/pixijs-pr-title-policy.log", 148, 148).lines[0].text
    assert not annotation.is_exit_code(message)
    assert kinds(
        annotation.ECOSYSTEM, corpus("javascript/pixijs-pr-title-policy.log", 148, 148)
    ) == {148: "error"}
    # markdownlint-cli2-action's `Failed with exit code: 1` is an exit code too
    # (tests/triage/real/lint/wtfpython-markdownlint-md042.log, 140), its finding (139)
    # is not.
    lint = corpus("lint/wtfpython-markdownlint-md042.log", 139, 140).lines
    assert annotation.is_exit_code(lint[1].text) and not annotation.is_exit_code(lint[0].text)


def test_quest_findings_and_base_notes() -> None:
    # tests/triage/fixtures/quest-policy.log, 106-108: landbot's own quest check (that
    # fixture is this project's tool output, made by tests/triage/fixtures/generate.py).
    raw = (FIXTURES / "quest-policy.log").read_bytes().split(b"\n")
    index = TextIndex(tuple(Line(n, clean_line(raw[n - 1])) for n in range(106, 109)))
    assert kinds(quest.ECOSYSTEM, index) == {106: "quest-base", 107: "quest", 108: "quest"}
