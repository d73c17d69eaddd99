"""pytest: node ids (with spaces), E lines, locations, headings, results."""

from __future__ import annotations

from landbot.triage.recognisers import pytest as rec

from .conftest import corpus, failures, kinds


def test_a_failure_block_and_the_summary() -> None:
    # tests/triage/real/python/markitdown-hatch-pytest.log, lines 186-216 and 392-407
    # (microsoft/markitdown, run 14431144510).
    block = kinds(rec.ECOSYSTEM, corpus("python/markitdown-hatch-pytest.log", 186, 216))
    assert block[188] == "pytest-test"
    assert block[211] == "pytest-error" and block[212] == "pytest-detail"
    assert block[214] == "pytest-location"
    summary = failures(rec.ECOSYSTEM, corpus("python/markitdown-hatch-pytest.log", 392, 407))
    assert summary[393] == "tests/test_cli_vectors.py::test_output_to_stdout[test_vector6]"
    assert len(summary) == 8
    result = kinds(rec.ECOSYSTEM, corpus("python/markitdown-hatch-pytest.log", 392, 407))
    assert result[392] == "pytest-summary" and result[407] == "pytest-result"


def test_the_warnings_summary_is_not_a_failure() -> None:
    # Control: the same log's warnings summary (lines 386-391) names files and lines too.
    assert failures(rec.ECOSYSTEM, corpus("python/markitdown-hatch-pytest.log", 386, 391)) == {}


def test_node_ids_with_spaces() -> None:
    # tests/triage/real/network/llms-from-scratch-link-check-remote-disconnected.log, 617-618:
    # nbval ids hold spaces (`::Cell 13 <img src=…`), with no " - message" after them.
    got = failures(
        rec.ECOSYSTEM,
        corpus("network/llms-from-scratch-link-check-remote-disconnected.log", 617, 618),
    )
    assert got[617].startswith("ch02/03_bonus_embedding-vs-matmul/embeddings-and-linear-layers")
    assert "::Cell 13 <img src=" in got[617]


def test_a_parametrised_id_keeps_its_brackets_and_drops_the_message() -> None:
    # tests/triage/real/python/pandas-numba-keyerror-then-artifact-and-codecov-errors.log,
    # 2310: the parametrisation holds dashes; the message follows ` - `.
    log = "python/pandas-numba-keyerror-then-artifact-and-codecov-errors.log"
    text = corpus(log, 2310, 2310).lines[0].text
    ident, msg = rec.node_id(text.removeprefix("FAILED "))
    assert ident == (
        "pandas/tests/window/test_numba.py::TestEngine::test_numba_vs_cython_rolling_methods"
        "[False-True-True-arithmetic_numba_supported_operators3-1-data0]"
    )
    assert msg.startswith("KeyError")


def test_doctest_unexpected_exception() -> None:
    # tests/triage/real/python/pandas-doctest-and-docstring-two-failed-steps.log, 2422-2441.
    got = kinds(
        rec.ECOSYSTEM,
        corpus("python/pandas-doctest-and-docstring-two-failed-steps.log", 2422, 2441),
    )
    assert got[2422] == "pytest-test" and got[2433] == "doctest"
