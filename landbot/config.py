"""Settings: environment `LANDBOT_…` (``__`` for nesting) over a TOML file over defaults.

The TOML file is `config/landbot.toml` in the current directory, or the file given with
``--config``. Secrets are ``SecretStr`` so they never show up in a repr or a log line.

Strict: `load_settings` refuses a key, a table or a `LANDBOT_…__…` variable the settings do
not have (with the nearest valid name), and every error names where the value was set (the
variable, or the file and line: `Provenance`). `check_ready` is what `serve`, `worker` and
`poll` run before starting; `effective`/`render_show` are `landbot config show`.
"""

from __future__ import annotations

import contextvars
import difflib
import json
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from landbot.errors import LandbotError

DEFAULT_CONFIG_FILE = Path("config/landbot.toml")

# The TOML file for the settings being loaded; a context variable so tests and commands
# can load different files without mutating the class.
_toml_file: contextvars.ContextVar[Path | None] = contextvars.ContextVar(
    "landbot_toml_file", default=None
)


# The fixer agents landbot knows (landbot.fixer.agents.AGENTS; a test keeps them equal).
AGENT_NAMES = ("command", "codex", "claude", "opencode")


class _Section(BaseModel):
    """A settings table: a key it does not know is an error, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class GitHubSettings(_Section):
    api_url: str = Field(
        "https://api.github.com",
        description="REST base URL; GraphQL is at <api_url>/graphql (GitHub Enterprise, a fake)",
    )
    token: SecretStr | None = Field(
        None, description="a token (for a scheduled Action), instead of App auth"
    )
    app_id: int | None = Field(None, description="GitHub App ID (App auth)")
    private_key_file: Path | None = Field(None, description="the App's private key, PEM (App auth)")
    webhook_secret: SecretStr | None = Field(None, description="webhook HMAC secret")
    git_url: str = Field(
        "https://github.com/{owner}/{repo}.git",
        description="clone/push URL template ({owner}, {repo}); file:// in tests",
    )

    @field_validator("api_url")
    @classmethod
    def _strip_slash(cls, v: str) -> str:
        _check_http_url(v)
        return v.rstrip("/")

    @field_validator("git_url")
    @classmethod
    def _git_template(cls, v: str) -> str:
        try:
            v.format(owner="o", repo="r")
        except (KeyError, IndexError, ValueError):
            raise ValueError(
                f"{v!r} is not a URL template; use the placeholders {{owner}} and {{repo}} only"
            ) from None
        return v

    @property
    def graphql_url(self) -> str:
        return f"{self.api_url}/graphql"


class PolicySettings(_Section):
    """What landbot does per normalized drop reason (the decision function reads this)."""

    max_requeues_per_head: int = Field(1, ge=0, description="automatic re-enqueues per PR head")
    max_fixer_attempts_per_head: int = Field(1, ge=0, description="fixer jobs per PR head")
    skip_label: str = Field("landbot:skip", description="label that opts a PR out")
    max_pushes_per_pr: int = Field(
        2, ge=0, description="fixes landbot pushes to one PR across its heads, per window"
    )
    max_requeues_per_pr: int = Field(
        3, ge=0, description="automatic re-enqueues of one PR across its heads, per window"
    )
    max_fixer_runs_per_pr: int = Field(
        3, ge=0, description="fixer jobs for one PR across its heads, per window"
    )
    cap_window_hours: float = Field(
        24,
        gt=0,
        description="window of the per-PR caps, hours; a push not landbot's or "
        "/landbot retry starts them again",
    )
    reasons: dict[str, str] = Field(
        default_factory=dict,
        description="per drop reason: ignore, requeue, fix, handback or note (JSON in env); "
        "overrides the defaults",
    )
    requeue_classes: list[str] = Field(
        default_factory=lambda: ["cancelled", "flaky", "infrastructure"],
        description="triage classes re-enqueued within the budget (not the PR's fault)",
    )
    fixing_label: str = Field(
        "",
        description="label on a PR while the fixer works on it, removed when it ends (empty: none)",
    )
    repo_file: str = Field(
        ".github/landbot.toml",
        description="a repository's own settings file on its default branch, narrowing "
        "these (empty: not read)",
    )

    @field_validator("requeue_classes")
    @classmethod
    def _requeue_classes(cls, v: list[str]) -> list[str]:
        for name in v:
            check_requeue_class(name)
        return v

    @field_validator("skip_label")
    @classmethod
    def _skip_label(cls, v: str) -> str:
        return check_label(v)

    @field_validator("fixing_label")
    @classmethod
    def _fixing_label(cls, v: str, info: ValidationInfo) -> str:
        if v == "":
            return v
        check_label(v)
        skip = info.data.get("skip_label")
        if isinstance(skip, str) and same_label(v, skip):
            raise ValueError(same_label_problem(v, skip))
        return v

    @field_validator("reasons")
    @classmethod
    def _known_reasons(cls, v: dict[str, str]) -> dict[str, str]:
        from landbot.core.reasons import REASONS

        actions = ("ignore", "requeue", "fix", "handback", "note")
        for reason, action in v.items():
            if reason not in REASONS:
                raise ValueError(f"unknown drop reason {reason!r}; use one of {', '.join(REASONS)}")
            if action not in actions:
                raise ValueError(f"{reason} = {action!r}: use one of {', '.join(actions)}")
        return v


class FixerSettings(_Section):
    # Set by a repository's `[fixer] enabled = false` (repo_config.effective): off whatever
    # the agent; a repository can switch its fixer off, never on.
    _switched_off: bool = PrivateAttr(default=False)

    @property
    def switched_off(self) -> bool:
        """A repository's file switched its fixer off (`[fixer] enabled = false`)."""
        return self._switched_off

    @property
    def enabled(self) -> bool:
        """An agent is configured: a command, or a model agent with a model endpoint."""
        if self._switched_off:
            return False
        if self.backend == "actions":
            # The agent runs on the repository's runner, chosen by its committed workflow.
            return True
        if self.agent == "command":
            return bool(self.command)
        return self.model_url is not None

    agent: str = Field("command", description="command, codex, claude or opencode")
    command: list[str] = Field(
        default_factory=list, description="argv of the command agent (JSON list in env)"
    )
    model_url: str | None = Field(None, description="model endpoint the proxy forwards to")
    model_api_key: SecretStr | None = Field(
        None, description="provider key, added by the proxy; never enters the sandbox"
    )
    model_api: Literal["openai-responses", "openai-chat", "anthropic", "any"] | None = Field(
        None,
        description="the model API the proxy forwards (only its calls); unset: the agent's own "
        "(codex openai-responses, opencode openai-chat, claude anthropic, command any)",
    )
    model: str | None = Field(None, description="model name passed to the agent")
    concurrency: int = Field(1, ge=1, description="fixer jobs at a time")
    timeout: float = Field(1800, gt=0, description="wall-clock limit of one agent run, seconds")
    memory_mb: int = Field(4096, ge=64, description="memory cap of one agent run, MB")
    state_dir: Path = Field(
        Path(".landbot"), description="host folder for mirrors and job work trees"
    )
    protected_paths: list[str] = Field(
        default_factory=lambda: [".github/workflows/**"],
        description="globs a fix may not touch (JSON list in env)",
    )
    allowed_agents: list[str] = Field(
        default_factory=list,
        description="agents a repository's file may choose besides this one (JSON list in env)",
    )
    allowed_commands: list[list[str]] = Field(
        default_factory=list,
        description="command-agent argvs a repository's file may choose (JSON list in env)",
    )
    backend: Literal["local", "actions"] = Field(
        "local",
        description="where a fix job runs: local (this host's sandbox) or actions (a "
        "workflow_dispatch of [fixer] workflow on the repository's runners)",
    )
    workflow: str = Field(
        "landbot-fix.yml",
        description="backend actions: the workflow file (in .github/workflows) dispatched",
    )
    actions_deadline_minutes: float = Field(
        60, gt=0, description="backend actions: a fix run not done by then is failed, minutes"
    )
    actions_poll_seconds: float = Field(
        30, gt=0, description="backend actions: how often a waiting fix job looks at its run"
    )

    @field_validator("protected_paths")
    @classmethod
    def _protected_paths(cls, v: list[str]) -> list[str]:
        # Compiled now as publishing compiles them: a bad glob stops start-up with one line
        # instead of failing every fix job.
        from landbot.core.globs import glob_pattern
        from landbot.core.linear import LinearError

        for glob in v:
            if glob.strip():
                try:
                    glob_pattern(glob)
                except LinearError as exc:
                    raise ValueError(str(exc)) from None
        return v

    @field_validator("agent")
    @classmethod
    def _known_agent(cls, v: str) -> str:
        if v not in AGENT_NAMES:
            raise ValueError(f"there is no fixer agent {v!r}; use one of {', '.join(AGENT_NAMES)}")
        return v

    @field_validator("allowed_agents")
    @classmethod
    def _allowed_agents(cls, v: list[str]) -> list[str]:
        for name in v:
            cls._known_agent(name)
        return v

    @field_validator("allowed_commands")
    @classmethod
    def _allowed_commands(cls, v: list[list[str]]) -> list[list[str]]:
        for argv in v:
            check_argv(argv)
        return v

    @field_validator("model_url")
    @classmethod
    def _model_url(cls, v: str | None) -> str | None:
        if v is not None:
            _check_http_url(v)
        return v

    @field_validator("workflow")
    @classmethod
    def _workflow(cls, v: str) -> str:
        return check_workflow_file(v)


