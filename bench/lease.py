"""The CPU of a worker's lease calls on a SQLite store: an idle step (lease_delivery then
lease_job, both finding nothing, as a worker polls every `[worker] idle_sleep`), and leasing
one job of 300. Figures in bench/README.md (the test line, stop 32).

    .venv/bin/python bench/lease.py
"""

from __future__ import annotations

import datetime as dt
import tempfile
import time

from landbot.store import Store


def main() -> None:
    folder = tempfile.mkdtemp(prefix="landbot-lease-bench-")
    store = Store.open(f"sqlite:///{folder}/landbot.db")
    ttl = dt.timedelta(seconds=60)
    for _ in range(50):  # warm: the statements built, SQLite's pages cached
        store.lease_delivery("w", ttl)
        store.lease_job("w", ttl, cap=("fix", 1))
    n = 1000
    start = time.process_time()
    for _ in range(n):
        store.lease_delivery("w", ttl)
        store.lease_job("w", ttl, cap=("fix", 1))
    idle = (time.process_time() - start) / n
    for i in range(300):
        store.add_job("drop", {}, dedupe_key=f"k{i}")
    start = time.process_time()
    leased = 0
    while store.lease_job("w", ttl, cap=("fix", 1)) is not None:
        leased += 1
    each = (time.process_time() - start) / max(leased, 1)
    print(f"idle step: {idle * 1000:.2f} ms of CPU; leasing a job: {each * 1000:.2f} ms ({leased})")
    store.close()


if __name__ == "__main__":
    main()
