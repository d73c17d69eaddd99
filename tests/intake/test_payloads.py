"""The payload models are tolerant: what GitHub adds later is ignored or kept as a string, and
a missing field gives the handler's defined outcome, never a validation error."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from pydantic import ValidationError

from landbot.intake import events, payloads
from landbot.pipeline import deliveries
from landbot.store import Store

HEAD = "a" * 40
BASE_SHA = "c" * 40
GROUP_SHA = "d" * 40
GROUP_REF = f"refs/heads/gh-readonly-queue/main/pr-7-{BASE_SHA}"
T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
REPO = {"full_name": "o/r"}


def deliver(store: Store, event: str, payload: dict[str, Any], guid: str = "g1") -> str:
    return deliveries.apply(events.parse(guid, event, T0, json.dumps(payload).encode()), store)


def dequeued(**fields: Any) -> dict[str, Any]:
    pr = {"number": 7, "head": {"sha": HEAD}, "base": {"ref": "main"}}
    return {
        "action": "dequeued",
        "number": 7,
        "reason": "CI_FAILURE",
        "pull_request": pr,
        "repository": REPO,
        **fields,
    }


def group(action: str, **fields: Any) -> dict[str, Any]:
    mg = {"head_sha": GROUP_SHA, "head_ref": GROUP_REF, "base_sha": BASE_SHA}
    return {"action": action, "merge_group": mg, "repository": REPO, **fields}


def failed_check(**run: Any) -> dict[str, Any]:
    check = {
        "id": 5,
        "name": "CI",
        "conclusion": "failure",
        "head_sha": GROUP_SHA,
        "html_url": "u",
        "check_suite": {"head_branch": GROUP_REF},
        **run,
    }
    return {"action": "completed", "check_run": check, "repository": REPO}


def retry(**comment: Any) -> dict[str, Any]:
    body = {"id": 99, "body": "/landbot retry", "user": {"login": "alice", "type": "User"}}
    issue = {"number": 7, "pull_request": {"url": "x"}}
    return {"action": "created", "issue": issue, "comment": {**body, **comment}, "repository": REPO}


def test_parse_picks_the_model_of_the_event_and_action() -> None:
    def model(event: str, payload: dict[str, Any]) -> type[payloads.Payload]:
        return type(events.parse("g", event, T0, json.dumps(payload).encode()).payload)

    assert model("pull_request", dequeued()) is payloads.PullRequestDequeued
    assert model("pull_request", {**dequeued(), "action": "closed"}) is payloads.PullRequestClosed
    assert model("merge_group", group("destroyed")) is payloads.MergeGroupDestroyed
    assert model("pull_request", {**dequeued(), "action": "labeled"}) is payloads.Payload
    assert model("star", {"action": "created"}) is payloads.Payload


def test_fields_github_adds_later_are_ignored_at_every_level(store: Store) -> None:
    payload = dequeued(merge_queue={"new": True}, enterprise={"id": 1})
    payload["pull_request"]["head"]["repo"] = {"full_name": "fork/r"}
    payload["pull_request"]["auto_merge"] = {"merge_method": "squash"}
    deliver(store, "pull_request", payload)
    [drop] = store.drops()
    assert (drop.pr, drop.head_sha, drop.reason) == (7, HEAD, "failed_checks")


def test_values_github_adds_later_stay_plain_strings(store: Store) -> None:
    # A new dequeue reason, destroy reason, conclusion and user type: no validation error.
    deliver(store, "pull_request", dequeued(reason="QUEUE_REBUILT"))
    [drop] = store.drops()
    assert (drop.reason, drop.raw_reason) == ("unknown", "QUEUE_REBUILT")
    note = deliver(store, "merge_group", group("destroyed", reason="superseded"), guid="g2")
    assert note == "group ddddddd for #7: destroyed:superseded"
    note = deliver(store, "check_run", failed_check(conclusion="deferred"), guid="g3")
    assert note == "not a failed merge-group check run"
    mannequin = retry(user={"login": "m", "type": "Mannequin"})  # only "Bot" is ignored
    assert deliver(store, "issue_comment", mannequin, guid="g4") == "/landbot retry from m on #7"


def test_the_fields_a_failed_check_records_are_read(store: Store) -> None:
    assert deliver(store, "check_run", failed_check()) == "failed check run CI on group of #7"
    [g] = store.groups_for("o/r", 7)
    assert (g.head_sha, g.failures) == (
        GROUP_SHA,
        [{"kind": "check_run", "id": 5, "name": "CI", "conclusion": "failure", "url": "u"}],
    )


def drop_without(*path: str) -> dict[str, Any]:
    payload = dequeued()
    part = payload
    for key in path[:-1]:
        part = part[key]
    del part[path[-1]]
    return payload


# What a payload lacking a field landbot needs gives, as it did before the models.
@pytest.mark.parametrize(
    ("event", "payload", "outcome"),
    [
        ("pull_request", drop_without("repository"), ValueError),
        ("pull_request", drop_without("number"), "drop 1 (new): CI_FAILURE"),  # the PR's own
        ("pull_request", drop_without("pull_request", "head"), ValueError),
        ("pull_request", drop_without("pull_request"), ValueError),
        ("pull_request", drop_without("reason"), "drop 1 (new): None"),
        ("pull_request", {"action": "enqueued", "repository": REPO}, ValueError),
        (
            "pull_request",
            {"action": "synchronize", "number": 7, "repository": REPO},
            "synchronize without before",
        ),
        (
            "pull_request",
            {"action": "closed", "number": 7, "repository": REPO},
            "closed: cancelled 0 job(s)",
        ),
        (
            "merge_group",
            {"action": "checks_requested", "repository": REPO},
            "merge_group without a gh-readonly-queue ref",
        ),
        (
            "merge_group",
            {**group("destroyed"), "repository": {}},
            "merge_group without a gh-readonly-queue ref",
        ),
        ("merge_group", group("destroyed"), "group ddddddd for #7: destroyed:None"),
        (
            "check_run",
            {"action": "completed", "repository": REPO},
            "not a failed merge-group check run",
        ),
        (
            "workflow_run",
            {"action": "completed", "repository": REPO},
            "not a failed merge-group workflow run",
        ),
        ("issue_comment", {"action": "created", "repository": REPO}, "not a pull request comment"),
        ("issue_comment", {**retry(), "comment": {}}, "no command"),
    ],
)
def test_a_missing_field_gives_the_defined_outcome(
    store: Store, event: str, payload: dict[str, Any], outcome: str | type[Exception]
) -> None:
    if isinstance(outcome, str):
        assert deliver(store, event, payload) == outcome
    else:
        with pytest.raises(outcome) as raised:
            deliver(store, event, payload)
        assert not isinstance(raised.value, ValidationError)  # the handler's own error


def test_a_value_of_an_unexpected_type_reads_as_missing(store: Store) -> None:
    with pytest.raises(ValueError, match=r"without pull_request\.head\.sha"):
        deliver(store, "pull_request", dequeued(pull_request={"head": {"sha": 123}}))
    with pytest.raises(ValueError, match="without repository or number"):
        deliver(store, "pull_request", dequeued(number="7", pull_request="7"))
    bad = group("checks_requested", merge_group={"head_sha": 5, "head_ref": GROUP_REF})
    assert deliver(store, "merge_group", bad) == "merge_group without a gh-readonly-queue ref"
    assert deliver(store, "pull_request", dequeued(action=5)) == "not handled: pull_request.None"
    assert store.drops() == []


@pytest.mark.parametrize("value", [None, 5, 1.5, True, "x", [], {}, [{"a": 1}]])
def test_no_routed_model_raises_whatever_a_field_holds(value: object) -> None:
    models = {route.model for route in events._ROUTES.values()}
    for model in models | {payloads.Payload}:
        model.model_validate(dict.fromkeys(model.model_fields, value))


def test_an_event_built_by_hand_with_the_wrong_payload_is_refused(store: Store) -> None:
    d = events.WebhookEvent("g", "pull_request", T0, payloads.Payload(action="dequeued"))
    with pytest.raises(TypeError, match="needs a PullRequestDequeued payload"):
        deliveries.apply(d, store)
    # The control: the same delivery built by `events.parse` is recorded.
    assert deliver(store, "pull_request", dequeued()).startswith("drop 1 (new)")
