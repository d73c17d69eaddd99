"""CODEOWNERS read as GitHub reads it: the last matching pattern wins."""

from __future__ import annotations

import pytest

from landbot.land import codeowners as co

FILE = """\
# the default owners
*                       @org/everyone
*.js                    @js-owner   # a trailing comment
/build/logs/            @doctocat
docs/*                  docs@example.com
apps/                   @octocat
/scripts/               @doctocat @octocat
**/logs                 @logs
/tests/net/             @net-team
/tests/unowned.py
!negated.py             @nobody
[abc].py                @nobody
"""


@pytest.mark.parametrize(
    ("path", "owners"),
    [
        ("README.md", ("@org/everyone",)),
        ("src/app.js", ("@js-owner",)),
        ("build/logs/x.txt", ("@logs",)),  # the last match wins over /build/logs/
        ("build/x.txt", ("@org/everyone",)),
        ("docs/getting-started.md", ("docs@example.com",)),
        ("docs/build-app/troubleshooting.md", ("@org/everyone",)),  # docs/* is not nested
        ("apps/a/b.py", ("@octocat",)),
        ("web/apps/b.py", ("@octocat",)),  # no leading slash: at any depth
        ("scripts/x.sh", ("@doctocat", "@octocat")),
        ("deep/logs/today", ("@logs",)),
        ("tests/net/test_fetch.py", ("@net-team",)),
        ("other/tests/net/test_fetch.py", ("@org/everyone",)),  # anchored: control
        ("tests/unowned.py", ()),  # a pattern without owners: unowned
        ("negated.py", ("@org/everyone",)),  # unsupported lines are skipped
    ],
)
def test_owners_of(path: str, owners: tuple[str, ...]) -> None:
    assert co.owners_of(co.parse(FILE), path) == owners


def test_no_rule_matches() -> None:
    assert co.owners_of(co.parse("/src/ @a\n"), "lib/x.py") == ()
    assert co.owners_of(co.parse("/src/ @a\n"), "src/x.py") == ("@a",)  # control


@pytest.mark.parametrize(
    ("test", "path"),
    [
        ("tests/test_net.py::test_fetch", "tests/test_net.py"),
        ("tests/test_net.py::TestX::test_y[a-b]", "tests/test_net.py"),
        ("src/a.test.ts > suite > does it", "src/a.test.ts"),
        ("./spec/a_spec.rb:12", "spec/a_spec.rb"),
        ("test_app.py::test_answer", "test_app.py"),
        ("TestFetch", None),
        ("github.com/o/r/pkg TestFetch", None),
    ],
)
def test_test_path(test: str, path: str | None) -> None:
    assert co.test_path(test) == path


def test_test_owners() -> None:
    assert co.test_owners(FILE, "tests/net/test_fetch.py::test_x") == ("@net-team",)
    assert co.test_owners(FILE, "TestFetch") == ("@org/everyone",)  # no file: the catch-all
    assert co.test_owners("/src/ @a\n", "TestFetch") == ()  # control: no catch-all
    assert co.test_owners(None, "tests/a.py::t") == ()
    assert co.test_owners("", "tests/a.py::t") == ()
