"""Where a request from the sandbox may go, and what of it may pass (pure code, no I/O).

Two destinations exist. The configured model endpoint: a request addressed to the proxy
itself, or to the model's own host, for one of the few model calls an agent makes (per
provider API: `POST` of responses, chat completions or messages, `GET` of the model list);
nothing else of the provider's API (files, uploads, batches, fine-tuning, administration)
ever gets the key. And, for HTTPS package registries, a CONNECT tunnel to a host the
operator listed in `[sandbox] allowed_hosts`, checked again once it is resolved. Everything
else is refused with the reason, which the proxy logs and the job sees.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote, urlsplit

# Headers that name the caller's credentials; the proxy drops them all and adds the real key.
AUTH_HEADERS = ("authorization", "x-api-key", "api-key", "proxy-authorization")
# Headers that pick which of the key's organisations or projects pays and whose data is
# seen: the operator's key decides, not the job.
ACCOUNT_HEADERS = ("openai-organization", "openai-project")
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

ModelApi = Literal["openai-responses", "openai-chat", "anthropic", "any"]
MODEL_APIS: tuple[ModelApi, ...] = ("openai-responses", "openai-chat", "anthropic", "any")

# The calls each provider's agents make, relative to the model URL's path. Codex 0.171
# calls `POST /responses` only (tests/fixer/test_codex_e2e.py sees nothing else); opencode
# `POST /chat/completions`; Claude Code `POST /messages?beta=true` and its token count.
_MODELS = ("GET", "/models")
ENDPOINTS: dict[str, tuple[tuple[str, str], ...]] = {
    "openai-responses": (("POST", "/responses"), _MODELS),
    "openai-chat": (("POST", "/chat/completions"), _MODELS),
    "anthropic": (("POST", "/messages"), ("POST", "/messages/count_tokens"), _MODELS),
}
ENDPOINTS["any"] = tuple(dict.fromkeys(e for api in list(ENDPOINTS) for e in ENDPOINTS[api]))
METHODS = frozenset({"GET", "POST"})  # and CONNECT, for tunnels

# Query parameters a model call carries: Anthropic's `beta=true`, Azure's `api-version`,
# Codex's `client_version` on the model list, the model list's paging.
QUERY_NAMES = frozenset({"beta", "api-version", "client_version", "limit", "after_id", "before_id"})
_QUERY_VALUE = re.compile(r"[A-Za-z0-9._~-]{0,100}")
# What a canonical path is made of once decoded: no `%`, `;`, `\`, spaces or controls.
_PATH_CHARS = re.compile(r"[a-z0-9._~/-]*")

MAX_LOGGED = 200  # characters of job-chosen text kept in a refusal


def printable(text: str, limit: int = MAX_LOGGED) -> str:
    """Job-chosen text made safe for a log line or a terminal: printable ASCII only."""
    out = "".join(c if " " <= c <= "~" else f"\\x{ord(c):02x}" for c in text[: limit + 1])
    return out[:limit] + ("…" if len(out) > limit else "")


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
    base = parts.path.rstrip("/")
    if base and canonical_path(base) != base.lower():
        raise ValueError(f"model URL {url!r} has an unusual path (encoded, dots, parameters)")
    return ModelTarget(parts.scheme, parts.hostname.lower(), port, base)


@dataclass(frozen=True)
class Route:
    kind: Literal["model", "tunnel", "refuse"]
    reason: str = ""  # why it is refused
    path: str = ""  # model: the upstream request target (canonical path and query)
    host: str = ""  # tunnel: where to
    port: int = 0
    status: int = 403  # refuse: 403 not allowed, 405 method, 400 malformed


def _refuse(reason: str, status: int = 403) -> Route:
    return Route("refuse", reason=reason, status=status)


def canonical_path(path: str) -> str:
    """The one spelling of `path` that is matched and forwarded (ValueError if none).

    Decoded once, `;` parameters and empty segments dropped, no dot segments, lower case,
    no trailing slash. What is left may hold only unreserved characters, so a second
    decoding upstream (`%252e`) or a server that splits on `;` or `\\` sees the same path.
    """
    if not path.startswith("/"):
        raise ValueError(f"{printable(path)!r} is not a path")
    decoded = unquote(path, errors="strict")
    if "%" in decoded:
        raise ValueError(f"path {printable(path)!r} is encoded twice")
    segments = []
    for segment in decoded.split("/"):
        segment = segment.split(";", 1)[0]  # matrix parameters: not a part of the name
        if segment in (".", ".."):
            raise ValueError(f"path {printable(path)!r} has dot segments")
        if segment:
            segments.append(segment.lower())
    canonical = "/" + "/".join(segments)
    if not _PATH_CHARS.fullmatch(canonical):
        raise ValueError(f"path {printable(path)!r} holds characters no model call uses")
    return canonical


def canonical_query(query: str) -> str:
    """The query of a model call, names from QUERY_NAMES only (ValueError otherwise)."""
    if not query:
        return ""
    pairs = []
    for pair in query.split("&"):
        name, sep, value = pair.partition("=")
        if name not in QUERY_NAMES:
            raise ValueError(f"query parameter {printable(name)!r} is not one a model call uses")
        if not _QUERY_VALUE.fullmatch(value):
            raise ValueError(f"query parameter {printable(name)!r} has an unusual value")
        pairs.append(name + sep + value)
    return "&".join(pairs)


def _split_hostport(text: str, default_port: int) -> tuple[str, int] | None:
    text = text.strip().lower()
    if not text:
        return None
    if text.startswith("["):  # [::1]:443
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port_text = text.rpartition(":") if ":" in text else (text, "", "")
    if port_text and not port_text.isdigit():
        return None
    port = int(port_text) if port_text else default_port
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


def address_refusal(address: str, port: int, allowed: Sequence[str]) -> str | None:
    """Why a resolved tunnel address may not be reached, or None if it may.

    Only public unicast addresses, unless the operator listed this very address (a name
    that resolves to loopback is refused: its DNS may be the job's choice).
    """
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    listed = {
        str(ipaddress.ip_address(p[0]))
        for p in (_split_hostport(e, 443) for e in allowed)
        if p is not None and p[1] == port and _is_ip(p[0])
    }
    if str(ip) in listed:
        return None
    if ip.is_loopback:
        kind = "loopback"
    elif ip.is_link_local:
        kind = "link-local (cloud metadata)"
    elif ip.is_multicast or ip.is_unspecified or ip.is_reserved:
        kind = "reserved"
    elif not ip.is_global:
        kind = "private"
    else:
        return None
    return f"resolves to the {kind} address {ip}; list that address in [sandbox] allowed_hosts"


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _model_path(method: str, target: str, model: ModelTarget, api: ModelApi) -> Route:
    path, _, query = target.partition("?")
    try:
        canonical = canonical_path(path)
        query = canonical_query(query)
    except ValueError as exc:
        return _refuse(str(exc))
    base = model.base_path.lower()
    if base and not (canonical == base or canonical.startswith(base + "/")):
        return _refuse(f"path {printable(path)!r} is outside the model URL's {model.base_path}")
    endpoint = canonical[len(base) :]
    methods = {m for m, p in ENDPOINTS[api] if p == endpoint}
    if not methods:
        return _refuse(f"{endpoint or '/'} is not a model call of the {api} API")
    if method not in methods:
        return _refuse(f"{method} {endpoint} is not a model call (use {'/'.join(methods)})", 405)
    return Route("model", path=model.base_path + endpoint + ("?" + query if query else ""))


def route(
    method: str,
    target: str,
    host_header: str | None,
    *,
    model: ModelTarget | None,
    relay_port: int,
    allowed_hosts: Sequence[str] = (),
    api: ModelApi = "any",
) -> Route:
    """Decide what to do with one request from the sandbox."""
    if method == "CONNECT":
        parsed = _split_hostport(target, 443)
        if parsed is None:
            return _refuse(f"CONNECT to {printable(target)!r} is malformed", 400)
        host, port = parsed
        if host_allowed(host, port, allowed_hosts):
            return Route("tunnel", host=host, port=port)
        return _refuse(f"CONNECT to {printable(host)}:{port} is not in [sandbox] allowed_hosts")
    if method not in METHODS:
        return _refuse(f"method {printable(method)} is not used by model calls", 405)
    if model is None:
        return _refuse("no model endpoint is configured ([fixer] model_url)")
    lowered = target.lower()
    if lowered.startswith(("http://", "https://")):
        try:
            parts = urlsplit(target)
            hostname = (parts.hostname or "").lower()
            port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
        except ValueError:
            return _refuse(f"absolute URL {printable(target)!r} is malformed", 400)
        if parts.username is not None or parts.password is not None or parts.fragment:
            return _refuse(f"absolute URL {printable(target)!r} is malformed", 400)
        if (hostname, port) != (model.host, model.port):
            return _refuse(f"{printable(hostname)}:{port} is not the model endpoint")
        query = "?" + parts.query if parts.query else ""
        return _model_path(method, (parts.path or "/") + query, model, api)
    if "://" in target or not target.startswith("/"):
        return _refuse(f"request target {printable(target)!r} is not a path", 400)
    if host_header is None:
        return _refuse("request has no Host header", 400)
    parsed = _split_hostport(host_header, 80)
    if parsed is None:
        return _refuse(f"Host {printable(host_header)!r} is malformed", 400)
    host, port = parsed
    to_relay = host in ("127.0.0.1", "localhost") and port in (relay_port, 80)
    to_model = (host, port) == (model.host, model.port) or host_header.lower() == model.netloc
    if not (to_relay or to_model):
        return _refuse(f"Host {printable(host_header)!r} is not the model endpoint")
    return _model_path(method, target, model, api)


def parse_content_length(values: Sequence[str]) -> int:
    """The body's length from the Content-Length header lines (ValueError if unusable)."""
    if len(values) != 1:
        raise ValueError("more than one Content-Length header")
    text = values[0].strip()
    if not text.isascii() or not text.isdigit() or len(text) > 18:
        raise ValueError(f"Content-Length {printable(values[0], 40)!r} is not a length")
    return int(text)


_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})(;[^\r\n]*)?\r?\n")


