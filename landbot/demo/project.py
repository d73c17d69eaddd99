"""The demo's repository, `acme/calc`: a small Python package with tests and a quest tree,
and the five pull requests of the demo. Plain data plus the git commands that build it.

The history is made with real git, as people would make it: `main` starts at one commit,
and each pull request is a branch with one commit by its author. All five branch from that
first commit, so the first to land (#1, erin's plan for 1.0) moves `main` under the four
others; that is what two of the stories are about:

    #1 erin   Plan the 1.0 release    adds two links to quest/release.md's `## Required`
    #2 alice  Add a command line      its merge group's runner shuts down once (flaky)
    #3 bob    Add median()            deletes quest/stats/median.md, which #1 now requires
    #4 carol  Plan mode() for 1.0     adds a `## Required` link where #1 added two
    #5 dave   Add stdev()             a one-line bug: divides by n, not n - 1

The CI (ci.py runs it for real) checks the quest tree on every pull request and merge
group, and runs the test suite in the merge queue only, on the commit that will land.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

REPO = "acme/calc"
BASE = "main"
MAINTAINER = "acme-maintainer"

# What `quest check` says about #3's merge group: the finding its hand-back must quote.
POLICY_FINDING = "quest: quest/release.md: required quest stats/median.md does not exist"

CI_WORKFLOW = """\
# The demo's CI. landbot's demo runs these steps for real on its simulated runner (a
# self-hosted runner image that already has landbot; the tests need only the standard
# library).
name: CI
on:
  pull_request:
  merge_group:
jobs:
  quest:
    runs-on: [self-hosted, calc]
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0
      - run: >-
          landbot quest check --base
          ${{ github.event.merge_group.base_sha || github.event.pull_request.base.sha }}
  test:
    # The whole suite runs in the merge queue, on the exact commit that will land.
    if: github.event_name == 'merge_group'
    runs-on: [self-hosted, calc]
    steps:
      - uses: actions/checkout@v4
      - run: python -m unittest discover --start-directory tests --top-level-directory .
