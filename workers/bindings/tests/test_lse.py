"""The LSE benchmarks through the bindings: numpy reimplementations of the paper's
`random` and `straddle` give the built-in algorithms' trajectories bit for bit, on the
instances, noise and metrics the bindings hand out."""

import math
import struct

import numpy as np
import pytest

import armada_bindings as ab

from lse_numpy import METRICS, rand_straddle_method, random_method, run_python, straddle_method


def bits(x: float) -> bytes:
    return struct.pack("<d", float(x))


def assert_same_bits(python, builtin, what):
    assert len(python) == len(builtin), what
    for p, b in zip(python, builtin):
        assert p["step"] == b["step"], what
        for name in METRICS:
            assert bits(p[name]) == bits(b[name]), f"{what} step {p['step']} {name}: {p[name]!r} != {b[name]!r}"


@pytest.mark.parametrize("benchmark", ["himmelblau", "gp-sample-path"])
@pytest.mark.parametrize("seed", [0, 3])
def test_numpy_methods_are_the_builtins_bit_for_bit(benchmark, seed):
    methods = [("random", random_method), ("straddle", straddle_method), ("rand-straddle", rand_straddle_method)]
    for algorithm, method in methods:
        job = ab.Job("lse", benchmark, algorithm, seed=seed, horizon=40, sweep_seed=7)
        builtin = ab.run_builtin(job)
        assert [r["step"] for r in builtin] == list(range(41))
        python = run_python(job, method(job))
        assert_same_bits(python, builtin, f"{algorithm} on {benchmark} seed {seed}")
        # Not the same trajectory by accident: the algorithms chose differently.
        assert len({r["chosen_index"] for r in builtin}) > 10


def test_a_changed_method_is_told_apart():
    """The comparison can fail: straddle with another beta^1/2 leaves the built-in's path."""
    job = ab.Job("lse", "himmelblau", "straddle", seed=1, horizon=30)
    builtin = ab.run_builtin(job)
    other = ab.Job("lse", "himmelblau", "straddle", seed=1, horizon=30, algorithm_params={"beta_sqrt": 2.0})
    with pytest.raises(AssertionError):
        assert_same_bits(run_python(other, straddle_method(other)), builtin, "beta 2 against beta 3")


def test_the_benchmark_is_common_to_every_algorithm_of_a_seed():
    a = ab.Job("lse", "gp-sample-path", "random", seed=2)
    b = ab.Job("lse", "gp-sample-path", "my-own-method", seed=2, algorithm_params={"width": 3})
    assert not b.builtin and b.key is None and a.builtin and len(a.key) == 32
    ea, eb = ab.LseEnvironment(a), ab.LseEnvironment(b)
    assert ea.initial_index() == eb.initial_index()
    assert [ea.observe(i) for i in (5, 5, 17)] == [eb.observe(i) for i in (5, 5, 17)]
    assert a.environment_stream("noise").next_u64() == b.environment_stream("noise").next_u64()
    assert a.algorithm_stream("acquisition").next_u64() != b.algorithm_stream("acquisition").next_u64()
    # Another seed is another sample path.
    c = ab.Job("lse", "gp-sample-path", "random", seed=3)
    assert ab.LseEnvironment(c).observe(5) != ab.LseEnvironment(a).observe(5)


def test_the_environment_knows_its_benchmark():
    env = ab.LseEnvironment(ab.Job("lse", "himmelblau", "random"))
    x = env.candidates
    assert x.shape == (2500, 2) and env.n_candidates == 2500
    assert x[0].tolist() == [-5.0, -5.0] and x[-1].tolist() == [5.0, 5.0]
    assert env.theta == 0.0 and env.noisy_observations and env.allow_repeats
    assert env.noise_var == pytest.approx(math.exp(4.0), rel=1e-15)
    # The true upper set scores perfectly; its complement misclassifies every point.
    f = -((x[:, 0] ** 2 + x[:, 1] - 11) ** 2) - (x[:, 0] + x[:, 1] ** 2 - 7) ** 2 + 100
    truth = f >= 0.0
    assert truth.sum() == 1064
    perfect = env.metrics(truth)
    assert perfect == {"loss": 0.0, "fscore": 1.0, "max_loss": 0.0}
    worst = env.metrics(~truth)
    assert worst["fscore"] == 0.0
    assert worst["loss"] == pytest.approx(np.abs(f).mean(), rel=1e-12)
    assert worst["max_loss"] == pytest.approx(np.abs(f).max(), rel=1e-12)
    # A strided view is read as well as a contiguous array.
    doubled = np.repeat(truth, 2)[::2]
    assert env.metrics(doubled) == perfect
    with pytest.raises(ValueError, match="2500"):
        env.metrics(truth[:10])
    with pytest.raises(ValueError, match="out of range"):
        env.observe(2500)


