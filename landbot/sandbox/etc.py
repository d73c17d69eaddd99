"""The sandbox's `/etc`: an allowlist of the host's entries plus a few generated files.

All of the host's `/etc` would show every world-readable file there: an App key or a
config file an operator keeps in `/etc/landbot`, a `pip.conf` or `.npmrc` with an index
password, a `gitconfig` with a token in an `insteadOf` URL, the host's DNS servers. So the
job sees only what a toolchain reads (each entry says why), what the operator adds
(`[sandbox] etc`), and files written for the sandbox:

- `passwd`, `group`: root, the sandbox user (`landbot`) and nobody, so `id`, `whoami`, git
  and ssh-style tools find a name and a home; never the host's accounts;
- `hosts`, `hostname`: localhost and the sandbox's own name only;
- `nsswitch.conf`: files only (the host's may name LDAP or sssd, which would reach sockets
  the job must not have), so `getent passwd` answers without any resolver.

Left out on purpose: `resolv.conf` (there is no network inside but the proxy, which
resolves names itself; glibc without it asks 127.0.0.1, the sandbox's own loopback, and is
refused at once), `shadow`/`gshadow`, `ssl/private` (the host's TLS keys), `machine-id` (a
host fingerprint), and the package-manager files that can hold credentials (`pip.conf`,
`npmrc`, `maven/`, `gitconfig`, `wgetrc`): an operator who needs one lists it.

Pure code but for `plan_etc`, which looks at the host's `/etc`.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from landbot.errors import LandbotError
from landbot.sandbox.env import SANDBOX_HOME

ETC = "/etc"
SANDBOX_USER = "landbot"
SANDBOX_HOSTNAME = "landbot-sandbox"

# name (a glob under /etc) -> why a build needs it
ALLOWED: dict[str, str] = {
    "ld.so.cache": "the dynamic linker's library index",
    "ld.so.conf": "the dynamic linker's search path",
    "ld.so.conf.d": "the dynamic linker's search path",
    "ssl/certs": "TLS trust anchors (curl, git, pip, npm through the proxy)",
    "ssl/openssl.cnf": "OpenSSL's defaults (without it some tools refuse TLS)",
    "ca-certificates": "the CA bundle's local additions",
    "ca-certificates.conf": "which CAs the bundle holds",
    "alternatives": "Debian's /usr/bin links (java, editor, cc...) go through it",
    "localtime": "the time zone (a symlink into /usr/share/zoneinfo)",
    "timezone": "the time zone's name",
    "host.conf": "resolver options for /etc/hosts",
    "gai.conf": "address ordering of getaddrinfo",
    "protocols": "getprotobyname (Python's socket module, git)",
    "services": "getservbyname (port names in URLs and tools)",
    "networks": "getnetbyname",
    "ethertypes": "ethertype names some tools print",
    "mime.types": "Python's mimetypes and web tooling",
    "magic": "file(1)'s local magic",
    "magic.mime": "file(1)'s local magic",
    "os-release": "distribution detection (pip, node-gyp, rustup)",
    "debian_version": "distribution detection",
    "locale.alias": "locale names",
    "python3": "Debian's python3 configuration",
    "python3.*": "Debian's sitecustomize, which python3 imports at start",
    "java-*-openjdk": "the JDK's configuration (Debian keeps its security files here)",
    "mtab": "df and mount listings (a symlink to /proc/mounts)",
}

GENERATED = ("passwd", "group", "hosts", "hostname", "nsswitch.conf")


@dataclass(frozen=True)
class EtcEntry:
    path: str  # inside the sandbox, under /etc
    source: str  # on the host
    symlink: str | None = None  # the link's target when the host entry is a symlink


@dataclass(frozen=True)
class EtcPlan:
    entries: tuple[EtcEntry, ...]  # host entries bound read-only (or recreated as links)
    files: tuple[tuple[str, bytes], ...]  # (absolute path, content) written for the job


def check_name(name: str) -> None:
    """Refuse an operator's `[sandbox] etc` entry that is not a plain name under /etc."""
    if (
        not name
        or name.startswith("/")
        or posixpath.normpath(name) != name
        or name.split("/")[0] == ".."
        or "\0" in name
    ):
        raise LandbotError(
            f"[sandbox] etc entry {name!r} must be a name under /etc, e.g. 'pip.conf'"
        )
    if name in GENERATED:
        raise LandbotError(
            f"[sandbox] etc entry {name!r} is generated for the sandbox; remove it from the list"
        )


def passwd(uid: int, gid: int) -> str:
    lines = ["root:x:0:0:root:/root:/usr/sbin/nologin"]
    lines.append(f"{SANDBOX_USER}:x:{uid}:{gid}:landbot sandbox:{SANDBOX_HOME}:/bin/sh")
    if uid != 65534:
        lines.append("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin")
    return "\n".join(lines) + "\n"


def group(gid: int) -> str:
    lines = ["root:x:0:", f"{SANDBOX_USER}:x:{gid}:"]
    if gid != 65534:
        lines.append("nogroup:x:65534:")
    return "\n".join(lines) + "\n"


NSSWITCH = (
    "".join(
        f"{db}: files\n"
        for db in (
            "passwd",
            "group",
            "shadow",
            "networks",
            "protocols",
            "services",
            "ethers",
            "rpc",
        )
    )
    + "hosts: files dns\n"
)
HOSTS = f"127.0.0.1\tlocalhost {SANDBOX_HOSTNAME}\n::1\tlocalhost ip6-localhost ip6-loopback\n"


def generated_files(uid: int, gid: int) -> tuple[tuple[str, bytes], ...]:
    texts = {
        "passwd": passwd(uid, gid),
        "group": group(gid),
        "hosts": HOSTS,
        "hostname": SANDBOX_HOSTNAME + "\n",
        "nsswitch.conf": NSSWITCH,
    }
    return tuple((f"{ETC}/{name}", texts[name].encode()) for name in GENERATED)


def plan_etc(extra: Sequence[str], uid: int, gid: int, *, etc: str = ETC) -> EtcPlan:
    """The entries of the host's `etc` folder the sandbox shows (those absent are skipped;
    an operator's entry that is absent is an error), and the generated files."""
    for name in extra:
        check_name(name)
    try:
        present = sorted(os.listdir(etc))
    except OSError:
        present = []
    names: list[str] = []
    for pattern in ALLOWED:
        top, _, rest = pattern.partition("/")
        for entry in fnmatch.filter(present, top):
            name = f"{entry}/{rest}" if rest else entry
            if os.path.lexists(f"{etc}/{name}"):
                names.append(name)
    for name in extra:
        if not os.path.lexists(f"{etc}/{name}"):
            raise LandbotError(
                f"[sandbox] etc entry {name!r} does not exist under {etc}; fix the list"
            )
        names.append(name)
    entries: list[EtcEntry] = []
    seen: set[str] = set()
    for name in names:
        if name in seen:
            continue
        seen.add(name)
        host = f"{etc}/{name}"
        target = f"{ETC}/{name}"
        if os.path.islink(host):
            # Recreated as the same link: it shows only what its target shows inside.
            entries.append(EtcEntry(target, host, os.readlink(host)))
        else:
            entries.append(EtcEntry(target, host))
    return EtcPlan(entries=tuple(entries), files=generated_files(uid, gid))
