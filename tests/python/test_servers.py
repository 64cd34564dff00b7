"""test_servers.py — environments from several hosts: `spade serve`'s shared token (refused without
or with a wrong one, the connection closed; TCP off the loopback only with a token) and
`spade.make_vec(servers=...)` over two servers on loopback ports: the same episodes as one vector
env on one server, step by step; a server killed after a step's reply and started again on its port
is reconnected and its episodes replayed, the run unchanged; a server killed for good is reported by
its address. Not the single-server vector env (test_vector.py)."""
import signal
import subprocess

import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence

import spade
from conftest import SocketServer, spade_bin

TOKEN = "test-token-0123456789abcdef"


@pytest.fixture
def token_file(tmp_path):
    p = tmp_path / "token"
    p.write_text(TOKEN + "\n")
    p.chmod(0o600)
    return str(p)


def start(token_file, addr="tcp:127.0.0.1:0"):
    return SocketServer(addr, "--token-file", token_file)


def test_token_is_required_and_checked(token_file):
    s = start(token_file)
    try:
        with pytest.raises(spade.SpadeError) as e:
            spade.Client(s.address)
        assert e.value.code == "unauthorized" and "token" in e.value.message
        with pytest.raises(spade.SpadeError) as e:
            spade.Client(s.address, token="wrong-" + TOKEN)
        assert e.value.code == "unauthorized" and "wrong" in e.value.message
        c = spade.Client(s.address, token=TOKEN)
        assert c.hello["auth"] == "token"
        assert c.request("hello")["ok"]  # a keepalive hello may leave the token out
        c.close()
        # a request before the token: one error line, then the server closes the connection
        raw = s.raw_socket()
        raw.sendall(b'{"op":"list"}\n{"op":"hello","token":"%s"}\n' % TOKEN.encode())
        got = b""
        while True:
            chunk = raw.recv(65536)
            if not chunk:
                break
            got += chunk
        raw.close()
        lines = got.splitlines()
        assert len(lines) == 1 and b'"unauthorized"' in lines[0], got
    finally:
        s.stop()


def test_off_the_loopback_only_with_a_token(token_file):
    p = subprocess.run([spade_bin(), "serve", "--listen", "tcp:0.0.0.0:0"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and "--token-file" in p.stderr and "loopback" in p.stderr, p.stderr
    s = start(token_file, "tcp:0.0.0.0:0")
    try:
        assert s.address.startswith("tcp:0.0.0.0:")
        port = s.address.rpartition(":")[2]
        c = spade.Client(f"tcp:127.0.0.1:{port}", token=TOKEN)
        assert c.hello["protocol"] == 1
        c.close()
    finally:
        s.stop()


def actions(rng, n):
    words = ["north", "south", "east", "west", "1", "2", ""]
    return [words[int(rng.integers(len(words)))] for _ in range(n)]


SPEC = "maze:size=2"


def play(vec, ref, steps, rng, after_step=None):
    """Steps vec and the reference together; each step's five results must be equal."""
    o1, i1 = vec.reset(seed=5)
    o2, i2 = ref.reset(seed=5)
    assert o1 == o2 and data_equivalence(i1, i2)
    ended = 0
    for t in range(steps):
        acts = actions(rng, vec.num_envs)
        a = vec.step(acts)
        b = ref.step(acts)
        for x, y, what in zip(a, b, ["obs", "reward", "terminated", "truncated", "infos"]):
            assert data_equivalence(x, y), f"step {t}: {what} differ: {x} vs {y}"
        ended += int(np.sum(a[2] | a[3]))
        if after_step:
            after_step(t)
    return ended


@pytest.fixture
def two(token_file):
    servers = [start(token_file), start(token_file)]
    yield servers
    for s in servers:
        s.stop()


def test_two_servers_play_what_one_plays(client, two):
    vec = spade.make_vec(SPEC, 5, servers=[s.address[4:] for s in two], token=TOKEN)
    ref = spade.make_vec(SPEC, 5, client=client)
    assert [p.num_envs for p in vec.parts] == [3, 2]
    ended = play(vec, ref, 40, np.random.default_rng(1))
    assert ended > 0  # autoresets crossed the join
    vec.close()
    ref.close()


def test_a_restarted_server_is_reconnected_and_replayed(client, two, token_file, caplog):
    vec = spade.make_vec(SPEC, 4, servers=[s.address for s in two], token=TOKEN, retries=20, backoff=0.05)
    ref = spade.make_vec(SPEC, 4, client=client)
    victim = two[1]

    def restart(t):
        if t == 0:  # after the first step's reply: kill the second server, start it again on its port
            victim.proc.send_signal(signal.SIGKILL)
            victim.proc.wait(timeout=60)
            victim.__init__(victim.address, "--token-file", token_file)

    play(vec, ref, 25, np.random.default_rng(2), after_step=restart)
    assert any("reconnected" in r.getMessage() and victim.address in r.getMessage() for r in caplog.records)
    vec.close()
    ref.close()


def test_a_server_gone_is_reported_by_its_address(two):
    vec = spade.make_vec(SPEC, 4, servers=[s.address for s in two], token=TOKEN, retries=2, backoff=0.05)
    vec.reset(seed=1)
    vec.step(["north"] * 4)
    two[1].proc.send_signal(signal.SIGKILL)
    two[1].proc.wait(timeout=60)
    with pytest.raises(spade.ServerGone) as e:
        vec.step(["south"] * 4)
    assert e.value.address == two[1].address and two[1].address in str(e.value) and "3 tries" in str(e.value)
    vec.close()


def test_servers_must_be_host_port():
    with pytest.raises(ValueError, match="HOST:PORT"):
        spade.make_vec(SPEC, 2, servers=["nohost"])
