"""The fix job's artifact (landbot/fixer/artifact.py): each hostile zip or folder is built
here and refused with one line; the well-formed artifact (the control) passes. Then a real
`landbot fixer run --out` on a real checkout, zipped as actions/upload-artifact does, read
back, its bundle parsed and imported by the quarantine into a mirror."""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import subprocess
import sys
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from landbot.errors import LandbotError
from landbot.fixer.artifact import (
    MANIFEST_NAME,
    VERDICT_NAME,
    Artifact,
    ArtifactLimits,
    ArtifactRefused,
    manifest,
    read_artifact,
    take_bundle,
    write_artifact,
)
from landbot.git.quarantine import BUNDLE_NAME, Quarantine, ResultRefused, parse_bundle

from ..conftest import diverge, require_sandbox, sandbox_folder
from ..conftest import run_git as git

# ./scripts/test --fast leaves this module out: its tests start processes (landbot, git,
# the sandbox, servers) and take seconds each.
pytestmark = pytest.mark.slow

LANDBOT = str(Path(sys.executable).parent / "landbot")
VERDICT = b'{"verdict": "fixed", "summary": "set ANSWER to 42"}\n'
BUNDLE = b"# v2 git bundle\n" + bytes(range(256)) * 8  # opaque here: only its bytes count


