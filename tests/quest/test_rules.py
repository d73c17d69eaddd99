"""Every rule and every message of shared/specs/quest.md, each with a control that passes."""

from __future__ import annotations

import pytest

from landbot.quest.findings import Finding, sort_findings
from landbot.quest.links import resolve
from landbot.quest.rules import PathKind, branch_finding

from .conftest import check_files

TITLE = "quest: {}: quest title must be '# [XS|S|M|L|XL] Title'"
PARENT = "quest: {}: a parent quest's title carries no size: size its children instead"
NO_TITLE = "quest: {}: quest has no title: its first line must be '# [XS|S|M|L|XL] Title'"


# --- titles ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "title",
    [
        "# Title",
        "# [s] Title",
        "# [XXL] Title",
        "# [S]Title",
        "# [S]  Title",
        "# [S]",
        "# [S] ",
        "# [S][M] Title",
        "#  [S] Title",
        "# S Title",
    ],
)
def test_a_standalone_quest_needs_a_size(title: str) -> None:
    assert check_files({"quest/a.md": title + "\n"}) == [TITLE.format("quest/a.md")]


@pytest.mark.parametrize("size", ["XS", "S", "M", "L", "XL"])
def test_a_sized_standalone_quest_passes(size: str) -> None:
    assert check_files({"quest/a.md": f"# [{size}] Title\n\nBody.\n"}) == []


@pytest.mark.parametrize("title", ["# [S] Parent", "# [XXL] Parent", "# [wip] Parent", "# [M]"])
def test_a_parent_carries_no_size(title: str) -> None:
    files = {"quest/p/README.md": title + "\n", "quest/p/child.md": "# [S] Child\n"}
    assert check_files(files) == [PARENT.format("quest/p/README.md")]


def test_an_unsized_parent_passes() -> None:
    files = {"quest/p/README.md": "# Parent\n", "quest/p/child.md": "# [S] Child\n"}
    assert check_files(files) == []


@pytest.mark.parametrize(
    "content",
    [b"", b"\n\n", b"Prose first.\n# [S] Title\n", b"## [S] Title\n", b"#[S] Title\n", b"# \n"],
)
def test_a_quest_without_a_level_one_heading_has_no_title(content: bytes) -> None:
    assert check_files({"quest/a.md": content}) == [NO_TITLE.format("quest/a.md")]
    # A parent without a title gets the same finding.
    files = {"quest/p/README.md": content, "quest/p/c.md": "# [S] C\n"}
    assert check_files(files) == [NO_TITLE.format("quest/p/README.md")]


@pytest.mark.parametrize("content", [b"", b"no heading\n", b"# [S] sized root\n"])
def test_the_root_is_exempt_from_the_title_rules(content: bytes) -> None:
    assert check_files({"quest/README.md": content, "quest/a.md": "# [S] A\n"}) == []
    assert check_files({"quest/README.md": content}) == []  # standalone root too
    # Control: the same content one folder down is checked.
    assert check_files({"quest/x/README.md": content, "quest/x/a.md": "# [S] A\n"}) != []


def test_a_title_with_trailing_spaces_and_crlf_passes() -> None:
    assert check_files({"quest/a.md": b"# [M] Title   \r\n\r\nBody\r\n"}) == []
    assert check_files({"quest/a.md": b"# [M]   \r\n"}) == [TITLE.format("quest/a.md")]


def test_deleting_the_last_child_turns_the_parent_standalone() -> None:
    parent = "# Sandbox every runner job\n\n## Required\n\n- [Live test](live-test.md)\n"
    before = {
        "quest/m0/kix/sandbox/README.md": parent,
        "quest/m0/kix/sandbox/live-test.md": "# [S] Check the boundary\n",
    }
    assert check_files(before) == []
    after = {"quest/m0/kix/sandbox/README.md": parent.replace("- [Live test](live-test.md)\n", "")}
    assert check_files(after) == [TITLE.format("quest/m0/kix/sandbox/README.md")]


