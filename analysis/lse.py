#!/usr/bin/env python3
"""Figures of the randomized-straddle paper (Inatsu et al., arXiv:2408.03144) from armada results.

    python analysis/lse.py results/lse-fig3 [results/lse-fig4 ...] [--se-mult 3] [--out DIR]

For each sweep directory it reads summary.parquet, recognises the paper's block from the
benchmarks it holds, and draws:

* Figure 1 (always; analytic): the distribution of beta^1/2 for beta ~ chi2_2 and the LSE
  theoretical beta_t^1/2 against t (|X| = 1000) and against |X| (t = 100);
* Figure 3 (finite 2-D block: gp-sample-path, sinusoidal, himmelblau): mean r_t (top) and
  F-score (bottom) against the iteration;
* Figure 4 (continuous 5-D block: sphere-5d, rosenbrock-5d, styblinski-tang-5d);
* Figure 5 (carrier-lifetime: a deterministic stand-in for the non-public data;
  carrier-lifetime-gp: the second stand-in, one draw of the model's GP).

Error bars: the paper's bars have total length six standard errors. By default a bar spans
mean +- 3 SE (--se-mult 3); --se-mult 6 gives the other reading, mean +- 6 SE.

Claims: for each block it also prints, and writes as claims.md, the paper's comparison at
five checkpoints (a tenth, a fifth, half, three fifths of the horizon, and the horizon): per benchmark,
metric and checkpoint, the proposed method's mean +- SE, the best method there, and each
comparison that beats the proposed one by more than two standard errors of the difference
(unpaired: sqrt(se_a^2 + se_b^2)). "as good or better" means none does; that is the paper's
"performs as well as or better than the comparison methods" (paper Section 5.1).

Output: each sweep's figures and claims.md go to that sweep directory's figures/ (fig1.png and
the figure of its block: fig3.png, fig4.png or fig5.png), or all to --out DIR (claims.md then
holds the last sweep's); never into the source tree. It prints the path of every file it writes.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from canonical import canonical_params  # noqa: E402

LABELS = {
    "random": "Random",
    "us": "US",
    "straddle": "Straddle",
    "lse": "LSE",
    "mile": "MILE",
    "rand-straddle": "Proposed",
}
ORDER = ["random", "us", "straddle", "lse", "mile", "rand-straddle"]
COLORS = {
    "random": "tab:gray",
    "us": "tab:green",
    "straddle": "tab:blue",
    "lse": "black",
    "mile": "tab:purple",
    "rand-straddle": "tab:red",
}
BLOCKS = {
    "fig3": (["gp-sample-path", "sinusoidal", "himmelblau"], ["GP sample path", "Sinusoidal", "Himmelblau"]),
    "fig4": (["sphere-5d", "rosenbrock-5d", "styblinski-tang-5d"], ["Sphere", "Rosenbrock", "Styblinski-Tang"]),
    "fig5": (
        ["carrier-lifetime", "carrier-lifetime-gp"],
        ["Carrier lifetime (stand-in data)", "Carrier lifetime (stand-in B: a GP draw)"],
    ),
}


def figure1(out: Path) -> Path:
    """Fig. 1: beta^1/2 ~ sqrt(chi2_2) against the LSE theoretical beta_t^1/2 (delta = 0.05)."""
    rng = np.random.default_rng(0)
    b = np.sqrt(rng.chisquare(2, size=1_000_000))
    lo, hi = math.sqrt(-2 * math.log(0.975)), math.sqrt(-2 * math.log(0.025))
    mean = math.sqrt(math.pi / 2)

    def lse_beta(card, t):
        return np.sqrt(2 * np.log(card * math.pi**2 * np.asarray(t, float) ** 2 / (6 * 0.05)))

    fig, ax = plt.subplots(1, 3, figsize=(13, 3.6))
    ax[0].hist(b, bins=200, density=True, color="tab:red", alpha=0.7)
    ax[0].set(title=r"$\beta^{1/2}$, $\beta\sim\chi^2_2$ ($10^6$ draws)", xlabel=r"$\beta^{1/2}$")
    t = np.arange(1, 101)
    ax[1].plot(t, lse_beta(1000, t), "k", label="LSE (theory)")
    ax[1].axhline(mean, color="tab:red", label="proposed: mean")
    ax[1].fill_between(t, lo, hi, color="tab:red", alpha=0.2, label="proposed: 95%")
    ax[1].set(title=r"$|X| = 1000$", xlabel="t", ylabel=r"$\beta_t^{1/2}$")
    ax[1].legend(fontsize=8)
    card = np.logspace(1, 6, 50)
    ax[2].plot(card, lse_beta(card, 100), "k")
    ax[2].axhline(mean, color="tab:red")
    ax[2].fill_between(card, lo, hi, color="tab:red", alpha=0.2)
    ax[2].set(xscale="log", title="t = 100", xlabel="|X|")
    fig.tight_layout()
    path = out / "fig1.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def label(algorithm: str, params: str, multi: bool) -> str:
    name = LABELS.get(algorithm, algorithm)
    return f"{name} {params}" if multi else name


def draw_block(summary: pl.DataFrame, fig_name: str, out: Path, se_mult: float) -> Path | None:
    benchmarks, titles = BLOCKS[fig_name]
    present = [b for b in benchmarks if b in set(summary["benchmark"].unique())]
    if not present:
        return None
    cols = len(present)
    fig, axes = plt.subplots(2, cols, figsize=(4.6 * cols, 6.4), squeeze=False)
    for j, bench in enumerate(present):
        sub = summary.filter(pl.col("benchmark") == bench)
        variants = sub.select("algorithm", "algorithm_params").unique()
        multi = variants.height > variants["algorithm"].n_unique()
        keyed = sorted(
            variants.iter_rows(),
            key=lambda r: (ORDER.index(r[0]) if r[0] in ORDER else len(ORDER), r[1]),
        )
        for row, metric, ylabel in [(0, "loss", r"$r_t$"), (1, "fscore", "F-score")]:
            ax = axes[row][j]
            for algorithm, params in keyed:
                d = (
                    sub.filter(
                        (pl.col("algorithm") == algorithm)
                        & (pl.col("algorithm_params") == params)
                        & (pl.col("metric") == metric)
                        & (pl.col("n") > 0)
                    )
                    .sort("step")
                )
                if d.height == 0:
                    continue
                step = d["step"].to_numpy()
                mean = d["mean"].to_numpy()
                se = d["se"].fill_null(0.0).to_numpy()
                color = COLORS.get(algorithm)
                ax.plot(step, mean, color=color, label=label(algorithm, params, multi), lw=1.2)
                every = max(1, len(step) // 12)
                ax.errorbar(step[::every], mean[::every], yerr=se_mult * se[::every], fmt="none", ecolor=color, capsize=2, lw=0.8)
            ax.set(xlabel="iteration", ylabel=ylabel)
            if row == 0:
                ax.set_title(titles[benchmarks.index(bench)])
    axes[0][0].legend(fontsize=8)
    n = int(summary.filter(pl.col("metric") == "loss")["n"].max())
    fig.suptitle(f"{fig_name}: mean over {n} simulations; bars = mean +- {se_mult:g} SE", fontsize=10)
    notes = {
        "carrier-lifetime": "a deterministic stand-in",
        "carrier-lifetime-gp": "stand-in B: a draw of the model's GP",
    }
    if fig_name == "fig5":
        text = "; ".join(notes[b] for b in present) + "; not the paper's measurements"
        fig.text(0.5, 0.005, text, ha="center", fontsize=7)
    fig.tight_layout()
    path = out / f"{fig_name}.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# Lower is better for the loss r_t, higher for the F-score.
LOWER_IS_BETTER = {"loss": True, "fscore": False}
PROPOSED = "rand-straddle"


def checkpoints(steps: list[int]) -> list[int]:
    """The recorded steps nearest a tenth, a fifth, half, three fifths of the last one, and the last."""
    last = max(steps)
    picked = [min(steps, key=lambda s: abs(s - q * last)) for q in (0.1, 0.2, 0.5, 0.6, 1.0)]
    return sorted(set(picked))


def claims_rows(summary: pl.DataFrame, fig_name: str) -> list[list[str]]:
    """One row per benchmark, metric and checkpoint: the proposed method against the rest."""
    benchmarks, _ = BLOCKS[fig_name]
    rows = []
    for bench in [b for b in benchmarks if b in set(summary["benchmark"].unique())]:
        for metric, lower in LOWER_IS_BETTER.items():
            d = summary.filter((pl.col("benchmark") == bench) & (pl.col("metric") == metric) & (pl.col("n") > 0))
            steps = sorted(d.filter(pl.col("algorithm") == PROPOSED)["step"].unique().to_list())
            if not steps:
                continue
            variants = d.select("algorithm", "algorithm_params").unique()
            multi = variants.height > variants["algorithm"].n_unique()
            sign = 1.0 if lower else -1.0
            for t in checkpoints(steps):
                at = [
                    (a == PROPOSED, label(a, p, multi), m, se or 0.0)
                    for a, p, m, se in d.filter(pl.col("step") == t)
                    .select("algorithm", "algorithm_params", "mean", "se")
                    .sort("algorithm", "algorithm_params")
                    .iter_rows()
                ]
                others = [(name, m, se) for proposed, name, m, se in at if not proposed]
                for _, name_p, mp, sp in [r for r in at if r[0]]:
                    best = min([(name_p, mp)] + [(n, m) for n, m, _ in others], key=lambda r: sign * r[1])
                    ahead = [
                        f"{name} ({sign * (mp - m) / math.hypot(sp, se):.1f} se)"
                        for name, m, se in others
                        if sign * (mp - m) > 2 * math.hypot(sp, se)
                    ]
                    rows.append([
                        bench, metric, str(t), f"{name_p} {mp:.4f} ± {sp:.4f}", best[0],
                        ", ".join(ahead) if ahead else "as good or better",
                    ])
    return rows


def claims_table(summary: pl.DataFrame, fig_name: str) -> str | None:
    rows = claims_rows(summary, fig_name)
    if not rows:
        return None
    n = int(summary.filter(pl.col("metric") == "loss")["n"].max())
    head = ["benchmark", "metric", "t", "proposed: mean ± se", "best there", "beats Proposed by > 2 se"]
    lines = [
        f"{fig_name}: the proposed method against every comparison, {n} simulations (paper Section 5)",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweep_dirs", nargs="+", type=Path, help="results/<sweep> directories holding summary.parquet")
    ap.add_argument("--se-mult", type=float, default=3.0, help="error bar half-length in standard errors (default 3)")
    ap.add_argument("--out", type=Path, help="where to write the PNG files (default: each sweep's figures/)")
    args = ap.parse_args(argv)
    written = []
    for sweep in args.sweep_dirs:
        summary_path = sweep / "summary.parquet"
        if not summary_path.exists():
            print(f"error: {summary_path} does not exist; run `armada summarize {sweep}` first", file=sys.stderr)
            return 2
        out = args.out or sweep / "figures"
        out.mkdir(parents=True, exist_ok=True)
        summary = canonical_params(pl.read_parquet(summary_path)).filter(pl.col("family") == "lse")
        drawn = [draw_block(summary, name, out, args.se_mult) for name in BLOCKS]
        written += [p for p in drawn if p is not None]
        tables = [t for t in (claims_table(summary, name) for name in BLOCKS) if t is not None]
        if tables:
            text = "\n".join(tables)
            print(text)
            path = out / "claims.md"
            path.write_text(text)
            written.append(path)
        written.append(figure1(out))
    for p in dict.fromkeys(written):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