def zip_of(entries: list[tuple[str | zipfile.ZipInfo, bytes]]) -> bytes:
    """A zip of `entries`, in order, deflated as upload-artifact's are (level 6)."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about a duplicate name
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
            for name, data in entries:
                archive.writestr(name, data)
    return buf.getvalue()


def regular(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
    info.external_attr = (stat.S_IFREG | 0o644) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def good_entries(bundle: bytes | None = BUNDLE) -> list[tuple[str | zipfile.ZipInfo, bytes]]:
    files = {VERDICT_NAME: VERDICT, **({BUNDLE_NAME: bundle} if bundle is not None else {})}
    return [
        *((regular(name), data) for name, data in files.items()),
        (regular(MANIFEST_NAME), manifest(files)),
    ]


def refused(source: bytes | Path, limits: ArtifactLimits = ArtifactLimits()) -> str:
    with pytest.raises(ArtifactRefused) as caught:
        read_artifact(source, limits)
    message = str(caught.value)
    assert "\n" not in message and message
    assert isinstance(caught.value, ResultRefused)  # handled as any refused job result
    return message


# --- the control -----------------------------------------------------------------------


def test_the_well_formed_artifact_passes_with_and_without_a_bundle(tmp_path: Path) -> None:
    assert read_artifact(zip_of(good_entries())) == Artifact(VERDICT, BUNDLE)
    assert read_artifact(zip_of(good_entries(None))) == Artifact(VERDICT, None)
    out = tmp_path / "out"
    written = write_artifact(out, VERDICT, BUNDLE)
    assert sorted(p.name for p in written) == sorted([VERDICT_NAME, BUNDLE_NAME, MANIFEST_NAME])
    assert read_artifact(out) == Artifact(VERDICT, BUNDLE)
    body = json.loads((out / MANIFEST_NAME).read_text())
    assert body["files"][BUNDLE_NAME] == {
        "size": len(BUNDLE),
        "sha256": hashlib.sha256(BUNDLE).hexdigest(),
    }


def test_write_artifact_refuses_a_folder_that_holds_something(tmp_path: Path) -> None:
    (tmp_path / "stray.txt").write_text("x")
    with pytest.raises(LandbotError, match="not empty"):
        write_artifact(tmp_path, VERDICT, None)
    (tmp_path / "empty").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "empty")
    with pytest.raises(LandbotError, match="symbolic link"):
        write_artifact(tmp_path / "link", VERDICT, None)
    assert not any((tmp_path / "empty").iterdir())
    with pytest.raises(LandbotError, match="not UTF-8"):
        write_artifact(tmp_path / "new", b"\xff\xfe", None)
    write_artifact(tmp_path / "new", VERDICT, None)  # the control: a new folder is fine


# --- hostile zips ----------------------------------------------------------------------


def with_extra(entry: tuple[str | zipfile.ZipInfo, bytes]) -> bytes:
    return zip_of([*good_entries(), entry])


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("../verdict.json", "out of its folder"),
        ("a/../../etc/cron.d/x", "out of its folder"),
        ("/etc/passwd", "absolute path"),
        ("C:/Windows/x", "absolute path"),
        ("..\\..\\x", "backslash"),
        ("notes.txt", "unexpected file"),
        (".hidden", "unexpected file"),
        ("sub/verdict.json", "unexpected file"),
    ],
)
def test_names_outside_the_three_files_are_refused(name: str, reason: str) -> None:
    assert reason in refused(with_extra((name, b"x")))


def test_a_symbolic_link_entry_is_refused() -> None:
    link = zipfile.ZipInfo(VERDICT_NAME)
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    assert "symbolic link" in refused(zip_of([(link, b"/etc/shadow")]))


@pytest.mark.parametrize("mode", [stat.S_IFIFO, stat.S_IFCHR, stat.S_IFBLK, stat.S_IFSOCK])
def test_other_non_regular_entries_are_refused(mode: int) -> None:
    odd = zipfile.ZipInfo(VERDICT_NAME)
    odd.external_attr = (mode | 0o644) << 16
    assert "not a regular file" in refused(zip_of([(odd, VERDICT)]))


def test_a_folder_entry_is_refused() -> None:
    assert "not a regular file" in refused(with_extra(("result.bundle/", b"")))
    assert "unexpected file" in refused(with_extra(("sub/", b"")))


def test_a_duplicate_name_is_refused() -> None:
    # zipfile's own lookup would hand back the second copy: the one the manifest never saw.
    assert "twice" in refused(with_extra((regular(VERDICT_NAME), b'{"verdict": "fixed"}')))


def test_an_encrypted_or_oddly_compressed_entry_is_refused() -> None:
    data = zip_of(good_entries())
    # zipfile will not write the flag: set bit 0 (encrypted) of the general purpose flags.
    assert "encrypted" in refused(_patch_central(data, VERDICT_NAME.encode(), 8, b"\x01\x00"))
    assert read_artifact(_patch_central(data, VERDICT_NAME.encode(), 8, b"\x00\x00")).verdict
    bz = regular(VERDICT_NAME)
    bz.compress_type = zipfile.ZIP_BZIP2
    assert "compression method" in refused(zip_of([(bz, VERDICT)]))


def test_an_entry_over_its_cap_is_refused_before_it_is_inflated() -> None:
    big = b" " * (ArtifactLimits().max_verdict_bytes + 1)
    assert "over the cap" in refused(zip_of([(regular(VERDICT_NAME), big)]))
    small = ArtifactLimits(max_bundle_bytes=1000)
    assert "over the cap of 1,000" in refused(zip_of(good_entries()), small)
    # The control: the same artifact under the default caps.
    assert read_artifact(zip_of(good_entries())).bundle == BUNDLE


def test_the_total_inflated_size_is_capped() -> None:
    data = zip_of(good_entries())
    total = len(VERDICT) + len(BUNDLE) + len(manifest(FILES))
    assert "over the cap" in refused(data, ArtifactLimits(max_total_bytes=total - 1))
    assert read_artifact(data, ArtifactLimits(max_total_bytes=total)).bundle == BUNDLE


def test_a_local_header_that_names_another_file_is_refused() -> None:
    data = zip_of(good_entries())
    assert data[30 : 30 + len(VERDICT_NAME)] == VERDICT_NAME.encode()  # the first entry
    forged = data[:30] + b"verdict.jsoN" + data[30 + len(VERDICT_NAME) :]
    assert "corrupt" in refused(forged)


def test_a_high_compression_ratio_is_a_bomb() -> None:
    zeros = bytes(2 * 1024 * 1024)  # deflates about 1000 to 1
    files = {VERDICT_NAME: VERDICT, BUNDLE_NAME: zeros}
    entries: list[tuple[str | zipfile.ZipInfo, bytes]] = [
        *((regular(n), d) for n, d in files.items()),
        (regular(MANIFEST_NAME), manifest(files)),
    ]
    assert "zip bomb" in refused(zip_of(entries))
    # The control: a stored (uncompressed) copy of the same bytes has a ratio of 1.
    stored: list[tuple[str | zipfile.ZipInfo, bytes]] = []
    for info, data in entries:
        assert isinstance(info, zipfile.ZipInfo)
        info.compress_type = zipfile.ZIP_STORED
        stored.append((info, data))
    assert read_artifact(zip_of(stored)).bundle == zeros


def _patch_central(data: bytes, name: bytes, offset: int, value: bytes) -> bytes:
    """The zip with `value` written at `offset` of `name`'s central directory header (the
    local header keeps the truth): a directory that lies about an entry."""
    at = data.index(b"PK\x01\x02")
    while data[at + 46 : at + 46 + int.from_bytes(data[at + 28 : at + 30], "little")] != name:
        at = data.index(b"PK\x01\x02", at + 4)
    return data[: at + offset] + value + data[at + offset + len(value) :]


def _patch_central_size(data: bytes, name: bytes, size: int) -> bytes:
    return _patch_central(data, name, 24, size.to_bytes(4, "little"))  # uncompressed size


def test_an_entry_bigger_or_smaller_than_declared_is_refused() -> None:
    data = zip_of(good_entries())
    # Understated: inflation stops at the declared size and the CRC of the prefix is wrong.
    message = refused(_patch_central_size(data, BUNDLE_NAME.encode(), 10))
    assert "corrupt" in message or "more than" in message
    # Overstated: the stream ends before the declared size.
    message = refused(_patch_central_size(data, BUNDLE_NAME.encode(), len(BUNDLE) + 100))
    assert "corrupt" in message or "less than" in message
    # The control: the unpatched zip (and a patch that writes the true size) passes.
    assert read_artifact(_patch_central_size(data, BUNDLE_NAME.encode(), len(BUNDLE))).bundle


def test_not_a_zip_and_an_oversized_download_are_refused() -> None:
    assert "not a zip file" in refused(b"PK\x03\x04 not really")
    data = zip_of(good_entries())
    assert "over the cap" in refused(data, ArtifactLimits(max_zip_bytes=len(data) - 1))
    assert read_artifact(data, ArtifactLimits(max_zip_bytes=len(data))).verdict == VERDICT


def test_too_many_entries_are_refused_before_their_names_are_read() -> None:
    entries = [*good_entries(), *((f"x{i}", b"") for i in range(20))]
    assert "entries" in refused(zip_of(entries))


# --- a manifest that lies --------------------------------------------------------------


def _with_manifest(files: dict[str, bytes], body: bytes) -> bytes:
    return zip_of([*((regular(n), d) for n, d in files.items()), (regular(MANIFEST_NAME), body)])


FILES = {VERDICT_NAME: VERDICT, BUNDLE_NAME: BUNDLE}


def test_a_manifest_that_lies_is_refused() -> None:
    honest = json.loads(manifest(FILES))

    def lying(change: dict[str, object]) -> bytes:
        body = json.loads(json.dumps(honest))
        body["files"][BUNDLE_NAME].update(change)
        return json.dumps(body).encode()

    assert "does not match" in refused(_with_manifest(FILES, lying({"size": len(BUNDLE) - 1})))
    assert "does not match" in refused(_with_manifest(FILES, lying({"sha256": "0" * 64})))
    # It names a bundle that is not there, or leaves out one that is.
    only_verdict = {VERDICT_NAME: VERDICT}
    assert "absent" in refused(_with_manifest(only_verdict, manifest(FILES)))
    assert "leaves out result.bundle" in refused(_with_manifest(FILES, manifest(only_verdict)))
    # The control: the honest manifest.
    assert read_artifact(_with_manifest(FILES, manifest(FILES))) == Artifact(VERDICT, BUNDLE)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "not JSON"),
        (b"\xff{}", "not JSON"),
        (b"[]", "not a landbot-fix-result manifest"),
        (b'{"format": "other", "version": 1, "files": {}}', "not a landbot-fix-result"),
        (b'{"format": "landbot-fix-result", "version": 2, "files": {}}', "of version 1"),
        (
            b'{"format": "landbot-fix-result", "version": 1, "files": {"verdict.json": 3}}',
            "not an object",
        ),
    ],
)
def test_a_manifest_that_is_not_one_is_refused(body: bytes, reason: str) -> None:
    assert reason in refused(_with_manifest({VERDICT_NAME: VERDICT}, body))


def test_an_artifact_without_a_manifest_or_a_verdict_is_refused() -> None:
    assert "no manifest.json" in refused(zip_of([(regular(VERDICT_NAME), VERDICT)]))
    only_bundle = {BUNDLE_NAME: BUNDLE}
    assert "no verdict.json" in refused(_with_manifest(only_bundle, manifest(only_bundle)))


def test_a_verdict_that_is_not_utf8_is_refused() -> None:
    latin = {VERDICT_NAME: '{"summary": "caf\u00e9"}'.encode("latin-1")}
    assert "not UTF-8" in refused(_with_manifest(latin, manifest(latin)))
    utf8 = {VERDICT_NAME: '{"summary": "caf\u00e9"}'.encode()}
    assert read_artifact(_with_manifest(utf8, manifest(utf8))).verdict == utf8[VERDICT_NAME]


# --- hostile folders -------------------------------------------------------------------


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    out = tmp_path / "artifact"
    write_artifact(out, VERDICT, BUNDLE)
    assert read_artifact(out) == Artifact(VERDICT, BUNDLE)  # the control, each time
    return out


def test_a_folder_with_a_symbolic_link_is_refused(folder: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(VERDICT)
    (folder / VERDICT_NAME).unlink()
    (folder / VERDICT_NAME).symlink_to(secret)
    assert "symbolic link" in refused(folder)
    link = tmp_path / "link"
    link.symlink_to(folder)
    (folder / VERDICT_NAME).unlink()
    (folder / VERDICT_NAME).write_bytes(VERDICT)
    assert read_artifact(folder).verdict == VERDICT
    assert "cannot open the artifact folder" in refused(link)  # the folder itself a link


def test_a_folder_with_a_fifo_a_subfolder_or_a_stray_file_is_refused(folder: Path) -> None:
    (folder / BUNDLE_NAME).unlink()
    os.mkfifo(folder / BUNDLE_NAME)
    assert "not a regular file" in refused(folder)
    (folder / BUNDLE_NAME).unlink()
    (folder / BUNDLE_NAME).mkdir()
    assert "not a regular file" in refused(folder)
    (folder / BUNDLE_NAME).rmdir()
    (folder / BUNDLE_NAME).write_bytes(BUNDLE)
    assert read_artifact(folder).bundle == BUNDLE
    (folder / "stray.txt").write_text("x")
    assert "unexpected file" in refused(folder)


def test_a_folder_file_over_its_cap_is_refused(folder: Path) -> None:
    assert "over the cap of 100" in refused(folder, ArtifactLimits(max_bundle_bytes=100))


# --- the real thing: `landbot fixer run --out`, zipped, read back, imported ----------------


@pytest.fixture
def root() -> Iterator[Path]:
    require_sandbox()
    with sandbox_folder("landbot-artifact-") as path:
        yield path


def _mirror_and_checkout(root: Path) -> tuple[Path, Path, str]:
    src = root / "src"
    src.mkdir()
    git(src, "init", "-q", "-b", "main")
    (src / "app.py").write_text("ANSWER = 41\n")
    (src / "check.sh").write_text("grep -qx 'ANSWER = 42' app.py\n")
    git(src, "add", ".")
    git(src, "-c", "user.name=Dev", "-c", "user.email=dev@example.invalid", "commit", "-qm", "one")
    mirror = root / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(mirror)], check=True)
    work = root / "work"
    subprocess.run(["git", "clone", "-q", str(mirror), str(work)], check=True)
    git(work, "config", "user.name", "Runner")
    git(work, "config", "user.email", "runner@example.invalid")
    return mirror, work, git(work, "rev-parse", "HEAD")


def _fixer_run(root: Path, work: Path, out: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = root / "tools" / "agent.sh"
    script.parent.mkdir(mode=0o755, exist_ok=True)
    script.write_text("#!/bin/sh\nset -e\n" + body)
    script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANDBOT_")}
    env["LANDBOT_FIXER__COMMAND"] = json.dumps([str(script)])
    return subprocess.run(
        [LANDBOT, "fixer", "run", "--workdir", str(work), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=root,
    )


def _zip_like_upload_artifact(folder: Path) -> bytes:
    """What `actions/upload-artifact@v4` with `path: <folder>` serves: the folder's files
    at the zip's root, deflated, regular-file modes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for path in sorted(folder.iterdir()):
            archive.write(path, arcname=path.name)
    return buf.getvalue()


