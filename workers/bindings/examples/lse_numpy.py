"""Three LSE methods written in numpy on armada's bindings: uniform random sampling, the
straddle heuristic (Bryan et al. 2005) and the randomized straddle of Inatsu et al. (2024),
whose confidence multiplier is drawn afresh each step. The benchmark's instance, noise and
metrics, and the GP model it fixes, come from `armada_bindings`; the method is the numpy
below. On the same job they give the built-in algorithms' trajectories bit for bit
(workers/bindings/tests/test_lse.py).
"""

import math

import numpy as np

import armada_bindings as ab

METRICS = [
    "loss",
    "fscore",
    "beta_sqrt",
    "af_max",
    "jitter",
    "chosen_index",
    "y",
    "max_loss",
    "returned_step",
    "returned_loss",
    "returned_max_loss",
]


def record(step, env, post, index, y, beta_sqrt, af_max):
    """The family's metrics of one step: the benchmark's of the posterior mean's
    classification, and what the method reports."""
    m = env.metrics(post.mean >= env.theta)
    nan = math.nan
    return {
        "step": step,
        "loss": m["loss"],
        "fscore": m["fscore"],
        "beta_sqrt": beta_sqrt,
        "af_max": af_max,
        "jitter": post.jitter,
        "chosen_index": float(index),
        "y": y,
        "max_loss": m["max_loss"],
        "returned_step": nan,
        "returned_loss": nan,
        "returned_max_loss": nan,
    }


def run_python(job, choose):
    """Step 0 at the benchmark's initial candidate, then `choose(t, post, env)` each step."""
    env = ab.LseEnvironment(job)
    post = env.posterior()
    index = env.initial_index()
    y = env.observe(index)
    post.observe(index, y)
    records = [record(0, env, post, index, y, math.nan, math.nan)]
    for t in range(1, job.horizon + 1):
        index, beta_sqrt, af_max = choose(t, post, env)
        y = env.observe(index)
        post.observe(index, y)
        records.append(record(t, env, post, index, y, beta_sqrt, af_max))
    return records


def random_method(job):
    """Random (paper Section 5.1): a uniform candidate, from the algorithm's own stream."""
    stream = job.algorithm_stream("acquisition")
    return lambda t, post, env: (stream.randrange(env.n_candidates), math.nan, math.nan)


def straddle_method(job):
    """Straddle (paper Section 3.2): argmax of beta^1/2 sigma - |mu - theta| (numpy's argmax:
    the lowest index)."""
    beta_sqrt = job.algorithm_params["beta_sqrt"]

    def choose(t, post, env):
        af = beta_sqrt * np.sqrt(np.maximum(post.var, 0.0)) - np.abs(post.mean - env.theta)
        i = int(np.argmax(af))
        return i, beta_sqrt, float(af[i])

    return choose


def rand_straddle_method(job):
    """The randomized straddle: beta_t^(1/2) = sqrt(-2 ln U) (a chi-squared draw with two
    degrees of freedom, from the algorithm's stream), the straddle clipped at 0, and where it
    is 0 everywhere, the unclipped straddle's argmax with the same beta (the default zero
    rule). `ab.ln` is armada's logarithm: numpy's may round otherwise."""
    stream = job.algorithm_stream("acquisition")

    def choose(t, post, env):
        beta_sqrt = math.sqrt(-2.0 * ab.ln(1.0 - stream.random()))
        straddle = beta_sqrt * np.sqrt(np.maximum(post.var, 0.0)) - np.abs(post.mean - env.theta)
        clipped = np.maximum(straddle, 0.0)
        i = int(np.argmax(clipped))
        af_max = float(clipped[i])
        if af_max <= 0.0:
            i = int(np.argmax(straddle))
        return i, beta_sqrt, af_max

    return choose
