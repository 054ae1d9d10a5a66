#!/usr/bin/env python3
"""Figures 1 and 2 of the BO-uCVS paper (Hoang, Nguyen & Tran, AAAI 2025) from armada results.

    python analysis/bocvs.py results/bocvs-fig1 [--out DIR]

Reads the trajectory shards results/<sweep>/trajectories/*.parquet (family `cvs`), keeps the
rows that played (every step after 0; a run ends when its budget is spent), and aggregates on a common cost axis exactly as the reference
plotting code (Tay et al.'s results.py): per (setting, algorithm) the axis is the sorted union of every
run's cumulative costs; each run's value at an axis point is its value after its last play that
cost at most that much (forward fill), its first play's value before that; mean and standard
error std(ddof=0)/sqrt(n) over seeds; axis points above the budget are dropped. If the sweep
directory holds `cost_summary.parquet` (columns benchmark, cost_set, variance, algorithm label,
metric, cost, mean, se) it is used instead.

Figure 1: simple regret against cost spent (log y), one panel per (objective, cost set,
variance) the sweep holds (the paper's four settings first). Figure 2: number of evaluations
against cost spent. It also prints, per setting and algorithm: final simple regret,
evaluations at budget, seconds per run, and the mechanics the paper's setup implies
(full-set plays, ETC plays per group, the proposed method's exploration and exploitation
counts).

Output: every file goes to SWEEP/figures/ (or --out DIR), never into the source tree: fig1.png,
fig2.png, final_values.md, the per-setting table as printed, and claims.md: per panel, for simple
regret and the evaluation count at a fifth, two fifths, ... of the budget, the proposed method
(paper mode, else code mode) against every other curve (ahead or behind by more than two unpaired
standard errors). It prints the path of every file it writes.
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

OBJECTIVES = ["hartmann6-12d", "ackley6-12d", "levy6-12d", "plant", "airfoil"]
TITLES = {
    "hartmann6-12d": "Hartmann-6 (12-D)",
    "ackley6-12d": "Ackley-6 (12-D)",
    "levy6-12d": "Levy-6 (12-D)",
    "plant": "Plant",
    "airfoil": "Airfoil",
}
SETTINGS = [("cheap", 0.02), ("cheap", 0.04), ("moderate", 0.02), ("moderate", 0.04)]
COLORS = {
    "Proposed": "tab:red",
    "Proposed (code)": "tab:pink",
    "Proposed (code-fixed)": "tab:brown",
    "UCB-PSQ": "tab:blue",
    "TS-PSQ": "tab:green",
    "UCB-CVS": "tab:purple",
}
CLAMP = 1e-6


def param(text: pl.Expr, name: str) -> pl.Expr:
    """One value out of the canonical parameter text, e.g. {budget=100.0,cost_set="cheap",...}."""
    return text.str.extract(name + r'=("?)([^,}"]+)', 2)


def label(algorithm: str, params: str) -> str:
    if algorithm == "proposed":
        m = re.search(r'[{,]mode="([^"]+)"', params)
        name = "Proposed" if m is None or m.group(1) == "paper" else f"Proposed ({m.group(1)})"
        # The threshold's shift (bocvs-plant-shift), when not the default.
        shift = re.search(r'[{,]shift="([^"]+)"', params)
        return name if shift is None or shift.group(1) == "worst" else f"{name} shift={shift.group(1)}"
    if algorithm == "etc":
        m = re.search(r"plays_per_group=(\d+)", params)
        return f"ETC-{m.group(1) if m else '?'}"
    return {"ucb-psq": "UCB-PSQ", "ts-psq": "TS-PSQ", "ucb-cvs": "UCB-CVS"}.get(algorithm, algorithm)


def load(sweep: Path) -> pl.DataFrame:
    shards = sweep / "trajectories"
    if not shards.is_dir():
        sys.exit(f"no trajectories in {sweep}")
    df = canonical_params(pl.read_parquet(shards / "*.parquet"))
    if "played" in df.columns:
        # Results of cvs before version 4 repeat a run's last row up to the horizon, with
        # played == 0; drop those rows, as a run now ends with its last play.
        df = df.filter((pl.col("step") == 0) | (pl.col("played") == 1))
    df = df.with_columns(
        param(pl.col("benchmark_params"), "cost_set").alias("cost_set"),
        param(pl.col("benchmark_params"), "variance").cast(pl.Float64).alias("variance"),
        param(pl.col("benchmark_params"), "budget").cast(pl.Float64).alias("budget"),
    )
    labels = {
        (a, p): label(a, p) for a, p in df.select("algorithm", "algorithm_params").unique().iter_rows()
    }
    return df.with_columns(
        pl.struct("algorithm", "algorithm_params")
        .map_elements(lambda s: labels[(s["algorithm"], s["algorithm_params"])], return_dtype=pl.String)
        .alias("label")
    )


def cost_axis_curve(runs: list[tuple[np.ndarray, np.ndarray]], budget: float):
    """As Tay et al.'s results.py: common axis (union of cumulative costs), forward fill, mean and SE over runs."""
    axis = np.unique(np.concatenate([c for c, _ in runs]))
    axis = axis[axis <= budget]
    if axis.size == 0:
        return axis, axis, axis
    values = []
    for cost, val in runs:
        idx = np.searchsorted(cost, axis, side="right") - 1
        values.append(np.where(idx >= 0, val[np.clip(idx, 0, None)], val[0]))
    v = np.vstack(values)
    return axis, v.mean(0), v.std(0) / np.sqrt(v.shape[0])


