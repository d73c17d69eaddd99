"""Put a failed job in a class, with the evidence that decided it.

Pure code over the parser's region (the chosen failing step's lines around its first
error and its last lines): no I/O. A repository's own rules (``[[triage.rules]]``: a
regular expression and a class) are tried first; then the built-in signatures in a fixed
order, most specific first, because a runner that shut down or a job that hit its time
limit also shows an exit code and maybe failed tests that are only its consequence:

    runner shut down / lost communication / deprovisioned   -> infrastructure
    maximum execution time / step timeout-minutes /
        ``go test`` panicked on its -timeout                -> timeout
    operation cancelled / cancelled by concurrency or fail-fast /
        gate whose needs were cancelled                     -> cancelled
    the step's processes got SIGTERM/SIGINT (exit 143/130)  -> infrastructure
    out of memory / no space left on device                 -> infrastructure
    a pod or VM never provisioned, a service container that never started,
        an action that failed to download, the cache service failing,
        a service's rate limit, a service's 5xx in the step's error,
        Dependabot's updater crashing (``unknown_error``)   -> infrastructure
    ``quest:`` findings                                     -> policy
    a gate on the pull request itself (title, labels, changelog, milestone,
        DCO sign-off, "allow edits"): said by its error, the gate's action, its
        jobs API name, or the job's name or workflow file (not when a test, a
        tool's diagnostic or the script itself failed)     -> policy
    network error reaching a package registry, or a container registry failing
        to serve a layer                                    -> flaky
    DNS or connection failure at the step's end, never to the job's own machine
        (localhost) nor after another failure; with failed tests, one reaching a
        remote host and no other error a test stated; a test that passed on
        retry                                               -> flaky
    failed tests, a traceback, any other error              -> genuine

The signatures themselves are in signatures.py, in this order (``SIGNATURES``).
Each signature is weighed by where it sits. The runner's own messages count anywhere in
the failing step (they are the runner's, never the tools'). Everything a tool prints
counts only *near the end*: in the step's last lines or just around its first error, where
the cause of a failure is printed (``NEAR_LINES``); a phrase ("could result in out of
memory errors") thousands of lines above does not decide.

A log without a failure is ``unknown``. A cancelled job is never the pull request's fault:
a repository rule that would blame the PR for one is recorded but does not win.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeGuard, get_args

from landbot.core.linear import LinearError, LinearPattern, compile_linear
from landbot.core.model import NOT_ITS_FAULT, TriageClass
from landbot.errors import LandbotError
from landbot.triage.context import Mark
from landbot.triage.log import ParsedLog
from landbot.triage.signatures import SIGNATURES, View

__all__ = ["SIGNATURES", "Classification", "Match", "Rule", "classify", "compile_rules", "pr_fault"]

# The pull request's own failures; core's NOT_ITS_FAULT are not; the rest cannot tell (a
# timeout is a hang in the PR's code, or a slow runner).
PR_OWN: frozenset[TriageClass] = frozenset({"genuine", "policy"})

RULE_CLASSES: tuple[TriageClass, ...] = tuple(c for c in get_args(TriageClass) if c != "unknown")


def pr_fault(cls: TriageClass) -> bool | None:
    """Whether a failure of class `cls` is the pull request's own (None: cannot tell)."""
    if cls in NOT_ITS_FAULT:
        return False
    return True if cls in PR_OWN else None


def _is_rule_class(value: object) -> TypeGuard[TriageClass]:
    return value in RULE_CLASSES


@dataclass(frozen=True, slots=True)
class Match:
    """Why a class was chosen: the signature's name and the line it matched."""

    signature: str
    line: int
    text: str

    def to_dict(self) -> dict[str, int | str]:
        return {"signature": self.signature, "line": self.line, "text": self.text}


@dataclass(frozen=True, slots=True)
class Classification:
    class_: TriageClass
    evidence: tuple[Match, ...] = ()


@dataclass(frozen=True, slots=True)
class Rule:
    """A repository's rule, compiled: `pattern` searched in each line of the failing step
    (by RE2 for a rule from a repository's file: linear time, see core/linear.py)."""

    index: int
    source: str
    pattern: re.Pattern[str] | LinearPattern
    class_: TriageClass

    @property
    def signature(self) -> str:
        return f"rule {self.index}: /{self.source}/"


class RuleLike(Protocol):
    pattern: str
    class_: str


def compile_rules(rules: Iterable[RuleLike | Mapping[str, str] | Rule]) -> tuple[Rule, ...]:
    """Compile `[[triage.rules]]`, or fail with one line naming the bad rule and the fix."""
    out: list[Rule] = []
    for number, rule in enumerate(rules, 1):
        if isinstance(rule, Rule):
            out.append(rule)
            continue
        if isinstance(rule, Mapping):
            source, cls = rule.get("pattern"), rule.get("class", rule.get("class_"))
        else:
            source, cls = rule.pattern, rule.class_
        where = f"triage rule {number} (pattern {source!r})"
        if not isinstance(source, str) or not source:
            raise LandbotError(f"{where} has no pattern; give it a regular expression")
        if not _is_rule_class(cls):
            raise LandbotError(f"{where} has class {cls!r}; use one of {', '.join(RULE_CLASSES)}")
        compiled: re.Pattern[str] | LinearPattern
        try:
            if getattr(rule, "linear", False):
                # A repository's rule (repo_config.effective marks it): never backtracking.
                compiled = compile_linear(source, multiline=True)
            else:
                compiled = re.compile(source, re.MULTILINE)
        except (re.error, LinearError) as exc:
            raise LandbotError(
                f"{where} is not a valid regular expression ({exc}); fix it in [[triage.rules]]"
            ) from None
        out.append(Rule(number, source, compiled, cls))
    return tuple(out)


def classify(
    parsed: ParsedLog,
    marks: Sequence[Mark],
    rules: Sequence[Rule] = (),
    *,
    step_name: str | None = None,
) -> Classification:
    """The class of the failure the parser found, with its evidence (decisive first).

    `step_name` is the failing step's display name in the jobs API, when known: a gate's
    name (``Check PR title``) is evidence for ``policy``.
    """
    if parsed.first_error is None:
        return Classification("unknown")
    view = View(parsed, marks, step_name)
    builtin = _builtin(view)
    for rule in rules:
        found = parsed.output.search(rule.pattern)
        if found is None:
            continue
        hit = parsed.output.lines[found[0]]
        match = Match(rule.signature, hit.number, hit.text)
        if builtin.class_ == "cancelled" and pr_fault(rule.class_):
            # Never blame the PR for a cancelled job, whatever a rule says.
            return Classification(builtin.class_, (*builtin.evidence, match))
        return Classification(rule.class_, (match,))
    return builtin


def _builtin(view: View) -> Classification:
    for name, cls, check in SIGNATURES:
        hit = check(view)
        if hit is not None:
            return Classification(cls, (Match(name, hit.number, hit.text),))
    # Unreachable while step-error matches any first error; kept total for safety.
    return Classification("genuine")
