"""The demo's loop: step the simulated merge queue, deliver GitHub's webhooks to landbot,
let landbot's worker act, and report what changed, until every pull request has merged or
been handed back (or nothing can move any more, or the bound on steps or time is hit).

What is reported comes from the world itself: the queue's transitions, the CI runs, and a
comparison of the pull requests, landbot's drops and landbot's comments before and after
each step. landbot's own progress messages (its log) are shown too.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from landbot.demo.ci import CiRun
from landbot.demo.world import World
from landbot.land.comments import HANDBACK_MARKER, STATUS_MARKER

# Loggers whose INFO messages say what landbot is doing (the rest is bookkeeping).
PROGRESS_LOGGERS = ("landbot.land", "landbot.fixer", "landbot.triage")
_PR_REF = re.compile(r"#(\d+)\b")
# The land loop's closing line per drop ("OWNER/NAME#N: outcome (why)"): the observer says
# the same with the triage class, so it is not repeated.
_CLOSING = re.compile(r"^[\w.-]+/[\w.-]+#\d+: (?!pending)\w+ \(")
QUIET_REASONS = ("merged", "already_merged")
GIST_CHARS = 160


class Reporter(Protocol):
    def event(self, who: str, pr: int | None, text: str) -> None: ...

    def activity(self, text: str) -> None: ...


@dataclass(frozen=True)
class PullState:
    state: str  # open | closed | merged
    head: str
    queued: bool
    auto_merge: bool


@dataclass(frozen=True)
class DropState:
    pr: int
    reason: str
    cls: str | None
    outcome: str
    summary: str | None
    source: str


@dataclass(frozen=True)
class DriveResult:
    finished: bool  # every pull request merged or was handed back
    why: str  # how the loop ended, in a phrase
    steps: int


def short(sha: str | None) -> str:
    return (sha or "")[:7]


def clip(text: str, limit: int = GIST_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def comment_gist(body: str) -> str:
    """A comment in one line: which kind, and what it asks or says next."""
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    if HANDBACK_MARKER in body:
        ask = next((line for line in lines if line.startswith("**What to decide:**")), "")
        mention = lines[1].split()[0] if len(lines) > 1 else ""
        return clip(f"a hand-back comment to {mention}: {ask.replace('**', '')}")
    if STATUS_MARKER in body:
        text = [line for line in lines if not line.startswith("<!--")]
        return clip(f"its status comment: {text[-1] if text else ''}")
    return clip(f"a comment: {lines[0] if lines else ''}")


class Observer:
    """Compares the world before and after each step and reports the differences."""

    def __init__(self, world: World, reporter: Reporter) -> None:
        self.world = world
        self.reporter = reporter
        self.pulls: dict[int, PullState] = {}
        self.drops: dict[int, DropState] = {}
        self.comments: dict[int, str] = {}

    def pull_states(self) -> dict[int, PullState]:
        gh = self.world.gh
        out: dict[int, PullState] = {}
        with gh.lock:
            for pr in self.world.pulls.values():
                state = "merged" if pr.merged else pr.state
                queued = gh.queue_entry(pr) is not None
                out[pr.number] = PullState(state, pr.head_sha, queued, pr.auto_merge is not None)
        return out

    def drop_states(self) -> dict[int, DropState]:
        out: dict[int, DropState] = {}
        for row in self.world.store.drops(self.world.repo.full_name):
            out[row.id] = DropState(
                row.pr, row.reason, row.class_, row.outcome, row.summary, row.source
            )
        return out

    def poll(self) -> None:
        self._pulls()
        self._drops()
        self._comments()

    def _pulls(self) -> None:
        now = self.pull_states()
        gh = self.world.gh
        for number, new in now.items():
            old = self.pulls.get(number)
            if old is None:
                continue
            say = self.reporter.event
            if new.head != old.head:
                assert self.world.repo.git_dir is not None
                from landbot.sim import git

                author = git.out(self.world.repo.git_dir, "log", "-1", "--format=%an", new.head)
                subject = git.commit_message(self.world.repo.git_dir, new.head).splitlines()[0]
                by = "landbot" if author.strip() == "landbot" else author.strip()
                say("github", number, f"{by} pushed {short(new.head)} ({subject})")
            if new.auto_merge and not old.auto_merge and new.state == "open":
                with gh.lock:
                    pr = gh.pull(self.world.repo, number)
                    by = pr.auto_merge.enabled_by if pr.auto_merge else "?"
                say("github", number, f"auto-merge armed by {by}")
            if new.queued and not old.queued:
                say("github", number, "joined the merge queue")
            if new.state == "merged" and old.state != "merged":
                say("github", number, f"merged into {self.world.repo.default_branch}")
        self.pulls = now

    def _drops(self) -> None:
        now = self.drop_states()
        for drop_id, new in sorted(now.items()):
            old = self.drops.get(drop_id)
            if new.reason in QUIET_REASONS or new.outcome == "pending":
                continue  # a merge costs landbot nothing; a pending drop is still in work
            if old is not None and (old.outcome, old.cls) == (new.outcome, new.cls):
                continue
            cls = f" [{new.cls}]" if new.cls else ""
            why = f": {new.summary}" if new.summary else ""
            self.reporter.event("landbot", new.pr, f"{new.reason} → {new.outcome}{cls}{why}")
        self.drops = now

    def _comments(self) -> None:
        gh, repo = self.world.gh, self.world.repo
        now: dict[int, str] = {}
        owner: dict[int, int] = {}
        with gh.lock:
            for pr in self.world.pulls.values():
                for c in gh.comments_on(repo, pr.number):
                    if c.author == self.world.bot:
                        now[c.id] = c.body
                        owner[c.id] = pr.number
        for cid, body in sorted(now.items()):
            old = self.comments.get(cid)
            if old == body:
                continue
            verb = "posted" if old is None else "edited"
            self.reporter.event("landbot", owner[cid], f"{verb} {comment_gist(body)}")
        self.comments = now

    def settled(self) -> bool:
        """Whether every pull request merged, or was handed back and left the queue."""
        latest: dict[int, DropState] = {}
        for drop_id in sorted(self.drops):
            latest[self.drops[drop_id].pr] = self.drops[drop_id]
        for number, pull in self.pulls.items():
            if pull.state in ("merged", "closed"):
                continue
            drop = latest.get(number)
            if pull.queued or pull.auto_merge or drop is None:
                return False
            if drop.outcome not in ("handed_back", "failed"):
                return False
        return True


class LogRelay(logging.Handler):
    """landbot's progress messages (its log) as events."""

    def __init__(self, reporter: Reporter) -> None:
        super().__init__(logging.INFO)
        self.reporter = reporter

    def emit(self, record: logging.LogRecord) -> None:
        progress = record.name.startswith(PROGRESS_LOGGERS)
        # landbot.logs events (fields on the record) are for the operator's log: below a
        # warning, the observer tells the same story.
        fields = {**getattr(record, "landbot_context", {}), **getattr(record, "landbot_fields", {})}
        structured = hasattr(record, "landbot_fields")
        if record.levelno < logging.WARNING and (not progress or structured):
            return
        try:
            text = record.getMessage()
        except Exception:  # a bad format string must not break the demo
            return
        if structured and (fields.get("why") or fields.get("error")):
            text = f"{text}: {fields.get('why') or fields.get('error')}"
        if _CLOSING.match(text):
            return
        found = _PR_REF.search(text)
        pr = fields.get("pr") if structured else (int(found.group(1)) if found else None)
        self.reporter.event("landbot", pr if isinstance(pr, int) else None, text)


