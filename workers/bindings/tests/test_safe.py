"""The `safe` benchmarks through the bindings: replaying a built-in rule's actions gives its
regrets and violations bit for bit; seeds, observations and scores are the benchmark's."""

import numpy as np
import pytest

import armada_bindings as ab


def safe_job(benchmark, algorithm, seed=0, horizon=12, grid=20):
    return ab.Job("safe", benchmark, algorithm, seed=seed, horizon=horizon, benchmark_params={"grid": grid})


@pytest.mark.parametrize("benchmark,algorithm", [("clinical", "msafeopt-case1"), ("pendulum", "predvar")])
def test_a_builtin_rules_actions_replayed_score_its_regrets(benchmark, algorithm):
    job = safe_job(benchmark, algorithm)
    builtin = ab.run_builtin(job)
    env = ab.SafeEnvironment(job)
    rows = len(env.points) // len(env.s)
    for rec in builtin[1:]:
        k = int(rec["grid_index"])
        assert env.points[k][0] == rec["s"] and env.points[k][1] == rec["x1"]
        score = env.score(k, [0] * rows)
        for name in ["regret_inst", "regret_cum", "regret2_inst", "regret2_cum", "violations_cum"]:
            assert score[name] == rec[name], (rec["step"], name)
        env.observe(k)
    assert builtin[-1]["regret_cum"] > 0.0


def test_scores_are_regrets_against_the_safe_optimum():
    env = ab.SafeEnvironment(safe_job("clinical", "predvar"))
    p, s, h = env.points, env.s, env.h
    n_s = len(s)
    assert p.shape == (20 * n_s, 2) and np.all(np.diff(s) > 0) and env.noise_var == 0.0
    # Exact observations: f and g of the grid itself.
    f, g = np.array([env.observe(k) for k in range(len(p))]).T
    safe = g <= h
    best = int(np.flatnonzero(safe)[np.argmax(f[safe])])
    rows_best = [int(np.argmax(np.where(safe[i * n_s:(i + 1) * n_s], f[i * n_s:(i + 1) * n_s], -np.inf)))
                 for i in range(20)]
    assert env.score(best, rows_best) == {
        "regret_inst": 0.0, "regret_cum": 0.0, "regret2_inst": 0.0, "regret2_cum": 0.0,
        "regretx_inst": 0.0, "regretx_cum": 0.0, "violations_cum": 0,
    }
    unsafe = int(np.flatnonzero(~safe)[0])
    second = env.score(unsafe, [0] * 20)
    assert second["regret_inst"] == f[best] - f[unsafe] and second["violations_cum"] == 1
    worst_row = max(f[i * n_s + rows_best[i]] - f[i * n_s] for i in range(20))
    assert second["regretx_inst"] == worst_row
    assert env.score_after(rows_best) == (0.0, 0.0)
    with pytest.raises(ValueError, match="x-rows"):
        env.score(0, [0] * 19)
    with pytest.raises(ValueError, match="out of range"):
        env.score(0, [n_s] * 20)


def test_seeds_and_noise_are_common_to_every_rule_of_a_seed():
    a, b = ab.SafeEnvironment(safe_job("pendulum", "predvar")), ab.SafeEnvironment(safe_job("pendulum", "my-rule"))
    za, zb = a.seed_point(), b.seed_point()
    assert za[0] == 0.0 and np.array_equal(za, zb)
    # The seed's x is the stream's uniform draw on the benchmark's range, as `Stream.uniform` draws it.
    lo, hi = a.points[:, 1].min(), a.points[:, 1].max()
    job = safe_job("pendulum", "predvar")
    assert za[1] == job.environment_stream("seed-points").uniform(lo, hi)
    assert a.observe_point(za.tolist()) == b.observe_point(zb.tolist())
    assert a.observe(7) == b.observe(7)
    # Noisy: a second observation of the same action differs.
    assert a.observe(7) != b.observe(8)
    with pytest.raises(ValueError, match="coordinates"):
        a.observe_point([0.0])
