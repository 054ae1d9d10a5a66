"""The `bandits` environments through the bindings: a numpy LinUCB at a fixed exploration
rate pulls the built-in LinUCB's arm in every round of the paper's simulation, and its
regret is the built-in's."""

import numpy as np
import pytest

import armada_bindings as ab

from bandits_numpy import run_linucb


def linucb_job(seed, horizon, value=1.0, **benchmark):
    return ab.Job(
        "bandits", "synthetic", "fixed", seed=seed, horizon=horizon,
        benchmark_params={"bottom": "linucb", **benchmark}, algorithm_params={"value": value},
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numpy_linucb_pulls_the_builtins_arms(seed):
    job = linucb_job(seed, 1500)
    builtin = ab.run_builtin(job)
    python = run_linucb(job)
    assert len(python) == len(builtin) == 1501
    arms = [r["arm"] for r in python[1:]]
    assert arms == [r["arm"] for r in builtin[1:]]
    assert len(set(arms)) > 50  # contexts are fresh each round: the arm index moves
    for p, b in zip(python, builtin):
        for name in ["regret", "reward", "reward_cum", "expected_cum", "hp1"]:
            assert p[name] == pytest.approx(b[name], rel=1e-9, abs=0.0, nan_ok=True), (p["step"], name)
    # The run learns: a round of the last thousand costs less regret than one of the first 500.
    r = [x["regret"] for x in builtin]
    assert (r[1500] - r[500]) / 1000 < 0.9 * r[500] / 500


def test_another_exploration_rate_pulls_other_arms():
    builtin = ab.run_builtin(linucb_job(0, 300))
    python = run_linucb(linucb_job(0, 300, value=3.0))
    assert [r["arm"] for r in python] != [r["arm"] for r in builtin]


def test_the_environment_is_common_to_every_algorithm_of_a_seed():
    a = ab.BanditsEnvironment(linucb_job(4, 10))
    b = ab.BanditsEnvironment(ab.Job("bandits", "synthetic", "my-tuner", seed=4, horizon=10,
                                     benchmark_params={"bottom": "linucb"}))
    assert (a.dim, a.horizon) == (25, 10)
    ca, cb = a.next_round(), b.next_round()
    assert ca.shape == (120, 25) and np.array_equal(ca, cb)
    # The paper's cube law: every feature in [-1/sqrt(d), 1/sqrt(d)].
    assert np.abs(ca).max() <= 0.2
    ra, rb = a.pull(7), b.pull(7)
    assert ra["regret"] == rb["regret"] >= 0.0 and ra["arm"] == 7
    # Rewards are drawn from each algorithm's own noise stream.
    assert ra["reward"] != rb["reward"]


def test_rounds_are_played_in_order():
    env = ab.BanditsEnvironment(linucb_job(0, 2))
    with pytest.raises(RuntimeError, match="next_round"):
        env.pull(0)
    env.next_round()
    with pytest.raises(RuntimeError, match="drawn already"):
        env.next_round()
    with pytest.raises(ValueError, match="out of range"):
        env.pull(120)
    env.pull(0)
    env.next_round()
    m = env.pull(1)
    assert env.rounds == 2 and m["regret"] >= 0.0
    with pytest.raises(RuntimeError, match="over"):
        env.next_round()
    with pytest.raises(ValueError, match="not bandits"):
        ab.BanditsEnvironment(ab.Job("lse", "himmelblau", "random"))
