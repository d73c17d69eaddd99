"""The same way (issue 27.1): normalised error lines, and a job's state on the base."""

from __future__ import annotations

from landbot.github.models import CheckRun
from landbot.triage.base_red import base_state, error_signature, newest_by_name, normalise, same_way


def run(conclusion: str | None, status: str = "completed", id_: int = 1) -> CheckRun:
    return CheckRun(id_, "test", status, conclusion, None, None, "github-actions", None, None)


def test_what_changes_between_runs_is_taken_out() -> None:
    a = normalise("2026-12-07T17:24:57.123Z FAILED test_x - took 1.25s at /tmp/pytest-3/x.py")
    b = normalise("2026-12-08T01:02:03.999Z FAILED test_x - took 9.5s at /tmp/pytest-9/x.py")
    assert a == b
    assert normalise("commit 0123456789abcdef") == normalise("commit fedcba9876543210")
    # control: other words are another failure
    assert normalise("FAILED test_x") != normalise("FAILED test_y")


def test_a_signature_is_the_error_lines_only() -> None:
    excerpt = [(1, "setup"), (2, "E assert 1 == 2"), (3, "FAILED t::x")]
    assert error_signature((2, 3), excerpt) == ("E assert <n> == <n>", "FAILED t::x")
    assert error_signature((), excerpt) == ()


def test_the_same_way_needs_lines_on_both_sides() -> None:
    assert same_way(("x",), ("x",))
    assert not same_way((), ())
    assert not same_way(("x",), ("y",))


def test_each_base_state() -> None:
    assert base_state(None) == "absent"
    assert base_state(run(None, "in_progress")) == "pending"
    assert base_state(run("success")) == "passed"
    assert base_state(run("skipped")) == "passed"
    assert base_state(run("failure"), ("x",), ("x",)) == "failed_same"
    assert base_state(run("failure"), ("y",), ("x",)) == "failed_other"
    assert base_state(run("failure")) == "failed_other"
    assert base_state(run("cancelled")) == "pending"
    assert newest_by_name([run("failure", id_=1), run("success", id_=2)])["test"].id == 2
