"""Recognisers of the lines a person needs, one module per ecosystem.

Each module exports ``ECOSYSTEM``: its recognisers and which of their kinds are failure
lines, failed tests, or wrappers (see ``base.Ecosystem``). Adding an ecosystem is one new
module and one entry in ``ECOSYSTEMS``. Order matters only for a line two recognisers
claim at the same priority: the earlier one names it (so the specific tools come before
the generic ``##[error]`` annotation and the shell's exit-code wrappers).
"""

from __future__ import annotations

from landbot.triage.recognisers import (
    annotation,
    cargo,
    compiler,
    dependabot,
    docker,
    git,
    go,
    gradle,
    javascript,
    junit,
    lint,
    maven,
    php,
    pip,
    playwright,
    pytest,
    quest,
    rspec,
    shell,
    terraform,
    traceback,
    tsc,
    unittest,
)
from landbot.triage.recognisers.base import Ecosystem, Mark

ECOSYSTEMS: tuple[Ecosystem, ...] = (
    quest.ECOSYSTEM,
    pytest.ECOSYSTEM,
    unittest.ECOSYSTEM,
    rspec.ECOSYSTEM,
    traceback.ECOSYSTEM,
    playwright.ECOSYSTEM,
    javascript.ECOSYSTEM,
    php.ECOSYSTEM,
    go.ECOSYSTEM,
    cargo.ECOSYSTEM,
    maven.ECOSYSTEM,
    gradle.ECOSYSTEM,
    junit.ECOSYSTEM,
    tsc.ECOSYSTEM,
    compiler.ECOSYSTEM,
    lint.ECOSYSTEM,
    docker.ECOSYSTEM,
    terraform.ECOSYSTEM,
    dependabot.ECOSYSTEM,
    pip.ECOSYSTEM,
    git.ECOSYSTEM,
    shell.ECOSYSTEM,
    annotation.ECOSYSTEM,
)

FAILURE_KINDS: frozenset[str] = frozenset().union(*(e.failure_kinds for e in ECOSYSTEMS))
TEST_KINDS: frozenset[str] = frozenset().union(*(e.test_kinds for e in ECOSYSTEMS))
WRAPPER_KINDS: frozenset[str] = frozenset().union(*(e.wrapper_kinds for e in ECOSYSTEMS))

__all__ = ["ECOSYSTEMS", "FAILURE_KINDS", "TEST_KINDS", "WRAPPER_KINDS", "Ecosystem", "Mark"]