def plays() -> pl.Expr:
    """The rows that are plays: every step after 0."""
    return pl.col("step") > 0


def curves(df: pl.DataFrame, metric: str) -> dict:
    out = {}
    played = df.filter(plays()).sort("job_key", "step")
    for (bench, cost_set, var, lab), g in played.group_by(
        "benchmark", "cost_set", "variance", "label", maintain_order=True
    ):
        budget = g["budget"][0]
        runs = [
            (r["cum_cost"].to_numpy(), r[metric].to_numpy().astype(float))
            for _, r in g.group_by("job_key", maintain_order=True)
        ]
        out[(bench, cost_set, var, lab)] = (cost_axis_curve(runs, budget), len(runs))
    return out


def from_summary(path: Path, metric: str) -> dict:
    s = canonical_params(pl.read_parquet(path)).filter(pl.col("metric") == metric)
    out = {}
    for (bench, cost_set, var, lab), g in s.group_by("benchmark", "cost_set", "variance", "label"):
        g = g.sort("cost")
        out[(bench, cost_set, var, lab)] = ((g["cost"].to_numpy(), g["mean"].to_numpy(), g["se"].to_numpy()), None)
    return out


def cross_check(sweep: Path, data: dict, metric: str) -> None:
    """Compare the curves computed here with armada's own `along_cum_cost.parquet` (the Rust
    aggregation of the same forward fill) at every grid point where armada has all runs (it
    counts a run as missing before its first play, where this script takes the first value)."""
    path = sweep / "along_cum_cost.parquet"
    if not path.exists():
        print(f"(no {path.name}: `armada summarize {sweep} --along cum_cost` builds it)")
        return
    along = canonical_params(pl.read_parquet(path)).filter(pl.col("metric") == metric)
    if along.height == 0:
        print(f"(armada's {path.name} aggregates Float64 metrics only; {metric} is not one of them)")
        return
    along = along.with_columns(
        param(pl.col("benchmark_params"), "cost_set").alias("cost_set"),
        param(pl.col("benchmark_params"), "variance").cast(pl.Float64).alias("variance"),
    )
    worst, points = 0.0, 0
    for (bench, cost_set, var, lab), ((x, m, _), n_runs) in data.items():
        rows = along.filter(
            (pl.col("benchmark") == bench) & (pl.col("cost_set") == cost_set) & ((pl.col("variance") - var).abs() < 1e-12)
        )
        rows = rows.filter(
            pl.struct("algorithm", "algorithm_params").map_elements(
                lambda r: label(r["algorithm"], r["algorithm_params"]) == lab, return_dtype=pl.Boolean
            )
        ).filter(pl.col("n") == n_runs)
        ours = dict(zip(x.tolist(), m.tolist()))
        for at, mean in zip(rows["at"].to_list(), rows["mean"].to_list()):
            if at in ours:
                worst = max(worst, abs(ours[at] - mean))
                points += 1
    print(f"cross-check of {metric} against armada's {path.name}: {points} grid points, max |difference| {worst:.3g}")


