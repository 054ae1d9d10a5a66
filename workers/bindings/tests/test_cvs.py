"""The `cvs` problems through the bindings: playing a built-in method's control sets gives
its realised costs and budget bit for bit; the draws are common to every algorithm of a
seed; the metrics are the family's."""

import math

import numpy as np
import pytest

import armada_bindings as ab


def cvs_job(algorithm, seed=0, budget=6.0, **params):
    return ab.Job("cvs", "hartmann6-12d", algorithm, seed=seed, horizon=500,
                  benchmark_params={"budget": budget, **params})


@pytest.mark.parametrize("seed", [0, 1])
def test_the_builtins_sets_played_cost_what_they_cost_it(seed):
    job = cvs_job("ucb-psq", seed=seed)
    builtin = ab.run_builtin(job)
    env = ab.CvsEnvironment(job)
    env.initial_design()
    sets = env.control_sets
    for rec in builtin[1:]:
        s = int(rec["set"]) - 1
        play = env.play(s, [0.5] * len(sets[s]))
        assert (play["cost"], play["cum_cost"], play["n_evals"]) == (rec["cost"], rec["cum_cost"], rec["n_evals"])
    # The budget ends both runs after the same play.
    assert env.done and len(builtin) > 3
    assert builtin[-2]["cum_cost"] < env.budget <= builtin[-1]["cum_cost"]


def test_plays_and_their_metrics():
    env = ab.CvsEnvironment(cvs_job("my-method", budget=3.0))
    assert env.dim == 12 and len(env.control_sets) == 7
    x0, y0 = env.initial_design()
    assert x0.shape == (5, 12) and y0.shape == (5,) and 0.0 <= x0.min() and x0.max() <= 1.0
    full = max(range(7), key=lambda i: len(env.control_sets[i]))
    ctrl = env.control_sets[full]
    first = env.play(full, [0.25] * len(ctrl))
    assert first["x"][ctrl].tolist() == [0.25] * len(ctrl)
    assert first["n_evals"] == 1 and first["cum_cost"] == first["cost"] > 0.0
    f_star = first["simple_regret"] + first["best_value"]
    assert first["best_value"] == first["value"]
    assert first["quality_regret"] == pytest.approx(0.9 * f_star - first["value"], rel=1e-12)
    small = min(range(7), key=lambda i: len(env.control_sets[i]))
    second = env.play(small, [0.9] * len(env.control_sets[small]))
    assert second["best_value"] == max(first["value"], second["value"])
    assert second["simple_regret"] + second["best_value"] == pytest.approx(f_star, rel=1e-12)
    assert second["quality_regret"] == pytest.approx(
        first["quality_regret"] + 0.9 * f_star - second["value"], rel=1e-12)
    # The random part of a play: the variables outside the set, inside [0, 1].
    others = [i for i in range(12) if i not in env.control_sets[small]]
    assert np.all((second["x"][others] >= 0.0) & (second["x"][others] <= 1.0))
    while not env.done:
        env.play(full, [0.5] * len(ctrl))
    assert env.spent >= env.budget
    with pytest.raises(ValueError, match="spent"):
        env.play(full, [0.5] * len(ctrl))


def test_the_strict_rule_refuses_an_overshooting_play():
    env = ab.CvsEnvironment(cvs_job("my-method", budget=0.5, budget_rule="strict"))
    full = max(range(7), key=lambda i: len(env.control_sets[i]))
    plays = []
    while (p := env.play(full, [0.5] * len(env.control_sets[full]))) is not None:
        plays.append(p)
    assert env.done and env.spent <= env.budget
    assert all(p["cum_cost"] <= env.budget for p in plays)


def test_draws_are_common_to_every_algorithm_of_a_seed_and_plays_are_checked():
    a, b = ab.CvsEnvironment(cvs_job("ucb-psq")), ab.CvsEnvironment(cvs_job("my-method"))
    assert np.array_equal(a.mc_samples(64), b.mc_samples(64))
    xa, ya = a.initial_design()
    xb, yb = b.initial_design()
    assert np.array_equal(xa, xb) and np.array_equal(ya, yb)
    pa, pb = a.play(0, [0.1, 0.2, 0.3]), b.play(0, [0.1, 0.2, 0.3])
    assert np.array_equal(pa["x"], pb["x"]) and pa["y"] == pb["y"] and pa["cost"] == pb["cost"]
    with pytest.raises(ValueError, match="variables"):
        a.play(0, [0.1])
    with pytest.raises(ValueError, match="outside"):
        a.play(0, [0.1, 0.2, 1.5])
    with pytest.raises(ValueError, match="out of range"):
        a.play(7, [0.1])
    assert not math.isnan(pa["value"])
