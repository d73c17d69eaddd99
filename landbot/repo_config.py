"""A repository's own settings: `.github/landbot.toml` on its default branch.

The file holds what a repository may decide for itself, and may only narrow what the host
permits (config.py's Settings): quieter actions per drop reason, lower caps, fewer requeue
classes, more protected paths, its own skip label, triage rules, an agent or command the host
allows. Pure: parsing, validation and the narrowing; reading the file from GitHub and caching
it is pipeline/repo_settings.py's.

Two kinds of problem, both one line `FILE:LINE: what; the fix`: the file's own (TOML syntax,
an unknown key, a value of the wrong kind: `parse_repo_file`, `problems(text)`), and a value
that would widen what this host permits (`problems(text, host=...)`). `effective` clamps
whatever it is given, so a stale good file cannot widen a host that lowered a limit since.

The file is written by whoever can merge to a repository's default branch, and read by the
host: no text makes parsing raise anything but RepoConfigError (nesting past what TOML's
parser can recurse into, an integer past TOML's 64-bit range), and what it makes the host
run is linear time: triage rules and protected-path globs are compiled by RE2
(core/linear.py), which cannot backtrack.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from itertools import takewhile
from typing import Annotated, Any, Literal, cast, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import ErrorDetails, core_schema

from landbot.config import (
    MAX_LABEL_LENGTH,
    FixerSettings,
    Loc,
    PolicySettings,
    Settings,
    TriageRule,
    TriageSettings,
    _keys,
    _line_of,
    _nearest,
    _toml_value,
    check_argv,
    check_label,
    check_requeue_class,
    check_workflow_file,
    same_label,
    same_label_problem,
    toml_lines,
)
from landbot.core.globs import MAX_GLOB, MAX_GLOBS, glob_problem
from landbot.core.linear import LinearError, compile_linear
from landbot.core.reasons import Reason
from landbot.errors import RepoConfigError as RepoConfigError  # the file's problems
from landbot.land.model import DEFAULT_REASON_ACTIONS, ReasonAction
from landbot.triage.classify import RULE_CLASSES

REPO_FILE = ".github/landbot.toml"

# A file on a repository's default branch is written by anyone who can merge there: its
# triage rules run on the host, so their number and size are bounded.
MAX_RULES = 50
MAX_PATTERN = 200
# The schema nests four deep (the file, [triage], rules, a rule); TOML's parser recurses
# once per level, so a file nested hundreds deep must be refused before anything walks it.
MAX_DEPTH = 8
# TOML's integers are 64-bit (the spec: one that is not representable is an error).
_INT_RANGE = (-(2**63), 2**63 - 1)
# Actions a repository may always choose: each does less than any other.
QUIET_ACTIONS: tuple[ReasonAction, ...] = ("ignore", "note", "handback")

AgentName = Literal["command", "codex", "claude", "opencode"]
RuleClass = Literal["genuine", "flaky", "infrastructure", "timeout", "cancelled", "policy"]
RequeueClass = Literal["flaky", "infrastructure", "cancelled", "timeout"]


class _Table(BaseModel):
    # Strict: `max_requeues_per_pr = "3"` is a mistake to show, not a value to coerce.
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


class RepoPolicy(_Table):
    """[policy]: what landbot does with this repository's drops (each key narrows the host's)."""

    reasons: dict[Reason, ReasonAction] | None = Field(
        None,
        description="per drop reason: ignore, note or handback always; requeue or fix only "
        "where the host has that same action",
    )
    max_requeues_per_head: int | None = Field(
        None, ge=0, description="automatic re-enqueues per PR head (at most the host's)"
    )
    max_fixer_attempts_per_head: int | None = Field(
        None, ge=0, description="fixer jobs per PR head (at most the host's)"
    )
    max_pushes_per_pr: int | None = Field(
        None, ge=0, description="fixes pushed to one PR per window (at most the host's)"
    )
    max_requeues_per_pr: int | None = Field(
        None, ge=0, description="re-enqueues of one PR per window (at most the host's)"
    )
    max_fixer_runs_per_pr: int | None = Field(
        None, ge=0, description="fixer jobs for one PR per window (at most the host's)"
    )
    cap_window_hours: float | None = Field(
        None, gt=0, description="window of the per-PR caps, hours (at least the host's)"
    )
    requeue_classes: list[RequeueClass] | None = Field(
        None, description="triage classes re-enqueued (a subset of the host's)"
    )
    skip_label: str | None = Field(
        None, min_length=1, max_length=MAX_LABEL_LENGTH, description="label that opts a PR out"
    )
    fixing_label: str | None = Field(
        None,
        max_length=MAX_LABEL_LENGTH,
        description='label on a PR while the fixer works on it ("": none)',
    )

    @field_validator("skip_label")
    @classmethod
    def _skip_label(cls, v: str | None) -> str | None:
        return v if v is None else check_label(v)

    @field_validator("fixing_label")
    @classmethod
    def _fixing_label(cls, v: str | None, info: ValidationInfo) -> str | None:
        if not v:
            return v
        check_label(v)
        skip = info.data.get("skip_label")
        if isinstance(skip, str) and same_label(v, skip):
            raise ValueError(same_label_problem(v, skip))
        return v


def _glob(v: str) -> str:
    why = glob_problem(v)  # compiled as publishing compiles it
    if why is not None:
        raise ValueError(why)
    return v


class RepoFixer(_Table):
    """[fixer]: the fixer for this repository, within what the host permits."""

    enabled: bool | None = Field(
        None, description="false switches the fixer off for this repository (never on)"
    )
    agent: AgentName | None = Field(
        None, description="the host's agent, or one of its [fixer] allowed_agents"
    )
    command: list[str] | None = Field(
        None,
        min_length=1,
        description="the host's command, or one of its [fixer] allowed_commands",
    )
    timeout: float | None = Field(
        None, gt=0, description="wall-clock limit of one agent run, seconds (at most the host's)"
    )
    memory_mb: int | None = Field(
        None, ge=64, description="memory cap of one agent run, MB (at most the host's)"
    )
    protected_paths: (
        list[Annotated[str, Field(max_length=MAX_GLOB), AfterValidator(_glob)]] | None
    ) = Field(
        None,
        max_length=MAX_GLOBS,
        description=f"globs a fix may not touch, added to the host's (at most {MAX_GLOBS})",
    )
    # Its own runners: choosing actions widens nothing of the host's (no host compute, no
    # host path; the result is checked on the host as a local job's is).
    backend: Literal["local", "actions"] | None = Field(
        None,
        description='"actions": fix jobs run on this repository\'s own runners (a workflow '
        'dispatch); "local" only where the host runs them locally',
    )
    workflow: str | None = Field(
        None, description="backend actions: the workflow file in .github/workflows to dispatch"
    )

    @field_validator("workflow")
    @classmethod
    def _workflow(cls, v: str | None) -> str | None:
        return v if v is None else check_workflow_file(v)

    @field_validator("command")
    @classmethod
    def _command(cls, v: list[str] | None) -> list[str] | None:
        return v if v is None else check_argv(v)


class RepoRule(_Table):
    """[[triage.rules]]: a log line matching `pattern` makes the failure `class`."""

    pattern: str = Field(
        min_length=1,
        max_length=MAX_PATTERN,
        description="a regular expression (RE2 syntax: no lookaround or backreferences)",
    )
    class_: RuleClass = Field(alias="class", description="the triage class it gives")

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, v: str) -> str:
        why = pattern_problem(v)
        if why is not None:
            raise ValueError(why)
        return v


class RepoTriage(_Table):
    """[triage]: classification rules tried after the host's."""

    rules: list[RepoRule] | None = Field(
        None, max_length=MAX_RULES, description=f"at most {MAX_RULES} rules"
    )


