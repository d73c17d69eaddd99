"""The sandbox's seccomp filter: kernel surfaces a build never needs, denied (libseccomp).

Allow by default, and answer EPERM to: the key management calls (a job must not reach any
keyring), io_uring (its own path around most syscall filtering), bpf, perf_event_open,
userfaultfd (exploit primitives), ptrace and process_vm_* (other processes' memory),
kexec and kernel modules, every mount call of the old and the new mount API, unshare,
setns and clone with a CLONE_NEW* flag (no namespace of the job's own: the sandbox's are the
only ones), swap, reboot, acct, the file-handle calls (open a file by inode, around the
mount allowlist), the kernel log (host addresses, other tenants' messages), TIOCSTI and
TIOCLINUX (type into a terminal), personality flags that switch off ASLR or map page zero,
and sockets of families a build never uses (AF_VSOCK reaches the hypervisor whatever the
network namespace; AF_ALG, AF_TIPC, AF_RDS... are kernel attack surface). clone3 gets ENOSYS
instead, so glibc falls back to clone, whose flags a filter can read (clone3 passes them in
memory, which seccomp cannot inspect).

The 32-bit compat architecture of the host (x86 and x32 on x86_64, arm on aarch64) carries
the same rules, so a 32-bit binary cannot call what the 64-bit one may not; any other
architecture is killed (libseccomp's default for a foreign arch).

The compiled program (classic BPF, as `bwrap --seccomp FD` wants it) is built once per
process through ctypes and cached.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import platform
import tempfile
from functools import cache

from landbot.errors import LandbotError

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_ACT_ERRNO_BASE = 0x00050000
SCMP_CMP_MASKED_EQ = 7
SCMP_CMP_GE = 5
SCMP_CMP_EQ = 4

ARCH_X86 = 0x40000003  # AUDIT_ARCH_I386
ARCH_X32 = 0x4000003E  # AUDIT_ARCH_X86_64 with the x32 ABI flag, as libseccomp spells it
ARCH_ARM = 0x40000028  # AUDIT_ARCH_ARM
COMPAT_ARCHES = {"x86_64": (ARCH_X86, ARCH_X32), "aarch64": (ARCH_ARM,)}

# Denied outright (EPERM). Names unknown to the host's libseccomp are skipped.
DENIED = (
    # keyrings
    "keyctl",
    "add_key",
    "request_key",
    # io_uring, eBPF, perf, userfaultfd
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    # other processes
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "pidfd_getfd",
    # the kernel itself
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "query_module",
    "get_kernel_syms",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "syslog",
    "quotactl",
    "quotactl_fd",
    "lookup_dcookie",
    "nfsservctl",
    "vhangup",
    "iopl",
    "ioperm",
    "uselib",
    "fanotify_init",
    # mounts and namespaces
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    # files by handle: around the mount allowlist
    "open_by_handle_at",
    "name_to_handle_at",
)

CLONE_NEW_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
TIOCSTI = 0x5412
TIOCLINUX = 0x541C
# personality(2) flags: ADDR_NO_RANDOMIZE, MMAP_PAGE_ZERO, READ_IMPLIES_EXEC. (The query
# form personality(0xffffffff) has them all set and is refused too; nothing a build runs
# asks for it.)
PERSONALITY_FLAGS = (0x0040000, 0x0100000, 0x0400000)
# Socket families a build uses: AF_UNIX, AF_INET, AF_INET6, AF_NETLINK (getifaddrs).
ALLOWED_FAMILIES = (1, 2, 10, 16)
HIGHEST_FAMILY = 64


class SeccompUnavailable(LandbotError):
    """libseccomp is missing or refused the filter; the message names the fix."""


class _Arg(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


def _load() -> ctypes.CDLL:
    try:
        # The soname first: find_library runs `ldconfig -p`, which costs milliseconds.
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError:
        found = ctypes.util.find_library("seccomp")
        if found is not None:
            return _configure(ctypes.CDLL(found, use_errno=True))
        raise SeccompUnavailable(
            "libseccomp is not installed: install it with `apt-get install libseccomp2`; "
            "the fixer never runs a job without its seccomp filter"
        ) from None
    return _configure(lib)


def _configure(lib: ctypes.CDLL) -> ctypes.CDLL:
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_arch_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.seccomp_arch_exist.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_Arg),
    ]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return lib


def _errno_action(code: int) -> int:
    return SCMP_ACT_ERRNO_BASE | (code & 0xFFFF)


def _add(
    lib: ctypes.CDLL, ctx: int, action: int, name: str, *args: tuple[int, int, int, int]
) -> None:
    nr = lib.seccomp_syscall_resolve_name(name.encode())
    if nr == -1:  # __NR_SCMP_ERROR: this libseccomp does not know the name at all
        return
    arr = (_Arg * max(len(args), 1))(*(_Arg(*a) for a in args))
    rc = lib.seccomp_rule_add_array(ctx, action, nr, len(args), arr)
    if rc < 0:
        raise SeccompUnavailable(
            f"libseccomp refused the rule for {name}: {os.strerror(-rc)}; "
            "upgrade libseccomp2 (2.5 or later)"
        )


def _rules(lib: ctypes.CDLL, ctx: int) -> None:
    eperm = _errno_action(errno.EPERM)
    for name in DENIED:
        _add(lib, ctx, eperm, name)
    _add(lib, ctx, _errno_action(errno.ENOSYS), "clone3")
    for flag in CLONE_NEW_FLAGS.values():
        _add(lib, ctx, eperm, "clone", (0, SCMP_CMP_MASKED_EQ, flag, flag))
    for cmd in (TIOCSTI, TIOCLINUX):
        # The kernel reads the request as 32 bits: compare only those, so high bits set by
        # the caller do not slip past.
        _add(lib, ctx, eperm, "ioctl", (1, SCMP_CMP_MASKED_EQ, 0xFFFFFFFF, cmd))
    for flag in PERSONALITY_FLAGS:
        _add(lib, ctx, eperm, "personality", (0, SCMP_CMP_MASKED_EQ, flag, flag))
    afnosupport = _errno_action(errno.EAFNOSUPPORT)
    for family in range(HIGHEST_FAMILY):
        if family not in ALLOWED_FAMILIES:
            _add(lib, ctx, afnosupport, "socket", (0, SCMP_CMP_EQ, family, 0))
    _add(lib, ctx, afnosupport, "socket", (0, SCMP_CMP_GE, HIGHEST_FAMILY, 0))


@cache
def filter_program() -> bytes:
    """The compiled filter (classic BPF), or SeccompUnavailable naming the fix."""
    lib = _load()
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        raise SeccompUnavailable("libseccomp could not start a filter; reinstall libseccomp2")
    try:
        for arch in COMPAT_ARCHES.get(platform.machine(), ()):
            rc = lib.seccomp_arch_add(ctx, arch)
            if rc < 0 and rc != -errno.EEXIST:
                raise SeccompUnavailable(
                    f"libseccomp cannot filter the compat architecture {arch:#x}: "
                    f"{os.strerror(-rc)}; upgrade libseccomp2"
                )
        _rules(lib, ctx)
        with tempfile.TemporaryFile() as out:
            rc = lib.seccomp_export_bpf(ctx, out.fileno())
            if rc < 0:
                raise SeccompUnavailable(
                    f"libseccomp could not export the filter: {os.strerror(-rc)}"
                )
            out.seek(0)
            return out.read()
    finally:
        lib.seccomp_release(ctx)


def program_fd() -> int:
    """A fresh file descriptor holding the filter, positioned at its start, for
    `bwrap --seccomp FD` (bwrap reads it to the end). The caller closes it."""
    program = filter_program()
    fd = os.memfd_create("landbot-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd
