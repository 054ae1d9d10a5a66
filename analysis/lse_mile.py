#!/usr/bin/env python3
"""MILE on the randomized-straddle paper's sinusoidal case, replayed in numpy (the check of
MILE's plateau in analysis/figures/lse/README.md).

    python analysis/lse_mile.py results/lse-mile-check [--out DIR]

For every MILE run of the sweep (`sweeps/lse-mile-check.toml`), refit the GP in numpy from
the observations its records carry (`chosen_index`, `y`: `lse` version 5 and later), keeping
the full posterior covariance by rank-one updates, and evaluate MILE's acquisition (Zanette et
al. 2019, as the paper runs it: beta^1/2 = 3) independently of armada at every step:

    p(x'|x) = Phi((mu(x') - 3 sigma_t(x'|x) - theta) s(x) / |c(x', x)|),   a(x) = sum_x' p(x'|x) - |S|

with s(x)^2 = sigma^2(x) + noise, c the posterior covariance, sigma_t^2(x'|x) = sigma^2(x') -
c^2 / s^2, and S the points already confidently above theta. Phi is scipy's `ndtr`.

It writes mile-check.md: per run, how many of armada's choices are the numpy maximiser
(lowest index on exact ties, as numpy's argmax), how many are not but tie with it to 1e-9 of
a point, and how many are not the maximiser at all; the first step from which MILE's
largest acquisition is zero (to 1e-9; to the end of the run): no observation is expected to add a
confidently classified point, the candidates whose observation changes nothing tie at zero,
and the tie rule alone picks the query; how many distinct
points the second half of the run queried, and the largest a(x) at the last step (how many
points one more observation is expected to confirm); and the loss r_t at half the horizon
and at its end.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import polars as pl
from canonical import canonical_params  # noqa: E402
from scipy.special import ndtr

THETA = 1.0
BETA_SQRT = 3.0
NOISE_VAR = math.exp(-2)
SIGNAL_VAR = math.exp(2)
L_DIV = 2 * math.exp(-3)
# Two acquisition values closer than this (in expected points) count as tied.
TIE = 1e-9


def grid() -> np.ndarray:
    a, b = np.meshgrid(np.linspace(0, 1, 50), np.linspace(0, 2, 50), indexing="ij")
    return np.c_[a.ravel(), b.ravel()]


def truth(x: np.ndarray) -> np.ndarray:
    return np.sin(10 * x[:, 0]) + np.cos(4 * x[:, 1]) - np.cos(3 * x[:, 0] * x[:, 1])


def mile_acquisition(mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """a(x) for every candidate x, in blocks of candidates to bound memory."""
    var = np.clip(np.diag(cov), 0, None)
    confident = int((mean - BETA_SQRT * np.sqrt(var) > THETA).sum())
    out = np.empty(len(mean))
    for start in range(0, len(mean), 250):
        cols = np.arange(start, min(len(mean), start + 250))
        c = cov[:, cols]
        s2 = var[cols] + NOISE_VAR
        sigma_t = np.sqrt(np.clip(var[:, None] - c**2 / s2[None, :], 0, None))
        num = mean[:, None] - BETA_SQRT * sigma_t - THETA
        with np.errstate(divide="ignore", invalid="ignore"):
            z = num * np.sqrt(s2)[None, :] / np.abs(c)
        p = np.where(np.abs(c) >= 1e-300, ndtr(z), (num > 0).astype(float))
        out[cols] = p.sum(axis=0) - confident
    return out


def replay(index: np.ndarray, y: np.ndarray, x: np.ndarray, f: np.ndarray) -> dict:
    d2 = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    cov = SIGNAL_VAR * np.exp(-d2 / L_DIV)
    mean = np.zeros(len(x))
    same = tied = other = 0
    zero_from = None
    a_max = math.nan
    losses = []
    for t in range(len(index)):
        j = index[t]
        s = cov[j, j] + NOISE_VAR
        cj = cov[:, j].copy()
        mean = mean + cj * (y[t] - mean[j]) / s
        cov -= np.outer(cj, cj) / s
        est, tru = mean >= THETA, f >= THETA
        losses.append(float(np.abs(f - THETA)[est != tru].sum() / len(f)))
        if t + 1 == len(index):
            break
        a = mile_acquisition(mean, cov)
        best = int(np.argmax(a))
        a_max = float(a[best])
        chosen = index[t + 1]
        if chosen == best:
            same += 1
        elif a[best] - a[chosen] <= TIE:
            tied += 1
        else:
            other += 1
        if a_max <= TIE:
            zero_from = t + 1 if zero_from is None else zero_from
        else:
            zero_from = None
    late = index[len(index) // 2 + 1 :]
    return {
        "same": same, "tied": tied, "other": other, "zero_from": zero_from,
        "losses": losses,
        "a_max": a_max, "late_distinct": len(np.unique(late)), "late_steps": len(late),
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweep_dir", type=Path, help="results/<sweep> holding MILE runs on `sinusoidal`")
    ap.add_argument("--out", type=Path, help="where to write mile-check.md (default: the sweep's figures/)")
    args = ap.parse_args(argv)
    parts = sorted((args.sweep_dir / "trajectories").glob("*.parquet"))
    if not parts:
        print(f"error: no trajectories in {args.sweep_dir}/trajectories", file=sys.stderr)
        return 2
    d = canonical_params(pl.concat([pl.read_parquet(p) for p in parts])).filter(
        (pl.col("algorithm") == "mile") & (pl.col("benchmark") == "sinusoidal")
    )
    if d.is_empty() or "y" not in d.columns:
        print("error: no MILE runs on sinusoidal with recorded observations (lse version 5 or later)", file=sys.stderr)
        return 2
    x = grid()
    f = truth(x)
    rows = []
    for (seed,), g in d.sort("step").group_by(["seed"], maintain_order=True):
        r = replay(g["chosen_index"].to_numpy(), g["y"].to_numpy(), x, f)
        recorded = g["loss"].to_numpy()
        loss_diff = float(np.abs(np.array(r["losses"]) - recorded).max())
        rows.append((seed, r, recorded, loss_diff))
    rows.sort(key=lambda row: row[0])
    half = (d["step"].max() or 0) // 2
    head = ["seed", "choices the numpy maximiser", "tied with it", "not the maximiser",
            "largest a(x) zero from step", f"points queried after t = {half}",
            "largest a(x) at the end",
            f"r_t at {half}", "r_t at the end", "largest difference from numpy's r_t"]
    lines = [
        "MILE on the sinusoidal case: armada's choices against an independent numpy MILE, replayed",
        f"from the recorded observations (beta^1/2 = {BETA_SQRT:g}; ties to {TIE:g} of a point)",
        "",
        "| " + " | ".join(head) + " |",
        "|---:|" + "---:|" * (len(head) - 1),
    ]
    for seed, r, recorded, loss_diff in rows:
        zero = "-" if r["zero_from"] is None else str(r["zero_from"])
        lines.append(f"| {seed} | {r['same']} | {r['tied']} | {r['other']} | {zero} | "
                     f"{r['late_distinct']} in {r['late_steps']} | {r['a_max']:.1e} | "
                     f"{recorded[half]:.5f} | {recorded[-1]:.5f} | {loss_diff:.1e} |")
    finals = np.array([rec[-1] for _, _, rec, _ in rows])
    se = finals.std(ddof=1) / math.sqrt(len(finals)) if len(finals) > 1 else 0.0
    total = sum(r["same"] + r["tied"] + r["other"] for _, r, _, _ in rows)
    lines += [
        "",
        f"{len(rows)} runs: {sum(r['same'] for _, r, _, _ in rows)} of {total} choices are the numpy maximiser, "
        f"{sum(r['tied'] for _, r, _, _ in rows)} tie with it, {sum(r['other'] for _, r, _, _ in rows)} are not;",
        f"final r_t {finals.mean():.5f} ± {se:.5f}.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    out = args.out or args.sweep_dir / "figures"
    out.mkdir(parents=True, exist_ok=True)
    (out / "mile-check.md").write_text(text)
    print(out / "mile-check.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
