"""What happened to each pull request of the demo, read back from the world at the end,
and whether it is what the story says should happen.

`collect` reads the simulated GitHub (state, landbot's comments, the commits landbot
pushed), landbot's store (its drops and fixer jobs) and the CI runs. `judge` is pure: it
compares one pull request's record with its story, so a story that did not end as
described is reported as such, never dressed up.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from landbot.demo import project
from landbot.demo.ci import CiRun
from landbot.demo.world import World
from landbot.land.comments import HANDBACK_MARKER, STATUS_MARKER
from landbot.store.records import StoredJob

LANDBOT_AUTHOR = "landbot"  # the name on the commits landbot's fixer makes


@dataclass(frozen=True)
class DropRecord:
    id: int
    reason: str
    cls: str | None
    outcome: str
    summary: str
    source: str
    fix_mode: str | None = None  # agent | merge_driver, when a fixer job ran
    fix_status: str | None = None  # the job's status in the store
    fix: dict[str, Any] | None = None  # what the fixer reported (the saved plan's "fixer")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["class"] = data.pop("cls")
        return data


@dataclass(frozen=True)
class CommentRecord:
    id: int
    kind: str  # status | handback | other
    body: str
    minimized: str | None = None


@dataclass(frozen=True)
class CommitRecord:
    sha: str
    subject: str
    merge: bool


@dataclass(frozen=True)
class PullRecord:
    number: int
    key: str  # the story: prelude, flaky, policy, conflict, genuine
    author: str
    title: str
    label: str
    story: str
    expected: str
    state: str  # merged | open | closed
    queued: bool
    drops: tuple[DropRecord, ...] = ()
    comments: tuple[CommentRecord, ...] = ()
    landbot_commits: tuple[CommitRecord, ...] = ()
    findings: tuple[str, ...] = ()  # quest check's findings on its merge groups

    @property
    def merged(self) -> bool:
        return self.state == "merged"

    def handbacks(self) -> list[CommentRecord]:
        return [c for c in self.comments if c.kind == "handback"]


@dataclass(frozen=True)
class StoryJudgement:
    """Whether one pull request's story ended as described; if not, the problem in a line."""

    ok: bool
    problem: str = ""


def _has(pull: PullRecord, **want: Any) -> DropRecord | None:
    for drop in pull.drops:
        if all(
            (getattr(drop, k) in v)
            if isinstance(v, (set, frozenset, tuple))
            else getattr(drop, k) == v
            for k, v in want.items()
        ):
            return drop
    return None


def judge(pull: PullRecord) -> StoryJudgement:
    """Whether `pull` ended as its story says (pure)."""
    ok, no = StoryJudgement(True), StoryJudgement  # no(False, why)
    if pull.key == "prelude":
        return ok if pull.merged else no(False, "it did not merge")
    if pull.key == "flaky":
        # Re-enqueued by triage itself (no fixer job), as a failure not the PR's own.
        requeued = _has(
            pull,
            reason="failed_checks",
            cls=("flaky", "infrastructure"),
            outcome="requeued",
            fix_mode=None,
        )
        if requeued is None:
            return no(False, "landbot did not re-enqueue it as a runner failure")
        if pull.handbacks():
            return no(False, "landbot handed it back")
        return ok if pull.merged else no(False, "it did not merge after the re-enqueue")
    if pull.key == "policy":
        if pull.merged:
            return no(False, "it merged with a broken quest tree")
        if _has(pull, reason="failed_checks", cls="policy", outcome="handed_back") is None:
            return no(False, "landbot did not hand it back as a quest check failure")
        if not any(d.fix_mode == "agent" for d in pull.drops):
            return no(False, "the fixer did not look at the quest check failure")
        if not pull.findings:
            return no(False, "the quest check reported no finding")
        bodies = [c.body for c in pull.handbacks()]
        if not bodies:
            return no(False, "there is no hand-back comment")
        missing = [f for f in pull.findings if not any(f in b for b in bodies)]
        if missing:
            return no(False, f"the hand-back does not quote {missing[0]!r}")
        return ok
    if pull.key == "conflict":
        if _has(pull, reason="merge_conflict", outcome="fixed", fix_mode="merge_driver") is None:
            return no(False, "landbot did not resolve the conflict with the quest merge driver")
        if not any(c.merge for c in pull.landbot_commits):
            return no(False, "landbot pushed no merge commit")
        return ok if pull.merged else no(False, "it did not merge after the fix")
    if pull.key == "genuine":
        fixed = _has(pull, reason="failed_checks", cls="genuine", outcome="fixed", fix_mode="agent")
        if fixed is None:
            return no(False, "landbot's fixer did not fix it")
        if not any(not c.merge for c in pull.landbot_commits):
            return no(False, "landbot pushed no fix commit")
        return ok if pull.merged else no(False, "it did not merge after the fix")
    return no(False, f"no story {pull.key!r}")


def happened(pull: PullRecord) -> str:
    """What happened to it, in a line (from the record, not from the story)."""
    parts: list[str] = []
    for drop in pull.drops:
        if drop.reason in ("merged", "already_merged") and drop.outcome == "ignored":
            continue
        cls = f" [{drop.cls}]" if drop.cls else ""
        how = f" ({drop.fix_mode})" if drop.fix_mode else ""
        parts.append(f"dropped: {drop.reason}{cls} → {drop.outcome}{how}")
    if pull.merged:
        parts.append("merged")
    elif pull.queued:
        parts.append("still in the queue")
    elif not pull.handbacks():
        parts.append(pull.state)
    return "; ".join(parts)


