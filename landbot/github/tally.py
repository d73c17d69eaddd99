"""This process's GitHub requests, tallied for the store (issue 28.4): a separate `landbot
worker` has no /metrics of its own, so every process saves its counts in the store and any
`landbot serve` reports them all (landbot.web.prom). Counted from CALL_OBSERVERS, as
/metrics' own per-process counter is."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections import Counter
from typing import Final

from landbot.github import client as github_client
from landbot.github.client import CallRecord

Key = tuple[str, str, str]  # (installation, api, status), as CallRecord names them


class CallTally:
    """Requests by (installation, api, status) since this process started; thread-safe."""

    def __init__(self, process: str) -> None:
        self.process = process  # this process's row key in the store
        self._lock = threading.Lock()
        self._counts: Counter[Key] = Counter()

    def on_call(self, record: CallRecord) -> None:
        with self._lock:
            self._counts[(record.installation, record.api, record.status)] += 1

    def snapshot(self) -> dict[Key, int]:
        with self._lock:
            return dict(self._counts)

    def attach(self) -> CallTally:
        if self.on_call not in github_client.CALL_OBSERVERS:
            github_client.CALL_OBSERVERS.append(self.on_call)
        return self

    def detach(self) -> None:
        if self.on_call in github_client.CALL_OBSERVERS:
            github_client.CALL_OBSERVERS.remove(self.on_call)


def process_name() -> str:
    """Host, pid and start time: a restarted process (the same pid again) is a new row."""
    return f"{socket.gethostname()[:120]}:{os.getpid()}:{int(time.time())}"


# The process's own tally, attached by the wiring of `serve`, `worker` and `poll`.
PROCESS_TALLY: Final = CallTally(process_name())