class RepoFile(_Table):
    """`.github/landbot.toml`: every key optional; what is not set is the host's."""

    policy: RepoPolicy = Field(default_factory=RepoPolicy)
    fixer: RepoFixer = Field(default_factory=RepoFixer)
    triage: RepoTriage = Field(default_factory=RepoTriage)


# --- the pattern checks -------------------------------------------------------------------


def pattern_problem(pattern: str) -> str | None:
    """Why a repository's triage pattern is refused (one line with the fix), or None.

    It must compile with RE2, which triage runs a repository's rules with: matching is then
    linear in the log's length whatever the pattern (no nested-quantifier check is needed:
    `(a+)+` is as fast as `a+` there)."""
    if not pattern:
        return "a pattern cannot be empty; write a regular expression"
    if len(pattern) > MAX_PATTERN:
        return f"the pattern has {len(pattern)} characters; shorten it to {MAX_PATTERN} or fewer"
    try:
        compile_linear(pattern, multiline=True)
    except LinearError as exc:
        return str(exc)
    return None


# --- parsing and the problems -----------------------------------------------------------


def _load(text: str, file: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise RepoConfigError(
            file,
            _deep_line(text) or 1,
            "not valid TOML for landbot: arrays or inline tables nested hundreds deep (a "
            f"setting nests at most {MAX_DEPTH}); flatten them",
        ) from None
    except ValueError as exc:
        if isinstance(exc, tomllib.TOMLDecodeError):
            raise _syntax(text, file, exc) from None
        # tomllib lets int() fail on a number of thousands of digits (Python's limit).
        raise RepoConfigError(
            file,
            _long_number_line(text) or 1,
            f"not valid TOML: a number too long to read ({str(exc)[:60]}…); write a number "
            "within TOML's 64-bit range",
        ) from None


def _syntax(text: str, file: str, exc: tomllib.TOMLDecodeError) -> RepoConfigError:
    msg = str(exc)
    m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
    what = re.sub(r"\s*\(at .*\)$", "", msg).rstrip(".")
    if m is not None:
        line, where = int(m.group(1)), f" at column {m.group(2)}"
    else:  # `(at end of document)`
        line, where = max(1, len(text.splitlines())), " at the end"
    return RepoConfigError(
        file, line, f"not valid TOML: {what[:1].lower()}{what[1:]}{where}; fix the syntax"
    )


_BRACKET = re.compile(r"[\[\]{}]")
_LONG_NUMBER = re.compile(r"[0-9_]{40,}")


def _deep_line(text: str) -> int | None:
    """The line where brackets first nest past MAX_DEPTH, counted naively (strings are not
    skipped: a hint for the message, for a file TOML's parser could not even walk)."""
    depth = 0
    for number, line in enumerate(text.splitlines(), 1):
        for m in _BRACKET.finditer(line):
            depth += 1 if m.group() in "[{" else -1
            if depth > MAX_DEPTH:
                return number
        depth = max(depth, 0)
    return None


def _long_number_line(text: str) -> int | None:
    for number, line in enumerate(text.splitlines(), 1):
        if _LONG_NUMBER.search(line):
            return number
    return None


def _shape(data: dict[str, Any]) -> list[tuple[Loc, str]]:
    """What parsed but no settings file can hold, found without recursion (so nothing after
    walks a deep value): nesting past MAX_DEPTH, an integer past TOML's 64-bit range."""
    found: list[tuple[Loc, str]] = []
    todo: list[tuple[Loc, Any]] = [((), data)]
    while todo:
        loc, value = todo.pop()
        if isinstance(value, dict | list):
            if len(loc) >= MAX_DEPTH:
                name = _dotted(tuple(takewhile(lambda p: isinstance(p, str), loc))[:2])
                found.append(
                    (loc, f"{name} holds arrays or tables nested {MAX_DEPTH} deep or more; "
                     "a setting holds a value or a list of values: flatten it")
                )  # fmt: skip
                continue
            items = value.items() if isinstance(value, dict) else enumerate(value)
            todo.extend(((*loc, k), v) for k, v in items)
        elif isinstance(value, int) and not _INT_RANGE[0] <= value <= _INT_RANGE[1]:
            found.append(
                (loc, f"{_dotted(loc)} is an integer outside TOML's 64-bit range; "
                 "write a smaller number")
            )  # fmt: skip
    return found


def _dotted(loc: Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part + 1}]"
        else:
            out += ("." if out else "") + ("class" if part == "class_" else part)
    return out


