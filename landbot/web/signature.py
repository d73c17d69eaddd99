"""GitHub webhook signatures: `X-Hub-Signature-256` over the raw body, compared in constant time.

Only the sha256 header counts. The legacy sha1 `X-Hub-Signature` is never accepted, even
when it is correct, so a downgrade to the weaker hash is impossible.
"""

from __future__ import annotations

import hashlib
import hmac

PREFIX = "sha256="
_HEX_LEN = 64


def header_problem(signature_256: str | None, legacy_sha1: str | None) -> str | None:
    """Why the signature header cannot be checked at all (before the body is read), or None."""
    if signature_256 is None:
        if legacy_sha1 is not None:
            return (
                "only the legacy sha1 X-Hub-Signature header was sent; landbot requires "
                "X-Hub-Signature-256 (sha256)"
            )
        return "missing X-Hub-Signature-256 header; give the GitHub App a webhook secret"
    if not signature_256.startswith(PREFIX) or len(signature_256) != len(PREFIX) + _HEX_LEN:
        return "X-Hub-Signature-256 must be 'sha256=' followed by 64 hex digits"
    return None


def signature_matches(secret: bytes, body: bytes, signature_256: str) -> bool:
    """Whether `signature_256` ("sha256=<hex>") is the HMAC-SHA256 of `body` under `secret`."""
    if not signature_256.startswith(PREFIX):
        return False
    try:
        given = bytes.fromhex(signature_256[len(PREFIX) :])
    except ValueError:
        return False
    expected = hmac.new(secret, body, hashlib.sha256).digest()
    return hmac.compare_digest(expected, given)


def sign(secret: bytes, body: bytes) -> str:
    """The header value GitHub sends for `body` (used by tests, the benchmark and the demo)."""
    return PREFIX + hmac.new(secret, body, hashlib.sha256).hexdigest()
