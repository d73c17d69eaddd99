"""What a capped run (landbot/sandbox/disk.py) leaves when it is killed: its disk image
folder under /var/tmp is locked while the run lives, a SIGTERM cleans up as Ctrl-C does,
and a SIGKILLed run's folder is removed by the next capped run, never a live run's. Also
that the job dies with its supervisor in the default, capped mode: the job's process is
found by scanning /proc for a tag in its command line (a capped job's writes reach the
operator's folder only when the run ends, so a heartbeat file there says nothing).
Writes are small (a 16 MB cap, a 2 MB file)."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from landbot.sandbox.cgroups import job_cgroup_parents, sweep_stale
from landbot.sandbox.disk import IMAGE_PREFIX, image_parent, sweep_images
from landbot.sandbox.runner import DEFAULT_GID, DEFAULT_UID

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

LANDBOT = str(Path(sys.executable).parent / "landbot")
ENV = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}


def _tagged(tag: str, uid: int | None = None, *, loop: bool = False) -> list[int]:
    """The pids whose command line holds `tag` (and that run as `uid`, when given); with
    `loop`, only the tagged loop itself (its last argument is the tag), so a wait for it
    ends when the job is fully started, not when bwrap or sh (whose script holds the tag)
    begins."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if tag.encode() not in b" ".join(argv) or (loop and argv[-2:] != [tag.encode(), b""]):
                continue
            if uid is None or entry.stat().st_uid == uid:
                pids.append(int(entry.name))
    return pids


def _wait(what: str, ok: Any, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        assert time.monotonic() < deadline, f"{what}: not after {timeout} s"
        time.sleep(0.05)


def _job(tag: str) -> str:
    # A setsid loop (out of the job's process group, as a left-behind process would be) that
    # carries the tag, and a small file on the capped disk so the image holds data.
    return (
        f"head -c 2097152 /dev/urandom > f; setsid sh -c 'while :; do sleep 0.05; done' {tag}"
        " </dev/null >/dev/null 2>&1 & sleep 60"
    )


def _folders(pid: int) -> list[Path]:
    return sorted(image_parent().glob(f"{IMAGE_PREFIX}{pid}-*"))


@pytest.fixture
def runs(box: Any) -> Iterator[Any]:
    """Start capped `landbot sandbox run`s of a tagged job, each on its own folder; kill
    whatever is left after the test."""
    started: list[tuple[subprocess.Popen[bytes], str]] = []

    def start(name: str) -> tuple[subprocess.Popen[bytes], str, Path]:
        work = box.root / name
        work.mkdir()
        (work / "mine").write_text("the operator's\n")
        tag = f"LANDBOT-TAG-{secrets.token_hex(6)}"
        proc = subprocess.Popen(
            [LANDBOT, "sandbox", "run", "--workdir", str(work), "--disk", "16",
             "--timeout", "90", "--", "sh", "-c", _job(tag)],
            env=ENV, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        started.append((proc, tag))
        _wait(f"the job of run {name}", lambda: _tagged(tag, DEFAULT_UID, loop=True))
        return proc, tag, work

    try:
        yield start
    finally:
        for proc, tag in started:
            with contextlib.suppress(OSError):
                proc.kill()
            proc.wait()
            for pid in _tagged(tag):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        sweep_images()
        sweep_stale(job_cgroup_parents())  # a killed supervisor could not clean up


def test_a_killed_runs_image_is_removed_by_the_next_run_and_a_live_one_kept(
    box: Any, runs: Any
) -> None:
    killed, _tag, _work = runs("killed")
    (folder,) = _folders(killed.pid)
    assert (folder / "disk.img").exists()
    killed.kill()  # SIGKILL: nothing of landbot's runs after it
    killed.wait()
    assert folder.exists()  # what it leaves ...

    live, live_tag, _ = runs("live")  # the control: a run that is still going
    (kept,) = _folders(live.pid)

    after = box.root / "after"
    after.mkdir()
    done = subprocess.run(
        [LANDBOT, "sandbox", "run", "--workdir", str(after), "--disk", "16", "--", "true"],
        env=ENV, cwd="/", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not folder.exists()  # ... is removed by the next capped run
    assert (kept / "disk.img").exists()  # the live run's image is not touched
    assert _tagged(live_tag, DEFAULT_UID)  # and its job still runs


def test_sigterm_ends_the_run_and_removes_its_image(box: Any, runs: Any) -> None:
    proc, tag, work = runs("term")
    (folder,) = _folders(proc.pid)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 130
    assert proc.stderr is not None
    assert proc.stderr.read().decode().splitlines()[-1] == "landbot: interrupted"
    assert not folder.exists()  # removed on the way out, not left for a later sweep
    assert not _tagged(tag)  # the job was ended with it
    assert (work / "mine").read_text() == "the operator's\n"  # the operator's folder stays


def test_the_capped_job_dies_with_its_supervisor(box: Any, runs: Any) -> None:
    # The control: a supervisor killed with SIGKILL leaves an ordinary child running, and
    # the scan of /proc finds it.
    tag = f"LANDBOT-TAG-{secrets.token_hex(6)}"
    parent = subprocess.Popen(
        ["setpriv", f"--reuid={DEFAULT_UID}", f"--regid={DEFAULT_GID}", "--clear-groups",
         "sh", "-c", f"setsid sh -c 'while :; do sleep 0.05; done' {tag} & sleep 30"],
        cwd="/", env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    try:
        _wait("the control's child", lambda: _tagged(tag, DEFAULT_UID, loop=True))
        parent.kill()
        parent.wait()
        time.sleep(0.3)
        assert _tagged(tag, DEFAULT_UID), "the control's child should survive"
    finally:
        for pid in _tagged(tag):
            os.kill(pid, signal.SIGKILL)

    supervisor, job_tag, _ = runs("dies")  # capped: --disk 16
    assert _tagged(job_tag, DEFAULT_UID)  # it runs, as the sandbox uid
    supervisor.kill()
    supervisor.wait()
    _wait("the capped job's end after its supervisor's", lambda: not _tagged(job_tag), 15)
