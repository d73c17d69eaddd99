"""tsc: plain and problem-matcher-annotated diagnostics."""

from __future__ import annotations

from landbot.triage.recognisers import tsc as rec

from .conftest import corpus, failures, kinds

LOG = "javascript/autogpt-tsc-type-check.log"


def test_annotated_diagnostics_are_failures_with_their_location() -> None:
    # tests/triage/real/javascript/autogpt-tsc-type-check.log, 169-182 (the problem matcher
    # replaced tsc's lines by `##[error]path(line,col): error TSxxxx: …`).
    got = failures(rec.ECOSYSTEM, corpus(LOG, 169, 182))
    assert got == {
        170: "src/components/Flow.tsx(666,11)",
        180: "src/components/ui/form.stories.tsx(143,9)",
        181: "src/components/ui/form.stories.tsx(292,9)",
        182: "src/components/ui/form.stories.tsx(487,9)",
    }


def test_the_explanation_lines_are_not_failures() -> None:
    # Control: lines 172-179, tsc's indented `Type 'X' is not assignable …` chain.
    assert kinds(rec.ECOSYSTEM, corpus(LOG, 172, 179)) == {}