# Triage classes that are not the pull request's fault, so re-enqueueing may help.
REQUEUE_CLASSES = ("flaky", "infrastructure", "cancelled", "timeout")
# GitHub refuses a label name longer than this.
MAX_LABEL_LENGTH = 50


_WORKFLOW_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.ya?ml")


def check_workflow_file(name: str) -> str:
    """`name` if it names a workflow file in .github/workflows (GitHub's dispatch API takes
    the file name as the workflow id), else ValueError."""
    if not _WORKFLOW_FILE.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a workflow file name; use a file in .github/workflows, e.g. "
            "'landbot-fix.yml'"
        )
    return name


def check_requeue_class(name: str) -> str:
    """`name` if landbot may re-enqueue a failure of that triage class, else ValueError."""
    if name in ("genuine", "policy"):
        raise ValueError(
            f"{name!r} is a failure of the pull request's own, which a re-enqueue cannot "
            f"fix; use only {', '.join(REQUEUE_CLASSES)}"
        )
    if name not in REQUEUE_CLASSES:
        raise ValueError(
            f"there is no triage class {name!r} to re-enqueue; use {', '.join(REQUEUE_CLASSES)}"
        )
    return name


def same_label(a: str, b: str) -> bool:
    """GitHub's label names are case-insensitive: `Hold` and `hold` are one label."""
    return a.casefold() == b.casefold()


def same_label_problem(fixing: str, skip: str) -> str:
    # The fixing label on the PR would read as the opt-out: each fix thrown away.
    return (
        f"the fixing label {fixing!r} is the skip label {skip!r} (labels ignore case), so "
        'each fix would be dropped as opted out; give it another name or "" for none'
    )


def check_label(name: str) -> str:
    """`name` if GitHub takes it as a label name, else ValueError."""
    if not name.strip():
        raise ValueError("a label name cannot be blank; write one, e.g. 'landbot:skip'")
    if len(name) > MAX_LABEL_LENGTH:
        raise ValueError(
            f"the label {name[:20]!r}… has {len(name)} characters; GitHub takes at most "
            f"{MAX_LABEL_LENGTH}"
        )
    if name != name.strip():
        raise ValueError(f"the label {name!r} has spaces around it; remove them")
    return name


