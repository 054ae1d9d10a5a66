#!/usr/bin/env python3
"""Figures 1-6 and the closing tables of M-SafeOpt (Losalka & Scarlett, AISTATS 2024;
Section 5 and Appendix B.1) from armada results.

    python analysis/safe.py results/safe-fig2 results/safe-fig4 results/safe-fig5 results/safe-fig6 \
        [--out DIR] [--seed 0] [--trace-bin PATH]

Reads the trajectory shards results/<sweep>/trajectories/*.parquet (family `safe`) of every
directory given, pools them, and

* prints, per benchmark and algorithm (and parameters where they vary), R_T/T, R'_T/T,
  R^X_T/T and the safety violations V_T at the last step (mean ± std over seeds), and the
  seconds per run (sum of `elapsed_ms`);
* draws what the data allows (a figure whose cells are missing is skipped, with a note):
  - fig1.png: actions of M-SafeOpt Case 1 (row 1) and Case 2 (row 2) for one seed (--seed)
    over the true f contours (columns 1, 3) and g contours (columns 2, 4) of the clinical trial
    and the synthetic 2-D problem; red: the true safe boundary g = h; magenta (f panels): the
    true per-x optimum s_*(x); colour: round. With --trace-bin (the armada-safe `trace`
    example, e.g. target/release/examples/trace after `cargo build --release -p armada-safe
    --example trace`) the run is replayed bit-for-bit to draw the discovered boundary
    s_t(x) of the final posterior (blue, g panels) and, for Case 2, its s_hat(x) (cyan, f
    panels); the replay's actions are checked against the shard's.
  - fig2.png: R_t/t (Case 1 vs baselines), R'_t/t and R^X_t/t (Case 2 vs baselines) on the
    clinical trial (top) and synthetic 2-D (bottom); lines: running means (mean ± std
    shaded), markers: instantaneous values every 2nd round (mean ± std bars).
  - fig3.png: as fig1 for SafeOpt-MC (row 1) and PredVar (row 2).
  - fig4.png: L-misspecification c in {0.1, 0.5, 1, 2, 5}: clinical R_t/t (Case 1), clinical
    R'_t/t (Case 2), synthetic 2-D R_t/t (Case 1).
  - fig5.png: R_t/t on synthetic 3-D and the pendulum (Case 1 vs baselines).
  - fig6.png: pendulum R'_t/t and R^X_t/t (Case 2 vs baselines).
  The pendulum is a reconstruction of the simulator (from paper Appendix B.1); its panels say so.

* prints, for the cells run with the paper's defaults (c = 1), each running-average regret at
  a fifth, half and all of the horizon (mean over seeds) and its ratio from T/2 to T: the
  "sublinear" (decreasing) against "plateaus" claims of paper Section 5 and Appendix B.1;

Output: every file goes to the first sweep directory's figures/ (or --out DIR), never into the
source tree: fig1.png .. fig6.png, final_values.md, the table of final values as printed, and
trend.md, the table of regret over time as printed.
It prints the path of every file it writes.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from canonical import canonical_params  # noqa: E402

LABELS = {
    "msafeopt-case1": "M-SafeOpt (Case 1)",
    "msafeopt-case2": "M-SafeOpt (Case 2)",
    "msafeopt-case3a": "M-SafeOpt (Case 3a)",
    "msafeopt-case3b": "M-SafeOpt (Case 3b)",
    "safeopt-mc": "SafeOpt-MC",
    "predvar": "PredVar",
}
COLORS = {
    "msafeopt-case1": "tab:red",
    "msafeopt-case2": "tab:orange",
    "safeopt-mc": "tab:blue",
    "predvar": "tab:green",
}
BENCH_TITLES = {
    "clinical": "Clinical trial",
    "synthetic-2d": "Synthetic 2-D",
    "synthetic-3d": "Synthetic 3-D",
    "pendulum": "Pendulum (reconstruction)",
}
BASELINES = ["safeopt-mc", "predvar"]
METRIC_LABELS = {
    "regret": (r"$R_t/t$", "regret_avg", "regret_inst"),
    "regret2": (r"$R'_t/t$", "regret2_avg", "regret2_inst"),
    "regretx": (r"$R^X_t/t$", "regretx_avg", "regretx_inst"),
}
L_SCALES = [0.1, 0.5, 1.0, 2.0, 5.0]


# ----------------------------------------------------------------------------------------------
# Data


def parse_params(text: str) -> dict[str, object]:
    """Canonical parameter text `{grid=200,h=0.9,refit="multistart"}` -> dict."""
    out: dict[str, object] = {}
    for key, raw in re.findall(r'(\w+)=("[^"]*"|[^,}]+)', text or ""):
        if raw.startswith('"'):
            out[key] = raw.strip('"')
        elif raw in ("true", "false"):
            out[key] = raw == "true"
        else:
            try:
                out[key] = int(raw)
            except ValueError:
                out[key] = float(raw)
    return out


def load(sweeps: list[Path]) -> pl.DataFrame:
    frames = []
    for sweep in sweeps:
        files = sorted((sweep / "trajectories").glob("*.parquet"))
        if not files:
            print(f"warning: no trajectory shards in {sweep}/trajectories", file=sys.stderr)
            continue
        frames.append(canonical_params(pl.read_parquet(files)).with_columns(pl.lit(sweep.name).alias("sweep")))
    if not frames:
        return pl.DataFrame()
    df = pl.concat(frames, how="diagonal_relaxed").filter(pl.col("family") == "safe")
    # The same job can sit in two sweeps (fig5 and fig6 share the pendulum baselines): keep one.
    df = df.unique(subset=["job_key", "step"], keep="first", maintain_order=True)
    l_scale = pl.col("algorithm_params").str.extract(r"l_scale=([0-9.eE+-]+)", 1).cast(pl.Float64, strict=False)
    return df.with_columns(l_scale.fill_null(1.0).alias("l_scale"))


def nominal(df: pl.DataFrame) -> pl.DataFrame:
    """Cells run with the paper's defaults (c = 1, robust elimination, no refined acquisition,
    Trieste multi-start refits)."""
    p = pl.col("algorithm_params")
    return df.filter(
        (pl.col("l_scale") == 1.0)
        & ~p.str.contains('elimination="progressive"')
        & ~p.str.contains("refined_acquisition=true")
        & ~p.str.contains('refit="(warm|fixed)"')
    )


def per_step(df: pl.DataFrame, metric: str) -> pl.DataFrame:
    """Mean, std and count over seeds per (benchmark, benchmark_params, algorithm, l_scale, step)."""
    return (
        df.filter(pl.col(metric).is_not_nan() & pl.col(metric).is_not_null())
        .group_by("benchmark", "benchmark_params", "algorithm", "l_scale", "step")
        .agg(pl.col(metric).mean().alias("mean"), pl.col(metric).std().alias("std"), pl.len().alias("n"))
        .sort("step")
    )


# ----------------------------------------------------------------------------------------------
# Tables


def fmt(mean: float | None, std: float | None) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "-"
    s = "" if std is None or (isinstance(std, float) and math.isnan(std)) else f" ± {std:.4f}"
    return f"{mean:.4f}{s}"


def final_values(df: pl.DataFrame) -> list[str]:
    """The table of final values as Markdown lines."""
    last = df.filter(pl.col("step") == pl.col("step").max().over("job_key"))
    metrics = ["regret_avg", "regret2_avg", "regretx_avg", "violations_cum"]
    stats = (
        last.group_by("benchmark", "benchmark_params", "algorithm", "algorithm_params", "l_scale")
        .agg(
            [pl.len().alias("runs"), pl.col("step").max().alias("T")]
            + [pl.col(m).mean().alias(f"{m}_mean") for m in metrics]
            + [pl.col(m).std().alias(f"{m}_std") for m in metrics]
        )
        .sort("benchmark", "l_scale", "algorithm", "algorithm_params")
    )
    seconds = (
        df.group_by("job_key", "benchmark", "benchmark_params", "algorithm", "algorithm_params")
        .agg((pl.col("elapsed_ms").sum() / 1000).alias("s"))
        .group_by("benchmark", "benchmark_params", "algorithm", "algorithm_params")
        .agg(pl.col("s").mean().alias("s_mean"), pl.col("s").std().alias("s_std"))
    )
    stats = stats.join(seconds, on=["benchmark", "benchmark_params", "algorithm", "algorithm_params"], how="left")
    lines = [
        "Final values at T (mean ± std over seeds); s/run = seconds per run",
        "",
        "| benchmark | grid | algorithm | c | runs | T | R_T/T | R'_T/T | R^X_T/T | violations | s/run |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in stats.iter_rows(named=True):
        grid = parse_params(r["benchmark_params"]).get("grid", "")
        extra = {k: v for k, v in parse_params(r["algorithm_params"]).items()
                 if (k, v) not in {("l_scale", 1.0), ("beta_f", 3.0), ("beta_g", 3.0), ("refit", "multistart"),
                                   ("restarts_per_param", 10), ("elimination", "robust"),
                                   ("refined_acquisition", False)} and k != "l_scale"}
        alg = LABELS.get(r["algorithm"], r["algorithm"]) + (f" {extra}" if extra else "")
        lines.append(
            f"| {r['benchmark']} | {grid} | {alg} | {r['l_scale']:g} | {r['runs']} | {r['T']} | "
            f"{fmt(r['regret_avg_mean'], r['regret_avg_std'])} | {fmt(r['regret2_avg_mean'], r['regret2_avg_std'])} | "
            f"{fmt(r['regretx_avg_mean'], r['regretx_avg_std'])} | "
            f"{fmt(r['violations_cum_mean'], r['violations_cum_std'])} | {fmt(r['s_mean'], r['s_std'])} |"
        )
    return lines


def trend(df: pl.DataFrame) -> list[str]:
    """R_t/t, R'_t/t and R^X_t/t at T/5, T/2 and T of the nominal cells, as Markdown lines."""
    base = nominal(df).filter(pl.col("step") > 0)
    horizon = base.group_by("job_key").agg(pl.col("step").max().alias("T"))
    base = base.join(horizon, on="job_key")
    lines = [
        "Running-average regret over time, cells with the paper's defaults (c = 1); mean over seeds. "
        "T/2 -> T: the ratio of the value at T to the value at T/2 (below 1: still decreasing)",
        "",
        "| benchmark | algorithm | regret | runs | t = T/5 | t = T/2 | t = T | T/2 -> T |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    names = {"regret_avg": "R_t/t", "regret2_avg": "R'_t/t", "regretx_avg": "R^X_t/t"}
    for metric, name in names.items():
        at = {}
        for frac in (5, 2, 1):
            at[frac] = (
                base.filter((pl.col("step") == pl.col("T") // frac) & pl.col(metric).is_not_nan())
                .group_by("benchmark", "algorithm")
                .agg(pl.col(metric).mean().alias("mean"), pl.len().alias("runs"))
            )
        rows = at[1].join(at[2], on=["benchmark", "algorithm"], suffix="_2").join(
            at[5], on=["benchmark", "algorithm"], suffix="_5")
        for r in rows.sort("benchmark", "algorithm").iter_rows(named=True):
            ratio = r["mean"] / r["mean_2"] if r["mean_2"] else float("nan")
            lines.append(
                f"| {r['benchmark']} | {LABELS.get(r['algorithm'], r['algorithm'])} | {name} | {r['runs']} | "
                f"{r['mean_5']:.4f} | {r['mean_2']:.4f} | {r['mean']:.4f} | {ratio:.3f} |"
            )
    return lines


# ----------------------------------------------------------------------------------------------
# Regret panels


def regret_panel(ax, df: pl.DataFrame, bench: str, algorithms: list[str], kind: str, title: str | None) -> bool:
    label, avg, inst = METRIC_LABELS[kind]
    sub = df.filter(pl.col("benchmark") == bench)
    drawn = False
    for alg in algorithms:
        a = per_step(sub.filter(pl.col("algorithm") == alg), avg).filter(pl.col("step") > 0)
        if a.height == 0:
            continue
        color = COLORS.get(alg)
        t, m, s = a["step"].to_numpy(), a["mean"].to_numpy(), a["std"].fill_null(0.0).to_numpy()
        ax.plot(t, m, color=color, lw=1.3, label=f"{LABELS.get(alg, alg)} (n = {a['n'].min()})")
        ax.fill_between(t, m - s, m + s, color=color, alpha=0.12, lw=0)
        i = per_step(sub.filter(pl.col("algorithm") == alg), inst).filter((pl.col("step") > 0) & (pl.col("step") % 2 == 0))
        if i.height:
            ax.errorbar(i["step"].to_numpy(), i["mean"].to_numpy(), yerr=i["std"].fill_null(0.0).to_numpy(),
                        fmt="o", ms=2.5, color=color, alpha=0.6, elinewidth=0.6, capsize=1.5)
        drawn = True
    ax.set(xlabel="t", ylabel=label)
    if title:
        ax.set_title(title, fontsize=10)
    if drawn:
        ax.legend(fontsize=7)
    return drawn


def save(fig, out: Path, name: str) -> Path:
    fig.tight_layout()
    path = out / name
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def figure2(df: pl.DataFrame, out: Path) -> Path | None:
    benches = [b for b in ["clinical", "synthetic-2d"] if b in set(df["benchmark"])]
    if not benches:
        return None
    fig, axes = plt.subplots(len(benches), 3, figsize=(14, 3.8 * len(benches)), squeeze=False)
    for r, b in enumerate(benches):
        t = BENCH_TITLES[b]
        regret_panel(axes[r][0], df, b, ["msafeopt-case1"] + BASELINES, "regret", f"{t}: $R_t/t$")
        regret_panel(axes[r][1], df, b, ["msafeopt-case2"] + BASELINES, "regret2", f"{t}: $R'_t/t$")
        regret_panel(axes[r][2], df, b, ["msafeopt-case2"] + BASELINES, "regretx", f"{t}: $R^X_t/t$")
    fig.suptitle("Figure 2: running means (lines, ± std shaded) and instantaneous regret (markers, every 2nd round)",
                 fontsize=10)
    return save(fig, out, "fig2.png")


def figure4(df: pl.DataFrame, out: Path) -> Path | None:
    panels = [("clinical", "msafeopt-case1", "regret"), ("clinical", "msafeopt-case2", "regret2"),
              ("synthetic-2d", "msafeopt-case1", "regret")]
    sub = df.filter(pl.col("algorithm_params").str.contains("l_scale"))
    if sub.filter(pl.col("l_scale") != 1.0).height == 0:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    cmap = plt.get_cmap("viridis")
    for ax, (bench, alg, kind) in zip(axes, panels):
        label, avg, _ = METRIC_LABELS[kind]
        cell = sub.filter((pl.col("benchmark") == bench) & (pl.col("algorithm") == alg))
        for idx, c in enumerate(L_SCALES):
            a = per_step(cell.filter(pl.col("l_scale") == c), avg).filter(pl.col("step") > 0)
            if a.height == 0:
                continue
            color = "black" if c == 1.0 else cmap(idx / (len(L_SCALES) - 1))
            t, m, s = a["step"].to_numpy(), a["mean"].to_numpy(), a["std"].fill_null(0.0).to_numpy()
            ax.plot(t, m, color=color, lw=1.6 if c == 1.0 else 1.1, label=f"c = {c:g}")
            ax.fill_between(t, m - s, m + s, color=color, alpha=0.08, lw=0)
        ax.set(xlabel="t", ylabel=label, title=f"{BENCH_TITLES[bench]}: {LABELS[alg]}")
        ax.legend(fontsize=7)
    fig.suptitle(r"Figure 4: M-SafeOpt given $c L_f$ and $L'_g / c$ (mean ± std over seeds)", fontsize=10)
    return save(fig, out, "fig4.png")


def figure5(df: pl.DataFrame, out: Path) -> Path | None:
    benches = [b for b in ["synthetic-3d", "pendulum"] if b in set(df["benchmark"])]
    if not benches:
        return None
    fig, axes = plt.subplots(1, len(benches), figsize=(5.5 * len(benches), 3.8), squeeze=False)
    for ax, b in zip(axes[0], benches):
        regret_panel(ax, df, b, ["msafeopt-case1"] + BASELINES, "regret", f"{BENCH_TITLES[b]}: $R_t/t$")
    fig.suptitle("Figure 5 (pendulum: reconstructed simulator)", fontsize=10)
    return save(fig, out, "fig5.png")


def figure6(df: pl.DataFrame, out: Path) -> Path | None:
    if "pendulum" not in set(df["benchmark"]) or df.filter(
            (pl.col("benchmark") == "pendulum") & (pl.col("algorithm") == "msafeopt-case2")).height == 0:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    algs = ["msafeopt-case2"] + BASELINES
    regret_panel(axes[0], df, "pendulum", algs, "regret2", "Pendulum (reconstruction): $R'_t/t$")
    regret_panel(axes[1], df, "pendulum", algs, "regretx", "Pendulum (reconstruction): $R^X_t/t$")
    fig.suptitle("Figure 6", fontsize=10)
    return save(fig, out, "fig6.png")


# ----------------------------------------------------------------------------------------------
# Action plots (Figures 1 and 3)


def clinical_fg(s: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    f = 1.0 / (1.0 + np.exp(1.0 - 2.0 * s - x + 4.0 * s**2 + x**2))
    g = 1.0 / (1.0 + np.exp(-2.0 * s - x))
    return f, g


def branin_fg(s: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    b, c, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 1 / (8 * math.pi)
    sb, xb = 15 * s - 5, 15 * x
    sbr = ((xb - b * sb**2 + c * sb - 6) ** 2 + 10 * (1 - t) * np.cos(sb) - 44.81) / 51.95
    y = x + 1 / 3
    g = 2 * s * (np.exp(y) * np.sin(10 * y) + np.sin(5 * y) + 5) / 3
    return -sbr, g


TRUE_FUNCTIONS = {"clinical": (clinical_fg, (0.0, 2.0), 0.9), "synthetic-2d": (branin_fg, (0.0, 1.0), 2.0)}


def replay_final(trace_bin: Path, run: pl.DataFrame) -> pl.DataFrame | None:
    """The final posterior's boundary and s_hat per x-row, from replaying the run with the
    `trace` example (same parameters, seed and sweep seed give the same trajectory)."""
    r = run.row(0, named=True)
    args = [str(trace_bin), r["benchmark"], r["algorithm"], str(r["horizon"]), str(r["seed"]),
            f"sweep_seed={r['sweep_seed']}"]
    for text in (r["benchmark_params"], r["algorithm_params"]):
        args += [f"{k}={v}" for k, v in re.findall(r'(\w+)=("[^"]*"|[^,}]+)', text)]
    try:
        csv = subprocess.run(args, env={**os.environ, "SAFE_TRACE": "csv"}, capture_output=True, text=True,
                             check=True).stdout
        replay = pl.read_csv(io.StringIO(csv), infer_schema_length=0).with_columns(pl.all().cast(pl.Float64))
        shard = run.sort("step")
        if not np.array_equal(replay.filter(pl.col("step") > 0)["grid_index"].to_numpy(),
                              shard["grid_index"].to_numpy().astype(float)):
            print(f"warning: the replay of {r['job_key']} chose other actions than its shard; not drawn", file=sys.stderr)
            return None
        final = subprocess.run(args, env={**os.environ, "SAFE_TRACE": "final"}, capture_output=True, text=True,
                               check=True).stdout
        return pl.read_csv(io.StringIO(final))
    except (OSError, subprocess.CalledProcessError, pl.exceptions.PolarsError) as e:
        print(f"warning: replay with {trace_bin} failed: {e}", file=sys.stderr)
        return None


def action_panels(axes, df: pl.DataFrame, bench: str, alg: str, seed: int, trace_bin: Path | None) -> None:
    fg, (x_lo, x_hi), h_default = TRUE_FUNCTIONS[bench]
    run = df.filter((pl.col("benchmark") == bench) & (pl.col("algorithm") == alg) & (pl.col("seed") == seed)
                    & (pl.col("step") > 0)).sort("job_key", "step")
    if run.height:
        # One job (the same cell can come from two sweeps with different benchmark parameters).
        run = run.filter(pl.col("job_key") == run["job_key"][0])
    params = parse_params(run["benchmark_params"][0]) if run.height else {}
    h = float(params.get("h", h_default))
    n = int(params.get("grid", 200))
    s_grid, x_grid = np.linspace(0, 1, n), np.linspace(x_lo, x_hi, n)
    X, S = np.meshgrid(x_grid, s_grid)
    F, G = fg(S, X)
    f_safe = np.where(G <= h, F, -np.inf)
    s_star = s_grid[np.argmax(f_safe, axis=0)]
    final = replay_final(trace_bin, run) if trace_bin is not None and run.height else None
    for ax, Z, name in [(axes[0], F, "f"), (axes[1], G, "g")]:
        cs = ax.contourf(X, S, Z, levels=20, cmap="viridis", alpha=0.85)
        plt.colorbar(cs, ax=ax, fraction=0.046)
        ax.contour(X, S, G, levels=[h], colors="red", linewidths=1.5)
        if name == "f" and alg in ("msafeopt-case2",):
            ax.plot(x_grid, s_star, color="magenta", lw=1.2, ls="--")
            if final is not None:
                ax.plot(final["x1"].to_numpy(), final["s_hat"].to_numpy(), color="cyan", lw=1.2)
        if name == "g" and final is not None:
            ax.plot(final["x1"].to_numpy(), final["boundary_s"].to_numpy(), color="blue", lw=1.4)
        if run.height:
            sc = ax.scatter(run["x1"].to_numpy(), run["s"].to_numpy(), c=run["step"].to_numpy(), cmap="autumn",
                            s=14, edgecolors="black", linewidths=0.4, zorder=3)
            unsafe = run.filter(pl.col("violations_cum").diff().fill_null(pl.col("violations_cum")) > 0)
            if unsafe.height:
                ax.scatter(unsafe["x1"].to_numpy(), unsafe["s"].to_numpy(), marker="x", color="white", s=30, zorder=4)
        else:
            ax.text(0.5, 0.5, "no run", transform=ax.transAxes, ha="center", color="white")
        ax.set(xlabel="x", ylabel="s", title=f"{BENCH_TITLES[bench]}: {LABELS.get(alg, alg)} over {name}")
        ax.title.set_fontsize(8)
    return None


def action_figure(df: pl.DataFrame, out: Path, algs: list[str], name: str, file_name: str, seed: int,
                  trace_bin: Path | None) -> Path | None:
    base = nominal(df)
    benches = [b for b in TRUE_FUNCTIONS if b in set(base["benchmark"])]
    if not benches or not any(a in set(base["algorithm"]) for a in algs):
        return None
    fig, axes = plt.subplots(len(algs), 2 * len(benches), figsize=(5.2 * 2 * len(benches), 4.2 * len(algs)),
                             squeeze=False)
    for r, alg in enumerate(algs):
        for c, bench in enumerate(benches):
            action_panels(axes[r][2 * c:2 * c + 2], base, bench, alg, seed, trace_bin)
    replayed = "; blue = discovered boundary, cyan = discovered s_hat(x)" if trace_bin else ""
    fig.suptitle(f"{name}: actions of seed {seed} (colour = round; red = true boundary g = h; "
                 f"magenta = true s*(x); white x = unsafe{replayed})", fontsize=10)
    return save(fig, out, file_name)


# ----------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweep_dirs", nargs="+", type=Path, help="results/<sweep> directories with trajectories/")
    ap.add_argument("--out", type=Path, help="where figures and the table go (default: the first sweep's figures/)")
    ap.add_argument("--seed", type=int, default=0, help="the seed whose actions Figures 1 and 3 show")
    ap.add_argument("--trace-bin", type=Path, help="armada-safe's `trace` example binary, to draw discovered boundaries")
    args = ap.parse_args(argv)
    df = load(args.sweep_dirs)
    if df.height == 0:
        print("error: no `safe` trajectories found", file=sys.stderr)
        return 2
    out = args.out or args.sweep_dirs[0] / "figures"
    out.mkdir(parents=True, exist_ok=True)
    for name, lines in [("final_values.md", final_values(df)), ("trend.md", trend(df))]:
        table = "\n".join(lines) + "\n"
        print(table)
        table_path = out / name
        table_path.write_text(table, encoding="utf-8")
        print(table_path)
    base = nominal(df)
    written = [
        action_figure(df, out, ["msafeopt-case1", "msafeopt-case2"], "Figure 1", "fig1.png", args.seed, args.trace_bin),
        figure2(base, out),
        action_figure(df, out, BASELINES, "Figure 3", "fig3.png", args.seed, args.trace_bin),
        figure4(df, out),
        figure5(base, out),
        figure6(base, out),
    ]
    for name, path in zip(["fig1", "fig2", "fig3", "fig4", "fig5", "fig6"], written):
        if path is None:
            print(f"note: {name} skipped (its cells are not in the given sweeps)", file=sys.stderr)
        else:
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
