"""Benchmark: `explain_log` on a generated 200 MB GitHub Actions job log.

Measures throughput (MB/s) and peak resident memory (ru_maxrss of a child process that
does nothing else) for two shapes of log:

- tail:  set-up, then one verbose test step of ~200 MB that fails at its very end;
- early: a step that fails after a few lines, then ~200 MB from an `if: always()` step;
- debug: like tail, with step debug logging on (every other line a `##[debug]` line).

Targets (issue 26): the log alone at least 200 MB/s; a log and a passing log of the same
job (``--baseline``: the same job's log without its failure, read with read_baseline) at
least 100 MB/s together (both logs' bytes over the time); under 150 MB resident either way.
Beside the wall-clock figures, the child's CPU time for the same work (``process_time``):
on a shared machine it moves less with the other work than the wall clock does.

    .venv/bin/python bench/triage_log.py [--size-mb 200] [--repeat 3] [--shapes tail,early]

The logs are written once to bench/out/ (git-ignored) and read from the page cache.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
OUT = HERE / "out"
ROOT = HERE.parent

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from landbot.triage import explain_log
from landbot.triage.baseline import read_baseline
t1, c1 = time.perf_counter(), time.process_time()
baselines = []
for path in sys.argv[2:]:
    with open(path, "rb") as f:
        baselines.append(read_baseline(f))
with open(sys.argv[1], "rb") as f:
    e = explain_log(f, baselines=baselines)
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({"import_s": t1 - t0, "parse_s": t2 - t1, "parse_cpu_s": c2 - c1,
                  "class": e.class_,
                  "step": e.step, "error_lines": list(e.error_lines), "lines": e.line_count,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

# The floor: the same child reading the file in 1 MiB chunks and doing nothing with them.
FLOOR = r"""
import json, resource, sys, time
t1 = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    while f.read(1 << 20):
        pass
