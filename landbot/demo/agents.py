"""The demo's fixer agent: the scripted command agent (default), or the real codex CLI
talking to a scripted model (`--agent codex`). Either way landbot runs it exactly as it
runs an operator's agent: `[fixer] agent`, in the sandbox, through the model proxy."""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

from landbot.config import FixerSettings
from landbot.demo import project
from landbot.errors import LandbotError

AGENTS = ("scripted", "codex")
SCRIPT_NAME = "landbot-demo-agent"
# The scripted model needs no key; the proxy still puts this one on the requests it
# forwards, and the sandbox never sees it.
DEMO_MODEL_KEY = "demo-model-key"

_UNITTEST = "python3 -m unittest discover --start-directory tests --top-level-directory ."
_FIX = (
    "python3 -c \"import pathlib; p = pathlib.Path('calc/stats.py'); "
    f'p.write_text(p.read_text().replace({project.STDEV_BUG!r}, {project.STDEV_FIX!r}, 1))"'
)
CODEX_COMMANDS = (
    _UNITTEST,  # reproduce: the stdev test fails
    _FIX,
    _UNITTEST,  # verify: it passes now
    "git commit --quiet --all --message 'Fix stdev(): divide by n - 1'",
)
CODEX_VERDICT = {
    "verdict": "fixed",
    "summary": "stdev() divided the sum of squares by n; a sample standard deviation divides "
    "by n - 1. Fixed calc/stats.py; the tests pass.",
    "recommendation": "",
    "reproduced": True,
}


@dataclass(frozen=True)
class AgentChoice:
    name: str
    fixer: FixerSettings
    description: str


def check_agent(name: str) -> Path | None:
    """Fail early, in one line, for an unknown agent or a codex that is not installed;
    the codex binary when it is the one asked for."""
    if name not in AGENTS:
        raise LandbotError(f"there is no demo agent {name!r}: use --agent scripted or codex")
    if name == "codex":
        from landbot.fixer.agents import AgentUnavailable, find_codex

        try:
            return find_codex()
        except AgentUnavailable as exc:
            raise LandbotError(f"--agent codex needs the codex CLI: {exc}") from None
    return None


def prepare_agent(name: str, root: Path, stack: contextlib.ExitStack) -> AgentChoice:
    """The fixer settings for agent `name`, with what it needs started on `stack`."""
    binary = check_agent(name)
    if name == "scripted":
        # A copy beside the demo's other files: an absolute command's folder is bound
        # read-only into the sandbox, and it must be one the sandbox uid can reach (an
        # installed package under /root would not be).
        folder = root / "agent"
        folder.mkdir(mode=0o755)
        script = folder / SCRIPT_NAME
        shutil.copyfile(Path(__file__).with_name("agent.py"), script)
        os.chmod(script, 0o755)
        return AgentChoice(
            "scripted",
            FixerSettings(agent="command", command=[str(script)]),
            f"the scripted agent ({script}), a command agent",
        )
    from landbot.sim.model_server import ModelScript, ScriptedModelServer

    server = stack.enter_context(
        ScriptedModelServer(ModelScript(commands=CODEX_COMMANDS, verdict=CODEX_VERDICT))
    )
    return AgentChoice(
        "codex",
        FixerSettings(agent="codex", model_url=server.url, model_api_key=SecretStr(DEMO_MODEL_KEY)),
        f"the codex CLI ({binary}) against a scripted model at {server.url}, through "
        "landbot's model proxy",
    )
