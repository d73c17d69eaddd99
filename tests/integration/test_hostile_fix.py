"""Issue 12's end-to-end acceptance: a hostile command agent tries the import attacks in the
server flow (a real `landbot serve` process, the simulated GitHub, the real sandbox), and
nothing it planted is pushed, nothing lands in any mirror, no host command runs, and the
hand-back names no host path and carries no live mention, outside link, HTML or escape.

Each attack runs twice. The control runs the same hostile script UNCONFINED in a plain
clone and imports its result the naive way (root `git fetch` from the job's `.git` into a
bare copy of the repository, as a mirror would), or reads it the naive way (an operator's
`git status`, `quest check`, `open()` of the verdict): the marker must be reached, so the
attack is real. Then the job goes through landbot, where the marker must not be reached,
and the job's own marker (`ran-<attack>-<nonce>` in the hand-back or in the pushed commit)
shows the confined attempt ran. The tests assert outcomes only, not how landbot blocks.

One world for the module (the fake GitHub, one `landbot serve`, one state dir): a private
repository `acme/vault` whose mirror a first, benign job creates, and the victim
`acme/widgets`, one pull request per attack.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from landbot.land.comments import FIX_MARKER, HANDBACK_MARKER, STATUS_MARKER
from landbot.sim import CheckScenario, FakeGitHub, FakeGitHubServer
from landbot.sim.scenarios import CheckContext
from landbot.store import Store

LANDBOT = str(Path(sys.executable).parent / "landbot")
AGENT = Path(__file__).parent / "hostile" / "agent.py"
SECRET = "hostile-webhook-secret"
VICTIM = "acme/widgets"
VAULT = "acme/vault"
BOT = "landbot-bot"
AUTHOR = "alice"
HUGE_SIZE = 600 * 1024 * 1024  # zeros: a few hundred KB once zlib-compressed
MANY_REFS = 20_000
SETTLE = 240.0  # a hang guard, not a timing assertion: the huge blob takes a while
FILES = {
    "app.py": "def answer():\n    return 42\n",
    "tests/test_app.py": (
        "from app import answer\n\n\ndef test_answer():\n    assert answer() == 42\n"
    ),
    "quest/m0/widgets.md": "# [S] Widgets\n",
}
BUGGY = "def answer():\n    return 41\n"


def ci(ctx: CheckContext) -> CheckScenario:
    """CI that fails while app.py has the bug (the drop the fixer is sent to)."""
    if "return 41" in (ctx.read_file("app.py") or ""):
        return CheckScenario.failing(output=("FAILED tests/test_app.py::test_answer",))
    return CheckScenario.passing()


def run(argv: list[str], cwd: Path | None = None, **kw: Any) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", **kw.pop("env", {})}
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env, **kw)


def git(cwd: Path, *args: str, check: bool = True) -> str:
    done = run(["git", *args], cwd)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def has_object(git_dir: Path, oid: str) -> bool:
    """`git cat-file -e` as the host, hardened (no alternates of the job's are involved:
    a mirror's own objects/info/alternates would count, as it should)."""
    return run(["git", f"--git-dir={git_dir}", "cat-file", "-e", oid]).returncode == 0


def blob_oid(data: bytes) -> str:
    return hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()


def zeros_oid(size: int) -> str:
    sha = hashlib.sha1(f"blob {size}\0".encode())
    chunk = bytes(1 << 20)
    left = size
    while left:
        sha.update(chunk[: min(left, len(chunk))])
        left -= min(left, len(chunk))
    return sha.hexdigest()


def open_folder(parent: str, prefix: str) -> Path:
    """A folder the sandbox uid can traverse (pytest's tmp root is mode 700)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(path, 0o755)
    return path


def git_dirs(root: Path) -> list[Path]:
    """Every git repository under `root` (bare mirrors and any .git left behind)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if "HEAD" in filenames and "objects" in dirnames:
            found.append(here)
            dirnames[:] = []  # not into objects/
    return found


@dataclass
class Hostile:
    gh: FakeGitHub
    server: FakeGitHubServer
    victim: Any
    store: Store
    state: Path  # [fixer] state_dir
    outside: Path  # host folder: markers, the quest link's target, a host secret
    work: Path  # the controls' scratch space
    vault_mirror: Path
    foreign: dict[str, str]  # attack -> oid of its private blob in acme/vault
    serve_log: Path

    def mirrors(self) -> list[Path]:
        return git_dirs(self.state)

    def settle(self, number: int) -> Any:
        """Deliver the webhooks to `landbot serve` and wait for the drop of `number`."""
        self.gh.webhooks.flush()
        deadline = time.monotonic() + SETTLE
        while time.monotonic() < deadline:
            drops = [d for d in self.store.drops(VICTIM) if d.pr == number]
            settled = drops and drops[0].outcome != "pending"
            if settled and (drops[0].outcome != "handed_back" or self.handbacks(number)):
                return drops[0]
            time.sleep(0.2)
        raise AssertionError(
            f"the drop of #{number} did not settle: the job or the host hangs\n"
            + self.serve_log.read_text()[-3000:]
        )

    def bot_comments(self, number: int) -> list[str]:
        return [c.body for c in self.gh.comments_on(self.victim, number) if c.author == BOT]

    def handbacks(self, number: int) -> list[str]:
        return [b for b in self.bot_comments(number) if HANDBACK_MARKER in b]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"landbot serve exited {proc.returncode}: {log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"landbot serve did not answer /healthz: {log.read_text()}")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    if shutil.which("bwrap") is None:
        pytest.fail("bubblewrap is not installed: run scripts/setup (CI installs it)")
    if os.geteuid() != 0:
        pytest.skip("the hostile end-to-end test needs root (the sandbox drops to its uid)")
    tmp = tmp_path_factory.mktemp("hostile")
    base = open_folder("/tmp", "landbot-hostile-")
    state = base / "state"
    agent_dir = base / "agent"
    agent_dir.mkdir(mode=0o755)
    shutil.copy(AGENT, agent_dir / "agent.py")
    os.chmod(agent_dir / "agent.py", 0o755)
    # Outside /tmp (the sandbox has a private /tmp; /var/tmp it may show read-only).
    outside = open_folder("/var/tmp", "landbot-hostile-host-")
    work = open_folder("/tmp", "landbot-hostile-controls-")

    gh = FakeGitHub(tmp / "github", webhook_secret=SECRET)
    victim = gh.create_repo(VICTIM, files=FILES)
    foreign = {a: f"PRIVATE-{a}-{secrets.token_hex(8)}\n" for a in ("alternates", "pack_link")}
    # Over 100 objects, so the vault's mirror keeps the fetched pack (fetch.unpackLimit).
    vault_files: dict[str, str | bytes | None] = {
        f"filler/{i:03d}.txt": f"filler {i}\n" for i in range(150)
    }
    vault_files.update({f"secret-{a}.txt": text for a, text in foreign.items()})
    vault = gh.create_repo(VAULT, files=vault_files, private=True)
    token = gh.create_token(BOT)
    for repo in (victim, vault):
        gh.add_collaborator(repo, BOT, "write")
        gh.add_collaborator(repo, AUTHOR, "write")
        gh.set_checks(repo, ci)
    db = tmp / "landbot.db"
    with FakeGitHubServer(gh) as server:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
        env.update(server.settings_env(token=token))
        env.update(
            LANDBOT_DATABASE_URL=f"sqlite:///{db}",
            LANDBOT_REPOS=json.dumps([VICTIM, VAULT]),
            LANDBOT_FIXER__COMMAND=json.dumps([str(agent_dir / "agent.py")]),
            LANDBOT_FIXER__STATE_DIR=str(state),
            LANDBOT_FIXER__TIMEOUT="180",
            LANDBOT_FIXER__MEMORY_MB="2048",
            LANDBOT_WORKER__IDLE_SLEEP="0.1",
        )
        serve_log = tmp / "serve.log"
        with open(serve_log, "wb") as log:
            proc = subprocess.Popen(
                [LANDBOT, "serve", "--port", str(port)],
                env=env,
                cwd=tmp,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        store = Store.open(f"sqlite:///{db}")
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, proc, serve_log)
            gh.webhooks.url = f"{url}/webhook"
            world = Hostile(gh, server, victim, store, state, outside, work, Path(), {}, serve_log)
            world.vault_mirror = prime_vault(world, vault)
            world.foreign = {a: blob_oid(text.encode()) for a, text in foreign.items()}
            for attack, oid in world.foreign.items():
                assert has_object(world.vault_mirror, oid), f"the vault mirror lacks {attack}"
            assert list((world.vault_mirror / "objects" / "pack").glob("*.pack")), (
                "the vault's mirror holds no pack: the pack_link attack needs one"
            )
            yield world
        finally:
            gh.webhooks.flush()
            os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
            store.close()
            for folder in (base, outside, work):
                shutil.rmtree(folder, ignore_errors=True)


def prime_vault(world: Hostile, vault: Any) -> Path:
    """A first, benign job on acme/vault: it creates the vault's mirror in the state dir."""
    gh = world.gh
    pr = gh.open_pull_request(vault, head="vault-bug", files={"app.py": BUGGY}, author=AUTHOR)
    gh.enqueue(pr, actor=AUTHOR)
    gh.run_queue(vault)
    gh.webhooks.flush()
    deadline = time.monotonic() + SETTLE
    while time.monotonic() < deadline:
        drops = [d for d in world.store.drops(VAULT) if d.pr == pr.number]
        if drops and drops[0].outcome != "pending":
            break
        time.sleep(0.2)
    found = [m for m in world.mirrors() if m.name == "vault.git"]
    assert found, "the benign job on acme/vault left no mirror under the state dir"
    return found[0]


# --- the attacks ------------------------------------------------------------------------


@dataclass
class Attack:
    name: str
    spec: dict[str, Any]
    forbidden: dict[str, str]  # what -> oid that must be in no mirror (but the vault's own)
    markers: list[str]  # strings no pushed blob and no comment may hold


def make_attack(world: Hostile, name: str) -> Attack:
    nonce = secrets.token_hex(6)
    spec: dict[str, Any] = {
        "attack": name,
        "nonce": nonce,
        "host_marker": str(world.outside / f"host-ran-{name}-{nonce}"),
    }
    forbidden: dict[str, str] = {}
    markers = [f"HOST-{nonce}"]
    if name in world.foreign:
        spec["foreign_oid"] = world.foreign[name]
        spec["foreign_mirror"] = str(world.vault_mirror)
        forbidden["the vault's private blob"] = world.foreign[name]
        markers.append("PRIVATE-")
    if name == "quest_link":
        host_dir = world.outside / f"quest-{nonce}"
        (host_dir / "m9").mkdir(parents=True)
        (host_dir / "m9" / f"HOSTFILE-{nonce}.md").write_text(f"HOST-{nonce} no title\n")
        spec["host_dir"] = str(host_dir)
        forbidden["the quest link"] = blob_oid(str(host_dir).encode())
        markers += [f"HOSTFILE-{nonce}", str(host_dir)]
    if name == "huge":
        spec["huge_size"] = HUGE_SIZE
        spec["refs"] = MANY_REFS
        forbidden["the huge blob"] = zeros_oid(HUGE_SIZE)
    if name == "verdict_link":
        secret = world.outside / f"host-secret-{nonce}.json"
        verdict = {"verdict": "needs_human", "summary": f"HOST-{nonce} secret", "reproduced": True}
        secret.write_text(json.dumps({**verdict, "recommendation": f"HOST-{nonce}"}))
        os.chmod(secret, 0o644)
        spec["host_secret"] = str(secret)
    return Attack(name, spec, forbidden, markers)


def control_clone(world: Hostile, attack: Attack, branch: str) -> tuple[Path, Path]:
    """A plain clone at the PR head (the job's checkout, unconfined) and a bare copy of the
    repository (the mirror, for the naive import)."""
    folder = open_folder(str(world.work), f"{attack.name}-")
    url = world.gh.clone_url(world.victim)
    git(folder, "clone", "-q", "--branch", branch, url, "clone")
    git(folder, "clone", "-q", "--mirror", url, "mirror.git")
    return folder / "clone", folder / "mirror.git"


def run_unconfined(clone: Path) -> subprocess.CompletedProcess[str]:
    (clone / ".git" / "landbot").mkdir()
    return run(
        [str(AGENT)],
        clone,
        env={
            "HOSTILE_CONTROL": "1",
            "LANDBOT_VERDICT_FILE": str(clone / ".git" / "landbot" / "verdict.json"),
            "LANDBOT_PROMPT_FILE": "/dev/null",
            "LANDBOT_EVIDENCE_FILE": "/dev/null",
        },
        timeout=300,
    )


def naive_import(clone: Path, mirror: Path) -> subprocess.CompletedProcess[str]:
    """What a host that trusts the job's .git does: fetch its HEAD into the mirror as root."""
    return run(
        [
            "git",
            f"--git-dir={mirror}",
            "fetch",
            "--no-tags",
            str(clone / ".git"),
            "+HEAD:refs/naive",
        ],
        env={
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "safe.directory",
            "GIT_CONFIG_VALUE_0": "*",
        },
        timeout=300,
    )


def control(world: Hostile, attack: Attack, branch: str, base_sha: str) -> None:
    """The attack UNCONFINED: it must reach its marker."""
    clone, mirror = control_clone(world, attack, branch)
    ran = run_unconfined(clone)
    assert ran.returncode == (97 if attack.name == "verdict_link" else 0), ran.stderr
    assert f"ran-{attack.name}-{attack.spec['nonce']}" in ran.stdout
    verdict_file = clone / ".git" / "landbot" / "verdict.json"
    if attack.name in ("alternates", "pack_link", "huge", "quest_link"):
        done = naive_import(clone, mirror)
        assert done.returncode == 0, done.stderr
        for what, oid in attack.forbidden.items():
            assert has_object(mirror, oid), f"control: {what} did not reach the mirror copy"
    if attack.name == "layout":
        marker = Path(attack.spec["host_marker"] + "-control")
        assert not marker.exists()
        run(["git", "status"], clone, env={"GIT_CONFIG_COUNT": "0"})
        run(["git", "diff", "HEAD~1"], clone)
        assert marker.exists(), "control: the planted config ran nothing on the host"
        assert "uid=0" in marker.read_text()
    if attack.name == "quest_link":
        # A host that checks the fix out and walks quest/ as a folder (as quest check did
        # before it refused links) lists the host folder's file names.
        listed = [n for _, _, names in os.walk(clone / "quest", followlinks=True) for n in names]
        assert f"HOSTFILE-{attack.spec['nonce']}.md" in listed, (
            "control: a walk of the checked-out quest did not reach the host folder"
        )
    if attack.name == "huge":
        refs = git(clone, "for-each-ref", "--format=%(refname)", "refs/heads/spam-*").split()
        assert len(refs) == MANY_REFS
    if attack.name == "text":
        text = verdict_file.read_text()
        for raw in ("@everyone", "<img", "\\u001b", "](https://evil.example"):
            assert raw in text, f"control: the hostile verdict lacks {raw!r}"
    if attack.name == "verdict_link":
        with open(verdict_file) as f:  # the naive host read follows the link
            assert f"HOST-{attack.spec['nonce']}" in f.read()


# --- what must hold after the confined run ------------------------------------------------

_LIVE_MENTION = re.compile(r"@([A-Za-z0-9][A-Za-z0-9_-]*(?:/[A-Za-z0-9_.-]+)?)")
_URL = re.compile(r"(?:https?|ftp|mailto|file|javascript|data):[^\s)\"'>]*|www\.[^\s)\"'>]*", re.I)
_TAG = re.compile(r"<\s*/?\s*([A-Za-z][A-Za-z0-9-]*)")
_OWN_MARKER = re.compile(r"<!-- landbot:(?:status|handback|fix|drop \d+) -->")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def allowed_url(url: str, world: Hostile) -> bool:
    return url.startswith(("https://github.com/", world.server.url, world.gh.urls.web))


def text_problems(body: str, world: Hostile, attack: Attack) -> list[str]:
    problems = []
    for needle in (
        str(world.state),
        os.path.realpath(world.state),
        str(world.outside),
        "/root",
        "/tmp/",
        "/var/tmp",
        "/etc/",
        "pytest-of-",
        *attack.markers,
    ):
        if needle in body:
            problems.append(f"names {needle!r}")
    mentions = {m for m in _LIVE_MENTION.findall(body)}
    if mentions - {AUTHOR}:
        problems.append(f"live mentions {sorted(mentions - {AUTHOR})}")
    outside = [u for u in _URL.findall(body) if not allowed_url(u, world)]
    if outside:
        problems.append(f"links {outside}")
    tags = {t.lower() for t in _TAG.findall(body)} - {"details", "summary"}
    if tags:
        problems.append(f"HTML tags {sorted(tags)}")
    # landbot's own hidden markers only, each once: a forged one would steer its edits.
    hidden = re.findall(r"<!--.*?(?:-->|$)", body, re.S)
    if any(not _OWN_MARKER.fullmatch(h) for h in hidden) or len(set(hidden)) != len(hidden):
        problems.append(f"HTML comments {hidden} (a forged landbot marker?)")
    if not body.startswith((HANDBACK_MARKER, STATUS_MARKER, FIX_MARKER)):
        problems.append("does not start with landbot's marker")
    if _CONTROL.search(body):
        problems.append("control or bidi characters (ESC included)")
    return problems


def blob_size(git_dir: Path, oid: str) -> int:
    return int(git(git_dir, "cat-file", "-s", oid))


def pushed_problems(world: Hostile, attack: Attack, head: str) -> list[str]:
    """What the attack got into the simulated GitHub's repository."""
    repo = world.victim.require_git()
    problems = [
        f"{what} ({oid[:12]}) is in the repository on GitHub"
        for what, oid in attack.forbidden.items()
        if has_object(repo, oid)
    ]
    branches = git(repo, "for-each-ref", "--format=%(refname)", "refs/heads").split()
    if any("spam-" in b for b in branches) or len(branches) > 50:
        problems.append(f"{len(branches)} branches on GitHub")
    for ref in branches:
        for commit in git(repo, "rev-list", ref, f"^{head}").split():
            for line in git(repo, "ls-tree", "-r", commit).splitlines():
                mode, _, oid = line.split("\t")[0].split(" ")
                if mode in ("120000", "160000"):
                    problems.append(f"{ref} {commit[:12]} holds a link: {line}")
                elif mode.startswith("100") and blob_size(repo, oid) < 1 << 20:
                    blob = git(repo, "cat-file", "blob", oid)
                    problems += [
                        f"{ref} {commit[:12]} holds {m!r}" for m in attack.markers if m in blob
                    ]
    return problems


def mirror_problems(world: Hostile, attack: Attack) -> list[str]:
    problems = []
    mirrors = world.mirrors()
    if not any(m.name == "widgets.git" for m in mirrors):
        problems.append("no mirror of acme/widgets under the state dir (did the job run?)")
    for mirror in mirrors:
        own = mirror == world.vault_mirror
        for what, oid in attack.forbidden.items():
            if not (own and what == "the vault's private blob") and has_object(mirror, oid):
                problems.append(f"{what} ({oid[:12]}) is in {mirror}")
        refs = git(mirror, "for-each-ref", "--format=%(refname)").split()
        stray = [r for r in refs if not re.fullmatch(r"refs/heads/[\w.-]+|refs/pull/\d+/head", r)]
        if stray:
            problems.append(f"{mirror} keeps {len(stray)} refs it never fetched: {stray[:3]}")
    return problems


ATTACKS = ["alternates", "pack_link", "layout", "quest_link", "text", "verdict_link", "huge"]


@pytest.mark.parametrize("name", ATTACKS)
def test_a_hostile_job_plants_nothing_through_landbot_serve(hostile: Hostile, name: str) -> None:
    world = hostile
    attack = make_attack(world, name)
    branch = f"hostile-{name}"
    spec = json.dumps(attack.spec, indent=1) + "\n"
    pr = world.gh.open_pull_request(
        world.victim, head=branch, files={"app.py": BUGGY, ".hostile.json": spec}, author=AUTHOR
    )
    head = pr.head_sha
    base_sha = world.gh.branch_sha(world.victim, "main")
    assert base_sha is not None

    control(world, attack, branch, base_sha)  # first UNCONFINED: the attack is real

    world.gh.enqueue(pr, actor=AUTHOR)
    assert world.gh.run_queue(world.victim)[-1].reason == "CI_FAILURE"
    try:
        drop = world.settle(pr.number)
        comments = world.bot_comments(pr.number)
        pushed = world.gh.branch_sha(world.victim, branch)
        ran = f"ran-{name}-{attack.spec['nonce']}"
        proof = "exited with code 97" if name == "verdict_link" else ran
        messages = git(world.victim.require_git(), "log", "--format=%B", f"{branch}", f"^{head}")
        problems = pushed_problems(world, attack, head) + mirror_problems(world, attack)
        if not (any(proof in c for c in comments) or ran in messages):
            problems.append(f"no sign the confined job ran ({proof})")
        if drop.outcome not in ("handed_back", "fixed"):
            problems.append(f"the drop ended {drop.outcome}, neither handed back nor fixed")
        if drop.outcome == "handed_back" and not world.handbacks(pr.number):
            problems.append("handed back without a hand-back comment")
        marker = Path(attack.spec["host_marker"])
        if marker.exists():
            problems.append(f"a host command ran: {marker.read_text().strip()}")
        for body in comments:
            problems += [f"comment {p}" for p in text_problems(body, world, attack)]
        assert not problems, (
            f"{name}: outcome {drop.outcome} ({drop.summary}); pushed {pushed != head}:\n- "
            + "\n- ".join(problems)
            + "\n\n"
            + "\n---\n".join(comments)
        )
    finally:
        # Off the queue and closed, so a fix this attack got pushed cannot merge under the
        # next attack.
        world.gh.close_pull_request(world.gh.pull(world.victim, pr.number), actor=AUTHOR)
        world.gh.webhooks.flush()