def _table(ann: Any) -> type[BaseModel] | None:
    """The table model of a field's annotation: `X`, `X | None`, `list[X] | None`."""
    args = [a for a in get_args(ann) if a is not type(None)]
    if get_origin(ann) is list or (args and len(args) == 1 and get_origin(ann) is not dict):
        return _table(args[0]) if args else None
    return ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None


def _model_at(loc: Loc) -> type[BaseModel] | None:
    """The table model at a location of the file (None past a leaf)."""
    model: type[BaseModel] | None = RepoFile
    for part in loc:
        if isinstance(part, int):
            continue
        f = _keys(model).get(part) if model is not None else None
        if f is None:
            return None
        model = _table(f.annotation)
    return model


def _unknown(loc: Loc, value: Any) -> str:
    parent, key = loc[:-1], str(loc[-1])
    model = _model_at(parent) or RepoFile
    keys = list(_keys(model))
    guess = _nearest(key, keys)
    if not parent:
        hint = f"did you mean [{guess}]?" if guess else f"the sections are {', '.join(keys)}"
        return f"unknown section [{key}]; {hint}"
    # The right key in the wrong table (written above its section's header).
    for name, f in _keys(RepoFile).items():
        other = _table(f.annotation)
        if other is not None and key in _keys(other) and (name,) != parent:
            return f"unknown key {_dotted(loc)}; did you mean {name}.{key} (under [{name}])?"
    hint = f"did you mean {guess}?" if guess else f"the keys there are {', '.join(keys)}"
    what = "section" if isinstance(value, dict) else "key"
    return f"unknown {what} {_dotted(loc)}; {hint}"


