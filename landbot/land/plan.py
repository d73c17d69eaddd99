"""A decision and the evidence it was made on, as the JSON saved on the drop before any
action, so a worker killed at any point finishes the same plan instead of deciding again."""

from __future__ import annotations

import dataclasses
from typing import Any

from landbot.core.model import Evidence, FailedCheck, FixerResult, JobFailure, ReportedTest
from landbot.land.model import (
    HANDBACK_TOPICS,
    STATUS_TOPICS,
    Action,
    AnnounceFix,
    Decision,
    HandBack,
    Requeue,
    RunFixer,
    Status,
)

_ACTIONS: dict[str, type[Any]] = {
    "Requeue": Requeue,
    "RunFixer": RunFixer,
    "HandBack": HandBack,
    "Status": Status,
    "AnnounceFix": AnnounceFix,
}


def plan_json(decision: Decision, evidence: Evidence, fixer: FixerResult | None) -> dict[str, Any]:
    return {
        "outcome": decision.outcome,
        "why": decision.why,
        "actions": [{"type": type(a).__name__, **dataclasses.asdict(a)} for a in decision.actions],
        "evidence": dataclasses.asdict(evidence),
        "fixer": dataclasses.asdict(fixer) if fixer else None,
    }


def plan_from(data: dict[str, Any]) -> tuple[Decision, Evidence, FixerResult | None]:
    actions: list[Action] = []
    for item in data["actions"]:
        fields = {k: v for k, v in item.items() if k != "type"}
        # A plan saved before a topic was retired still finishes, with the general text.
        if item["type"] == "Status" and fields.get("topic") not in STATUS_TOPICS:
            fields["topic"] = (
                "requeued" if str(fields.get("topic")).startswith("requeued_") else "handed_back"
            )
        if item["type"] == "HandBack" and fields.get("topic") not in HANDBACK_TOPICS:
            fields["topic"] = (
                "requeued_again" if str(fields.get("topic")).endswith("_again") else "removed"
            )
        actions.append(_ACTIONS[item["type"]](**fields))
    fixer = fixer_from(data["fixer"]) if data.get("fixer") else None
    return Decision(data["outcome"], tuple(actions), data["why"]), evidence_from(data), fixer


def fixer_from(data: dict[str, Any]) -> FixerResult:
    """A saved fixer result (JSON lists back to the tuples the result holds)."""
    files = tuple((str(p), int(a), int(d)) for p, a, d in data.get("files", ()))
    return FixerResult(**{**data, "files": files})


def evidence_from(data: dict[str, Any]) -> Evidence:
    """The evidence of a saved plan."""
    ev = dict(data["evidence"])
    ev["failed_checks"] = tuple(FailedCheck(**c) for c in ev.get("failed_checks", ()))
    ev["jobs"] = tuple(
        JobFailure(
            **{
                **j,
                "error_lines": tuple(j["error_lines"]),
                "failed_tests": tuple(j.get("failed_tests", ())),
                "excerpt": tuple(tuple(x) for x in j["excerpt"]),
                "reported_tests": tuple(ReportedTest(**t) for t in j.get("reported_tests", ())),
            }
        )
        for j in ev.get("jobs", ())
    )
    # Every other list is a tuple of plain values (conflict files, PRs ahead, check names).
    ev = {k: tuple(v) if isinstance(v, list) else v for k, v in ev.items()}
    return Evidence(**ev)
