"""bench_py_vec.py — steps per second of spade's Python vector env (spade.make_vec: one request per
batch to `spade serve --stdio`, environments compiled by libtcc and run in sandboxed workers) beside
the same environment written as a Gymnasium class in Python and stepped in-process by Gymnasium's
SyncVectorEnv, measured in the same run, at batch 1, 16 and 256.

Environments: trivial (bench/envs/trivial.c: counts steps, the measure of pure overhead) and maze
(stdenv/maze.c at its default size 5; the Python class below is a line-by-line port: the same
carving, loop knocking, BFS for the move budget, parsing and drawing, with Python's random for the
RNG). Both sides get the same action lists (random moves) and autoreset (NEXT_STEP), so episodes
that end are reset inside the timed loop on both sides.

Figures: the median of --repeats timed chunks of --seconds each, spade and Python alternating so
that a busy machine slows both alike. Prints one line per (env, batch) and the ratio spade/Python.
Needs gymnasium and the package in python/ (PYTHONPATH=python) and SPADE_BIN (default ./spade).
Not a test: speed targets are read from its output (BENCHMARKS.md), never asserted.
"""
import argparse
import os
import random
import statistics
import sys
import time

import gymnasium
from gymnasium import spaces
from gymnasium.vector import SyncVectorEnv

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import spade  # noqa: E402


class TrivialPy(gymnasium.Env):
    """bench/envs/trivial.c in Python."""

    metadata = {"render_modes": []}

    def __init__(self):
        self.observation_space = spade.TextSpace(65536)
        self.action_space = spade.TextSpace(4096)
        self.n = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.n = 0
        return "0", {}

    def step(self, action):
        self.n += 1
        return str(self.n), 0.0, False, self.n >= 1000000, {}


DR, DC = (-1, 1, 0, 0), (0, 0, -1, 1)
MOVES = ("north", "south", "west", "east", "up", "down", "left", "right")


class MazePy(gymnasium.Env):
    """stdenv/maze.c in Python (size 5, loops 0, slack 10; max_steps 1000)."""

    metadata = {"render_modes": []}

    def __init__(self, size=5, loops=0, slack=10):
        self.observation_space = spade.TextSpace(65536)
        self.action_space = spade.TextSpace(4096)
        self.size, self.loops, self.slack = size, loops, slack
        self.rng = random.Random()

    def inside(self, r, c):
        return 0 < r < self.n - 1 and 0 < c < self.n - 1

    def open_at(self, r, c):
        return self.inside(r, c) and self.g[r][c] != "#"

    def carve(self, r, c):
        self.g[r][c] = "."
        d = [0, 1, 2, 3]
        self.rng.shuffle(d)
        for k in d:
            nr, nc = r + 2 * DR[k], c + 2 * DC[k]
            if self.inside(nr, nc) and self.g[nr][nc] == "#":
                self.g[r + DR[k]][c + DC[k]] = "."
                self.carve(nr, nc)

    def bfs(self):
        n, e = self.n, self.n - 2
        dist = [[-1] * n for _ in range(n)]
        dist[e][e] = 0
        q, head = [(e, e)], 0
        while head < len(q):
            r, c = q[head]
            head += 1
            for d in range(4):
                nr, nc = r + DR[d], c + DC[d]
                if self.open_at(nr, nc) and dist[nr][nc] < 0:
                    dist[nr][nc] = dist[r][c] + 1
                    q.append((nr, nc))
        return dist

    def show(self):
        head = f"Moves left: {self.left}. You are @, the exit is E, walls are #.\n"
        return head + "".join("".join(row) + "\n" for row in self.g)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.rng.seed(seed)
        self.n = 2 * self.size + 1
        self.r = self.c = 1
        self.steps = 0
        self.g = [["#"] * self.n for _ in range(self.n)]
        self.carve(1, 1)
        for r in range(1, self.n - 1):
            for c in range(1 + r % 2, self.n - 1, 2):
                if self.rng.random() < self.loops / 100.0:
                    self.g[r][c] = "."
        self.g[self.n - 2][self.n - 2] = "E"
        self.g[1][1] = "@"
        self.left = self.bfs()[1][1] + self.slack
        return ("Find the way from @ to the exit E. One square per turn: north, south, west or east.\n"
                + self.show()), {}

    def step(self, action):
        self.steps += 1
        words = action.split()
        w = words[0].lower()[:15] if words else ""
        d = MOVES.index(w) if w in MOVES else 8
        if d == 8:
            out = f"'{w}' is not a move; say north, south, west or east.\n"
        elif not self.open_at(self.r + DR[d % 4], self.c + DC[d % 4]):
            out = f"A wall blocks the way {MOVES[d % 4]}.\n"
        else:
            out = ""
            self.g[self.r][self.c] = "."
            self.r += DR[d % 4]
            self.c += DC[d % 4]
        if self.g[self.r][self.c] == "E":
            return out + "You reached the exit!\n", 1.0, True, False, {}
        self.left -= 1
        if self.left <= 0:
            return out + "You ran out of moves.\n", 0.0, True, False, {}
        self.g[self.r][self.c] = "@"
        return out + self.show(), 0.0, False, self.steps >= 1000, {}


def timed(vec, actions, seconds):
    """Steps vec through the action lists for at least `seconds`; steps per second."""
    n = vec.num_envs
    k, steps = 0, 0
    t0 = time.perf_counter()
    while True:
        for _ in range(8):
            vec.step(actions[k % len(actions)])
            k += 1
        steps += 8 * n
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return steps / dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", default="1,16,256")
    ap.add_argument("--envs", default="trivial,maze")
    ap.add_argument("--seconds", type=float, default=0.5, help="length of one timed chunk")
    ap.add_argument("--repeats", type=int, default=5, help="timed chunks per side (median reported)")
    ap.add_argument("--workers", type=int, default=1, help="spade worker processes per vector env")
    args = ap.parse_args()
    os.environ.setdefault("SPADE_BIN", os.path.join(HERE, "..", "spade"))
    client = spade.Client()
    with open(os.path.join(HERE, "envs", "trivial.c")) as f:
        trivial_src = f.read()
    rng = random.Random(0)
    print(f"# bench_py_vec: steps/s, median of {args.repeats} chunks of {args.seconds}s; spade workers "
          f"{args.workers}; load average {open('/proc/loadavg').read().split()[:3]}")
    print(f"{'env':8} {'batch':>5} {'spade':>12} {'python':>12} {'ratio':>7}")
    for name in args.envs.split(","):
        for b in [int(x) for x in args.batches.split(",")]:
            if name == "trivial":
                sp = spade.compile(trivial_src, filename="trivial.c", num_envs=b, workers=min(args.workers, b),
                                   client=client)
                py = SyncVectorEnv([TrivialPy] * b)
            else:
                sp = spade.make_vec("maze", b, workers=min(args.workers, b), client=client)
                py = SyncVectorEnv([MazePy] * b)
            actions = [[MOVES[rng.randrange(4)] for _ in range(b)] for _ in range(64)]
            sp.reset(seed=0)
            py.reset(seed=0)
            timed(sp, actions, 0.05)  # warm both up
            timed(py, actions, 0.05)
            rs, rp = [], []
            for _ in range(args.repeats):
                rs.append(timed(sp, actions, args.seconds))
                rp.append(timed(py, actions, args.seconds))
            s, p = statistics.median(rs), statistics.median(rp)
            print(f"{name:8} {b:5d} {s:12.0f} {p:12.0f} {s / p:7.2f}", flush=True)
            sp.close()
            py.close()
    print(f"# load average after: {open('/proc/loadavg').read().split()[:3]}")
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
