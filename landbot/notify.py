"""Notifications beyond GitHub: one message to a Slack-compatible incoming webhook.

`[notify] webhook_url` (unset: none) receives `POST {"text": …}` (JSON, unsigned, as Slack,
Mattermost, Rocket.Chat and Discord's `/slack` endpoint take it) for each hand-back and for
the breaker's opening and closing. The URL is a secret (whoever has it can post to the
channel): it is never logged whole, only its scheme and host. A notification is a courtesy:
it waits `[notify] timeout` seconds at most, a failure is logged as a warning, and nothing
the caller does depends on it.

Any stage may import this module (it needs only the settings, the log and httpx).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from landbot import logs

if TYPE_CHECKING:
    import httpx

    from landbot.config import NotifySettings, Settings

log = logging.getLogger("landbot.notify")

# Slack shows at most 40,000 characters of `text` and truncates; a hand-back's gist is short,
# and a long one is cut here where the reader sees that it was.
MAX_TEXT = 3000
USER_AGENT = "landbot"


def where(url: str) -> str:
    """The URL as it may be logged: its scheme and host (the path is the secret)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or '?'}/…"


def enabled(settings: Settings | NotifySettings) -> bool:
    section = _section(settings)
    return section.webhook_url is not None


def notify(
    settings: Settings | NotifySettings,
    text: str,
    *,
    client: httpx.Client | None = None,
) -> bool:
    """Send `text` to `[notify] webhook_url`; True when the receiver took it (2xx). False,
    without a request, when no URL is set; False, logged, on any failure. Never raises."""
    section = _section(settings)
    if section.webhook_url is None:
        return False
    url = section.webhook_url.get_secret_value()
    logs.add_secrets([url])  # also masked in a library's own log lines (httpx at debug)
    if len(text) > MAX_TEXT:
        text = text[: MAX_TEXT - 1] + "…"
    try:
        status = _post(url, {"text": text}, section.timeout, client)
    except Exception as exc:  # a courtesy: never the caller's failure
        # The exception's own text may carry the URL: only its kind is logged.
        logs.event(
            log,
            "notification not sent",
            logging.WARNING,
            to=where(url),
            error=type(exc).__name__,
        )
        return False
    if not 200 <= status < 300:
        logs.event(log, "notification refused", logging.WARNING, to=where(url), status=status)
        return False
    logs.event(log, "notification sent", logging.DEBUG, to=where(url))
    return True


def _post(url: str, body: dict[str, Any], timeout: float, client: httpx.Client | None) -> int:
    import httpx

    # No redirects: the receiver answers where it is told to be, and a redirect would carry
    # the message elsewhere.
    if client is not None:
        return client.post(url, json=body, timeout=timeout, follow_redirects=False).status_code
    from landbot.core.tls import client_context

    with httpx.Client(
        timeout=timeout,
        verify=client_context(),
        follow_redirects=False,
        headers={"User-Agent": USER_AGENT},
    ) as own:
        return own.post(url, json=body).status_code


def _section(settings: Settings | NotifySettings) -> NotifySettings:
    from landbot.config import Settings

    return settings.notify if isinstance(settings, Settings) else settings
