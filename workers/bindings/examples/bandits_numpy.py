"""LinUCB (Li et al. 2010) at a fixed exploration rate, written in numpy on armada's
bindings: the `bandits` environment (contexts, rewards and their noise, regret) comes from
`armada_bindings`, the bandit is the numpy below. On the job of the built-in LinUCB under
the `fixed` tuner it pulls the same arm in every round (workers/bindings/tests/test_bandits.py).
"""

import math

import numpy as np

import armada_bindings as ab


class LinUcb:
    """Ridge regression with the optimistic index `x^T theta + alpha ||x||_{V^-1}`."""

    def __init__(self, dim: int, alpha: float, ridge: float = 1.0):
        self.alpha = alpha
        self.v_inv = np.eye(dim) / ridge
        self.b = np.zeros(dim)
        self.theta = np.zeros(dim)

    def choose(self, contexts: np.ndarray) -> int:
        widths = np.einsum("ij,jk,ik->i", contexts, self.v_inv, contexts)
        return int(np.argmax(contexts @ self.theta + self.alpha * np.sqrt(widths)))

    def observe(self, x: np.ndarray, y: float) -> None:
        # Sherman-Morrison: V^-1 - u u^T / (1 + x^T u), u = V^-1 x.
        u = self.v_inv @ x
        self.v_inv -= np.outer(u, u) / (1.0 + x @ u)
        self.b += y * x
        self.theta = self.v_inv @ self.b


def run_linucb(job) -> list:
    """The job's records: step 0, then one step per round with the family's metrics."""
    alpha = job.algorithm_params["value"]
    env = ab.BanditsEnvironment(job)
    bandit = LinUcb(env.dim, alpha)
    nan = math.nan
    records = [
        {"step": 0, "regret": 0.0, "reward": nan, "reward_cum": 0.0, "expected_cum": 0.0, "arm": nan,
         "hp1": nan, "hp2": nan}
    ]
    for t in range(1, env.horizon + 1):
        contexts = env.next_round()
        arm = bandit.choose(contexts)
        m = env.pull(arm)
        bandit.observe(contexts[arm], m["reward"])
        records.append({"step": t, **m, "arm": float(arm), "hp1": alpha, "hp2": nan})
    return records
