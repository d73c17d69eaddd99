"""One TLS client context per process, for every HTTPS client landbot makes (GitHub's API, log
downloads, a notification webhook, the simulator's deliveries).

httpx builds a new context for each client it makes, loading the whole CA bundle each time
(about 50 ms of CPU); the context is safe to share between clients and threads. Made the way
httpx makes its default one (certifi's bundle, or SSL_CERT_FILE / SSL_CERT_DIR when set), on
first use.
"""

from __future__ import annotations

import functools
import ssl


@functools.cache
def client_context() -> ssl.SSLContext:
    import httpx

    return httpx.create_ssl_context()