def check_argv(argv: list[str]) -> list[str]:
    """`argv` if it is a command to run (a program, then its arguments), else ValueError."""
    if not argv or not argv[0].strip():
        raise ValueError("a command is a non-empty list, the program first: ['fix-it', '--ci']")
    return argv


class SandboxSettings(_Section):
    read_only: list[Path] = Field(
        default_factory=list, description="extra host paths visible read-only (JSON list in env)"
    )
    allowed_hosts: list[str] = Field(
        default_factory=list, description="package registries the sandbox may reach"
    )
    # Never root (0): a root-run bubblewrap keeps its capabilities.
    uid: int = Field(65534, ge=1, description="unprivileged uid the sandbox runs as")
    gid: int = Field(65534, ge=1, description="its gid")
    etc: list[str] = Field(
        default_factory=list,
        description="extra names under /etc shown read-only, beyond the toolchain's allowlist "
        "(e.g. pip.conf; JSON list in env)",
    )
    # Unset: half the host's cores (landbot.sandbox.limits.cpu_cap), so a job never takes
    # every core of a small host from the receiver, the worker and the proxy.
    cpus: Annotated[float, Field(gt=0)] | None = Field(
        None,
        description="CPU cap of one job in cores (cgroup quota; else nice + rlimit); "
        "unset: half the host's cores",
    )
    tmp_mb: int = Field(1024, ge=1, description="size of the job's private /tmp and HOME, MB each")
    disk_mb: int = Field(
        10240,
        ge=0,
        description="size cap of a job's work tree filesystem, MB (0: no cap); the default "
        "--disk of sandbox run and fixer run",
    )


class TriageRule(_Section):
    pattern: str
    # One of the classes of design.md; validated by triage when it compiles the rules.
    class_: str = Field(alias="class")
    # Set by repo_config.effective on a repository's rule: triage compiles it with RE2
    # (linear time), since the host's operator did not write it. Not a setting.
    _linear: bool = PrivateAttr(default=False)

    @property
    def linear(self) -> bool:
        """A repository's rule: compiled with RE2 (core/linear.py), never `re`."""
        return self._linear


class TriageSettings(_Section):
    rules: list[TriageRule] = Field(
        default_factory=list,
        description="extra classification rules: [[triage.rules]] pattern, class",
    )
    max_log_bytes: int = Field(
        20 * 1024 * 1024, ge=1024, description="bytes of a job log kept (the tail)"
    )
    report_artifacts: list[str] = Field(
        default_factory=lambda: ["*junit*", "*test-results*"],
        description="artifact names (fnmatch, any case) of a failed run read as JUnit XML "
        "test reports: their failed tests are preferred to the log's; [] reads none",
    )


class WorkerSettings(_Section):
    lease_seconds: float = Field(
        120, gt=0, description="a job's lease; a dead worker's job is retaken after it"
    )
    idle_sleep: float = Field(0.5, gt=0, description="seconds between polls of an idle store")


class StoreSettings(_Section):
    # At least GitHub's redelivery window (3 days): a delivery redelivered after its row
    # was pruned would be taken for a new one (landbot.store.retention).
    retention_days: float = Field(
        7,
        ge=3,
        description="days processed webhook deliveries and finished jobs are kept (drops stay)",
    )


class BudgetSettings(_Section):
    """GitHub's limits per App installation, kept by landbot.github.budget (issue 28): a
    call waits while a limit holds; a sweep's read is put off under its reserve."""

    sweep_reserve: float = Field(
        0.10,
        ge=0,
        le=1,
        description="share of the primary budget (per installation and resource) a poll "
        "sweep leaves to webhook-driven work: under it the sweep waits for the next round",
    )
    content_reserve: float = Field(
        0.02,
        ge=0,
        le=1,
        description="share of the primary budget a comment, issue, reaction or check run "
        "leaves to re-reads and re-enqueues: under it, it waits for the reset",
    )
    concurrency: int = Field(
        100, ge=1, description="requests in flight at once per installation (GitHub: ~100)"
    )
    content_per_minute: int = Field(
        80, ge=1, description="content-creating requests a minute per installation (GitHub: 80)"
    )
    content_per_hour: int = Field(
        500, ge=1, description="content-creating requests an hour per installation (GitHub: 500)"
    )


class PollSettings(_Section):
    """Which repositories `landbot poll` sweeps each run (intake/schedule.py, issue 28.2): a
    repository whose merge queue showed activity lately every run, an idle one rarely."""

    active_minutes: int = Field(
        60,
        ge=0,
        description="how long a repository stays active after its queue showed activity (a "
        "merge_group or dequeue webhook, a drop, queue entries at a sweep): swept every run",
    )
    idle_minutes: int = Field(
        60,
        ge=1,
        description="how often a repository with no recent queue activity is swept (a "
        "removal no webhook told of is found within this)",
    )
    batch: int = Field(
        50,
        ge=1,
        le=100,
        description="repositories asked in one GraphQL query of a sweep",
    )


class BreakerSettings(_Section):
    """When the repository is the problem (issue 27): a red base branch, and a breaker per
    repository that holds drops that are not their pull requests' fault."""

    enabled: bool = Field(
        True,
        description="open a repository's breaker when many drops are not their PRs' fault "
        "(held, not dropped, until the cause is gone)",
    )
    window_minutes: float = Field(
        30, gt=0, description="window in which drops that are not their PRs' fault are counted"
    )
    threshold: int = Field(
        5,
        ge=2,
        description="drops within the window that are not their PRs' fault (runner or "
        "infrastructure failures, timeouts, GitHub's 5xx) that open the breaker",
    )
    same_failure_prs: int = Field(
        3,
        ge=0,
        description="pull requests failing the same job the same way within the window "
        "that open the breaker, each counted only when that job fails on the base too and "
        "no other of them was ahead in its merge group (0: off)",
    )
    base_wait_hours: float = Field(
        6,
        gt=0,
        description="how long a drop waits for a red base branch to turn green before it "
        "is handed back, hours",
    )
    recheck_minutes: float = Field(
        10,
        gt=0,
        description="how often a waiting drop or an open breaker looks again when no "
        "webhook says the base changed, minutes",
    )


