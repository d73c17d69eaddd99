"""OWNER/NAME repository names and their REST paths."""

from __future__ import annotations

from urllib.parse import quote

from landbot.errors import LandbotError


def split_repo(repo: str) -> tuple[str, str]:
    """("octo", "widgets") for "octo/widgets"; LandbotError for anything else."""
    owner, sep, name = repo.partition("/")
    if not sep or not owner or not name or "/" in name:
        raise LandbotError(f"repository {repo!r} is not OWNER/NAME; name it like octo/widgets")
    return owner, name


def repo_path(repo: str) -> str:
    """/repos/OWNER/NAME, each part URL-quoted."""
    owner, name = split_repo(repo)
    return f"/repos/{quote(owner, safe='')}/{quote(name, safe='')}"