"""

BASE_FILES: dict[str, str] = {
    "README.md": (
        "# calc\n\n"
        "Small statistics helpers. This repository is made by `landbot demo`: its merge\n"
        "queue is kept moving by landbot.\n"
    ),
    "pyproject.toml": (
        "[project]\n"
        'name = "calc"\n'
        'version = "0.9.0"\n'
        'description = "Small statistics helpers"\n'
        'requires-python = ">=3.9"\n'
    ),
    ".gitattributes": "quest/**/*.md merge=quest\n",
    ".github/workflows/ci.yml": CI_WORKFLOW,
    "calc/__init__.py": '"""calc: small statistics helpers (see calc.stats)."""\n',
    "calc/stats.py": (
        '"""Statistics helpers."""\n'
        "\n"
        "from __future__ import annotations\n"
        "\n"
        "from collections.abc import Sequence\n"
        "\n"
        "\n"
        "def mean(xs: Sequence[float]) -> float:\n"
        '    """The arithmetic mean of `xs` (at least one value)."""\n'
        "    if not xs:\n"
        '        raise ValueError("mean() of an empty sequence")\n'
        "    return sum(xs) / len(xs)\n"
    ),
    "tests/__init__.py": "",
    "tests/test_mean.py": (
        "import unittest\n"
        "\n"
        "from calc.stats import mean\n"
        "\n"
        "\n"
        "class MeanTest(unittest.TestCase):\n"
        "    def test_mean(self) -> None:\n"
        "        self.assertEqual(mean([1, 2, 3, 4]), 2.5)\n"
        "\n"
        "    def test_mean_of_nothing_is_an_error(self) -> None:\n"
        "        with self.assertRaises(ValueError):\n"
        "            mean([])\n"
    ),
    "quest/README.md": (
        "# calc roadmap\n\n"
        "Everything left before calc 1.0. `landbot quest check` keeps it accurate.\n"
    ),
    "quest/release.md": (
        "# [S] Release calc 1.0\n"
        "\n"
        "Tag v1.0 and publish it once every quest it requires is finished.\n"
        "\n"
        "## Required\n"
        "\n"
        "- [Statistics helpers](stats/README.md)\n"
    ),
    "quest/stats/README.md": (
        "# Statistics helpers\n\n`calc.stats` grows the helpers a spreadsheet user expects.\n"
    ),
    "quest/stats/median.md": "# [S] Add median()\n",
    "quest/stats/stdev.md": "# [S] Add stdev()\n",
}

_RELEASE_HEAD = BASE_FILES["quest/release.md"]

STATS_WITH_MEDIAN = BASE_FILES["calc/stats.py"] + (
    "\n"
    "\n"
    "def median(xs: Sequence[float]) -> float:\n"
    '    """The middle value of `xs` (the mean of the two middle ones for an even count)."""\n'
    "    if not xs:\n"
    '        raise ValueError("median() of an empty sequence")\n'
    "    ordered = sorted(xs)\n"
    "    mid = len(ordered) // 2\n"
    "    if len(ordered) % 2:\n"
    "        return ordered[mid]\n"
    "    return (ordered[mid - 1] + ordered[mid]) / 2\n"
)

# The bug the scripted agent fixes: a sample standard deviation divides by n - 1.
STDEV_BUG = "return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))"
STDEV_FIX = "return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))"

STATS_WITH_STDEV = (
    BASE_FILES["calc/stats.py"].replace(
        "from collections.abc import Sequence\n",
        "import math\nfrom collections.abc import Sequence\n",
    )
    + "\n"
    "\n"
    "def stdev(xs: Sequence[float]) -> float:\n"
    '    """The sample standard deviation of `xs` (at least two values)."""\n'
    "    if len(xs) < 2:\n"
    '        raise ValueError("stdev() needs at least two values")\n'
    "    m = mean(xs)\n"
    f"    {STDEV_BUG}\n"
)


@dataclass(frozen=True)
class PullSpec:
    """One pull request of the demo: its branch, its author and its one commit."""

    key: str  # the story: prelude, flaky, policy, conflict, genuine
    author: str
    branch: str
    title: str
    body: str
    files: Mapping[str, str] = field(default_factory=dict)
    deleted: tuple[str, ...] = ()
    label: str = ""  # the story in two or three words
    story: str = ""  # what the demo shows with it, in a phrase
    expected: str = ""  # how it should end


PULLS: tuple[PullSpec, ...] = (
    PullSpec(
        key="prelude",
        label="lands first",
        author="erin",
        branch="erin/plan-1.0",
        title="Plan the 1.0 release",
        body="1.0 needs median() and a usage guide.",
        files={
            "quest/release.md": _RELEASE_HEAD
            + "- [Median](stats/median.md)\n- [Usage guide](docs.md)\n",
            "quest/docs.md": "# [S] Write the usage guide\n",
        },
        story="lands first and moves main under the others",
        expected="merged",
    ),
    PullSpec(
        key="flaky",
        label="flaky runner",
        author="alice",
        branch="alice/cli",
        title="Add a command line",
        body="`python -m calc mean 1 2 3` prints 2.0.",
        files={
            "calc/__main__.py": (
                '"""`python -m calc mean 1 2 3`: the helpers from the command line."""\n'
                "\n"
                "from __future__ import annotations\n"
                "\n"
                "import sys\n"
                "\n"
                "from calc import stats\n"
                "\n"
                "\n"
                "def main(argv: list[str]) -> int:\n"
                '    if len(argv) < 2 or argv[0] != "mean":\n'
                '        print("usage: python -m calc mean NUMBER...", file=sys.stderr)\n'
                "        return 2\n"
                "    print(stats.mean([float(a) for a in argv[1:]]))\n"
                "    return 0\n"
                "\n"
                "\n"
                'if __name__ == "__main__":\n'
                "    sys.exit(main(sys.argv[1:]))\n"
            ),
            "tests/test_cli.py": (
                "import contextlib\n"
                "import io\n"
                "import unittest\n"
                "\n"
                "from calc.__main__ import main\n"
                "\n"
                "\n"
                "class CommandLineTest(unittest.TestCase):\n"
                "    def test_mean(self) -> None:\n"
                "        out = io.StringIO()\n"
                "        with contextlib.redirect_stdout(out):\n"
                '            self.assertEqual(main(["mean", "1", "2", "3"]), 0)\n'
                '        self.assertEqual(out.getvalue(), "2.0\\n")\n'
            ),
        },
        story="its merge group's runner shuts down mid-job",
        expected="re-enqueued by landbot, then merged",
    ),
    PullSpec(
        key="policy",
        label="quest check fails",
        author="bob",
        branch="bob/median",
        title="Add median()",
        body="Finishes the median quest, so its file goes.",
        files={
            "calc/stats.py": STATS_WITH_MEDIAN,
            "tests/test_median.py": (
                "import unittest\n"
                "\n"
                "from calc.stats import median\n"
                "\n"
                "\n"
                "class MedianTest(unittest.TestCase):\n"
                "    def test_odd(self) -> None:\n"
                "        self.assertEqual(median([3, 1, 2]), 2)\n"
                "\n"
                "    def test_even(self) -> None:\n"
                "        self.assertEqual(median([4, 1, 3, 2]), 2.5)\n"
            ),
        },
        deleted=("quest/stats/median.md",),
        story="deletes a quest that main now requires",
        expected="explained by the fixer, handed back with the quest check's finding",
    ),
    PullSpec(
        key="conflict",
        label="quest conflict",
        author="carol",
        branch="carol/plan-mode",
        title="Plan mode() for 1.0",
        body="1.0 should have mode() too.",
        files={
            "quest/release.md": _RELEASE_HEAD + "- [Mode](stats/mode.md)\n",
            "quest/stats/mode.md": "# [S] Add mode()\n",
        },
        story="conflicts with #1 in quest/release.md's `## Required` list",
        expected="merged by the quest merge driver, then merged",
    ),
    PullSpec(
        key="genuine",
        label="genuine bug",
        author="dave",
        branch="dave/stdev",
        title="Add stdev()",
        body="Finishes the stdev quest.",
        files={
            "calc/stats.py": STATS_WITH_STDEV,
            "tests/test_stdev.py": (
                "import unittest\n"
                "\n"
                "from calc.stats import stdev\n"
                "\n"
                "\n"
                "class StdevTest(unittest.TestCase):\n"
                "    def test_sample_standard_deviation(self) -> None:\n"
                "        sample = [2, 4, 4, 4, 5, 5, 7, 9]\n"
                "        self.assertAlmostEqual(stdev(sample), 2.13809, places=4)\n"
            ),
        },
        deleted=("quest/stats/stdev.md",),
        story="a genuine test failure (divides by n, not n - 1)",
        expected="fixed by the agent in the sandbox, then merged",
    ),
)


class GitFailed(RuntimeError):
    pass


def _git(repo: Path, *args: str, author: str | None = None) -> str:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    if author is not None:
        for role in ("AUTHOR", "COMMITTER"):
            env[f"GIT_{role}_NAME"] = author
            env[f"GIT_{role}_EMAIL"] = f"{author}@users.noreply.example"
    done = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise GitFailed(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def _write(repo: Path, files: Mapping[str, str], deleted: tuple[str, ...] = ()) -> None:
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for rel in deleted:
        (repo / rel).unlink()


def build_repository(path: Path) -> dict[str, str]:
    """Make the demo's git repository at `path` (a new folder): `main` with the first
    commit, and one branch per pull request. Returns branch -> head sha."""
    path.mkdir(parents=True)
    _git(path, "init", "--quiet", "--initial-branch", BASE)
    _write(path, BASE_FILES)
    _git(path, "add", "--all")
    _git(path, "commit", "--quiet", "-m", "Start calc", author=MAINTAINER)
    heads = {BASE: _git(path, "rev-parse", "HEAD").strip()}
    for pull in PULLS:
        _git(path, "switch", "--quiet", "--create", pull.branch, BASE)
        _write(path, pull.files, pull.deleted)
        _git(path, "add", "--all")
        _git(path, "commit", "--quiet", "-m", f"{pull.title}\n\n{pull.body}", author=pull.author)
        heads[pull.branch] = _git(path, "rev-parse", "HEAD").strip()
    _git(path, "switch", "--quiet", BASE)
    return heads