def figure(data: dict, metric: str, ylabel: str, log: bool, out: Path) -> Path | None:
    objectives = [o for o in OBJECTIVES if any(k[0] == o for k in data)]
    if not objectives:
        return None
    # The paper's settings that the sweep holds, then any other (e.g. bocvs-code-setting's).
    def same(a: tuple, b: tuple) -> bool:
        return a[0] == b[0] and abs(a[1] - b[1]) <= 1e-12

    present = sorted({(k[1], k[2]) for k in data})
    settings = [s for s in SETTINGS if any(same(s, p) for p in present)]
    settings += [p for p in present if not any(same(s, p) for s in SETTINGS)]
    fig, axes = plt.subplots(
        len(objectives), len(settings), figsize=(4 * len(settings), 3.2 * len(objectives)), squeeze=False
    )
    for r, obj in enumerate(objectives):
        for c, (cost_set, var) in enumerate(settings):
            ax = axes[r][c]
            for (bench, cs, v, lab), ((x, m, se), _) in sorted(data.items()):
                if bench != obj or cs != cost_set or abs(v - var) > 1e-12 or x.size == 0:
                    continue
                color = COLORS.get(lab, "tab:orange" if lab.startswith("ETC") else None)
                if log:
                    m, lo, hi = np.maximum(m, CLAMP), np.maximum(m - se, CLAMP), np.maximum(m + se, CLAMP)
                else:
                    lo, hi = m - se, m + se
                ax.step(x, m, where="post", label=lab, color=color)
                ax.fill_between(x, lo, hi, step="post", alpha=0.2, color=color)
            if log:
                ax.set_yscale("log")
            ax.set_title(f"{TITLES[obj]}, {cost_set}, var {var}", fontsize=9)
            ax.set_xlabel("cost spent")
            if c == 0:
                ax.set_ylabel(ylabel)
            if r == 0 and c == 0:
                ax.legend(fontsize=7)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def table(df: pl.DataFrame) -> str:
    """Per setting and algorithm: final simple regret, evaluations at budget, seconds per run,
    and the mechanics the paper's setup implies, as a Markdown table."""
    per_run = (
        df.group_by("job_key", "benchmark", "cost_set", "variance", "label")
        .agg(
            (pl.col("elapsed_ms").sum() / 1000).alias("seconds"),
            pl.col("simple_regret").filter(plays()).last().alias("final_sr"),
            pl.col("n_evals").max().alias("evals"),
            pl.col("cum_cost").max().alias("spent"),
            plays().sum().alias("plays"),
            ((pl.col("phase") == 1) & plays()).sum().alias("explore"),
            ((pl.col("phase") == 2) & plays()).sum().alias("exploit"),
            ((pl.col("set") == 7) & plays()).sum().alias("set7"),
            ((pl.col("set") == 5) & plays()).sum().alias("set5"),
            ((pl.col("set") == 6) & plays()).sum().alias("set6"),
            *[((pl.col("etc_group") == g) & plays()).sum().alias(f"g{g}") for g in (1, 2, 3)],
        )
    )
    summary = (
        per_run.group_by("benchmark", "cost_set", "variance", "label")
        .agg(
            pl.len().alias("runs"),
            pl.col("final_sr").mean().alias("sr"),
            (pl.col("final_sr").std(ddof=0) / pl.len().sqrt()).alias("sr_se"),
            pl.col("evals").mean(),
            pl.col("spent").mean(),
            pl.col("seconds").mean(),
            pl.col("explore").mean(),
            pl.col("exploit").mean(),
            pl.col("set5").mean(),
            pl.col("set6").mean(),
            pl.col("set7").mean(),
            pl.col("g1").mean(),
            pl.col("g2").mean(),
            pl.col("g3").mean(),
        )
        .sort("benchmark", "cost_set", "variance", "label")
        # Airfoil's regrets are 1e-5 to 1e-2: significant digits, not a fixed number of decimals.
        .with_columns(pl.col("sr", "sr_se").map_elements(lambda v: f"{v:.4g}", return_dtype=pl.String))
    )
    with pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=1000,
        float_precision=3,
        tbl_formatting="MARKDOWN",
        tbl_hide_column_data_types=True,
        tbl_hide_dataframe_shape=True,
    ):
        return str(summary) + "\n"


# The paper's claims compare the proposed method (paper mode, armada's default) with every
# other curve of its panel; lower is better for simple regret, higher for the evaluation count
# (claim 3: more evaluations once exploitation starts, at cost 60).
BETTER_LOWER = {"simple_regret": True, "n_evals": False}
CHECKPOINTS = (0.2, 0.4, 0.6, 0.8, 1.0)


