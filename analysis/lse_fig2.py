#!/usr/bin/env python3
"""Figure 2 of the randomized-straddle paper (Inatsu et al., arXiv:2408.03144): the 1-D toy.

    python analysis/lse_fig2.py results/lse-fig2 [--out DIR]

Reads the trajectories of `sweeps/lse-fig2.toml` (benchmark `toy-1d`: the straddle with a
fixed beta^1/2 of 1 and of 10, and the randomized straddle; 20 observations per run) and
refits every run's GP here, in numpy, from the observations its records carry
(`chosen_index`, `y`):

* fig2.png: for one simulation (--seed, default 0), per method, the true f, the posterior
  mean after the 20 observations and the observations (top), and the acquisition function
  that chose the last point, with the beta^1/2 that run drew (bottom);
* fig2-queries.md: over every simulation, where each method put its 19 queries (near a
  crossing of the threshold, how much of the domain they cover, how often a point was
  observed again) and its loss r_t and F-score at the end, mean +- standard error;
* an independent check of armada's GP and acquisition: the numpy refit's choice at every
  step against the one armada recorded, and its loss against armada's.

The toy (paper Figure 2; the domain and kernel, which the paper does not give, are ours):
f(x) = 5 exp(-(x+5)^2) + 5 exp(-(x-5)^2) - 2 exp(-x^2) - 1 on 1,001 points of [-10, 10],
threshold 3, noise variance 0.01, kernel 4 exp(-(x - x')^2 / 1), first point x = -5.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from canonical import canonical_params  # noqa: E402

XS = np.linspace(-10.0, 10.0, 1001)
THETA = 3.0
NOISE_VAR = 1e-2
SIGNAL_VAR = 4.0
L_DIV = 1.0
# Distance within which a query counts as near a threshold crossing, and within which a
# grid point counts as covered by a query: one kernel length (k falls to e^-1 at distance 1).
NEAR = 1.0


def f(x: np.ndarray) -> np.ndarray:
    return 5 * np.exp(-((x + 5) ** 2)) + 5 * np.exp(-((x - 5) ** 2)) - 2 * np.exp(-(x**2)) - 1


def kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return SIGNAL_VAR * np.exp(-((a[:, None] - b[None, :]) ** 2) / L_DIV)


def posterior(xq: np.ndarray, yq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance on XS of the GP given observations (xq, yq), by a Cholesky solve."""
    chol = np.linalg.cholesky(kernel(xq, xq) + NOISE_VAR * np.eye(len(xq)))
    cross = kernel(XS, xq)
    alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, yq))
    v = np.linalg.solve(chol, cross.T)
    return cross @ alpha, np.maximum(SIGNAL_VAR - (v * v).sum(axis=0), 0.0)


def acquisition(mean: np.ndarray, var: np.ndarray, beta_sqrt: float, clipped: bool) -> np.ndarray:
    """The straddle beta^1/2 sigma - |mu - theta|; the proposed method clips it at 0."""
    a = beta_sqrt * np.sqrt(var) - np.abs(mean - THETA)
    return np.maximum(a, 0.0) if clipped else a


def choose(mean: np.ndarray, var: np.ndarray, beta_sqrt: float, clipped: bool) -> int:
    """argmax, lowest index on ties; the proposed method's all-zero case takes the unclipped
    straddle's argmax with the same beta (armada's default `zero_rule = "straddle"`)."""
    a = acquisition(mean, var, beta_sqrt, clipped)
    if clipped and a.max() == 0.0:
        a = acquisition(mean, var, beta_sqrt, False)
    return int(np.argmax(a))


def loss_and_fscore(mean: np.ndarray) -> tuple[float, float]:
    truth, est = f(XS) >= THETA, mean >= THETA
    loss = float(np.abs(f(XS) - THETA)[truth != est].sum() / len(XS))
    tp = float((truth & est).sum())
    precision = tp / est.sum() if est.sum() else 0.0
    recall = tp / truth.sum() if truth.sum() else 0.0
    return loss, (2 * precision * recall / (precision + recall) if precision + recall else 0.0)


