"""A quest-policy failure, end to end on the simulated GitHub (issue 13, point 3).

The base branch keeps a quest tree; the pull request finishes a quest as the spec's example
does (it deletes `live-test.md` and the link to it from its parent, but leaves the link in
`opencode-sdk.md`), so the merge group's quest check reports that the parent, now without
children, needs a size, and that a link dangles. The merge group's CI runs the real quest
checker on the group commit (the same `quest_ci` as test_triage_policy.py).

- With a command agent (in the real sandbox): the agent reads its task, runs the quest
  check against the base in its checkout to reproduce, and answers `needs_human` with an
  explanation and a recommendation; the hand-back carries both, and nothing is pushed.
- Without a fixer: the hand-back carries landbot's own explanation of each finding from
  the change (Evidence.quest_explanations), and the evidence saved with the plan has it.

These are the target behaviour: they need the decision to route a policy failure to the
fixer when one is configured (land/decide.py), triage to fill Evidence.quest_explanations
(triage/gather.py calling triage/quest_explain.py) and the hand-back to render it
(land/comments.py).
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

import landbot
from landbot.core.text import inert

from .conftest import World, use_real_fixer
from .test_triage_policy import quest_ci
from .triage_support import evidence_of, handbacks

SANDBOX = "quest/m0/kix/sandbox"
BASE_QUESTS = {
    "quest/README.md": "# m0 plan\n",
    f"{SANDBOX}/README.md": (
        "# Sandbox every runner job\n\n## Required\n\n- [Live test](live-test.md)\n"
    ),
    f"{SANDBOX}/live-test.md": "# [S] Check the sandbox boundary in CI\n",
    "quest/m0/opencode-sdk.md": (
        "# [M] Move the runner to the opencode 2.x SDK\n\n## Required\n\n"
        "- [Live sandbox test](kix/sandbox/live-test.md)\n"
    ),
}
# The pull request: live-test.md is done; the parent's link goes, opencode-sdk's stays.
FINISH_LIVE_TEST: dict[str, str | None] = {
    f"{SANDBOX}/live-test.md": None,
    f"{SANDBOX}/README.md": "# Sandbox every runner job\n",
}
TITLE_FINDING = f"quest: {SANDBOX}/README.md: quest title must be '# [XS|S|M|L|XL] Title'"
LINK_FINDING = (
    "quest: quest/m0/opencode-sdk.md: required quest kix/sandbox/live-test.md does not exist"
)
# landbot's own reading of the change (triage/quest_explain.py), bracket-free fragments.
PARENT_EXPLAINED = (
    f"deleting {SANDBOX}/live-test.md left {SANDBOX}/README.md without children, so it is "
    "now a standalone quest and needs a size"
)
LINK_EXPLAINED = (
    f"it requires {SANDBOX}/live-test.md (line 5), which this pull request deletes: if that "
    "quest is finished, take the link out of its '## Required' list (a mechanical fix)"
)

# The agent: reproduces with the quest checker itself (a copy of landbot's stdlib-only
# quest package next to the script, since the sandbox shows nothing of landbot's install),
# with the base the prompt names, and reports what only a person can decide.
QUEST_AGENT = r"""#!/usr/bin/python3
import json, os, re, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from landbot.quest import check_tree, failing

# SQLite only: what these tests prove is about GitHub and the decision, on store paths
# the land loop runs on both stores (conftest.BOTH_STORES).
STORES = ("sqlite",)

prompt = open(os.environ["LANDBOT_PROMPT_FILE"]).read()
# The command the task says to run here (a line of its own), not the CI step's title.
wanted = re.search(r"^ *landbot quest check --base (\S+)$", prompt, re.MULTILINE)
verdict = {"verdict": "needs_human", "recommendation": "", "reproduced": False}
if wanted is None:
    verdict["summary"] = "the task named no quest check to reproduce with"
else:
    base = wanted.group(1)
    found = [f.render() for f in failing(check_tree(".", base=base))]
    verdict["reproduced"] = bool(found)
    verdict["summary"] = (
        f"Reproduced with `landbot quest check --base {base}`: " + " | ".join(found) + ". "
        "Finishing live-test.md removed the last child of the sandbox quest, which is now "
        "standalone; opencode-sdk.md still requires the finished quest."
    )
    verdict["recommendation"] = (
        "Decide the size of quest/m0/kix/sandbox/README.md for the work that remains, or "
        "delete it if the sandbox quest is finished too; and take the live-test link out "
        "of quest/m0/opencode-sdk.md."
    )
