"""A repository's `.github/landbot.toml` written to hurt the host: what a reviewer found.

Each hostile file is refused with one line naming the file, the line and the fix (never a
traceback), or runs in linear time; each refusal has a control that passes. Where time is
the point it is a subprocess with a generous timeout (no timing assertion): Python's `re`
on the same patterns takes minutes to forever, RE2 a few milliseconds.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from landbot.config import Settings
from landbot.core.linear import LinearPattern
from landbot.repo_config import (
    MAX_DEPTH,
    REPO_FILE,
    RepoConfigError,
    RepoFile,
    RepoFixer,
    RepoPolicy,
    RepoTriage,
    effective,
    parse_repo_file,
    problems,
)
from landbot.triage.classify import compile_rules
from landbot.triage.log import Line, TextIndex

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

LANDBOT = str(Path(sys.executable).parent / "landbot")


def lines(text: str, host: Settings | None = None) -> list[str]:
    return [str(p) for p in problems(text, host=host)]


def one(text: str, host: Settings | None = None) -> str:
    found = lines(text, host)
    assert len(found) == 1, found
    return found[0]


def rule(pattern: str) -> str:
    return f'[[triage.rules]]\npattern = {json.dumps(pattern)}\nclass = "flaky"\n'


# --- 1. parsing never raises anything but RepoConfigError --------------------------------

DEEP = "x = " + "[" * 500 + "]" * 500 + "\n"  # 1 KB; tomllib recurses once per level


def test_a_file_nested_500_deep_is_a_problem_with_a_line() -> None:
    assert len(DEEP.encode()) < 1200
    with pytest.raises(RecursionError):  # what tomllib does with it (the reviewer's finding)
        import tomllib

        tomllib.loads(DEEP)
    found = one('[policy]\nskip_label = "hold"\n' + DEEP)
    assert found.startswith(f"{REPO_FILE}:3: not valid TOML for landbot: arrays or inline ")
    assert found.endswith("flatten them")
    with pytest.raises(RepoConfigError) as err:
        parse_repo_file(DEEP)
    assert (err.value.file, err.value.line) == (REPO_FILE, 1)
    # Inline tables nest too.
    assert "nested hundreds deep" in one("x = " + "{a = " * 500 + "1" + "}" * 500 + "\n")


@pytest.mark.parametrize("depth", [MAX_DEPTH, 100, 300])
def test_nesting_tomllib_can_read_is_refused_before_anything_walks_it(depth: int) -> None:
    text = "[policy]\nmax_requeues_per_pr = " + "[" * depth + "1" + "]" * depth + "\n"
    assert one(text, Settings()) == (
        f"{REPO_FILE}:2: policy.max_requeues_per_pr holds arrays or tables nested {MAX_DEPTH} "
        "deep or more; a setting holds a value or a list of values: flatten it"
    )


def test_nesting_a_setting_needs_is_not_refused_for_its_depth() -> None:
    # Control: the deepest the schema goes ([[triage.rules]] in the file) is fine, and a list
    # one level too deep for its key is the ordinary type problem, not the depth one.
    assert lines(rule("ECONNRESET")) == []
    found = one('[fixer]\ncommand = [["sh"]]\n')
    assert 'fixer.command[1] = ["sh"] is not a string in quotes' in found


def test_a_number_of_thousands_of_digits_is_a_problem_with_a_line() -> None:
    decimal = "[policy]\nmax_requeues_per_pr = " + "1" * 5000 + "\n"
    found = one(decimal)
    assert found.startswith(f"{REPO_FILE}:2: not valid TOML: a number too long to read (")
    assert found.endswith("write a number within TOML's 64-bit range")
    hexa = "[policy]\nmax_requeues_per_pr = 0x" + "f" * 5000 + "\n"
    assert one(hexa, Settings()) == (
        f"{REPO_FILE}:2: policy.max_requeues_per_pr is an integer outside TOML's 64-bit "
        "range; write a smaller number"
    )


def test_the_largest_toml_integer_is_read() -> None:
    # Control: 2**63 - 1 is TOML; against the host it is merely above the limit.
    text = f"[policy]\nmax_requeues_per_pr = {2**63 - 1}\n"
    assert lines(text) == []
    assert "is above this host's limit 3" in one(text, Settings())
    assert "outside TOML's 64-bit range" in one(f"[policy]\nmax_requeues_per_pr = {2**63}\n")


def test_a_huge_value_is_shown_cut_short() -> None:
    found = one('[policy]\nskip_label = ["' + "x" * 5000 + '"]\n')
    assert len(found) < 300 and "…" in found


def _check(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "landbot.toml").write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("LANDBOT_")}
    return subprocess.run(
        [LANDBOT, "config", "check", "landbot.toml"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )


def test_config_check_answers_a_hostile_file_with_one_line(tmp_path: Path) -> None:
    out = _check(tmp_path, DEEP)
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr.startswith("landbot.toml:1: not valid TOML for landbot")
    assert out.stderr.count("\n") == 1
    # Control: the same command on a good file.
    out = _check(tmp_path, rule("ECONNRESET"))
    assert (out.returncode, out.stdout) == (0, "landbot.toml: valid\n")


# --- 2. triage rules run in linear time -----------------------------------------------------

# Each ran > 5 s under `re` on a 2000-character subject (the reviewer's measure).
SLOW = {
    "a*a*a*a*a*a*a*a*a*a*a*b": "a",
    "(?:a|a)*b": "a",
    r"\s*" * 10 + "!": " ",
    ".*.*.*.*.*.*.*=x": "=",
}

# Run in a subprocess: a pattern that hangs is killed by the timeout, not the test run.
_SEARCH = textwrap.dedent(
    """
    import json, sys
    from landbot.config import Settings
    from landbot.repo_config import effective, parse_repo_file
    from landbot.triage.classify import compile_rules
    from landbot.triage.log import Line, TextIndex

    pattern, char, size, host_rule = json.loads(sys.argv[1])
    rule = {"pattern": pattern, "class": "flaky"}
    if host_rule:  # the host's own rule: Python re, as before
        rules = compile_rules([rule])
    else:  # the repository's rule, as effective() hands it to triage
        mine = effective(Settings(), parse_repo_file(
            "[[triage.rules]]\\npattern = " + json.dumps(pattern) + "\\nclass = 'flaky'\\n"))
        rules = compile_rules(mine.triage.rules)
    index = TextIndex((Line(1, "step failed"), Line(2, char * size), Line(3, "done")))
    found = [index.search(r.pattern) for r in rules]
    print(json.dumps([type(r.pattern).__name__ for r in rules] + [f is not None for f in found]))
    """
)


def _search(pattern: str, char: str, size: int, *, host_rule: bool, timeout: float) -> list[object]:
    out = subprocess.run(
        [sys.executable, "-c", _SEARCH, json.dumps([pattern, char, size, host_rule])],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stderr
    result: list[object] = json.loads(out.stdout)
    return result


@pytest.mark.parametrize("pattern", list(SLOW))
def test_a_repositorys_pattern_that_hangs_re_is_valid_and_finishes(pattern: str) -> None:
    assert lines(rule(pattern), Settings()) == []
    # 200 KB, a hundred times the subject that took `re` over 5 s: RE2 is linear.
    assert _search(pattern, SLOW[pattern], 200_000, host_rule=False, timeout=20) == [
        "LinearPattern",
        False,
    ]


def test_the_harness_catches_a_pattern_that_hangs() -> None:
    # Control: the same search with `re` (the host's engine) does not finish, so the test
    # above would fail if a repository's rule were still compiled with `re`.
    with pytest.raises(subprocess.TimeoutExpired):
        _search("(?:a|a)*b", "a", 2000, host_rule=True, timeout=5)


ORDINARY = {
    "a*a*a*a*a*a*a*a*a*a*a*b": ["xaab", "b", "aaa", "ccc\naab"],
    "(?:a|a)*b": ["aab", "b", "a", "x\nab"],
    r"\s*" * 10 + "!": ["  !", "!", "x\n !", "none"],
    ".*.*.*.*.*.*.*=x": ["k=x", "=x", "k=y", "a\nb=x"],
    r"^ERROR: \w+ \d+$": ["ERROR: disk 42", "ok\nERROR: net 7\nx", "ERROR: disk"],
    r"(?i)connection (reset|refused)": ["Connection Reset by peer", "connection timed out"],
}


@pytest.mark.parametrize("pattern", list(ORDINARY))
def test_re2_matches_what_re_matches_on_ordinary_input(pattern: str) -> None:
    mine = effective(Settings(), parse_repo_file(rule(pattern)))
    [linear] = compile_rules(mine.triage.rules)
    [python] = compile_rules([{"pattern": pattern, "class": "flaky"}])
    assert isinstance(linear.pattern, LinearPattern)
    assert isinstance(python.pattern, re.Pattern)
    matched = 0
    for subject in ORDINARY[pattern]:
        index = TextIndex(tuple(Line(i, t) for i, t in enumerate(subject.split("\n"), 1)))
        a, b = index.search(linear.pattern), index.search(python.pattern)
        assert (a is None) == (b is None), subject
        if a is not None and b is not None:
            matched += 1
            assert (a[0], a[1].start(), a[1].end(), a[1].group()) == (
                b[0], b[1].start(), b[1].end(), b[1].group()
            )  # fmt: skip
    assert 0 < matched < len(ORDINARY[pattern])  # both answers were seen


@pytest.mark.parametrize(
    ("pattern", "what"),
    [
        (r"(?<=Error: )\w+", "lookaround"),
        (r"failed(?! to)", "lookaround"),
        (r"(\w+) \1", "backreferences"),
        (r"(?P<w>\w+) (?P=w)", "backreferences"),
        (r"(?>a+)b", "atomic groups"),
        (r"a++b", "possessive quantifiers"),
    ],
)
def test_what_re2_cannot_run_is_refused_with_the_fix(pattern: str, what: str) -> None:
    found = one(rule(pattern))
    assert found.startswith(f"{REPO_FILE}:2: triage.rules[1].pattern = ")
    assert f": it uses {what} (" in found
    assert found.endswith("RE2 has no lookaround/backreferences, so write the pattern without them")


def test_patterns_re2_runs_pass_nested_quantifiers_too() -> None:
    # Control: the rewrites without lookaround pass, and a nested quantifier the old check
    # refused is harmless under RE2.
    for pattern in (r"Error: \w+", r"failed [^t]", r"(\w+) (\w+)", "(a+)+b", r"(?:\d+\s)*y"):
        assert lines(rule(pattern), Settings()) == [], pattern
    assert "not a pattern RE2 compiles (missing ): (open); fix it" in one(rule("(open"))


def test_only_the_repositorys_rules_are_marked_linear() -> None:
    host = Settings.model_validate(
        {"triage": {"rules": [{"pattern": r"(?<=x)y", "class": "genuine"}]}}
    )
    mine = effective(host, parse_repo_file(rule("ECONNRESET")))
    assert [r.linear for r in mine.triage.rules] == [False, True]
    compiled = compile_rules(mine.triage.rules)
    assert [type(r.pattern) for r in compiled] == [re.Pattern, LinearPattern]
    # The host's rules are untouched (the file's marks are on copies of its own).
    assert [r.linear for r in host.triage.rules] == [False]


# --- 3. protected-path globs are compiled when checked, bounded -----------------------------


@pytest.mark.parametrize("glob", ["x[]y", "[z-a]", "src/[9-0].py"])
def test_a_glob_publishing_could_not_compile_is_refused(glob: str) -> None:
    text = f'[fixer]\nprotected_paths = ["ok/**", {json.dumps(glob)}]\n'
    found = one(text, Settings())
    assert found.startswith(f"{REPO_FILE}:2: fixer.protected_paths[2] = ")
    assert "has a bad character class" in found and found.endswith("for a literal [")


def test_globs_publishing_compiles_pass() -> None:
    text = '[fixer]\nprotected_paths = ["src/[ab].py", "[!_]*.lock", "a+b(c).txt", "[[]x"]\n'
    assert lines(text, Settings()) == []


def test_globs_are_bounded_in_number_and_length() -> None:
    many = ", ".join(f'"p{i}/**"' for i in range(51))
    assert one(f"[fixer]\nprotected_paths = [{many}]\n") == (
        f"{REPO_FILE}:2: fixer.protected_paths has too many entries; keep it to 50 or fewer"
    )
    assert one(f'[fixer]\nprotected_paths = ["{"a" * 201}"]\n') == (
        f"{REPO_FILE}:2: fixer.protected_paths[1] is longer than 200 characters; shorten it"
    )
    fifty = ", ".join(f'"p{i}/**"' for i in range(50))
    assert lines(f"[fixer]\nprotected_paths = [{fifty}, ]\nmemory_mb = 64\n") == []
    assert lines(f'[fixer]\nprotected_paths = ["{"a" * 200}"]\n') == []


def test_effective_drops_a_glob_it_could_not_run() -> None:
    made = RepoFile.model_construct(
        policy=RepoPolicy(), fixer=RepoFixer.model_construct(protected_paths=["x[]y", "ok/**"])
    )
    mine = effective(Settings(), made)  # never validated: effective() holds anyway
    assert mine.fixer.protected_paths == [".github/workflows/**", "ok/**"]


def test_the_hosts_bad_glob_stops_its_settings() -> None:
    with pytest.raises(ValueError, match=r"the glob 'x\[\]y' has a bad character class"):
        Settings.model_validate({"fixer": {"protected_paths": ["x[]y"]}})
    ok = Settings.model_validate({"fixer": {"protected_paths": ["src/[ab].py"]}})
    assert ok.fixer.protected_paths == ["src/[ab].py"]


# --- 5. the fixing label cannot be the skip label --------------------------------------------


def test_fixing_label_equal_to_skip_label_is_refused_in_the_file() -> None:
    found = one('[policy]\nskip_label = "Hold"\nfixing_label = "hold"\n')
    assert found.startswith(f'{REPO_FILE}:3: policy.fixing_label = "hold": the fixing label ')
    assert "is the skip label 'Hold' (labels ignore case)" in found
    assert lines('[policy]\nskip_label = "hold"\nfixing_label = "fixing"\n') == []


def test_a_file_label_equal_to_the_hosts_other_label_is_refused() -> None:
    host = Settings.model_validate({"policy": {"fixing_label": "landbot:fixing"}})
    found = one('[policy]\nfixing_label = "Landbot:Skip"\n', host)
    assert found.startswith(f"{REPO_FILE}:2: policy.fixing_label: the fixing label")
    found = one('[policy]\nskip_label = "LANDBOT:FIXING"\n', host)
    assert found.startswith(f"{REPO_FILE}:2: policy.skip_label: the fixing label")
    # Controls: other names, and the host's own pair.
    assert lines('[policy]\nfixing_label = "busy"\nskip_label = "hold"\n', host) == []
    assert lines('[policy]\nfixing_label = ""\nskip_label = "landbot:fixing"\n', host) == []


def test_effective_never_sets_the_fixing_label_to_the_skip_label() -> None:
    host = Settings.model_validate({"policy": {"fixing_label": "busy"}})
    clash = RepoFile.model_construct(
        policy=RepoPolicy.model_construct(skip_label="Busy", fixing_label=None),
        fixer=RepoFixer(),
        triage=RepoTriage(),
    )
    mine = effective(host, clash)
    assert (mine.policy.skip_label, mine.policy.fixing_label) == ("Busy", "")
    fine = effective(host, parse_repo_file('[policy]\nskip_label = "hold"\n'))
    assert (fine.policy.skip_label, fine.policy.fixing_label) == ("hold", "busy")


def test_the_hosts_fixing_label_cannot_be_its_skip_label() -> None:
    with pytest.raises(ValueError, match="is the skip label 'landbot:skip'"):
        Settings.model_validate({"policy": {"fixing_label": "LandBot:Skip"}})
    with pytest.raises(ValueError, match="is the skip label 'hold'"):
        Settings.model_validate({"policy": {"skip_label": "hold", "fixing_label": "hold"}})
    ok = Settings.model_validate({"policy": {"fixing_label": "landbot:fixing"}})
    assert ok.policy.fixing_label == "landbot:fixing"
