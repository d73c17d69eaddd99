"""Pick the failing step's section of a log from what GitHub already says about the job.

The parser keeps every section that shows a failure and chooses one from the log alone
(log.py ``choose_section``). The land loop knows more, and this uses it first:

1. The jobs API's steps (``steps=``): the step whose conclusion is ``failure`` (then
   ``cancelled``, then ``timed_out``), matched to its section by its name (a step without
   ``name:`` is called by its ``Run …`` title, as the log shows it), by ``Set up job`` /
   ``Post …``, or by its position among the steps that ran. A step that failed under
   ``continue-on-error`` has the conclusion ``success`` there (actions/runner
   docs/adrs/0274-step-outcome-and-conclusion.md: the API's ``conclusion`` is the value
   after continue-on-error is applied; ``outcome``, before it, is not in the API), so a
   failing section whose step the API says succeeded is never blamed.
2. The check run's annotations (``annotations=``): the messages of level ``failure`` are
   the ``##[error]`` lines the runner turned into annotations; the section holding the first
   specific one (not a bare ``Process completed with exit code N.``) is the failing step.
3. The log alone.

What decided is recorded as the signal: ``steps-api``, ``annotations`` or ``log``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from landbot.triage.log import ParsedLog, Section, choose_section


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

FAILING_CONCLUSIONS = ("failure", "cancelled", "timed_out")
_SET_UP = "Set up job"
_COMPLETE = "Complete job"
_GENERIC = "Process completed with exit code"
# Titles this long may be cut by the API or the log: a prefix of the other one matches.
_PREFIX_MATCH = 40


@dataclass(frozen=True)
class ApiStep:
    name: str
    number: int | None
    conclusion: str | None


@dataclass(frozen=True)
class Pick:
    parsed: ParsedLog
    """The log with the failing step's section chosen."""
    step: str | None
    """The step's display name (the API's), else its ``Run …`` title."""
    number: int | None
    signal: str
    api_name: str | None = None
    """The failing step's name in the jobs API, when it named one."""


def _field(step: StepInput, name: str) -> Any:
    return step.get(name) if isinstance(step, Mapping) else getattr(step, name, None)


def api_steps(steps: Sequence[StepInput]) -> list[ApiStep]:
    out: list[ApiStep] = []
    for s in steps:
        name, number, conclusion = _field(s, "name"), _field(s, "number"), _field(s, "conclusion")
        out.append(
            ApiStep(
                str(name) if name is not None else "",
                number if isinstance(number, int) else None,
                str(conclusion) if conclusion is not None else None,
            )
        )
    return out


def same_title(a: str | None, b: str | None) -> bool:
    """Whether a step's API name and a section's title name the same step."""
    if not a or not b:
        return False
    x, y = " ".join(a.split()), " ".join(b.split())
    if x == y:
        return True
    if min(len(x), len(y)) >= _PREFIX_MATCH:
        return x.startswith(y) or y.startswith(x)
    return False


def pick(
    parsed: ParsedLog,
    *,
    steps: Sequence[StepInput] | None = None,
    annotations: Sequence[AnnotationLike] = (),
) -> Pick:
    """The failing step's section, by the strongest signal at hand."""
    title = parsed.step_title if parsed.first_error is not None else None
    if steps:
        chosen = _by_steps(parsed, api_steps(steps))
        if chosen is not None:
            return chosen
    if annotations:
        index = _by_annotations(parsed.sections, annotations)
        if index is not None:
            section = parsed.sections[index]
            return Pick(parsed.with_section(index), section.title, None, "annotations")
    return Pick(parsed, title, None, "log")


def _failing(api: Sequence[ApiStep]) -> ApiStep | None:
    for wanted in FAILING_CONCLUSIONS:
        failing = [s for s in api if s.conclusion == wanted]
        if failing:
            return failing[0]
    return None


def _by_steps(parsed: ParsedLog, api: Sequence[ApiStep]) -> Pick | None:
    failing = _failing(api)
    sections = parsed.sections
    # Of several failed steps, the first the log shows failing (a step the log shows no
    # section for, say a composite action's, is named but cannot be read).
    for wanted in FAILING_CONCLUSIONS:
        for step in (s for s in api if s.conclusion == wanted):
            index = _match(parsed, api, step)
            if index is not None:
                return Pick(
                    parsed.with_section(index), step.name, step.number, "steps-api", step.name
                )
    # No section for the failing step: at least never blame a step the API says passed
    # (a failing `continue-on-error` step).
    passed = [s.name for s in api if s.conclusion == "success"]
    blamable = [
        i for i, s in enumerate(sections) if not any(same_title(n, s.title) for n in passed)
    ]
    if parsed.chosen is not None and parsed.chosen not in blamable:
        if not blamable:
            return None
        index = blamable[choose_section([sections[i] for i in blamable]) or 0]
        name = failing.name if failing is not None else sections[index].title
        number = failing.number if failing is not None else None
        api_name = failing.name if failing is not None else None
        return Pick(parsed.with_section(index), name, number, "steps-api", api_name)
    if failing is None:
        return None
    title = parsed.step_title if parsed.first_error is not None else None
    # The API named the failing step, the log could not place it: keep the log's section.
    return Pick(parsed, failing.name or title, failing.number, "log", failing.name)


def _match(parsed: ParsedLog, api: Sequence[ApiStep], failing: ApiStep) -> int | None:
    """The kept section of the API's failing step, if it can be told."""
    sections = parsed.sections
    named = [i for i, s in enumerate(sections) if same_title(failing.name, s.title)]
    if named:
        return named[0]
    if failing.name == _SET_UP:
        return next((i for i, s in enumerate(sections) if s.title is None and not s.post), None)
    if failing.name.startswith("Post ") or failing.name == _COMPLETE:
        return next((i for i, s in enumerate(sections) if s.post), None)
    # By position: the steps that ran, in order, are the log's step sections in order
    # (skipped steps print nothing). A composite action prints its own steps' headers
    # too: those the log tells are a composite's are left out (log.py `_composite_of`);
    # when the counts still differ, position says nothing.
    ran = [
        s
        for s in sorted(api, key=lambda s: s.number if s.number is not None else 0)
        if s.conclusion != "skipped"
        and s.name not in (_SET_UP, _COMPLETE)
        and not s.name.startswith("Post ")
    ]
    post = parsed.post_line
    headers = [
        h
        for h in parsed.headers
        if (post is None or h[0] < post) and h[0] not in parsed.inner_headers
    ]
    if len(ran) != len(headers) or failing not in ran:
        return None
    line = headers[ran.index(failing)][0]
    return next((i for i, s in enumerate(sections) if s.line == line), None)


def _by_annotations(
    sections: Sequence[Section], annotations: Sequence[AnnotationLike]
) -> int | None:
    messages = [
        a.message.strip().splitlines()[0]
        for a in annotations
        if a.annotation_level == "failure" and a.message.strip()
    ]
    # A specific message places the step; "Process completed with exit code 1." fits many.
    ordered = [m for m in messages if not m.startswith(_GENERIC)]
    ordered += [m for m in messages if m.startswith(_GENERIC)]
    for message in ordered:
        for i, section in enumerate(sections):
            if any(_same_message(message, text) for text in section.error_texts):
                return i
    return None


def _same_message(message: str, text: str) -> bool:
    a, b = " ".join(message.split()), " ".join(text.split())
    if a == b:
        return True
    return min(len(a), len(b)) >= 20 and (a.startswith(b) or b.startswith(a))
