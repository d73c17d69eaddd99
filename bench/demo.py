"""How long `landbot demo` takes, as a user runs it: a fresh `landbot demo --json` process
each run, wall time from start to exit, plus where the demo's own clock says its time went.

    .venv/bin/python bench/demo.py --runs 3 [--agent scripted|codex]

Prints one line per run and a summary; exits 1 if a run did not end as described.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LANDBOT = str(Path(sys.executable).parent / "landbot")


def one(agent: str) -> tuple[float, dict[str, object]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    with tempfile.TemporaryDirectory(prefix="landbot-bench-demo-") as cwd:
        start = time.monotonic()
        done = subprocess.run(
            [LANDBOT, "demo", "--json", "--agent", agent],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.monotonic() - start
    if done.returncode not in (0, 1):
        sys.exit(f"landbot demo exited {done.returncode}: {done.stderr[-2000:]}")
    data: dict[str, object] = json.loads(done.stdout)
    return wall, data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--agent", default="scripted")
    args = parser.parse_args()
    walls: list[float] = []
    ok = True
    for run in range(1, args.runs + 1):
        wall, data = one(args.agent)
        walls.append(wall)
        ok = ok and bool(data["as_described"])
        print(
            f"run {run}: {wall:.1f} s wall, {data['seconds']} s by the demo's clock, "
            f"{data['steps']} queue steps, {data['ci_runs']} CI runs, "
            f"as described: {data['as_described']}",
            flush=True,
        )
    print(
        f"{args.agent}: median {statistics.median(walls):.1f} s, best {min(walls):.1f} s, "
        f"worst {max(walls):.1f} s over {len(walls)} runs; load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
