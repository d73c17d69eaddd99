"""One job of a pull request in flight at a time (issue 29, point 6), on SQLite and
PostgreSQL: the lease hands out no job of a PR while another job of it is leased and
unexpired; a killed worker's expired lease frees the PR; jobs of other PRs, and jobs of no
PR, go on meanwhile. Proved under concurrency: several threads, each with its own
connection, lease and finish at once, and no two jobs of one PR are ever held together."""

from __future__ import annotations

import datetime as dt
import random
import threading
import time

from landbot.store import Store

TTL = dt.timedelta(seconds=60)
SHA = "a" * 40


def drop(store: Store, pr: int, repo: str = "o/r") -> int:
    drop_id, _ = store.add_drop(
        repo=repo,
        pr=pr,
        head_sha=SHA,
        reason="failed_checks",
        source="webhook",
        dedupe_key=f"k{repo}{pr}",
    )
    return drop_id


def run_together(threads: list[threading.Thread]) -> None:
    """Start the threads (each waits at its barrier) and wait for them all."""
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)


def test_a_second_job_of_a_pr_waits_for_the_first(store: Store) -> None:
    d = drop(store, 7)
    first = store.add_job("drop", {"drop_id": d}, drop_id=d)
    fix = store.add_job("fix", {"drop_id": d}, drop_id=d)
    # A retry command of the same PR, spelled in another case (GitHub's names are not): a
    # retry acts on a drop and writes the PR's sticky comments, so it is held back.
    command = store.add_job("command", {"command": "retry", "repo": "O/R", "pr": 7})
    other = store.add_job("command", {"command": "retry", "repo": "o/r", "pr": 8})
    leased = store.lease_job("w1", TTL)
    assert leased is not None and leased.id == first
    # The fix job and the command of PR 7 wait; PR 8's command goes on.
    nxt = store.lease_job("w2", TTL)
    assert nxt is not None and nxt.id == other
    assert store.lease_job("w3", TTL) is None
    # The control: once the first finished its actions, the next job of PR 7 is handed out.
    assert store.finish_job(first, "w1")
    after = store.lease_job("w3", TTL)
    assert after is not None and after.id == fix
    # The retry still waits for the fix job: it would decide and comment on the same drop.
    assert store.lease_job("w4", TTL) is None
    assert store.finish_job(fix, "w3")
    last = store.lease_job("w4", TTL)
    assert last is not None and last.id == command


def test_a_skip_command_during_a_fix_job_is_leased_at_once(store: Store) -> None:
    # A local fix job holds its PR for up to 30 minutes; a `/landbot skip` sent meanwhile
    # must put its label on before the fix job decides (the after-fixer decision then
    # ignores the PR), so it is stored with no PR (intake: commands.may_retry is False).
    d = drop(store, 7)
    fix = store.add_job("fix", {"drop_id": d}, drop_id=d)
    held = store.lease_job("w1", TTL)
    assert held is not None and held.id == fix
    skip = store.add_job("command", {"command": "skip", "repo": "o/r", "pr": 7}, holds_pr=False)
    taken = store.lease_job("w2", TTL)
    assert taken is not None and taken.id == skip
    # While the skip is leased, the PR's next drop job is not held back by it either.
    nxt = store.add_job("drop", {"drop_id": d}, drop_id=d)
    assert store.finish_job(fix, "w1")
    again = store.lease_job("w3", TTL)
    assert again is not None and again.id == nxt


def test_the_control_a_retry_or_a_second_drop_job_during_a_fix_job_waits(store: Store) -> None:
    d = drop(store, 7)
    fix = store.add_job("fix", {"drop_id": d}, drop_id=d)
    held = store.lease_job("w1", TTL)
    assert held is not None and held.id == fix
    retry = store.add_job("command", {"command": "retry", "repo": "o/r", "pr": 7})
    second = store.add_job("drop", {"drop_id": d}, drop_id=d)
    assert store.lease_job("w2", TTL) is None
    assert store.finish_job(fix, "w1")
    taken = store.lease_job("w2", TTL)
    assert taken is not None and taken.id == retry
    assert store.lease_job("w3", TTL) is None  # the drop job waits for the retry in turn
    assert store.finish_job(retry, "w2")
    last = store.lease_job("w3", TTL)
    assert last is not None and last.id == second


