"""The score of `landbot triage log` on the corpus of real job logs does not fall.

The figures are recorded in bench/triage_corpus_floor.json (and written up in
bench/README.md); bench/triage_corpus.py prints the table and every miss with why.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
FLOOR = json.loads((ROOT / "bench" / "triage_corpus_floor.json").read_text(encoding="utf-8"))


def _scorer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("triage_corpus", ROOT / "bench/triage_corpus.py")
    assert spec is not None and spec.loader is not None
    if "triage_corpus" in sys.modules:
        return sys.modules["triage_corpus"]
    module = importlib.util.module_from_spec(spec)
    # Registered first: its dataclasses look their module up while they are made.
    sys.modules["triage_corpus"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def scores() -> list[object]:
    scorer = _scorer()
    return list(scorer.run(scorer.load_labels()))


def test_the_corpus_is_the_size_recorded() -> None:
    scorer = _scorer()
    labels = scorer.load_labels()
    assert len(labels) >= FLOOR["logs"], "logs were removed from tests/triage/real/"
    assert len({label.ecosystem for label in labels}) >= FLOOR["ecosystems"]


@pytest.mark.parametrize("mode", ["log", "api"])
def test_the_score_does_not_fall(scores: list[object], mode: str) -> None:
    scorer = _scorer()
    got = scorer.totals([s for s in scores if s.mode == mode])  # type: ignore[attr-defined]
    floor = FLOOR[mode]
    misses = [
        f"{s.label.name}: {'; '.join(s.why)}"  # type: ignore[attr-defined]
        for s in scores
        if s.mode == mode and not s.all_ok  # type: ignore[attr-defined]
    ]
    for point in ("class", "step", "lines", "all"):
        assert got[point] >= floor[point] - 1e-9, (
            f"{mode}: {point} {got[point]:.1%} fell below the recorded {floor[point]:.1%}; "
            "misses:\n" + "\n".join(misses)
        )


def test_a_wrong_answer_is_scored_wrong() -> None:
    # The scorer's control: an explanation that names another class, another step and no
    # lines scores zero on every point.
    scorer = _scorer()
    label = scorer.load_labels()[0]
    from landbot.triage.explain import LogExplanation

    wrong = LogExplanation(
        class_="unknown" if "unknown" not in label.classes else "genuine",
        step="not the step",
        error_lines=(),
        summary="",
        excerpt=(),
        evidence=(),
        exit_code=None,
        step_line=None,
        step_number=None,
        line_count=0,
        truncated=False,
        step_title="not the step",
    )
    s = scorer.score(label, wrong, "log")
    assert not s.class_ok and not s.step_ok and not s.all_ok
    assert not s.lines_ok or not label.see
