"""`python -m landbot.sim serve --root DIR --port P`: the fake GitHub as its own process.

It prints one JSON line on stdout once it listens (url, git_url, token, App id and key
file, installation id, webhook secret) and serves until SIGTERM or SIGINT. The state lives
in this process; the /_fake/... control routes (control.py) build scenarios and drive it.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from landbot.sim.model import FakeGitHub
from landbot.sim.server import FakeGitHubServer


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m landbot.sim")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve a simulated GitHub until SIGTERM")
    serve.add_argument(
        "--root", type=Path, required=True, help="empty directory for the bare repositories"
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=0, help="0 picks a free port")
    serve.add_argument(
        "--token-login", default="landbot-ci", help="user a personal token is made for"
    )
    serve.add_argument("--token", default=None, help="that token's value (random when omitted)")
    serve.add_argument("--app-slug", default="landbot", help="slug of the GitHub App to create")
    serve.add_argument(
        "--app-key-out", type=Path, default=None, help="write the App's private key here"
    )
    serve.add_argument(
        "--install",
        action="append",
        default=[],
        help="install the App on this account (repeatable)",
    )
    serve.add_argument("--webhook-url", default=None, help="POST webhook deliveries here")
    serve.add_argument("--webhook-secret", default="fake-webhook-secret")
    return parser


def serve(args: argparse.Namespace) -> int:
    root: Path = args.root
    if root.exists() and any(root.iterdir()):
        print(
            f"--root {root} is not empty: the fake keeps its state in memory, so start it on an "
            "empty directory",
            file=sys.stderr,
        )
        return 2
    gh = FakeGitHub(root, webhook_secret=args.webhook_secret, webhook_url=args.webhook_url)
    token = gh.create_token(args.token_login, value=args.token)
    app = gh.create_app(args.app_slug)
    key_file = None
    if args.app_key_out is not None:
        key_file = str(app.write_private_key(args.app_key_out))
    installations = {account: gh.install_app(app, account).id for account in args.install}
    try:
        server = FakeGitHubServer(gh, host=args.host, port=args.port, control=True)
    except OSError as exc:
        print(
            f"cannot listen on {args.host}:{args.port}: {exc.strerror}; pick another --port",
            file=sys.stderr,
        )
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with server:
        info = {
            "url": server.url,
            "git_url": gh.git_url,
            "token": token,
            "app_id": app.id,
            "app_slug": app.slug,
            "private_key_file": key_file,
            "installations": installations,
            "webhook_secret": args.webhook_secret,
        }
        print(json.dumps(info), flush=True)
        while not stop.wait(0.5):
            pass
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return serve(args)
    return 2  # pragma: no cover - argparse requires a command


if __name__ == "__main__":
    sys.exit(main())
