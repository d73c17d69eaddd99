"""Where the test line's CPU goes (issue 25): a pytest plugin that writes, for each test,
the CPU its test process spent (all threads) and the CPU of the child processes it waited
for (git, landbot commands, the sandbox), then a summary by module.

    PYTHONPATH=bench .venv/bin/python -m pytest -n 4 --dist worksteal -p cpu_per_test -q
    .venv/bin/python bench/cpu_per_test.py            # the summary of the last run

Each xdist worker appends to `$CPU_PER_TEST_DIR/cpu-<worker>.jsonl` (default
/tmp/landbot-cpu-per-test; delete it before a run). A module-scoped fixture's cost lands on
the module's first test; collection and session fixtures are outside every test.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

OUT = Path(os.environ.get("CPU_PER_TEST_DIR", "/tmp/landbot-cpu-per-test"))
_out: IO[str] | None = None


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    global _out
    if _out is None:
        OUT.mkdir(parents=True, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _out = (OUT / f"cpu-{worker}.jsonl").open("a", encoding="utf-8")
    own0, children0 = _cpu()
    wall0 = time.monotonic()
    yield
    own1, children1 = _cpu()
    row = {
        "id": item.nodeid,
        "self": own1 - own0,
        "child": children1 - children0,
        "wall": time.monotonic() - wall0,
    }
    _out.write(json.dumps(row) + "\n")
    _out.flush()


def summary(rows: list[dict[str, Any]], top: int = 30) -> str:
    by: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for r in rows:
        m = by[r["id"].split("::")[0]]
        m[0] += r["self"]
        m[1] += r["child"]
        m[2] += r["wall"]
        m[3] += 1
    own = sum(r["self"] for r in rows)
    children = sum(r["child"] for r in rows)
    lines = [
        f"{len(rows)} tests: CPU {own + children:.0f} s ({own:.0f} s in the test processes,"
        f" {children:.0f} s in their children)"
    ]
    ranked = sorted(by.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
    for module, (s, c, w, n) in ranked[:top]:
        lines.append(
            f"{s + c:7.1f} s  self {s:6.1f}  children {c:6.1f}  wall {w:6.1f}"
            f"  {int(n):4d}  {module}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    files = sorted(OUT.glob("cpu-*.jsonl"))
    if not files:
        sys.exit(f"cpu_per_test: no figures in {OUT}; run pytest with -p cpu_per_test first")
    print(summary([json.loads(line) for f in files for line in f.read_text().splitlines()]))
