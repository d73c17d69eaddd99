"""landbot's log: one set-up, and one way to log an event.

    logs.configure("info")                    # once, in `landbot serve` / worker / poll / retry
    logs.event(log, "comment posted", repo="acme/widgets", pr=7, comment_id=12)
    with logs.bound(drop_id=5, repo="acme/widgets", pr=7):
        ...                                   # every line in here carries these fields

The standard library's `logging`, not structlog: the pipeline's modules and the libraries
under them (githubkit, httpx, uvicorn, SQLAlchemy) already log through it, and one handler
with two formatters is all this needs, with no dependency added.

Lines are JSON (one object per line: time, level, logger, event, then the fields) unless the
stream is a terminal, where they are `time level logger  event  key=value ...` for a person.
The event is a short fixed phrase ("drop decided"); what varies goes in the fields (repo,
pr, head_sha, drop_id, delivery_id, ...), so a log tool can filter on them.

Secrets never reach the stream: every value and message is redacted on the way out, both
the known values (`add_secrets`, `secrets_of(settings)`: every SecretStr setting, the App's
private key, the database password) and the shapes of credentials that are minted at run
time (installation tokens, JWTs, `Authorization` headers, credentials in URLs, PEM keys).
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from landbot.errors import LandbotError

ENV = "LANDBOT_LOG_LEVEL"
LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
DEFAULT_LEVEL = "info"
# The record attribute `event` puts its fields under.
FIELDS_ATTR = "landbot_fields"
CONTEXT_ATTR = "landbot_context"
# The keys every JSON line starts with; a field of the same name does not replace them.
RESERVED = ("time", "level", "logger", "event")
# The identifiers an operator filters on come first, in this order.
FIRST = ("repo", "pr", "head_sha", "drop_id", "delivery_id")
HANDLER_NAME = "landbot"
# Shorter known values are not redacted: masking every "s" would garble the log, and a
# secret that short is guessed, not read from a log.
MIN_SECRET = 8
MASK = "***"

_context: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar(
    "landbot_log_context", default=None
)
_secrets: set[str] = set()
_secrets_lock = threading.Lock()

# Credentials whose values are not known in advance (minted at run time, or from a payload).
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            re.S,
        ),
        "-----PRIVATE KEY " + MASK + "-----",
    ),
    # An Authorization header in any rendering: `Authorization: token x`, a dict's repr.
    (
        re.compile(
            r"(?i)(\b(?:proxy-)?authorization\b['\"]?\s*[:=,]\s*\(?\s*b?['\"]?)"
            r"(?:(?:bearer|token|basic)\s+)?[^\s'\",)}\]]+"
        ),
        r"\1" + MASK,
    ),
    (re.compile(r"(?i)\b(bearer|token)\s+[A-Za-z0-9_\-.]{16,}"), r"\1 " + MASK),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9_\-]{16,}"), "gh_" + MASK),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{16,}"), "github_pat_" + MASK),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), MASK),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"), "sk-" + MASK),
    # A signed URL's signature (the job-log download GitHub redirects to), a token in a query.
    (
        re.compile(
            r"(?i)([?&](?:sig|signature|x-amz-signature|x-amz-security-token|x-amz-credential"
            r"|token|access_token|jwt)=)[^&\s\"'#]+"
        ),
        r"\1" + MASK,
    ),
    # user:password@ in a URL (git remotes, database URLs).
    (re.compile(r"(\b[a-z][a-z0-9+.\-]*://[^/\s:@]*:)[^@\s/]+@"), r"\1" + MASK + "@"),
)


# --- levels -------------------------------------------------------------------------------


def parse_level(text: str, source: str = "--log-level") -> int:
    """The logging level `text` names; LandbotError (exit 2) naming the allowed ones."""
    level = LEVELS.get(text.strip().lower())
    if level is None:
        raise LandbotError(f"{source} {text!r} is not a log level; use one of {', '.join(LEVELS)}")
    return level


def level_from(option: str | None, environ: Mapping[str, str] | None = None) -> int:
    """The level asked for: the option, else LANDBOT_LOG_LEVEL, else info."""
    if option is not None:
        return parse_level(option)
    env = (os.environ if environ is None else environ).get(ENV)
    if env is not None and env.strip():
        return parse_level(env, ENV)
    return LEVELS[DEFAULT_LEVEL]


# --- events and context -------------------------------------------------------------------


def event(
    logger: logging.Logger,
    name: str,
    level: int = logging.INFO,
    /,
    *,
    exc_info: bool = False,
    **fields: Any,
) -> None:
    """Log the event `name` (a fixed phrase) with `fields` (None values left out)."""
    _check_names(fields)
    if not logger.isEnabledFor(level):
        return
    kept = {k: v for k, v in fields.items() if v is not None}
    # The bound fields ride on the record itself, so any handler sees them (pytest's too).
    extra = {FIELDS_ATTR: kept, CONTEXT_ATTR: dict(context())}
    logger.log(level, name, exc_info=exc_info, extra=extra, stacklevel=2)


@contextmanager
def bound(**fields: Any) -> Iterator[None]:
    """Add `fields` to every line logged in this block (in this thread), the block's own
    events included; None values are left out, inner blocks add to outer ones."""
    _check_names(fields)
    outer = _context.get() or {}
    token = _context.set({**outer, **{k: v for k, v in fields.items() if v is not None}})
    try:
        yield
    finally:
        _context.reset(token)


def _check_names(fields: Mapping[str, Any]) -> None:
    # `level=` as a keyword would be a field, not the level: a mistake to catch in the tests.
    taken = sorted(set(fields) & set(RESERVED))
    if taken:
        raise TypeError(f"{', '.join(taken)} cannot be a log field: it is a key of every line")


def context() -> Mapping[str, Any]:
    """The fields bound here now."""
    return _context.get() or {}


def drop_fields(row: Any) -> dict[str, Any]:
    """The identifiers of a drop (a core Drop or a stored one) to bind or log."""
    return {
        "repo": getattr(row, "repo", None),
        "pr": getattr(row, "pr", None),
        "head_sha": getattr(row, "head_sha", None),
        "drop_id": getattr(row, "id", None),
        "delivery_id": getattr(row, "delivery_id", None),
    }


# --- secrets ------------------------------------------------------------------------------


def add_secrets(values: Iterable[str | None]) -> None:
    """Values never to write to the log (too short ones are ignored, see MIN_SECRET)."""
    with _secrets_lock:
        for value in values:
            if value and len(value.strip()) >= MIN_SECRET:
                _secrets.add(value.strip())


def forget_secrets() -> None:
    """Forget the known values (the tests' reset)."""
    with _secrets_lock:
        _secrets.clear()


def secrets_of(settings: Any) -> list[str]:
    """Every SecretStr value in `settings`, the App's private key (whole and line by line),
    and the password of the database URL."""
    from pydantic import BaseModel, SecretStr

    found: list[str] = []

    def walk(model: BaseModel) -> None:
        for name in type(model).model_fields:
            value = getattr(model, name, None)
            if isinstance(value, SecretStr):
                found.append(value.get_secret_value())
            elif isinstance(value, BaseModel):
                walk(value)

    if isinstance(settings, BaseModel):
        walk(settings)
    github = getattr(settings, "github", None)
    key_file = getattr(github, "private_key_file", None)
    if isinstance(key_file, Path):
        try:
            pem = key_file.read_text(errors="replace")
        except OSError:
            pem = ""  # a missing key is the settings check's to report, not the log's
        found.append(pem)
        found.extend(line for line in pem.splitlines() if "-----" not in line)
    url = getattr(settings, "database_url", None)
    if isinstance(url, str):
        with suppress(ValueError):  # not a URL: then it holds no password either
            found.append(urlsplit(url).password or "")
    return [v for v in found if v]


def safe_url(url: str) -> str:
    """`url` with its password masked: for a start-up line naming the database."""
    from landbot.config import mask_url  # the one URL masker (config show uses it too)

    return redact(mask_url(url))


def redact(text: str) -> str:
    """`text` with every known secret and every credential-shaped string masked."""
    with _secrets_lock:
        known = sorted(_secrets, key=len, reverse=True)  # a longer one may contain a shorter
    for value in known:
        if value in text:
            text = text.replace(value, MASK)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def _clean(value: Any) -> Any:
    """A JSON-ready, redacted copy of a field's value."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_clean(v) for v in value]
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return redact(str(value))


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    """The bound context and the event's own fields, the identifiers first."""
    bound_here: Mapping[str, Any] = getattr(record, CONTEXT_ATTR, None) or {}
    own: Mapping[str, Any] = getattr(record, FIELDS_ATTR, None) or {}
    merged = {**bound_here, **own}
    ordered = {k: merged[k] for k in FIRST if k in merged}
    ordered.update((k, v) for k, v in merged.items() if k not in ordered and k not in RESERVED)
    return {k: _clean(v) for k, v in ordered.items()}


def _problem(record: logging.LogRecord, formatter: logging.Formatter) -> str | None:
    parts = []
    if record.exc_info:
        parts.append(formatter.formatException(record.exc_info))
    elif record.exc_text:
        parts.append(record.exc_text)
    if record.stack_info:
        parts.append(formatter.formatStack(record.stack_info))
    return redact("\n".join(parts)) if parts else None


# --- formats ------------------------------------------------------------------------------


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, event, the fields."""

    def format(self, record: logging.LogRecord) -> str:
        when = dt.datetime.fromtimestamp(record.created, dt.UTC)
        line: dict[str, Any] = {
            "time": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": redact(record.getMessage()),
        }
        line.update(_fields(record))
        problem = _problem(record, self)
        if problem is not None:
            line["exception"] = problem
        return json.dumps(line, ensure_ascii=False, default=str)


class HumanFormatter(logging.Formatter):
    """`15:04:05 INFO  landbot.land  comment posted  repo=acme/widgets pr=7 ...` for a
    terminal; an exception follows on its own lines."""

    def format(self, record: logging.LogRecord) -> str:
        when = dt.datetime.fromtimestamp(record.created).strftime("%Y-%m-%d %H:%M:%S")
        message = _printable(redact(record.getMessage()))
        text = f"{when} {record.levelname:<7} {record.name}  {message}"
        pairs = " ".join(f"{k}={_human(v)}" for k, v in _fields(record).items())
        if pairs:
            text += "  " + pairs
        problem = _problem(record, self)
        if problem is None:
            return text
        return text + "\n" + "\n".join(_printable(line) for line in problem.splitlines())


def _human(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if text == "" or any(c.isspace() or c in "\"'=" for c in text):
        text = json.dumps(text, ensure_ascii=False)
    return _printable(text)


# What a terminal would act on rather than show: C0 and C1 controls (escape sequences, a
# carriage return that overwrites the line) and the bidirectional overrides. A summary or
# a header in a log line may come from a pull request, so they are shown escaped.
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _printable(text: str) -> str:
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class _ContextFilter(logging.Filter):
    """Copies the bound fields onto the record in the thread that logged it (the handler
    may format it later, elsewhere)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, CONTEXT_ATTR):
            record.__dict__[CONTEXT_ATTR] = dict(context())
        return True


