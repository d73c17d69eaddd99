"""Explain one failed job from its log: the entry point the GitHub-facing triage calls.

    with client.job_log(repo, job.id) as chunks:
        explanation = explain_log(chunks, steps=job.steps, rules=settings.triage.rules,
                                  max_bytes=settings.triage.max_log_bytes)

``explain_log`` reads the stream (bounded memory), then everything else is pure:
``explain_parsed`` maps the parsed log, the job's steps and the rules to a frozen
``LogExplanation`` whose ``to_dict()`` is the contract JSON of ``landbot triage log``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from landbot.core.model import TriageClass
from landbot.triage.classify import (
    Classification,
    Match,
    Rule,
    RuleLike,
    classify,
    compile_rules,
    pr_fault,
)
from landbot.triage.context import (
    TEST_KINDS,
    ExcerptLine,
    build_excerpt,
    failure_lines,
    find_marks,
)
from landbot.triage.log import (
    DEFAULT_CONTEXT_LINES,
    DEFAULT_MAX_BYTES,
    LogSource,
    ParsedLog,
    parse_log,
)
from landbot.triage.summary import summarize

ERROR_LINES_MAX = 50


class AnnotationLike(Protocol):
    """A check-run annotation as the checks API lists it."""

    @property
    def path(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def annotation_level(self) -> str: ...
    @property
    def message(self) -> str: ...


class StepLike(Protocol):
    """A step of a job as the jobs API lists it."""

    @property
    def name(self) -> str: ...
    @property
    def conclusion(self) -> str | None: ...


StepInput = StepLike | Mapping[str, Any]


@dataclass(frozen=True)
class LogExplanation:
    class_: TriageClass
    step: str | None
    """The failing step's display name when the jobs API gave it, else its `Run …` title."""
    error_lines: tuple[int, ...]
    summary: str
    excerpt: tuple[ExcerptLine, ...]
    evidence: tuple[Match, ...]
    exit_code: int | None
    step_line: int | None
    """Line of the failing step's `##[group]Run …` header in the log."""
    step_number: int | None
    """The failing step's `number` in the jobs API, when steps were given."""
    line_count: int
    truncated: bool
    """The failing step was longer than the bounds: its start was not kept."""
    step_title: str | None = None
    """The failing step's `Run …` title as the log shows it (the command it ran)."""
    signal: str = "log"
    """What picked the failing step and region: ``steps-api`` (the jobs API's step
    conclusions), ``annotations`` (the check run's annotations) or ``log`` (the log alone)."""
    failed_tests: tuple[str, ...] = ()
    """Identities of the failed tests the log names (pytest node ids, Go test names, …),
    as the flaky ledger keys them."""

    @property
    def pr_fault(self) -> bool | None:
        """True when the failure is the pull request's own; never True for `cancelled`."""
        return pr_fault(self.class_)

    def to_dict(self, *, full: bool = False) -> dict[str, Any]:
        """The contract object of `landbot triage log --json` (more fields with `full`)."""
        out: dict[str, Any] = {
            "class": self.class_,
            "step": self.step,
            "error_lines": list(self.error_lines),
            "summary": self.summary,
            "excerpt": [e.to_dict() for e in self.excerpt],
        }
        if full:
            out |= {
                "evidence": [e.to_dict() for e in self.evidence],
                "exit_code": self.exit_code,
                "step_line": self.step_line,
                "step_number": self.step_number,
                "pr_fault": self.pr_fault,
                "line_count": self.line_count,
                "truncated": self.truncated,
                "step_title": self.step_title,
                "signal": self.signal,
                "failed_tests": list(self.failed_tests),
            }
        return out

    def to_json(self, *, full: bool = False) -> str:
        return json.dumps(self.to_dict(full=full))


def explain_log(
    stream: LogSource,
    *,
    steps: Sequence[StepInput] | None = None,
    rules: Iterable[RuleLike | Mapping[str, str] | Rule] = (),
    max_bytes: int = DEFAULT_MAX_BYTES,
    context_lines: int = DEFAULT_CONTEXT_LINES,
) -> LogExplanation:
    """Read a job log (a binary file, an iterator of byte chunks, or bytes) and explain it.

    Rules are compiled before the log is read, so a bad rule fails fast with a
    LandbotError (one line naming the rule).
    """
    compiled = compile_rules(rules)
    parsed = parse_log(stream, max_bytes=max_bytes, context_lines=context_lines)
    return explain_parsed(parsed, steps=steps, rules=compiled)


def explain_parsed(
    parsed: ParsedLog,
    *,
    steps: Sequence[StepInput] | None = None,
    rules: Sequence[Rule] = (),
    annotations: Sequence[AnnotationLike] = (),
) -> LogExplanation:
    # `annotations` are accepted now so callers can pass them (issue 14); using them to
    # pick the step and the region comes with the step-aware parser.
    del annotations
    marks = find_marks(parsed)
    result: Classification = classify(parsed, marks, rules)
    title = parsed.step_title if parsed.first_error else None
    step, number = _failing_step(steps, title)
    evidence_lines = [e.line for e in result.evidence if e.line > 0]
    if result.class_ == "unknown":
        errors: tuple[int, ...] = ()
        excerpt: tuple[ExcerptLine, ...] = ()
    else:
        errors = tuple(sorted({*failure_lines(marks), *evidence_lines}))[:ERROR_LINES_MAX]
        must = [*evidence_lines, *([parsed.first_error] if parsed.first_error else [])]
        excerpt = build_excerpt(marks, parsed.region, must=must)
    return LogExplanation(
        class_=result.class_,
        step=step,
        error_lines=errors,
        summary=summarize(result, step=step, parsed=parsed, marks=marks),
        excerpt=excerpt,
        evidence=result.evidence,
        exit_code=parsed.exit_code if parsed.first_error else None,
        step_line=parsed.step_line,
        step_number=number,
        line_count=parsed.line_count,
        truncated=parsed.region_truncated,
        step_title=title,
        failed_tests=tuple(
            dict.fromkeys(m.subject for m in marks if m.subject and m.kind in TEST_KINDS)
        ),
    )


def _field(step: StepInput, name: str) -> Any:
    return step.get(name) if isinstance(step, Mapping) else getattr(step, name, None)


def _failing_step(
    steps: Sequence[StepInput] | None, log_title: str | None
) -> tuple[str | None, int | None]:
    """The failing step's display name from the jobs API, else the log's `Run …` title.

    The API marks the step that failed `failure` (a step killed by a cancellation or a
    timeout is `cancelled`). When several failed, the one whose default name is the log's
    title wins, else the first: later ones usually ran because of `if: always()`.
    """
    if steps:
        for wanted in ("failure", "cancelled", "timed_out"):
            failing = [s for s in steps if _field(s, "conclusion") == wanted]
            if not failing:
                continue
            chosen = next((s for s in failing if _field(s, "name") == log_title), failing[0])
            name = _field(chosen, "name")
            number = _field(chosen, "number")
            return (
                str(name) if name is not None else log_title,
                number if isinstance(number, int) else None,
            )
    return log_title, None
