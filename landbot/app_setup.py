"""`landbot app create`: register the GitHub App from its manifest, and keep its credentials.

GitHub's manifest flow (docs: "Registering a GitHub App from a manifest"):

1. a page on this machine's loopback posts the manifest to GitHub's form
   (`<web>/settings/apps/new`, or `<web>/organizations/ORG/settings/apps/new`) with a
   random `state`;
2. the person signed in to GitHub names the App and creates it; GitHub sends the browser
   back to the manifest's `redirect_url` (this page's `/callback`) with a one-time `code`;
3. `POST <api>/app-manifests/{code}/conversions` (no credential: the code is one, valid for
   an hour, once) answers the App with its id, private key (`pem`) and webhook secret.

landbot writes the key to a file of mode 0600 and the App ID, the key's path and the
webhook secret into the settings file (`[github] app_id`, `private_key_file`,
`webhook_secret`), also mode 0600; the client secret is not kept (landbot does not use it).
Pure parts (pages, URLs, the TOML edit) apart from the I/O (the server, the exchange, files).
"""

from __future__ import annotations

import html
import json
import os
import re
import secrets
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from pydantic import BaseModel, ValidationError

from landbot.errors import LandbotError

CALLBACK = "/callback"
LOOPBACK = "127.0.0.1"
API_VERSION = "2022-11-28"
_CODE = re.compile(r"^[A-Za-z0-9_-]{1,200}$")
_ORG = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
_GITHUB_KEYS = ("app_id", "private_key_file", "webhook_secret")


class ManifestConversion(BaseModel):
    """The answer of POST /app-manifests/{code}/conversions (201), as far as landbot reads
    it: GitHub's `integration` object plus client_id, client_secret, webhook_secret and pem
    (githubkit: AppManifestsCodeConversionsPostResponse201)."""

    id: int
    slug: str
    name: str
    client_id: str
    html_url: str
    pem: str
    webhook_secret: str | None = None
    client_secret: str | None = None


@dataclass(frozen=True)
class Created:
    app_id: int
    slug: str
    client_id: str
    html_url: str
    key_file: Path
    config_file: Path
    webhook_secret_kept: bool

    @property
    def install_url(self) -> str:
        return f"{self.html_url}/installations/new"


# --- pure parts -------------------------------------------------------------------------


def web_url_for(api_url: str) -> str:
    """GitHub's web address for an API URL: github.com's, or a GitHub Enterprise Server's."""
    api = api_url.rstrip("/")
    if api == "https://api.github.com":
        return "https://github.com"
    if api.endswith("/api/v3"):
        return api.removesuffix("/api/v3")
    raise LandbotError(
        f"cannot tell GitHub's web address from the API URL {api_url}; pass --web-url "
        "(e.g. https://github.example.com)"
    )


def form_action(web_url: str, org: str | None, state: str) -> str:
    if org is not None and not _ORG.match(org):
        raise LandbotError(f"--org {org!r} is not an organization name; pass its login")
    where = f"/organizations/{org}/settings/apps/new" if org else "/settings/apps/new"
    return f"{web_url.rstrip('/')}{where}?state={quote(state, safe='')}"


def form_page(manifest: dict[str, Any], action: str) -> str:
    """The one page the person opens: the manifest, shown and posted to GitHub's form."""
    shown = json.dumps(manifest, indent=2)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Create the landbot GitHub App</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 48rem; margin: 2rem auto">
