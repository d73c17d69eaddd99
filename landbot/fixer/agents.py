"""The fixer's agents: how each is started in the sandbox, and where its verdict lands.

Every agent meets the command agent's contract (design.md, "Formats"): it runs inside the
sandbox with the checkout as its working directory and these job variables:

    LANDBOT_PROMPT_FILE     the task (markdown)            read-only, outside the checkout
    LANDBOT_EVIDENCE_FILE   the drop and triage (JSON)     read-only, outside the checkout
    LANDBOT_VERDICT_FILE    where it writes its verdict    writable, inside .git (never committed)
    LANDBOT_MODEL_URL       the model proxy, inside the sandbox (set by the proxy when a
                            model is configured)

- `command`: `[fixer] command`, as given. A command given by absolute path is bound
  read-only into the sandbox at the same path, with its folder.
- `codex`: `codex exec`, the native binary from the npm package (no Node at run time), its
  own sandbox and approvals off (ours wraps it), user config ignored, a private CODEX_HOME,
  a model provider pointing at the proxy (Responses API), analytics and update checks off,
  `--output-schema` holding its final message to the verdict's schema and `-o` writing that
  message to a file: the verdict's channel. Exercised end to end in CI.
- `claude`: Claude Code, `claude -p … --dangerously-skip-permissions` with
  ANTHROPIC_BASE_URL at the proxy; telemetry, auto-update and non-essential traffic off.
- `opencode`: `opencode run --format json --auto` with a provider config pointing at the
  proxy (OpenAI-compatible Chat Completions).

The claude and opencode adapters build their command lines from what was measured by hand
(see the reference notes) and are unit-tested as argv and environment only: CI installs
neither CLI, so they are not exercised end to end.

A placeholder key is all an agent ever holds: the proxy replaces it with the real one.
Variables other than LANDBOT_* cannot be passed into the sandbox as job variables, so an
agent's own settings (CODEX_HOME, ANTHROPIC_BASE_URL, …) are set with `env NAME=VALUE` in
its command line.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from landbot.core.text import encodable
from landbot.errors import LandbotError
from landbot.fixer.verdict import SCHEMA
from landbot.sandbox import bwrap

AGENTS = ("command", "codex", "claude", "opencode")

# Names of the files in the job's two folders.
PROMPT_NAME = "prompt.md"
EVIDENCE_NAME = "evidence.json"
SCHEMA_NAME = "verdict-schema.json"
OPENCODE_CONFIG_NAME = "opencode.json"
VERDICT_NAME = "verdict.json"
LAST_MESSAGE_NAME = "last-message.json"
CODEX_HOME_NAME = "codex-home"

# An argument longer than this cannot be passed to exec (MAX_ARG_STRLEN is 128 KiB); a
# prompt that long goes by file, with a short prompt pointing at it.
MAX_PROMPT_ARG = 100_000

KEY_ENV = "LANDBOT_MODEL_KEY_PLACEHOLDER"  # set by the model proxy inside the sandbox


class AgentUnavailable(LandbotError):
    """The agent cannot be started (not installed, not configured); says how to fix it."""


@dataclass(frozen=True)
class JobPaths:
    """The job's two folders, at the same paths on the host and in the sandbox.

    `inputs` is bound read-only (the prompt, the evidence, the verdict schema, agent
    config); `outputs` is writable by the job (the verdict, Codex's last message and
    home). `outputs` lives in the checkout's `.git`, the only writable place the sandbox
    shares with the host, where git never commits anything.
    """

    inputs: Path
    outputs: Path

    @property
    def prompt(self) -> Path:
        return self.inputs / PROMPT_NAME

    @property
    def evidence(self) -> Path:
        return self.inputs / EVIDENCE_NAME

    @property
    def schema(self) -> Path:
        return self.inputs / SCHEMA_NAME

    @property
    def verdict(self) -> Path:
        return self.outputs / VERDICT_NAME

    def job_variables(self) -> dict[str, str]:
        return {
            "LANDBOT_PROMPT_FILE": str(self.prompt),
            "LANDBOT_EVIDENCE_FILE": str(self.evidence),
            "LANDBOT_VERDICT_FILE": str(self.verdict),
        }


@dataclass(frozen=True)
class ModelAccess:
    """The model as the sandboxed agent reaches it: through the proxy."""

    url: str  # base URL inside the sandbox, e.g. http://127.0.0.1:18080/v1
    placeholder: str  # the key the agent sends; the proxy swaps in the real one
    model: str | None = None  # model name for the agent's requests (its default if None)


@dataclass(frozen=True)
class Invocation:
    """How to start one agent in the sandbox and where to find its verdict."""

    argv: tuple[str, ...]
    env: Mapping[str, str]  # LANDBOT_* job variables
    read_only: tuple[Path, ...] = ()  # folders to show read-only besides the inputs
    # Files in `outputs` that may hold the verdict, best first.
    verdict_files: tuple[str, ...] = (VERDICT_NAME,)
    # Extra files to write into `inputs` before the run (name -> text).
    input_files: Mapping[str, str] = field(default_factory=dict)
    # Folders to create in `outputs` before the run.
    output_dirs: tuple[str, ...] = ()
    # Pulls a verdict out of the agent's stdout, tried after the files.
    stdout_verdict: Callable[[bytes], bytes | None] | None = None


class Agent:
    name = "agent"
    needs_model = False

    def invocation(self, paths: JobPaths, prompt: str, model: ModelAccess | None) -> Invocation:
        raise NotImplementedError


def _prompt_arg(paths: JobPaths, prompt: str) -> str:
    if len(prompt.encode()) <= MAX_PROMPT_ARG:
        return prompt
    return (
        f"Your task is in the file {paths.prompt} (also named by $LANDBOT_PROMPT_FILE). "
        "Read it first and follow it exactly."
    )


def _within_system(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in bwrap.SYSTEM_PATHS)


def _env_program() -> str:
    found = shutil.which("env", path="/usr/bin:/bin")
    if found is None:
        raise AgentUnavailable("`env` is missing from /usr/bin and /bin: install coreutils")
    return found


def _npm_program(name: str, package: str, path: str | None) -> tuple[str, tuple[Path, ...]]:
    """A CLI installed with npm: its path, and the folders the sandbox must show for it."""
    found = shutil.which(name, path=path)
    if found is None:
        raise AgentUnavailable(
            f"{name} is not installed: install it with `npm install -g {package}`"
        )
    real = os.path.realpath(found)
    folders: list[Path] = []
    for p in (os.path.dirname(found), os.path.dirname(real)):
        if not _within_system(p) and Path(p) not in folders:
            folders.append(Path(p))
    return found, tuple(folders)


# --- command --------------------------------------------------------------------------


class CommandAgent(Agent):
    name = "command"

    def __init__(self, command: Sequence[str]) -> None:
        if not command:
            raise AgentUnavailable(
                "the command agent has no command: set [fixer] command in config/landbot.toml "
                'or LANDBOT_FIXER__COMMAND (a JSON list, e.g. ["/opt/fixer/run.sh"])'
            )
        self.command = tuple(command)
        first = self.command[0]
        if first.startswith("/") and not (os.path.isfile(first) and os.access(first, os.X_OK)):
            raise AgentUnavailable(
                f"the fixer command {first} does not exist or is not executable; "
                "fix [fixer] command"
            )

    def invocation(self, paths: JobPaths, prompt: str, model: ModelAccess | None) -> Invocation:
        # The sandbox binds an absolute command's folder read-only at the same path itself.
        return Invocation(argv=self.command, env=paths.job_variables())


# --- codex ----------------------------------------------------------------------------

_CODEX_TARGETS = {
    "x86_64": ("x64", "x86_64-unknown-linux-musl"),
    "amd64": ("x64", "x86_64-unknown-linux-musl"),
    "aarch64": ("arm64", "aarch64-unknown-linux-musl"),
    "arm64": ("arm64", "aarch64-unknown-linux-musl"),
}
NPM_GLOBAL_ROOTS = (Path("/usr/local/lib/node_modules"), Path("/usr/lib/node_modules"))
CODEX_SETUP_HINT = "install it with scripts/setup (it runs `npm install -g @openai/codex@0.171.0`)"


def _is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _codex_in_package(package: Path, machine: str) -> Path | None:
    arch, triple = _CODEX_TARGETS.get(machine, ("", ""))
    if not arch:
        return None
    for vendor in (
        package / "node_modules" / "@openai" / f"codex-linux-{arch}" / "vendor",
        package.parent / f"codex-linux-{arch}" / "vendor",  # hoisted by the package manager
        package / "vendor",
    ):
        binary = vendor / triple / "bin" / "codex"
        if binary.is_file() and os.access(binary, os.X_OK):
            return binary
    return None


def find_codex(
    path: str | None = None,
    npm_roots: Sequence[Path] = NPM_GLOBAL_ROOTS,
    machine: str | None = None,
) -> Path:
    """The native codex binary (not the Node launcher, so the sandbox needs no Node)."""
    machine = machine or platform.machine()
    packages: list[Path] = []
    found = shutil.which("codex", path=path)
    if found is not None:
        real = Path(os.path.realpath(found))
        if _is_elf(real):
            return real
        if real.name == "codex.js" and real.parent.name == "bin":
            packages.append(real.parent.parent)
    packages += [root / "@openai" / "codex" for root in npm_roots]
    for package in packages:
        binary = _codex_in_package(package, machine)
        if binary is not None:
            return Path(os.path.realpath(binary))
    raise AgentUnavailable(f"codex is not installed: {CODEX_SETUP_HINT}")


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


class CodexAgent(Agent):
    name = "codex"
    needs_model = True

    def __init__(self, binary: Path | None = None) -> None:
        self.binary = binary if binary is not None else find_codex()

    def invocation(self, paths: JobPaths, prompt: str, model: ModelAccess | None) -> Invocation:
        if model is None:
            raise AgentUnavailable(
                "the codex agent needs a model: set [fixer] model_url (LANDBOT_FIXER__MODEL_URL)"
            )
        # The binary's folder (bin/ with its helpers beside it) when the sandbox would not
        # show it anyway; the package's vendor/<target> folder holds rg and resources too.
        target = self.binary.parent.parent if self.binary.parent.name == "bin" else None
        folder = target if target is not None else self.binary.parent
        read_only = () if _within_system(str(folder)) else (folder,)
        provider = (
            "{"
            f"name={_toml_string('landbot proxy')},"
            f"base_url={_toml_string(model.url)},"
            'wire_api="responses",'
            f"env_key={_toml_string(KEY_ENV)}"
            "}"
        )
        argv = [
            _env_program(),
            f"CODEX_HOME={paths.outputs / CODEX_HOME_NAME}",
            str(self.binary),
            "exec",
            "--ignore-user-config",
            *(["-m", model.model] if model.model else []),
            "-c",
            "model_provider=landbot",
            "-c",
            f"model_providers.landbot={provider}",
            "-c",
            "analytics.enabled=false",
            "-c",
            "check_for_update_on_startup=false",
            "--dangerously-bypass-approvals-and-sandbox",
            "--ephemeral",
            "--skip-git-repo-check",
            "--ignore-rules",
            "--color",
            "never",
            "--json",
            "--output-schema",
            str(paths.schema),
            "-o",
            str(paths.outputs / LAST_MESSAGE_NAME),
            _prompt_arg(paths, prompt),
        ]
        return Invocation(
            argv=tuple(argv),
            env=paths.job_variables(),
            read_only=read_only,
            verdict_files=(LAST_MESSAGE_NAME, VERDICT_NAME),
            input_files={SCHEMA_NAME: json.dumps(SCHEMA, indent=2) + "\n"},
            output_dirs=(CODEX_HOME_NAME,),
        )


# --- claude ---------------------------------------------------------------------------


def claude_result(stdout: bytes) -> bytes | None:
    """The final text of `claude -p --output-format json` (one JSON object on stdout)."""
    try:
        obj = json.loads(stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    if isinstance(obj, dict) and isinstance(obj.get("result"), str):
        return encodable(str(obj["result"])).encode()  # JSON may hold a lone surrogate
    return None


class ClaudeAgent(Agent):
    """Claude Code. Not exercised end to end in CI (only its command line is tested)."""

    name = "claude"
    needs_model = True

    def __init__(self, path: str | None = None) -> None:
        self.program, self.folders = _npm_program("claude", "@anthropic-ai/claude-code", path)

    def invocation(self, paths: JobPaths, prompt: str, model: ModelAccess | None) -> Invocation:
        if model is None:
            raise AgentUnavailable(
                "the claude agent needs a model: set [fixer] model_url (LANDBOT_FIXER__MODEL_URL, "
                "e.g. https://api.anthropic.com)"
            )
        argv = [
            _env_program(),
            f"ANTHROPIC_BASE_URL={model.url}",
            f"ANTHROPIC_API_KEY={model.placeholder}",
            "DISABLE_TELEMETRY=1",
            "DISABLE_AUTOUPDATER=1",
            "DISABLE_ERROR_REPORTING=1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
            self.program,
            "-p",
            *(["--model", model.model] if model.model else []),
            "--output-format",
            "json",
            "--dangerously-skip-permissions",
            _prompt_arg(paths, prompt),
        ]
        return Invocation(
            argv=tuple(argv),
            env=paths.job_variables(),
            read_only=self.folders,
            stdout_verdict=claude_result,
        )


# --- opencode -------------------------------------------------------------------------

OPENCODE_PROVIDER = "landbot"


def opencode_config(model: ModelAccess) -> dict[str, object]:
    name = model.model or "default"
    return {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "provider": {
            OPENCODE_PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "landbot proxy",
                "options": {"baseURL": model.url, "apiKey": model.placeholder},
                "models": {name: {"tool_call": True}},
            }
        },
    }


class OpencodeAgent(Agent):
    """opencode. Not exercised end to end in CI (only its command line is tested)."""

    name = "opencode"
    needs_model = True

    def __init__(self, path: str | None = None) -> None:
        self.program, self.folders = _npm_program("opencode", "opencode-ai", path)

    def invocation(self, paths: JobPaths, prompt: str, model: ModelAccess | None) -> Invocation:
        if model is None:
            raise AgentUnavailable(
                "the opencode agent needs a model: set [fixer] model_url "
                "(LANDBOT_FIXER__MODEL_URL, an OpenAI-compatible endpoint)"
            )
        name = model.model or "default"
        argv = [
            _env_program(),
            f"OPENCODE_CONFIG={paths.inputs / OPENCODE_CONFIG_NAME}",
            "OPENCODE_DISABLE_AUTOUPDATE=1",
            "OPENCODE_DISABLE_MODELS_FETCH=1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
            "OPENCODE_DISABLE_SHARE=1",
            self.program,
            "run",
            "--format",
            "json",
            "--auto",
            "-m",
            f"{OPENCODE_PROVIDER}/{name}",
            _prompt_arg(paths, prompt),
        ]
        return Invocation(
            argv=tuple(argv),
            env=paths.job_variables(),
            read_only=self.folders,
            input_files={OPENCODE_CONFIG_NAME: json.dumps(opencode_config(model), indent=2) + "\n"},
        )


def make_agent(name: str, command: Sequence[str] = ()) -> Agent:
    """The agent called `name` (`[fixer] agent` or `--agent`), or AgentUnavailable."""
    if name == "command":
        return CommandAgent(command)
    if name == "codex":
        return CodexAgent()
    if name == "claude":
        return ClaudeAgent()
    if name == "opencode":
        return OpencodeAgent()
    raise AgentUnavailable(
        f"there is no fixer agent {name!r}: use one of {', '.join(AGENTS)} ([fixer] agent)"
    )