def parse_chunk_size(line: bytes) -> int:
    """The size on a chunked body's size line: hex digits only (ValueError otherwise)."""
    match = _CHUNK_SIZE.fullmatch(line)
    if match is None:
        raise ValueError(f"chunk size line {printable(line.decode('latin-1'), 40)!r} is malformed")
    return int(match.group(1), 16)


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
        and name.lower() not in ACCOUNT_HEADERS
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


class KeyScrubber:
    """Replaces the real key in a byte stream going back to the job (an endpoint that
    echoes its request would otherwise hand it over), holding back only a tail that could
    be the start of the key, so streamed events still pass at once."""

    def __init__(self, key: str | None, replacement: str) -> None:
        self._key = key.encode() if key else b""
        self._with = replacement.encode()
        self._held = b""

    def feed(self, data: bytes) -> bytes:
        if not self._key:
            return data
        data = (self._held + data).replace(self._key, self._with)
        keep = 0
        for n in range(min(len(self._key) - 1, len(data)), 0, -1):
            if data.endswith(self._key[:n]):
                keep = n
                break
        self._held = data[len(data) - keep :] if keep else b""
        return data[: len(data) - keep] if keep else data

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return held

    def text(self, value: str) -> str:
        key = self._key.decode()
        return value.replace(key, self._with.decode()) if key else value
