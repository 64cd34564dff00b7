"""_client.py — the connection to a spade server (docs/protocol.md).

What it is: one JSON request line out, one JSON response line back, under a lock, over the pipes of
a `spade serve --stdio` child process (the default) or over a Unix or TCP socket of a server someone
started with `spade serve --listen` (with the server's shared token when it asks for one). Error
responses become Python exceptions; a connection that breaks is :class:`ConnectionLost`.
What it is not: the Gymnasium layer (env.py, vector.py).
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import shutil
import socket
import subprocess
import threading
from typing import Any, Dict, List, Optional

PROTOCOL_VERSION = 1


class SpadeError(Exception):
    """A request the server refused: ``code`` is the protocol's error code (``bad_json``,
    ``unknown_op``, ``missing_field``, ``wrong_type``, ``bad_value``, ``unknown_handle``,
    ``line_too_long``, ``limit``, ``not_found``, ``bad_params``, ``env_failure``, ``internal``),
    ``field`` the request field it names (or None)."""

    def __init__(self, code: str, message: str, field: Optional[str] = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field


class ConnectionLost(SpadeError):
    """The connection to the server broke (the server exited, was killed, or the network failed):
    code ``internal``. A vector env made with ``servers=`` reconnects on it (see vector.py)."""


class ServerGone(SpadeError):
    """A server that could not be reached again within the retries (code ``unavailable``): the
    message names its address, the tries and how long they took."""

    def __init__(self, address: str, message: str):
        super().__init__("unavailable", message)
        self.address = address


def tcp_address(server: str) -> str:
    """``"host:port"`` (or ``"[v6]:port"``) as the ``"tcp:host:port"`` address a Client takes; an address
    that already names its transport (``tcp:``, ``unix:``) is returned as it is."""
    if server.startswith(("tcp:", "unix:")):
        return server
    host, sep, port = server.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"server {server!r}: expected HOST:PORT (or tcp:HOST:PORT, unix:PATH)")
    return "tcp:" + server


class EnvFailure(SpadeError):
    """The environment itself failed, classified by the sandbox: ``outcome`` is one of
    ``compile_error``, ``link_error``, ``invalid_env``, ``timeout``, ``crash``,
    ``forbidden_syscall``, ``out_of_memory``, ``protocol_violation``, ``output_too_large``,
    ``bad_call``, ``internal_error``; ``line`` is the source line of a compile error (or None);
    ``signal`` the signal that killed the worker (or None)."""

    def __init__(self, failure: Dict[str, Any], message: Optional[str] = None):
        self.failure = dict(failure)
        self.outcome: str = str(failure.get("outcome", "internal_error"))
        self.line: Optional[int] = failure.get("line")
        self.signal: Optional[int] = failure.get("signal")
        super().__init__("env_failure", message or f"{self.outcome}: {failure.get('message', '')}")


class CompileError(EnvFailure):
    """The source did not compile, link or validate (outcome ``compile_error``, ``link_error`` or
    ``invalid_env``); ``line`` is the line tcc named, when it named one."""


def failure_error(failure: Dict[str, Any], message: Optional[str] = None) -> EnvFailure:
    if failure.get("outcome") in ("compile_error", "link_error", "invalid_env"):
        return CompileError(failure, message)
    return EnvFailure(failure, message)


def _tree_candidates() -> List[str]:
    """Where a built source tree keeps `./spade`: the current directory and those above it, then
    the tree this package sits in (python/spade/ inside it, as `pip install -e ./python` leaves it)."""
    seen: List[str] = []
    d = os.getcwd()
    while True:
        seen.append(os.path.join(d, "spade"))
        up = os.path.dirname(d)
        if up == d:
            break
        d = up
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    mine = os.path.join(here, "spade")
    if mine not in seen:
        seen.append(mine)
    return seen


def find_spade_binary() -> str:
    """$SPADE_BIN, else `spade` on PATH, else the `./spade` of a built tree (see _tree_candidates)."""
    b = os.environ.get("SPADE_BIN")
    if b:
        return b
    found = shutil.which("spade")
    if found:
        return found
    tried = _tree_candidates()
    for c in tried:
        if os.path.isfile(c) and os.access(c, os.X_OK):  # python/spade, the package, is a directory
            return c
    raise FileNotFoundError("no spade binary: $SPADE_BIN is unset, `spade` is not on PATH, and none of "
                            + ", ".join(tried[:3] + (["..."] if len(tried) > 4 else []) + tried[-1:])
                            + " is an executable file; set SPADE_BIN to the path of `spade`, put it on PATH, "
                            "or run from the built source tree")


class Client:
    """A connection to one spade server. ``address`` None starts ``spade serve --stdio`` as a child
    process (``spade_bin`` or :func:`find_spade_binary`); ``"unix:PATH"`` or ``"tcp:HOST:PORT"``
    connects to a running ``spade serve --listen``. ``token`` is the server's shared token
    (``--token-file``/``--token-env``), sent in the first hello. ``timeout`` bounds connecting (seconds).
    Thread-safe: requests are serialized."""

    def __init__(self, address: Optional[str] = None, *, spade_bin: Optional[str] = None,
                 args: Optional[List[str]] = None, cwd: Optional[str] = None, token: Optional[str] = None,
                 timeout: float = 30.0):
        self._lock = threading.Lock()
        self._proc: Optional[subprocess.Popen[bytes]] = None
        self._sock: Optional[socket.socket] = None
        self.address = address
        if address is None:
            cmd = [spade_bin or find_spade_binary(), "serve", "--stdio"] + list(args or [])
            # big buffers: a batch's response is tens of KiB, read in one go rather than 8 KiB at a time
            self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd,
                                          bufsize=1 << 20)
            assert self._proc.stdin is not None and self._proc.stdout is not None
            for pipe in (self._proc.stdin, self._proc.stdout):
                try:  # Linux: a pipe that holds a whole response lets the server write it at once
                    fcntl.fcntl(pipe.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
                except OSError:
                    pass
            self._w = self._proc.stdin
            self._r = self._proc.stdout
        elif address.startswith("unix:"):
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._sock.settimeout(timeout)
            self._sock.connect(address[5:])
            self._sock.settimeout(None)
            self._r = self._sock.makefile("rb")
            self._w = self._sock.makefile("wb")
        elif address.startswith("tcp:"):
            host, _, port = address[4:].rpartition(":")
            host = host.strip("[]")
            self._sock = socket.create_connection((host, int(port)), timeout=timeout)
            self._sock.settimeout(None)
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._r = self._sock.makefile("rb")
            self._w = self._sock.makefile("wb")
        else:
            raise ValueError(f"address {address!r}: expected None, 'unix:PATH' or 'tcp:HOST:PORT'")
        self._closed = False
        self._deferred: List[int] = []
        try:
            self.hello = self.request("hello", **({"token": token} if token is not None else {}))
        except SpadeError:
            self.close()  # refused (a wrong token: the server has closed its end) or gone
            raise
        if self.hello.get("protocol") != PROTOCOL_VERSION:
            raise SpadeError("internal", f"server speaks protocol {self.hello.get('protocol')}, "
                                         f"this package {PROTOCOL_VERSION}")

    @property
    def pid(self) -> Optional[int]:
        """The server's process id when this client started it."""
        return self._proc.pid if self._proc else None

    def request(self, op: str, **fields: Any) -> Dict[str, Any]:
        """Sends one request and returns the response object; raises SpadeError (EnvFailure for an
        environment's own failure) when the response says ``"ok": false``."""
        while self._deferred:
            h = self._deferred.pop()
            try:
                self._request("close", env=h)
            except SpadeError:
                pass
        return self._request(op, **fields)

    def defer_close(self, handle: int) -> None:
        """Closes handle with the next request (from a finalizer, which must not take the lock: it
        may run inside a request of this very thread)."""
        self._deferred.append(handle)

    def request_line(self, line: bytes) -> Dict[str, Any]:
        """request() for a request already encoded (one JSON object and its newline)."""
        if self._deferred:
            self.request("hello")
        return self._checked(self.raw(line))

    def _request(self, op: str, **fields: Any) -> Dict[str, Any]:
        fields["op"] = op
        line = json.dumps(fields, separators=(",", ":")).encode() + b"\n"
        return self._checked(self.raw(line))

    @staticmethod
    def _checked(resp: Dict[str, Any]) -> Dict[str, Any]:
        if not resp.get("ok"):
            err = resp.get("error") or {}
            if err.get("code") == "env_failure" and "failure" in err:
                raise failure_error(err["failure"], err.get("message"))
            raise SpadeError(str(err.get("code", "internal")), str(err.get("message", "")), err.get("field"))
        return resp

    def raw(self, line: bytes) -> Dict[str, Any]:
        """Sends bytes that must end with a newline, returns the parsed response (tests)."""
        with self._lock:
            if self._closed:
                raise SpadeError("internal", "the client is closed")
            try:
                self._w.write(line)
                self._w.flush()
                got = self._r.readline()
            except (BrokenPipeError, ConnectionError, ValueError) as e:  # ValueError: a file closed under us
                raise ConnectionLost("internal", f"{self._where()}: the spade server went away: {e}") from e
        if not got:
            raise ConnectionLost("internal", f"{self._where()}: the spade server closed the connection")
        out: Dict[str, Any] = json.loads(got)
        return out

    def _where(self) -> str:
        return self.address or "spade serve --stdio"

    def close(self) -> None:
        """Ends the connection (the server frees everything it made for it); waits for a server
        this client started."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for f in (self._w, self._r):
                try:
                    f.close()
                except OSError:
                    pass
            if self._sock is not None:
                self._sock.close()
            if self._proc is not None:
                try:
                    self._proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait()

    def __deepcopy__(self, memo: Any) -> "Client":
        # a connection is shared, never copied (gymnasium.make deep-copies its kwargs)
        return self

    def __copy__(self) -> "Client":
        return self

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_default: Optional[Client] = None
_default_lock = threading.Lock()


def default_client() -> Client:
    """The process-wide client the module functions use (started on first use)."""
    global _default
    with _default_lock:
        if _default is None or _default._closed:
            _default = Client()
        return _default


@atexit.register
def _close_default() -> None:
    if _default is not None:
        _default.close()