FIXED = {
    "verdict": "fixed",
    "summary": "set ANSWER to 42",
    "recommendation": "",
    "reproduced": True,
}
WRITE_FIXED = f"printf '%s' '{json.dumps(FIXED)}' > \"$LANDBOT_VERDICT_FILE\"\n"


def test_fixer_run_out_round_trips_into_the_mirror(root: Path) -> None:
    mirror, work, head = _mirror_and_checkout(root)
    out = root / "out"
    done = _fixer_run(
        root,
        work,
        out,
        "echo 'ANSWER = 42' > app.py\nsh check.sh\ngit commit -qam 'Set the answer'\n"
        + WRITE_FIXED,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == FIXED  # stdout unchanged by --out
    tip = git(work, "rev-parse", "HEAD")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [BUNDLE_NAME, MANIFEST_NAME, VERDICT_NAME]
    )

    verdict, bundle = read_artifact(_zip_like_upload_artifact(out))
    assert json.loads(verdict) == FIXED
    assert bundle is not None
    header = parse_bundle(bundle)
    assert header.tip == tip and header.prerequisites == (head,)
    # The commit is not in the mirror until the quarantine promotes it.
    missing = subprocess.run(
        ["git", f"--git-dir={mirror}", "cat-file", "-e", tip], capture_output=True
    )
    assert missing.returncode != 0
    with Quarantine(mirror, root / "mirror.lock") as q:
        assert take_bundle(bundle, q, {head}) == tip
        q.promote("refs/landbot/jobs/1")
    assert git(mirror, "rev-parse", "refs/landbot/jobs/1") == tip
    assert git(mirror, "log", "-1", "--format=%P %s", tip) == f"{head} Set the answer"


