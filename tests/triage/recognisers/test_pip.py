"""pip: its error codes after a failed build."""

from __future__ import annotations

from landbot.triage.recognisers import pip as rec

from .conftest import corpus, failures


def test_metadata_generation_failed() -> None:
    # tests/triage/real/docker/gpt-academic-buildx-arm64-qemu-gcc-segfault.log, 1186
    # (`#9 469.4 error: metadata-generation-failed`), and the control 1185.
    log = "docker/gpt-academic-buildx-arm64-qemu-gcc-segfault.log"
    assert list(failures(rec.ECOSYSTEM, corpus(log, 1185, 1186))) == [1186]
