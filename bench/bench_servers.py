"""bench_servers.py — episodes per second of spade.make_vec through one and through two local
`spade serve --listen tcp:127.0.0.1:0 --token-file F` servers (make_vec(servers=...)), against the
same vector env on a `spade serve --stdio` child (the local path: pipes, no TCP, one server), all
measured in the same run with the same total worker processes.

Each configuration plays --envs instances of --spec with random moves (NEXT_STEP autoreset) for
--seconds, --repeats times, the three configurations alternating so a busy machine slows them
alike; prints the median episodes/s and steps/s of each and the ratio to the local one. The
servers run on this host, so what it shows is the cost of the TCP hop and the join, and on a
machine with the cores for it, what a second server's workers add; on other hosts the network's
latency comes on top of each step.
Needs gymnasium and the package in python/ (PYTHONPATH=python) and SPADE_BIN (default ./spade).
Not a test: figures go to BENCHMARKS.md, never asserted.
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import spade  # noqa: E402

TOKEN = "bench-token-0123456789abcdef"
MOVES = ["north", "south", "east", "west"]


def serve(binary, token_file):
    p = subprocess.Popen([binary, "serve", "--listen", "tcp:127.0.0.1:0", "--token-file", token_file],
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    assert line.startswith("listening on "), line
    return p, line[len("listening on "):]


def chunk(vec, seconds, rng):
    n = vec.num_envs
    steps = episodes = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        _, _, te, tr, _ = vec.step([rng.choice(MOVES) for _ in range(n)])
        steps += n
        episodes += int((te | tr).sum())
    dt = time.perf_counter() - t0
    return episodes / dt, steps / dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", default="maze:size=3")
    ap.add_argument("--envs", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2, help="worker processes in all (split over the servers)")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    binary = os.environ.get("SPADE_BIN", os.path.join(HERE, "..", "spade"))
    with tempfile.TemporaryDirectory() as d:
        tf = os.path.join(d, "token")
        with open(tf, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(tf, 0o600)
        servers = [serve(binary, tf), serve(binary, tf)]
        try:
            local = spade.Client(spade_bin=binary)
            vecs = {
                "local (stdio)": spade.make_vec(a.spec, a.envs, workers=a.workers, client=local),
                "one server": spade.make_vec(a.spec, a.envs, workers=a.workers, servers=[servers[0][1]], token=TOKEN),
                "two servers": spade.make_vec(a.spec, a.envs, workers=max(1, a.workers // 2),
                                              servers=[s[1] for s in servers], token=TOKEN),
            }
            for v in vecs.values():
                v.reset(seed=0)
            rng = random.Random(0)
            got = {k: [] for k in vecs}
            for _ in range(a.repeats):
                for k, v in vecs.items():
                    got[k].append(chunk(v, a.seconds, rng))
            ref = statistics.median(e for e, _ in got["local (stdio)"])
            print(f"{a.spec}, {a.envs} envs, {a.workers} workers in all, median of {a.repeats} x {a.seconds:g} s")
            for k, runs in got.items():
                eps = statistics.median(e for e, _ in runs)
                sps = statistics.median(s for _, s in runs)
                print(f"  {k:14s} {eps:10.1f} episodes/s {sps:10.0f} steps/s  ratio to local {eps / ref:.2f}")
            for v in vecs.values():
                v.close()
            local.close()
        finally:
            for p, _ in servers:
                p.terminate()
                p.wait(timeout=30)


if __name__ == "__main__":
    main()