def reference_label(labels: set[str]) -> str | None:
    """The curve the claims are about: paper mode if the sweep ran it, else code mode."""
    for lab in ("Proposed", "Proposed (code)"):
        if lab in labels:
            return lab
    return None


def value_at(curve: tuple, cost: float) -> tuple[float, float]:
    """A forward-filled curve's mean and standard error at `cost` (its first value before that)."""
    x, m, se = curve
    i = max(int(np.searchsorted(x, cost, side="right")) - 1, 0)
    return float(m[i]), float(se[i])


def se_gap(diff: float, se: float) -> float:
    """`diff` in standard errors; two curves without spread (every seed alike, as on Ackley)
    that differ are an infinite number of them apart."""
    if se > 0:
        return diff / se
    return 0.0 if diff == 0 else math.copysign(math.inf, diff)


def claims(data: dict[str, dict], runs: dict[tuple, int], budgets: dict[tuple, float]) -> str:
    """Per panel, metric and checkpoint (a fifth of the budget, two fifths, ... , the budget):
    the proposed method's mean +- se, the best curve there, and the curves ahead of or behind
    it by more than two unpaired standard errors."""
    head = ["objective", "cost set", "variance", "metric", "cost", "proposed: mean ± se", "best there",
            "ahead of it by > 2 se", "behind it by > 2 se"]
    rows = []
    panels = sorted({k[:3] for curves in data.values() for k in curves},
                    key=lambda p: (OBJECTIVES.index(p[0]) if p[0] in OBJECTIVES else len(OBJECTIVES), p[1], p[2]))
    for bench, cost_set, var in panels:
        for metric, lower in BETTER_LOWER.items():
            panel = {k[3]: curve for k, (curve, _) in data[metric].items() if k[:3] == (bench, cost_set, var) and curve[0].size}
            ref = reference_label(set(panel))
            if ref is None:
                continue
            budget = budgets[(bench, cost_set, var)]
            sign = 1.0 if lower else -1.0
            for q in CHECKPOINTS:
                cost = q * budget
                at = {lab: value_at(curve, cost) for lab, curve in sorted(panel.items())}
                mp, sp = at[ref]
                best = min(at, key=lambda lab: sign * at[lab][0])
                gap = {lab: se_gap(sign * (mp - m), np.hypot(sp, se)) for lab, (m, se) in at.items() if lab != ref}
                ahead = [f"{lab} ({g:.1f} se)" for lab, g in gap.items() if g > 2]
                behind = [f"{lab} ({-g:.1f} se)" for lab, g in gap.items() if g < -2]
                n = runs.get((bench, cost_set, var, ref), 0)
                rows.append([bench, cost_set, f"{var:.3f}", metric, f"{cost:.0f}", f"{ref} {mp:.4g} ± {sp:.2g} (n={n})",
                             best, ", ".join(ahead) or "none", ", ".join(behind) or "none"])
    lines = ["The proposed method against every other curve of its panel, on the common cost axis (the paper's Figures 1 and 2)",
             "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweep", type=Path)
    ap.add_argument("--out", type=Path, default=None, help="where figures and the table go (default: SWEEP/figures)")
    args = ap.parse_args()
    # Like the other scripts: figures go beside the results they come from, never into the
    # source tree (analysis/figures/ holds copies made by hand, with their provenance).
    out = args.out or args.sweep / "figures"
    df = load(args.sweep)
    summary = args.sweep / "cost_summary.parquet"
    data = {}
    for metric, ylabel, log, fig in (
        ("simple_regret", "simple regret", True, "fig1"),
        ("n_evals", "number of evaluations", False, "fig2"),
    ):
        data[metric] = from_summary(summary, metric) if summary.exists() else curves(df, metric)
        if not summary.exists():
            cross_check(args.sweep, data[metric], metric)
        path = figure(data[metric], metric, ylabel, log, out / f"{fig}.png")
        if path:
            print(path)
    per_curve = df.filter(pl.col("step") == 0).group_by("benchmark", "cost_set", "variance", "label").len()
    runs = {tuple(r[:4]): r[4] for r in per_curve.iter_rows()}
    budgets = {tuple(r[:3]): r[3] for r in df.select("benchmark", "cost_set", "variance", "budget").unique().iter_rows()}
    out.mkdir(parents=True, exist_ok=True)
    for name, text in (("final_values.md", table(df)), ("claims.md", claims(data, runs, budgets))):
        print(text)
        path = out / name
        path.write_text(text, encoding="utf-8")
        print(path)


if __name__ == "__main__":
    main()
