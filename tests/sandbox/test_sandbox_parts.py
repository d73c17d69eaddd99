"""The sandbox's parts: environment, mount plan, limits, cgroups, settings, results."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from landbot.config import SandboxSettings, Settings
from landbot.errors import LandbotError
from landbot.sandbox import bwrap as bw
from landbot.sandbox import settings as sandbox_settings
from landbot.sandbox.cgroups import (
    create_job_cgroup,
    parse_mountinfo,
    parse_proc_cgroup,
    v1_parents,
    v2_parent,
)
from landbot.sandbox.cli import RunArgs, parse_fast
from landbot.sandbox.env import EnvRefused, is_secret_name, is_settings_name, sandbox_environment
from landbot.sandbox.limits import cpu_cap, launcher_argv, rlimits_for, setpriv_argv
from landbot.sandbox.runner import (
    EXIT_OOM,
    EXIT_TIMEOUT,
    SandboxResult,
    SandboxUnavailable,
    check_host,
    userns_problem,
)

# --- environment ------------------------------------------------------------------------


def test_every_setting_is_refused_as_a_job_variable() -> None:
    for field in Settings.model_fields:
        assert is_settings_name(f"LANDBOT_{field.upper()}")
        assert is_settings_name(f"LANDBOT_{field.upper()}__ANYTHING")
    assert not is_settings_name("LANDBOT_PROMPT_FILE")
    assert not is_settings_name("DATABASE_URL")


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("GITHUB_TOKEN", True),
        ("openai_api_key", True),
        ("LANDBOT_GITHUB__WEBHOOK_SECRET", True),
        ("PGPASSWORD", False),  # no underscore: not the pattern (and never passed anyway)
        ("DB_PASSWORD", True),
        ("LANDBOT_PROMPT_FILE", False),
        ("KEYBOARD", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_the_environment_is_rebuilt_from_an_allowlist() -> None:
    parent = {
        "PATH": "/root/.venv/bin:/usr/bin",
        "LANG": "en_US.UTF-8",
        "TERM": "xterm",
        "HOME": "/root",
        "LANDBOT_GITHUB__TOKEN": "t",
        "LANDBOT_PROMPT_FILE": "/from/parent",
        "SSH_AUTH_SOCK": "/tmp/agent",
    }
    env = sandbox_environment({"LANDBOT_PROMPT_FILE": "/job/prompt.md"}, parent)
    assert env == {
        "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
        "HOME": "/home/sandbox",
        "TMPDIR": "/tmp",
        "LANG": "en_US.UTF-8",
        "TERM": "xterm",
        "LANDBOT_PROMPT_FILE": "/job/prompt.md",
    }
    assert sandbox_environment({}, {})["LANG"] == "C.UTF-8"


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("LANDBOT_GITHUB__TOKEN", "looks like a secret"),
        ("LANDBOT_MODEL_API_KEY", "looks like a secret"),
        ("OPENAI_API_KEY", "only LANDBOT_* job variables"),
        ("HTTPS_PROXY", "only LANDBOT_* job variables"),
        ("LANDBOT_DATABASE_URL", "is a landbot setting"),
        ("LANDBOT_SANDBOX__UID", "is a landbot setting"),
        ("LANDBOT_REPOS", "is a landbot setting"),
        ("BAD NAME", "not a valid"),
    ],
)
def test_refused_job_variables(name: str, why: str) -> None:
    with pytest.raises(EnvRefused) as err:
        sandbox_environment({name: "v"}, {})
    assert why in str(err.value) and "\n" not in str(err.value)


def test_trusted_variables_are_the_runners_own() -> None:
    env = sandbox_environment({}, {}, {"HTTPS_PROXY": "http://127.0.0.1:18080"})
    assert env["HTTPS_PROXY"] == "http://127.0.0.1:18080"


# --- mount plan ---------------------------------------------------------------------------

PLAN = bw.MountPlan(
    workdir="/tmp/jobs/42/work",
    system=(bw.SystemPath("/usr"), bw.SystemPath("/bin", "usr/bin")),
    read_only=("/opt/node",),
    protected=("/tmp/jobs/42/work/.git/hooks", "/tmp/jobs/42/work/.git/config"),
    pinned=("/tmp/jobs/42/work/.git",),
    model_socket="/tmp/landbot-proxy-x/proxy.sock",
)


def test_bwrap_argv_in_order() -> None:
    argv = bw.bwrap_argv("/usr/bin/bwrap", PLAN, ["make", "test"], status_fd=5)
    assert argv[:7] == [
        "/usr/bin/bwrap",
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--hostname",
    ]
    joined = " ".join(argv)
    order = [
        "--ro-bind /usr /usr",
        "--symlink usr/bin /bin",
        "--proc /proc --dev /dev",
        "--tmpfs /tmp",
        "--tmpfs /home/sandbox",
        "--ro-bind /opt/node /opt/node",
        "--bind /tmp/jobs/42/work /tmp/jobs/42/work",
        "--bind /tmp/jobs/42/work/.git /tmp/jobs/42/work/.git",
        "--ro-bind /tmp/jobs/42/work/.git/hooks /tmp/jobs/42/work/.git/hooks",
        "--ro-bind /tmp/jobs/42/work/.git/config /tmp/jobs/42/work/.git/config",
        "--ro-bind /tmp/landbot-proxy-x/proxy.sock /run/landbot/model.sock",
        "--remount-ro /",
        "--json-status-fd 5",
        "--chdir /tmp/jobs/42/work -- make test",
    ]
    positions = [joined.index(part) for part in order]
    assert positions == sorted(positions)
    assert joined.endswith("-- make test")
    assert "--ro-bind / /" not in joined


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/tmp",
        "/srv",
        "/usr/src/x",
        "/etc/landbot",
        "/proc/1",
        "/home/sandbox/w",
        "tmp/x",
        "/tmp/../etc/x",
    ],
)
def test_work_trees_that_would_expose_or_hide_the_host_are_refused(path: str) -> None:
    with pytest.raises(LandbotError):
        bw.check_workdir(path)


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/", "whole host"),
        ("/proc", "keeps private"),
        ("/home", "keeps private"),
        ("/tmp/jobs", "contains the work tree"),
    ],
)
def test_read_only_paths_that_show_too_much_are_refused(path: str, why: str) -> None:
    with pytest.raises(LandbotError) as err:
        bw.check_read_only(path, "/tmp/jobs/42/work")
    assert why in str(err.value)


def test_a_read_only_path_inside_the_work_tree_is_already_visible() -> None:
    plan = bw.MountPlan(workdir="/srv/w/1", system=(), read_only=("/srv/w/1/bin",))
    assert "/srv/w/1/bin" not in bw.bwrap_argv("bwrap", plan, ["x"])


# --- limits -------------------------------------------------------------------------------


def test_rlimits_back_up_the_cgroup_without_preempting_it() -> None:
    lim = rlimits_for(timeout=600, memory_mb=2048, cpus=2)
    assert lim.data_kib == 2 * 2048 * 1024  # above the cgroup cap: the cgroup acts first
    assert lim.cpu_seconds == 1210
    assert lim.fsize_blocks is None  # no disk cap: any file size
    # The disk cap, in the 512-byte blocks of dash's `ulimit -f`.
    assert rlimits_for(600, 2048, 2, fsize_mb=16).fsize_blocks == 16 * 2048


def test_the_cpu_cap_leaves_the_host_half_its_cores() -> None:
    assert cpu_cap(None, cores=2) == 1.0  # a 2-core host keeps a core
    assert cpu_cap(None, cores=1) == 0.5
    assert cpu_cap(None, cores=8) == 4.0
    assert cpu_cap(3.0, cores=2) == 3.0  # the operator's setting wins
    assert SandboxSettings().cpus is None


def test_the_launcher_joins_cgroups_then_drops_privileges() -> None:
    argv = launcher_argv(
        ["/cg/memory/j/cgroup.procs", "/cg/pids/j/cgroup.procs"],
        rlimits_for(10, 100, 1),
        [*setpriv_argv("/usr/bin/setpriv", 65534, 65534), "bwrap", "x"],
    )
    assert argv[:2] == ["/bin/sh", "-c"]
    assert argv[3:] == [
        "landbot-launch",
        "/cg/memory/j/cgroup.procs",
        "/cg/pids/j/cgroup.procs",
        "--",
        str(200 * 1024),
        "20",
        "unlimited",
        "/usr/bin/setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
        "bwrap",
        "x",
    ]


# --- cgroups ------------------------------------------------------------------------------

# This machine's kind: cgroup v1 memory and pids, an empty v2 tree beside them.
HYBRID_MOUNTINFO = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
HYBRID_CGROUP = """\
8:pids:/
4:memory:/process_api/abc
2:cpu,cpuacct:/
0::/
"""
V2_MOUNTINFO = "25 20 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
V2_CGROUP = "0::/system.slice/landbot.service\n"


def test_v1_parents_are_the_supervisors_own_cgroups() -> None:
    mounts = parse_mountinfo(HYBRID_MOUNTINFO)
    own = parse_proc_cgroup(HYBRID_CGROUP)
    assert own["cpuacct"] == "/" and own[""] == "/"
    assert v1_parents(mounts, own) == (
        "/sys/fs/cgroup/memory/process_api/abc",
        "/sys/fs/cgroup/pids",
    )


def test_v2_parent() -> None:
    mounts = parse_mountinfo(V2_MOUNTINFO)
    own = parse_proc_cgroup(V2_CGROUP)
    assert v1_parents(mounts, own) is None
    assert v2_parent(mounts, own) == "/sys/fs/cgroup/system.slice/landbot.service"


def test_a_mount_of_a_sub_cgroup_is_joined_relative_to_its_root() -> None:
    mounts = parse_mountinfo(
        "35 31 0:32 /docker/x /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
        "39 31 0:36 /docker/x /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
    )
    own = parse_proc_cgroup("4:memory:/docker/x/job\n8:pids:/docker/x\n")
    assert v1_parents(mounts, own) == ("/sys/fs/cgroup/memory/job", "/sys/fs/cgroup/pids")


@pytest.fixture
def fake_v2() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="landbot-fake-cgroup2-"))
    parent = root / "landbot.service"
    parent.mkdir()
    (parent / "cgroup.controllers").write_text("cpu memory pids\n")
    (parent / "cgroup.subtree_control").write_text("")
    try:
        yield root
    finally:
        shutil.rmtree(root)


def test_v2_limits_and_oom_on_a_fake_tree(fake_v2: Path) -> None:
    """The v2 path against a plain folder (this machine's kernel has no v2 controllers):
    the files written and read are v2's."""
    job = create_job_cgroup(
        100 * 1024 * 1024,
        64,
        mountinfo=f"25 20 0:22 / {fake_v2} rw - cgroup2 cgroup2 rw\n",
        proc_cgroup="0::/landbot.service\n",
    )
    (d,) = job.dirs
    assert job.version == 2 and d.parent == fake_v2 / "landbot.service"
    assert d.name.startswith(f"landbot-{os.getpid()}-")
    assert (d / "memory.max").read_text() == str(100 * 1024 * 1024)
    assert (d / "pids.max").read_text() == "64"
    assert (d.parent / "cgroup.subtree_control").read_text() == "+memory +pids"
    with_cpu = create_job_cgroup(
        1 << 20,
        8,
        cpus=1.5,
        mountinfo=f"25 20 0:22 / {fake_v2} rw - cgroup2 cgroup2 rw\n",
        proc_cgroup="0::/landbot.service\n",
    )
    assert (with_cpu.dirs[0] / "cpu.max").read_text() == "150000 100000"
    assert job.oom_kills() == 0
    (d / "memory.events").write_text("low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n")
    (d / "memory.peak").write_text("104857600\n")
    assert job.oom_kills() == 1 and job.hit_limit() and job.memory_peak() == 104857600


def test_no_cgroup_controllers_is_one_clear_line() -> None:
    with pytest.raises(LandbotError) as err:
        create_job_cgroup(1, 1, mountinfo="", proc_cgroup="0::/\n")
    assert "memory and pids controllers" in str(err.value)


def test_a_real_v1_job_cgroup_is_made_and_removed() -> None:
    try:
        job = create_job_cgroup(64 * 1024 * 1024, 16)
    except LandbotError as exc:
        pytest.skip(f"no cgroup here: {exc}")
    try:
        mem = job.dirs[0]
        limit_file = "memory.max" if job.version == 2 else "memory.limit_in_bytes"
        assert int((mem / limit_file).read_text()) == 64 * 1024 * 1024
        assert (job.dirs[-1] / "pids.max").read_text().strip() == "16"
        assert job.pids() == set()
    finally:
        assert job.remove()
    assert not any(d.exists() for d in job.dirs)


def test_a_job_cgroup_is_removed_only_once_empty() -> None:
    try:
        job = create_job_cgroup(64 * 1024 * 1024, 16)
    except LandbotError as exc:
        pytest.skip(f"no cgroup here: {exc}")
    sleeper = subprocess.Popen(
        ["sh", "-c", 'for f; do echo $$ > "$f"; done; exec sleep 30', "sh", *job.procs_files]
    )
    try:
        deadline = 50
        while not job.pids() and deadline:
            deadline -= 1
            time.sleep(0.02)
        assert job.pids() == {sleeper.pid}
        assert job.remove()  # kills the sleeper, waits, removes
        assert sleeper.wait(timeout=5) == -9
    finally:
        sleeper.kill()
        job.remove(timeout=1)


# --- host checks and results --------------------------------------------------------------


@pytest.mark.parametrize(
    ("sysctls", "fix"),
    [
        ({"kernel/unprivileged_userns_clone": "0\n"}, "kernel.unprivileged_userns_clone=1"),
        ({"user/max_user_namespaces": "0\n"}, "user.max_user_namespaces"),
        ({"kernel/apparmor_restrict_unprivileged_userns": "1"}, "apparmor"),
    ],
)
def test_user_namespaces_off_says_how_to_enable_them(sysctls: dict[str, str], fix: str) -> None:
    problem = userns_problem(sysctls)
    assert problem is not None and fix in problem


def test_user_namespaces_on() -> None:
    assert userns_problem({"user/max_user_namespaces": "96365\n"}) is None


def test_missing_bubblewrap_is_one_line_naming_the_package(tmp_path: Path) -> None:
    with pytest.raises(SandboxUnavailable) as err:
        check_host(path=str(tmp_path))
    assert "apt-get install bubblewrap" in str(err.value)
    assert "\n" not in str(err.value)


def test_result_exit_codes() -> None:
    def result(rc: int, timed_out: bool = False, oom: bool = False) -> SandboxResult:
        return SandboxResult(rc, timed_out, oom, 0.1, timeout=5, memory_mb=100)

    assert result(0).exit_code == 0 and result(0).message() is None
    assert result(3).exit_code == 3
    assert result(137, timed_out=True).exit_code == EXIT_TIMEOUT
    assert "timed out after 5 s" in (result(137, timed_out=True).message() or "")
    assert result(137, oom=True).exit_code == EXIT_OOM
    assert result(1, oom=True).exit_code == EXIT_OOM  # a child was OOM-killed, the job failed
    assert result(0, oom=True).exit_code == 0  # ... but the job still succeeded
    assert "still" not in (result(1, oom=True).message() or "")
    assert "exited 0" in (result(0, oom=True).message() or "")


# --- settings and command line ---------------------------------------------------------


def test_sandbox_defaults_match_the_settings_model() -> None:
    d = SandboxSettings()
    assert sandbox_settings.SandboxOptions() == sandbox_settings.SandboxOptions(
        uid=d.uid,
        gid=d.gid,
        read_only=tuple(d.read_only),
        etc=tuple(d.etc),
        cpus=d.cpus,
        tmp_mb=d.tmp_mb,
        disk_mb=d.disk_mb,
    )
    from landbot.config import DEFAULT_CONFIG_FILE, FixerSettings
    from landbot.sandbox import runner

    assert sandbox_settings.DEFAULT_CONFIG_FILE == DEFAULT_CONFIG_FILE
    assert Settings.model_fields["database_url"].default == sandbox_settings.DEFAULT_DATABASE_URL
    assert FixerSettings().state_dir == sandbox_settings.DEFAULT_STATE_DIR
    assert (cpu_cap(d.cpus), d.tmp_mb) == (runner.DEFAULT_CPUS, runner.DEFAULT_TMP_MB)
    from landbot.sandbox.disk import DEFAULT_DISK_MB

    assert d.disk_mb == DEFAULT_DISK_MB


@pytest.mark.parametrize(
    ("url", "paths"),
    [
        ("sqlite:///./landbot.db", ["landbot.db", "landbot.db-journal", "landbot.db-wal"]),
        ("sqlite:////var/lib/landbot/l.db", ["/var/lib/landbot/l.db"]),
        ("sqlite://", []),
        ("postgresql://bot:pw@db.internal/landbot", []),  # TCP: nothing on this host to hide
        ("postgresql://bot@/landbot?host=/var/run/postgresql", ["/var/run/postgresql"]),
        ("postgresql+psycopg://bot@%2Frun%2Fpg/landbot", ["/run/pg"]),
    ],
)
def test_the_store_a_database_url_names(url: str, paths: list[str]) -> None:
    got = [str(p) for p in sandbox_settings.database_paths(url)]
    assert all(p in got for p in paths) and (paths or not got)


def test_host_secrets_lists_key_config_store_and_state(tmp_path: Path) -> None:
    key, cfg, db, state = (tmp_path / n for n in ("app.pem", "l.toml", "l.db", "state"))
    for f in (key, cfg, db):
        f.write_text("x")
    state.mkdir()
    settings = Settings.model_validate(
        {
            "github": {"private_key_file": key},
            "database_url": f"sqlite:///{db}",
            "fixer": {"state_dir": state},
        }
    )
    assert set(sandbox_settings.host_secrets(settings, cfg)) == {key, cfg, db, state}
    key.unlink()  # what does not exist cannot be seen
    assert key not in sandbox_settings.host_secrets(settings, cfg)


def test_the_etc_plan_is_an_allowlist_plus_generated_files(tmp_path: Path) -> None:
    from landbot.sandbox.etc import plan_etc

    for name in ("ld.so.cache", "shadow", "pip.conf"):
        (tmp_path / name).write_text("")
    (tmp_path / "python3.11").mkdir()
    (tmp_path / "ssl" / "private").mkdir(parents=True)
    (tmp_path / "ssl" / "certs").mkdir()
    (tmp_path / "os-release").symlink_to("../usr/lib/os-release")
    plan = plan_etc((), 65534, 65534, etc=str(tmp_path))
    shown = {e.path: e.symlink for e in plan.entries}
    assert shown == {
        "/etc/ld.so.cache": None,
        "/etc/python3.11": None,
        "/etc/ssl/certs": None,
        "/etc/os-release": "../usr/lib/os-release",
    }
    files = dict(plan.files)
    assert files["/etc/passwd"].decode().splitlines()[1].startswith("landbot:x:65534:65534:")
    assert b"files" in files["/etc/nsswitch.conf"] and b"ldap" not in files["/etc/nsswitch.conf"]
    extra = plan_etc(("pip.conf",), 1000, 1000, etc=str(tmp_path))
    assert "/etc/pip.conf" in {e.path for e in extra.entries}
    assert b"nobody:x:65534" in dict(extra.files)["/etc/passwd"]


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("/etc/x", "a name under /etc"),
        ("../root", "a name under /etc"),
        ("a/../b", "a name"),
        ("passwd", "generated"),
        ("missing.conf", "does not exist"),
    ],
)
def test_bad_etc_entries_are_one_line(tmp_path: Path, name: str, why: str) -> None:
    from landbot.sandbox.etc import plan_etc

    with pytest.raises(LandbotError) as err:
        plan_etc((name,), 65534, 65534, etc=str(tmp_path))
    assert why in str(err.value) and "\n" not in str(err.value)