def test_fixer_run_out_of_a_conflict_carries_the_merge(root: Path) -> None:
    mirror, work, _ = _mirror_and_checkout(root)
    base, head = diverge(work)
    git(work, "push", "-q", "origin", "main", "feature")  # the mirror holds both sides
    assert subprocess.run(["git", "merge", "-q", "main"], cwd=work, capture_output=True).returncode
    out = root / "out"
    done = _fixer_run(
        root,
        work,
        out,
        "echo 'ANSWER = 42' > app.py\ngit add app.py\ngit commit -q --no-edit\n" + WRITE_FIXED,
    )
    assert done.returncode == 0, done.stderr
    _, bundle = read_artifact(_zip_like_upload_artifact(out))
    assert bundle is not None
    assert set(parse_bundle(bundle).prerequisites) == {head, base}
    with Quarantine(mirror, root / "mirror.lock") as q:
        tip = take_bundle(bundle, q, {head, base})
        q.promote("refs/landbot/jobs/2")
    assert git(mirror, "log", "-1", "--format=%P", tip).split() == [head, base]
    # The control: the same bundle, with only the head known, builds on a foreign commit.
    with Quarantine(mirror, root / "mirror.lock") as q, pytest.raises(ResultRefused):
        take_bundle(bundle, q, {head})