class FlakyIssuesSettings(_Section):
    """One issue per flaky test (land/flaky_issues.py): opened once the ledger shows it
    failing and passing on retry on `min_prs` pull requests, edited as failures come,
    closed after `quiet_days` without one. Costs GitHub calls only for such a test."""

    enabled: bool = Field(
        True,
        description="open one issue per test the flaky-test ledger shows failing and passing "
        "on retry across pull requests; false: none, and no call for it",
    )
    min_prs: int = Field(
        3,
        ge=1,
        description="pull requests a test failed on and passed on retry before its issue opens",
    )
    quiet_days: float = Field(
        7, gt=0, description="days without a failure of the test before its issue is closed"
    )
    label: str = Field("landbot:flaky", description="label on each flaky test's issue")

    @field_validator("label")
    @classmethod
    def _label(cls, v: str) -> str:
        return check_label(v)  # never empty: landbot finds its issues by it


class NotifySettings(_Section):
    """Notifications beyond GitHub (landbot/notify.py): one message per hand-back and per
    opening or closing of the breaker, to a Slack-compatible incoming webhook."""

    webhook_url: SecretStr | None = Field(
        None,
        description='Slack-compatible incoming webhook (POST {"text": …}) for hand-backs and '
        "the breaker; unset: none. A secret: never logged whole",
    )
    timeout: float = Field(
        3, gt=0, le=30, description="seconds a notification may take before it is given up"
    )

    @field_validator("webhook_url")
    @classmethod
    def _webhook_url(cls, v: SecretStr | None) -> SecretStr | None:
        if v is None or not v.get_secret_value().strip():
            return None
        text = v.get_secret_value().strip()
        scheme = text.split("://", 1)[0].lower() if "://" in text else ""
        if scheme not in ("http", "https"):
            # Not the URL itself in the message: it is a secret.
            raise ValueError("the notify webhook_url must be an http:// or https:// URL")
        return SecretStr(text)


