"""`.github/landbot.toml`: a repository's own settings, which only narrow the host's.

Each rule has a refusal and a control that passes; problems name the file, the line and the
fix; `effective` clamps whatever it is given."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, get_args

import pytest

from landbot.config import (
    AGENT_NAMES,
    REQUEUE_CLASSES,
    FixerSettings,
    PolicySettings,
    Settings,
    TriageSettings,
    load_settings,
)
from landbot.core.reasons import REASONS
from landbot.errors import LandbotError
from landbot.land.model import DEFAULT_REASON_ACTIONS, Policy
from landbot.repo_config import (
    MAX_PATTERN,
    MAX_RULES,
    REPO_FILE,
    AgentName,
    RepoConfigError,
    RepoFile,
    RepoFixer,
    RepoPolicy,
    RepoRule,
    RepoTriage,
    RequeueClass,
    RuleClass,
    effective,
    json_schema,
    parse_repo_file,
    problems,
)
from landbot.triage.classify import RULE_CLASSES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config" / "landbot.repo.example.toml"


def lines(text: str, host: Settings | None = None) -> list[str]:
    return [str(p) for p in problems(text, host=host)]


def one(text: str, host: Settings | None = None) -> str:
    found = lines(text, host)
    assert len(found) == 1, found
    return found[0]


def good(text: str, host: Settings | None = None) -> None:
    assert lines(text, host) == []


def host_with(**sections: dict[str, Any]) -> Settings:
    """Host settings made in code, the way a test builds them (validated)."""
    return Settings.model_validate(sections)


# --- the file's own structure -----------------------------------------------------------


def test_an_empty_file_is_valid_and_changes_nothing() -> None:
    good("")
    host = Settings()
    mine = effective(host, parse_repo_file("# nothing yet\n"))
    assert mine is not host
    assert mine.model_dump() == host.model_dump()


def test_unknown_key_names_its_line_and_the_nearest_key() -> None:
    text = "# ours\n[policy]\nmax_requeue_per_pr = 2\n"
    assert one(text) == (
        f"{REPO_FILE}:3: unknown key policy.max_requeue_per_pr; did you mean max_requeues_per_pr?"
    )
    good("# ours\n[policy]\nmax_requeues_per_pr = 2\n")


def test_unknown_section_names_the_nearest_section() -> None:
    assert (
        one("\n[polcy]\nx = 1\n")
        == f"{REPO_FILE}:2: unknown section [polcy]; did you mean [policy]?"
    )
    assert "the sections are policy, fixer, triage" in one("[github]\napi_url = 'x'\n")


def test_a_key_of_another_section_says_where_it_belongs() -> None:
    assert one('[policy]\nagent = "codex"\n') == (
        f"{REPO_FILE}:2: unknown key policy.agent; did you mean fixer.agent (under [fixer])?"
    )
    good('[fixer]\nagent = "codex"\n')


def test_a_host_only_setting_is_unknown_here() -> None:
    # What only the host decides (its model key, its repositories) has no place in the file.
    assert "unknown key fixer.model_api_key" in one('[fixer]\nmodel_api_key = "sk-x"\n')
    assert "unknown section [repos]" in one('[repos]\nname = "o/r"\n')


def test_toml_syntax_error_names_its_line() -> None:
    text = '[policy]\nskip_label = "a"\nmax_requeues_per_pr = \n'
    assert one(text) == (
        f"{REPO_FILE}:3: not valid TOML: invalid value at column 23; fix the syntax"
    )
    assert one("[policy]\nskip_label = 'a'\nskip_label = 'b'\n").startswith(f"{REPO_FILE}:3: ")
    # An error tomllib places at the end of the document is on the last line.
    assert one("[policy]\nskip_label = 'a\n").startswith(f"{REPO_FILE}:2: not valid TOML")


def test_values_are_not_coerced() -> None:
    assert one('[policy]\nmax_requeues_per_pr = "3"\n') == (
        f'{REPO_FILE}:2: policy.max_requeues_per_pr = "3" is not a whole number; '
        "write a whole number"
    )
    assert "is not true or false" in one('[fixer]\nenabled = "no"\n')
    assert "is not a whole number" in one("[fixer]\nmemory_mb = 100.5\n")
    good("[policy]\nmax_requeues_per_pr = 3\ncap_window_hours = 30\n")  # an int for hours
    good("[policy]\ncap_window_hours = 30.5\n[fixer]\nenabled = false\n")


def test_negative_caps_are_refused() -> None:
    assert one("[policy]\nmax_pushes_per_pr = -1\n") == (
        f"{REPO_FILE}:2: policy.max_pushes_per_pr = -1 is too low; use 0 or more"
    )
    good("[policy]\nmax_pushes_per_pr = 0\n")
    assert "is too low" in one("[policy]\ncap_window_hours = 0\n")


def test_unknown_drop_reason_and_action_name_the_nearest() -> None:
    text = '[policy.reasons]\nfaild_checks = "ignore"\nmerge_conflict = "requeu"\n'
    assert lines(text) == [
        f"{REPO_FILE}:2: unknown drop reason policy.reasons.faild_checks; "
        "did you mean failed_checks?",
        f'{REPO_FILE}:3: policy.reasons.merge_conflict = "requeu" is not allowed; did you mean '
        '"requeue"? (one of ignore, requeue, fix, handback, note)',
    ]
    good('[policy.reasons]\nfailed_checks = "ignore"\nmerge_conflict = "handback"\n')


def test_inline_reasons_table_reports_at_its_line() -> None:
    assert one('[policy]\n\nreasons = { nope = "ignore" }\n').startswith(f"{REPO_FILE}:3: ")


@pytest.mark.parametrize("cls", ["genuine", "policy"])
def test_a_class_that_is_the_prs_fault_is_never_requeued(cls: str) -> None:
    assert one(f'[policy]\nrequeue_classes = ["flaky", "{cls}"]\n') == (
        f"{REPO_FILE}:2: policy.requeue_classes: '{cls}' is a failure of the pull request's "
        "own, which a re-enqueue cannot fix; use only flaky, infrastructure, cancelled, timeout"
    )


def test_requeue_classes_control() -> None:
    good('[policy]\nrequeue_classes = ["flaky", "timeout"]\n')
    good("[policy]\nrequeue_classes = []\n")  # none: every failure goes to triage's next step
    assert "there is no triage class 'flakey'" in one('[policy]\nrequeue_classes = ["flakey"]\n')


def test_labels() -> None:
    assert one('[policy]\nskip_label = ""\n') == (
        f"{REPO_FILE}:2: policy.skip_label cannot be empty; write a value or remove the key"
    )
    assert "a label name cannot be blank" in one('[policy]\nskip_label = "   "\n')
    assert "is longer than 50 characters" in one(f'[policy]\nfixing_label = "{"x" * 51}"\n')
    assert "spaces around it" in one('[policy]\nfixing_label = " fixing"\n')
    good(f'[policy]\nskip_label = "{"x" * 50}"\nfixing_label = "landbot:fixing"\n')
    good('[policy]\nfixing_label = ""\n')  # empty: no label (off)


def test_command_and_protected_paths() -> None:
    assert "fixer.command cannot be empty" in one("[fixer]\ncommand = []\n")
    assert "the program first" in one('[fixer]\ncommand = [""]\n')
    assert "a protected path cannot be blank" in one('[fixer]\nprotected_paths = [""]\n')
    good('[fixer]\ncommand = ["make", "fix"]\nprotected_paths = ["infra/**"]\n')


def test_unknown_agent_names_the_nearest() -> None:
    assert one('[fixer]\nagent = "codx"\n') == (
        f'{REPO_FILE}:2: fixer.agent = "codx" is not allowed; did you mean "codex"? '
        "(one of command, codex, claude, opencode)"
    )


# --- triage rules: bounded, compiled, no catastrophic patterns --------------------------


def rules(*patterns: str, cls: str = "flaky") -> str:
    out = ""
    for p in patterns:
        out += f"[[triage.rules]]\npattern = {json.dumps(p)}\nclass = {json.dumps(cls)}\n\n"
    return out


def test_rule_count_is_bounded() -> None:
    assert one(rules(*[f"e{i}" for i in range(MAX_RULES + 1)])) == (
        f"{REPO_FILE}:1: triage.rules has too many rules; keep it to {MAX_RULES} or fewer"
    )
    good(rules(*[f"e{i}" for i in range(MAX_RULES)]))


def test_pattern_length_is_bounded() -> None:
    found = one(rules("x" * (MAX_PATTERN + 1)))
    assert found == (
        f"{REPO_FILE}:2: triage.rules[1].pattern is longer than {MAX_PATTERN} characters; "
        "shorten it"
    )
    good(rules("x" * MAX_PATTERN))


def test_pattern_must_compile() -> None:
    found = one(rules("ok", "fine", "(unclosed"))
    assert found.startswith(f'{REPO_FILE}:10: triage.rules[3].pattern = "(unclosed": ')
    assert "not a pattern RE2 compiles (missing ): (unclosed); fix it" in found
    good(rules("ok", "fine", "(closed)"))


def test_empty_pattern_and_unknown_class() -> None:
    assert "triage.rules[1].pattern cannot be empty" in one(rules(""))
    assert 'triage.rules[1].class = "unknown" is not allowed' in one(rules("x", cls="unknown"))
    good(rules("x", cls="genuine"))


# A repeated group holding a quantifier (`(a+)+`) is no longer refused: RE2 runs it in
# linear time. What RE2 refuses, and the patterns that hung `re`, are in
# tests/config/test_repo_file_hostile.py.


# --- all the problems at once, in line order --------------------------------------------


MANY = """[fixer]
agnet = "codex"

