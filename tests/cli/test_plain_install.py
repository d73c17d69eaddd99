"""A plain `pip install landbot` (no `sim` extra) runs every product command; only the demo
needs the extra, and says so in one line.

No network and no second environment: each check runs in a subprocess whose sitecustomize
makes the extra's modules unimportable, as they are where the extra is not installed. The
control proves the hook bites: the simulator's GraphQL schema no longer imports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import typer
from typer.core import TyperGroup

import landbot
from landbot import cli
from landbot.sim import EXTRA_MODULES

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

# The commands a plain install must run (design.md's contract, less `demo`).
PRODUCT = [
    "serve",
    "worker",
    "poll",
    "retry",
    "status",
    "triage",
    "quest",
    "sandbox",
    "fixer",
    "app",
]
PACKAGE = Path(landbot.__file__).parent
# Not product code: the simulator and the demo (the extra's users), the migration scripts
# (alembic runs env.py, importing it runs a migration), and `python -m` entry points.
NOT_PRODUCT = ("sim", "demo", "store/migrations")

HOOK = """\
import importlib.abc
import sys

BLOCKED = frozenset({blocked!r})


class _NotInstalled(importlib.abc.MetaPathFinder):
    # Ahead of every other finder: the extra's modules are absent, as without the extra.
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
"""


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a plain install: the hook on PYTHONPATH, no LANDBOT_ settings."""
    site = tmp_path_factory.mktemp("plain-site")
    (site / "sitecustomize.py").write_text(HOOK.format(blocked=sorted(EXTRA_MODULES)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH")) if p)
    return env


def python(
    env: dict[str, str], cwd: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,  # no config/landbot.toml here: the built-in defaults apply
        input=stdin,
    )


def _commands() -> list[str]:
    """Each product command, and each subcommand of the product's command groups."""
    group = typer.main.get_command(cli.app)
    assert isinstance(group, TyperGroup)
    out: list[str] = []
    for name in PRODUCT:
        command = group.commands[name]
        out.append(name)
        if isinstance(command, TyperGroup):
            out += [f"{name} {sub}" for sub in sorted(command.commands)]
    return out


def _product_modules() -> list[str]:
    names: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if path.name == "__main__.py" or any(rel.is_relative_to(p) for p in NOT_PRODUCT):
            continue
        parts = ("landbot", *rel.with_suffix("").parts)
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


IMPORT_ALL = """\
import importlib, json, sys
failed = {}
for name in json.load(sys.stdin):
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps(failed))
"""


def test_the_hook_makes_the_simulator_unimportable(plain: dict[str, str], tmp_path: Path) -> None:
    code = "import landbot.sim.graphql_schema"
    hooked = python(plain, tmp_path, "-c", code)
    assert hooked.returncode == 1
    assert f"ModuleNotFoundError: No module named {EXTRA_MODULES[0]!r}" in hooked.stderr
    # Without the hook (the test extra installed it) the same import works: the hook did it.
    env = {**plain, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    assert python(env, tmp_path, "-c", code).returncode == 0


@pytest.mark.parametrize("command", _commands())
def test_every_product_command_answers_help_without_the_extra(
    plain: dict[str, str], tmp_path: Path, command: str
) -> None:
    out = python(plain, tmp_path, "-m", "landbot", *command.split(), "--help")
    assert out.returncode == 0, out.stderr
    assert "Usage:" in out.stdout


def test_every_product_module_imports_without_the_extra(
    plain: dict[str, str], tmp_path: Path
) -> None:
    modules = _product_modules()
    used = ["landbot.cli", "landbot.pipeline.wiring", "landbot.web.app", "landbot.quest"]
    used += ["landbot.triage.explain", "landbot.fixer.job", "landbot.sandbox.runner"]
    assert set(used) <= set(modules)  # the modules the commands use are among those checked
    out = python(plain, tmp_path, "-c", IMPORT_ALL, stdin=json.dumps(modules))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {}


def test_status_and_triage_run_without_the_extra(plain: dict[str, str], tmp_path: Path) -> None:
    # Two commands run for real, offline: the store (a fresh SQLite file) and triage.
    status = python(plain, tmp_path, "-m", "landbot", "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout) == []
    log = tmp_path / "job.log"
    log.write_text("2024-01-01T00:00:00.0000000Z ##[error]Process completed with exit code 1.\n")
    triage = python(plain, tmp_path, "-m", "landbot", "triage", "log", str(log), "--json")
    assert triage.returncode == 0, triage.stderr
    assert isinstance(json.loads(triage.stdout), dict)


def test_demo_without_the_extra_says_what_to_install_in_one_line(
    plain: dict[str, str], tmp_path: Path
) -> None:
    out = python(plain, tmp_path, "-m", "landbot", "demo")
    assert out.returncode == 2
    assert out.stderr == "landbot: landbot demo needs its extra: pip install 'landbot[demo]'\n"
    assert out.stdout == ""


def test_version_is_the_packages(plain: dict[str, str], tmp_path: Path) -> None:
    out = python(plain, tmp_path, "-m", "landbot", "--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"landbot {landbot.__version__}\n"
    # One spelling: the wheel's metadata takes the version from landbot/__init__.py.
    pyproject = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
    assert pyproject["project"]["dynamic"] == ["version"]
    assert pyproject["tool"]["hatch"]["version"]["path"] == "landbot/__init__.py"


def test_the_demo_extra_is_the_simulator_and_no_test_tool() -> None:
    extras = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert extras["demo"] == ["landbot[sim]"]
    assert not any("pytest" in req for req in extras["sim"] + extras["demo"])
    core = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]
    assert not any(req.startswith("graphql-core") for req in core["dependencies"])


def _demo_checkout(root: Path, *pulls: str) -> Path:
    from landbot.demo import project

    files = dict(project.BASE_FILES)
    for pull in project.PULLS:
        if pull.key in pulls:
            files.update(pull.files)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_demo_projects_ci_runs_without_pytest(
    plain: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Why the demo once needed pytest: its CI ran `python -m pytest`. It runs the standard
    # library's unittest now; here with pytest made unimportable, as on a plain install.
    from landbot.demo import ci, project

    site = Path(plain["PYTHONPATH"].split(os.pathsep)[0])
    env = {**plain, "PYTHONPATH": str(site)}
    hook = (site / "sitecustomize.py").read_text()
    blocked = tmp_path_factory.mktemp("no-pytest")
    (blocked / "sitecustomize.py").write_text(
        hook.replace("BLOCKED = frozenset(", "BLOCKED = {'pytest', '_pytest'} | frozenset(")
    )
    env["PYTHONPATH"] = str(blocked)
    assert python(env, blocked, "-c", "import pytest").returncode == 1  # the hook bites
    assert "pytest" not in project.CI_WORKFLOW
    assert ci.UNITTEST[:2] == ("-m", "unittest")
    good = _demo_checkout(tmp_path_factory.mktemp("calc"), "flaky")
    done = python(env, good, *ci.UNITTEST)
    assert done.returncode == 0, done.stderr
    assert "Ran 3 tests" in done.stderr
    # The control: the genuine bug's tests run and fail the same way, with no pytest either.
    bad = _demo_checkout(tmp_path_factory.mktemp("calc"), "genuine")
    done = python(env, bad, *ci.UNITTEST)
    assert done.returncode == 1 and "FAIL: test_sample_standard_deviation" in done.stderr
