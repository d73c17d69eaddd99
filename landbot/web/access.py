"""The dashboard's token: who may read `GET /` and `GET /metrics`.

By default (`[web] auth = "token"`) every client must send a token, loopback or not: a
reverse proxy on the same host that adds no forwarding header (nginx's plain `proxy_pass`)
makes every client look like a loopback one, so the peer's address proves nothing. The
token is `[web] token` when set; otherwise the one `landbot serve` generates at its first
start and keeps in the state folder (`[fixer] state_dir`/web-token, mode 600), which jobs
never see (landbot.sandbox.settings.host_secrets hides the state folder). `[web] auth =
"loopback"` switches the token off: then only a direct loopback client is served.

    token = access.load_or_make(settings)      # serve: the token, made at the first start
    token = access.read(settings)              # status: the token, never made (None: none yet)
    access.open_url(host, port, token)         # the address a person can open
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path
from typing import Final
from urllib.parse import quote

from pydantic import SecretStr

from landbot.config import Settings
from landbot.errors import LandbotError

TOKEN_FILE: Final = "web-token"
TOKEN_BYTES: Final = 32  # 43 URL-safe characters: safe in ?token= without escaping
MIN_FILE_TOKEN: Final = 16  # a shorter file was not written by landbot: refuse it
SHOWN: Final = 4  # characters of a token a log line may show


def token_path(settings: Settings) -> Path:
    """Where the generated token lives (whether or not it exists yet)."""
    return settings.fixer.state_dir / TOKEN_FILE


def configured(settings: Settings) -> str | None:
    """`[web] token`, when the operator set one (blank counts as unset)."""
    secret = settings.web.token
    value = secret.get_secret_value().strip() if secret is not None else ""
    return value or None


def read(settings: Settings) -> str | None:
    """The token the dashboard needs, without making one: `[web] token`, else the file's;
    None with `[web] auth = "loopback"` or before serve's first start."""
    if settings.web.auth != "token":
        return None
    return configured(settings) or _read_file(token_path(settings))


def load_or_make(settings: Settings) -> str | None:
    """`read`, but the generated token is made on the first start. Two serves starting at
    once agree on one token: the file appears whole (a hard link of a finished file) or
    not at all, and the second reads the first's."""
    if settings.web.auth != "token":
        return None
    own = configured(settings)
    if own is not None:
        return own
    path = token_path(settings)
    found = _read_file(path)
    if found is not None:
        return found
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LandbotError(
            f"cannot make {path.parent} for the dashboard token ({exc.strerror}); set "
            "[fixer] state_dir to a folder landbot may write, or set [web] token"
        ) from None
    token = secrets.token_urlsafe(TOKEN_BYTES)
    draft = path.with_name(f".{TOKEN_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    # O_EXCL and 0o600 from the start: the token is never readable by others, not even
    # between the write and a chmod.
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(token + "\n")
            out.flush()
            os.fsync(out.fileno())
        with contextlib.suppress(FileExistsError):  # another serve won: use its token
            os.link(draft, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(draft)
    found = _read_file(path)
    if found is None:
        raise LandbotError(f"{path} vanished while landbot made it; start landbot serve again")
    return found


def _read_file(path: Path) -> str | None:
    """The token in `path` (None: no such file). Refused: a link, anything but a regular
    file, a file others may read or write, one owned by another user, or a garbled one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except PermissionError:
        raise LandbotError(
            f"cannot read the dashboard token {path}: it is the file of the user landbot "
            "serve runs as; run this as that user"
        ) from None
    except OSError as exc:
        raise LandbotError(
            f"cannot read the dashboard token {path} ({exc.strerror}); delete it and "
            "landbot serve makes a new one"
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise LandbotError(f"{path} is not a regular file; delete it (landbot makes it)")
        if info.st_uid != os.geteuid():
            raise LandbotError(
                f"{path} belongs to uid {info.st_uid}, not to landbot's ({os.geteuid()}); "
                "delete it and landbot serve makes its own"
            )
        if info.st_mode & 0o077:
            raise LandbotError(
                f"{path} is readable or writable by others (mode "
                f"{stat.S_IMODE(info.st_mode):o}); chmod 600 {path}, or delete it and landbot "
                "serve makes a new token"
            )
        text = os.read(fd, 1024).decode("ascii", errors="replace").strip()
    finally:
        os.close(fd)
    if len(text) < MIN_FILE_TOKEN or not text.isascii() or not text.isprintable() or " " in text:
        raise LandbotError(
            f"{path} does not hold a dashboard token; delete it and landbot serve makes one"
        )
    return text


def shown(token: str) -> str:
    """The first characters of `token`: enough to tell two apart, not enough to use."""
    return token[:SHOWN] + "…"


def open_url(host: str, port: int, token: str | None) -> str:
    """The dashboard's address for a browser on this host, with the token when there is
    one. A wildcard address is not one a browser can open: its loopback stands in."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    query = f"?token={quote(token, safe='')}" if token else ""
    return f"http://{host}:{port}/{query}"


def with_token(settings: Settings, token: str | None) -> Settings:
    """`settings` with `token` as `[web] token`: what the app checks requests against."""
    if token is None:
        return settings
    web = settings.web.model_copy(update={"token": SecretStr(token)})
    return settings.model_copy(update={"web": web})


def where(settings: Settings) -> str:
    """Where the token comes from, for a person: the setting, or the file."""
    if configured(settings) is not None:
        return "[web] token"
    return str(token_path(settings).absolute())


def status_line(settings: Settings) -> str:
    """`landbot status`'s line about the dashboard: its address with the token (whoever
    may run this may read the token file anyway), or why there is none yet."""
    web = settings.web
    if web.auth == "loopback":
        return (
            f'dashboard: {open_url(web.host, web.port, None)} (no token: [web] auth is "loopback")'
        )
    try:
        token = read(settings)
    except LandbotError as exc:
        return f"dashboard: no token: {exc}"
    if token is None:
        return (
            f"dashboard: no token yet; landbot serve makes it at its first start, in "
            f"{token_path(settings).absolute()}"
        )
    return f"dashboard: {open_url(web.host, web.port, token)}"
