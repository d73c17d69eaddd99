"""The environment a sandboxed job starts with: `env -i` plus an allowlist (pure code).

Only a few plain variables are rebuilt for the job (PATH, LANG, HOME, TMPDIR, TERM) and the
caller may add job variables named `LANDBOT_*`. Nothing else of the supervisor's environment
crosses, and a name that looks like a secret is refused even when passed on purpose: the
agent inside is treated as hostile, so a token in its environment would be a token leaked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from landbot.errors import LandbotError

SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
SANDBOX_HOME = "/home/sandbox"
SANDBOX_TMPDIR = "/tmp"

SECRET_SUFFIXES = ("_TOKEN", "_SECRET", "_KEY", "_PASSWORD")


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class EnvRefused(LandbotError):
    """A variable that may not enter the sandbox was passed to it."""


def is_secret_name(name: str) -> bool:
    """Whether `name` looks like it holds a secret (`*_TOKEN`, `*_SECRET`, `*_KEY`, …)."""
    upper = name.upper()
    return upper.endswith(SECRET_SUFFIXES)


def is_settings_name(name: str) -> bool:
    """Whether `name` configures the bot itself (`LANDBOT_<FIELD>` or `LANDBOT_<FIELD>__…`):
    never a job variable, since a setting may hold a secret (a database URL's password)."""
    upper = name.upper()
    if not upper.startswith("LANDBOT_"):
        return False
    rest = upper[len("LANDBOT_") :]
    if "__" in rest:
        return True  # every nested setting
    # Imported here, not at the top: only a passed job variable pays for pydantic.
    from landbot.config import Settings

    return rest.lower() in Settings.model_fields


def check_job_variable(name: str, value: str) -> None:
    """Raise EnvRefused with one line unless `name=value` may be passed into the sandbox."""
    if not _NAME.fullmatch(name):
        raise EnvRefused(f"{name!r} is not a valid environment variable name")
    if not name.startswith("LANDBOT_"):
        raise EnvRefused(
            f"{name} may not be passed into the sandbox: only LANDBOT_* job variables are "
            "(set other variables in the command itself, e.g. `env NAME=VALUE CMD`)"
        )
    if is_secret_name(name):
        raise EnvRefused(
            f"{name} looks like a secret (*_TOKEN, *_SECRET, *_KEY, *_PASSWORD) and never "
            "enters the sandbox; the model proxy adds the provider key outside it"
        )
    if is_settings_name(name):
        raise EnvRefused(f"{name} is a landbot setting, not a job variable; it stays outside")
    if "\0" in value:
        raise EnvRefused(f"{name} has a NUL byte in its value")


def sandbox_environment(
    job_vars: Mapping[str, str],
    parent: Mapping[str, str],
    trusted: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The complete environment of the sandboxed job.

    `job_vars` come from the caller and are checked; `trusted` are set by the sandbox
    runner itself (the proxy's addresses) and are not; from `parent` only LANG and TERM
    are copied, because they change how output looks, never what the job can reach.
    """
    env = {
        "PATH": SANDBOX_PATH,
        "HOME": SANDBOX_HOME,
        "TMPDIR": SANDBOX_TMPDIR,
        "LANG": parent.get("LANG") or "C.UTF-8",
    }
    if parent.get("TERM"):
        env["TERM"] = parent["TERM"]
    for name, value in job_vars.items():
        check_job_variable(name, value)
        env[name] = value
    if trusted:
        env.update(trusted)
    return env
