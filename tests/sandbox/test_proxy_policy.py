"""Where a request from the sandbox may go: the proxy's pure decisions."""

from __future__ import annotations

import pytest

from landbot.sandbox.proxy_policy import (
    ModelTarget,
    Route,
    host_allowed,
    parse_model_url,
    response_headers,
    route,
    upstream_headers,
)

MODEL = parse_model_url("https://api.example.com/v1")
PORT = 18080


def decide(method: str, target: str, host: str | None = "127.0.0.1:18080") -> Route:
    return route(method, target, host, model=MODEL, relay_port=PORT)


def test_model_url_is_parsed_into_its_parts() -> None:
    assert ModelTarget("https", "api.example.com", 443, "/v1") == MODEL
    assert parse_model_url("http://127.0.0.1:9000").base_path == ""
    assert parse_model_url("http://127.0.0.1:9000/").netloc == "127.0.0.1:9000"
    for bad in ("ftp://x/", "http:///v1", "https://u:p@x/v1", "https://x/v1?k=1"):
        with pytest.raises(ValueError):
            parse_model_url(bad)


@pytest.mark.parametrize(
    ("target", "host", "path"),
    [
        ("/v1/responses", "127.0.0.1:18080", "/v1/responses"),
        ("/v1/messages?beta=true", "localhost:18080", "/v1/messages?beta=true"),
        ("/v1", "127.0.0.1:18080", "/v1"),
        ("/v1/chat/completions", "api.example.com", "/v1/chat/completions"),
        ("https://api.example.com/v1/responses", None, "/v1/responses"),
        ("https://API.example.com:443/v1/x?y=1", "whatever", "/v1/x?y=1"),
    ],
)
def test_requests_for_the_model_go_to_the_model(target: str, host: str | None, path: str) -> None:
    r = decide("POST", target, host)
    assert (r.kind, r.path) == ("model", path)


@pytest.mark.parametrize(
    ("method", "target", "host", "why"),
    [
        ("GET", "/v1/x", "evil.example", "is not the model endpoint"),
        ("GET", "/v1/x", "127.0.0.1:9999", "is not the model endpoint"),
        ("GET", "/v1/x", None, "no Host"),
        ("GET", "http://evil.example/v1/x", "127.0.0.1:18080", "not the model endpoint"),
        ("GET", "https://api.example.com:8443/v1/x", None, "not the model endpoint"),
        ("GET", "http://api.example.com/v1/x", None, "not the model endpoint"),  # port 80
        ("GET", "/admin", "127.0.0.1:18080", "outside the model URL"),
        ("GET", "/v1/../admin", "127.0.0.1:18080", "dot segments"),
        ("GET", "/v1/%2e%2e/admin", "127.0.0.1:18080", "dot segments"),
        ("GET", "/v10/x", "127.0.0.1:18080", "outside the model URL"),
        ("CONNECT", "evil.example:443", None, "not in [sandbox] allowed_hosts"),
        ("CONNECT", "api.example.com:443", None, "not in [sandbox] allowed_hosts"),
        ("GET", "evil.example:80", None, "not a path"),
    ],
)
def test_everything_else_is_refused_with_a_reason(
    method: str, target: str, host: str | None, why: str
) -> None:
    r = decide(method, target, host)
    assert r.kind == "refuse" and why in r.reason


def test_without_a_model_nothing_but_allowed_tunnels_passes() -> None:
    r = route("POST", "/v1/x", "127.0.0.1:18080", model=None, relay_port=PORT)
    assert r.kind == "refuse" and "model_url" in r.reason
    r = route(
        "CONNECT", "pypi.org:443", None, model=None, relay_port=PORT, allowed_hosts=["pypi.org"]
    )
    assert (r.kind, r.host, r.port) == ("tunnel", "pypi.org", 443)


@pytest.mark.parametrize(
    ("host", "port", "allowed", "ok"),
    [
        ("pypi.org", 443, ["pypi.org"], True),
        ("PyPI.org", 443, ["pypi.org"], True),
        ("pypi.org", 80, ["pypi.org"], False),
        ("pypi.org", 8443, ["pypi.org:8443"], True),
        ("files.pythonhosted.org", 443, ["*.pythonhosted.org"], True),
        ("pythonhosted.org", 443, ["*.pythonhosted.org"], False),
        ("evilpythonhosted.org", 443, ["*.pythonhosted.org"], False),
        ("pypi.org.evil.example", 443, ["pypi.org"], False),
        ("registry.npmjs.org", 443, [], False),
    ],
)
def test_allowed_hosts_match_exactly(host: str, port: int, allowed: list[str], ok: bool) -> None:
    assert host_allowed(host, port, allowed) is ok


def test_the_callers_credentials_are_replaced_by_the_real_key() -> None:
    sent = [
        ("Host", "127.0.0.1:18080"),
        ("Authorization", "Bearer placeholder"),
        ("Content-Type", "application/json"),
        ("Connection", "keep-alive, X-Drop-Me"),
        ("X-Drop-Me", "1"),
        ("Proxy-Authorization", "Basic abc"),
        ("Content-Length", "12"),
    ]
    out = upstream_headers(sent, MODEL, "sk-real")
    assert out == [
        ("Host", "api.example.com"),
        ("Content-Type", "application/json"),
        ("Authorization", "Bearer sk-real"),
    ]
    anthropic = upstream_headers([("x-api-key", "placeholder")], MODEL, "sk-real")
    assert anthropic == [("Host", "api.example.com"), ("x-api-key", "sk-real")]
    azure = upstream_headers([("api-key", "placeholder")], MODEL, "sk-real")
    assert ("api-key", "sk-real") in azure and len(azure) == 2
    keyless = upstream_headers([("Authorization", "Bearer placeholder")], MODEL, None)
    assert keyless == [("Host", "api.example.com")]


def test_hop_by_hop_response_headers_are_the_proxys_own() -> None:
    got = response_headers(
        [("Content-Type", "text/event-stream"), ("Transfer-Encoding", "chunked"), ("X-Id", "1")]
    )
    assert got == [("Content-Type", "text/event-stream"), ("X-Id", "1")]