def test_the_carrier_map_refuses_a_repeat():
    env = ab.LseEnvironment(ab.Job("lse", "carrier-lifetime", "random"))
    assert not env.noisy_observations and not env.allow_repeats
    env.observe(3)
    with pytest.raises(ValueError, match="no repeats"):
        env.observe(3)
    assert env.observed[3] and env.observed.sum() == 1


def test_jobs_are_completed_and_checked_like_a_coordinators():
    job = ab.Job("lse", "himmelblau", "straddle", seed=4, horizon=9)
    assert job.algorithm_params == {"beta_sqrt": 3.0, "tie_break": "lowest-index"}
    explicit = ab.Job("lse", "himmelblau", "straddle", seed=4, horizon=9, algorithm_params={"beta_sqrt": 3})
    assert explicit.key == job.key and explicit.algorithm_params["beta_sqrt"] == 3.0
    assert ab.Job("lse", "himmelblau", "straddle", seed=5, horizon=9).key != job.key
    with pytest.raises(ValueError, match="benchmark.*allowed"):
        ab.Job("lse", "himmelblau2", "random")
    with pytest.raises(ValueError, match="algorithm_params.beta_sqrt"):
        ab.Job("lse", "himmelblau", "straddle", algorithm_params={"beta_sqrt": -1.0})
    with pytest.raises(ValueError, match="family"):
        ab.Job("nope", "himmelblau", "random")
    with pytest.raises(ValueError, match="horizon"):
        ab.Job("lse", "himmelblau", "my-method", horizon=0)
    with pytest.raises(TypeError, match="algorithm_params.width"):
        ab.Job("lse", "himmelblau", "my-method", algorithm_params={"width": [1]})
    with pytest.raises(ValueError, match="LseBoxEnvironment"):
        ab.LseEnvironment(ab.Job("lse", "sphere-5d", "random"))
    with pytest.raises(ValueError, match="LseEnvironment"):
        ab.LseBoxEnvironment(ab.Job("lse", "himmelblau", "random"))
    with pytest.raises(ValueError, match="not one of"):
        ab.run_builtin(ab.Job("lse", "himmelblau", "my-method"))


def test_streams_draw_as_the_families_do():
    job = ab.Job("lse", "himmelblau", "random", seed=1)
    s, t = job.environment_stream("x"), job.environment_stream("x")
    assert s.random_array(5).tolist() == [t.random() for _ in range(5)]
    assert s.standard_normal_array(4).tolist() == [t.standard_normal() for _ in range(4)]
    u = job.environment_stream("moments").random_array(200_000)
    assert 0.0 <= u.min() and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.003
    z = job.environment_stream("moments").standard_normal_array(200_000)
    assert abs(z.mean()) < 0.01 and abs(z.var() - 1.0) < 0.015
    counts = np.bincount([s.randrange(3) for _ in range(30_000)], minlength=3)
    assert counts.min() > 9_500
    with pytest.raises(ValueError):
        s.randrange(0)


def test_of_reads_any_object_with_a_jobs_fields():
    class Lease:
        family, benchmark, algorithm = "lse", "sinusoidal", "us"
        seed, horizon, sweep_seed = 2, 5, 9
        benchmark_params, algorithm_params = {}, {"tie_break": "random"}

    job = ab.Job.of(Lease())
    assert (job.family, job.benchmark, job.algorithm, job.seed, job.horizon, job.sweep_seed) == (
        "lse", "sinusoidal", "us", 2, 5, 9,
    )
    assert job.key == ab.Job("lse", "sinusoidal", "us", seed=2, horizon=5, sweep_seed=9,
                             algorithm_params={"tie_break": "random"}).key