[policy]
max_requeues_per_pr = 9
reasons = { failed_checks = "requeue", faild = "ignore" }
requeue_classes = ["genuine", "timeout"]
max_pushes_per_pr = "1"

[[triage.rules]]
pattern = "(?<=a)b"
class = "flaky"
"""


def test_every_problem_is_listed_in_line_order() -> None:
    assert [p.split(": ", 1)[0] for p in lines(MANY)] == [
        f"{REPO_FILE}:2",
        f"{REPO_FILE}:6",
        f"{REPO_FILE}:7",
        f"{REPO_FILE}:8",
        f"{REPO_FILE}:11",
    ]
    # Against the host, the values that are well-formed but too wide come too, beside the
    # structural problems of the same file (a maintainer fixes it in one go).
    with_host = lines(MANY, Settings())
    assert [p.split(": ", 1)[0] for p in with_host] == [
        f"{REPO_FILE}:2",
        f"{REPO_FILE}:5",
        f"{REPO_FILE}:6",
        f"{REPO_FILE}:6",
        f"{REPO_FILE}:7",
        f"{REPO_FILE}:7",
        f"{REPO_FILE}:8",
        f"{REPO_FILE}:11",
    ]
    assert f"{REPO_FILE}:5: policy.max_requeues_per_pr = 9 is above this host's limit 3" in (
        "\n".join(with_host)
    )
    assert 'policy.requeue_classes has "timeout", which this host does not re-enqueue' in (
        "\n".join(with_host)
    )


def test_the_file_name_is_the_callers() -> None:
    found = problems("[x]\n", file="other/landbot.toml")
    assert [(p.file, p.line) for p in found] == [("other/landbot.toml", 1)]
    assert str(found[0]).startswith("other/landbot.toml:1: unknown section [x]")


def test_parse_raises_the_first_problem_and_returns_the_model() -> None:
    with pytest.raises(RepoConfigError) as err:
        parse_repo_file(MANY)
    assert (err.value.file, err.value.line) == (REPO_FILE, 2)
    assert isinstance(err.value, LandbotError)
    parsed = parse_repo_file('[policy]\nmax_requeues_per_pr = 2\nskip_label = "hold"\n')
    assert parsed.policy.max_requeues_per_pr == 2
    assert parsed.policy.skip_label == "hold"
    assert parsed.fixer.agent is None


# --- against the host: a repository narrows, never widens --------------------------------

CAPS = [
    "max_requeues_per_head",
    "max_fixer_attempts_per_head",
    "max_pushes_per_pr",
    "max_requeues_per_pr",
    "max_fixer_runs_per_pr",
]


@pytest.mark.parametrize("cap", CAPS)
def test_a_cap_above_the_hosts_is_refused(cap: str) -> None:
    host = Settings()
    limit = getattr(host.policy, cap)
    assert one(f"[policy]\n{cap} = {limit + 1}\n", host) == (
        f"{REPO_FILE}:2: policy.{cap} = {limit + 1} is above this host's limit {limit}; "
        f"use {limit} or less"
    )
    good(f"[policy]\n{cap} = {limit + 1}\n")  # without the host, only the structure counts
    good(f"[policy]\n{cap} = {limit}\n", host)
    good(f"[policy]\n{cap} = {limit + 1}\n", host_with(policy={cap: limit + 1}))


def test_a_shorter_cap_window_is_refused() -> None:
    host = Settings()
    assert one("[policy]\ncap_window_hours = 12\n", host) == (
        f"{REPO_FILE}:2: policy.cap_window_hours = 12 is shorter than this host's window 24 "
        "(a shorter window allows more); use 24 or more"
    )
    good("[policy]\ncap_window_hours = 24\n", host)
    good("[policy]\ncap_window_hours = 72.5\n", host)


def test_reason_actions_narrow_only() -> None:
    host = Settings()  # failed_checks → fix, checks_timed_out → requeue, manual → ignore
    assert one('[policy.reasons]\nfailed_checks = "requeue"\n', host) == (
        f'{REPO_FILE}:2: policy.reasons.failed_checks = "requeue" is more than this host does '
        'for failed_checks ("fix"); use "fix", ignore, note or handback'
    )
    assert "is more than this host does for manual" in one(
        '[policy.reasons]\nmanual = "requeue"\n', host
    )
    assert "is more than this host does for checks_timed_out" in one(
        '[policy.reasons]\nchecks_timed_out = "fix"\n', host
    )
    for action in ("ignore", "note", "handback"):
        good(f'[policy.reasons]\nfailed_checks = "{action}"\nmanual = "{action}"\n', host)
    good('[policy.reasons]\nfailed_checks = "fix"\nchecks_timed_out = "requeue"\n', host)
    # The host's own override counts, not the default.
    widened = host_with(policy={"reasons": {"manual": "requeue"}})
    good('[policy.reasons]\nmanual = "requeue"\n', widened)


def test_requeue_classes_are_a_subset_of_the_hosts() -> None:
    host = Settings()
    assert one('[policy]\nrequeue_classes = ["flaky", "timeout"]\n', host) == (
        f'{REPO_FILE}:2: policy.requeue_classes has "timeout", which this host does not '
        're-enqueue; use a subset of ["cancelled", "flaky", "infrastructure"]'
    )
    good('[policy]\nrequeue_classes = ["flaky"]\n', host)
    good(
        '[policy]\nrequeue_classes = ["flaky", "timeout"]\n',
        host_with(policy={"requeue_classes": ["flaky", "timeout"]}),
    )


def test_the_agent_is_the_hosts_or_one_it_allows() -> None:
    host = Settings()
    assert one('[fixer]\nagent = "claude"\n', host) == (
        f'{REPO_FILE}:2: fixer.agent = "claude" is not an agent this host allows; use "command" '
        "(or ask the host to add it to [fixer] allowed_agents)"
    )
    good('[fixer]\nagent = "command"\n', host)
    good('[fixer]\nagent = "claude"\n', host_with(fixer={"allowed_agents": ["claude"]}))


def test_the_command_is_the_hosts_or_one_it_allows() -> None:
    host = host_with(fixer={"command": ["fix-it"], "allowed_commands": [["make", "fix"]]})
    assert one('[fixer]\ncommand = ["rm", "-rf", "/"]\n', host) == (
        f'{REPO_FILE}:2: fixer.command = ["rm", "-rf", "/"] is not a command this host allows; '
        'use ["fix-it"] or ["make", "fix"]'
    )
    good('[fixer]\ncommand = ["fix-it"]\n', host)
    good('[fixer]\ncommand = ["make", "fix"]\n', host)
    assert "this host allows no command of a repository's choosing" in one(
        '[fixer]\ncommand = ["make"]\n', Settings()
    )


def test_run_limits_at_most_the_hosts() -> None:
    host = Settings()
    assert one("[fixer]\ntimeout = 3600\n", host) == (
        f"{REPO_FILE}:2: fixer.timeout = 3600 is above this host's limit 1800; use 1800 or less"
    )
    assert one("[fixer]\nmemory_mb = 8192\n", host) == (
        f"{REPO_FILE}:2: fixer.memory_mb = 8192 is above this host's limit 4096; use 4096 or less"
    )
    good("[fixer]\ntimeout = 600\nmemory_mb = 1024\n", host)


def test_the_fixer_can_be_switched_off_never_on() -> None:
    no_fixer, with_fixer = Settings(), host_with(fixer={"command": ["fix-it"]})
    assert one("[fixer]\nenabled = true\n", no_fixer) == (
        f"{REPO_FILE}:2: fixer.enabled = true, but this host runs no fixer and a repository "
        "cannot switch one on; remove it"
    )
    good("[fixer]\nenabled = true\n", with_fixer)
    good("[fixer]\nenabled = false\n", no_fixer)
    good("[fixer]\nenabled = false\n", with_fixer)


# --- effective: the host's settings, narrowed, and clamped whatever the input ------------


def test_no_file_is_the_host_settings_object_itself() -> None:
    host = Settings()
    assert effective(host, None) is host


def test_a_narrowing_file_takes_effect() -> None:
    host = host_with(
        fixer={"command": ["fix-it"], "allowed_agents": ["codex"]},
        triage={"rules": [{"pattern": "HOST", "class": "flaky"}]},
    )
    text = """[policy]
