"""Settings precedence (environment > TOML > defaults), list parsing, secrets, errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from landbot.config import Settings, load_settings, reference, reference_markdown, require
from landbot.errors import LandbotError

ROOT = Path(__file__).resolve().parents[2]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults() -> None:
    s = load_settings()
    assert s.github.api_url == "https://api.github.com"
    assert s.github.graphql_url == "https://api.github.com/graphql"
    assert s.database_url == "sqlite:///./landbot.db"
    assert s.repos == []
    assert s.policy.max_requeues_per_head == 1


def test_toml_over_defaults_env_over_toml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cfg = write(
        tmp_path / "c.toml",
        'database_url = "sqlite:///t.db"\n[github]\napi_url = "http://toml/"\napp_id = 5\n',
    )
    s = load_settings(cfg)
    assert (s.database_url, s.github.api_url, s.github.app_id) == (
        "sqlite:///t.db",
        "http://toml",
        5,
    )
    monkeypatch.setenv("LANDBOT_GITHUB__API_URL", "http://env")
    s = load_settings(cfg)
    # Nested values merge across sources: the env wins for api_url, TOML keeps app_id.
    assert (s.github.api_url, s.github.app_id) == ("http://env", 5)


def test_default_config_file_is_read(tmp_path: Path) -> None:
    write(tmp_path / "config" / "landbot.toml", 'repos = ["a/b"]\n')
    assert load_settings().repos == ["a/b"]


@pytest.mark.parametrize("value", ["o/a,o/b", "o/a, o/b", '["o/a", "o/b"]', " o/a ,o/b, "])
def test_repos_from_env_comma_or_json(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("LANDBOT_REPOS", value)
    assert load_settings().repos == ["o/a", "o/b"]


def test_repos_as_toml_tables(tmp_path: Path) -> None:
    cfg = write(
        tmp_path / "c.toml", '[[repos]]\nname = "o/a"\n[[repos]]\nowner = "o"\nname = "b"\n'
    )
    assert load_settings(cfg).repos == ["o/a", "o/b"]


def test_watches() -> None:
    assert Settings(repos=["O/A"]).watches("o/a")
    assert not Settings(repos=["o/a"]).watches("o/b")
    assert Settings().watches("any/repo")


def test_secrets_never_in_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANDBOT_GITHUB__WEBHOOK_SECRET", "hunter2-webhook")
    monkeypatch.setenv("LANDBOT_GITHUB__TOKEN", "ghs_hunter2token")
    monkeypatch.setenv("LANDBOT_FIXER__MODEL_API_KEY", "sk-hunter2")
    s = load_settings()
    text = repr(s) + str(s) + s.model_dump_json()
    assert "hunter2" not in text
    assert s.github.webhook_secret is not None
    assert s.github.webhook_secret.get_secret_value() == "hunter2-webhook"


def test_invalid_setting_is_one_line_naming_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANDBOT_GITHUB__APP_ID", "not-a-number")
    with pytest.raises(LandbotError) as err:
        load_settings()
    msg = str(err.value)
    assert "\n" not in msg and "LANDBOT_GITHUB__APP_ID" in msg and "fix it" in msg


def test_invalid_repo_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANDBOT_REPOS", "justaname")
    with pytest.raises(LandbotError, match="LANDBOT_REPOS"):
        load_settings()


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(LandbotError, match="does not exist"):
        load_settings(tmp_path / "nope.toml")


def test_broken_toml_is_one_line(tmp_path: Path) -> None:
    cfg = write(tmp_path / "bad.toml", "[github\napi_url=")
    with pytest.raises(LandbotError, match="cannot read settings"):
        load_settings(cfg)


def test_require_names_the_missing_setting() -> None:
    with pytest.raises(LandbotError, match="LANDBOT_GITHUB__WEBHOOK_SECRET is not set"):
        require(None, "LANDBOT_GITHUB__WEBHOOK_SECRET", "[github] webhook_secret")
    assert require("x", "N", "k") == "x"


def test_design_contract_setting_names_exist() -> None:
    names = {env for env, *_ in reference()}
    for name in [
        "LANDBOT_GITHUB__API_URL",
        "LANDBOT_GITHUB__TOKEN",
        "LANDBOT_GITHUB__APP_ID",
        "LANDBOT_GITHUB__PRIVATE_KEY_FILE",
        "LANDBOT_GITHUB__WEBHOOK_SECRET",
        "LANDBOT_GITHUB__GIT_URL",
        "LANDBOT_DATABASE_URL",
        "LANDBOT_REPOS",
    ]:
        assert name in names


def test_example_toml_documents_every_key_and_loads() -> None:
    example = (ROOT / "config" / "landbot.example.toml").read_text()
    for _env, toml, _default, _meaning in reference():
        section, _, key = toml.rpartition(" ")
        if section:
            block = example.split(section, 1)
            assert len(block) == 2, f"{section} missing from landbot.example.toml"
            body = block[1]
        else:
            body = example
        pattern = rf"^#? ?({re.escape(key)} =|\[\[?(\w+\.)?{re.escape(key)}\]\]?)"
        assert re.search(pattern, body, re.M), toml
    s = load_settings(ROOT / "config" / "landbot.example.toml")
    assert s.repos == ["octo-org/octo-repo"]


def test_readme_reference_is_generated_from_settings() -> None:
    readme = (ROOT / "README.md").read_text()
    assert reference_markdown() in readme, (
        "README's settings table is stale: regenerate it with `python -m landbot.config`"
    )


def test_policy_reasons_override_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    from landbot.land.model import Policy

    monkeypatch.setenv("LANDBOT_POLICY__REASONS", '{"checks_timed_out": "handback"}')
    policy = Policy.from_settings(load_settings())
    assert policy.reasons["checks_timed_out"] == "handback"
    assert policy.reasons["manual"] == "ignore"  # the other defaults stay


@pytest.mark.parametrize("value", ['{"nope": "ignore"}', '{"manual": "explode"}'])
def test_policy_reasons_refuse_unknown_names(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("LANDBOT_POLICY__REASONS", value)
    with pytest.raises(LandbotError, match="LANDBOT_POLICY__REASONS"):
        load_settings()
