"""Property tests: valid trees pass, deleted quests leave dangling links, no input crashes."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from landbot.quest.findings import Finding
from landbot.quest.merge import merge_quest
from landbot.quest.parse import parse_quest
from landbot.quest.rules import check_quests

from .conftest import check_files

SIZES = ["XS", "S", "M", "L", "XL"]
NAME = (
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_ ", min_size=1, max_size=8)
    .map(str.strip)
    .filter(lambda s: s not in ("", "README"))
)


@dataclass
class Tree:
    files: dict[str, str]
    links: dict[str, list[tuple[str, str]]]  # quest -> [(target as written, resolved path)]


@st.composite
def folders(draw: st.DrawFn) -> list[tuple[str, bool]]:
    """Folders below quest/, each with or without a README.md (a grouping folder)."""
    result = [("quest", draw(st.booleans()))]
    for _ in range(draw(st.integers(0, 6))):
        parent = draw(st.sampled_from(result))[0]
        folder = f"{parent}/{draw(NAME)}"
        if folder not in (f for f, _ in result):
            result.append((folder, draw(st.booleans())))
    return result


def relative(source: str, target: str, style: int) -> str:
    rel = posixpath.relpath(target, posixpath.dirname(source))
    if style == 1 and not rel.startswith("../"):
        return "./" + rel
    if style == 2:
        return "/" + target  # repository-relative
    return rel


@st.composite
def valid_trees(draw: st.DrawFn) -> Tree:
    layout = draw(folders())
    paths: list[str] = []
    readmes: set[str] = set()
    for folder, has_readme in layout:
        names = draw(st.lists(NAME, min_size=1 if has_readme else 0, max_size=4, unique=True))
        if has_readme:
            readmes.add(f"{folder}/README.md")
            paths.append(f"{folder}/README.md")
        paths.extend(f"{folder}/{n}.md" for n in names)
    # Every folder with a README.md holds a plain quest, so every README.md is a parent and
    # every other quest is standalone: the test knows the answer without the tree model.
    for folder, has_readme in layout:
        if has_readme and not any(
            posixpath.dirname(p) == folder and not p.endswith("/README.md") for p in paths
        ):
            paths.append(f"{folder}/only.md")
    paths = sorted(set(paths))
    order = draw(st.permutations(paths))
    files: dict[str, str] = {}
    links: dict[str, list[tuple[str, str]]] = {}
    for index, path in enumerate(order):
        # Links point only backwards in a random order: no cycles.
        earlier = list(order[:index])
        targets = (
            draw(st.lists(st.sampled_from(earlier), max_size=4, unique=True)) if earlier else []
        )
        written = []
        for target in targets:
            rel = relative(path, target, draw(st.integers(0, 2)))
            if " " in rel:  # a destination with a space is written <...> or percent-encoded
                rel = draw(st.sampled_from([f"<{rel}>", rel.replace(" ", "%20")]))
            written.append((rel, target))
        links[path] = written
        if path == "quest/README.md":
            title = draw(st.sampled_from(["# Plan", "# [S] Plan", "no heading at all"]))
        elif path in readmes:
            title = "# " + draw(NAME)
        else:
            title = f"# [{draw(st.sampled_from(SIZES))}] {draw(NAME)}"
        eol = draw(st.sampled_from(["\n", "\r\n"]))
        body = [title, "", "Prose with [a link](elsewhere.md) that is not checked.", ""]
        if written:
            body += ["## Required", ""] + [f"- [{t}]({w})" for w, t in written]
        files[path] = eol.join(body) + eol
    return Tree(files, links)


@settings(max_examples=60, deadline=None)
@given(valid_trees())
def test_random_trees_of_valid_quests_pass(tree: Tree) -> None:
    assert check_files(tree.files) == []
    # Not vacuous: every link written was parsed as a Required link.
    for path, content in tree.files.items():
        assert len(parse_quest(path, content.encode()).links) == len(tree.links[path])


@settings(max_examples=60, deadline=None)
@given(valid_trees(), st.data())
def test_deleting_a_required_quest_leaves_a_dangling_link_on_each_quest_that_required_it(
    tree: Tree, data: st.DataObject
) -> None:
    required = sorted({t for written in tree.links.values() for _, t in written})
    if not required:
        return
    gone = data.draw(st.sampled_from(required))
    files = {p: c for p, c in tree.files.items() if p != gone}
    expected = {
        f"quest: {path}: required quest {w.removeprefix('<').removesuffix('>')} does not exist"
        for path, written in tree.links.items()
        if path != gone
        for w, t in written
        if t == gone
    }
    assert expected
    dangling = {line for line in check_files(files) if line.endswith("does not exist")}
    assert dangling == expected


FRAGMENTS = st.sampled_from(
    [
        "# ",
        "## Required",
        "## ",
        "### x",
        "\n",
        "\r\n",
        " ",
        "[",
        "]",
        "(",
        ")",
        "<",
        ">",
        "- ",
        "* ",
        "1. ",
        "[x](",
        "../",
        "./",
        "a.md",
        "README.md",
        "/",
        "#",
        "`",
        "```",
        "~~~",
        "\\",
        "[S] ",
        "[XXL]",
        "\ufeff",
        "\x00",
        "%20",
        "http://x",
        '"t"',
        "!",
    ]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.binary(max_size=400),
        st.lists(st.one_of(FRAGMENTS, st.text(max_size=3)), max_size=60).map(
            lambda parts: "".join(parts).encode("utf-8", errors="surrogatepass")
        ),
    ),
    st.sampled_from(["quest/README.md", "quest/a.md", "quest/g/README.md", "quest/g/h/x.md"]),
)
def test_the_checker_never_raises_on_arbitrary_bytes(data: bytes, path: str) -> None:
    quests = {
        path: parse_quest(path, data),
        "quest/g/h/x.md" if path != "quest/g/h/x.md" else "quest/a.md": parse_quest(
            "quest/a.md", b"# [S] Neighbour\n## Required\n- [it](../../a.md)\n"
        ),
    }
    findings = check_quests(quests)
    assert all(isinstance(f, Finding) and f.line >= 0 for f in findings)
    for finding in findings:
        finding.render().encode("utf-8", errors="surrogateescape")


@st.composite
def three_lists(draw: st.DrawFn) -> tuple[list[str], list[str], list[str]]:
    pool = [f"q{i}" for i in range(8)]
    base = draw(st.lists(st.sampled_from(pool), unique=True, max_size=6))
    ours = draw(st.lists(st.sampled_from(pool), unique=True, max_size=6))
    theirs = draw(st.lists(st.sampled_from(pool), unique=True, max_size=6))
    return base, ours, theirs


@settings(max_examples=80, deadline=None)
@given(three_lists())
def test_the_merge_driver_merges_required_as_a_set(
    lists: tuple[list[str], list[str], list[str]],
) -> None:
    base, ours, theirs = lists

    def render(items: list[str]) -> bytes:
        listed = "".join(f"- [{i}]({i}.md)\n" for i in items)
        return f"# [M] Q\n\nProse.\n\n## Required\n\n{listed}\n## Notes\n".encode()

    result = merge_quest(render(base), render(ours), render(theirs))
    assert result.clean
    expected = (set(ours) | set(theirs)) - ((set(base) - set(ours)) | (set(base) - set(theirs)))
    merged = parse_quest("quest/q.md", result.data)
    assert sorted(link.target for link in merged.links) == sorted(f"{i}.md" for i in expected)
    assert result.data.startswith(b"# [M] Q\n\nProse.\n\n## Required\n\n")
    assert result.data.endswith(b"\n## Notes\n")
