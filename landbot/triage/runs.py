"""What a check run says of the Actions job behind it: shared by the log's triage
(gather.py) and the test reports' (reports.py), which read the same failed jobs."""

from __future__ import annotations

import re

from landbot.github.models import CheckRun

ACTIONS_APP = "github-actions"
# Conclusions whose log says why; a cancelled job's log only says it was cancelled.
LOG_CONCLUSIONS = frozenset({"failure", "timed_out"})
JOB_URL = re.compile(r"/actions/runs/(\d+)/job/(\d+)")


def run_id_of(check: CheckRun) -> int | None:
    """The workflow run of an Actions check run, from its job URL (no call)."""
    for url in (check.details_url, check.html_url):
        m = JOB_URL.search(url or "")
        if m is not None and int(m.group(2)) == check.id:
            return int(m.group(1))
    return None
