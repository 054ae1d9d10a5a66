"""What the bindings cost: seconds per step of each numpy method on the bindings (LSE's
random and straddle, LinUCB at a fixed exploration rate) against the built-in method on the
same job (`run_builtin`: the episode a Rust worker runs, in this process), in one run, with
the ratio, and whether the two trajectories were the same.

    python workers/bindings/examples/bench.py [--horizon 300] [--rounds 5]

Build the module with `maturin develop --release` for figures worth quoting.
"""

import argparse
import statistics
import struct
import time

import armada_bindings as ab
from bandits_numpy import run_linucb
from lse_numpy import METRICS, rand_straddle_method, random_method, run_python, straddle_method


def per_step(run, horizon: int, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) / (horizon + 1))
    return statistics.median(times)


def same(python: list, builtin: list, metrics: list) -> bool:
    """The same trajectory, bit for bit (NaN equal to NaN)."""
    key = lambda r: [r["step"]] + [struct.pack("<d", r[m]) for m in metrics]  # noqa: E731
    return [key(r) for r in python] == [key(r) for r in builtin]


def workloads(horizon: int):
    """(benchmark, method, job, the numpy method's run, the metrics compared bit for bit)."""
    for benchmark in ["himmelblau", "gp-sample-path"]:
        for algorithm, method in [("random", random_method), ("straddle", straddle_method),
                                  ("rand-straddle", rand_straddle_method)]:
            job = ab.Job("lse", benchmark, algorithm, seed=0, horizon=horizon)
            yield benchmark, algorithm, job, lambda job=job, method=method: run_python(job, method(job)), METRICS
    job = ab.Job("bandits", "synthetic", "fixed", seed=0, horizon=horizon,
                 benchmark_params={"bottom": "linucb"}, algorithm_params={"value": 1.0})
    # numpy's sums of products may round otherwise than Rust's: the same arms, the regret
    # computed by the environment (so the same bits), the rewards with the arms.
    yield "synthetic", "linucb", job, lambda: run_linucb(job), ["arm", "regret", "reward", "reward_cum"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"{'benchmark':<16}{'algorithm':<15}{'same':<6}{'rust s/step':>14}{'python s/step':>15}{'ratio':>8}")
    for benchmark, algorithm, job, run, metrics in workloads(args.horizon):
        agree = "yes" if same(run(), ab.run_builtin(job), metrics) else "NO"
        rust = per_step(lambda: ab.run_builtin(job), args.horizon, args.rounds)
        python = per_step(run, args.horizon, args.rounds)
        print(f"{benchmark:<16}{algorithm:<15}{agree:<6}{rust:>14.3e}{python:>15.3e}{python / rust:>8.2f}")


if __name__ == "__main__":
    main()
