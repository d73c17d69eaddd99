"""Helpers for the triage tests: write job logs the way GitHub Actions does."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
BOM = b"\xef\xbb\xbf"


def stamp(n: int) -> str:
    """A timestamp with seven fractional digits, distinct per line."""
    return f"2026-11-03T10:{15 + n // 6000 % 40:02d}:{n // 100 % 60:02d}.{n % 10_000_000:07d}Z"


def gh_log(lines: Sequence[str], *, bom: bool = True, final_newline: bool = True) -> bytes:
    """A log as the job-log endpoint returns it: BOM, a timestamp on every line."""
    body = "\n".join(f"{stamp(i)} {text}" for i, text in enumerate(lines))
    if final_newline and lines:
        body += "\n"
    return (BOM if bom else b"") + body.encode()


def run_step(command: str, *output: str, script: Sequence[str] = ()) -> list[str]:
    """A `run:` step's section: header group (script, shell), then its output."""
    return [
        f"##[group]Run {command}",
        command,
        *script,
        "shell: /usr/bin/bash -e {0}",
        "##[endgroup]",
        *output,
    ]


SET_UP = [
    "Current runner version: '2.321.0'",
    "##[group]Operating System",
    "Ubuntu",
    "24.04.1",
    "LTS",
    "##[endgroup]",
    "Prepare workflow directory",
    "Complete job name: test",
]