def crossings() -> np.ndarray:
    """Where f crosses the threshold (linear interpolation between grid points)."""
    g = f(XS) - THETA
    i = np.nonzero(np.sign(g[:-1]) != np.sign(g[1:]))[0]
    return XS[i] - g[i] * (XS[i + 1] - XS[i]) / (g[i + 1] - g[i])


def fixed_beta_sqrt(algorithm: str, params: str) -> float | None:
    """The straddle's fixed beta^1/2 (None for the randomized straddle)."""
    m = re.search(r"beta_sqrt=([0-9.]+)", params) if algorithm == "straddle" else None
    return float(m.group(1)) if m else None


def method_of(algorithm: str, beta_sqrt: float | None) -> str:
    if algorithm == "rand-straddle":
        return "Proposed (beta ~ chi2_2)"
    return f"Straddle, beta^1/2 = {beta_sqrt:g}" if beta_sqrt is not None else algorithm


def runs(sweep: Path) -> list[dict]:
    """Every toy-1d job's records, steps in order."""
    parts = sorted((sweep / "trajectories").glob("*.parquet"))
    if not parts:
        sys.exit(f"error: no trajectories in {sweep}/trajectories")
    d = canonical_params(pl.concat([pl.read_parquet(p) for p in parts])).filter(pl.col("benchmark") == "toy-1d")
    if d.is_empty():
        sys.exit(f"error: {sweep} holds no toy-1d jobs")
    out = []
    for (_, algorithm, params, seed), g in d.sort("step").group_by(
        ["job_key", "algorithm", "algorithm_params", "seed"], maintain_order=True
    ):
        beta_sqrt = fixed_beta_sqrt(algorithm, params)
        out.append({
            "method": method_of(algorithm, beta_sqrt),
            "clipped": algorithm == "rand-straddle",
            "beta_sqrt": beta_sqrt,
            "seed": seed,
            "index": g["chosen_index"].to_numpy(),
            "y": g["y"].to_numpy(),
            "drawn_beta": g["beta_sqrt"].to_numpy(),
            "loss": g["loss"].to_numpy(),
            "fscore": g["fscore"].to_numpy(),
        })
    return sorted(out, key=lambda r: (r["method"], r["seed"]))


def replay(run: dict) -> dict:
    """The numpy refit of one run: its choice at every step and its loss at every step."""
    choices, losses = [], []
    for t in range(len(run["index"])):
        xq, yq = XS[run["index"][: t + 1]], run["y"][: t + 1]
        mean, var = posterior(xq, yq)
        losses.append(loss_and_fscore(mean)[0])
        if t + 1 < len(run["index"]):
            beta = run["beta_sqrt"] if run["beta_sqrt"] is not None else run["drawn_beta"][t + 1]
            choices.append(choose(mean, var, beta, run["clipped"]))
    return {"choices": np.array(choices), "losses": np.array(losses)}


def query_stats(run: dict) -> dict:
    """Where a run's queries (steps 1..19, the first point is fixed) went."""
    q = XS[run["index"][1:]]
    cross = crossings()
    distance = np.abs(q[:, None] - cross[None, :])
    near = distance.min(axis=1) <= NEAR
    # Both bumps found: a query near a crossing of the left bump and one near the right's.
    both = (distance[:, cross < 0] <= NEAR).any() and (distance[:, cross > 0] <= NEAR).any()
    covered = (np.abs(XS[:, None] - XS[run["index"]][None, :]).min(axis=1) <= NEAR).mean()
    return {
        "near": near.mean(),
        "both": float(both),
        "covered": covered,
        "repeats": len(q) + 1 - len(np.unique(run["index"])),
        "loss": run["loss"][-1],
        "fscore": run["fscore"][-1],
    }


def mean_se(values: list[float]) -> str:
    v = np.asarray(values, float)
    se = v.std(ddof=1) / math.sqrt(len(v)) if len(v) > 1 else 0.0
    return f"{v.mean():.4g} ± {se:.2g}"


