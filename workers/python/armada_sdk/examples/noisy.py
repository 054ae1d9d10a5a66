"""``noisy``: minimising noisy test functions, a worked example family in numpy.

Benchmarks: ``branin`` (2-D) and ``hartmann3`` (3-D), each observed with Gaussian noise of
``noise_sd``. Every algorithm of a seed sees the same initial design and the same noise
sequence (environment streams). Algorithms: ``random-search`` (uniform points) and
``gp-ucb`` (an exact GP with a squared-exponential kernel on the unit cube, fixed
lengthscale, evaluating the candidate of least ``mean - beta * sd`` among uniform ones).

    python -m armada_sdk.worker armada_sdk.examples.noisy:FAMILY --coordinator URL
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..family import Algorithm, Benchmark, Family, Float, Int, Metric
from ..keys import Job, JobStreams

N_INIT = 3


def branin(x: np.ndarray) -> float:
    """The Branin-Hoo function at ``x`` (2-D, on [-5, 10] x [0, 15]); its minimum is 0.397887..."""
    x1, x2 = x
    b, c, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 1 / (8 * math.pi)
    return float((x2 - b * x1**2 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10)


_H_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
_H_P = 1e-4 * np.array([[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]])
_H_ALPHA = [1.0, 1.2, 3.0, 3.2]


def hartmann3(x: np.ndarray) -> float:
    """The Hartmann-3 function at ``x`` (3-D, on [0, 1]^3); its minimum is -3.86278..."""
    total = 0.0
    for i in range(4):
        inner = sum(_H_A[i, j] * (x[j] - _H_P[i, j]) ** 2 for j in range(3))
        total -= _H_ALPHA[i] * math.exp(-inner)
    return total


#: name -> (function, lower bounds, upper bounds, minimum value)
FUNCTIONS = {
    "branin": (branin, np.array([-5.0, 0.0]), np.array([10.0, 15.0]), 0.397887357729738),
    "hartmann3": (hartmann3, np.zeros(3), np.ones(3), -3.86278214782076),
}


class Episode:
    """A job of ``noisy``: the initial design, then one point per step chosen by the job's
    algorithm, observed with the benchmark's noise."""

    def __init__(self, job: Job, streams: JobStreams):
        self.f, self.lo, self.hi, self.f_min = FUNCTIONS[job.benchmark]
        self.noise_sd = float(job.benchmark_params["noise_sd"])
        self.noise = streams.environment("noise")
        self.algorithm, self.params = job.algorithm, job.algorithm_params
        self.candidates = streams.algorithm("candidates")
        # The initial design (unit cube coordinates), common to every algorithm of the seed.
        self.u = list(streams.environment("init").uniform(size=(N_INIT, len(self.lo))))
        self.y = [self._observe(u) for u in self.u]

    def _observe(self, u: np.ndarray) -> float:
        return self.f(self.lo + u * (self.hi - self.lo)) + self.noise_sd * float(self.noise.standard_normal())

    def _metrics(self) -> dict[str, float]:
        best = int(np.argmin(self.y))
        true = self.f(self.lo + self.u[best] * (self.hi - self.lo))
        return {"best_observed": self.y[best], "simple_regret": true - self.f_min, "n_evals": float(len(self.y))}

    def initial(self) -> dict[str, float]:
        """The metrics after the initial design."""
        return self._metrics()

    def step(self, t: int) -> Optional[dict[str, float]]:
        """Evaluate one more point (uniform, or the GP's least lower confidence bound); the metrics after it."""
        d = len(self.lo)
        if self.algorithm == "random-search":
            u = self.candidates.uniform(size=d)
        else:
            u = self._ucb(self.candidates.uniform(size=(int(self.params["candidates"]), d)))
        self.u.append(u)
        self.y.append(self._observe(u))
        return self._metrics()

    def _ucb(self, candidates: np.ndarray) -> np.ndarray:
        """The candidate of least ``mean - beta * sd`` under a GP on the standardised data."""
        X, y = np.array(self.u), np.array(self.y)
        scale = y.std() if y.std() > 0 else 1.0
        z = (y - y.mean()) / scale
        ell = float(self.params["lengthscale"])
        noise = max((self.noise_sd / scale) ** 2, 1e-6)

        def kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            # numpy types this Any; an annotation or a cast would change the family's code digest.
            return np.exp(-0.5 * ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1) / ell**2)  # type: ignore[no-any-return]

        chol = np.linalg.cholesky(kernel(X, X) + noise * np.eye(len(X)))
        alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, z))
        k = kernel(candidates, X)
        mean = k @ alpha
        v = np.linalg.solve(chol, k.T)
        sd = np.sqrt(np.maximum(1.0 - (v**2).sum(0), 0.0))
        # numpy types this Any; an annotation or a cast would change the family's code digest.
        return candidates[int(np.argmin(mean - float(self.params["beta"]) * sd))]  # type: ignore[no-any-return]


FAMILY = Family(
    name="noisy",
    version=1,
    doc="minimising noisy test functions (the armada-sdk worked example)",
    benchmarks=[
        Benchmark("branin", "Branin-Hoo on [-5, 10] x [0, 15]", [Float("noise_sd", 0.0, 10.0, 0.1, "observation noise sd")]),
        Benchmark("hartmann3", "Hartmann-3 on [0, 1]^3", [Float("noise_sd", 0.0, 10.0, 0.05, "observation noise sd")]),
    ],
    algorithms=[
        Algorithm("random-search", "uniform points"),
        Algorithm(
            "gp-ucb",
            "GP lower confidence bound over uniform candidates",
            [
                Float("beta", 0.0, 100.0, 2.0, "sd multiplier"),
                Float("lengthscale", 0.01, 10.0, 0.2, "SE lengthscale on the unit cube"),
                Int("candidates", 16, 4096, 256, "uniform candidates per step"),
            ],
        ),
    ],
    metrics=[
        Metric("best_observed", "least noisy observation so far"),
        Metric("simple_regret", "f(x of the best observation) - f*"),
        Metric("n_evals", "evaluations so far, the initial design included", kind="int"),
    ],
    headline_metrics=["simple_regret"],
    start=Episode,
)
