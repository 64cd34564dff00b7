"""bench_py_env.py — the Python reference for the stepping benchmark (bench/bench_sandbox.c): the
trivial environment of bench/envs/trivial.c written in Python and stepped in-process, with no
isolation at all, as the Python reference implementation runs its environments.

Two ways of writing it, chosen by --mode:
  plain  a bare Gym-style class (reset/step methods, no library): the cheapest Python can be;
  gym    a gymnasium.Env subclass registered and built with gymnasium.make, so it is stepped
         through make's default wrappers (TimeLimit for the registered max_episode_steps, which
         mirrors the C env's .max_steps, then OrderEnforcing and PassiveEnvChecker), as Python
         environments usually are. Needs `import gymnasium`.
--batch N steps N instances one after another per round (Python has no batched step; the C side
steps N instances per round trip). Prints one number: steps per second, the median over chunks of
0.5 ms of a --seconds run (as bench_sandbox measures its own figures).
Not a test, and not a measure of isolation (bench_sandbox times a fresh interpreter for that)."""
import argparse
import sys
import time


class Trivial:
    def reset(self, seed=None):
        self.n = 0
        return "0", {}

    def step(self, action):
        self.n += 1
        return str(self.n), 0.0, False, False, {}


def make_plain(batch):
    envs = [Trivial() for _ in range(batch)]
    for i, e in enumerate(envs):
        e.reset(seed=i)
    return envs


def make_gym(batch):
    import gymnasium
    from gymnasium import spaces

    class TrivialGym(gymnasium.Env):
        metadata = {"render_modes": []}

        def __init__(self):
            self.observation_space = spaces.Text(max_length=32, charset="0123456789")
            self.action_space = spaces.Text(max_length=256)
            self.n = 0

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.n = 0
            return "0", {}

        def step(self, action):
            self.n += 1
            return str(self.n), 0.0, False, False, {}

    gymnasium.register(id="SpadeBenchTrivial-v0", entry_point=TrivialGym, max_episode_steps=1_000_000)
    envs = [gymnasium.make("SpadeBenchTrivial-v0") for _ in range(batch)]
    for i, e in enumerate(envs):
        e.reset(seed=i)
    return envs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=["plain", "gym"], default="plain")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=0.5)
    args = ap.parse_args()
    envs = make_plain(args.batch) if args.mode == "plain" else make_gym(args.batch)
    # The first steps pay one-time costs (PassiveEnvChecker checks the first step): not measured.
    for e in envs:
        e.step("go")
    # As bench_sandbox measures C: chunks of at least 0.5 ms, the median chunk's rate (a chunk the
    # scheduler interrupted is an outlier on a busy machine, not a shift of the figure). The clock
    # is read every `stride` rounds so that reading it costs a few percent at most.
    stride = max(1, 64 // args.batch)
    rates = []
    clock = time.perf_counter
    t0 = chunk_t0 = clock()
    chunk_steps = 0
    while True:
        for _ in range(stride):
            for e in envs:
                e.step("go")
        chunk_steps += stride * len(envs)
        t = clock()
        if t - chunk_t0 >= 0.0005:
            rates.append(chunk_steps / (t - chunk_t0))
            chunk_t0, chunk_steps = t, 0
        if t - t0 >= args.seconds:
            break
    rates.sort()
    print(f"{rates[len(rates) // 2]:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
