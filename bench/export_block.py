"""A blocked export beside a normal job (issue 29; a benchmark, not a test).

    sudo .venv/bin/python bench/export_block.py [--runs N] [--json]

A worker process runs one job at a time (landbot/pipeline/worker.py); other jobs get
through on other worker processes (`landbot worker` started more than once, sharing the
store). This measures what one hostile job costs them, with two processes as two workers:

- alone: a normal job's tail (a sandboxed command that commits, then `export_result`);
- beside: the same, while another process exports a job that blocks its own export (a FIFO
  for `.git/packed-refs`: git in the export waits on it for ever);
- blocked: how long the hostile export held its process (its timeout, from the size of
  its object store: `export_timeout`), and how it ended.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from landbot.fixer.job import export_result, export_size, export_timeout  # noqa: E402
from landbot.git.quarantine import BundleLimits, ResultRefused  # noqa: E402
from landbot.sandbox.runner import DEFAULT_GID, DEFAULT_UID, prepare_workdir, run_sandboxed  # noqa: E402

LIMIT = BundleLimits().max_bytes


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", f"safe.directory={cwd}", *args],
        cwd=cwd, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def _tree(root: Path, name: str) -> tuple[Path, str]:
    work = root / name
    work.mkdir()
    _git(work, "init", "-q", "-b", "main")
    _git(work, "config", "user.name", "Fixer")
    _git(work, "config", "user.email", "fixer@example.invalid")
    (work / "a").write_text("a\n")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "start")
    start = _git(work, "rev-parse", "HEAD")
    prepare_workdir(work, DEFAULT_UID, DEFAULT_GID)
    return work, start


def normal_job(work: Path, start: str) -> float:
    """A job's tail: the agent's command (here: edit and commit) and the export."""
    began = time.monotonic()
    run_sandboxed(
        ["sh", "-c", "echo b >> a && git commit -qam fix"],
        work, timeout=60, memory_mb=512, capture=True, chown=False,
    )  # fmt: skip
    export_result(work, (start,), uid=DEFAULT_UID, gid=DEFAULT_GID, limit=LIMIT)
    return time.monotonic() - began


def blocked_job(work: str, start: str, out: multiprocessing.Queue[tuple[float, str]]) -> None:
    began = time.monotonic()
    try:
        export_result(Path(work), (start,), uid=DEFAULT_UID, gid=DEFAULT_GID, limit=LIMIT)
        how = "exported (not blocked?)"
    except ResultRefused as exc:
        how = str(exc)
    out.put((time.monotonic() - began, how))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="landbot-bench-export-", dir="/tmp"))
    os.chmod(root, 0o755)
    try:
        normal, start = _tree(root, "normal")
        alone = [normal_job(normal, start) for _ in range(args.runs)]
        hostile, hstart = _tree(root, "hostile")
        (hostile / "a").write_text("b\n")
        _git(hostile, "commit", "-qam", "fix")
        os.mkfifo(hostile / ".git" / "packed-refs")
        os.chown(hostile / ".git" / "packed-refs", DEFAULT_UID, DEFAULT_GID)
        allowed = export_timeout(export_size(hostile, LIMIT))
        queue: multiprocessing.Queue[tuple[float, str]] = multiprocessing.Queue()
        worker = multiprocessing.Process(target=blocked_job, args=(str(hostile), hstart, queue))
        worker.start()
        time.sleep(1.0)  # the hostile export is under way
        beside = []
        deadline = time.monotonic() + allowed - 2
        while time.monotonic() < deadline and len(beside) < args.runs:
            beside.append(normal_job(normal, start))
        held, how = queue.get()
        worker.join()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result = {
        "normal_alone_s": round(statistics.median(alone), 3),
        "normal_beside_blocked_s": round(statistics.median(beside), 3),
        "normal_beside_runs": len(beside),
        "blocked_timeout_s": round(allowed, 1),
        "blocked_held_s": round(held, 1),
        "blocked_outcome": how,
    }
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key:28} {value}")


if __name__ == "__main__":
    main()