class WebSettings(_Section):
    """`landbot serve`: where it listens, and who may read the dashboard and /metrics."""

    host: str = Field(
        "127.0.0.1",
        description="address serve listens on; loopback keeps the dashboard to this host",
    )
    port: int = Field(8080, ge=1, le=65535, description="port serve listens on")
    auth: Literal["token", "loopback"] = Field(
        "token",
        description="who may read GET / and /metrics: token (every client sends the token) "
        "or loopback (no token: direct loopback clients only; unsafe behind a proxy on "
        "this host)",
    )
    token: SecretStr | None = Field(
        None,
        description="the dashboard token (Bearer or ?token=); unset: the one serve generates "
        "in [fixer] state_dir/web-token",
    )

    @field_validator("token")
    @classmethod
    def _token(cls, v: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        # Blank is unset (the generated token), never "off": that is auth = "loopback".
        if v is None or not v.get_secret_value().strip():
            return None
        if info.data.get("auth") == "loopback":
            raise ValueError(
                'a token is set but [web] auth is "loopback", which serves without one; '
                'remove the token, or set auth = "token"'
            )
        return v


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="LANDBOT_",
        env_nested_delimiter="__",
        extra="ignore",
        populate_by_name=True,
    )
    # The TOML file these settings were read from, if any: a job must never see it.
    _config_file: Path | None = PrivateAttr(default=None)
    # Where each value came from (load_settings fills it; settings made in code: defaults).
    _provenance: Provenance | None = PrivateAttr(default=None)

    github: GitHubSettings = Field(default_factory=GitHubSettings)
    database_url: str = Field(
        "sqlite:///./landbot.db", description="SQLite file, or postgresql://… for replicas"
    )
    repos: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="repositories to watch, owner/name comma-separated (or a JSON list)",
    )
    policy: PolicySettings = Field(default_factory=PolicySettings)
    fixer: FixerSettings = Field(default_factory=FixerSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    triage: TriageSettings = Field(default_factory=TriageSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    breaker: BreakerSettings = Field(default_factory=BreakerSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    poll: PollSettings = Field(default_factory=PollSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    flaky_issues: FlakyIssuesSettings = Field(default_factory=FlakyIssuesSettings)
    notify: NotifySettings = Field(default_factory=NotifySettings)

    @field_validator("repos", mode="before")
    @classmethod
    def _parse_repos(cls, v: Any) -> list[str]:
        # Accept "a/b,c/d", a JSON list, a list of strings, or TOML's [[repos]] tables.
        if v is None or v == "":
            return []
        if isinstance(v, str):
            text = v.strip()
            if text.startswith("["):
                v = json.loads(text)
            else:
                v = [part for part in (p.strip() for p in text.split(",")) if part]
        out: list[str] = []
        for item in v:
            if isinstance(item, dict):
                if "owner" in item and "name" in item:
                    item = f"{item['owner']}/{item['name']}"
                else:
                    item = item.get("name") or item.get("repo") or ""
            name = str(item).strip()
            if name.count("/") != 1 or name.startswith("/") or name.endswith("/"):
                raise ValueError(f"{name!r} is not OWNER/NAME")
            out.append(name)
        return out

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [
            init_settings,
            env_settings,
            file_secret_settings,
        ]
        toml = _toml_file.get()
        if toml is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml))
        return tuple(sources)

    def origin(self, loc: tuple[str | int, ...]) -> Origin:
        """Where the value at `loc` came from (the default for settings made in code)."""
        return (self._provenance or Provenance()).origin(loc)

    def watches(self, repo: str) -> bool:
        """Whether `repo` is one landbot acts on (every repository when none is listed)."""
        return not self.repos or repo.lower() in {r.lower() for r in self.repos}


# Environment variable name for each settings path, for error messages and the docs.
def env_name(loc: tuple[str | int, ...]) -> str:
    parts = [str(p) for p in loc if not isinstance(p, int)]
    parts = ["class" if p == "class_" else p for p in parts]
    return "LANDBOT_" + "__".join(p.upper() for p in parts)


def load_settings(config_file: Path | None = None) -> Settings:
    """Load the settings, or raise LandbotError with one line naming the key, where it was
    set (the variable, or the file and line) and the fix.

    Unknown keys and sections, in the file or in `LANDBOT_…__…` variables, are refused with
    the nearest valid name; a value that is not JSON where JSON is expected names its
    variable."""
    if config_file is not None and not config_file.is_file():
        raise LandbotError(f"config file {config_file} does not exist; pass an existing --config")
    toml = config_file if config_file is not None else DEFAULT_CONFIG_FILE
    path = toml if toml.is_file() else None
    prov = Provenance(file=path)
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
            data = tomllib.loads(text)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise LandbotError(f"cannot read settings from {path}: {exc}; fix the file") from None
        prov.lines = toml_lines(text)
        _check_table(data, Settings, (), _FileWhere(path, prov.lines))
        prov.file_leaves = set(_leaf_paths(data, Settings, ()))
    prov.env, prov.env_sections = _scan_env(os.environ)
    token = _toml_file.set(path)
    try:
        settings = Settings()
    except ValidationError as exc:
        raise LandbotError(_validation_message(exc, prov)) from None
    except (ValueError, OSError) as exc:  # anything the checks above did not foresee
        raise LandbotError(f"cannot load the settings: {exc}; fix {prov.sources()}") from None
    finally:
        _toml_file.reset(token)
    settings._config_file = path
    settings._provenance = prov
    return settings


# --- where each value came from, and strictness ------------------------------------------

Loc = tuple[str | int, ...]
SettingPath = tuple[str, ...]


def _check_http_url(v: str) -> None:
    parts = urlsplit(v)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{mask_url(v)!r} is not an http(s) URL; write https://HOST/…")


def _keys(model: type[BaseModel]) -> dict[str, FieldInfo]:
    """A model's fields by the key a file or a variable uses (its alias, else its name)."""
    return {f.alias or name: f for name, f in model.model_fields.items()}


def _model(ann: Any) -> type[BaseModel] | None:
    return ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None


def _section(f: FieldInfo) -> type[BaseModel] | None:
    """The table model of a field that is a settings section ([github], [fixer], …)."""
    return _model(f.annotation)


def _items(f: FieldInfo) -> type[BaseModel] | None:
    """The item model of a list-of-tables field ([[triage.rules]])."""
    if get_origin(f.annotation) is list:
        args = get_args(f.annotation)
        return _model(args[0]) if args else None
    return None


def _is_json(f: FieldInfo) -> bool:
    """Whether pydantic-settings reads this field's variable as JSON (lists, tables)."""
    if any(isinstance(m, NoDecode) or m is NoDecode for m in f.metadata):
        return False
    ann = f.annotation
    return get_origin(ann) in (list, dict, tuple, set) or _model(ann) is not None


def setting_name(path: Loc) -> str:
    """A setting as a file names it: `database_url`, `[fixer] agent`, `[policy.reasons] x`."""
    parts = ["class" if p == "class_" else p for p in path if isinstance(p, str)]
    if len(parts) <= 1:
        return parts[0] if parts else "the settings"
    return f"[{'.'.join(parts[:-1])}] {parts[-1]}"


def _nearest(word: str, choices: list[str]) -> str | None:
    found = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return found[0] if found else None


def _sections() -> dict[str, type[BaseModel]]:
    return {k: m for k, f in _keys(Settings).items() if (m := _section(f)) is not None}


@dataclass(frozen=True)
class _FileWhere:
    file: Path
    lines: Mapping[Loc, int]

    def at(self, loc: Loc) -> str:
        line = _line_of(self.lines, loc)
        return f"in {self.file}" + (f" line {line}" if line is not None else "")


@dataclass(frozen=True)
class _EnvWhere:
    variable: str

    def at(self, loc: Loc) -> str:
        return f"in the environment ({self.variable})"


def _line_of(lines: Mapping[Loc, int], loc: Loc) -> int | None:
    for i in range(len(loc), 0, -1):
        if loc[:i] in lines:
            return lines[loc[:i]]
    return None


def _unknown(key: str, model: type[BaseModel], path: Loc, table: bool) -> str:
    """`unknown setting [fixer] agnet …`'s subject and its `; did you mean …?`."""
    keys = _keys(model)
    here = (*path, key)
    if not path and table:
        guess = _nearest(key, list(_sections()))
        hint = f"did you mean [{guess}]?" if guess else f"the sections are {', '.join(_sections())}"
        return f"unknown section [{key}] \x00; {hint}"
    # The right key in the wrong table (a key written above its section's header).
    elsewhere = [
        setting_name((s, key)) for s, m in _sections().items() if key in _keys(m) and (s,) != path
    ]
    guess = _nearest(key, list(keys))
    if elsewhere and (guess is None or guess != key):
        hint = f"did you mean {elsewhere[0]}?"
    elif guess:
        hint = f"did you mean {guess}?"
    else:
        hint = f"the keys there are {', '.join(keys)}"
    return f"unknown setting {setting_name(here)} \x00; {hint}"


def _check_table(data: Mapping[str, Any], model: type[BaseModel], path: Loc, where: Any) -> None:
    """Refuse a key or a table the settings do not have (a misspelling is never ignored)."""
    keys = _keys(model)
    for key, value in data.items():
        f = keys.get(key)
        here = (*path, key)
        if f is None:
            msg = _unknown(key, model, path, isinstance(value, dict))
            raise LandbotError(msg.replace("\x00", where.at(here)))
        sub = _section(f)
        if sub is not None and isinstance(value, dict):
            _check_table(value, sub, here, where)
        item = _items(f)
        if isinstance(value, list):
            for i, v in enumerate(value):
                if not isinstance(v, dict):
                    continue
                if item is not None:
                    _check_table(v, item, (*here, i), where)
                elif here == ("repos",):  # [[repos]] name = "o/r", or owner and name
                    for k in v:
                        if k not in ("owner", "name", "repo"):
                            raise LandbotError(
                                f"unknown setting [[repos]] {k} {where.at((*here, i, k))}; "
                                "a [[repos]] table takes name (owner/name), or owner and name"
                            )


def _leaf_paths(
    data: Mapping[str, Any], model: type[BaseModel], path: SettingPath
) -> Iterator[SettingPath]:
    """The settings (not tables) a file or a JSON variable sets."""
    keys = _keys(model)
    for key, value in data.items():
        f = keys.get(key)
        if f is None:
            continue
        sub = _section(f)
        if sub is not None and isinstance(value, dict):
            yield from _leaf_paths(value, sub, (*path, key))
        else:
            yield (*path, key)


def _scan_env(
    environ: Mapping[str, str],
) -> tuple[dict[SettingPath, str], dict[SettingPath, str]]:
    """The settings the environment sets, by path → variable, and the sections set whole
    as JSON (`LANDBOT_FIXER='{…}'`). Refuses a `LANDBOT_…__…` variable that is no setting,
    and a value that is not the JSON its setting needs.

    A `LANDBOT_NAME` without `__` that is not a setting is some other program's (the
    sandbox's `LANDBOT_MODEL_URL`, the test failpoints) unless it is one letter away from
    a setting, or a section and key joined by one underscore."""
    leaves: dict[SettingPath, str] = {}
    sections: dict[SettingPath, str] = {}
    top = _keys(Settings)
    for var in sorted(environ):
        if not var.upper().startswith("LANDBOT_") or len(var) == len("LANDBOT_"):
            continue
        name = var.upper()
        parts = var[len("LANDBOT_") :].lower().split("__")
        if len(parts) == 1 and parts[0] not in top:
            _refuse_near_miss(name, parts[0])
            continue
        model: type[BaseModel] = Settings
        path: SettingPath = ()
        for i, part in enumerate(parts):
            keys = _keys(model)
            f = keys.get(part)
            if f is None:
                raise LandbotError(
                    f"unknown setting {name} in the environment; {_env_hint(path, parts[i:])}"
                )
            path = (*path, part)
            sub = _section(f)
            last = i == len(parts) - 1
            if sub is not None and not last:
                model = sub
                continue
            value = environ[var]
            if last and _is_json(f):
                decoded = _json_value(name, value, f, sub)
                _check_table({part: decoded}, model, path[:-1], _EnvWhere(name))
                if sub is not None and isinstance(decoded, dict):
                    sections[path] = name
                    for leaf in _leaf_paths(decoded, sub, path):
                        leaves[leaf] = name
                    break
            elif not last and get_origin(f.annotation) is not dict:
                raise LandbotError(
                    f"unknown setting {name} in the environment; "
                    f"{setting_name(path)} has no keys: use {env_name(path)}"
                )
            leaves[path] = name  # a dict's key (LANDBOT_POLICY__REASONS__X) sets the dict
            break
    return leaves, sections


def _refuse_near_miss(name: str, rest: str) -> None:
    for section, model in _sections().items():
        key = rest.removeprefix(section + "_")
        if key != rest and key in _keys(model):
            raise LandbotError(
                f"unknown setting {name} in the environment; did you mean "
                f"{env_name((section, key))}? (two underscores between section and key)"
            )
    guess = difflib.get_close_matches(rest, list(_keys(Settings)), n=1, cutoff=0.85)
    if guess:
        raise LandbotError(
            f"unknown setting {name} in the environment; did you mean {env_name((guess[0],))}?"
        )


def _env_hint(path: SettingPath, rest: list[str]) -> str:
    """`did you mean LANDBOT_FIXER__AGENT?`: the nearest name for each part of a variable."""
    model: type[BaseModel] | None = Settings if not path else None
    if path:
        m: type[BaseModel] = Settings
        for p in path:
            sub = _section(_keys(m)[p])
            assert sub is not None
            m = sub
        model = m
    out = list(path)
    for part in rest:
        if model is None:
            return f"{env_name(tuple(out))} has no keys"
        keys = _keys(model)
        guess = part if part in keys else _nearest(part, list(keys))
        if guess is None:
            if not out:
                return f"the settings and sections are {', '.join(keys)}"
            names = ", ".join(env_name((*out, k)) for k in keys)
            return f"the [{'.'.join(out)}] settings are {names}"
        out.append(guess)
        model = _section(keys[guess])
    return f"did you mean {env_name(tuple(out))}?"


def _json_value(name: str, value: str, f: FieldInfo, sub: type[BaseModel] | None) -> Any:
    example = (
        '{"key": "value"}'
        if sub is not None or get_origin(f.annotation) is dict
        else '["first", "second"]'
    )
    try:
        decoded = json.loads(value)
    except json.JSONDecodeError as exc:
        raise LandbotError(
            f"setting {name} in the environment is not JSON ({exc.msg} at character "
            f"{exc.pos}); write it as JSON, e.g. {name}='{example}'"
        ) from None
    if sub is not None and not isinstance(decoded, dict):
        raise LandbotError(
            f"setting {name} in the environment must be a JSON object, e.g. {name}='{example}'"
        )
    return decoded


@dataclass(frozen=True)
class Origin:
    """Where one setting's value came from."""

    kind: Literal["default", "file", "environment"]
    variable: str | None = None
    file: Path | None = None
    line: int | None = None

    def __str__(self) -> str:
        if self.kind == "environment":
            return f"{self.variable} (environment)"
        if self.kind == "file":
            return f"{self.file}:{self.line}" if self.line is not None else str(self.file)
        return "default"

    def subject(self, loc: Loc) -> str:
        """`LANDBOT_FIXER__AGENT in the environment`, `[fixer] agent in FILE line 3`."""
        if self.kind == "environment":
            exact = self.variable == env_name(tuple(p for p in loc if isinstance(p, str)))
            what = self.variable if exact else f"{setting_name(loc)} (from {self.variable})"
            return f"{what} in the environment"
        if self.kind == "file":
            line = f" line {self.line}" if self.line is not None else ""
            return f"{setting_name(loc)} in {self.file}{line}"
        return f"{setting_name(loc)} ({env_name(loc)}, the default)"

    def fix(self, loc: Loc) -> str:
        if self.kind == "environment":
            return f"fix it in the environment ({self.variable})"
        if self.kind == "file":
            return f"fix it in {self.file} (or override it with {env_name(loc)})"
        return f"set it in the environment or in {DEFAULT_CONFIG_FILE}"


@dataclass
class Provenance:
    """The sources load_settings read: which setting each one set, and the file's lines."""

    file: Path | None = None
    lines: dict[Loc, int] = dc_field(default_factory=dict)
    file_leaves: set[SettingPath] = dc_field(default_factory=set)
    env: dict[SettingPath, str] = dc_field(default_factory=dict)
    env_sections: dict[SettingPath, str] = dc_field(default_factory=dict)

    def origin(self, loc: Loc) -> Origin:
        """Where the value at `loc` (a setting, or a place inside one) came from; the
        environment wins over the file, as it does for the values."""
        path = tuple(p for p in loc if isinstance(p, str))
        prefixes = [path[:i] for i in range(len(path), 0, -1)]
        for p in prefixes:
            if p in self.env:
                return Origin("environment", variable=self.env[p])
        if path in self.env_sections:
            return Origin("environment", variable=self.env_sections[path])
        if self.file is not None and (
            any(p in self.file_leaves for p in prefixes) or loc in self.lines
        ):
            return Origin("file", file=self.file, line=_line_of(self.lines, loc))
        return Origin("default")

    def sources(self) -> str:
        where = ["the environment"] + ([str(self.file)] if self.file is not None else [])
        return " or ".join(where)


def _setting_loc(loc: Loc) -> Loc:
    """The part of a pydantic error location that names settings (not union arms)."""
    out: list[str | int] = []
    model: type[BaseModel] | None = Settings
    item: type[BaseModel] | None = None
    for part in loc:
        if isinstance(part, int):
            out.append(part)
            model, item = item, None
            continue
        if model is None:
            break
        keys = _keys(model)
        f = keys.get(part) or model.model_fields.get(part)
        if f is None:
            break
        out.append(f.alias or part)
        model, item = _section(f), _items(f)
    return tuple(out)


def _validation_message(exc: ValidationError, prov: Provenance) -> str:
    errors = exc.errors()
    err = errors[0]
    raw = tuple(err["loc"])
    loc = _setting_loc(raw)
    origin = prov.origin(loc)
    if err["type"] == "extra_forbidden":  # only for values set in code: load refused it
        return f"unknown setting {setting_name(raw)}; remove it"
    msg = err["msg"].rstrip(".").removeprefix("Value error, ")
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"setting {origin.subject(loc)} is invalid: {msg}{more}; {origin.fix(loc)}"


# A key line (`key = …`, `a.b = …`, quoted keys) and a table header (`[a.b]`, `[[a.b]]`).
_BARE = r'(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|\'[^\']*\')'
_KEY_RE = re.compile(rf"\s*({_BARE}(?:\s*\.\s*{_BARE})*)\s*=")
_HEADER_RE = re.compile(rf"\s*(\[\[?)\s*({_BARE}(?:\s*\.\s*{_BARE})*)\s*\]\]?")


def _dotted(text: str) -> tuple[str, ...]:
    parts = re.findall(_BARE, text)
    return tuple(p[1:-1] if p[:1] in "\"'" else p for p in parts)


def _depth(text: str) -> tuple[int, str | None]:
    """Bracket depth change of a line outside strings and comments, and the multi-line
    string delimiter it leaves open."""
    depth, i = 0, 0
    while i < len(text):
        c = text[i]
        if c == "#":
            break
        for delim in ('"""', "'''"):
            if text.startswith(delim, i):
                end = text.find(delim, i + 3)
                if end < 0:
                    return depth, delim
                i = end + 3
                break
        else:
            if c in "\"'":
                end = i + 1
                while end < len(text) and text[end] != c:
                    end += 2 if c == '"' and text[end] == "\\" else 1
                i = end + 1
                continue
            depth += (c in "[{") - (c in "]}")
            i += 1
            continue
    return depth, None


def toml_lines(text: str) -> dict[Loc, int]:
    """The line of every table and key of a TOML text, by path ([[x]] tables by index);
    tomllib keeps no positions."""
    lines: dict[Loc, int] = {}
    table: Loc = ()
    counts: dict[Loc, int] = {}
    depth = 0
    open_string: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if open_string is not None:
            if open_string in line:
                open_string = None
            continue
        if depth > 0:
            change, open_string = _depth(line)
            depth = max(0, depth + change)
            continue
        header = _HEADER_RE.match(line)
        if header is not None and not _KEY_RE.match(line):
            path: Loc = _dotted(header.group(2))
            lines.setdefault(path, number)
            if header.group(1) == "[[":
                counts[path] = counts.get(path, -1) + 1
                path = (*path, counts[path])
                lines[path] = number
            table = path
            continue
        key = _KEY_RE.match(line)
        if key is not None:
            lines.setdefault((*table, *_dotted(key.group(1))), number)
            change, open_string = _depth(line[key.end() :])
            depth = max(0, change)
    return lines


def mask_url(text: str) -> str:
    """A URL with its password (and query secrets) replaced by ***, for show and messages."""
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    if not parts.scheme or not parts.netloc:
        return text
    netloc = parts.netloc
    if parts.password is not None:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.split(':', 1)[0]}:***@{host}"
    query = parts.query
    secret = re.compile(r"pass|secret|token|key", re.I)
    if query and any(secret.search(k) for k, _ in parse_qsl(query)):
        query = urlencode(
            [(k, "***" if secret.search(k) else v) for k, v in parse_qsl(query)], safe="*"
        )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


# --- `landbot config show` --------------------------------------------------------------

MASK = "********"


@dataclass(frozen=True)
class Shown:
    """One effective setting for `landbot config show`: secrets masked, with its origin."""

    path: SettingPath
    value: Any  # JSON-able; a secret is MASK when set
    secret: bool
    origin: Origin

    @property
    def is_set(self) -> bool:
        return self.value is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "setting": ".".join(self.path),
            "toml": setting_name(self.path),
            "env": env_name(self.path),
            "value": self.value,
            "set": self.is_set,
            "secret": self.secret,
            "source": self.origin.kind,
            "variable": self.origin.variable,
            "file": None if self.origin.file is None else str(self.origin.file),
            "line": self.origin.line,
        }


