"""Make one folder a copy of another: run INSIDE the sandbox, as the sandbox uid.

    python3 -I -S -c SOURCE SRC DST BUDGET_BYTES SKIP...

disk.py runs it twice around a job on a capped work tree: the operator's folder onto the
job's own file system before, and the job's tree back onto the operator's folder after.
Both trees can hold what a job wrote, so it runs with the job's own rights (the sandbox
uid, in the sandbox, SRC read-only) and follows no link: every step is relative to an
open folder, a symbolic link is copied as a link, FIFOs, sockets and devices are skipped.

DST becomes SRC: what differs (type, size, mtime, mode) is rewritten (into a temporary
name, then renamed over), what DST has and SRC has not is removed, except the relative
paths in SKIP (the operator's `.git/config` and `.git/hooks`, read-only to the job). A
first pass only adds up the bytes to write: over BUDGET (the disk cap; hard links and
sparse files count in full) nothing is written and it exits 4. Setuid and setgid bits are
not copied. Exit 0 done, 3 failed, 4 over budget; one line on stderr says why.

Standard library only: the sandbox's /usr/bin/python3 runs it with -I -S.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import sys

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
TMP_PREFIX = ".landbot-copy-"


class OverBudget(Exception):
    pass


def _mode(st: os.stat_result) -> int:
    return stat.S_IMODE(st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID)


def _entries(fd: int | None) -> dict[str, os.stat_result]:
    if fd is None:
        return {}
    with os.scandir(fd) as it:
        return {e.name: e.stat(follow_symlinks=False) for e in it}


def _remove(dir_fd: int, name: str, st: os.stat_result) -> None:
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)  # by descriptor: follows no link
    else:
        os.unlink(name, dir_fd=dir_fd)


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (
        stat.S_ISREG(b.st_mode)
        and a.st_size == b.st_size
        and a.st_mtime_ns == b.st_mtime_ns
        and _mode(a) == _mode(b)
    )


def _copy_file(src_fd: int, dst_fd: int, name: str, st: os.stat_result) -> None:
    fd_in = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=src_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd_in).st_mode):
            return  # swapped since the listing: not ours to copy
        # A random name, retried when taken: a name made from the file's own could be one
        # the tree holds (`.landbot-copy-foo` beside `foo`), failing the copy part-way.
        while True:
            tmp = TMP_PREFIX + secrets.token_hex(8)
            try:
                fd_out = os.open(
                    tmp,
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                    0o600,
                    dir_fd=dst_fd,
                )
                break
            except FileExistsError:
                continue
        try:
            offset = 0
            while True:
                sent = os.sendfile(fd_out, fd_in, offset, 1 << 24)
                if sent == 0:
                    break
                offset += sent
            os.fchmod(fd_out, _mode(st))
            os.utime(fd_out, ns=(st.st_atime_ns, st.st_mtime_ns))
        except BaseException:
            os.close(fd_out)
            os.unlink(tmp, dir_fd=dst_fd)
            raise
        os.close(fd_out)
        os.rename(tmp, name, src_dir_fd=dst_fd, dst_dir_fd=dst_fd)
    finally:
        os.close(fd_in)


class Sync:
    def __init__(self, budget: int, skip: set[str]) -> None:
        self.budget = budget
        self.skip = skip
        self.planned = 0  # bytes the first pass found to write

    def run(self, src_fd: int, dst_fd: int | None, rel: str, write: bool) -> None:
        src = _entries(src_fd)
        dst = _entries(dst_fd)
        if write:
            assert dst_fd is not None
            for name, st in dst.items():
                # A FIFO, socket or device of DST was never copied: not a deletion.
                plain = stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)
                plain = plain or stat.S_ISLNK(st.st_mode)
                if name not in src and rel + name not in self.skip and plain:
                    _remove(dst_fd, name, st)
        for name in sorted(src):
            st = src[name]
            path = rel + name
            if path in self.skip:  # an operator's `.landbot-copy-*` is copied as any file
                continue
            old = dst.get(name)
            if stat.S_ISDIR(st.st_mode):
                self._dir(src_fd, dst_fd, name, st, old, path, write)
            elif stat.S_ISLNK(st.st_mode):
                target = os.readlink(name, dir_fd=src_fd)
                if (
                    old is not None
                    and stat.S_ISLNK(old.st_mode)
                    and dst_fd is not None
                    and os.readlink(name, dir_fd=dst_fd) == target
                ):
                    continue
                if write:
                    assert dst_fd is not None
                    if old is not None:
                        _remove(dst_fd, name, old)
                    os.symlink(target, name, dir_fd=dst_fd)
            elif stat.S_ISREG(st.st_mode):
                if old is not None and _same_file(st, old):
                    continue
                if not write:
                    self.planned += st.st_size
                    if self.planned > self.budget:
                        raise OverBudget(path)
                    continue
                assert dst_fd is not None
                if old is not None and stat.S_ISDIR(old.st_mode):
                    _remove(dst_fd, name, old)
                _copy_file(src_fd, dst_fd, name, st)
            # FIFOs, sockets, devices: skipped (a job's FIFO would block a reader)

    def _dir(
        self,
        src_fd: int,
        dst_fd: int | None,
        name: str,
        st: os.stat_result,
        old: os.stat_result | None,
        path: str,
        write: bool,
    ) -> None:
        if old is not None and not stat.S_ISDIR(old.st_mode):
            if write:
                assert dst_fd is not None
                _remove(dst_fd, name, old)
            old = None
        if write and old is None:
            assert dst_fd is not None
            os.mkdir(name, 0o700, dir_fd=dst_fd)
        child_src = os.open(name, DIR_FLAGS, dir_fd=src_fd)
        child_dst: int | None = None
        try:
            if dst_fd is not None and (write or old is not None):
                child_dst = os.open(name, DIR_FLAGS, dir_fd=dst_fd)
            self.run(child_src, child_dst, path + "/", write)
            if write and child_dst is not None:
                os.fchmod(child_dst, _mode(st))
        finally:
            os.close(child_src)
            if child_dst is not None:
                os.close(child_dst)


def main(argv: list[str]) -> int:
    src, dst, budget = argv[0], argv[1], int(argv[2])
    sync = Sync(budget, set(argv[3:]))
    try:
        src_fd = os.open(src, DIR_FLAGS)
        dst_fd = os.open(dst, DIR_FLAGS)
        try:
            sync.run(src_fd, dst_fd, "", write=False)
            sync.run(src_fd, dst_fd, "", write=True)
            os.fchmod(dst_fd, _mode(os.fstat(src_fd)))
        finally:
            os.close(src_fd)
            os.close(dst_fd)
    except OverBudget as exc:
        print(
            f"over {budget >> 20} MB to copy (hard links and sparse files count in full), "
            f"at {exc.args[0]!r}",
            file=sys.stderr,
        )
        return 4
    except OSError as exc:
        where = exc.filename if exc.filename is not None else ""
        print(f"{exc.strerror or exc} {where!r}".strip(), file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
