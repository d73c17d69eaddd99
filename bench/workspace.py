"""Benchmark preparing a land-fixer job's work tree: cached mirror against a fresh clone.

    .venv/bin/python bench/workspace.py [--files 10000] [--commits 1000] [--per-commit 20]
                                        [--runs 5]

Generates a repository of `--files` files with `--commits` commits of history (each
changing `--per-commit` files), packed like a hosting service's, as a bare repository
reached by a file:// URL, plus a pull request (`refs/pull/1/head`). Then, per run:

- cached: `Workspaces.job(...)` entered: fetch the PR and base refs into the existing mirror,
  clone the mirror locally (hard links), lay out the PR head's files, chown what the host
  wrote to the sandbox uid and refresh the index (timed until the block starts; removal
  timed apart); both ways of laying out the files: an overlay on the repository's pristine
  tree (made by the first job, not counted in the median) and a full checkout;
- fresh: what a job would do without a mirror: `git clone --no-checkout` of the URL,
  check out the PR head, the same chown and index refresh.

Both run as root (chown needs it) and from a warm page cache. Reports median and best.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from landbot.git.ownership import chown_tree
from landbot.git.workspace import DEFAULT_DISK_MB, Workspaces, run_git

UID = GID = 65534
IDENT = "bench <bench@example.invalid>"


def _blob(path: str, version: int) -> bytes:
    lines = [f"# {path} v{version}\n"] + [
        f"value_{i} = {hash((path, i, version // 3)) % 100000}\n" for i in range(30)
    ]
    return "".join(lines).encode()


def generate(bare: Path, files: int, commits: int, per_commit: int, seed: int = 11) -> str:
    """A bare repository with history via `git fast-import`; returns the PR head sha."""
    rng = random.Random(seed)
    paths = [f"pkg{i % 50:02d}/mod{i // 50 % 20:02d}/file{i:05d}.py" for i in range(files)]
    versions = dict.fromkeys(paths, 0)
    run_git(["init", "--bare", "--quiet", "--template=", "-b", "main", str(bare)])
    proc = subprocess.Popen(
        ["git", f"--git-dir={bare}", "fast-import", "--quiet"], stdin=subprocess.PIPE
    )
    assert proc.stdin is not None
    out = proc.stdin
    when = 1_700_000_000

    def commit(ref: str, message: str, changed: list[str], parent: str | None) -> None:
        nonlocal when
        when += 60
        msg = message.encode()
        out.write(f"commit {ref}\nmark :{when}\n".encode())
        out.write(f"author {IDENT} {when} +0000\ncommitter {IDENT} {when} +0000\n".encode())
        out.write(b"data %d\n%s\n" % (len(msg), msg))
        if parent:
            out.write(f"from {parent}\n".encode())
        for path in changed:
            data = _blob(path, versions[path])
            out.write(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")

    commit("refs/heads/main", "Initial import", paths, None)
    for n in range(commits):
        changed = rng.sample(paths, per_commit)
        for path in changed:
            versions[path] += 1
        commit("refs/heads/main", f"Change {n}", changed, None)
    pr_file = paths[len(paths) // 2]
    versions[pr_file] += 1000
    commit("refs/pull/1/head", "The pull request", [pr_file], "refs/heads/main")
    out.close()
    if proc.wait() != 0:
        raise SystemExit("fast-import failed")
    # Packed like a hosting service keeps it (and so a clone reuses deltas).
    run_git(["gc", "--quiet", "--aggressive", "--prune=now"], git_dir=bare)
    head = run_git(["rev-parse", "refs/pull/1/head"], git_dir=bare).stdout.decode().strip()
    return head


def fresh(url: str, head: str, target: Path) -> None:
    run_git(["clone", "--quiet", "--no-checkout", "--template=", url, str(target)])
    run_git(["fetch", "--quiet", url, "refs/pull/1/head"], cwd=target)
    run_git(["checkout", "--quiet", "--detach", head], cwd=target)
    chown_tree(target, UID, GID)
    run_git(
        ["update-index", "-q", "--refresh"],
        cwd=target,
        config=[("safe.directory", str(target))],
        check=False,
    )


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--commits", type=int, default=1_000)
    parser.add_argument("--per-commit", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--disk-mb", type=int, default=DEFAULT_DISK_MB, help="each job's disk cap (0: none)"
    )
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root: the work tree is chowned to the sandbox uid")

    root = Path(tempfile.mkdtemp(prefix="landbot-bench-ws-", dir="/tmp"))
    os.chmod(root, 0o755)
    try:
        bare = root / "remote" / "acme" / "big.git"
        bare.parent.mkdir(parents=True)
        t = time.perf_counter()
        head = generate(bare, args.files, args.commits, args.per_commit)
        print(
            f"generated {args.files} files, {args.commits + 2} commits, pack "
            f"{du(bare / 'objects') / 1e6:.1f} MB in {time.perf_counter() - t:.1f} s"
        )
        url_template = f"file://{root}/remote/{{owner}}/{{repo}}.git"
        url = f"file://{bare}"
        cold: dict[str, float] = {}
        cached: dict[str, list[float]] = {}
        teardown: dict[str, list[float]] = {}
        for mode, overlay in (("overlay", True), ("full checkout", False)):
            ws = Workspaces(
                root / mode.replace(" ", "-"),
                git_url=url_template,
                uid=UID,
                gid=GID,
                overlay=overlay,
                disk_mb=args.disk_mb,
            )
            t = time.perf_counter()
            ws.sync("acme/big", 1, "main")
            cold[mode] = time.perf_counter() - t
            cached[mode], teardown[mode] = [], []
            for _ in range(args.runs + 1):  # the first overlay job makes the pristine tree
                t = time.perf_counter()
                with ws.job("acme/big", 1, head, "main") as job:
                    cached[mode].append(time.perf_counter() - t)
                    assert (job.path / ".git").is_dir()
                    t = time.perf_counter()
                teardown[mode].append(time.perf_counter() - t)
            assert ws.stats.overlay_jobs == (args.runs + 1 if overlay else 0), ws.stats

        fresh_times: list[float] = []
        for i in range(args.runs):
            target = root / f"fresh{i}"
            t = time.perf_counter()
            fresh(url, head, target)
            fresh_times.append(time.perf_counter() - t)
            shutil.rmtree(target)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    def show(name: str, xs: list[float]) -> None:
        print(f"| {name} | {statistics.median(xs):.2f} s | {min(xs):.2f} s |")

    print(f"\nmachine: {os.cpu_count()} cores, {platform.machine()}, Linux {platform.release()}")
    print(f"load average: {os.getloadavg()[0]:.1f}\n")
    print("| what | median | best |\n|---|---|---|")
    print(f"| first use: clone the mirror (once per repository) | {cold['overlay']:.2f} s | |")
    print(
        f"| first overlay job: writes the pristine tree (once per repository) "
        f"| {cached['overlay'][0]:.2f} s | |"
    )
    show("cached, overlay: job work tree from the mirror", cached["overlay"][1:])
    show("cached, full checkout: job work tree from the mirror", cached["full checkout"][1:])
    show("fresh: clone + checkout per job", fresh_times)
    show("job removal, overlay", teardown["overlay"][1:])
    show("job removal, full checkout", teardown["full checkout"][1:])
    fresh_median = statistics.median(fresh_times)
    for mode in ("overlay", "full checkout"):
        xs = cached[mode][1:]
        print(
            f"fresh / cached ({mode}): {fresh_median / statistics.median(xs):.1f}x (medians), "
            f"{min(fresh_times) / min(xs):.1f}x (best)"
        )


if __name__ == "__main__":
    main()
