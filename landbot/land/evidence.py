"""The land loop's evidence for a drop: triage's reading of GitHub and git.

`gatherer(settings)` is what `Lander` calls as `gather(gh, store, drop)`; the work is in
landbot.triage.gather (the merge-group commit, failed checks, job logs explained, the
drop's class; conflicting files for a conflict, merged in the mirrors under
`[fixer] state_dir`, or in `mirrors` when given, e.g. the fixer's own Workspaces).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from landbot.triage.gather import Gatherer, Mirrors

if TYPE_CHECKING:
    from landbot.config import Settings


def gatherer(settings: Settings, *, mirrors: Mirrors | None = None) -> Gatherer:
    return Gatherer.from_settings(settings, mirrors=mirrors)
