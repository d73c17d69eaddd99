"""The tree model: parents, children, grouping folders and the root, from paths alone."""

from __future__ import annotations

from landbot.quest.tree import QuestTree, is_quest_path


def test_quest_paths() -> None:
    assert is_quest_path("quest/a.md")
    assert is_quest_path("quest/x/y/z/README.md")
    assert not is_quest_path("quest/a.txt")
    assert not is_quest_path("docs/quest/a.md")
    assert not is_quest_path("quest.md")
    assert not is_quest_path("questlog/a.md")


def test_a_readme_is_the_parent_of_its_folder_and_of_direct_subfolder_readmes() -> None:
    tree = QuestTree.build(
        [
            "quest/README.md",
            "quest/a.md",
            "quest/p/README.md",
            "quest/p/x.md",
            "quest/p/q/README.md",
        ]
    )
    assert tree.root == "quest/README.md"
    assert tree.parent["quest/README.md"] is None
    assert tree.parent["quest/a.md"] == "quest/README.md"
    assert tree.parent["quest/p/README.md"] == "quest/README.md"
    assert tree.parent["quest/p/x.md"] == "quest/p/README.md"
    assert tree.parent["quest/p/q/README.md"] == "quest/p/README.md"
    assert tree.children["quest/p/README.md"] == ["quest/p/q/README.md", "quest/p/x.md"]
    assert tree.is_parent("quest/p/README.md")
    assert not tree.is_parent("quest/p/q/README.md")
    assert not tree.is_parent("quest/a.md")


def test_nested_grouping_folders_belong_to_the_nearest_readme_above() -> None:
    tree = QuestTree.build(
        ["quest/m0/README.md", "quest/m0/g1/g2/deep.md", "quest/m0/g1/g2/g3/sub/README.md"]
    )
    assert tree.parent["quest/m0/g1/g2/deep.md"] == "quest/m0/README.md"
    assert tree.parent["quest/m0/g1/g2/g3/sub/README.md"] == "quest/m0/README.md"
    assert tree.grouping_folders() == ["quest/m0/g1", "quest/m0/g1/g2", "quest/m0/g1/g2/g3"]


def test_a_parent_inside_a_grouping_folder() -> None:
    # The spec's example: quest/m0/kix/ only groups; sandbox/README.md is a parent.
    paths = [
        "quest/README.md",
        "quest/m0/opencode-sdk.md",
        "quest/m0/kix/sandbox/README.md",
        "quest/m0/kix/sandbox/live-test.md",
    ]
    tree = QuestTree.build(paths)
    assert tree.parent["quest/m0/opencode-sdk.md"] == "quest/README.md"
    assert tree.parent["quest/m0/kix/sandbox/README.md"] == "quest/README.md"
    assert tree.parent["quest/m0/kix/sandbox/live-test.md"] == "quest/m0/kix/sandbox/README.md"
    assert tree.is_parent("quest/m0/kix/sandbox/README.md")
    assert tree.grouping_folders() == ["quest/m0", "quest/m0/kix"]
    # Deleting the last child makes the parent standalone in the same tree.
    after = QuestTree.build(p for p in paths if not p.endswith("live-test.md"))
    assert not after.is_parent("quest/m0/kix/sandbox/README.md")


def test_without_a_root_top_level_quests_have_no_parent() -> None:
    tree = QuestTree.build(["quest/a.md", "quest/g/b.md", "quest/p/README.md"])
    assert tree.root is None
    assert tree.parent == {"quest/a.md": None, "quest/g/b.md": None, "quest/p/README.md": None}
    assert tree.children == {}