_KIND = {
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "a string in quotes",
    "list_type": 'a list, e.g. ["a", "b"]',
    "dict_type": "a table",
    "model_type": "a table",
}


def _message(err: ErrorDetails) -> str:
    raw = tuple(err["loc"])
    is_key = bool(raw) and raw[-1] == "[key]"
    loc: Loc = tuple(p for p in raw if p != "[key]")
    name = _dotted(loc)
    value = err.get("input")
    ctx = err.get("ctx") or {}
    kind = err["type"]
    shown = _toml_value(value) if not isinstance(value, dict) else "a table"
    if len(shown) > 80:  # a problem is one readable line, whatever the file holds
        shown = shown[:77] + "…"
    if kind == "extra_forbidden":
        return _unknown(loc, value)
    if is_key:
        reasons: list[str] = list(DEFAULT_REASON_ACTIONS)
        guess = _nearest(str(loc[-1]), reasons)
        hint = f"did you mean {guess}?" if guess else f"use one of {', '.join(reasons)}"
        return f"unknown drop reason {name}; {hint}"
    if kind == "literal_error":
        if loc[:2] == ("policy", "requeue_classes"):
            try:
                check_requeue_class(str(value))
            except ValueError as exc:
                return f"{_dotted(loc[:2])}: {exc}"
        choices = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        guess = _nearest(str(value), choices)
        hint = f"did you mean {_toml_value(guess)}?" if guess else "use one of"
        return f"{name} = {shown} is not allowed; {hint} (one of {', '.join(choices)})"
    if kind == "missing":
        return f"{name} is missing; add it"
    if kind in _KIND:
        return f"{name} = {shown} is not {_KIND[kind]}; write {_KIND[kind]}"
    if kind in ("greater_than_equal", "greater_than"):
        bound = ctx.get("ge", ctx.get("gt"))
        more = "or more" if kind == "greater_than_equal" else "(more than that)"
        return f"{name} = {shown} is too low; use {bound} {more}"
    if kind == "too_long":
        most = ctx.get("max_length")
        what = (
            ("rules" if name.endswith("rules") else "entries")
            if isinstance(value, list)
            else "characters"
        )
        return f"{name} has too many {what}; keep it to {most} or fewer"
    if kind == "too_short" or kind == "string_too_short":
        return f"{name} cannot be empty; write a value or remove the key"
    if kind == "string_too_long":
        return f"{name} is longer than {ctx.get('max_length')} characters; shorten it"
    msg = str(err["msg"]).removeprefix("Value error, ").rstrip(".")
    return f"{name} = {shown}: {msg[:1].lower()}{msg[1:]}"


