"""Benchmark `landbot quest check` on a generated tree of 10,000 quests and 30,000 links.

    .venv/bin/python bench/quest_check.py [--quests 10000] [--links-per-quest 3] [--runs 5]

Generates the tree in a temporary git repository (committed on `main`, then a change like a
pull request's: a finished quest deleted with the links to it), and measures, each in a fresh
process so caches and imports count:

- `check_tree(root)`: the work tree on disk;
- `check_tree(root, base="main", branch=...)`: the same plus the base read with git;
- the whole `landbot quest check --base main` command (process start and imports included);

reporting the median and best wall time and the peak resident memory of the process.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import posixpath
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = ["XS", "S", "M", "L", "XL"]


def generate(root: Path, quests: int, links_per_quest: int, seed: int = 7) -> tuple[int, int]:
    """A tree like a big real one: milestones, grouping folders, parents with children,
    every quest requiring earlier ones. Valid: checking it finds nothing."""
    rng = random.Random(seed)
    paths: list[str] = ["quest/README.md"]
    readmes = {"quest/README.md"}
    milestone = 0
    while len(paths) < quests:
        base = f"quest/m{milestone}"
        paths.append(f"{base}/README.md")
        readmes.add(f"{base}/README.md")
        for area in range(10):
            # Every other area is only a grouping folder around a parent one level down.
            folder = f"{base}/area{area}" if area % 2 else f"{base}/area{area}/epic"
            paths.append(f"{folder}/README.md")
            readmes.add(f"{folder}/README.md")
            for n in range(48):
                paths.append(f"{folder}/task-{n}.md")
        milestone += 1
    paths = paths[:quests]
    # A README.md cut off without children would be standalone: give it a size then.
    has_child: set[str] = set()  # folders whose README.md has a child below it
    for p in paths:
        folder = posixpath.dirname(p)
        if p.endswith("/README.md"):
            folder = posixpath.dirname(folder)
        while folder.startswith("quest"):
            has_child.add(folder)
            folder = posixpath.dirname(folder)
    # Earlier quests only (no cycles); the first few quests have fewer to choose from, so the
    # last few take one more and the total is exactly quests x links_per_quest.
    wanted = [min(links_per_quest, index) for index in range(len(paths))]
    deficit = links_per_quest * len(paths) - sum(wanted)
    for index in range(len(paths) - deficit, len(paths)):
        wanted[index] += 1
    links = 0
    for index, path in enumerate(paths):
        folder = posixpath.dirname(path)
        is_parent = path in readmes and folder in has_child
        title = "# Plan" if is_parent else f"# [{rng.choice(SIZES)}] Quest {index}"
        lines = [title, "", f"Quest {index}: what it is for, and how we know it is done.", ""]
        if wanted[index]:
            lines += ["## Required", ""]
            for target in sorted(paths[i] for i in rng.sample(range(index), wanted[index])):
                lines.append(
                    f"- [{posixpath.basename(target)}]({posixpath.relpath(target, folder)})"
                )
                links += 1
            lines.append("")
        file = root / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("\n".join(lines) + "\n")
    return len(paths), links


def finish(root: Path, gone: str) -> None:
    """What a pull request that finishes a quest does: delete it and every link to it."""
    (root / gone).unlink()
    for file in (root / "quest").rglob("*.md"):
        rel = file.relative_to(root).as_posix()
        lines = file.read_text().split("\n")
        kept = [
            line
            for line in lines
            if not (
                line.startswith("- [")
                and posixpath.normpath(
                    posixpath.join(posixpath.dirname(rel), line[line.index("](") + 2 : -1])
                )
                == gone
            )
        ]
        if kept != lines:
            file.write_text("\n".join(kept))


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def child(root: str, base: str | None, branch: str | None) -> None:
    """One measured run, in this fresh process."""
    start = time.perf_counter()
    from landbot.quest import check_tree

    findings = check_tree(root, base=base, branch=branch)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "findings": len(findings)}))


def run_measured(argv: list[str]) -> tuple[float, float, str, str]:
    """Wall seconds, peak RSS in MiB (of this child alone, from wait4), stdout, stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err)
        _, _, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = 0  # reaped by wait4
        out.seek(0)
        err.seek(0)
        return wall, usage.ru_maxrss / 1024, out.read().decode(), err.read().decode()


def measure(argv: list[str], runs: int) -> dict[str, float]:
    """For the in-process check the time is measured inside the child (imports included,
    interpreter start not); for the CLI it is the command's wall time."""
    times: list[float] = []
    peaks: list[float] = []
    findings = 0
    for _ in range(runs):
        wall, peak, stdout, stderr = run_measured(argv)
        if stdout.startswith("{"):
            result = json.loads(stdout)
            times.append(result["seconds"])
            findings = result["findings"]
        else:
            times.append(wall)
            findings = len(stderr.splitlines())
        peaks.append(peak)
    return {
        "median_s": statistics.median(times),
        "best_s": min(times),
        "peak_mib": max(peaks),
        "findings": findings,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quests", type=int, default=10_000)
    parser.add_argument("--links-per-quest", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        root, base, branch = args.child
        child(root, base or None, branch or None)
        return

    tmp = Path(tempfile.mkdtemp(prefix="landbot-bench-quest-"))
    try:
        root = tmp / "repo"
        root.mkdir()
        env_keys = (
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "GIT_COMMITTER_NAME",
            "GIT_COMMITTER_EMAIL",
        )
        for key in env_keys:
            os.environ.setdefault(key, "bench" if key.endswith("NAME") else "bench@example.invalid")
        git(root, "init", "-q", "-b", "main")
        quests, links = generate(root, args.quests, args.links_per_quest)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "plan")
        # The change under test: finish one task (delete it and the links to it).
        gone = "quest/m1/area3/task-5.md"
        git(root, "checkout", "-q", "-b", "quest/m1/area3/task-5")
        finish(root, gone)
        me = [sys.executable, __file__, "--child"]
        landbot = str(Path(sys.executable).with_name("landbot"))
        branch = "quest/m1/area3/task-5"
        cli = [landbot, "quest", "check", "--root", str(root), "--base", "main"]
        results = {
            "check_tree: work tree": measure([*me, str(root), "", ""], args.runs),
            "check_tree: + --base, --branch": measure([*me, str(root), "main", branch], args.runs),
            "CLI: landbot quest check --base": measure(cli, args.runs),
        }
        # A change that breaks rules: the base must then be read and checked too.
        broken = root / "quest/m1/area3/README.md"
        broken.write_text(broken.read_text() + "\n## Required\n\n- [gone](task-5.md)\n")
        (root / "quest/m0/area1/task-1.md").write_text("# Unsized\n")
        results["check_tree: + --base, 2 findings"] = measure(
            [*me, str(root), "main", branch], args.runs
        )
        results["CLI: landbot quest check --base, 2 findings"] = measure(cli, args.runs)
        print(f"tree: {quests} quests, {links} Required links; {args.runs} runs each")
        print(f"machine: {platform.platform()}, {os.cpu_count()} cores")
        print(f"python: {platform.python_version()}")
        for name, r in results.items():
            print(
                f"{name:45} median {r['median_s']:.3f} s, best {r['best_s']:.3f} s, "
                f"peak RSS {r['peak_mib']:.0f} MiB, findings {r['findings']:.0f}"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