def test_a_job_of_no_pull_request_is_never_held_back(store: Store) -> None:
    d = drop(store, 7)
    store.add_job("drop", {"drop_id": d}, drop_id=d)
    assert store.lease_job("w1", TTL) is not None
    settings = store.add_job("repo_file", {"repo": "o/r", "path": ".github/landbot.toml"})
    again = store.lease_job("w2", TTL)
    assert again is not None and again.id == settings
    assert again.payload["repo"] == "o/r"


def test_a_killed_workers_expired_lease_frees_the_pr(store: Store) -> None:
    d = drop(store, 7)
    first = store.add_job("drop", {"drop_id": d}, drop_id=d)
    fix = store.add_job("fix", {"drop_id": d}, drop_id=d)
    dead = store.lease_job("dead", dt.timedelta(seconds=0.3), kinds=("drop",))
    assert dead is not None and dead.id == first
    # Held: the fix job waits while the lease lives (the control of the expiry below).
    assert store.lease_job("w2", TTL, kinds=("fix",)) is None
    time.sleep(0.5)  # the worker was SIGKILLed: it never renews, its lease runs out
    taken = store.lease_job("w2", TTL, kinds=("fix",))
    assert taken is not None and taken.id == fix
    # The dead worker's job is free again too, but not while the fix job is held.
    assert store.lease_job("w3", TTL) is None
    assert store.finish_job(fix, "w2")
    retaken = store.lease_job("w3", TTL)
    assert retaken is not None and (retaken.id, retaken.attempts) == (first, 2)


def test_a_renewed_lease_keeps_the_pr(store: Store) -> None:
    d = drop(store, 7)
    store.add_job("drop", {"drop_id": d}, drop_id=d)
    store.add_job("fix", {"drop_id": d}, drop_id=d)
    short = dt.timedelta(seconds=0.4)
    held = store.lease_job("w1", short)
    assert held is not None
    for _ in range(3):  # the worker's heartbeat, past the first lease's end
        time.sleep(0.2)
        assert store.renew_lease("jobs", held.id, "w1", short)
        assert store.lease_job("w2", TTL) is None


def test_concurrent_workers_never_hold_two_jobs_of_one_pr(store: Store) -> None:
    prs, per_pr, workers = 6, 5, 6
    for pr in range(1, prs + 1):
        d = drop(store, pr)
        for i in range(per_pr):
            kind = "drop" if i == 0 else ("fix" if i % 2 else "command")
            if kind == "command":
                store.add_job(kind, {"repo": "o/r", "pr": pr, "i": i})
            else:
                store.add_job(kind, {"drop_id": d, "i": i, "of": pr}, drop_id=d)
    lock = threading.Lock()
    in_flight: set[int] = set()
    overlaps: list[int] = []
    done: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(workers)

    def work(name: str) -> None:
        rng = random.Random(name)
        try:
            start.wait(10)
            idle = 0
            while idle < 40:
                lease = store.lease_job(name, TTL)
                if lease is None:
                    idle += 1
                    time.sleep(0.01)
                    continue
                idle = 0
                pr = int(lease.payload.get("pr", lease.payload.get("of", 0)))
                with lock:
                    if pr in in_flight:
                        overlaps.append(pr)
                    in_flight.add(pr)
                time.sleep(rng.uniform(0.002, 0.02))  # the job's actions
                with lock:
                    in_flight.discard(pr)  # before the finish commits: then the next may go
                assert store.finish_job(lease.id, name)
                with lock:
                    done.append(lease.id)
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    run_together([threading.Thread(target=work, args=(f"w{i}",)) for i in range(workers)])
    assert not errors, errors
    assert overlaps == []
    assert sorted(done) == sorted(set(done)) and len(done) == prs * per_pr


