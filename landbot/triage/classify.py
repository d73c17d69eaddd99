"""Put a failed job in a class, with the evidence that decided it.

Pure code over the parser's region (the failing step's lines around the first error): no
I/O. A repository's own rules (``[[triage.rules]]``: a regular expression and a class) are
tried first; then the built-in signatures in a fixed order, most specific first, because a
runner that shut down or a job that hit its time limit also shows an exit code and maybe
failed tests that are only its consequence:

    runner shut down / lost communication  -> infrastructure
    maximum execution time / step timeout  -> timeout
    operation cancelled / gate whose needs were cancelled -> cancelled
    out of memory (Killed + 137) / no space left on device -> infrastructure
    ``quest:`` findings                    -> policy
    network error reaching a package registry -> flaky
    failed tests, a traceback, any other error -> genuine

A log without a failure is ``unknown``. A cancelled job is never the pull request's fault:
a repository rule that would blame the PR for one is recorded but does not win.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeGuard, get_args

from landbot.core.model import NOT_ITS_FAULT, TriageClass
from landbot.errors import LandbotError
from landbot.triage.context import TEST_KINDS, Mark
from landbot.triage.log import Line, ParsedLog

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
    """A repository's rule, compiled: `pattern` searched in each line of the failing step."""

    index: int
    source: str
    pattern: re.Pattern[str]
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
        try:
            compiled = re.compile(source, re.MULTILINE)
        except re.error as exc:
            raise LandbotError(
                f"{where} is not a valid regular expression ({exc}); fix it in [[triage.rules]]"
            ) from None
        out.append(Rule(number, source, compiled, cls))
    return tuple(out)


# --- built-in signatures ---------------------------------------------------------------


@dataclass(frozen=True)
class _View:
    parsed: ParsedLog
    marks: Sequence[Mark]

    def grep(
        self, pattern: re.Pattern[str], hints: Sequence[str], *, ignore_case: bool = False
    ) -> list[Line]:
        """Output lines matching `pattern` among those holding one of `hints`."""
        lines = self.parsed.output.lines
        found = self.parsed.output.grep(pattern, hints, ignore_case=ignore_case)
        return [lines[idx] for idx, _m in found]

    def first(
        self, pattern: re.Pattern[str], hints: Sequence[str], *, ignore_case: bool = False
    ) -> Line | None:
        found = self.grep(pattern, hints, ignore_case=ignore_case)
        return found[0] if found else None


Check = Callable[[_View], Line | None]


def _regex(pattern: str, *hints: str, ignore_case: bool = False) -> Check:
    compiled = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    lowered = tuple(h.lower() for h in hints) if ignore_case else hints

    def check(view: _View) -> Line | None:
        return view.first(compiled, lowered, ignore_case=ignore_case)

    return check


_KILLED = re.compile(r"\bKilled\b")
_OOM_WORDS = (
    "out of memory",
    "oom-kill",
    "oomkill",
    "oom kill",
    "killed signal terminated program",
    "cannot allocate memory",
)
_OOM = re.compile(
    r"\bout of memory\b|\boom[- ]?kill|Killed signal terminated program|Cannot allocate memory",
    re.IGNORECASE,
)


def _out_of_memory(view: _View) -> Line | None:
    hit = view.first(_OOM, _OOM_WORDS, ignore_case=True)
    if hit is not None:
        return hit
    # The kernel's OOM killer sends SIGKILL: the shell prints `Killed`, exit code 137.
    if view.parsed.exit_code == 137:
        return view.first(_KILLED, ["Killed"])
    return None


_NETWORK_WORDS = (
    "ECONNRESET",
    "ETIMEDOUT",
    "ESOCKETTIMEDOUT",
    "EAI_AGAIN",
    "ECONNREFUSED",
    "ENETUNREACH",
    "EHOSTUNREACH",
    "socket hang up",
    "Read timed out",
    "Connection reset by peer",
    "Connection timed out",
    "Connection aborted",
    "Connection broken",
    "RemoteDisconnected",
    "IncompleteRead",
    "Temporary failure in name resolution",
    "Could not resolve host",
    "TLS handshake timeout",
    "i/o timeout",
    "network timeout",
    "502 Bad Gateway",
    "503 Service Unavailable",
    "504 Gateway Time",
)
_NETWORK = re.compile("|".join(re.escape(w) for w in _NETWORK_WORDS))
_REGISTRY = re.compile(
    r"\bnpm (?:ERR!|error|warn|WARN)|\byarn\b|\bpnpm\b|ERR_PNPM|\bpip\b|pypi\.org|"
    r"pythonhosted\.org|registry\.npmjs\.org|registry\.yarnpkg\.com|npm\.pkg\.github\.com|"
    r"crates\.io|proxy\.golang\.org|sum\.golang\.org|repo1?\.maven|maven\.org|gradle\.org|"
    r"rubygems\.org|archive\.ubuntu\.com|security\.ubuntu\.com|deb\.debian\.org|"
    r"packages\.microsoft\.com|registry-1\.docker\.io|ghcr\.io|nuget\.org|"
    r"conda\.anaconda\.org|\bapt-get\b"
)
_INSTALL = re.compile(
    r"\bnpm (?:ci|install|i|update)\b|\byarn(?: install)?[ \t]*$|\byarn install\b|"
    r"\bpnpm (?:install|i)\b|\bpip3? install\b|-m pip install\b|\buv (?:sync|pip install|add)\b|"
    r"\bpoetry install\b|\bpipenv install\b|\bapt(?:-get)? (?:update|install)\b|"
    r"\bbundle install\b|\bgo mod download\b|\bcargo fetch\b|\bdocker pull\b|"
    r"\bconda install\b|actions/setup-(?:node|python|go|java)\b",
    re.MULTILINE,
)
_REGISTRY_NEAR = 30
_NETWORK_HITS = 50