<h1>Create the landbot GitHub App</h1>
<p>The button sends this manifest to GitHub, where you name the App and create it. GitHub
then sends you back here, and landbot keeps the App's ID, private key and webhook secret.</p>
<form method="post" action="{html.escape(action, quote=True)}">
<input type="hidden" name="manifest" value="{html.escape(json.dumps(manifest), quote=True)}">
<button type="submit">Create the App on GitHub</button>
</form>
<pre>{html.escape(shown)}</pre>
</body></html>
"""


def result_page(title: str, lines: list[str]) -> str:
    body = "".join(f"<p>{html.escape(line)}</p>\n" for line in lines)
    head = f'<meta charset="utf-8"><title>{html.escape(title)}</title>'
    style = "font-family: system-ui, sans-serif; max-width: 48rem; margin: 2rem auto"
    return (
        f'<!doctype html>\n<html lang="en"><head>{head}</head>\n<body style="{style}">\n'
        f"<h1>{html.escape(title)}</h1>\n{body}</body></html>\n"
    )


def _toml_string(value: str) -> str:
    # A TOML basic string: JSON's escapes are TOML's (\", \\, \n, \uXXXX).
    return json.dumps(value, ensure_ascii=False)


def settings_lines(app_id: int, key_file: Path, webhook_secret: str | None) -> list[str]:
    lines = [f"app_id = {int(app_id)}", f"private_key_file = {_toml_string(str(key_file))}"]
    if webhook_secret is not None:
        lines.append(f"webhook_secret = {_toml_string(webhook_secret)}")
    return lines


_GITHUB_HEADER = re.compile(r"^\s*\[\s*github\s*\]\s*(#.*)?$")


def already_set(text: str) -> list[str]:
    """The [github] keys of `_GITHUB_KEYS` the settings text sets already."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LandbotError(f"the settings file is not valid TOML ({exc}); fix it first") from None
    github = data.get("github")
    if not isinstance(github, dict):
        return []
    return [key for key in _GITHUB_KEYS if key in github]


def with_credentials(text: str, lines: list[str]) -> str:
    """`text` (a settings file, maybe empty) with `lines` in its [github] table."""
    rows = text.splitlines()
    for i, row in enumerate(rows):
        if _GITHUB_HEADER.match(row):
            rows[i + 1 : i + 1] = lines
            return "\n".join(rows) + "\n"
    head = text if not text or text.endswith("\n") else text + "\n"
    gap = "\n" if head.strip() else ""
    return (
        head
        + gap
        + "# The GitHub App, written by `landbot app create`.\n[github]\n"
        + ("\n".join(lines) + "\n")
    )


# --- I/O ---------------------------------------------------------------------------------


def check_targets(config_file: Path, key_file: Path) -> None:
    """Refuse before GitHub creates anything when the results could not be written."""
    if key_file.exists():
        raise LandbotError(f"{key_file} exists; pass --key-file with a new path (or move it)")
    if not key_file.parent.is_dir():
        raise LandbotError(f"{key_file.parent} is not a folder; create it or pass --key-file")
    if config_file.exists():
        taken = already_set(config_file.read_text(encoding="utf-8"))
        if taken:
            raise LandbotError(
                f"{config_file} already sets [github] {', '.join(taken)}; pass --config with a "
                "new file, or remove those keys"
            )
    elif not config_file.parent.is_dir():
        raise LandbotError(f"{config_file.parent} is not a folder; create it or pass --config")