def test_a_readme_in_a_grouping_folder_is_a_child_of_the_readme_above() -> None:
    files = {
        "quest/m0/README.md": "# [L] Sized parent\n",
        "quest/m0/kix/sandbox/README.md": "# [S] Standalone folder quest\n",
    }
    assert check_files(files) == [PARENT.format("quest/m0/README.md")]


def test_a_non_utf8_quest_is_a_finding() -> None:
    findings = check_files({"quest/a.md": b"# [S] Caf\xe9\n", "quest/b.md": b"# [S] B\n"})
    assert findings == ["quest: quest/a.md: quest is not UTF-8 text: save it as UTF-8"]
    # Its other rules still apply.
    findings = check_files({"quest/a.md": b"\xff\xfe# junk\n"})
    assert findings == [
        NO_TITLE.format("quest/a.md"),
        "quest: quest/a.md: quest is not UTF-8 text: save it as UTF-8",
    ]


# --- links ----------------------------------------------------------------------------------


def quest_requiring(*targets: str, title: str = "# [M] Needs") -> str:
    return title + "\n\n## Required\n\n" + "".join(f"- [x]({t})\n" for t in targets)


def test_a_link_to_a_missing_quest_is_named_as_written() -> None:
    files = {"quest/m0/a.md": quest_requiring("./gone.md", "../m1/gone.md")}
    assert check_files(files) == [
        "quest: quest/m0/a.md: required quest ./gone.md does not exist",
        "quest: quest/m0/a.md: required quest ../m1/gone.md does not exist",
    ]


def test_links_with_dot_segments_and_to_a_folder_readme_resolve() -> None:
    files = {
        "quest/m0/a.md": quest_requiring(
            "./b.md",
            "../m1/c.md",
            "sub/README.md",
            "./sub/../b.md",
            "/quest/m1/c.md",
            "b.md#a-section",
            "sp%20ace.md",
        ),
        "quest/m0/b.md": "# [S] B\n",
        "quest/m0/sp ace.md": "# [S] Space\n",
        "quest/m1/c.md": "# [S] C\n",
        "quest/m0/sub/README.md": "# [S] Sub\n",
    }
    assert check_files(files) == []


def test_a_link_to_something_that_is_not_a_quest() -> None:
    files = {
        "quest/a.md": quest_requiring(
            "notes.txt", "../docs/plan.md", "sub", "https://example.com/q.md", "#anchor", "../../x"
        )
    }
    others = {
        "quest/notes.txt": PathKind.FILE,
        "docs/plan.md": PathKind.FILE,
        "quest/sub": PathKind.DIRECTORY,
    }
    assert check_files(files, others) == [
        f"quest: quest/a.md: required link {t} is not a quest"
        for t in (
            "notes.txt",
            "../docs/plan.md",
            "sub",
            "https://example.com/q.md",
            "#anchor",
            "../../x",
        )
    ]
    # Control: without those files, the local ones do not exist.
    assert check_files(files)[:3] == [
        f"quest: quest/a.md: required quest {t} does not exist"
        for t in ("notes.txt", "../docs/plan.md", "sub")
    ]


def test_links_outside_required_are_not_checked() -> None:
    text = "# [S] A\n\nSee [the plan](gone.md).\n\n## Notes\n\n- [x](gone-too.md)\n"
    assert check_files({"quest/a.md": text}) == []
    # Control: the same link inside the section is checked.
    text2 = "# [S] A\n\n## Required\n\n- [the plan](gone.md)\n"
    assert check_files({"quest/a.md": text2}) == [
        "quest: quest/a.md: required quest gone.md does not exist"
    ]


def test_a_quest_that_requires_itself_is_a_cycle_of_one() -> None:
    files = {"quest/a.md": quest_requiring("a.md")}
    assert check_files(files) == [
        "quest: quest/a.md: required quests form a cycle: quest/a.md -> quest/a.md"
    ]


