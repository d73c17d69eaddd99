"""Errors of the GitHub client.

They are `LandbotError`s, so a command that meets one ends with one line (exit 2) instead
of a traceback; the worker catches the specific classes.
"""

from __future__ import annotations

from typing import Any

from landbot.errors import LandbotError


class GitHubError(LandbotError):
    """GitHub answered with an error (or not at all: status 0)."""

    def __init__(self, status: int, message: str, *, method: str = "", url: str = "") -> None:
        self.status = status
        self.message = message
        self.method = method
        self.url = url
        where = f" to {method} {url}" if method else ""
        if status == 0:
            head = f"no answer from GitHub{where}"
        elif status == 200:  # GraphQL errors and unexpected shapes come with a 200
            head = f"GitHub's answer{where}"
        else:
            head = f"GitHub answered {status}{where}"
        super().__init__(f"{head}: {message}")


class NotFound(GitHubError):
    """404, or a GraphQL NOT_FOUND error."""


class ServerError(GitHubError):
    """5xx once the retry policy gave up (reads; a mutation raises MutationOutcomeUnknown)."""


class NetworkError(GitHubError):
    """No HTTP answer: a timeout or a connection error (status 0).

    `may_have_sent` is False when the request cannot have reached GitHub (connecting failed),
    so even a mutation may be retried.
    """

    def __init__(
        self, message: str, *, may_have_sent: bool, method: str = "", url: str = ""
    ) -> None:
        self.may_have_sent = may_have_sent
        super().__init__(0, message, method=method, url=url)


class RateLimited(GitHubError):
    """A primary or secondary rate limit; raised once the retry policy stops waiting.

    `retry_after` is the wait GitHub asked for, in seconds (retry-after, or until
    x-ratelimit-reset), or None when it gave no hint.
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        retry_after: float | None,
        method: str = "",
        url: str = "",
    ) -> None:
        self.retry_after = retry_after
        super().__init__(status, message, method=method, url=url)


class MutationOutcomeUnknown(GitHubError):
    """A mutation met a 5xx or a timeout: GitHub may or may not have acted.

    It is never repeated blindly; the caller re-reads the state and decides.
    """


class GraphQLError(GitHubError):
    """A GraphQL answer with `errors` (status 200). `errors` are GitHub's error objects."""

    def __init__(
        self,
        errors: list[dict[str, Any]],
        *,
        data: Any = None,
        status: int = 200,
        method: str = "",
        url: str = "",
    ) -> None:
        self.errors = errors
        self.data = data
        message = "; ".join(
            f"{e.get('type') or 'ERROR'}: {e.get('message', '')}".strip() for e in errors
        )
        super().__init__(status, message or "GraphQL errors", method=method, url=url)

    @property
    def types(self) -> set[str]:
        return {str(e.get("type")) for e in self.errors if e.get("type")}


class MutationFailed(GitHubError):
    """A mutation GitHub refused, or that is known not to have applied: the drop fails,
    and its summary names the mutation ("enqueue", "status comment", ...)."""

    def __init__(self, mutation: str, cause: GitHubError | str) -> None:
        self.mutation = mutation
        self.cause = cause
        if isinstance(cause, GitHubError):
            self.status, self.message, self.method, self.url = (
                cause.status,
                cause.message,
                cause.method,
                cause.url,
            )
            text = str(cause)
        else:
            self.status, self.message, self.method, self.url = 0, cause, "", ""
            text = cause
        LandbotError.__init__(self, f"the {mutation} failed: {text}")
