"""One TLS client context per process: made once, and as strict as httpx's own."""

from __future__ import annotations

import ssl

from landbot.core.tls import client_context


def test_one_context_shared_that_verifies_the_server() -> None:
    ctx = client_context()
    assert client_context() is ctx  # made once per process
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert ctx.cert_store_stats()["x509_ca"] > 0  # a CA bundle is loaded