def table(all_runs: list[dict], checks: dict) -> str:
    methods = sorted({r["method"] for r in all_runs})
    n = {m: sum(r["method"] == m for r in all_runs) for m in methods}
    head = [
        "method", "runs", f"queries within {NEAR:g} of a crossing", "runs with queries near both bumps",
        f"domain within {NEAR:g} of a query",
        "queries at a point seen before", "loss r_t at t = 19", "F-score at t = 19",
    ]
    lines = [
        "Figure 2 (the 1-D toy): where each method put its 19 queries, mean ± standard error over the runs",
        f"(the threshold crossings are at x = {', '.join(f'{c:.2f}' for c in crossings())})",
        "",
        "| " + " | ".join(head) + " |",
        "|---|" + "---:|" * (len(head) - 1),
    ]
    for m in methods:
        s = [query_stats(r) for r in all_runs if r["method"] == m]
        lines.append("| " + " | ".join([
            m, str(n[m]), mean_se([x["near"] for x in s]), mean_se([x["both"] for x in s]),
            mean_se([x["covered"] for x in s]),
            mean_se([x["repeats"] for x in s]), mean_se([x["loss"] for x in s]), mean_se([x["fscore"] for x in s]),
        ]) + " |")
    lines += [
        "",
        "Armada's choices refitted in numpy from the recorded observations (an independent GP and",
        f"acquisition): {checks['same']} of {checks['steps']} choices the same; largest difference of the",
        f"loss r_t over every step {checks['loss_diff']:.1e}.",
    ]
    return "\n".join(lines) + "\n"


def draw(all_runs: list[dict], seed: int, out: Path) -> Path:
    shown = [r for r in all_runs if r["seed"] == seed]
    fig, axes = plt.subplots(2, len(shown), figsize=(4.6 * len(shown), 6.0), squeeze=False, sharex=True)
    for col, r in enumerate(shown):
        xq, yq = XS[r["index"]], r["y"]
        mean, var = posterior(xq, yq)
        top, bottom = axes[0, col], axes[1, col]
        top.plot(XS, f(XS), color="tab:red", label="f")
        top.plot(XS, mean, color="black", label="posterior mean")
        top.axhline(THETA, color="gray", ls="--", lw=0.8)
        top.plot(xq, yq, "x", color="tab:blue", label="observations")
        top.set(title=r["method"], ylim=(-4.5, 6.5))
        # The acquisition that chose the last point: the posterior of the first 19.
        m19, v19 = posterior(xq[:-1], yq[:-1])
        beta = r["beta_sqrt"] if r["beta_sqrt"] is not None else r["drawn_beta"][-1]
        bottom.plot(XS, acquisition(m19, v19, beta, r["clipped"]), color="tab:green")
        bottom.axvline(xq[-1], color="tab:blue", lw=0.8)
        bottom.set(title=rf"AF at t = 19, $\beta^{{1/2}}$ = {beta:.3g}", xlabel="x")
    axes[0, 0].legend(fontsize=8, loc="lower left")
    fig.suptitle(f"Figure 2: the 1-D toy, simulation {seed} of the sweep; 20 observations", fontsize=10)
    fig.tight_layout()
    path = out / "fig2.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def figure2(sweep: Path, out: Path, seed: int = 0) -> list[Path]:
    """Draw fig2.png and write fig2-queries.md for the toy-1d jobs of `sweep`."""
    all_runs = runs(sweep)
    same = steps = 0
    loss_diff = 0.0
    for r in all_runs:
        rep = replay(r)
        same += int((rep["choices"] == r["index"][1:]).sum())
        steps += len(rep["choices"])
        loss_diff = max(loss_diff, float(np.abs(rep["losses"] - r["loss"]).max()))
    text = table(all_runs, {"same": same, "steps": steps, "loss_diff": loss_diff})
    print(text)
    out.mkdir(parents=True, exist_ok=True)
    md = out / "fig2-queries.md"
    md.write_text(text)
    return [draw(all_runs, seed, out), md]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweep_dir", type=Path, help="results/<sweep> holding trajectories/*.parquet")
    ap.add_argument("--out", type=Path, help="where to write fig2.png and fig2-queries.md (default: the sweep's figures/)")
    ap.add_argument("--seed", type=int, default=0, help="the simulation drawn in fig2.png (default 0)")
    args = ap.parse_args(argv)
    for p in figure2(args.sweep_dir, args.out or args.sweep_dir / "figures", args.seed):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