# --- the hold job's release of one drop takes its PR's lease (issue 27.2) ----------------


def test_a_release_waits_for_the_prs_running_job_and_holds_the_pr_back_itself(
    store: Store,
) -> None:
    d7, d8 = drop(store, 7), drop(store, 8)
    job = store.add_job("drop", {"drop_id": d7}, drop_id=d7)
    running = store.lease_job("w1", TTL)
    assert running is not None and running.id == job
    # Refused while PR 7's drop job runs; PR 8's release goes on (the control).
    assert store.claim_pr(d7, "hold", TTL) is None
    other = store.claim_pr(d8, "hold", TTL)
    assert other is not None
    assert store.finish_job(other, "hold")
    assert store.finish_job(job, "w1")
    release = store.claim_pr(d7, "hold", TTL)  # the control: once it finished
    assert release is not None
    row = store.job(release)
    assert row is not None and (row.kind, row.status, row.drop_id) == ("release", "leased", d7)
    # The other way round: PR 7's next drop job waits while its release runs.
    nxt = store.add_job("drop", {"drop_id": d7}, drop_id=d7)
    assert store.lease_job("w2", TTL) is None
    assert store.claim_pr(d7, "hold2", TTL) is None  # nor does a second release start
    assert store.finish_job(release, "hold")
    taken = store.lease_job("w2", TTL)
    assert taken is not None and taken.id == nxt


def test_a_killed_releases_lease_expires_and_is_taken_as_a_job(store: Store) -> None:
    d = drop(store, 7)
    dead = store.claim_pr(d, "dead", dt.timedelta(seconds=0.3))
    assert dead is not None
    store.add_job("drop", {"drop_id": d}, drop_id=d)
    assert store.lease_job("w1", TTL) is None  # held while the lease lives
    time.sleep(0.5)  # the hold job's worker was SIGKILLed
    taken = store.lease_job("w1", TTL)
    assert taken is not None and (taken.id, taken.kind, taken.attempts) == (dead, "release", 2)
    assert taken.payload == {"drop_id": d}


def test_a_release_and_a_drop_job_of_one_pr_never_run_together(store: Store) -> None:
    """Workers leasing PR 7's drop jobs and hold jobs releasing its drops, all at once, each
    thread with its own connection: never two of them on PR 7 together."""
    d = drop(store, 7)
    rounds, workers = 12, 4
    for i in range(rounds):
        store.add_job("drop", {"drop_id": d, "i": i}, drop_id=d)
    lock = threading.Lock()
    in_flight: list[str] = []
    overlaps: list[list[str]] = []
    releases: list[int] = []
    drop_jobs: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(workers)

    def hold(me: str, rng: random.Random) -> None:
        with lock:
            if in_flight:
                overlaps.append([*in_flight, me])
            in_flight.append(me)
        time.sleep(rng.uniform(0.002, 0.02))  # the release's calls, or the job's actions
        with lock:
            in_flight.remove(me)  # before the finish commits: then the next may go

    def work(name: str, releaser: bool) -> None:
        rng = random.Random(name)
        try:
            start.wait(10)
            idle = 0
            while idle < 40:
                if releaser:
                    if len(releases) >= rounds:
                        return
                    got = store.claim_pr(d, name, TTL)
                else:
                    lease = store.lease_job(name, TTL, kinds=("drop",))
                    got = lease.id if lease is not None else None
                if got is None:
                    idle += 1
                    time.sleep(0.005)
                    continue
                idle = 0
                hold(f"{name}:{got}", rng)
                assert store.finish_job(got, name)
                with lock:
                    (releases if releaser else drop_jobs).append(got)
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    run_together(
        [threading.Thread(target=work, args=(f"w{i}", i % 2 == 0)) for i in range(workers)]
    )
    assert not errors, errors
    assert overlaps == []
    assert len(drop_jobs) == rounds and len(releases) >= rounds  # both sides ran, in turns
