"""test_protocol.py — `spade serve` on the wire (docs/protocol.md): every kind of bad input gets an
error object naming what was wrong and the server goes on; caps per connection; connections cannot
reach each other's handles; a client that goes away releases its workers; no fd or worker leaks
over many connections; and a fuzzer (random and mutated request lines, bounded in time) that every
line is answered or refused while the server keeps serving. Not the Gymnasium layer."""
import json
import os
import random
import socket
import subprocess
import time

import pytest

import spade
from conftest import SocketServer, children, spade_bin, wait_for


def send(client, obj_or_bytes):
    line = obj_or_bytes if isinstance(obj_or_bytes, bytes) else json.dumps(obj_or_bytes).encode()
    return client.raw(line + b"\n")


def err(resp):
    assert resp["ok"] is False, resp
    return resp["error"]


def test_hello_names_the_protocol(client):
    h = send(client, {"op": "hello", "id": [1, "x"]})
    assert h["ok"] and h["protocol"] == 1 and h["id"] == [1, "x"] and "step" in h["ops"]


@pytest.mark.parametrize("line,code,field", [
    (b"{not json", "bad_json", None),
    (b"[1,2]", "bad_request", None),
    (b'{"op":"fly"}', "unknown_op", "op"),
    (b'{"id":3}', "missing_field", "op"),
    (b'{"op":7}', "wrong_type", "op"),
    (b'{"op":"make"}', "missing_field", "spec"),
    (b'{"op":"make","spec":5}', "wrong_type", "spec"),
    (b'{"op":"make","spec":"maze","instances":"4"}', "wrong_type", "instances"),
    (b'{"op":"make","spec":"maze","instances":0}', "bad_value", "instances"),
    (b'{"op":"make","spec":"maze","instances":1.5}', "bad_value", "instances"),
    (b'{"op":"make","spec":"maze","source":"x"}', "bad_value", "spec"),
    (b'{"op":"make","spec":"maze:size=999"}', "bad_params", "params"),
    (b'{"op":"make","spec":"maze","params":{"size":"big"}}', "wrong_type", "params"),
    (b'{"op":"make","spec":"nonexistent_env"}', "not_found", "spec"),
    (b'{"op":"step","env":42,"ids":[0],"actions":["x"]}', "unknown_handle", "env"),
    (b'{"op":"step"}', "missing_field", "env"),
    (b'{"op":"close","env":"1"}', "wrong_type", "env"),
    (b'{"op":"hint","env":99}', "unknown_handle", "env"),
    (b'{"op":"op","op":"hello"', "bad_json", None),
    (b'{"op":"hello",}', "bad_json", None),
    (b'{"op":"\\ud800"}', "bad_json", None),
])
def test_bad_input_gets_an_error_object(client, line, code, field):
    e = err(send(client, line))
    assert e["code"] == code and e.get("field") == field and e["message"]
    assert send(client, {"op": "hello"})["ok"]  # and the server goes on


def test_batch_field_errors_and_per_instance_failures(client):
    h = send(client, {"op": "make", "spec": "maze:size=3", "instances": 3})["env"]
    e = err(send(client, {"op": "step", "env": h, "ids": [0, 5], "actions": ["a", "b"]}))
    assert e["code"] == "bad_value" and e["field"] == "ids"
    e = err(send(client, {"op": "step", "env": h, "ids": [0], "actions": [1]}))
    assert e["code"] == "wrong_type" and e["field"] == "actions"
    e = err(send(client, {"op": "step", "env": h, "ids": [0, 1], "actions": ["a"]}))
    assert e["code"] == "bad_value" and e["field"] == "actions"
    e = err(send(client, {"op": "reset", "env": h, "ids": [0], "seeds": [-1]}))
    assert e["code"] == "bad_value" and e["field"] == "seeds"
    e = err(send(client, {"op": "step", "env": h, "ids": [0], "actions": ["a"], "reset": {"ids": [0]}}))
    assert e["code"] == "bad_value" and "twice" in e["message"]
    e = err(send(client, {"op": "step", "env": h, "ids": [0], "actions": ["a"], "reset": {"seeds": [1]}}))
    assert e["code"] == "missing_field" and e["field"] == "reset.ids"
    # a step before reset fails for that instance only; the others are carried out
    r = send(client, {"op": "reset", "env": h, "ids": [0, 2], "seeds": [1, 2**64 - 1]})
    assert r["ok"] and len(r["obs"]) == 2 and "failures" not in r
    r = send(client, {"op": "step", "env": h, "ids": [2, 1, 0], "actions": ["north", "north", "\u00e9\u0000x"]})
    assert r["ok"] and r["failures"][0] is None and r["failures"][2] is None
    assert r["failures"][1]["outcome"] == "bad_call" and "before reset" in r["failures"][1]["message"]
    assert r["obs"][0] and r["obs"][1] == ""


