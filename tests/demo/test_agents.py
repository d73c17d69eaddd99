"""Choosing the demo's agent: the scripted agent by default, codex only where it is
installed (else one line, exit 2), nothing else."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from landbot.demo import agents
from landbot.errors import LandbotError
from landbot.fixer.agents import AgentUnavailable


def test_codex_that_is_not_installed_is_one_line_saying_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import landbot.fixer.agents as fixer_agents

    def missing() -> Path:
        raise AgentUnavailable("codex is not installed: install it with scripts/setup")

    monkeypatch.setattr(fixer_agents, "find_codex", missing)
    with pytest.raises(LandbotError) as caught:
        agents.check_agent("codex")
    message = str(caught.value)
    assert "\n" not in message and caught.value.exit_code == 2
    assert message.startswith("--agent codex needs the codex CLI: codex is not installed")
    assert "install" in message


def test_codex_that_is_installed_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import landbot.fixer.agents as fixer_agents

    binary = tmp_path / "codex"
    monkeypatch.setattr(fixer_agents, "find_codex", lambda: binary)
    assert agents.check_agent("codex") == binary  # the control: same call, codex present


def test_unknown_agent_is_refused() -> None:
    with pytest.raises(LandbotError, match="there is no demo agent 'claude'"):
        agents.check_agent("claude")


def test_the_scripted_agent_is_an_executable_copy_the_sandbox_uid_can_reach(root: Path) -> None:
    with contextlib.ExitStack() as stack:
        choice = agents.prepare_agent("scripted", root, stack)
    [command] = choice.fixer.command
    assert choice.fixer.agent == "command" and choice.fixer.enabled
    script = Path(command)
    assert script.is_absolute() and script.parent == root / "agent"
    assert os.stat(script).st_mode & 0o777 == 0o755
    assert os.stat(script.parent).st_mode & 0o777 == 0o755
    assert script.read_text() == (Path(agents.__file__).with_name("agent.py")).read_text()
    assert script.read_text().startswith("#!/usr/bin/python3\n")


def test_codex_is_pointed_at_a_scripted_model_through_the_proxy(
    monkeypatch: pytest.MonkeyPatch, root: Path
) -> None:
    import landbot.fixer.agents as fixer_agents

    monkeypatch.setattr(fixer_agents, "find_codex", lambda: Path("/opt/codex"))
    with contextlib.ExitStack() as stack:
        choice = agents.prepare_agent("codex", root, stack)
        assert choice.fixer.agent == "codex" and choice.fixer.model_url is not None
        assert choice.fixer.model_url.startswith("http://127.0.0.1:")
        assert choice.fixer.enabled
    # The script ends with the commit and a `fixed` verdict the schema accepts.
    assert agents.CODEX_COMMANDS[-1].startswith("git commit")
    assert set(agents.CODEX_VERDICT) == {"verdict", "summary", "recommendation", "reproduced"}