def _shown_value(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return MASK
    if isinstance(value, BaseModel):
        return _shown_value(value.model_dump(by_alias=True))
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, str):
        return mask_url(value)
    if isinstance(value, list | tuple):
        return [_shown_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _shown_value(v) for k, v in value.items()}
    return value


def effective(settings: Settings) -> list[Shown]:
    """Every setting's value as landbot uses it, in the order of reference()."""
    out: list[Shown] = []

    def walk(model: BaseModel, path: SettingPath) -> None:
        for name, f in type(model).model_fields.items():
            key = f.alias or name
            value = getattr(model, name)
            if _section(f) is not None and isinstance(value, BaseModel):
                walk(value, (*path, key))
                continue
            secret = f.annotation is SecretStr or SecretStr in get_args(f.annotation)
            shown = None if value is None else _shown_value(value)
            out.append(Shown((*path, key), shown, secret, settings.origin((*path, key))))

    walk(settings, ())
    return out


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        items = ", ".join(
            f"{k if re.fullmatch(r'[A-Za-z0-9_-]+', k) else json.dumps(k)} = {_toml_value(v)}"
            for k, v in value.items()
        )
        return "{" + (f" {items} " if items else "") + "}"
    return json.dumps(str(value))


def render_show(settings: Settings) -> str:
    """The effective settings as TOML (it loads back, secrets aside), each line saying where
    its value came from; unset settings as comments."""
    rows = effective(settings)
    source = settings._config_file
    lines = [
        "# landbot's effective settings: environment over "
        + (f"{source}" if source is not None else f"{DEFAULT_CONFIG_FILE} (not found)")
        + " over defaults; secrets masked"
    ]
    # Top-level keys first: in TOML, a key after a [table] header belongs to that table.
    ordered = sorted(rows, key=lambda r: len(r.path) > 1)
    table: SettingPath = ()
    for row in ordered:
        section = row.path[:-1]
        if section != table:
            lines += ["", f"[{'.'.join(section)}]"]
            table = section
        origin = str(row.origin)
        if not row.is_set:
            lines.append(f"# {row.path[-1]} is not set  ({env_name(row.path)})")
            continue
        text = f"{row.path[-1]} = {_toml_value(row.value)}"
        note = f"set, masked; {origin}" if row.secret else origin
        lines.append(f"{text}  # {note}")
    return "\n".join(lines) + "\n"


