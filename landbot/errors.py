"""Errors that end a command with one clear line (exit 2) instead of a traceback."""


class LandbotError(Exception):
    """A usage or environment problem: the message is one line naming the problem and the fix."""

    exit_code = 2


class NotBuiltError(LandbotError):
    """A contract command whose stage does not exist yet."""

    def __init__(self, command: str, stage: str) -> None:
        super().__init__(
            f"`landbot {command}` is not built yet: the {stage} stage has not landed "
            "(see the open issues); nothing was done"
        )


class RepoConfigError(LandbotError):
    """One problem of a repository's settings file (landbot/repo_config.py):
    `FILE:LINE: what is wrong; the fix` (str()). Here, not there, because the land stage's
    report of an invalid file names it too, and the stages sit below the file's parser."""

    def __init__(self, file: str, line: int | None, message: str) -> None:
        self.file = file
        self.line = line
        self.message = message
        super().__init__(f"{file}:{line}: {message}" if line else f"{file}: {message}")
