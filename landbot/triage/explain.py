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
from dataclasses import dataclass, field
from typing import Any

from landbot.core.model import TriageClass
from landbot.triage.baseline import Baseline
from landbot.triage.classify import (
    Classification,
    Match,
    Rule,
    RuleLike,
    classify,
    compile_rules,
    pr_fault,
)
from landbot.triage.compare import fresh_in_parsed, fresh_lines, weigh
from landbot.triage.context import (
    NAMES,
    TEST_KINDS,
    ExcerptLine,
    Mark,
    build_excerpt,
    failure_lines,
    find_marks,
    states,
)
from landbot.triage.generic import EARLIER, earlier_cause
from landbot.triage.log import (
    DEFAULT_CONTEXT_LINES,
    DEFAULT_MAX_BYTES,
    LogSource,
    ParsedLog,
    parse_log,
)
from landbot.triage.recognisers import ECOSYSTEMS, Ecosystem
from landbot.triage.steps import AnnotationLike, StepInput, StepLike, pick
from landbot.triage.summary import summarize

__all__ = ["AnnotationLike", "Baseline", "LogExplanation", "StepInput", "StepLike", "explain_log"]

ERROR_LINES_MAX = 50


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
    parsed: ParsedLog | None = field(default=None, repr=False, compare=False)
    """The log with the failing step chosen as explained (its region, first error and
    script), which may differ from the log's own choice when the jobs API decided."""

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
    baselines: Sequence[Baseline] = (),
) -> LogExplanation:
    """Read a job log (a binary file, an iterator of byte chunks, or bytes) and explain it.

    Rules are compiled before the log is read, so a bad rule fails fast with a
    LandbotError (one line naming the rule). `baselines`: passing logs of the same job
    (baseline.read_baseline); a line one of them printed too is not why this run failed.
    """
    compiled = compile_rules(rules)
    parsed = parse_log(stream, max_bytes=max_bytes, context_lines=context_lines)
    return explain_parsed(parsed, steps=steps, rules=compiled, baselines=baselines)


def explain_parsed(
    parsed: ParsedLog,
    *,
    steps: Sequence[StepInput] | None = None,
    rules: Sequence[Rule] = (),
    annotations: Sequence[AnnotationLike] = (),
    baselines: Sequence[Baseline] = (),
    ecosystems: Sequence[Ecosystem] = ECOSYSTEMS,
) -> LogExplanation:
    """Explain a parsed log; `steps` (the jobs API's) and `annotations` (the check run's)
    pick the failing step's section before the log is read (steps.py); `baselines` (the
    same job's passing logs) demote the lines they show too (compare.py). `ecosystems`:
    the recognisers to run (the corpus bench turns them off to measure the generic
    rules alone)."""
    chosen = pick(parsed, steps=steps, annotations=annotations)
    parsed = chosen.parsed
    if baselines:
        # What is new in this run says why it failed (compare.py): the recognisers' and
        # the generic rules' lines that a passing log printed too are not reported.
        fresh = fresh_in_parsed(parsed, baselines)
        known = frozenset(x.number for x in parsed.region if not x.header) - fresh
        marks = find_marks(parsed, ecosystems=ecosystems, known=known)
        if not any(states(m) for m in marks):
            marks = weigh(find_marks(parsed, ecosystems=ecosystems), fresh, parsed.region)
    else:
        marks = find_marks(parsed, ecosystems=ecosystems)
    result: Classification = classify(parsed, marks, rules, step_name=chosen.api_name)
    # The failing step printed nothing of its own: the step before it may say why.
    earlier = earlier_cause(parsed)
    if earlier and baselines:
        # A warning the green run's step printed too is not why this run failed.
        fresh_before = fresh_lines(earlier, baselines, None)
        earlier = tuple(x for x in earlier if x.number in fresh_before)
    if earlier:
        marks = (*(Mark(x.number, EARLIER, NAMES, x.text) for x in earlier), *marks)
    title = parsed.step_title if parsed.first_error else None
    step, number = chosen.step, chosen.number
    evidence_lines = [e.line for e in result.evidence if e.line > 0]
    if result.class_ == "unknown":
        errors: tuple[int, ...] = ()
        excerpt: tuple[ExcerptLine, ...] = ()
    else:
        # The classifier's evidence is an error line when it is not the generic
        # "genuine": a timeout's or a runner's message is what a person must read.
        errors = failure_lines(
            marks,
            also=evidence_lines if result.class_ != "genuine" else (),
            limit=ERROR_LINES_MAX,
        )
        must = [*evidence_lines, *([parsed.first_error] if parsed.first_error else [])]
        excerpt = build_excerpt(marks, (*earlier, *parsed.region), must=must)
        excerpt = _with_job_lines(excerpt, parsed, result)
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
        signal=chosen.signal,
        failed_tests=tuple(
            dict.fromkeys(m.subject for m in marks if m.subject and m.kind in TEST_KINDS)
        ),
        parsed=parsed,
    )


def _with_job_lines(
    excerpt: tuple[ExcerptLine, ...], parsed: ParsedLog, result: Classification
) -> tuple[ExcerptLine, ...]:
    """The job's set-up lines (its name, its workflow file) when they are evidence, or
    when the failing step is a gate on the pull request: they name the gate, and they sit
    outside the step's region, so the excerpt builder cannot see them."""
    job = [line for line in (parsed.workflow, parsed.job_name) if line is not None]
    numbers = {line.number for line in job}
    named = any(e.line in numbers for e in result.evidence)
    if not job or not (named or any(e.signature == "pr-gate" for e in result.evidence)):
        return excerpt
    shown = {e.line for e in excerpt}
    extra = [ExcerptLine(line.number, line.text) for line in job if line.number not in shown]
    return tuple(sorted([*excerpt, *extra], key=lambda e: e.line))
