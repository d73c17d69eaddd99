"""The one write that tells a repository its own settings file is invalid.

A `landbot config` check run on the default-branch commit the file was read at: conclusion
`failure`, one annotation per problem at its line of the file, and a summary listing each
problem with the local command that finds them all (`landbot config check FILE`). It is made
once per version (blob sha) of the file: pipeline/repo_settings.py claims the report in the
store first, and finds a check run a dead worker may have made by its `external_id`.

    output = config_output(path, problems, kept="the last good version")   # pure
    run = report_invalid(gh, repo, commit_sha, path, blob_sha, problems, kept=...)
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from landbot import logs
from landbot.core.text import inert
from landbot.errors import RepoConfigError
from landbot.github.models import Annotation, CheckOutput, CheckRun
from landbot.github.ops import WritesChecks

log = logging.getLogger("landbot.land")

CONFIG_CHECK = "landbot config"
# Bounds on what the repository's text can make landbot write: GitHub caps a summary at
# 65535 characters; more than 50 problems are one file to rewrite, not 50 to read.
MAX_LISTED = 50
MAX_MESSAGE = 500


class ReadsChecks(Protocol):
    def check_runs(self, repo: str, ref: str) -> list[CheckRun]: ...


def external_id(blob_sha: str) -> str:
    """Names the check run of one version of the file (found again after a crash)."""
    return f"config:{blob_sha}"


def _message(problem: RepoConfigError) -> str:
    text = " ".join(problem.message.split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def config_output(path: str, problems: Sequence[RepoConfigError], *, kept: str) -> CheckOutput:
    """The check run's output: a title, the summary a maintainer reads, an annotation per
    problem at its line (line 1 when the problem has none: the file as a whole). `kept`
    names what stays in effect ("the last good version", "the host's settings")."""
    count = len(problems)
    noun = "problem" if count == 1 else "problems"
    listed = problems[:MAX_LISTED]
    lines = [
        f"landbot did not apply `{inert(path)}`: {count} {noun}. Until it is fixed, "
        f"{kept} stays in effect.",
        "",
        *(f"- {f'line {p.line}' if p.line else 'the file'}: {inert(_message(p))}" for p in listed),
    ]
    if count > len(listed):
        lines.append(f"- and {count - len(listed)} more")
    lines += [
        "",
        "Check the file before pushing it (every problem, with its line and the fix):",
        "",
        "```",
        f"landbot config check {path}",
        "```",
    ]
    annotations = tuple(
        Annotation(
            path=path,
            start_line=p.line or 1,
            end_line=p.line or 1,
            annotation_level="failure",
            message=_message(p),
            title="invalid landbot setting",
        )
        for p in listed
    )
    return CheckOutput(
        title=f"{path}: {count} {noun}",
        summary="\n".join(lines),
        annotations=annotations,
    )


def find_report(gh: ReadsChecks, repo: str, commit_sha: str, blob_sha: str) -> CheckRun | None:
    """The check run reporting `blob_sha` on `commit_sha`, when one was made (a worker that
    died between creating it and recording it)."""
    wanted = external_id(blob_sha)
    return next(
        (
            run
            for run in gh.check_runs(repo, commit_sha)
            if run.name == CONFIG_CHECK and run.external_id == wanted
        ),
        None,
    )


def report_invalid(
    gh: WritesChecks,
    repo: str,
    commit_sha: str,
    path: str,
    blob_sha: str,
    problems: Sequence[RepoConfigError],
    *,
    kept: str,
) -> CheckRun:
    """Create the completed `landbot config` check run (one POST; the client PATCHes the
    annotations past the first 50)."""
    if not problems:
        raise ValueError("report_invalid needs at least one problem")
    run = gh.create_check_run(
        repo,
        commit_sha,
        name=CONFIG_CHECK,
        status="completed",
        conclusion="failure",
        external_id=external_id(blob_sha),
        output=config_output(path, problems, kept=kept),
    )
    logs.event(
        log,
        "settings file reported invalid",
        logging.WARNING,
        repo=repo,
        commit_sha=commit_sha,
        blob_sha=blob_sha,
        path=path,
        problems=len(problems),
        check_run_id=run.id,
    )
    return run