reasons = { failed_checks = "handback", checks_timed_out = "requeue" }
max_requeues_per_pr = 1
cap_window_hours = 48
requeue_classes = ["infrastructure", "flaky"]
skip_label = "hold"
fixing_label = "bot:fixing"

[fixer]
agent = "codex"
timeout = 60
memory_mb = 512
protected_paths = ["infra/**", ".github/workflows/**"]

[[triage.rules]]
pattern = "MINE"
class = "infrastructure"
"""
    good(text, host)
    mine = effective(host, parse_repo_file(text))
    p, f = mine.policy, mine.fixer
    assert p.reasons == {"failed_checks": "handback", "checks_timed_out": "requeue"}
    assert (p.max_requeues_per_pr, p.max_pushes_per_pr) == (1, 2)
    assert p.cap_window_hours == 48
    assert p.requeue_classes == ["flaky", "infrastructure"]  # the host's order
    assert (p.skip_label, p.fixing_label) == ("hold", "bot:fixing")
    assert (f.agent, f.command, f.timeout, f.memory_mb) == ("codex", ["fix-it"], 60, 512)
    assert f.protected_paths == [".github/workflows/**", "infra/**"]
    assert [(r.pattern, r.class_) for r in mine.triage.rules] == [
        ("HOST", "flaky"),
        ("MINE", "infrastructure"),
    ]
    # The decision's policy sees it.
    policy = Policy.from_settings(mine)
    assert policy.reasons["failed_checks"] == "handback"
    assert policy.max_requeues_per_pr == 1
    assert policy.requeue_classes == frozenset({"flaky", "infrastructure"})
    # The host's settings are untouched.
    assert host.policy.max_requeues_per_pr == 3
    assert host.policy.reasons == {}
    assert [r.pattern for r in host.triage.rules] == ["HOST"]


def test_a_stale_good_file_is_clamped_to_a_stricter_host() -> None:
    text = "[policy]\nmax_requeues_per_pr = 3\ncap_window_hours = 24\n[fixer]\nmemory_mb = 4096\n"
    good(text, Settings())  # good when it was written
    stricter = host_with(
        policy={"max_requeues_per_pr": 1, "cap_window_hours": 48}, fixer={"memory_mb": 1024}
    )
    assert len(lines(text, stricter)) == 3  # now it would be refused, and reported
    mine = effective(stricter, parse_repo_file(text))
    assert mine.policy.max_requeues_per_pr == 1
    assert mine.policy.cap_window_hours == 48
    assert mine.fixer.memory_mb == 1024


def test_effective_clamps_a_file_that_was_never_validated() -> None:
    # model_construct skips every check: effective() must still not widen the host.
    bad = RepoFile.model_construct(
        policy=RepoPolicy.model_construct(
            reasons={"failed_checks": "requeue", "manual": "fix", "merged": "note"},
            max_requeues_per_head=99,
            max_pushes_per_pr=-5,
            cap_window_hours=1,
            requeue_classes=["genuine", "flaky"],
        ),
        fixer=RepoFixer.model_construct(
            agent="claude", command=["rm", "-rf", "/"], timeout=10**9, memory_mb=1
        ),
        triage=RepoTriage.model_construct(
            rules=[
                RepoRule.model_construct(pattern="(?<=a)b", class_="flaky"),
                RepoRule.model_construct(pattern="x" * 500, class_="flaky"),
                RepoRule.model_construct(pattern="ok", class_="unknown"),
                *[RepoRule.model_construct(pattern=f"r{i}", class_="genuine") for i in range(60)],
            ]
        ),
    )
    host = Settings()
    mine = effective(host, bad)
    assert mine.policy.reasons == {"merged": "note"}
    assert mine.policy.max_requeues_per_head == 1
    assert mine.policy.max_pushes_per_pr == 0
    assert mine.policy.cap_window_hours == 24
    assert mine.policy.requeue_classes == ["flaky"]
    assert (mine.fixer.agent, mine.fixer.command) == ("command", [])
    assert mine.fixer.timeout == 1800
    assert mine.fixer.memory_mb == 64
    assert [r.pattern for r in mine.triage.rules] == [f"r{i}" for i in range(MAX_RULES - 3)]


def test_enabled_false_switches_the_fixer_off() -> None:
    host = host_with(fixer={"command": ["fix-it"]})
    assert host.fixer.enabled
    off = effective(host, parse_repo_file("[fixer]\nenabled = false\n"))
    assert off.fixer.enabled is False
    assert off.fixer.switched_off
    assert not host.fixer.switched_off
    assert host.fixer.enabled  # the host's own settings still have it
    # Control: without the key, or with `true`, the host's fixer stays on; never switched on.
    assert effective(host, parse_repo_file("[fixer]\ntimeout = 60\n")).fixer.enabled
    assert effective(host, parse_repo_file("[fixer]\nenabled = true\n")).fixer.enabled
    on = effective(Settings(), RepoFile(fixer=RepoFixer(enabled=True)))
    assert on.fixer.enabled is False


def test_the_hosts_provenance_survives(tmp_path: Path) -> None:
    config = tmp_path / "landbot.toml"
    config.write_text("[policy]\nmax_requeues_per_pr = 2\n", encoding="utf-8")
    host = load_settings(config)
    mine = effective(host, parse_repo_file('[policy]\nskip_label = "hold"\n'))
    assert mine._config_file == config
    assert str(mine.origin(("policy", "max_requeues_per_pr"))) == f"{config}:2"
    assert mine.policy.max_requeues_per_pr == 2


# --- the host's new settings are validated too -------------------------------------------


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (
            '[policy]\nrequeue_classes = ["flaky", "genuine"]\n',
            "'genuine' is a failure of the pull request's own",
        ),
        ('[policy]\nrequeue_classes = ["policy"]\n', "'policy' is a failure of the pull request"),
        ('[policy]\nrequeue_classes = ["flakey"]\n', "there is no triage class 'flakey'"),
        ('[policy]\nfixing_label = "   "\n', "a label name cannot be blank"),
        (f'[policy]\nfixing_label = "{"x" * 51}"\n', "has 51 characters; GitHub takes at most 50"),
        ('[policy]\nskip_label = ""\n', "a label name cannot be blank"),
        ('[fixer]\nallowed_agents = ["codx"]\n', "there is no fixer agent 'codx'"),
        ("[fixer]\nallowed_commands = [[]]\n", "a command is a non-empty list"),
        ('[fixer]\nallowed_commands = [["", "x"]]\n', "a command is a non-empty list"),
    ],
)
def test_host_settings_refused(tmp_path: Path, toml: str, expected: str) -> None:
    config = tmp_path / "landbot.toml"
    config.write_text(toml, encoding="utf-8")
    with pytest.raises(LandbotError) as err:
        load_settings(config)
    assert expected in str(err.value)
    assert f"in {config} line 2" in str(err.value)


def test_host_settings_control(tmp_path: Path) -> None:
    config = tmp_path / "landbot.toml"
    config.write_text(
        '[policy]\nrequeue_classes = ["flaky", "timeout"]\nfixing_label = "landbot:fixing"\n'
        '[fixer]\nallowed_agents = ["codex", "claude"]\n'
        'allowed_commands = [["make", "fix"], ["./fix.sh"]]\n',
        encoding="utf-8",
    )
    host = load_settings(config)
    assert host.policy.requeue_classes == ["flaky", "timeout"]
    assert host.fixer.allowed_commands == [["make", "fix"], ["./fix.sh"]]
    assert PolicySettings().fixing_label == ""  # off by default, and valid
    assert FixerSettings().allowed_agents == []
    assert TriageSettings().rules == []


# --- the names this module spells again, and the schema ---------------------------------


def test_names_agree_with_the_rest_of_landbot() -> None:
    assert get_args(AgentName) == AGENT_NAMES
    assert set(get_args(RequeueClass)) == set(REQUEUE_CLASSES)
    assert get_args(RuleClass) == RULE_CLASSES
    assert set(DEFAULT_REASON_ACTIONS) == set(REASONS)


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    name = ref.removeprefix("#/$defs/")
    resolved: dict[str, Any] = schema["$defs"][name]
    return resolved


# The keywords the hand-written validator below understands: a schema using another one
# fails the test rather than being checked loosely (jsonschema is not a dependency).
KNOWN = {
    "$schema", "title", "description", "$defs", "$ref", "type", "properties", "default",
    "additionalProperties", "enum", "items", "minimum", "exclusiveMinimum", "minLength",
    "maxLength", "minItems", "maxItems", "required", "propertyNames", "alias",
}  # fmt: skip
TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
}


def violations(schema: dict[str, Any], node: dict[str, Any], value: Any, at: str) -> list[str]:
    node = _resolve(schema, node)
    assert set(node) <= KNOWN, set(node) - KNOWN
    out: list[str] = []
    kind = node.get("type")
    if kind is not None:
        ok = isinstance(value, TYPES[kind]) and not (
            kind in ("integer", "number") and isinstance(value, bool)
        )
        if not ok:
            return [f"{at}: not {kind}"]
    if "enum" in node and value not in node["enum"]:
        out.append(f"{at}: not in enum")
    if "minimum" in node and value < node["minimum"]:
        out.append(f"{at}: below minimum")
    if "exclusiveMinimum" in node and value <= node["exclusiveMinimum"]:
        out.append(f"{at}: not above exclusiveMinimum")
    if isinstance(value, str | list):
        if len(value) < node.get("minLength", node.get("minItems", 0)):
            out.append(f"{at}: too short")
        if len(value) > node.get("maxLength", node.get("maxItems", 10**9)):
            out.append(f"{at}: too long")
    if isinstance(value, list) and "items" in node:
        for i, item in enumerate(value):
            out += violations(schema, node["items"], item, f"{at}[{i}]")
    if isinstance(value, dict):
        props = node.get("properties", {})
        for key in node.get("required", []):
            if key not in value:
                out.append(f"{at}.{key}: required")
        for key, item in value.items():
            if "propertyNames" in node:
                out += violations(schema, node["propertyNames"], key, f"{at}.{key} (name)")
            if key in props:
                out += violations(schema, props[key], item, f"{at}.{key}")
            elif node.get("additionalProperties") is False:
                out.append(f"{at}.{key}: not allowed")
            elif isinstance(node.get("additionalProperties"), dict):
                out += violations(schema, node["additionalProperties"], item, f"{at}.{key}")
    return out


DOCUMENTS = [
    "",
    '[policy]\nreasons = { failed_checks = "ignore" }\nmax_requeues_per_pr = 2\n',
    '[policy]\nrequeue_classes = ["flaky"]\ncap_window_hours = 30.5\nfixing_label = ""\n',
    '[fixer]\nenabled = false\nagent = "codex"\ncommand = ["make"]\nprotected_paths = ["a"]\n',
    '[[triage.rules]]\npattern = "x"\nclass = "flaky"\n',
    # each refused
    "[policy]\nmax_requeue_per_pr = 2\n",
    "[nope]\n",
    '[policy]\nreasons = { faild = "ignore" }\n',
    '[policy]\nreasons = { failed_checks = "requeu" }\n',
    "[policy]\nmax_pushes_per_pr = -1\n",
    '[policy]\nmax_pushes_per_pr = "1"\n',
    "[policy]\ncap_window_hours = 0\n",
    '[policy]\nrequeue_classes = ["genuine"]\n',
    '[policy]\nskip_label = ""\n',
    f'[policy]\nfixing_label = "{"x" * 51}"\n',
    '[fixer]\nenabled = "no"\n',
    '[fixer]\nagent = "codx"\n',
    "[fixer]\ncommand = []\n",
    "[fixer]\nmemory_mb = 10\n",
    '[[triage.rules]]\npattern = "x"\n',
    '[[triage.rules]]\npattern = "x"\nclass = "unknown"\n',
    f'[[triage.rules]]\npattern = "{"x" * 201}"\nclass = "flaky"\n',
    rules(*[f"e{i}" for i in range(51)]),
]


@pytest.mark.parametrize("text", DOCUMENTS)
def test_the_schema_agrees_with_the_validator(text: str) -> None:
    """What the schema refuses, the validator refuses too (and what it takes, the validator
    takes, but for what JSON Schema cannot say: a regex that does not compile, a nested
    quantifier, a blank label)."""
    import tomllib

    schema = json_schema()
    by_schema = violations(schema, schema, tomllib.loads(text), "")
    assert bool(by_schema) == bool(lines(text)), (by_schema, lines(text))


def test_the_schema_cannot_say_everything_the_validator_does() -> None:
    import tomllib

    schema = json_schema()
    for text in (rules("(?<=a)b"), rules("(unclosed"), '[policy]\nskip_label = "  "\n'):
        assert violations(schema, schema, tomllib.loads(text), "") == []
        assert lines(text)


def test_the_schema_is_for_toml() -> None:
    text = json.dumps(json_schema())
    assert '"null"' not in text  # TOML has no null: an optional key is absent
    assert json_schema()["additionalProperties"] is False
    assert json_schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema"


# --- the example in config/ --------------------------------------------------------------


def test_the_example_is_valid_against_the_default_host() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    good(text)
    good(text, Settings())


def test_the_example_documents_every_key() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    # Uncommented, every `# key = value` line and `# [[table]]` makes a file that sets them all.
    full = re.sub(r"(?m)^# (\[\[|[a-z_]+ = )", r"\1", text)
    good(full)
    parsed = parse_repo_file(full)
    for name in ("policy", "fixer", "triage"):
        section = getattr(parsed, name)
        assert section.model_fields_set == set(type(section).model_fields), name
