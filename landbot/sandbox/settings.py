"""The `[sandbox]` settings for `landbot sandbox run`, read without pydantic when unset.

`landbot sandbox run -- true` must start fast, and importing pydantic and loading the full
Settings costs more than the sandbox itself. When neither the environment
(`LANDBOT_SANDBOX…`) nor the TOML file (a `sandbox` table) sets anything for the sandbox,
the defaults apply and pydantic is never imported; otherwise the real `load_settings` runs,
so validation and error messages are exactly the ones of every other command. A test keeps
the defaults here equal to SandboxSettings'.

`host_secrets` lists the host files a job must never see (the App key, the config file, the
store, the state folder) for `run_sandboxed(hidden=...)`; `secret_paths` is the same from
plain values, so `landbot sandbox run` can check them without pydantic.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, unquote, urlsplit

if TYPE_CHECKING:
    from landbot.config import Settings

DEFAULT_CONFIG_FILE = Path("config/landbot.toml")  # as landbot.config.DEFAULT_CONFIG_FILE
DEFAULT_DATABASE_URL = "sqlite:///./landbot.db"  # as Settings.database_url
DEFAULT_STATE_DIR = Path(".landbot")  # as FixerSettings.state_dir


@dataclass(frozen=True)
class SandboxOptions:
    uid: int = 65534
    gid: int = 65534
    read_only: tuple[Path, ...] = ()
    etc: tuple[str, ...] = ()
    cpus: float | None = None  # None: half the host's cores (limits.cpu_cap)
    tmp_mb: int = 1024
    disk_mb: int = 10240
    hidden: tuple[Path, ...] = ()  # not a setting: host_secrets of the loaded settings


def database_paths(url: str) -> list[Path]:
    """The host files or folders a database URL names: a SQLite file (with its journal,
    WAL and shared-memory files), or a PostgreSQL unix socket folder (pure)."""
    parts = urlsplit(url)
    scheme = parts.scheme.split("+")[0]
    if scheme == "sqlite":
        # sqlite:///relative/path, sqlite:////absolute/path; sqlite:// is in memory
        path = url.split(":///", 1)[1].split("?", 1)[0] if ":///" in url else ""
        if not path or path == ":memory:":
            return []
        db = Path(unquote(path))
        return [db, *(db.with_name(db.name + s) for s in ("-journal", "-wal", "-shm"))]
    if scheme in ("postgresql", "postgres"):
        hosts = [unquote(parts.netloc.rpartition("@")[2].split(":")[0])]
        for value in parse_qs(parts.query).get("host", []):
            hosts += value.split(",")
        return [Path(h) for h in hosts if h.startswith("/")]
    return []


def secret_paths(
    *,
    private_key_file: Path | None,
    config_file: Path | None,
    database_url: str,
    state_dir: Path | None,
) -> tuple[Path, ...]:
    """The existing host paths among these, absolute (pure but for existence checks)."""
    candidates = [private_key_file, config_file, *database_paths(database_url), state_dir]
    out: list[Path] = []
    for p in candidates:
        if p is not None and os.path.lexists(p):
            out.append(Path(os.path.abspath(p)))
    return tuple(out)


def host_secrets(settings: Settings, config_file: Path | None = None) -> tuple[Path, ...]:
    """What a job must never see: the App key, the config file loaded (`config_file`, or
    config/landbot.toml when it exists), the store (SQLite file, or a PostgreSQL socket
    folder), and the state folder (mirrors of every repository, other jobs' trees)."""
    return secret_paths(
        private_key_file=settings.github.private_key_file,
        config_file=config_file if config_file is not None else DEFAULT_CONFIG_FILE,
        database_url=settings.database_url,
        state_dir=settings.fixer.state_dir,
    )


def _plain_secrets(
    environ: Mapping[str, str], toml: Mapping[str, object] | None, config_file: Path
) -> tuple[Path, ...]:
    """host_secrets from the raw environment and TOML, without pydantic."""

    def get(env: str, table: str | None, key: str) -> str | None:
        for name, value in environ.items():
            if name.upper() == env:
                return value
        section = toml.get(table) if toml is not None and table else toml
        if isinstance(section, Mapping):
            found = section.get(key)
            return found if isinstance(found, str) else None
        return None

    key = get("LANDBOT_GITHUB__PRIVATE_KEY_FILE", "github", "private_key_file")
    state = get("LANDBOT_FIXER__STATE_DIR", "fixer", "state_dir")
    return secret_paths(
        private_key_file=Path(key) if key else None,
        config_file=config_file,
        database_url=get("LANDBOT_DATABASE_URL", None, "database_url") or DEFAULT_DATABASE_URL,
        state_dir=Path(state) if state else DEFAULT_STATE_DIR,
    )


def needs_full_settings(environ: Mapping[str, str], toml: Mapping[str, object] | None) -> bool:
    """Whether anything configures the sandbox (pure)."""
    if any(name.upper().startswith("LANDBOT_SANDBOX") for name in environ):
        return True
    return toml is not None and "sandbox" in toml


def load_sandbox_options(config_file: Path | None) -> SandboxOptions:
    path = config_file if config_file is not None else DEFAULT_CONFIG_FILE
    toml: Mapping[str, object] | None = None
    broken = False
    if path.is_file():
        try:
            with open(path, "rb") as f:
                toml = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError):
            broken = True
    elif config_file is not None:
        broken = True  # a --config that does not exist
    if not broken and not needs_full_settings(os.environ, toml):
        return SandboxOptions(hidden=_plain_secrets(os.environ, toml, path))
    # Something is set (or wrong): the real settings, with their validation and messages.
    from landbot.config import load_settings

    settings = load_settings(config_file)
    s = settings.sandbox
    return SandboxOptions(
        uid=s.uid,
        gid=s.gid,
        read_only=tuple(s.read_only),
        etc=tuple(s.etc),
        cpus=s.cpus,
        tmp_mb=s.tmp_mb,
        disk_mb=s.disk_mb,
        hidden=host_secrets(settings, path),
    )