def _structure(data: dict[str, Any]) -> tuple[RepoFile | None, list[tuple[Loc, str]]]:
    try:
        return RepoFile.model_validate(data), []
    except ValidationError as exc:
        return None, [(tuple(e["loc"]), _message(e)) for e in exc.errors()]


def _without(data: dict[str, Any], locs: list[Loc]) -> dict[str, Any]:
    """`data` without what the problems at `locs` are in (a list's item, a table's key, a
    setting or a section), so what is left can be checked against the host."""
    out: dict[str, Any] = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
    drop: dict[tuple[str, str], set[Any]] = {}
    for loc in locs:
        top = str(loc[0]) if loc else ""
        section = out.get(top)
        if len(loc) < 2 or top == "triage" or not isinstance(section, dict):
            out.pop(top, None)
        elif len(loc) >= 3 and isinstance(section.get(str(loc[1])), list | dict):
            drop.setdefault((top, str(loc[1])), set()).add(loc[2])
        else:
            section.pop(str(loc[1]), None)
    for (top, key), parts in drop.items():
        table: dict[str, Any] = out[top]
        value = table.get(key)
        if isinstance(value, list):
            table[key] = [v for i, v in enumerate(value) if i not in parts]
        elif isinstance(value, dict):
            table[key] = {k: v for k, v in value.items() if k not in parts}
    return out


def parse_repo_file(text: str, *, file: str = REPO_FILE) -> RepoFile:
    """The file's settings; RepoConfigError (the first problem) when it is not valid TOML or
    holds a key, section or value the schema refuses."""
    found = problems(text, file=file)
    if found:
        raise found[0]
    return RepoFile.model_validate(tomllib.loads(text))


def problems(
    text: str, *, file: str = REPO_FILE, host: Settings | None = None
) -> list[RepoConfigError]:
    """Every problem of the file, in line order: its structure, then (with `host`) each value
    that would widen what the host permits. Empty: the file is good."""
    try:
        data = _load(text, file)
    except RepoConfigError as exc:
        return [exc]
    lines = toml_lines(text)
    found = _shape(data)
    if not found:  # else nothing below may walk it
        repo, found = _structure(data)
        if host is not None:
            if repo is None:
                repo, _ = _structure(_without(data, [loc for loc, _ in found]))
            if repo is not None:
                found += [*_widening(repo, host), *_conflicts(repo, host)]
    out = [RepoConfigError(file, _line_of(lines, _toml_loc(loc)), msg) for loc, msg in found]
    return sorted(out, key=lambda e: e.line or 0)


def _toml_loc(loc: Loc) -> Loc:
    return tuple("class" if p == "class_" else p for p in loc if p != "[key]")


# --- narrowing ---------------------------------------------------------------------------

_CAPS = (
    "max_requeues_per_head",
    "max_fixer_attempts_per_head",
    "max_pushes_per_pr",
    "max_requeues_per_pr",
    "max_fixer_runs_per_pr",
)


def host_action(host: Settings, reason: Reason) -> ReasonAction:
    """What the host does with a drop for `reason` (its override, else the default)."""
    return cast(ReasonAction, host.policy.reasons.get(reason, DEFAULT_REASON_ACTIONS[reason]))


def _allowed_action(host: Settings, reason: Reason, action: ReasonAction) -> bool:
    return action in QUIET_ACTIONS or action == host_action(host, reason)


def _allowed_agent(host: Settings, agent: str) -> bool:
    return agent == host.fixer.agent or agent in host.fixer.allowed_agents


