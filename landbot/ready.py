"""Start-up checks: `landbot serve`, `worker` and `poll` refuse to start on a setting they
would fail on later, in one line naming the setting, where it was set, and the fix.

Apart from config.py because the checks use the stages' own rules (the sandbox's
read-only paths, the store's URLs, the triage rules), which config.py must not import.
"""

from __future__ import annotations

import os
from pathlib import Path

from landbot.config import Loc, Settings, env_name, require
from landbot.errors import LandbotError
from landbot.sandbox import bwrap
from landbot.store.db import url_problem


def check_ready(
    settings: Settings,
    *,
    webhook: bool = False,
    github: bool = True,
    store: bool = True,
    work: bool = True,
) -> None:
    """Refuse to start on a setting the command would fail on later, in one line naming
    the setting, where it was set, and the fix (`serve`, `worker`, `poll`).

    `webhook`: the webhook secret (serve); `github`: the credentials and the App key;
    `store`: the database URL; `work`: what jobs use (the fixer, the state folder, the
    sandbox's read-only paths, the triage rules)."""
    if store:
        check_store(settings)
    if github:
        _check_github(settings, webhook=webhook)
    if work:
        _check_work(settings)


def check_store(settings: Settings) -> None:
    problem = url_problem(settings.database_url)
    if problem is not None:
        path = ("database_url",)
        raise LandbotError(f"setting {settings.origin(path).subject(path)}: {problem}")


def _check_github(settings: Settings, *, webhook: bool) -> None:
    gh = settings.github
    if webhook:
        require(gh.webhook_secret, "LANDBOT_GITHUB__WEBHOOK_SECRET", "[github] webhook_secret")
    if gh.token is not None:
        return
    if gh.app_id is None and gh.private_key_file is None:
        raise LandbotError(
            "no GitHub credentials: set LANDBOT_GITHUB__TOKEN, or LANDBOT_GITHUB__APP_ID and "
            "LANDBOT_GITHUB__PRIVATE_KEY_FILE ([github] app_id and private_key_file)"
        )
    for have, need in (("app_id", "private_key_file"), ("private_key_file", "app_id")):
        if getattr(gh, need) is None:
            path = ("github", have)
            raise LandbotError(
                f"setting {settings.origin(path).subject(path)} needs [github] {need} "
                f"({env_name(('github', need))}) too; set it, or use LANDBOT_GITHUB__TOKEN"
            )
    key = gh.private_key_file
    assert key is not None
    path = ("github", "private_key_file")
    subject = settings.origin(path).subject(path)
    try:
        pem = key.read_bytes()
    except OSError as exc:
        why = "does not exist" if not key.exists() else f"cannot be read ({exc.strerror})"
        raise LandbotError(
            f"setting {subject} names {key}, which {why}; point it at the App's private key (PEM)"
        ) from None
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        load_pem_private_key(pem, password=None)
    except (ValueError, TypeError):
        raise LandbotError(
            f"setting {subject} names {key}, which is not an unencrypted PEM private key; "
            "download the App's private key again from its GitHub settings page"
        ) from None


def _check_work(settings: Settings) -> None:
    fixer = settings.fixer
    agent = ("fixer", "agent")
    # backend = "actions": the agent is the repository's workflow's choice, not the host's.
    local = fixer.backend == "local"
    if local and fixer.agent == "command" and not fixer.command:
        origin = settings.origin(agent)
        if origin.kind != "default":  # the default: no fixer configured, hand-backs only
            raise LandbotError(
                f'setting {origin.subject(agent)} is "command" but [fixer] command '
                "(LANDBOT_FIXER__COMMAND) is empty; set the argv to run, or remove the agent "
                "setting to run without a fixer"
            )
    if local and fixer.agent != "command" and fixer.model_url is None:
        raise LandbotError(
            f"setting {settings.origin(agent).subject(agent)} is {fixer.agent!r}, which needs "
            "[fixer] model_url (LANDBOT_FIXER__MODEL_URL), the model endpoint the proxy "
            "forwards to; set it"
        )
    state = ("fixer", "state_dir")
    problem = _folder_problem(fixer.state_dir)
    if problem is not None:
        raise LandbotError(
            f"setting {settings.origin(state).subject(state)} is {fixer.state_dir}, which "
            f"landbot cannot use: {problem}; point it at a folder landbot may create or write"
        )
    for i, extra in enumerate(settings.sandbox.read_only):
        loc: Loc = ("sandbox", "read_only", i)
        real = os.path.realpath(extra)
        if not os.path.exists(real):
            raise LandbotError(
                f"setting {settings.origin(loc).subject(loc)} lists {extra}, which does not "
                "exist; remove it or create it"
            )
        bwrap.check_read_only(real, os.path.realpath(fixer.state_dir))
    # Imported here: the triage rules' engine costs a command that checks only the store
    # (`landbot status`) a tenth of a second it does not need.
    from landbot.triage.classify import compile_rules

    compile_rules(settings.triage.rules)


def _folder_problem(path: Path) -> str | None:
    """Why `path` cannot be used as a folder landbot writes (None: it can). Nothing is
    created: a probe file in the nearest existing folder is made and removed, which also
    answers on a read-only mount and for root, where permission bits say nothing."""
    import tempfile

    probe = path.absolute()
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a folder"
    try:
        fd, name = tempfile.mkstemp(dir=probe, prefix=".landbot-probe-")
    except OSError as exc:
        return f"{probe} is not writable ({exc.strerror})"
    os.close(fd)
    os.unlink(name)
    return None
