"""The quest tree: `landbot quest check` and the quest merge driver.

The Python API for later stages (stdlib only, so it is cheap to import):

- `check_tree(root, base=None, branch=None) -> list[Finding]`: the findings, sorted by path
  then line; `failing(findings)` are those that make the check fail (not already on base).
- `merge_driver(base, ours, theirs, path=None) -> int`: git's merge-driver contract on files.
- `merge_quest(base, ours, theirs) -> MergeResult`: the same merge on bytes.
- `install_merge_driver(root, command=DRIVER_COMMAND) -> list[str]`: enable the driver in a
  repository (`self_command()` is the same driver through this interpreter, for a host where
  `landbot` is not on PATH).
"""

from landbot.quest.check import check_tree
from landbot.quest.findings import Finding, failing
from landbot.quest.install import DRIVER_COMMAND, install_merge_driver, self_command
from landbot.quest.merge import MergeResult, merge_driver, merge_quest
from landbot.quest.source import current_branch, repo_root

__all__ = [
    "DRIVER_COMMAND",
    "Finding",
    "MergeResult",
    "check_tree",
    "current_branch",
    "failing",
    "install_merge_driver",
    "merge_driver",
    "merge_quest",
    "repo_root",
    "self_command",
]
