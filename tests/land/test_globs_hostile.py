"""Protected-path globs at publish time: matched by RE2, linear in the path whatever the
glob (the host's and a repository's alike). Timing is a subprocess with a generous timeout,
not an assertion on a duration."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from landbot.core.globs import glob_source
from landbot.core.linear import LinearError
from landbot.land.publish import glob_regex

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

HOSTILE = "**a" * 12 + "**b"  # as `re`, `(.*a){12}.*b`: took > 10 s on a 300-char path

_MATCH = textwrap.dedent(
    """
    import json, re, sys
    from landbot.core.globs import glob_source
    from landbot.land.publish import protected_pattern

    glob, path, engine = json.loads(sys.argv[1])
    if engine == "re":  # the same translation run by a backtracking engine
        source = glob_source(glob).replace("\\\\z", "\\\\Z")
        source = re.sub(r"\\\\x\\{([0-9a-f]+)\\}", lambda m: re.escape(chr(int(m[1], 16))), source)
        print(json.dumps(re.match(source, path) is not None))
    else:
        print(json.dumps(protected_pattern(path, [".github/workflows/**", glob])))
    """
)


def _match(glob: str, path: str, engine: str, timeout: float) -> object:
    out = subprocess.run(
        [sys.executable, "-c", _MATCH, json.dumps([glob, path, engine])],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_glob_that_hangs_a_backtracking_engine_is_linear_here() -> None:
    path = "a" * 300
    assert _match(HOSTILE, path, "publish", timeout=20) is None
    assert _match(HOSTILE, path + "b", "publish", timeout=20) == HOSTILE
    assert _match(HOSTILE, "a/" * 5000 + "c", "publish", timeout=20) is None  # 10 KB


def test_the_harness_catches_a_glob_that_hangs() -> None:
    # Control: the same glob under `re` does not finish, so the test above would fail if
    # publishing still matched with `re`; and on an ordinary path both engines agree.
    with pytest.raises(subprocess.TimeoutExpired):
        _match(HOSTILE, "a" * 300, "re", timeout=5)
    assert _match("src/**/*.py", "src/a/b.py", "re", timeout=20) is True


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("docs/a b.md", "docs/a b.md", True),
        ("docs/a b.md", "docs/a-b.md", False),
        ("x-y/**", "x-y/z", True),
        ("ünï/*.txt", "ünï/ç.txt", True),
        ("a.b", "aXb", False),  # `.` is a literal, not any character
        ("$HOME/^x|y", "$HOME/^x|y", True),
        ("[!.]*", ".hidden", False),
        ("[!.]*", "shown", True),
    ],
)
def test_every_character_of_a_glob_is_literal_outside_its_wildcards(
    glob: str, path: str, matches: bool
) -> None:
    assert bool(glob_regex(glob).match(path)) is matches


def test_a_bad_class_is_one_line_not_an_re_error() -> None:
    with pytest.raises(LinearError) as err:
        glob_regex("x[]y")
    assert "\n" not in str(err.value) and "has a bad character class ([])" in str(err.value)
    assert glob_source("[ab]") == r"[ab]\z"  # control: a good class is kept as written