def report_ci(reporter: Reporter) -> Callable[[CiRun], None]:
    def on_run(run: CiRun) -> None:
        marks = ", ".join(
            f"{job.name} {'✓' if job.conclusion == 'success' else '✗'}"
            + (" (the runner shut down)" if job.exit_code is None else "")
            for job in run.jobs
        )
        numbers: tuple[int | None, ...] = run.pulls or (None,)
        for number in numbers:
            if run.event == "merge_group":
                what = f"merge group {short(run.sha)} (main at {short(run.base)} + #{number})"
            else:
                what = f"pull request head {short(run.sha)}"
            reporter.event("ci", number, f"{what}: {marks}")

    return on_run


def drive(
    world: World,
    reporter: Reporter,
    *,
    max_steps: int = 200,
    time_limit: float = 240.0,
    clock: Callable[[], float] = time.monotonic,
) -> DriveResult:
    observer = Observer(world, reporter)
    observer.pulls = observer.pull_states()
    started = clock()
    idle = 0
    reporter.activity("landbot is catching up with GitHub's webhooks")
    world.settle()
    observer.poll()
    for step_no in range(1, max_steps + 1):
        if observer.settled():
            return DriveResult(True, "every pull request merged or was handed back", step_no - 1)
        if clock() - started > time_limit:
            return DriveResult(False, f"stopped after {time_limit:g} s (the time bound)", step_no)
        reporter.activity("the merge queue takes its next step")
        step = world.gh.queue_step(world.repo)
        moved = step is not None and step.action != "waiting"
        if step is not None:
            _report_step(reporter, step)
        observer.poll()  # so a pull request put back by landbot shows as rejoining
        reporter.activity("landbot works on what GitHub told it")
        worked = world.settle()
        observer.poll()
        idle = 0 if moved or worked else idle + 1
        if idle >= 2:
            return DriveResult(False, "stopped: nothing moves any more", step_no)
    return DriveResult(
        observer.settled(), f"stopped after {max_steps} steps (the step bound)", max_steps
    )


def _report_step(reporter: Reporter, step: Any) -> None:
    # A group's build shows as its CI run, its merge as the pull request's; what is left
    # to say is a removal.
    if step.action == "dropped":
        detail = f" in {', '.join(step.conflicts)}" if step.conflicts else ""
        reporter.event("queue", step.pr, f"removed from the queue: {step.reason}{detail}")