with open(os.environ["LANDBOT_VERDICT_FILE"], "w") as out:
    json.dump(verdict, out)
"""


pytestmark = pytest.mark.usefixtures("needs_bwrap")


def with_quest_agent(world: World, root: Path) -> None:
    agent = root / "agent"
    package = Path(landbot.__file__).parent
    lib = agent / "lib" / "landbot"
    shutil.copytree(package / "quest", lib / "quest", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(package / "errors.py", lib / "errors.py")
    (lib / "__init__.py").write_text("")
    script = agent / "fix.py"
    script.write_text(QUEST_AGENT)
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    for folder in (agent, *[p for p in agent.rglob("*") if p.is_dir()]):
        os.chmod(folder, 0o755)
    for file in agent.rglob("*.py"):
        os.chmod(file, 0o755 if file == script else 0o644)
    use_real_fixer(world, [str(script)], root / "state")


def drop_a_finished_quest(world: World, head: str) -> int:
    """Base with the quest tree, a PR that finishes live-test.md, queued and dropped."""
    world.gh.push(world.repo, "main", dict(BASE_QUESTS), message="Plan m0")
    world.settle()
    world.gh.set_checks(world.repo, quest_ci, event="merge_group")
    pr = world.open_pr(head, FINISH_LIVE_TEST)  # type: ignore[arg-type]
    world.gh.enqueue(pr, actor="alice")
    assert world.gh.run_queue(world.repo)[-1].action == "dropped"
    world.settle()
    number: int = pr.number
    return number


def test_the_fixer_reproduces_a_quest_failure_and_hands_back_its_advice(
    world: World, sandbox_dir: Path
) -> None:
    with_quest_agent(world, sandbox_dir)
    number = drop_a_finished_quest(world, "finish-live-test")
    [drop] = world.store.drops()
    ev = evidence_of(drop)
    assert ev["triage_class"] == "policy"
    fixer = drop.plan["fixer"] if drop.plan else None
    assert fixer is not None, f"the fixer never ran: {drop.outcome}: {drop.summary}"
    assert fixer["verdict"] == "needs_human"
    # The agent ran the real check in its checkout against the base the prompt named.
    assert "Reproduced with `landbot quest check --base origin/main`" in fixer["summary"]
    assert TITLE_FINDING in fixer["summary"] and LINK_FINDING in fixer["summary"]
    assert drop.outcome == "handed_back"
    [handback] = handbacks(world, number)
    assert inert("Finishing live-test.md removed the last child of the sandbox quest") in (
        handback.body
    )
    assert inert("Decide the size of quest/m0/kix/sandbox/README.md") in handback.body
    assert world.gh.pull(world.repo, number).head_sha == drop.head_sha  # nothing pushed


def test_without_a_fixer_the_hand_back_explains_each_finding_from_the_change(
    world: World,
) -> None:
    number = drop_a_finished_quest(world, "finish-live-test-alone")
    [drop] = world.store.drops()
    ev = evidence_of(drop)
    assert ev["triage_class"] == "policy"
    explained = ev["quest_explanations"]
    # One per finding, in the log's order (the checker prints them sorted by path).
    assert [x.split(" — ", 1)[0] for x in explained] == [
        TITLE_FINDING.removeprefix("quest: "),
        LINK_FINDING.removeprefix("quest: "),
    ]
    assert PARENT_EXPLAINED in explained[0]
    assert LINK_EXPLAINED in explained[1]
    assert drop.outcome == "handed_back"
    [handback] = handbacks(world, number)
    assert inert(PARENT_EXPLAINED) in handback.body
    assert inert(LINK_EXPLAINED) in handback.body
    assert world.mutations() == []


def test_control_finishing_a_quest_accurately_merges(world: World) -> None:
    """The same change done fully (the parent finished too, no link left) passes the quest
    check and merges: the findings above come from what the change left out."""
    world.gh.push(world.repo, "main", dict(BASE_QUESTS), message="Plan m0")
    world.settle()
    world.gh.set_checks(world.repo, quest_ci, event="merge_group")
    done: dict[str, str | None] = {
        f"{SANDBOX}/live-test.md": None,
        f"{SANDBOX}/README.md": None,
        "quest/m0/opencode-sdk.md": "# [M] Move the runner to the opencode 2.x SDK\n",
    }
    pr = world.open_pr("finish-sandbox", done)  # type: ignore[arg-type]
    world.gh.enqueue(pr, actor="alice")
    assert [s.action for s in world.gh.run_queue(world.repo)] == ["built", "merged"]
    world.settle()
    assert handbacks(world, pr.number) == []
