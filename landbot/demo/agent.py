#!/usr/bin/python3
"""The scripted land-fixer agent of `landbot demo` (`[fixer] agent = "command"`).

landbot runs it in the fixer sandbox like any command agent: the checkout of the pull
request as the working directory, no network, no credentials, only the system's
/usr/bin/python3 and git. It follows the prompt's rules the way a careful developer would:

1. read the evidence ($LANDBOT_EVIDENCE_FILE) and run the failing step's command to
   reproduce the failure (pytest is not in the sandbox's Python, so a `python -m pytest`
   step is run with the standard library's unittest, which runs the same tests);
2. if it passes unchanged, say `flaky`;
3. otherwise apply the one fix it knows, if the failing code is the code it knows (this is
   the scripted part: a real agent, such as `--agent codex`, works the fix out itself);
4. run the command again: only if it passes now, commit and say `fixed`; else undo and
   say `needs_human`;
5. write the verdict to $LANDBOT_VERDICT_FILE.

Standard library only: it runs under the sandbox's /usr/bin/python3, not landbot's venv.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from typing import Any

# (file, wrong text, right text, what was wrong): the fixes this scripted agent knows.
KNOWN_FIXES = (
    (
        "calc/stats.py",
        "return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))",
        "return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))",
        "stdev() divided the sum of squares by n; a sample standard deviation divides by n - 1",
    ),
)
UNITTEST = (
    "-m",
    "unittest",
    "discover",
    "--start-directory",
    "tests",
    "--top-level-directory",
    ".",
)
TAIL_LINES = 12


def say(message: str) -> None:
    print(f"[scripted agent] {message}", flush=True)


def run(argv: list[str]) -> tuple[int, str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        done = subprocess.run(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, check=False
        )
    except OSError as exc:
        return 127, f"{argv[0]}: {exc.strerror}"
    return done.returncode, done.stdout


def tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def has_module(name: str) -> bool:
    code, _ = run([sys.executable, "-c", f"import {name}"])
    return code == 0


def test_command(evidence: dict[str, Any]) -> tuple[list[str], str]:
    """(argv, how it was chosen) for the failing step's command, runnable in the sandbox."""
    for job in evidence.get("jobs") or []:
        command = job.get("reproduce") if isinstance(job, dict) else None
        if not isinstance(command, str) or not command:
            continue
        argv = shlex.split(command)
        if argv and argv[0] in ("python", "python3"):
            argv[0] = sys.executable
        if argv[1:3] == ["-m", "pytest"] and not has_module("pytest"):
            say(
                f"`{command}` needs pytest, which the sandbox's Python lacks: "
                "running the same tests with unittest"
            )
            return [sys.executable, *UNITTEST], f"`{command}`"
        return argv, f"`{command}`"
    return [sys.executable, *UNITTEST], "the test suite"


def write_verdict(verdict: str, summary: str, recommendation: str, reproduced: bool) -> None:
    path = os.environ["LANDBOT_VERDICT_FILE"]
    data = {
        "verdict": verdict,
        "summary": summary,
        "recommendation": recommendation,
        "reproduced": reproduced,
    }
    with open(path, "w") as f:
        json.dump(data, f)
        f.write("\n")
    say(f"verdict: {verdict}: {summary}")


def explain_policy(evidence: dict[str, Any]) -> int:
    """A quest-policy failure: the finding is about the plan, not the code. The scripted
    agent explains what the change did and leaves the decision to a person (it commits
    nothing: choosing a size or whether a quest should exist is not mechanical)."""
    findings = [
        str(line.get("text", "")).strip()
        for job in evidence.get("jobs") or []
        for line in job.get("excerpt") or []
        if str(line.get("text", "")).startswith("quest: ")
    ]
    explained = [str(e) for e in evidence.get("quest_explanations") or []]
    say(f"a quest check failure: {len(findings)} finding(s), {len(explained)} explained")
    why = explained[0] if explained else (findings[0] if findings else "the quest check failed")
    write_verdict(
        "needs_human",
        f"the quest check fails because of what this pull request changes in quest/: {why}",
        "Decide what the quest tree should say: restore the quest this change deletes, or "
        "remove the link to it from the quest that requires it; then run "
        "`landbot quest check --base origin/main` and push.",
        False,
    )
    return 0


def main() -> int:
    with open(os.environ["LANDBOT_EVIDENCE_FILE"]) as f:
        evidence = json.load(f)
    drop = evidence.get("drop") or {}
    say(f"{drop.get('repo')}#{drop.get('pr')}: the queue dropped it for {drop.get('reason')}")
    if evidence.get("conflict_files"):
        write_verdict(
            "needs_human",
            "the checkout is in the middle of a merge with conflicts; this scripted agent "
            "resolves no conflicts",
            "Resolve the conflicts by hand.",
            False,
        )
        return 0

    if (evidence.get("triage") or {}).get("class") == "policy":
        return explain_policy(evidence)

    argv, how = test_command(evidence)
    say(f"reproducing: running {how}")
    code, output = run(argv)
    print(tail(output), flush=True)
    if code == 0:
        write_verdict(
            "flaky",
            f"{how} passed when run again on the unchanged checkout",
            "Put it back in the queue.",
            False,
        )
        return 0
    say(f"reproduced: it exits {code}")

    fix = None
    for path, wrong, right, why in KNOWN_FIXES:
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        if wrong in text:
            fix = (path, text, text.replace(wrong, right, 1), why)
            break
    if fix is None:
        write_verdict(
            "needs_human",
            f"{how} fails, and not in code this scripted agent knows how to fix: "
            + tail(output, 1),
            "Look at the failure; a real agent (--agent codex) would try to fix it.",
            True,
        )
        return 0

    path, before, after, why = fix
    say(f"fixing {path}: {why}")
    with open(path, "w") as f:
        f.write(after)
    code, output = run(argv)
    print(tail(output), flush=True)
    if code != 0:
        with open(path, "w") as f:
            f.write(before)
        write_verdict(
            "needs_human",
            f"the fix to {path} did not make {how} pass: " + tail(output, 1),
            "Look at the failure yourself.",
            True,
        )
        return 0
    say(f"verified: {how} passes now")
    message = (
        "Fix stdev(): divide by n - 1\n\n"
        f"The merge queue's tests failed: {why}.\n\n"
        "Reproduced and fixed in landbot's fixer sandbox (landbot demo's scripted agent).\n"
    )
    code, output = run(["git", "commit", "--quiet", "--all", "--message", message])
    if code != 0:
        write_verdict(
            "needs_human", "git commit failed: " + tail(output, 1), "Commit the fix by hand.", True
        )
        return 0
    write_verdict("fixed", f"{why}. Fixed {path}; {how} passes now.", "", True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