def _allowed_command(host: Settings, command: list[str]) -> bool:
    return command == host.fixer.command or command in host.fixer.allowed_commands


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _widening(repo: RepoFile, host: Settings) -> Iterator[tuple[Loc, str]]:
    """Each value of a structurally good file that would widen what `host` permits."""
    p, hp = repo.policy, host.policy
    for reason, action in (p.reasons or {}).items():
        if not _allowed_action(host, reason, action):
            mine = host_action(host, reason)
            yield (
                ("policy", "reasons", reason),
                f'policy.reasons.{reason} = "{action}" is more than this host does for '
                f'{reason} ("{mine}"); use "{mine}", ignore, note or handback',
            )
    for cap in _CAPS:
        value, limit = getattr(p, cap), getattr(hp, cap)
        if value is not None and value > limit:
            yield (
                ("policy", cap),
                f"policy.{cap} = {value} is above this host's limit {limit}; use {limit} or less",
            )
    if p.cap_window_hours is not None and p.cap_window_hours < hp.cap_window_hours:
        window = _number(hp.cap_window_hours)
        yield (
            ("policy", "cap_window_hours"),
            f"policy.cap_window_hours = {_number(p.cap_window_hours)} is shorter than this "
            f"host's window {window} (a shorter window allows more); use {window} or more",
        )
    for cls in p.requeue_classes or ():
        if cls not in hp.requeue_classes:
            yield (
                ("policy", "requeue_classes"),
                f'policy.requeue_classes has "{cls}", which this host does not re-enqueue; '
                f"use a subset of {_toml_value(hp.requeue_classes)}",
            )
    f, hf = repo.fixer, host.fixer
    if f.enabled is True and not hf.enabled:
        yield (
            ("fixer", "enabled"),
            "fixer.enabled = true, but this host runs no fixer and a repository cannot "
            "switch one on; remove it",
        )
    if f.agent is not None and not _allowed_agent(host, f.agent):
        allowed = [hf.agent, *hf.allowed_agents]
        yield (
            ("fixer", "agent"),
            f'fixer.agent = "{f.agent}" is not an agent this host allows; use '
            f"{' or '.join(_toml_value(a) for a in allowed)} (or ask the host to add it "
            "to [fixer] allowed_agents)",
        )
    if f.command is not None and not _allowed_command(host, f.command):
        allowed_cmds = [c for c in [hf.command, *hf.allowed_commands] if c]
        fix = (
            f"use {' or '.join(_toml_value(c) for c in allowed_cmds)}"
            if allowed_cmds
            else "remove it (this host allows no command of a repository's choosing)"
        )
        yield (
            ("fixer", "command"),
            f"fixer.command = {_toml_value(f.command)} is not a command this host allows; {fix}",
        )
    if f.timeout is not None and f.timeout > hf.timeout:
        limit = _number(hf.timeout)
        yield (
            ("fixer", "timeout"),
            f"fixer.timeout = {_number(f.timeout)} is above this host's limit {limit}; "
            f"use {limit} or less",
        )
    if f.memory_mb is not None and f.memory_mb > hf.memory_mb:
        yield (
            ("fixer", "memory_mb"),
            f"fixer.memory_mb = {f.memory_mb} is above this host's limit {hf.memory_mb}; "
            f"use {hf.memory_mb} or less",
        )
    if f.backend == "local" and hf.backend != "local":
        yield (
            ("fixer", "backend"),
            'fixer.backend = "local", but this host runs fix jobs on Actions runners and a '
            'repository cannot move them onto the host; use "actions" or remove it',
        )


def _labels(host: Settings, p: RepoPolicy) -> tuple[str, str]:
    """The skip and fixing labels in effect with this file (before any conflict is undone)."""
    skip = p.skip_label or host.policy.skip_label
    fixing = p.fixing_label if p.fixing_label is not None else host.policy.fixing_label
    return skip, fixing


def _conflicts(repo: RepoFile, host: Settings) -> Iterator[tuple[Loc, str]]:
    """A value that is no wider than the host's, but clashes with one of the host's."""
    p = repo.policy
    skip, fixing = _labels(host, p)
    if fixing and same_label(fixing, skip) and not (p.skip_label and p.fixing_label):
        # Both in the file is the file's own problem (RepoPolicy); here one is the host's.
        key = "fixing_label" if p.fixing_label else "skip_label"
        yield (("policy", key), f"policy.{key}: {same_label_problem(fixing, skip)}")


