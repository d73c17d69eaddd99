"""php artisan test / Pest: the failed test, the location, the message above it."""

from __future__ import annotations

from landbot.triage.recognisers import php as rec

from .conftest import corpus, failures, kinds

LOG = "php/laravel-phpunit-vite-manifest-not-found.log"


def test_failed_test_location_and_message() -> None:
    # tests/triage/real/php/laravel-phpunit-vite-manifest-not-found.log, 498-504, 736-741.
    got = failures(rec.ECOSYSTEM, corpus(LOG, 498, 504))
    assert got[503].startswith("Tests\\Feature\\ExampleTest > the application returns")
    near = kinds(rec.ECOSYSTEM, corpus(LOG, 736, 741))
    assert near[740] == "phpunit-location" and near[738] == "phpunit-message"


def test_passing_lines_are_not_failures() -> None:
    # Control: lines 488-497 (the step's start, a passing test's line among them).
    assert failures(rec.ECOSYSTEM, corpus(LOG, 488, 497)) == {}
