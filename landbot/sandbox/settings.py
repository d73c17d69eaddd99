"""The `[sandbox]` settings for `landbot sandbox run`, read without pydantic when unset.

`landbot sandbox run -- true` must start fast, and importing pydantic and loading the full
Settings costs more than the sandbox itself. When neither the environment
(`LANDBOT_SANDBOX…`) nor the TOML file (a `sandbox` table) sets anything for the sandbox,
the defaults apply and pydantic is never imported; otherwise the real `load_settings` runs,
so validation and error messages are exactly the ones of every other command. A test keeps
the defaults here equal to SandboxSettings'.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CONFIG_FILE = Path("config/landbot.toml")  # as landbot.config.DEFAULT_CONFIG_FILE


@dataclass(frozen=True)
class SandboxOptions:
    uid: int = 65534
    gid: int = 65534
    read_only: tuple[Path, ...] = ()


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
        return SandboxOptions()
    # Something is set (or wrong): the real settings, with their validation and messages.
    from landbot.config import load_settings

    s = load_settings(config_file).sandbox
    return SandboxOptions(uid=s.uid, gid=s.gid, read_only=tuple(s.read_only))