def final_state(pull: PullRecord) -> str:
    if pull.merged:
        return "merged"
    if pull.handbacks() and not pull.queued:
        return "handed back"
    return "in the queue" if pull.queued else pull.state


# --- reading the world ------------------------------------------------------------------


def _comment_kind(body: str) -> str:
    if HANDBACK_MARKER in body:
        return "handback"
    if STATUS_MARKER in body:
        return "status"
    return "other"


def _landbot_commits(world: World, first: str, last: str) -> tuple[CommitRecord, ...]:
    from landbot.sim import git

    assert world.repo.git_dir is not None
    if first == last:
        return ()
    text = git.out(
        world.repo.git_dir, "log", "--reverse", "--format=%H%x1f%an%x1f%P%x1f%s", last, f"^{first}"
    )
    out: list[CommitRecord] = []
    for line in text.splitlines():
        sha, author, parents, subject = line.split("\x1f", 3)
        if author == LANDBOT_AUTHOR:
            out.append(CommitRecord(sha, subject, len(parents.split()) > 1))
    return tuple(out)


def _fix_jobs(world: World) -> dict[int, StoredJob]:
    jobs: dict[int, StoredJob] = {}
    for job in world.store.jobs():
        if job.kind == "fix" and job.drop_id is not None:
            jobs[job.drop_id] = job
    return jobs


def _drops(world: World, number: int, jobs: dict[int, StoredJob]) -> tuple[DropRecord, ...]:
    rows = [r for r in world.store.drops(world.repo.full_name) if r.pr == number]
    out: list[DropRecord] = []
    for row in sorted(rows, key=lambda r: r.id):
        job = jobs.get(row.id)
        payload = job.payload if job is not None else None
        plan = row.plan if isinstance(row.plan, dict) else {}
        out.append(
            DropRecord(
                id=row.id,
                reason=row.reason,
                cls=row.class_,
                outcome=row.outcome,
                summary=row.summary or "",
                source=row.source,
                fix_mode=payload.get("mode") if isinstance(payload, dict) else None,
                fix_status=job.status if job is not None else None,
                fix=plan.get("fixer") if isinstance(plan.get("fixer"), dict) else None,
            )
        )
    return tuple(out)


def _findings(runs: list[CiRun], number: int) -> tuple[str, ...]:
    seen: list[str] = []
    for run in runs:
        if run.event != "merge_group" or number not in run.pulls:
            continue
        for job in run.jobs:
            for finding in job.findings:
                if finding not in seen:
                    seen.append(finding)
    return tuple(seen)


def collect(world: World) -> list[PullRecord]:
    gh, repo = world.gh, world.repo
    jobs = _fix_jobs(world)
    records: list[PullRecord] = []
    for spec in project.PULLS:
        pr = world.pulls[spec.key]
        with gh.lock:
            state = "merged" if pr.merged else pr.state
            queued = gh.queue_entry(pr) is not None
            head = pr.head_sha
            comments = tuple(
                CommentRecord(c.id, _comment_kind(c.body), c.body, c.minimized_reason)
                for c in gh.comments_on(repo, pr.number)
                if c.author == world.bot
            )
        records.append(
            PullRecord(
                number=pr.number,
                key=spec.key,
                author=spec.author,
                title=spec.title,
                label=spec.label,
                story=spec.story,
                expected=spec.expected,
                state=state,
                queued=queued,
                drops=_drops(world, pr.number, jobs),
                comments=comments,
                landbot_commits=_landbot_commits(world, world.first_heads[pr.number], head),
                findings=_findings(world.ci.runs, pr.number),
            )
        )
    return records


@dataclass
class Outcome:
    agent: str
    seconds: float
    finished: bool
    why: str
    steps: int
    pulls: list[PullRecord] = field(default_factory=list)
    ci_runs: int = 0

    @property
    def as_described(self) -> bool:
        return all(judge(p).ok for p in self.pulls)

    def to_json(self) -> dict[str, Any]:
        pulls = []
        for p in self.pulls:
            verdict = judge(p)
            pulls.append(
                {
                    "pr": p.number,
                    "story": p.key,
                    "author": p.author,
                    "title": p.title,
                    "label": p.label,
                    "description": p.story,
                    "expected": p.expected,
                    "state": final_state(p),
                    "merged": p.merged,
                    "happened": happened(p),
                    "as_described": verdict.ok,
                    "problem": verdict.problem or None,
                    "drops": [d.to_json() for d in p.drops],
                    "findings": list(p.findings),
                    "landbot_commits": [asdict(c) for c in p.landbot_commits],
                    "comments": [asdict(c) for c in p.comments],
                }
            )
        return {
            "repo": project.REPO,
            "agent": self.agent,
            "seconds": round(self.seconds, 1),
            "finished": self.finished,
            "ended": self.why,
            "steps": self.steps,
            "ci_runs": self.ci_runs,
            "as_described": self.as_described,
            "pulls": pulls,
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False)
