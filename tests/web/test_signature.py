"""The signature check on its own, with GitHub's published test vector."""

from __future__ import annotations

import pytest

from landbot.web.signature import header_problem, sign, signature_matches

# From GitHub's "Validating webhook deliveries" documentation.
SECRET = b"It's a Secret to Everybody"
BODY = b"Hello, World!"
GITHUB_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_githubs_test_vector() -> None:
    assert sign(SECRET, BODY) == GITHUB_SIGNATURE
    assert signature_matches(SECRET, BODY, GITHUB_SIGNATURE)
    assert signature_matches(SECRET, BODY, GITHUB_SIGNATURE.upper().replace("SHA256=", "sha256="))


@pytest.mark.parametrize(
    ("secret", "body", "signature"),
    [
        (b"another secret", BODY, GITHUB_SIGNATURE),
        (SECRET, BODY + b"\n", GITHUB_SIGNATURE),
        (SECRET, BODY, GITHUB_SIGNATURE[:-1] + "0"),
        (SECRET, BODY, GITHUB_SIGNATURE[:-2]),
        (SECRET, BODY, GITHUB_SIGNATURE.replace("sha256=", "sha1=")),
        (SECRET, BODY, "sha256=" + "g" * 64),
        (SECRET, BODY, "sha256=é" + GITHUB_SIGNATURE[8:]),
    ],
)
def test_anything_else_does_not_match(secret: bytes, body: bytes, signature: str) -> None:
    assert not signature_matches(secret, body, signature)


def test_header_problems() -> None:
    assert header_problem(GITHUB_SIGNATURE, None) is None
    assert header_problem(GITHUB_SIGNATURE, "sha1=abc") is None  # sha1 beside it is ignored
    assert "missing X-Hub-Signature-256" in (header_problem(None, None) or "")
    assert "sha1" in (header_problem(None, "sha1=" + "0" * 40) or "")
    assert "64 hex digits" in (header_problem(GITHUB_SIGNATURE[7:], None) or "")
    assert "64 hex digits" in (header_problem(GITHUB_SIGNATURE + "00", None) or "")
