"""conftest.py — fixtures of the Python suite (run by tests/test_python.sh): where the spade binary
and the source tree are, clients on a fresh `spade serve --stdio`, and a socket server.
Not a test itself."""
import os
import socket
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRCDIR, "python"))

import spade  # noqa: E402


def spade_bin():
    b = os.environ.get("SPADE_BIN") or os.path.join(SRCDIR, "spade")
    if not os.path.exists(b):
        pytest.skip(f"no spade binary at {b} (build it, or set SPADE_BIN)")
    return b


def stdenv_names():
    d = os.path.join(SRCDIR, "stdenv")
    return sorted(f[:-2] for f in os.listdir(d) if f.endswith(".c"))


@pytest.fixture
def client():
    c = spade.Client(spade_bin=spade_bin())
    yield c
    c.close()


class SocketServer:
    """`spade serve --listen ADDR` in the background; stopped with SIGTERM."""

    def __init__(self, addr, *extra):
        self.proc = subprocess.Popen([spade_bin(), "serve", "--listen", addr, *extra], stdout=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline().strip()
        assert line.startswith("listening on "), line
        self.address = line[len("listening on "):]

    def connect(self):
        return spade.Client(self.address)

    def raw_socket(self):
        if self.address.startswith("unix:"):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(self.address[5:])
        else:
            host, _, port = self.address[4:].rpartition(":")
            s = socket.create_connection((host.strip("[]"), int(port)))
        return s

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def tcp_server():
    s = SocketServer("tcp:127.0.0.1:0")
    yield s
    s.stop()


@pytest.fixture
def unix_server(tmp_path):
    s = SocketServer(f"unix:{tmp_path}/spade.sock")
    yield s
    s.stop()


def children(pid):
    """Direct children of pid, from /proc."""
    out = []
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/children") as f:
                out += [int(x) for x in f.read().split()]
        except FileNotFoundError:
            pass
    return out


def wait_for(pred, timeout=60.0):
    """Polls pred until it holds; the bound is for a loaded machine (it returns as soon as pred does)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()
