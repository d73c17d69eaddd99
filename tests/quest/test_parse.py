"""The parser of one quest file: title line, `## Required` links and their line numbers."""

from __future__ import annotations

from landbot.quest.parse import QuestFile, decode, link_targets, parse_quest


def links(quest: QuestFile) -> list[tuple[str, int]]:
    return [(link.target, link.line) for link in quest.links]


def test_title_is_the_first_non_blank_line() -> None:
    quest = parse_quest("quest/q.md", b"\n\n  \n# [S] Title\n\nbody\n")
    assert quest.heading == "[S] Title"
    assert quest.title_line == 4
    assert quest.standalone_title_ok


def test_a_first_line_that_is_not_a_level_one_heading_is_no_title() -> None:
    for text in ("prose first\n# [S] Title\n", "## [S] Title\n", "#[S] Title\n", "  # [S] T\n"):
        quest = parse_quest("quest/q.md", text.encode())
        assert quest.heading is None, text
        assert not quest.has_title
    assert parse_quest("quest/q.md", b"# [S] Title\n").has_title  # control


def test_empty_and_blank_files_have_no_title_on_line_1() -> None:
    for data in (b"", b"\n\n", b"   \r\n"):
        quest = parse_quest("quest/q.md", data)
        assert quest.heading is None
        assert quest.title_line == 1


def test_a_heading_with_no_text_is_no_title() -> None:
    for data in (b"#\n", b"# \n", b"#   \n"):
        assert not parse_quest("quest/q.md", data).has_title
    assert parse_quest("quest/q.md", b"# x\n").has_title  # control


def test_crlf_lines_parse_like_lf_lines() -> None:
    lf = parse_quest("quest/q.md", b"# [M] Title\n\n## Required\n\n- [A](a.md)\n")
    crlf = parse_quest("quest/q.md", b"# [M] Title\r\n\r\n## Required\r\n\r\n- [A](a.md)\r\n")
    assert crlf.heading == lf.heading == "[M] Title"
    assert links(crlf) == links(lf) == [("a.md", 5)]
    assert crlf.links[0].resolved == "quest/a.md"
    assert crlf.standalone_title_ok


def test_trailing_spaces_after_a_title_are_not_part_of_it() -> None:
    quest = parse_quest("quest/q.md", b"# [XL] Title   \t\n")
    assert quest.heading == "[XL] Title"
    assert quest.standalone_title_ok
    # A size with only spaces after it still has no title.
    assert not parse_quest("quest/q.md", b"# [XL]    \n").standalone_title_ok


def test_standalone_title_format() -> None:
    good = ["[XS] a", "[S] a", "[M] a", "[L] a", "[XL] Two words"]
    bad = ["[s] a", "[XXL] a", "[S]a", "[S]  a", "[S][M] a", " [S] a", "S a", "a [S]", "[] a"]
    for heading in good:
        assert parse_quest("quest/q.md", f"# {heading}\n".encode()).standalone_title_ok, heading
    for heading in bad:
        assert not parse_quest("quest/q.md", f"# {heading}\n".encode()).standalone_title_ok, heading


def test_any_bracketed_word_at_the_start_counts_as_a_size_for_a_parent() -> None:
    for heading in ("[XXL] Title", "[S] Title", "[wip] Title", "[S]"):
        assert parse_quest("quest/q.md", f"# {heading}\n".encode()).title_has_size, heading
    for heading in ("Title", "Title [S]", "[not a word] Title", "Title [XL] later"):
        assert not parse_quest("quest/q.md", f"# {heading}\n".encode()).title_has_size, heading


def test_byte_order_mark_is_not_part_of_the_title() -> None:
    quest = parse_quest("quest/q.md", "\ufeff# [S] Title\n".encode())
    assert quest.standalone_title_ok
    assert quest.bad_utf8_line == 0


def test_non_utf8_bytes_are_remembered_with_their_line_and_parsing_goes_on() -> None:
    data = b"# [S] Caf\xe9\n\n## Required\n\n- [A](a.md) \xff\n"
    quest = parse_quest("quest/q.md", data)
    assert quest.bad_utf8_line == 1
    assert quest.standalone_title_ok
    assert links(quest) == [("a.md", 5)]
    assert decode(b"ok\nok\n\x80")[1] == 3
    assert decode(b"ok\n")[1] == 0  # control


def test_required_links_with_their_line_numbers() -> None:
    text = (
        "# Parent\n"  # 1
        "\n"
        "[Not required](outside.md)\n"  # 3: before the section
        "## Required\n"  # 4
        "\n"
        "- [A](a.md)\n"  # 6
        "- [B](./sub/b.md) and [C](../c.md)\n"  # 7
        "### A deeper heading stays in the section\n"
        "* [D](<d with space.md> 'title')\n"  # 9
        "![an image](pic.png)\n"  # 10: not a link
        "- `[code](code.md)`\n"  # 11: code, not a link
        "```\n"
        "- [fenced](fenced.md)\n"  # 13: fenced code
        "```\n"
        "## Notes\n"  # 15: the section ends
        "- [E](e.md)\n"
        "## Required\n"  # 17: a second section counts too
        '1. [F](f.md#part "t")\n'  # 18
        "# Another title\n"
        "- [G](g.md)\n"
    )
    quest = parse_quest("quest/p/README.md", text.encode())
    assert links(quest) == [
        ("a.md", 6),
        ("./sub/b.md", 7),
        ("../c.md", 7),
        ("d with space.md", 9),
        ("f.md#part", 18),
    ]
    assert [link.resolved for link in quest.links] == [
        "quest/p/a.md",
        "quest/p/sub/b.md",
        "quest/c.md",
        "quest/p/d with space.md",
        "quest/p/f.md",
    ]


def test_a_heading_inside_fenced_code_does_not_end_the_section() -> None:
    text = "# T\n## Required\n~~~\n## not a heading\n~~~\n- [A](a.md)\n"
    assert links(parse_quest("quest/q.md", text.encode())) == [("a.md", 6)]


def test_required_heading_must_be_exact() -> None:
    for heading in ("## Required:", "## required", "### Required", "# Required"):
        text = f"# T\n{heading}\n- [A](a.md)\n"
        assert parse_quest("quest/q.md", text.encode()).links == (), heading
    text = "# T\n## Required  \r\n- [A](a.md)\n"  # trailing spaces and CR are fine
    assert links(parse_quest("quest/q.md", text.encode())) == [("a.md", 3)]


def test_link_targets_on_one_line() -> None:
    assert link_targets("- [a [nested] text](x.md)") == ["x.md"]
    assert link_targets("- [a](x(1).md)") == ["x(1).md"]
    assert link_targets(r"- \[not a link](x.md)") == []
    assert link_targets("- [a]()") == []
    assert link_targets("- [a](<>)") == [""]
    assert link_targets("- [ref][label]") == []