def test_caps_per_connection():
    s = SocketServer("tcp:127.0.0.1:0", "--max-envs", "2", "--max-instances", "10", "--max-workers", "3",
                     "--max-line", "1000")
    try:
        c = s.connect()
        send(c, {"op": "make", "spec": "nim"})
        e = err(send(c, {"op": "make", "spec": "nim", "instances": 10}))
        assert e["code"] == "limit" and e["field"] == "instances"
        e = err(send(c, {"op": "make", "spec": "nim", "instances": 5, "workers": 3}))
        assert e["code"] == "limit" and e["field"] == "workers"
        h = send(c, {"op": "make", "spec": "nim", "instances": 2, "workers": 2})["env"]
        e = err(send(c, {"op": "make", "spec": "nim"}))
        assert e["code"] == "limit" and "environments" in e["message"]
        e = err(send(c, b'{"op":"hello","pad":"' + b"x" * 5000 + b'"}'))
        assert e["code"] == "line_too_long"
        assert send(c, {"op": "close", "env": h})["ok"]
        assert send(c, {"op": "make", "spec": "nim"})["ok"]  # room again
        c2 = s.connect()  # caps are per connection
        assert send(c2, {"op": "make", "spec": "nim", "instances": 9})["ok"]
        # handles are per connection: c2's handle 1 is its own, c's handle 3 is not there
        e = err(send(c2, {"op": "close", "env": 3}))
        assert e["code"] == "unknown_handle"
        c.close(), c2.close()
    finally:
        s.stop()


def test_line_over_the_cap_arriving_in_pieces(unix_server):
    sk = unix_server.raw_socket()
    f = sk.makefile("rb")
    sk.sendall(b'{"op":"hello","x":"')
    for _ in range(20):  # 20 MiB, over the default 16 MiB cap, without a newline for a long while
        sk.sendall(b"y" * (1 << 20))
    sk.sendall(b'"}\n{"op":"hello","id":2}\n')
    a, b = json.loads(f.readline()), json.loads(f.readline())
    assert a["error"]["code"] == "line_too_long" and b["ok"] and b["id"] == 2
    sk.close()


def test_two_clients_at_once_over_tcp(tcp_server):
    cs = [tcp_server.connect() for _ in range(3)]
    envs = [spade.make("maze:size=3", client=c) for c in cs]
    obs = [e.reset(seed=4)[0] for e in envs]
    assert obs[0] == obs[1] == obs[2]
    for e, c in zip(envs, cs):
        e.step("east")
        c.close()


def test_disconnect_releases_workers_and_no_fd_leaks(unix_server):
    pid = unix_server.proc.pid
    zygote = children(pid)
    assert len(zygote) == 1, zygote
    z = zygote[0]
    # The zygote forks its one spare worker when it starts, which on a loaded machine can come after
    # the server already answers: count it only once it is there, or the counts below are off by one.
    assert wait_for(lambda: len(children(z)) == 1), children(z)
    c = unix_server.connect()
    send(c, {"op": "hello"})
    base_fds = len(os.listdir(f"/proc/{pid}/fd"))
    base_workers = len(children(z))
    c.close()
    for i in range(40):
        c = unix_server.connect()
        r = send(c, {"op": "make", "spec": "nim", "instances": 4, "workers": 2})
        assert r["ok"]
        send(c, {"op": "reset", "env": r["env"], "ids": [0, 1, 2, 3]})
        if i == 0:
            # the zygote keeps one worker pre-forked (base_workers counts it): two in use, a spare coming
            assert wait_for(lambda: len(children(z)) == base_workers + 2), children(z)
        if i % 2:
            sk = c._sock
            sk.shutdown(socket.SHUT_RDWR)  # vanish mid-session, without closing anything
        c.close()
    assert wait_for(lambda: len(children(z)) == base_workers), children(z)
    c = unix_server.connect()
    send(c, {"op": "hello"})
    assert wait_for(lambda: len(os.listdir(f"/proc/{pid}/fd")) == base_fds), os.listdir(f"/proc/{pid}/fd")
    c.close()


