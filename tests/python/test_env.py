"""test_env.py — the single-environment package API: Gymnasium's own env checker on every stdenv
environment, seeding as Gymnasium defines it, text spaces, hint/solve, params and tools, compile
errors, check(). Not the vector env (test_vector.py) nor the wire protocol (test_protocol.py)."""
import subprocess
import warnings

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import spade
from conftest import spade_bin, stdenv_names

GOOD = r'''#include <spade/dsl.h>
ENV("add", "Add two numbers drawn from a range.", .max_steps = 1, .family = "math")
PARAM(int, lo, 10, 0, 1000000)
PARAM(int, hi, 99, 0, 1000000)
STATE { long a, b; };
RESET { S->a = rand_range(lo, hi); S->b = rand_range(lo, hi);
        say("Compute %ld + %ld. Answer with the number.", S->a, S->b); }
STEP  { finish(parse_int(action) == S->a + S->b); }
HINT  { say("Add the ones, carry, then add the tens."); }
SOLVE { act("%ld", S->a + S->b); }
'''


@pytest.mark.parametrize("name", stdenv_names())
def test_check_env_passes_on_every_stdenv(client, name):
    # Through gymnasium.make, so the checker also has a spec: it then builds the env again for
    # each render mode and checks close() twice.
    env = gymnasium.make(spade.GYM_ID, spec=name, client=client, disable_env_checker=True).unwrapped
    assert isinstance(env, spade.SpadeEnv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    bad = [str(w.message) for w in caught if "gymnasium" in str(w.filename) or "WARN" in str(w.message)]
    assert not bad, bad
    env.close()


def test_check_env_through_the_passive_checker(client):
    env = gymnasium.make(spade.GYM_ID, spec="maze:size=4", client=client)  # default wrappers, env checker on
    obs, info = env.reset(seed=3)
    obs, r, term, trunc, info = env.step("south")
    assert isinstance(obs, str) and isinstance(r, float)
    env.close()


def test_seeded_reset_plays_spade_run_episodes(client):
    env = spade.make("maze:size=5", client=client)
    obs5, info = env.reset(seed=5)
    assert info["seed"] == 5
    assert obs5 != env.reset(seed=6)[0]
    assert env.reset(seed=5)[0] == obs5
    # `spade run --seed 5` plays episode 0 with seed 5: the same first observation
    out = subprocess.run([spade_bin(), "run", "maze:size=5", "--episodes", "1", "--seed", "5", "--agent", "solve",
                          "--show", "--quiet"], capture_output=True, text=True, check=True).stdout
    assert obs5.splitlines()[0] in out and obs5.splitlines()[-2] in out
    # unseeded resets after a seeded one are reproducible
    env.reset(seed=9)
    a = [env.reset()[0] for _ in range(3)]
    env.reset(seed=9)
    assert [env.reset()[0] for _ in range(3)] == a
    env.close()


def test_solve_wins_and_episode_end(client):
    env = spade.make("maze:size=4", client=client)
    obs, info = env.reset(seed=1)
    ret, steps, done = 0.0, 0, False
    while not done:
        obs, r, term, trunc, info = env.step(env.solve_action())
        ret += r
        steps += 1
        done = term or trunc
    assert term and not trunc and info["success"] and info["episode_return"] == pytest.approx(ret)
    with pytest.raises(spade.EnvFailure) as e:
        env.step("north")
    assert e.value.outcome == "bad_call" and "ended" in str(e.value)
    assert env.hint()  # the hint still answers after the end
    env.close()
    env.close()  # twice is fine
    with pytest.raises(spade.SpadeError):
        env.step("north")


def test_spaces_are_text(client):
    env = spade.make("nim", client=client)
    assert isinstance(env.observation_space, gymnasium.spaces.Text)
    assert isinstance(env.action_space, gymnasium.spaces.Text)
    obs, _ = env.reset(seed=0)
    assert obs in env.observation_space and "é→" in env.observation_space
    assert 12 not in env.observation_space
    env.action_space.seed(0)
    assert env.action_space.sample() in env.action_space
    with pytest.raises(TypeError):
        env.step(3)
    env.close()


def test_params_and_tools_in_attributes_and_info(client):
    env = spade.make("calc_chain", params={"ops": 2}, client=client)
    assert env.params == {"ops": 2, "digits": 4}
    assert [t["name"] for t in env.tools][:3] == ["add", "sub", "mul"]
    assert env.tools[0]["signature"] == "long (long a, long b)"
    assert env.param_info[0]["name"] == "ops" and env.param_info[0]["max"] == 12
    obs, info = env.reset(seed=0)
    assert info["params"] == env.params and info["tools"][0] == "add"
    env.close()
    with pytest.raises(spade.SpadeError) as e:
        spade.make("calc_chain:ops=99", client=client)
    assert e.value.code == "bad_params" and "ops" in str(e.value)
    with pytest.raises(spade.SpadeError) as e:
        spade.make("no_such_env_here", client=client)
    assert e.value.code == "not_found"


def test_compile_source_and_its_errors(client):
    env = spade.compile(GOOD, params={"lo": 1, "hi": 9}, client=client)
    obs, _ = env.reset(seed=2)
    a, b = [int(w) for w in obs.replace(".", " ").split() if w.isdigit()]
    assert 1 <= a <= 9 and 1 <= b <= 9
    obs, r, term, trunc, info = env.step(str(a + b))
    assert term and r == 1.0 and info["success"]
    env.close()
    broken = GOOD.replace("S->a + S->b); }\nHINT", "S->a + S->b) }\nHINT")
    with pytest.raises(spade.CompileError) as e:
        spade.compile(broken, filename="model_wrote.c", client=client)
    assert e.value.outcome == "compile_error" and e.value.line in (8, 9, 10)
    assert "model_wrote.c:" in str(e.value)
    with pytest.raises(spade.CompileError) as e:
        spade.compile(GOOD.replace("rand_range(lo, hi); S->b", "system(\"ls\"); S->b"), client=client)
    assert e.value.outcome in ("link_error", "compile_error")


def test_check_returns_the_report_as_data(client):
    rep = spade.check("maze:size=5", client=client)
    assert rep.ok and rep.failed == 0 and rep["solve"].status == "pass"
    bad = spade.check(GOOD.replace('say("Add the ones, carry, then add the tens.");', ""), seeds=2,
                      solve_seeds=4, client=client)
    assert not bad.ok and bad["hint"].status == "fail"
    broken = spade.check(GOOD.replace("STATE {", "STATE {{"), client=client)
    assert broken["compile"].status == "fail" and broken.failed >= 1


def test_info_and_list(client):
    i = spade.info("maze:size=7", client=client)
    assert i["name"] == "maze" and i["param_values"]["size"] == 7 and i["has_solve"]
    names = {e["name"] for e in spade.list_envs(client=client)}
    assert set(stdenv_names()) <= names


def test_package_is_typed():
    """The package claims types (py.typed): mypy --strict agrees, when mypy is installed."""
    pytest.importorskip("mypy")
    import os
    import sys
    from conftest import SRCDIR
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", os.devnull, "spade"],
                       cwd=os.path.join(SRCDIR, "python"), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