def box_job(algorithm, seed=0, horizon=20, **params):
    return ab.Job("lse", "sphere-5d", algorithm, seed=seed, horizon=horizon,
                  benchmark_params={"pool_size": 500, "eval_points": 2000, **params})


def test_the_box_benchmarks_pool_evaluation_set_and_noise():
    env = ab.LseBoxEnvironment(box_job("my-method"))
    lo, hi, dim = env.bounds
    pool, ev = env.pool, env.eval_points
    assert pool.shape == (500, dim) and ev.shape == (2000, dim) and dim == 5
    assert lo <= pool.min() and pool.max() <= hi and lo <= ev.min() and ev.max() <= hi
    # Common to every algorithm of the seed.
    other = ab.LseBoxEnvironment(box_job("random"))
    assert np.array_equal(other.pool, pool) and np.array_equal(other.eval_points, ev)
    x0 = env.initial_point()
    assert np.array_equal(x0, other.initial_point())
    assert env.observe(x0.tolist()) == other.observe(x0.tolist())
    # sphere-5d: f(x) = 41.65518 - |x|^2; the true classification scores perfectly.
    truth = 41.65518 - (ev ** 2).sum(axis=1) >= env.theta
    assert env.metrics(truth) == {"loss": 0.0, "fscore": 1.0, "max_loss": 0.0}
    with pytest.raises(ValueError, match="outside the box"):
        env.observe([hi + 1.0] * dim)
    with pytest.raises(ValueError, match="2000"):
        env.metrics(truth[:5])
    every = ab.LseBoxEnvironment(box_job("random", metrics_every=5))
    assert [s for s in range(21) if every.metrics_due(s)] == [0, 5, 10, 15, 20]


def test_armadas_functions_on_floats_and_arrays():
    x = np.linspace(-3.0, 3.0, 603).reshape(3, 201)
    for name, reference in [("exp", math.exp), ("sin", math.sin), ("cos", math.cos), ("erf", math.erf),
                            ("erfc", math.erfc), ("expm1", math.expm1)]:
        f = getattr(ab, name)
        got = f(x)
        assert got.shape == x.shape
        assert got.ravel().tolist() == [f(float(v)) for v in x.ravel()], name
        # Within an ulp or two of Python's (the C library's) values.
        assert np.all(np.abs(got - np.vectorize(reference)(x)) <= 2 * np.spacing(np.abs(got)) + 1e-300), name
    assert ab.ln(1.0) == 0.0 and ab.exp(0.0) == 1.0 and ab.std_normal_cdf(0.0) == 0.5
    p = np.array([1e-300, 0.5, 1.0, 7.0])
    assert np.all(np.abs(ab.ln(p) - np.log(p)) <= 2 * np.spacing(np.abs(np.log(p))) + 1e-300)
    assert np.all(np.abs(ab.log1p(p) - np.log1p(p)) <= 2 * np.spacing(np.log1p(p)))
    assert ab.std_normal_cdf(1.959963984540054) == pytest.approx(0.975, abs=1e-15)
    with pytest.raises(TypeError):
        ab.exp("one")


def test_streams_draw_the_families_distributions():
    s = ab.Job("lse", "himmelblau", "random", seed=8).environment_stream("d")
    n = 100_000
    g = np.array([s.gamma(2.5, 2.0) for _ in range(n)])
    assert abs(g.mean() - 5.0) < 0.06 and abs(g.var() - 10.0) < 0.4
    b = np.array([s.beta(2.0, 5.0) for _ in range(n)])
    assert abs(b.mean() - 2.0 / 7.0) < 0.003 and 0.0 < b.min() and b.max() < 1.0
    c = np.array([s.chi_squared(3.0) for _ in range(n)])
    assert abs(c.mean() - 3.0) < 0.05 and abs(c.var() - 6.0) < 0.3
    z = np.array([s.normal(1.0, 3.0) for _ in range(n)])
    assert abs(z.mean() - 1.0) < 0.04 and abs(z.std() - 3.0) < 0.04
    u = np.array([s.uniform(-2.0, 5.0) for _ in range(n)])
    assert -2.0 <= u.min() and u.max() < 5.0 and abs(u.mean() - 1.5) < 0.03
    with pytest.raises(ValueError, match="gamma"):
        s.gamma(-1.0, 1.0)
    with pytest.raises(ValueError, match="uniform"):
        s.uniform(1.0, 1.0)