def _registry_network(view: _View) -> Line | None:
    """A network error while talking to a package registry: worth a re-run."""
    lines = view.parsed.output.lines
    found = view.parsed.output.grep(_NETWORK, _NETWORK_WORDS)
    hits = [idx for idx, _m in found][:_NETWORK_HITS]
    if not hits:
        return None
    for idx in hits:
        if any(
            _REGISTRY.search(lines[j].text) for j in range(max(0, idx - _REGISTRY_NEAR), idx + 1)
        ):
            return lines[idx]
    # The step itself installs packages; unless tests failed (then the error may be theirs).
    command = "\n".join((view.parsed.step_title or "", *view.parsed.step_script))
    tests_failed = any(m.kind in TEST_KINDS for m in view.marks)
    if _INSTALL.search(command) and not tests_failed:
        return lines[hits[0]]
    return None


_ANY_RESULT = re.compile(r'"result"|→ ')
_RESULT_JSON = re.compile(r'"result"\s*:\s*"(?P<result>success|failure|cancelled|skipped)"')
# re-actors/alls-green: `📝 build → ❌ cancelled [required to succeed]`
_RESULT_ALLS_GREEN = re.compile(
    r"→ \S+ (?P<result>success|failure|cancelled|skipped) "
    r"\[(?P<kind>required to succeed|allowed to fail)\]"
)


def _dependencies_cancelled(view: _View) -> Line | None:
    """A gate job that failed only because jobs it needs were cancelled.

    The results show in the echoed script (``${{ toJSON(needs) }}`` is interpolated before
    the runner prints it) or in the gate's output.
    """
    parsed = view.parsed
    sources: list[tuple[Line | None, str]] = [(None, text) for text in parsed.step_script]
    sources += [(line, line.text) for line in parsed.region if line.header]
    sources += [(line, line.text) for line in view.grep(_ANY_RESULT, ('"result"', "→ "))]
    seen = False
    at: Line | None = None
    for line, text in sources:
        for result, required in _results(text):
            if not required:
                continue
            if result == "failure":
                return None
            if result == "cancelled":
                seen = True
                if at is None and line is not None and not line.header:
                    at = line
    if not seen:
        return None
    # Only the echoed script showed it: point at the error the gate printed.
    return at if at is not None else _first_error(view)


def _results(text: str) -> Iterable[tuple[str, bool]]:
    for m in _RESULT_JSON.finditer(text):
        yield m.group("result"), True
    for m in _RESULT_ALLS_GREEN.finditer(text):
        yield m.group("result"), m.group("kind") == "required to succeed"


def _from_marks(kinds: frozenset[str]) -> Check:
    def check(view: _View) -> Line | None:
        for m in view.marks:
            if m.kind in kinds:
                return _line(view, m.line)
        return None

    return check


def _first_error(view: _View) -> Line | None:
    if view.parsed.first_error is None:
        return None
    return _line(view, view.parsed.first_error)


def _line(view: _View, number: int) -> Line | None:
    for line in view.parsed.region:
        if line.number == number:
            return line
    return None


# (name, class, check), in order of precedence.
SIGNATURES: tuple[tuple[str, TriageClass, Check], ...] = (
    (
        "runner-shutdown",
        "infrastructure",
        _regex(r"The runner has received a shutdown signal", "shutdown signal"),
    ),
    (
        "runner-lost-communication",
        "infrastructure",
        _regex(r"lost communication with the server", "lost communication"),
    ),
    (
        "max-execution-time",
        "timeout",
        _regex(r"has exceeded the maximum execution time of \d+ minutes", "maximum execution time"),
    ),
    (
        "step-timeout",
        "timeout",
        _regex(r"^##\[error\]The action (?:'.*' )?has timed out", "\n##[error]The action"),
    ),
    (
        "operation-cancelled",
        "cancelled",
        _regex(r"^##\[error\]The operation was cancell?ed", "\n##[error]The operation was"),
    ),
    ("dependencies-cancelled", "cancelled", _dependencies_cancelled),
    ("out-of-memory", "infrastructure", _out_of_memory),
    (
        "no-space-left",
        "infrastructure",
        _regex(
            r"no space left on device|\bENOSPC\b",
            "no space left on device",
            "ENOSPC",
            ignore_case=True,
        ),
    ),
    ("quest-finding", "policy", _from_marks(frozenset({"quest"}))),
    ("registry-network", "flaky", _registry_network),
    ("pytest-failed", "genuine", _from_marks(frozenset({"pytest-failed"}))),
    ("vitest-failed", "genuine", _from_marks(frozenset({"vitest-failed"}))),
    ("go-test-failed", "genuine", _from_marks(frozenset({"go-failed"}))),
    ("cargo-test-failed", "genuine", _from_marks(frozenset({"cargo-failed"}))),
    ("python-traceback", "genuine", _from_marks(frozenset({"traceback-exception"}))),
    (
        "test-failed",
        "genuine",
        _from_marks(frozenset({"test-failed", "jest-failed"})),
    ),
    ("step-error", "genuine", _first_error),
)


def classify(
    parsed: ParsedLog, marks: Sequence[Mark], rules: Sequence[Rule] = ()
) -> Classification:
    """The class of the failure the parser found, with its evidence (decisive first)."""
    if parsed.first_error is None:
        return Classification("unknown")
    view = _View(parsed, marks)
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


def _builtin(view: _View) -> Classification:
    for name, cls, check in SIGNATURES:
        hit = check(view)
        if hit is not None:
            return Classification(cls, (Match(name, hit.number, hit.text),))
    # Unreachable while step-error matches any first error; kept total for safety.
    return Classification("genuine")