def test_a_cycle_gets_one_finding_on_each_quest_in_it() -> None:
    files = {
        "quest/a.md": quest_requiring("b.md"),
        "quest/b.md": quest_requiring("g/c.md"),
        "quest/g/c.md": quest_requiring("../a.md"),
        "quest/tail.md": quest_requiring("a.md"),  # requires the cycle, is not in it
    }
    assert check_files(files) == [
        "quest: quest/a.md: required quests form a cycle: "
        "quest/a.md -> quest/b.md -> quest/g/c.md -> quest/a.md",
        "quest: quest/b.md: required quests form a cycle: "
        "quest/b.md -> quest/g/c.md -> quest/a.md -> quest/b.md",
        "quest: quest/g/c.md: required quests form a cycle: "
        "quest/g/c.md -> quest/a.md -> quest/b.md -> quest/g/c.md",
    ]
    # Control: break the cycle and all pass.
    files["quest/g/c.md"] = "# [S] C\n"
    assert check_files(files) == []


def test_two_quests_requiring_each_other() -> None:
    files = {"quest/a.md": quest_requiring("b.md"), "quest/b.md": quest_requiring("a.md")}
    assert check_files(files) == [
        "quest: quest/a.md: required quests form a cycle: quest/a.md -> quest/b.md -> quest/a.md",
        "quest: quest/b.md: required quests form a cycle: quest/b.md -> quest/a.md -> quest/b.md",
    ]


# --- findings -------------------------------------------------------------------------------


def test_findings_are_sorted_by_path_then_line() -> None:
    files = {
        "quest/b.md": "# [S] B\n## Required\n- [x](z.md)\n- [y](y.md)\n",
        "quest/a.md": "# nope\n",
        "quest/a/x.md": "# [S] X\n## Required\n- [q](q.md)\n",
    }
    assert check_files(files) == [
        TITLE.format("quest/a.md"),
        "quest: quest/a/x.md: required quest q.md does not exist",
        "quest: quest/b.md: required quest z.md does not exist",
        "quest: quest/b.md: required quest y.md does not exist",
    ]
    mixed = [Finding("b", 1, "m"), Finding("a", 9, "m"), Finding("a", 2, "m")]
    assert [(f.path, f.line) for f in sort_findings(mixed)] == [("a", 2), ("a", 9), ("b", 1)]


def test_finding_rendering() -> None:
    assert Finding("quest/a.md", 3, "msg").render() == "quest: quest/a.md: msg"
    assert (
        Finding("quest/a.md", 3, "msg", on_base=True).render()
        == "quest: quest/a.md: (already on the base) msg"
    )


# --- the branch rule ------------------------------------------------------------------------


def test_a_quest_branch_must_name_a_quest_on_the_base() -> None:
    base = ["quest/m0/a.md", "quest/m0/kix/sandbox/README.md"]
    assert branch_finding("quest/m0/a", base) is None
    assert branch_finding("quest/m0/kix/sandbox", base) is None
    assert branch_finding("quest/m0/b", base) == Finding(
        "quest/m0/b", 0, "branch quest/m0/b names no quest on the base"
    )
    assert branch_finding("quest/m0/b", base).render() == (  # type: ignore[union-attr]
        "quest: quest/m0/b: branch quest/m0/b names no quest on the base"
    )
    # Branches outside quest/ have no rule.
    assert branch_finding("feature/x", base) is None
    assert branch_finding("questy/x", base) is None
    assert branch_finding(None, base) is None


def test_resolve() -> None:
    assert resolve("quest/m0/a.md", "../b.md") == "quest/b.md"
    assert resolve("quest/m0/a.md", "./x/./y/../z.md") == "quest/m0/x/z.md"
    assert resolve("quest/a.md", "/docs/d.md") == "docs/d.md"
    assert resolve("quest/a.md", "../../up.md") is None
    assert resolve("quest/a.md", "mailto:x@y") is None
    assert resolve("quest/a.md", "//host/x.md") is None
    assert resolve("quest/a.md", r"under\_score.md") == "quest/under_score.md"


def test_the_roots_required_links_are_checked() -> None:
    files = {"quest/README.md": "# Plan\n\n## Required\n\n- [m0](m0/README.md)\n"}
    assert check_files(files) == [
        "quest: quest/README.md: required quest m0/README.md does not exist"
    ]
    files["quest/m0/README.md"] = "# [S] m0\n"
    assert check_files(files) == []
