"""`landbot sandbox run`: the contract of design.md, as a whole process.

The contract's cases run twice: through Typer (`landbot sandbox run`) and through the fast
path that skips Typer (landbot/sandbox/cli.py), which must behave the same.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

LANDBOT = str(Path(sys.executable).parent / "landbot")
FAST = (
    "import sys\n"
    "from landbot.sandbox.cli import fast_path\n"
    "code = fast_path(sys.argv[1:])\n"
    "sys.exit(99 if code is None else code)\n"
)


def _runner(kind: str) -> Any:
    def run(
        *args: str, input: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        if kind == "typer":
            argv = [LANDBOT, "sandbox", "run", *args]
        else:
            argv = [sys.executable, "-c", FAST, *args]
        base = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            input=input,
            timeout=60,
            env={**base, **(env or {})},
            cwd="/",
        )
        # A run that starts says first which disk cap applies (test_disk_cap.py reads
        # it); these tests see the command's own stderr.
        first, _, rest = done.stderr.partition("\n")
        if first.startswith("landbot sandbox run: disk "):
            done.stderr = rest
        return done

    return run


@pytest.fixture(params=["typer", "fast"])
def landbot(request: pytest.FixtureRequest) -> Any:
    """Both entry points (for the contract's exit codes)."""
    return _runner(request.param)


@pytest.fixture
def landbot_typer() -> Any:
    return _runner("typer")


def test_output_passes_through_and_the_exit_code_is_the_commands(box: Any, landbot: Any) -> None:
    out = landbot("--workdir", str(box.work), "--", "sh", "-c", "echo out; echo err >&2; exit 7")
    assert (out.returncode, out.stdout, out.stderr) == (7, "out\n", "err\n")


def test_input_is_dev_null_unless_asked_for(box: Any, landbot: Any) -> None:
    asked = landbot("--workdir", str(box.work), "--stdin", "--", "cat", input="hello\n")
    assert (asked.returncode, asked.stdout) == (0, "hello\n")  # the control

    out = landbot(
        "--workdir", str(box.work), "--", "sh", "-c", "echo STDIN-RAN; cat", input="hello\n"
    )
    assert (out.returncode, out.stdout) == (0, "STDIN-RAN\n")


# Sequences a job could send to the operator's terminal: set the title, move the cursor,
# clear the screen, a C1 CSI, and one split across two writes (the job sleeps between).
HOSTILE_OUTPUT = (
    "printf 'A\\033]0;PWNED-TITLE\\007B\\033[2J\\033[HC\\302\\233D\\n'; "
    "printf 'E\\033'; sleep 0.2; printf '[31mF\\n'; printf 'G\\033[1;31mH\\n' >&2"
)


def _on_a_terminal(argv: list[str]) -> bytes:
    import pty

    master, slave = pty.openpty()
    base = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=base)
    os.close(slave)
    out = b""
    try:
        while chunk := os.read(master, 4096):
            out += chunk
    except OSError:
        pass
    proc.wait(timeout=60)
    os.close(master)
    return out


def test_escape_sequences_never_reach_the_operators_terminal(box: Any) -> None:
    argv = [LANDBOT, "sandbox", "run", "--workdir", str(box.work), "--", "sh", "-c"]
    # Control: through a pipe (not a terminal) the bytes pass through untouched.
    piped = subprocess.run([*argv, HOSTILE_OUTPUT], capture_output=True, timeout=60)
    assert b"\x1b]0;PWNED-TITLE\x07" in piped.stdout and b"\x1b[31m" in piped.stdout

    out = _on_a_terminal([*argv, HOSTILE_OUTPUT])
    assert b"\x1b" not in out and b"\xc2\x9b" not in out and b"\x07" not in out, out
    assert b"PWNED-TITLE" in out or b"AB" in out  # the text itself got through
    text = out.replace(b"\r\n", b"\n")
    assert b"ABCD\n" in text.replace(b"PWNED-TITLE", b"") and b"EF\n" in text
    assert b"GH\n" in text  # stderr too


def test_a_timeout_is_124_with_one_line(box: Any, landbot: Any) -> None:
    out = landbot("--workdir", str(box.work), "--timeout", "0.5", "--", "sleep", "30")
    assert out.returncode == 124
    assert out.stderr.count("\n") == 1 and "timed out after 0.5 s" in out.stderr


def test_the_memory_cap_is_137_with_one_line(box: Any, landbot: Any) -> None:
    out = landbot(
        "--workdir",
        str(box.work),
        "--memory",
        "64",
        "--",
        "python3",
        "-c",
        "x = [b'x' * (8 << 20) for _ in range(40)]",
    )
    assert out.returncode == 137
    assert out.stderr.strip().splitlines()[-1].startswith("landbot: ")
    assert "memory cap of 64 MB" in out.stderr


def test_the_work_tree_is_made_usable_by_the_sandbox_uid(box: Any, landbot: Any) -> None:
    out = landbot(
        "--workdir",
        str(box.work),
        "--",
        "sh",
        "-c",
        "git status --short && echo new > new.txt && git add new.txt && "
        "git commit -qm new && git log --format=%s -1",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "new"
    assert box.work.stat().st_uid == 65534 and (box.work / "README.md").stat().st_uid == 65534


def test_job_variables_pass_and_secrets_are_refused(box: Any, landbot: Any) -> None:
    ok = landbot(
        "--workdir",
        str(box.work),
        "--env",
        "LANDBOT_PROMPT_FILE=/p.md",
        "--",
        "sh",
        "-c",
        'echo "$LANDBOT_PROMPT_FILE"',
    )
    assert (ok.returncode, ok.stdout) == (0, "/p.md\n")

    out = landbot(
        "--workdir", str(box.work), "--env", "LANDBOT_GITHUB__TOKEN=ghs_x", "--", "touch", "ran"
    )
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "LANDBOT_GITHUB__TOKEN looks like a secret" in out.stderr
    assert not (box.work / "ran").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workdir", "/nonexistent/work", "--", "true"], "is not a folder"),
        (["--workdir", "/tmp", "--", "true"], "too close to /"),
        (["--workdir", "/usr/share", "--", "true"], "overlaps /usr"),
        (["--workdir", "WORK", "--", "true"], ""),
        (["--workdir", "WORK", "--", "/nonexistent/bin/tool"], "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    box: Any, landbot_typer: Any, args: list[str], message: str
) -> None:
    args = [str(box.work) if a == "WORK" else a for a in args]
    out = landbot_typer(*args)
    if not message:  # the control: the same invocation with good input runs
        assert out.returncode == 0, out.stderr
        return
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert message in out.stderr


def test_a_work_tree_the_sandbox_uid_cannot_reach(box: Any, landbot_typer: Any) -> None:
    hidden = box.root / "hidden"
    (hidden / "work").mkdir(parents=True)
    os.chmod(hidden, 0o700)
    out = landbot_typer("--workdir", str(hidden / "work"), "--", "true")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert f"cannot reach the work tree {hidden / 'work'}: {hidden} (mode 700)" in out.stderr


def test_missing_bubblewrap_is_exit_2_and_nothing_runs(box: Any, landbot_typer: Any) -> None:
    out = landbot_typer(
        "--workdir", str(box.work), "--", "touch", "ran", env={"PATH": "/nonexistent"}
    )
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "apt-get install bubblewrap" in out.stderr
    assert not (box.work / "ran").exists()


def test_no_command_is_a_usage_error() -> None:
    out = subprocess.run(
        [LANDBOT, "sandbox", "run", "--workdir", "/tmp/x"], capture_output=True, text=True
    )
    assert out.returncode == 2 and "no command given" in out.stderr
