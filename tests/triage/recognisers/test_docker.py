"""BuildKit: step errors the final error repeats are causes; others are context."""

from __future__ import annotations

from landbot.triage.recognisers import docker as rec

from .conftest import corpus, failures, kinds

NODE = "docker/buildx-node-lts-slim-no-arm-v7-manifest.log"


def test_the_cause_and_a_consequence() -> None:
    # tests/triage/real/docker/buildx-node-lts-slim-no-arm-v7-manifest.log, 845-868.
    got = kinds(rec.ECOSYSTEM, corpus(NODE, 845, 868))
    assert got[846] == "docker-step-error"  # `no match for platform in manifest`
    assert got[852] == "docker-step-note"  # a lock `unavailable` the final error omits
    assert got[867] == "docker-failed"
    assert 852 not in failures(rec.ECOSYSTEM, corpus(NODE, 845, 868))


def test_without_the_final_line_every_step_error_counts() -> None:
    # Control: line 852 alone, with no `ERROR: failed to solve` in view.
    assert list(failures(rec.ECOSYSTEM, corpus(NODE, 851, 852))) == [852]


def test_the_step_heading_and_what_the_error_goes_on_with() -> None:
    # tests/triage/real/runner/dify-buildx-gha-cache-blob-not-found.log, 1148-1166.
    got = kinds(
        rec.ECOSYSTEM, corpus("runner/dify-buildx-gha-cache-blob-not-found.log", 1148, 1166)
    )
    assert got[1148] == "docker-step" and got[1153] == "docker-step-error"
    assert got[1155] == "docker-error-detail" and got[1156] == "docker-error-detail"
