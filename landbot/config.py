"""Settings: environment `LANDBOT_…` (``__`` for nesting) over a TOML file over defaults.

The TOML file is `config/landbot.toml` in the current directory, or the file given with
``--config``. Secrets are ``SecretStr`` so they never show up in a repr or a log line.
"""

from __future__ import annotations

import contextvars
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, PrivateAttr, SecretStr, ValidationError, field_validator
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


class GitHubSettings(BaseModel):
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
        return v.rstrip("/")

    @property
    def graphql_url(self) -> str:
        return f"{self.api_url}/graphql"


class PolicySettings(BaseModel):
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


class FixerSettings(BaseModel):
    @property
    def enabled(self) -> bool:
        """An agent is configured: a command, or a model agent with a model endpoint."""
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


class SandboxSettings(BaseModel):
    read_only: list[Path] = Field(
        default_factory=list, description="extra host paths visible read-only (JSON list in env)"
    )
    allowed_hosts: list[str] = Field(
        default_factory=list, description="package registries the sandbox may reach"
    )
    uid: int = Field(65534, description="unprivileged uid the sandbox runs as")
    gid: int = Field(65534, description="its gid")
    etc: list[str] = Field(
        default_factory=list,
        description="extra names under /etc shown read-only, beyond the toolchain's allowlist "
        "(e.g. pip.conf; JSON list in env)",
    )
    cpus: float = Field(
        2.0, gt=0, description="CPU cap of one job in cores (cgroup quota; else nice + rlimit)"
    )
    tmp_mb: int = Field(1024, ge=1, description="size of the job's private /tmp and HOME, MB each")
    disk_mb: int = Field(
        10240, ge=0, description="size cap of a job's work tree filesystem, MB (0: no cap)"
    )


class TriageRule(BaseModel):
    pattern: str
    # One of the classes of design.md; validated by triage when it compiles the rules.
    class_: str = Field(alias="class")


class TriageSettings(BaseModel):
    rules: list[TriageRule] = Field(
        default_factory=list,
        description="extra classification rules: [[triage.rules]] pattern, class",
    )
    max_log_bytes: int = Field(
        20 * 1024 * 1024, ge=1024, description="bytes of a job log kept (the tail)"
    )


class WorkerSettings(BaseModel):
    lease_seconds: float = Field(
        120, gt=0, description="a job's lease; a dead worker's job is retaken after it"
    )
    idle_sleep: float = Field(0.5, gt=0, description="seconds between polls of an idle store")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="LANDBOT_",
        env_nested_delimiter="__",
        extra="ignore",
        populate_by_name=True,
    )
    # The TOML file these settings were read from, if any: a job must never see it.
    _config_file: Path | None = PrivateAttr(default=None)

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

    def watches(self, repo: str) -> bool:
        """Whether `repo` is one landbot acts on (every repository when none is listed)."""
        return not self.repos or repo.lower() in {r.lower() for r in self.repos}


# Environment variable name for each settings path, for error messages and the docs.
def env_name(loc: tuple[str | int, ...]) -> str:
    parts = [str(p) for p in loc if not isinstance(p, int)]
    parts = ["class" if p == "class_" else p for p in parts]
    return "LANDBOT_" + "__".join(p.upper() for p in parts)


def load_settings(config_file: Path | None = None) -> Settings:
    """Load the settings, or raise LandbotError with one line naming the key and the fix."""
    if config_file is not None and not config_file.is_file():
        raise LandbotError(f"config file {config_file} does not exist; pass an existing --config")
    toml = config_file if config_file is not None else DEFAULT_CONFIG_FILE
    token = _toml_file.set(toml if toml.is_file() else None)
    try:
        settings = Settings()
        settings._config_file = toml if toml.is_file() else None
        return settings
    except ValidationError as exc:
        err = exc.errors()[0]
        name = env_name(tuple(err["loc"]))
        msg = err["msg"].rstrip(".")
        raise LandbotError(
            f"setting {name} is invalid: {msg}; fix it in the environment or in {toml}"
        ) from None
    except (ValueError, OSError) as exc:  # a TOML syntax error, an unreadable file
        raise LandbotError(f"cannot read settings from {toml}: {exc}; fix the file") from None
    finally:
        _toml_file.reset(token)


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