def test_stdio_server_exits_on_eof_and_frees_its_workers():
    p = subprocess.Popen([spade_bin(), "serve", "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    p.stdin.write(b'{"op":"make","spec":"nim","workers":2,"instances":2}\n')
    p.stdin.flush()
    assert json.loads(p.stdout.readline())["ok"]
    z = children(p.pid)
    assert len(z) == 1
    workers = children(z[0])
    assert len(workers) >= 2  # two in use, and the zygote's pre-forked spare
    p.stdin.close()
    assert p.wait(timeout=60) == 0
    assert wait_for(lambda: not any(os.path.exists(f"/proc/{q}") for q in workers + z)), "workers outlived the server"


def test_serve_usage_errors():
    for args in (["--listen", "tcp:0.0.0.0:0"], ["--listen", "bogus"], ["--stdio", "--listen", "unix:/tmp/x"],
                 ["--max-envs", "0"], ["extra"]):
        r = subprocess.run([spade_bin(), "serve", *args], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "spade serve:" in r.stderr, (args, r.stderr)


# ---- fuzzing ----------------------------------------------------------------------------------
SEEDS = [
    {"op": "hello"},
    {"op": "list", "load": False},
    {"op": "info", "spec": "nim"},
    {"op": "make", "spec": "maze:size=3", "instances": 2},
    {"op": "make", "source": "#include <spade/dsl.h>\nENV(\"x\", \"y\")\nSTATE { int a; };\nRESET { say(\"a\"); }\n"
                             "STEP { finish(1); }\nHINT { say(\"h\"); }\n"},
    {"op": "reset", "env": 1, "ids": [0, 1], "seeds": [1, 2]},
    {"op": "step", "env": 1, "ids": [0, 1], "actions": ["north", "east"]},
    {"op": "step", "env": 1, "ids": [1], "actions": ["x"], "reset": {"ids": [0], "seed": 5}},
    {"op": "hint", "env": 1, "instance": 0},
    {"op": "solve", "env": 1, "instance": 1},
    {"op": "close", "env": 2},
]
ATOMS = [None, True, False, 0, -1, 1, 2, 2**31, 2**63, 2**64, -2**63, 1e308, -0.0, 0.5, "", "x", "maze", "nim",
         "\u0000", "\ud7ff", "é", "a" * 300, [], {}, [0], [None], {"ids": [0]}]
KEYS = ["op", "env", "ids", "seeds", "seed", "actions", "reset", "spec", "source", "params", "instances", "workers",
        "instance", "id", "load", "filename"]


def mutate_obj(rng, o):
    o = json.loads(json.dumps(o))
    for _ in range(rng.randint(1, 3)):
        k = rng.choice(KEYS)
        r = rng.random()
        if r < 0.4:
            o[k] = rng.choice(ATOMS)
        elif r < 0.6:
            o.pop(k, None)
        elif r < 0.8 and isinstance(o.get(k), list):
            o[k] = o[k] + [rng.choice(ATOMS)]
        else:
            o[k] = {rng.choice(KEYS): rng.choice(ATOMS)}
    if o.get("op") == "check" or o.get("op") == "list":
        o["op"] = "hello"  # seconds per request: not what fuzzing is for
    return o


def mutate_bytes(rng, b):
    b = bytearray(b)
    for _ in range(rng.randint(1, 8)):
        r = rng.random()
        i = rng.randrange(len(b) + 1)
        if r < 0.3 and b:
            del b[min(i, len(b) - 1)]
        elif r < 0.6:
            b.insert(i, rng.randrange(256))
        elif b:
            b[min(i, len(b) - 1)] = rng.choice(b'{}[]":,\\0123456789-+.eEtrufalsn \t')
    return bytes(b)


def fuzz_lines(rng, n):
    for _ in range(n):
        r = rng.random()
        if r < 0.35:
            line = json.dumps(mutate_obj(rng, rng.choice(SEEDS))).encode()
        elif r < 0.8:
            line = mutate_bytes(rng, json.dumps(rng.choice(SEEDS)).encode())
        else:
            line = bytes(rng.randrange(256) for _ in range(rng.randint(1, 80)))
        line = line.replace(b"\n", b" ")
        if not line.strip(b" \t\r"):
            line = b"?"
        if b'"check"' in line or b'"list"' in line:
            line = line.replace(b'"check"', b'"hello"').replace(b'"list"', b'"hello"')
        yield line


def run_fuzz(sock_file_r, sock_w, seconds, seed, min_lines):
    """Sends fuzzed lines for `seconds`, and at least `min_lines` of them however long they take:
    the counts asserted on are of lines sent, not of lines a loaded machine manages in the time."""
    rng = random.Random(seed)
    end = time.monotonic() + seconds
    answered = refused = 0
    for line in fuzz_lines(rng, 100000):
        if time.monotonic() > end and answered + refused >= min_lines:
            break
        sock_w(line + b"\n")
        got = sock_file_r.readline()
        assert got, f"no answer to {line!r}"
        resp = json.loads(got)
        assert resp["ok"] in (True, False)
        if resp["ok"]:
            answered += 1
        else:
            refused += 1
            assert resp["error"]["code"] and resp["error"]["message"]
    return answered, refused


def test_fuzz_stdio_server():
    p = subprocess.Popen([spade_bin(), "serve", "--stdio", "--max-workers", "4", "--max-instances", "64"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def w(b):
        p.stdin.write(b)
        p.stdin.flush()

    answered, refused = run_fuzz(p.stdout, w, float(os.environ.get("SPADE_FUZZ_SECONDS", "6")), 1, 1000)
    assert answered + refused >= 1000, (answered, refused)
    assert answered > 50 and refused > 500
    w(b'{"op":"hello","id":"still"}\n')
    assert json.loads(p.stdout.readline())["id"] == "still"
    p.stdin.close()
    assert p.wait(timeout=60) == 0


def test_fuzz_socket_server_many_connections(tcp_server):
    total = 0
    for k in range(8):
        sk = tcp_server.raw_socket()
        a, r = run_fuzz(sk.makefile("rb"), sk.sendall, float(os.environ.get("SPADE_FUZZ_SECONDS", "6")) / 8, 100 + k,
                        63)
        total += a + r
        sk.close()  # mid-session, whatever it made
    assert total >= 500
    c = tcp_server.connect()
    assert send(c, {"op": "hello"})["ok"]
    c.close()
    assert tcp_server.proc.poll() is None


CRASHY = r'''#include <spade/dsl.h>
ENV("crashy", "Crashes on 'boom'.", .max_steps = 5)
STATE { int n; };
RESET { S->n = 0; say("go"); }
STEP  { if (str_ieq(action, "boom")) { volatile int *p = 0; *p = 1; } S->n++; say("%d", S->n); }
HINT  { say("do not say boom"); }
'''


def test_a_crashing_worker_fails_its_instances_only(client):
    r = send(client, {"op": "make", "source": CRASHY, "filename": "crashy.c", "instances": 4, "workers": 2})
    assert r["ok"], r
    h = r["env"]
    send(client, {"op": "reset", "env": h, "ids": [0, 1, 2, 3]})
    r = send(client, {"op": "step", "env": h, "ids": [0, 1, 2, 3], "actions": ["a", "boom", "c", "d"]})
    assert r["ok"]
    f = r["failures"]
    assert f[0] is None and f[2] is None and r["obs"][0] == "1" and r["obs"][2] == "1"  # worker 0
    assert f[1]["outcome"] == "crash" and f[1]["signal"] == 11 and f[3]["outcome"] == "crash"  # worker 1
    # the crash is sticky for that worker's instances; the other worker goes on
    r = send(client, {"op": "reset", "env": h, "ids": [0, 1]})
    assert r["failures"][0] is None and r["failures"][1]["outcome"] == "crash"
    # through the package: an EnvFailure carrying the class
    v = spade.compile(CRASHY, num_envs=2, client=client)
    v.reset(seed=0)
    with pytest.raises(spade.EnvFailure) as e:
        v.step(["x", "boom"])
    assert e.value.outcome == "crash" and e.value.signal == 11
    v.close()
    assert send(client, {"op": "close", "env": h})["ok"]
