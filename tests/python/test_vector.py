"""test_vector.py — the vector env against Gymnasium's own reference: SyncVectorEnv over single
SpadeEnvs must give the same observations, rewards, terminations, truncations and infos step by
step, autoresets included, in each autoreset mode; workers only change where instances run; one
request per step. Not the single env (test_env.py)."""
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import spade

ADD1 = r'''#include <spade/dsl.h>
ENV("add1", "One-step sums: every step ends the episode.", .max_steps = 1)
STATE { long a, b; };
RESET { S->a = rand_range(0, 3); S->b = rand_range(0, 3); say("%ld + %ld = ?", S->a, S->b); }
STEP  { finish(parse_int(action) == S->a + S->b); }
HINT  { say("Count."); }
SOLVE { act("%ld", S->a + S->b); }
'''


def actions_for(rng, n, t):
    words = ["north", "south", "east", "west", "0", "1", "2", "3", "4", "5", "6", ""]
    return [words[int(rng.integers(len(words)))] for _ in range(n)]


def compare(spec, n, steps, mode, client, workers=1, source=None):
    if source is not None:
        vec = spade.compile(source, num_envs=n, workers=workers, client=client, autoreset_mode=mode)
        fns = [lambda: spade.compile(source, client=client)] * n
    else:
        vec = spade.make_vec(spec, n, workers=workers, client=client, autoreset_mode=mode)
        fns = [lambda: spade.make(spec, client=client)] * n
    ref = SyncVectorEnv(fns, autoreset_mode=mode)
    o1, i1 = vec.reset(seed=11)
    o2, i2 = ref.reset(seed=11)
    assert o1 == o2 and data_equivalence(i1, i2)
    rng = np.random.default_rng(0)
    ended = 0
    for t in range(steps):
        acts = actions_for(rng, n, t)
        a = vec.step(acts)
        b = ref.step(tuple(acts))
        for x, y, what in zip(a, b, ["obs", "reward", "terminated", "truncated", "infos"]):
            assert data_equivalence(x, y), f"step {t}: {what} differ: {x} vs {y}"
        ended += int(np.sum(a[2] | a[3]))
        if mode == AutoresetMode.DISABLED and np.any(a[2] | a[3]):
            mask = a[2] | a[3]
            r1 = vec.reset(options={"reset_mask": mask.copy()})
            r2 = ref.reset(options={"reset_mask": mask.copy()})
            assert r1[0] == r2[0] and data_equivalence(r1[1], r2[1])
    vec.close()
    ref.close()
    return ended


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED])
def test_same_as_sync_vector_env(client, mode):
    ended = compare(None, 5, 30, mode, client, source=ADD1)
    assert ended >= 30  # every step ends every running episode: autoresets were exercised


def test_same_as_sync_vector_env_on_maze_with_truncation(client):
    # max_steps of a 2x2 maze is short: random walks get truncated and autoreset
    ended = compare("maze:size=2,slack=0", 4, 40, AutoresetMode.NEXT_STEP, client)
    assert ended > 0


def test_workers_do_not_change_results(client):
    runs = []
    for w in (1, 3):
        v = spade.make_vec("maze:size=4", 7, workers=w, client=client)
        assert v.workers == w
        rng = np.random.default_rng(5)
        out = [v.reset(seed=2)[0]]
        for t in range(25):
            o, r, te, tr, _ = v.step(actions_for(rng, 7, t))
            out.append((o, r.tolist(), te.tolist(), tr.tolist()))
        runs.append(out)
        v.close()
    assert runs[0] == runs[1]


def test_one_round_trip_per_step(client):
    v = spade.compile(ADD1, num_envs=16, client=client)
    v.reset(seed=0)
    calls = []
    real = client.raw
    client.raw = lambda line: (calls.append(line), real(line))[1]
    try:
        for _ in range(6):  # alternates steps and autoresets, each one request
            v.step(["1"] * 16)
    finally:
        client.raw = real
    assert len(calls) == 6
    v.close()


def test_vector_spaces_and_api(client):
    v = spade.make_vec("nim", 3, client=client)
    assert v.num_envs == 3 and v.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    obs, infos = v.reset(seed=[4, 5, None])
    assert isinstance(obs, tuple) and len(obs) == 3 and obs in v.observation_space
    assert infos["seed"][0] == 4 and infos["_seed"].all()
    acts = v.action_space.sample()
    assert len(acts) == 3 and all(isinstance(a, str) for a in acts)
    obs, r, te, tr, infos = v.step(list(acts))
    assert r.dtype == np.float64 and te.dtype == np.bool_ and tr.shape == (3,)
    with pytest.raises(ValueError):
        v.step(["a"])
    assert isinstance(v.hint(1), str) and len(v.solve_actions()) == 3
    v.close()
    v.close()


def test_gymnasium_make_vec_modes_agree(client):
    import gymnasium
    a = gymnasium.make_vec(spade.GYM_ID, num_envs=3, vectorization_mode="vector_entry_point", spec="maze:size=3",
                           client=client)
    b = gymnasium.make_vec(spade.GYM_ID, num_envs=3, vectorization_mode="sync", spec="maze:size=3", client=client)
    assert isinstance(a, spade.SpadeVectorEnv) and isinstance(b, SyncVectorEnv)
    assert a.reset(seed=1)[0] == b.reset(seed=1)[0]
    for t in range(5):
        x, y = a.step(["south"] * 3), b.step(("south",) * 3)
        assert x[0] == y[0] and (x[1] == y[1]).all()
    a.close(), b.close()