def test_fixer_run_out_without_a_commit_has_no_bundle(root: Path) -> None:
    mirror, work, head = _mirror_and_checkout(root)
    out = root / "out"
    needs = {"verdict": "needs_human", "summary": "cannot tell", "reproduced": False}
    done = _fixer_run(
        root, work, out, f"printf '%s' '{json.dumps(needs)}' > \"$LANDBOT_VERDICT_FILE\"\n"
    )
    assert done.returncode == 0, done.stderr
    assert "no commits in the artifact" in done.stderr
    verdict, bundle = read_artifact(_zip_like_upload_artifact(out))
    assert json.loads(verdict)["verdict"] == "needs_human" and bundle is None
    # The control: a quarantine refuses the same "no commit" a local job would.
    with Quarantine(mirror, root / "mirror.lock") as q, pytest.raises(ResultRefused):
        take_bundle(b"# v2 git bundle\n", q, {head})


def test_fixer_run_refuses_an_out_folder_that_holds_something(root: Path) -> None:
    _, work, _ = _mirror_and_checkout(root)
    out = root / "out"
    out.mkdir()
    (out / "stray").write_text("x")
    done = _fixer_run(root, work, out, "exit 9\n")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "not empty" in done.stderr
    assert done.stdout == ""  # refused before the job
    inside = _fixer_run(root, work, work / "out", "exit 9\n")
    assert inside.returncode == 2 and "inside the work tree" in inside.stderr
    assert not (work / "out").exists()