def convert(api_url: str, code: str, *, timeout: float = 30.0) -> ManifestConversion:
    """Trade the one-time code for the App (POST /app-manifests/{code}/conversions)."""
    import httpx

    if not _CODE.match(code):
        raise LandbotError("GitHub's redirect carried no usable code; run landbot app create again")
    url = f"{api_url.rstrip('/')}/app-manifests/{code}/conversions"
    headers = {
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": API_VERSION,
        "User-Agent": "landbot",
    }
    try:
        response = httpx.post(url, headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        raise LandbotError(
            f"cannot reach {api_url} to finish the App ({type(exc).__name__}); the code stays "
            "valid for an hour: check the network, then run landbot app create again"
        ) from None
    if response.status_code != 201:
        raise LandbotError(
            f"GitHub refused the App's code (HTTP {response.status_code}); a code works once, "
            "within an hour: run landbot app create again"
        )
    try:
        return ManifestConversion.model_validate(response.json())
    except (ValueError, ValidationError):
        raise LandbotError(
            "GitHub's answer for the App lacks its id, key or slug; register the App by hand "
            "(see the README)"
        ) from None


def _write_private(path: Path, text: str, *, exclusive: bool) -> None:
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(path, flags, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, 0o600)  # an existing file keeps its mode through O_TRUNC


def keep_credentials(app: ManifestConversion, config_file: Path, key_file: Path) -> Created:
    """Write the key (mode 0600, a new file) and the settings (mode 0600, replaced whole)."""
    key_file = key_file.resolve()
    _write_private(key_file, app.pem if app.pem.endswith("\n") else app.pem + "\n", exclusive=True)
    old = config_file.read_text(encoding="utf-8") if config_file.exists() else ""
    text = with_credentials(old, settings_lines(app.id, key_file, app.webhook_secret))
    fd, tmp = tempfile.mkstemp(dir=config_file.parent, prefix=".landbot-", suffix=".toml")
    os.close(fd)
    try:
        _write_private(Path(tmp), text, exclusive=False)
        os.replace(tmp, config_file)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Created(
        app_id=app.id,
        slug=app.slug,
        client_id=app.client_id,
        html_url=app.html_url,
        key_file=key_file,
        config_file=config_file,
        webhook_secret_kept=app.webhook_secret is not None,
    )


@dataclass
class _Flow:
    page: str
    state: str
    finish: Callable[[str], Created]
    done: threading.Event
    claim: threading.Lock
    result: Created | None = None
    error: LandbotError | None = None


def _handler(flow: _Flow) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass  # no access log on the operator's terminal (the code is in the URL)

        def _send(self, status: int, page: str) -> None:
            body = page.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("Referrer-Policy", "no-referrer")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path == "/":
                self._send(200, flow.page)
                return
            if parts.path != CALLBACK:
                self._send(404, result_page("Not found", ["Open / to start."]))
                return
            query = parse_qs(parts.query)
            state = query.get("state", [""])[0]
            if not secrets.compare_digest(state.encode(), flow.state.encode()):
                # Not the redirect of this flow's form: ignore it, keep waiting.
                self._send(400, result_page("Wrong state", ["This is not this flow's answer."]))
                return
            # One redirect is traded, once: the code works only once anyway.
            if not flow.claim.acquire(blocking=False):
                self._send(409, result_page("Already done", ["This flow has finished."]))
                return
            try:
                flow.result = flow.finish(query.get("code", [""])[0])
            except LandbotError as exc:
                flow.error = exc
                self._send(502, result_page("The App was not kept", [str(exc)]))
            else:
                created = flow.result
                self._send(
                    200,
                    result_page(
                        f"{created.slug} is registered",
                        [
                            f"App ID {created.app_id}; its key and webhook secret are kept.",
                            f"Install it on your repositories: {created.install_url}",
                            "You can close this tab.",
                        ],
                    ),
                )
            flow.done.set()

    return Handler


def run_flow(
    manifest: dict[str, Any],
    *,
    action: Callable[[str], str],
    finish: Callable[[str], Created],
    port: int = 0,
    timeout: float = 900.0,
    on_ready: Callable[[str], None] = lambda url: None,
    state: str | None = None,
) -> Created:
    """Serve the form on loopback until GitHub's redirect comes back (or `timeout`).

    `manifest` gets its redirect_url here (the port is known only once bound); `action`
    makes the form's target from the state; `finish` trades the code for the App and keeps
    it; `on_ready` gets the page's URL (to print it, or open a browser)."""
    state = state or secrets.token_urlsafe(24)
    try:
        server = ThreadingHTTPServer((LOOPBACK, port), BaseHTTPRequestHandler)
    except OSError as exc:
        raise LandbotError(
            f"cannot listen on {LOOPBACK}:{port} ({exc.strerror}); pass another --port"
        ) from None
    base = f"http://{LOOPBACK}:{server.server_address[1]}"
    manifest = {**manifest, "redirect_url": f"{base}{CALLBACK}"}
    flow = _Flow(
        form_page(manifest, action(state)), state, finish, threading.Event(), threading.Lock()
    )
    server.RequestHandlerClass = _handler(flow)
    thread = threading.Thread(target=server.serve_forever, name="landbot-app-create", daemon=True)
    thread.start()
    try:
        on_ready(f"{base}/")
        if not flow.done.wait(timeout):
            raise LandbotError(
                f"no answer from GitHub within {timeout:g} s; run landbot app create again "
                "(or a longer --timeout)"
            )
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    if flow.error is not None:
        raise flow.error
    assert flow.result is not None
    return flow.result