def require(value: Any, name: str, toml_key: str) -> Any:
    """Return `value`, or fail with the one line that says which setting is missing."""
    if value is None or value == "" or value == []:
        raise LandbotError(
            f"setting {name} is not set; set it in the environment or as {toml_key} "
            "in config/landbot.toml"
        )
    return value


def reference() -> list[tuple[str, str, str, str]]:
    """(environment variable, TOML key, default, meaning) for every setting, in order."""
    rows: list[tuple[str, str, str, str]] = []

    def walk(model: type[BaseModel], path: tuple[str, ...]) -> None:
        for name, field in model.model_fields.items():
            key = field.alias or name
            ann = field.annotation
            if isinstance(ann, type) and issubclass(ann, BaseModel) and ann is not TriageRule:
                walk(ann, (*path, key))
                continue
            value = (
                field.default_factory()  # type: ignore[call-arg]
                if field.default_factory is not None
                else field.default
            )
            default = (
                ""
                if value is None
                else json.dumps(value)
                if isinstance(value, list)
                else str(value)
            )
            toml = (f"[{'.'.join(path)}] " if path else "") + key
            rows.append((env_name((*path, key)), toml, default, field.description or ""))

    walk(Settings, ())
    return rows


def reference_markdown() -> str:
    lines = ["| environment | TOML | default | meaning |", "|---|---|---|---|"]
    for env, toml, default, meaning in reference():
        lines.append(f"| `{env}` | `{toml}` | {f'`{default}`' if default else ''} | {meaning} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(reference_markdown(), end="")
