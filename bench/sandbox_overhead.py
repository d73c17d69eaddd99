"""Sandbox start-to-exit overhead (a benchmark, not a test).

    sudo .venv/bin/python bench/sandbox_overhead.py [--runs N] [--json]

Measures, each as the median of N runs:
- `true` started bare from Python (subprocess.run), the baseline;
- `true` through `run_sandboxed` (cgroup, uid drop, bubblewrap, namespaces, teardown);
  the overhead over bare is the figure to keep under 100 ms;
- the same with the model relay (the sandbox's /usr/bin/python3 starting first);
- `landbot sandbox run --workdir W -- true` as a whole process through Typer, and through
  the fast path that skips Typer (what `landbot.cli.main` runs once it routes well-formed
  `sandbox run` calls to landbot.sandbox.cli.fast_path): target under 250 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from landbot.sandbox.proxy import ModelProxy  # noqa: E402
from landbot.sandbox.runner import run_sandboxed  # noqa: E402

LANDBOT = str(Path(sys.executable).parent / "landbot")
FAST = (
    "import sys\n"
    "import landbot.cli\n"  # main() lives there: its import is part of the real cost
    "from landbot.sandbox.cli import fast_path\n"
    "sys.exit(fast_path(sys.argv[1:]))\n"
)


def median_ms(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm the page cache
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="landbot-bench-", dir="/tmp"))
    os.chmod(root, 0o755)
    work = root / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    try:
        bare = median_ms(lambda: subprocess.run(["true"], check=True), args.runs)
        sandboxed = median_ms(
            lambda: run_sandboxed(["true"], work, timeout=30, memory_mb=256), args.runs
        )
        with ModelProxy("http://127.0.0.1:9/v1", "unused") as proxy:
            relayed = median_ms(
                lambda: run_sandboxed(
                    ["true"], work, timeout=30, memory_mb=256, proxy=proxy.endpoint
                ),
                args.runs,
            )
        cli_args = ["--workdir", str(work), "--", "true"]
        typer_cli = median_ms(
            lambda: subprocess.run([LANDBOT, "sandbox", "run", *cli_args], check=True, env=env),
            args.runs,
        )
        fast_cli = median_ms(
            lambda: subprocess.run([sys.executable, "-c", FAST, *cli_args], check=True, env=env),
            args.runs,
        )
        python_start = median_ms(
            lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), args.runs
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)

    figures = {
        "runs": args.runs,
        "bare_true_ms": round(bare, 1),
        "run_sandboxed_true_ms": round(sandboxed, 1),
        "overhead_over_bare_ms": round(sandboxed - bare, 1),
        "run_sandboxed_with_relay_ms": round(relayed, 1),
        "cli_typer_ms": round(typer_cli, 1),
        "cli_fast_path_ms": round(fast_cli, 1),
        "python_startup_ms": round(python_start, 1),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}",
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"median of {args.runs} runs ({figures['machine']})")
    print(f"  bare `true` from Python                   {bare:7.1f} ms")
    print(f"  run_sandboxed(['true'])                   {sandboxed:7.1f} ms")
    print(f"    overhead over bare                      {sandboxed - bare:7.1f} ms  (target < 100)")
    print(f"  run_sandboxed(['true'], proxy=...)        {relayed:7.1f} ms")
    print(f"  `landbot sandbox run -- true` (Typer)     {typer_cli:7.1f} ms")
    print(f"  same, fast path (no Typer parsing)        {fast_cli:7.1f} ms  (target < 250)")
    print(f"  python -c pass (interpreter start)        {python_start:7.1f} ms")


if __name__ == "__main__":
    main()