t2 = time.perf_counter()
print(json.dumps({"import_s": 0.0, "parse_s": t2 - t1, "class": "-", "step": None,
                  "error_lines": [], "lines": 0,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def stamp(i: int) -> bytes:
    return b"2026-11-03T10:%02d:%02d.%07dZ " % (15 + i // 360000 % 40, i // 6000 % 60, i % 10**7)


SET_UP = [
    "\ufeffCurrent runner version: '2.321.0'",
    "##[group]Operating System",
    "Ubuntu",
    "24.04.1",
    "LTS",
    "##[endgroup]",
    "Prepare workflow directory",
    "Complete job name: test (3.11)",
    "##[group]Run actions/checkout@v4",
    "with:",
    "  repository: acme/widgets",
    "##[endgroup]",
    "##[group]Fetching the repository",
    "[command]/usr/bin/git -c protocol.version=2 fetch --no-tags --depth=1 origin",
    "##[endgroup]",
]


def _debug_filler(i: int) -> bytes:
    if i % 2:
        return b"##[debug]Evaluating condition for step: 'Run pytest' (%d)" % i
    return _filler(i)


def _filler(i: int) -> bytes:
    # What a verbose test run prints: coloured PASSED lines, now and then a tool's group.
    if i % 5000 == 0:
        return b"##[group]tests/test_module_%d.py" % (i // 5000)
    if i % 5000 == 1:
        return b"##[endgroup]"
    return (
        b"tests/test_module_%d.py::test_case_%d[param-%d] \x1b[32mPASSED\x1b[0m"
        b"                 [ %2d%%]" % (i // 5000, i, i % 7, i * 100 // 2_000_000 % 100)
    )


def generate(path: Path, size: int, shape: str) -> None:
    """Write a log of about `size` bytes, failing at the end (tail) or early (early); a
    shape ending in ``-pass`` is the same job's passing run (no failing lines)."""
    passing = shape.endswith("-pass")
    shape = shape.removesuffix("-pass")
    tmp = path.with_suffix(".tmp")
    n = 0
    with tmp.open("wb", buffering=1 << 20) as f:

        def emit(text: str | bytes) -> None:
            nonlocal n
            data = text.encode() if isinstance(text, str) else text
            f.write(stamp(n) + data + b"\n")
            n += 1

        for line in SET_UP:
            emit(line)
        failing = [
            "FAILED tests/test_pricing.py::test_bulk_discount - assert 12000 == 10800",
            "\x1b[31m==== 1 failed, 1999999 passed in 912.84s ====\x1b[0m",
            "##[error]Process completed with exit code 1.",
        ]
        if passing:
            failing = ["\x1b[32m==== 1999999 passed in 905.12s ====\x1b[0m"]
        if shape == "early":
            emit("##[group]Run pytest -x tests/test_pricing.py")
            emit("pytest -x tests/test_pricing.py")
            emit("shell: /usr/bin/bash -e {0}")
            emit("##[endgroup]")
            for line in failing:
                emit(line)
            emit("##[group]Run cat build/debug.log")
            emit("cat build/debug.log")
            emit("shell: /usr/bin/bash -e {0}")
            emit("##[endgroup]")
        else:
            emit("##[group]Run pytest -v --color=yes")
            emit("pytest -v --color=yes")
            emit("shell: /usr/bin/bash -e {0}")
            emit("##[endgroup]")
        i = 0
        fill = _debug_filler if shape == "debug" else _filler
        while f.tell() < size:
            emit(fill(i))
            i += 1
        if shape != "early":
            for line in failing:
                emit(line)
        emit("Post job cleanup.")
        emit("Cleaning up orphan processes")
    tmp.replace(path)


def run_child(code: str, log: Path, *baselines: Path) -> dict[str, float | str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(log), *map(str, baselines)],
        stdout=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    # wait4 gives this child's own rusage (getrusage(RUSAGE_CHILDREN) would mix children).
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"child failed with exit code {proc.returncode}")
    result: dict[str, float | str] = json.loads(out)
    result["wall_s"] = wall
    result["cpu_s"] = usage.ru_utime + usage.ru_stime
    result["child_maxrss_mb"] = usage.ru_maxrss / 1024
    return result


def _log(shape: str, size_mb: int) -> Path:
    log = OUT / f"triage-{shape}-{size_mb}mb.log"
    size = size_mb * 1_000_000
    if not log.exists() or abs(log.stat().st_size - size) > 2_000_000:
        generate(log, size, shape)
    return log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shapes", default="tail,early,debug")
    parser.add_argument("--no-baseline", action="store_true", help="the log alone only")
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
        f", load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'shape':14} {'MB':>6} {'parse s':>8} {'MB/s':>7} {'cpu s':>7} {'MB/cpu s':>8} "
        f"{'wall s':>7} {'RSS MB':>7}  result"
    )
    for shape in args.shapes.split(","):
        log = _log(shape, args.size_mb)
        mb = log.stat().st_size / 1_000_000
        run_child(FLOOR, log)  # warm the page cache
        floor = min((run_child(FLOOR, log) for _ in range(args.repeat)), key=lambda r: r["parse_s"])
        cases: list[tuple[str, list[Path]]] = [(shape, [])]
        if not args.no_baseline:
            passing = _log(f"{shape}-pass", args.size_mb)
            run_child(FLOOR, passing)
            cases.append((f"{shape}+pass", [passing]))
        for name, baselines in cases:
            total = mb + sum(p.stat().st_size for p in baselines) / 1_000_000
            runs = [run_child(CHILD, log, *baselines) for _ in range(args.repeat)]
            best = min(runs, key=lambda r: float(r["parse_s"]))
            cpu = min(float(r["parse_cpu_s"]) for r in runs)
            rss = max(float(r["child_maxrss_mb"]) for r in runs)
            parse_s = float(best["parse_s"])
            what = f"{best['class']} step={best['step']!r} error_lines={best['error_lines']}"
            print(
                f"{name:14} {total:6.0f} {parse_s:8.3f} {total / parse_s:7.0f} {cpu:7.3f} "
                f"{total / cpu:8.0f} {float(best['wall_s']):7.3f} {rss:7.1f}  {what}"
            )
        floor_s = float(floor["parse_s"])
        print(
            f"{'(read)':14} {mb:6.0f} {floor_s:8.3f} {mb / floor_s:7.0f} {'':7} {'':8} "
            f"{float(floor['wall_s']):7.3f} {float(floor['child_maxrss_mb']):7.1f}  "
            "reading the file in 1 MiB chunks, nothing else"
        )


if __name__ == "__main__":
    main()