def effective(host: Settings, repo: RepoFile | None) -> Settings:
    """The settings in effect for a repository: the host's, narrowed by its file. Never wider
    than the host's whatever the file says (a value past a host limit is clamped to it: a
    file that was good before the host lowered a limit cannot widen it)."""
    if repo is None:
        return host
    return host.model_copy(
        update={
            "policy": _policy(host, repo.policy),
            "fixer": _fixer(host, repo.fixer),
            "triage": _triage(host.triage, repo.triage),
        }
    )


def _policy(host: Settings, p: RepoPolicy) -> PolicySettings:
    hp = host.policy
    update: dict[str, Any] = {}
    reasons = {
        r: a
        for r, a in (p.reasons or {}).items()
        if r in DEFAULT_REASON_ACTIONS and _allowed_action(host, r, a)
    }
    if reasons:
        update["reasons"] = {**hp.reasons, **reasons}
    for cap in _CAPS:
        value = getattr(p, cap)
        if value is not None:
            update[cap] = max(0, min(value, getattr(hp, cap)))
    if p.cap_window_hours is not None:
        update["cap_window_hours"] = max(p.cap_window_hours, hp.cap_window_hours)
    if p.requeue_classes is not None:
        update["requeue_classes"] = [c for c in hp.requeue_classes if c in p.requeue_classes]
    if p.skip_label:
        update["skip_label"] = p.skip_label
    if p.fixing_label is not None:
        update["fixing_label"] = p.fixing_label
    skip, fixing = _labels(host, p)
    if fixing and same_label(fixing, skip):
        # The fixer's own label would read as the opt-out: none rather than that.
        update["fixing_label"] = ""
    return hp.model_copy(update=update)


def _fixer(host: Settings, f: RepoFixer) -> FixerSettings:
    hf = host.fixer
    update: dict[str, Any] = {}
    if f.agent is not None and _allowed_agent(host, f.agent):
        update["agent"] = f.agent
    if f.command is not None and _allowed_command(host, f.command):
        update["command"] = list(f.command)
    if f.timeout is not None and f.timeout > 0:
        update["timeout"] = min(f.timeout, hf.timeout)
    if f.memory_mb is not None:
        update["memory_mb"] = max(64, min(f.memory_mb, hf.memory_mb))
    if f.backend == "actions":
        update["backend"] = "actions"
    if f.workflow is not None:
        update["workflow"] = f.workflow
    if f.protected_paths:
        # Checked again (bounded, compiled): publishing must never meet a glob it cannot run.
        extra = [
            g
            for g in f.protected_paths[:MAX_GLOBS]
            if glob_problem(g) is None and g not in hf.protected_paths
        ]
        update["protected_paths"] = [*hf.protected_paths, *dict.fromkeys(extra)]
    out = hf.model_copy(update=update)
    if f.enabled is False:
        out._switched_off = True
    return out


def _triage(host: TriageSettings, t: RepoTriage) -> TriageSettings:
    if not t.rules:
        return host
    # Checked again here: effective() must hold for a file however it was made.
    mine = [
        TriageRule.model_validate({"pattern": r.pattern, "class": r.class_})
        for r in t.rules[:MAX_RULES]
        if r.class_ in RULE_CLASSES and pattern_problem(r.pattern) is None
    ]
    for rule in mine:
        rule._linear = True  # a repository's pattern: triage runs it with RE2, never `re`
    return host.model_copy(update={"rules": [*host.rules, *mine]})


# --- the published schema --------------------------------------------------------------


class _TomlSchema(GenerateJsonSchema):
    """TOML has no null: an optional key is just absent, so `X | None = None` is `X`."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        inner = self.generate_inner(schema["schema"])
        if schema.get("default", ...) is None or "default_factory" in schema:
            return inner
        return super().default_schema(schema)


def json_schema() -> dict[str, Any]:
    """The JSON schema of the file (`landbot config schema`), for editors."""
    schema = RepoFile.model_json_schema(by_alias=True, schema_generator=_TomlSchema)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "landbot repository settings (.github/landbot.toml)",
        **{k: v for k, v in schema.items() if k != "title"},
    }
