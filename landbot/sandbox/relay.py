"""The relay that runs INSIDE the sandbox: 127.0.0.1:PORT -> the proxy's unix socket.

The sandbox has a network namespace of its own with only `lo`, so an agent that wants
`http://127.0.0.1:PORT` gets this relay, which copies bytes to the host-side proxy through
the bound unix socket; the proxy decides what may pass. It is run by the sandbox's
`/usr/bin/python3 -I -S -c <this file's text> PORT SOCKET -- CMD...`: it listens first (so
the command never races it), forks the relay away (reparented to the sandbox's init, so it
is not a child the command might wait for), then execs the command. The relay dies with
the sandbox. Standard library only, no landbot imports: it runs on the system Python.
"""

import contextlib
import os
import socket
import sys
import threading


def _pump(src: socket.socket, dst: socket.socket, done: threading.Semaphore) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)
    if not done.acquire(blocking=False):  # the second pump to finish closes both
        src.close()
        dst.close()


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            conn.close()
            upstream.close()
            continue
        done = threading.Semaphore(1)
        for a, b in ((conn, upstream), (upstream, conn)):
            threading.Thread(target=_pump, args=(a, b, done), daemon=True).start()


def main(argv: list[str]) -> None:
    port, path, sep, command = int(argv[0]), argv[1], argv[2], argv[3:]
    if sep != "--" or not command:
        sys.stderr.write("landbot relay: usage: PORT SOCKET -- CMD...\n")
        os._exit(2)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    child = os.fork()
    if child == 0:
        if os.fork() == 0:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)  # never hold the job's output pipes open
            _serve(listener, path)
        os._exit(0)
    os.waitpid(child, 0)
    listener.close()
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"landbot: cannot run {command[0]}: {exc.strerror}\n")
        os._exit(127 if isinstance(exc, FileNotFoundError) else 126)


if __name__ == "__main__":
    main(sys.argv[1:])