def test_the_tail_buffer_keeps_the_end_and_counts_the_rest() -> None:
    from landbot.sandbox.runner import TailBuffer

    tail = TailBuffer(10)
    for i in range(100):
        tail.write(b"%03d" % i)
    assert tail.value() == b"6097098099"[-10:] and tail.dropped == 290
    assert len(tail._buf) <= 10


def test_the_launcher_joins_a_new_keyring_and_bwrap_gets_the_filter_and_files() -> None:
    from landbot.sandbox.etc import EtcEntry
    from landbot.sandbox.limits import keyring_argv

    k = keyring_argv("/usr/bin/perl", "x86_64")
    assert k[0] == "/usr/bin/perl" and k[-2:] == ["250", "1"]
    with pytest.raises(LandbotError, match="KEYCTL_NR"):
        keyring_argv("/usr/bin/perl", "vax")
    plan = bw.MountPlan(
        workdir="/srv/w/1",
        system=(bw.SystemPath("/usr"),),
        etc=(
            EtcEntry("/etc/ssl/certs", "/etc/ssl/certs"),
            EtcEntry("/etc/mtab", "/etc/mtab", "../proc/self/mounts"),
        ),
        data_files=((7, "/etc/passwd"),),
        seccomp_fd=9,
        tmp_bytes=1 << 20,
    )
    joined = " ".join(bw.bwrap_argv("bwrap", plan, ["x"]))
    assert "--ro-bind /etc/ssl/certs /etc/ssl/certs" in joined
    assert "--symlink ../proc/self/mounts /etc/mtab" in joined
    assert "--perms 0644 --ro-bind-data 7 /etc/passwd" in joined
    assert "--size 1048576 --tmpfs /tmp --size 1048576 --tmpfs /home/sandbox" in joined
    assert "--seccomp 9" in joined and "/etc /etc" not in joined


