"""Strict settings: an unknown key, section or variable is refused with the nearest valid
name, and every error names its real source (the variable, or the file and line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from landbot.config import AGENT_NAMES, load_settings, mask_url, toml_lines
from landbot.errors import LandbotError


def config(text: str) -> Path:
    path = Path("config/landbot.toml")
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def refusal() -> str:
    with pytest.raises(LandbotError) as err:
        load_settings()
    msg = str(err.value)
    assert "\n" not in msg
    return msg


FIXER_AT_LINE_12 = """# landbot
repos = ["o/r"]

[github]
api_url = "https://api.github.com"

[fixer]
command = [
  "make",
  "fix",   # a comment with = and [brackets]
]
{key} = "codex"
"""


def test_a_misspelled_key_is_refused_with_its_line_and_the_nearest_name() -> None:
    config(FIXER_AT_LINE_12.format(key="agnet"))
    assert refusal() == (
        "unknown setting [fixer] agnet in config/landbot.toml line 12; did you mean agent?"
    )


def test_the_same_file_spelled_right_loads() -> None:
    config(FIXER_AT_LINE_12.format(key="agent"))
    s = load_settings()
    assert (s.fixer.agent, s.fixer.command, s.repos) == ("codex", ["make", "fix"], ["o/r"])


def test_a_misspelled_section_is_refused() -> None:
    config('repos = ["o/r"]\n\n[gihtub]\ntoken = "x"\n')
    assert refusal() == (
        "unknown section [gihtub] in config/landbot.toml line 3; did you mean [github]?"
    )
    config('repos = ["o/r"]\n\n[github]\ntoken = "x"\n')  # the control
    token = load_settings().github.token
    assert token is not None and token.get_secret_value() == "x"


def test_a_key_above_its_section_header_points_at_the_section() -> None:
    config('agent = "codex"\n[fixer]\n')
    assert "did you mean [fixer] agent?" in refusal()


def test_a_key_nothing_is_near_lists_the_valid_keys() -> None:
    config("[worker]\nzzz = 1\n")
    msg = refusal()
    assert msg.startswith("unknown setting [worker] zzz in config/landbot.toml line 2;")
    assert "lease_seconds, idle_sleep" in msg


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            '[[triage.rules]]\npattern = "a"\nclass = "flaky"\n[[triage.rules]]\n'
            'pattern = "b"\nclas = "flaky"\n',
            "unknown setting [triage.rules] clas in config/landbot.toml line 6; "
            "did you mean class?",
        ),
        ('[[repos]]\nnam = "o/r"\n', "unknown setting [[repos]] nam in config/landbot.toml line 2"),
        ('[policy]\nreasons = { manual = "ignore" }\nmax_requeus_per_head = 2\n', "line 3"),
    ],
)
def test_unknown_keys_inside_tables_and_lists_of_tables(text: str, says: str) -> None:
    config(text)
    assert says in refusal()


def test_free_keys_stay_free_where_the_setting_is_a_table_of_its_own() -> None:
    # [policy.reasons] keys are drop reasons, checked by their own validator, not as settings.
    config('[policy.reasons]\nchecks_timed_out = "handback"\n')
    assert load_settings().policy.reasons == {"checks_timed_out": "handback"}


def test_an_unknown_variable_is_refused_with_the_nearest_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LANDBOT_FIXER__AGNET", "codex")
    assert refusal() == (
        "unknown setting LANDBOT_FIXER__AGNET in the environment; "
        "did you mean LANDBOT_FIXER__AGENT?"
    )
    monkeypatch.delenv("LANDBOT_FIXER__AGNET")
    monkeypatch.setenv("LANDBOT_FIXER__AGENT", "codex")  # the control
    assert load_settings().fixer.agent == "codex"


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("LANDBOT_GIHTUB__TOKEN", "did you mean LANDBOT_GITHUB__TOKEN?"),
        ("LANDBOT_GITHUB_TOKEN", "did you mean LANDBOT_GITHUB__TOKEN? (two underscores"),
        ("LANDBOT_REPO", "did you mean LANDBOT_REPOS?"),
        ("landbot_fixer__modle", "did you mean LANDBOT_FIXER__MODEL?"),
        ("LANDBOT_FIXER__AGENT__NAME", "[fixer] agent has no keys"),
    ],
)
def test_misspelled_variables(monkeypatch: pytest.MonkeyPatch, name: str, suggestion: str) -> None:
    monkeypatch.setenv(name, "x")
    msg = refusal()
    assert msg.startswith(f"unknown setting {name.upper()} in the environment;")
    assert suggestion in msg


@pytest.mark.parametrize(
    "name", ["LANDBOT_FAILPOINT", "LANDBOT_MODEL_URL", "LANDBOT_LOG_LEVEL", "LANDBOT_SPEC"]
)
def test_other_programs_variables_are_not_settings_and_pass(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    # Variables without __ that are no setting belong to other parts (the sandbox's model
    # URL, the failpoints, the log level): not refused, and not read as settings.
    monkeypatch.setenv(name, "x")
    assert load_settings().fixer.agent == "command"


def test_bad_json_in_the_environment_names_the_variable_not_a_missing_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert not Path("config/landbot.toml").exists()
    monkeypatch.setenv("LANDBOT_FIXER__COMMAND", "make fix")
    msg = refusal()
    assert msg.startswith("setting LANDBOT_FIXER__COMMAND in the environment is not JSON")
    assert "LANDBOT_FIXER__COMMAND='[" in msg  # the fix: an example in the right shape
    assert "landbot.toml" not in msg
    monkeypatch.setenv("LANDBOT_FIXER__COMMAND", '["make", "fix"]')  # the control
    assert load_settings().fixer.command == ["make", "fix"]


def test_a_section_set_whole_as_json_is_checked_like_a_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LANDBOT_FIXER", '{"agnet": "codex"}')
    assert refusal() == (
        "unknown setting [fixer] agnet in the environment (LANDBOT_FIXER); did you mean agent?"
    )
    monkeypatch.setenv("LANDBOT_FIXER", "[1]")
    assert "must be a JSON object" in refusal()
    monkeypatch.setenv("LANDBOT_FIXER", '{"agent": "codex"}')
    assert load_settings().fixer.agent == "codex"


def test_an_unknown_key_in_a_json_list_of_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANDBOT_TRIAGE__RULES", '[{"pattern": "x", "klass": "flaky"}]')
    assert "unknown setting [triage.rules] klass" in refusal()
    monkeypatch.setenv("LANDBOT_TRIAGE__RULES", '[{"pattern": "x", "class": "flaky"}]')
    assert load_settings().triage.rules[0].class_ == "flaky"


def test_an_invalid_value_in_the_file_names_the_file_and_the_line() -> None:
    config('repos = ["o/r"]\n[fixer]\nconcurrency = 1\nagent = "gpt"\n')
    msg = refusal()
    assert msg.startswith("setting [fixer] agent in config/landbot.toml line 4 is invalid:")
    assert "'gpt'" in msg and "codex" in msg and "fix it in config/landbot.toml" in msg


def test_an_invalid_value_in_the_environment_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config('[fixer]\nagent = "codex"\n')  # the environment wins, and is what is wrong
    monkeypatch.setenv("LANDBOT_FIXER__AGENT", "gpt")
    msg = refusal()
    assert msg.startswith("setting LANDBOT_FIXER__AGENT in the environment is invalid:")
    assert "landbot.toml" not in msg


@pytest.mark.parametrize("agent", AGENT_NAMES)
def test_every_agent_name_is_accepted(monkeypatch: pytest.MonkeyPatch, agent: str) -> None:
    monkeypatch.setenv("LANDBOT_FIXER__AGENT", agent)
    assert load_settings().fixer.agent == agent


def test_the_agent_names_are_the_fixers() -> None:
    from landbot.fixer.agents import AGENTS

    assert AGENT_NAMES == AGENTS


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("LANDBOT_GITHUB__API_URL", "api.github.com", "not an http(s) URL"),
        ("LANDBOT_FIXER__MODEL_URL", "ftp://models", "not an http(s) URL"),
        ("LANDBOT_GITHUB__GIT_URL", "https://github.com/{org}/{repo}.git", "{owner} and {repo}"),
    ],
)
def test_urls_are_checked_when_loaded(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, says: str
) -> None:
    monkeypatch.setenv(name, value)
    assert says in refusal()


def test_the_url_checks_accept_what_landbot_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANDBOT_GITHUB__API_URL", "http://127.0.0.1:8001/api/v3/")
    monkeypatch.setenv("LANDBOT_GITHUB__GIT_URL", "file:///srv/git/{owner}/{repo}.git")
    monkeypatch.setenv("LANDBOT_FIXER__MODEL_URL", "https://api.openai.com/v1")
    s = load_settings()
    assert s.github.api_url == "http://127.0.0.1:8001/api/v3"
    assert s.github.git_url == "file:///srv/git/{owner}/{repo}.git"


def test_an_error_never_shows_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANDBOT_FIXER__MODEL_URL", "ftp://user:hunter2@models")
    msg = refusal()
    assert "hunter2" not in msg and "user:***@models" in msg


def test_origins(monkeypatch: pytest.MonkeyPatch) -> None:
    config('repos = ["o/r"]\n\n[fixer]\nagent = "codex"\n')
    monkeypatch.setenv("LANDBOT_FIXER__CONCURRENCY", "2")
    s = load_settings()
    assert str(s.origin(("repos",))) == "config/landbot.toml:1"
    assert str(s.origin(("fixer", "agent"))) == "config/landbot.toml:4"
    assert str(s.origin(("fixer", "concurrency"))) == "LANDBOT_FIXER__CONCURRENCY (environment)"
    assert str(s.origin(("fixer", "timeout"))) == "default"  # [fixer] is there, timeout not
    assert str(s.origin(("github", "api_url"))) == "default"


def test_toml_lines() -> None:
    text = (
        "a = 1\n"
        's = """\n'
        "x = not a key\n"
        '"""\n'
        "[t]\n"
        'l = ["[", "]", {k = 1},\n'
        '  "=", ]\n'
        "b.c = 2\n"
        '"quoted key" = 3\n'
        "[[r]]\n"
        "n = 1\n"
        "[[r]]\n"
        "n = 2\n"
        "[ u . v ]\n"
        "w = 0\n"
    )
    assert toml_lines(text) == {
        ("a",): 1,
        ("s",): 2,
        ("t",): 5,
        ("t", "l"): 6,
        ("t", "b", "c"): 8,
        ("t", "quoted key"): 9,
        ("r",): 10,
        ("r", 0): 10,
        ("r", 0, "n"): 11,
        ("r", 1): 12,
        ("r", 1, "n"): 13,
        ("u", "v"): 14,
        ("u", "v", "w"): 15,
    }


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql+psycopg://bot:hunter2@db:5432/l", "postgresql+psycopg://bot:***@db:5432/l"),
        (
            "postgresql://db/l?password=hunter2&sslmode=require",
            "postgresql://db/l?password=***&sslmode=require",
        ),
        (
            "https://x-access-token:ghs_abc@github.com/{owner}/{repo}.git",
            "https://x-access-token:***@github.com/{owner}/{repo}.git",
        ),
        ("https://api.github.com", "https://api.github.com"),  # the control: nothing to hide
        ("sqlite:///./landbot.db", "sqlite:///./landbot.db"),
        ("not a url", "not a url"),
    ],
)
def test_mask_url(url: str, shown: str) -> None:
    assert mask_url(url) == shown


def test_the_sandbox_never_runs_as_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANDBOT_SANDBOX__UID", "0")
    assert refusal().startswith("setting LANDBOT_SANDBOX__UID in the environment is invalid")
    monkeypatch.setenv("LANDBOT_SANDBOX__UID", "1000")  # the control
    assert load_settings().sandbox.uid == 1000