# --- set-up -------------------------------------------------------------------------------


def configure(
    level: str | int | None = None,
    *,
    stream: TextIO | None = None,
    json_lines: bool | None = None,
    settings: Any = None,
) -> logging.Handler:
    """Send landbot's log (and the libraries' warnings) to `stream` (stderr), as JSON lines
    unless it is a terminal. `level`: a name, a logging level, or None for LANDBOT_LOG_LEVEL
    (default info). With `settings`, their secrets are added to the ones never logged.
    Calling it again replaces the handler it installed before."""
    lvl = level if isinstance(level, int) else level_from(level)
    out = sys.stderr if stream is None else stream
    if json_lines is None:
        json_lines = not _isatty(out)
    if settings is not None:
        add_secrets(secrets_of(settings))
    handler = logging.StreamHandler(out)
    handler.set_name(HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if json_lines else HumanFormatter())
    handler.addFilter(_ContextFilter())
    root = logging.getLogger()
    reset()
    root.addHandler(handler)
    # The libraries say what went wrong at warning; at debug, their info lines (each HTTP
    # request httpx sends, uvicorn's start) help find out why.
    root.setLevel(logging.INFO if lvl <= logging.DEBUG else max(lvl, logging.WARNING))
    landbot = logging.getLogger("landbot")
    landbot.setLevel(lvl)
    landbot.propagate = True
    return handler


def reset() -> None:
    """Remove the handler `configure` installed (the tests' clean-up)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if handler.get_name() == HANDLER_NAME:
            root.removeHandler(handler)


def uvicorn_level(level: int) -> str:
    """The level to run uvicorn at: its start-up lines at info and below, its access log
    (one line per request, which the delivery lines already say better) only at debug."""
    return "debug" if level <= logging.DEBUG else "info" if level <= logging.INFO else "warning"


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or file-less stream
        return False