def test_the_seccomp_program_is_built_once() -> None:
    from landbot.sandbox import seccomp

    program = seccomp.filter_program()
    assert program is seccomp.filter_program() and len(program) % 8 == 0 and program


def test_settings_are_loaded_fully_only_when_the_sandbox_is_configured() -> None:
    assert not sandbox_settings.needs_full_settings({"LANDBOT_GITHUB__TOKEN": "x"}, None)
    assert not sandbox_settings.needs_full_settings({}, {"fixer": {}})
    assert sandbox_settings.needs_full_settings({"landbot_sandbox__uid": "1000"}, None)
    assert sandbox_settings.needs_full_settings({}, {"sandbox": {"uid": 1000}})


def test_sandbox_settings_from_a_file_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name.startswith("LANDBOT_"):
            monkeypatch.delenv(name)
    cfg = tmp_path / "landbot.toml"
    cfg.write_text('[sandbox]\nuid = 1234\nread_only = ["/opt/node"]\n')
    got = sandbox_settings.load_sandbox_options(cfg)
    assert (got.uid, got.gid, got.read_only) == (1234, 65534, (Path("/opt/node"),))
    monkeypatch.setenv("LANDBOT_SANDBOX__GID", "4321")
    assert sandbox_settings.load_sandbox_options(cfg).gid == 4321
    cfg.write_text("[sandbox]\nuid = 'nobody'\n")
    with pytest.raises(LandbotError) as err:
        sandbox_settings.load_sandbox_options(cfg)
    assert "LANDBOT_SANDBOX__UID" in str(err.value)
    with pytest.raises(LandbotError):
        sandbox_settings.load_sandbox_options(tmp_path / "missing.toml")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--workdir", "/w", "--", "make", "--all"],
            RunArgs(workdir=Path("/w"), command=["make", "--all"]),
        ),
        (
            [
                "--workdir=/w",
                "--timeout",
                "5",
                "--memory=100",
                "--env",
                "LANDBOT_A=1",
                "--",
                "true",
            ],
            RunArgs(Path("/w"), 5.0, 100, ["LANDBOT_A=1"], None, ["true"]),
        ),
        (
            ["--config", "c.toml", "--workdir", "/w", "--", "x"],
            RunArgs(workdir=Path("/w"), config=Path("c.toml"), command=["x"]),
        ),
        (["--workdir", "/w", "--help"], None),  # Typer's help
        (["--workdir", "/w", "--timeout", "soon", "--", "x"], None),  # Typer's error
        (["--workdir", "/w", "--"], None),  # no command
        (["--", "x"], None),  # no --workdir
        (["--workdir"], None),
        (["--wrokdir", "/w", "--", "x"], None),
    ],
)
def test_the_fast_path_takes_only_well_formed_invocations(
    args: list[str], expected: RunArgs | None
) -> None:
    assert parse_fast(args) == expected
