"""Where a request from the sandbox may go: the proxy's pure decisions."""

from __future__ import annotations

import pytest

from landbot.sandbox.proxy_policy import (
    ENDPOINTS,
    KeyScrubber,
    ModelTarget,
    Route,
    address_refusal,
    canonical_path,
    host_allowed,
    parse_chunk_size,
    parse_content_length,
    parse_model_url,
    printable,
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
        ("/v1/models", "127.0.0.1:18080", "/v1/models"),
        ("/v1/chat/completions", "api.example.com", "/v1/chat/completions"),
        ("https://api.example.com/v1/responses", None, "/v1/responses"),
        ("https://API.example.com:443/v1/messages?beta=true", "whatever", "/v1/messages?beta=true"),
    ],
)
def test_requests_for_the_model_go_to_the_model(target: str, host: str | None, path: str) -> None:
    r = decide("GET" if path.endswith("/models") else "POST", target, host)
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


def test_each_api_has_only_its_model_calls() -> None:
    assert ENDPOINTS["openai-responses"] == (("POST", "/responses"), ("GET", "/models"))
    assert ENDPOINTS["openai-chat"] == (("POST", "/chat/completions"), ("GET", "/models"))
    assert ("POST", "/messages") in ENDPOINTS["anthropic"]
    assert set(ENDPOINTS["any"]) == {e for api in ENDPOINTS for e in ENDPOINTS[api]}
    assert len(ENDPOINTS["any"]) == 5
    for api in ("openai-chat", "anthropic"):
        r = route("POST", "/v1/responses", "127.0.0.1:18080", model=MODEL, relay_port=PORT, api=api)  # type: ignore[arg-type]
        assert r.kind == "refuse" and api in r.reason


@pytest.mark.parametrize(
    ("path", "canonical"),
    [
        ("/v1//responses/", "/v1/responses"),
        ("/V1/Responses", "/v1/responses"),
        ("/v1/respons%65s", "/v1/responses"),
        ("/v1/responses;jsessionid=x", "/v1/responses"),
        ("/v1/fi%6ces", "/v1/files"),  # matched as what it is
        ("/v1%2fresponses", "/v1/responses"),
    ],
)
def test_paths_have_one_spelling(path: str, canonical: str) -> None:
    assert canonical_path(path) == canonical


@pytest.mark.parametrize(
    "path",
    ["/v1/../x", "/v1/%2e%2e/x", "/v1/.%2e/x", "/v1/%252e", "/v1/a\\b", "/v1/a%00", "/v1/%ff"],
)
def test_paths_without_a_safe_spelling_are_refused(path: str) -> None:
    with pytest.raises(ValueError):
        canonical_path(path)


def test_methods_and_queries_are_those_of_model_calls() -> None:
    assert decide("GET", "/v1/responses").status == 405
    assert decide("TRACE", "/v1/models").status == 405
    assert decide("DELETE", "/v1/files/x").status == 405
    assert decide("POST", "/v1/responses?include=x").kind == "refuse"
    assert decide("POST", "/v1/messages?beta=true&beta=x%0a").kind == "refuse"
    assert decide("GET", "/v1/models?limit=20&after_id=m-1").kind == "model"


@pytest.mark.parametrize(
    ("values", "ok"),
    [
        (["12"], 12),
        (["0"], 0),
        (["-1"], None),
        (["+1"], None),
        (["1,1"], None),
        (["1", "1"], None),
        (["0x10"], None),
        (["１"], None),
        ([" 7 "], 7),
        (["9" * 19], None),
    ],
)
def test_content_length_is_digits_and_only_once(values: list[str], ok: int | None) -> None:
    if ok is None:
        with pytest.raises(ValueError):
            parse_content_length(values)
    else:
        assert parse_content_length(values) == ok


def test_chunk_sizes_are_hex_digits() -> None:
    assert parse_chunk_size(b"1a\r\n") == 26
    assert parse_chunk_size(b"0;ext=1\r\n") == 0
    for bad in (b"-1\r\n", b"0x1\r\n", b" 1\r\n", b"1 \r\n", b"\r\n", b"1" * 17 + b"\r\n"):
        with pytest.raises(ValueError):
            parse_chunk_size(bad)


@pytest.mark.parametrize(
    ("address", "allowed", "refused"),
    [
        ("151.101.0.223", [], None),
        ("127.0.0.1", [], "loopback"),
        ("127.0.0.1", ["127.0.0.1:443"], None),
        ("127.0.0.1", ["127.0.0.1:8443"], "loopback"),  # listed for another port
        ("::1", [], "loopback"),
        ("::ffff:127.0.0.1", [], "loopback"),
        ("::ffff:169.254.169.254", [], "link-local"),
        ("169.254.169.254", [], "link-local"),
        ("fe80::1%eth0", [], "link-local"),
        ("10.0.0.1", [], "private"),
        ("192.168.0.1", [], "private"),
        ("fd00::1", [], "private"),
        ("100.64.0.1", [], "private"),
        ("0.0.0.0", [], "reserved"),
        ("224.0.0.1", [], "reserved"),
    ],
)
def test_tunnel_addresses_are_public_unless_listed(
    address: str, allowed: list[str], refused: str | None
) -> None:
    why = address_refusal(address, 443, allowed)
    assert (why is None) if refused is None else (why is not None and refused in why)


def test_the_key_is_scrubbed_across_writes_without_holding_events() -> None:
    scrub = KeyScrubber("sk-secret", "PLACEHOLDER")
    out = scrub.feed(b"a sk-se") + scrub.feed(b"cret b") + scrub.feed(b"data: x\n\n")
    assert out == b"a PLACEHOLDER bdata: x\n\n"  # nothing held after the event's end
    assert scrub.feed(b"tail sk") == b"tail " and scrub.flush() == b"sk"
    assert scrub.text("Bearer sk-secret") == "Bearer PLACEHOLDER"
    assert KeyScrubber(None, "P").feed(b"x") == b"x"


def test_job_text_is_printable_and_bounded() -> None:
    assert printable("a\x1b[2Jb\u202e") == "a\\x1b[2Jb\\x202e"
    assert printable("x" * 500, 10) == "x" * 10 + "…"


def test_the_job_does_not_choose_the_organisation() -> None:
    out = upstream_headers(
        [("OpenAI-Organization", "org-other"), ("OpenAI-Project", "proj-x")], MODEL, "sk"
    )
    assert out == [("Host", "api.example.com"), ("Authorization", "Bearer sk")]
