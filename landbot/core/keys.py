"""The store's keys, spelled once. A push or a close cancels every job under the prefix of
the pull request (and head) it no longer concerns; the action ledger claims each action of a
plan under its own key."""

from __future__ import annotations


def pr_jobs(repo: str, pr: int) -> str:
    """The prefix of every drop and fix job of one pull request."""
    return f"drop:{repo}#{pr}@"


def head_jobs(repo: str, pr: int, head: str) -> str:
    """The prefix of every drop and fix job of one pull request at one head."""
    return f"{pr_jobs(repo, pr)}{head}"


def drop_job(repo: str, pr: int, head: str, drop_id: int) -> str:
    return f"{head_jobs(repo, pr, head)}#{drop_id}"


def fix_job(repo: str, pr: int, head: str, drop_id: int) -> str:
    return f"{head_jobs(repo, pr, head)}#fix{drop_id}"


def action(drop_id: int, index: int, kind: str, *, after_fixer: bool, stage: str = "") -> str:
    """The action ledger's key: one claim per action of a drop's plan. `stage` names a
    later plan of the same drop (a waiting drop released: `release`)."""
    return (
        f"drop:{drop_id}:{index}:{kind}"
        + (":after-fixer" if after_fixer else "")
        + (f":{stage}" if stage else "")
    )
