"""Where a request from the sandbox may go (pure code, no I/O).

Two destinations exist: the configured model endpoint (any request addressed to the proxy
itself, or to the model's own host, under the model URL's path), and, for HTTPS package
registries, a CONNECT tunnel to a host the operator listed in `[sandbox] allowed_hosts`.
Everything else is refused with the reason, which the proxy logs.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

# Headers that name the caller's credentials; the proxy drops them all and adds the real key.
AUTH_HEADERS = ("authorization", "x-api-key", "api-key", "proxy-authorization")
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


@dataclass(frozen=True)
class ModelTarget:
    scheme: str  # http or https
    host: str  # lower case
    port: int
    base_path: str  # "" or "/v1" (no trailing slash)

    @property
    def netloc(self) -> str:
        default = 443 if self.scheme == "https" else 80
        return self.host if self.port == default else f"{self.host}:{self.port}"


def parse_model_url(url: str) -> ModelTarget:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"model URL {url!r} is not an http(s) URL")
    if parts.query or parts.fragment or parts.username:
        raise ValueError(f"model URL {url!r} must be a plain base URL (no query, no user)")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return ModelTarget(parts.scheme, parts.hostname.lower(), port, parts.path.rstrip("/"))


@dataclass(frozen=True)
class Route:
    kind: Literal["model", "tunnel", "refuse"]
    reason: str = ""  # why it is refused
    path: str = ""  # model: the upstream request target (path and query)
    host: str = ""  # tunnel: where to
    port: int = 0


def _split_hostport(text: str, default_port: int) -> tuple[str, int] | None:
    text = text.strip().lower()
    if not text:
        return None
    if text.startswith("["):  # [::1]:443
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port_text = text.rpartition(":") if ":" in text else (text, "", "")
    try:
        port = int(port_text) if port_text else default_port
    except ValueError:
        return None
    if not host or not 0 < port < 65536:
        return None
    return host, port


def host_allowed(host: str, port: int, allowed: Sequence[str]) -> bool:
    """`allowed` entries are `host` (port 443), `host:port`, or `*.domain[:port]`."""
    host = host.lower().rstrip(".")
    for entry in allowed:
        parsed = _split_hostport(entry, 443)
        if parsed is None:
            continue
        pattern, want_port = parsed
        if port != want_port:
            continue
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]) and host != pattern[2:]:
                return True
        elif host == pattern:
            return True
    return False


def _model_path(target: str, model: ModelTarget) -> Route:
    path, sep, query = target.partition("?")
    if not path.startswith("/"):
        return Route("refuse", reason=f"request target {target[:200]!r} is not a path")
    segments = path.split("/")
    if ".." in segments or "." in segments or "%2e" in path.lower():
        return Route("refuse", reason=f"path {path[:200]!r} has dot segments")
    normal = posixpath.normpath(path) if path != "/" else "/"
    base = model.base_path
    if base and not (normal == base or normal.startswith(base + "/")):
        return Route("refuse", reason=f"path {path[:200]!r} is outside the model URL's {base}")
    return Route("model", path=path + (sep + query if sep else ""))


def route(
    method: str,
    target: str,
    host_header: str | None,
    *,
    model: ModelTarget | None,
    relay_port: int,
    allowed_hosts: Sequence[str] = (),
) -> Route:
    """Decide what to do with one request from the sandbox."""
    if method == "CONNECT":
        parsed = _split_hostport(target, 443)
        if parsed is None:
            return Route("refuse", reason=f"CONNECT to {target[:200]!r} is malformed")
        host, port = parsed
        if host_allowed(host, port, allowed_hosts):
            return Route("tunnel", host=host, port=port)
        return Route("refuse", reason=f"CONNECT to {host}:{port} is not in [sandbox] allowed_hosts")
    if model is None:
        return Route("refuse", reason="no model endpoint is configured ([fixer] model_url)")
    lowered = target.lower()
    if lowered.startswith(("http://", "https://")):
        parts = urlsplit(target)
        hostname = (parts.hostname or "").lower()
        try:
            port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
        except ValueError:
            return Route("refuse", reason=f"absolute URL {target[:200]!r} is malformed")
        if (hostname, port) != (model.host, model.port):
            return Route(
                "refuse", reason=f"{hostname}:{port} is not the model endpoint ({model.netloc})"
            )
        return _model_path(parts.path + ("?" + parts.query if parts.query else ""), model)
    if "://" in target or not target.startswith("/"):
        return Route("refuse", reason=f"request target {target[:200]!r} is not a path")
    if host_header is None:
        return Route("refuse", reason="request has no Host header")
    parsed = _split_hostport(host_header, 80)
    if parsed is None:
        return Route("refuse", reason=f"Host {host_header[:200]!r} is malformed")
    host, port = parsed
    to_relay = host in ("127.0.0.1", "localhost") and port in (relay_port, 80)
    to_model = (host, port) == (model.host, model.port) or host_header.lower() == model.netloc
    if not (to_relay or to_model):
        return Route("refuse", reason=f"Host {host_header[:200]!r} is not the model endpoint")
    return _model_path(target, model)


def upstream_headers(
    headers: Sequence[tuple[str, str]], model: ModelTarget, api_key: str | None
) -> list[tuple[str, str]]:
    """The request headers to send to the model: the caller's auth replaced by the real key.

    The key goes in the header the client used (x-api-key for Anthropic-style clients,
    api-key for Azure-style, Authorization: Bearer otherwise), so one proxy serves every
    agent without knowing the provider.
    """
    names = {name.lower() for name, _ in headers}
    connection_tokens = {
        token.strip().lower()
        for name, value in headers
        if name.lower() == "connection"
        for token in value.split(",")
    }
    out = [
        (name, value)
        for name, value in headers
        if name.lower() not in HOP_BY_HOP
        and name.lower() not in connection_tokens
        and name.lower() not in AUTH_HEADERS
        and name.lower() != "host"
        and name.lower() != "content-length"
    ]
    out.insert(0, ("Host", model.netloc))
    if api_key:
        if "x-api-key" in names:
            out.append(("x-api-key", api_key))
        elif "api-key" in names:
            out.append(("api-key", api_key))
        else:
            out.append(("Authorization", f"Bearer {api_key}"))
    return out


def response_headers(headers: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The model's response headers to pass back (hop-by-hop ones are the proxy's own)."""
    return [(n, v) for n, v in headers if n.lower() not in HOP_BY_HOP]
