#!/usr/bin/env python3
"""Every table of the CDT paper (Kang, Hsieh, Lee), and Figures 2 and 4, from armada results.

Usage:

    python analysis/cdt.py DIR [--main DIR] [--out DIR]

DIR is one sweep directory (results/<sweep>). The script looks at what the sweep contains and
prints, as Markdown tables with the paper's value beside ours and the ratio ours/paper:

* cdt-main (synthetic = "Sim" and movielens, Theory/OP/TL/CDT): final regret against Table 4's
  C1 columns and Table 5's T1 = T^{2/(p+3)} column (paper Section 5), the ranking counts, Table 1 (seconds
  per run) and Figure 2 (DIR/figures/fig2.png);
* cdt-table4 (OP and TL with candidates="c2"): Table 4 (paper Appendix A.4.1); with --main, also the C1
  columns and the "C2 is worse" counts;
* cdt-ablation (CDT with warmup="none", k = 1, 2, 3): Tables 5 and 6 (paper Appendix A.4.2); with --main,
  also the T1 = T^{2/(p+3)} column and the "k = 1 beats TL and OP" count;
* cdt-yahoo (yahoo-standin): Table 2 (paper Section 5), cumulative reward, on the synthetic stand-in;
* cdt-grid (unit-ball, algorithm fixed): Table 3 (paper Appendix A.1), the best fixed exploration value;
* cdt-switching (family lipschitz): the final regret of Oracle / Zooming TS-R / Zooming, the
  ranking claim of paper Appendix A.3 and Figure 4 (DIR/figures/fig4.png);
* cdt-switching-isolate (the Thompson scale changed alone, and the Oracle that renews stationary
  Zooming), with --main naming the cdt-switching directory: Figure 4's order in each
  (shape, constants) cell, and under the Oracle's other reading (switching-isolate.md);
* cdt-lipcheck (family lipschitz-check): Figure 3 (DIR/figures/fig3.png), the centred group-mean
  reward of each fixed exploration value along CDT runs, and its smoothness;
* cdt-sim-refcode (CDT presets refcode / refcode-fixed): their final regret beside the paper's CDT;
* a resolving sweep (cdt-table4-resolve, cdt-ablation-resolve: a comparisons.parquet beside its
  final.parquet): its comparisons setting by setting, the count of each verdict, and the seeds the
  cells took against a fixed plan reaching the same verdicts (resolved.md; nothing else).

--main DIR names a cdt-main directory used for the C1 and T1 = T^{2/(p+3)} columns (the
cdt-switching directory for cdt-switching-isolate).

Output: everything goes to DIR/figures/ (or --out DIR), never into the source tree, and the path
of every file written is printed. Each table printed is also written there as Markdown, exactly as
printed: final_regret.md (cdt-main's regret table and ranking claims), table1.md .. table6.md (the
paper's Tables 1-6), switching.md and switching-isolate.md (Figure 4's numbers), fig3.md (Figure 3's numbers), refcode.md;
the figures are fig2.png, fig3.png and fig4.png.

When final.parquet or summary.parquet is missing (a sweep still running, not yet summarised),
the statistics are computed from the trajectory shards that exist. Missing cells print as "-",
and every count says how many settings it is over ("k of n settings present").
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
from canonical import canonical_params  # noqa: E402

# ---------------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------------

BOTTOMS = ["linucb", "lints", "ucb-glm", "glm-tsl", "laplace-ts", "gloc", "sgd-ts"]
GLM_BOTTOMS = ["ucb-glm", "glm-tsl", "laplace-ts", "gloc", "sgd-ts"]
BOTTOM_LABELS = {
    "linucb": "LinUCB",
    "lints": "LinTS",
    "ucb-glm": "UCB-GLM",
    "glm-tsl": "GLM-TSL",
    "laplace-ts": "Laplace-TS",
    "gloc": "GLOC",
    "sgd-ts": "SGD-TS",
}
ENVS = ["synthetic", "movielens"]
ENV_LABELS = {"synthetic": "Sim", "movielens": "MovieLens"}
# The paper's 14 settings in its table order: each algorithm, Sim then MovieLens.
SETTINGS = [(b, e) for b in BOTTOMS for e in ENVS]
TUNERS = ["theory", "op", "tl", "cdt"]
TUNER_LABELS = {"theory": "Theory", "op": "OP", "tl": "TL/Syndicated", "cdt": "CDT"}
# Bottoms without a Theory value: neither the paper nor the authors' code gives one, so
# armada's "theory" runs a placeholder inside the search box. Shown as such, never ranked as Theory.
THEORY_PLACEHOLDER = {"gloc": "placeholder α = 1"}
COLORS = {"theory": "tab:gray", "op": "tab:green", "tl": "tab:blue", "cdt": "tab:red"}
LIPSCHITZ_ALGOS = ["oracle", "zooming-tsr", "zooming"]
LIPSCHITZ_LABELS = {"oracle": "Oracle", "zooming-tsr": "Zooming TS-R", "zooming": "Zooming"}
LIPSCHITZ_COLORS = {"oracle": "tab:gray", "zooming-tsr": "tab:red", "zooming": "tab:blue"}
SWITCHING_CHANGE_POINTS = [22_761, 47_734, 70_317]  # the code's HEAD points at T = 90,000
SWITCHING_PAPER_T = 90_000

# ---------------------------------------------------------------------------------------------
# The paper's numbers, copied from its Tables 1-6 (final cumulative regret at T = 14,000, mean of
# 20 repetitions, unless noted). Keys are (bottom, env).
# ---------------------------------------------------------------------------------------------

# Table 4 (paper Appendix A.4.1): (TL/Syndicated C1, OP C1, TL/Syndicated C2, OP C2). The C1 columns are the
# "original results in Section 5", i.e. Figure 2's TL and OP endpoints.
PAPER_TABLE4 = {
    ("linucb", "synthetic"): (343.14, 383.62, 356.23, 389.91),
    ("linucb", "movielens"): (346.16, 390.10, 359.10, 408.67),
    ("lints", "synthetic"): (828.41, 869.30, 874.34, 925.29),
    ("lints", "movielens"): (519.09, 666.35, 516.62, 667.77),
    ("ucb-glm", "synthetic"): (271.45, 350.85, 298.68, 367.97),
    ("ucb-glm", "movielens"): (381.00, 397.58, 406.29, 412.62),
    ("glm-tsl", "synthetic"): (433.27, 445.43, 448.21, 458.71),
    ("glm-tsl", "movielens"): (446.74, 678.91, 458.23, 718.46),
    ("laplace-ts", "synthetic"): (510.03, 568.81, 530.29, 567.10),
    ("laplace-ts", "movielens"): (949.51, 1063.92, 958.10, 1009.23),
    ("gloc", "synthetic"): (406.28, 417.30, 414.82, 427.05),
    ("gloc", "movielens"): (571.36, 513.90, 568.91, 520.72),
    ("sgd-ts", "synthetic"): (448.29, 551.63, 458.09, 557.04),
    ("sgd-ts", "movielens"): (1016.72, 1084.13, 1038.94, 1073.91),
}
# Tables 5 and 6 (paper Appendix A.4.2): (T1=0, T1=T^{2/(p+3)}, k=1, k=2, k=3), CDT.
PAPER_TABLE56 = {
    ("linucb", "synthetic"): (298.28, 303.14, 328.28, 300.62, 298.28),
    ("linucb", "movielens"): (313.29, 307.19, 310.06, 303.10, 313.29),
    ("lints", "synthetic"): (677.03, 669.45, 717.77, 670.90, 677.03),
    ("lints", "movielens"): (343.18, 340.85, 360.12, 352.19, 343.18),
    ("ucb-glm", "synthetic"): (299.74, 300.54, 314.01, 316.95, 299.74),
    ("ucb-glm", "movielens"): (314.41, 311.72, 347.92, 325.58, 314.41),
    ("glm-tsl", "synthetic"): (339.49, 333.07, 320.21, 331.43, 339.49),
    ("glm-tsl", "movielens"): (428.82, 432.47, 439.98, 428.91, 428.82),
    ("laplace-ts", "synthetic"): (520.29, 520.35, 565.15, 540.61, 520.29),
    ("laplace-ts", "movielens"): (903.16, 900.10, 948.10, 891.91, 903.16),
    ("gloc", "synthetic"): (414.70, 418.05, 417.05, 414.70, 415.05),
    ("gloc", "movielens"): (455.39, 461.78, 441.85, 455.39, 462.24),
    ("sgd-ts", "synthetic"): (430.05, 425.98, 450.14, 430.05, 414.57),
    ("sgd-ts", "movielens"): (843.91, 838.06, 852.98, 843.91, 830.35),
}
# Table 1 (paper Section 5): seconds per run in Python, (Theory, TL, OP, CDT).
PAPER_TABLE1 = {
    ("linucb", "synthetic"): (2.11, 4.01, 3.70, 6.89),
    ("linucb", "movielens"): (2.17, 3.87, 2.95, 7.31),
    ("lints", "synthetic"): (2.21, 4.10, 3.95, 7.63),
    ("lints", "movielens"): (2.04, 4.09, 3.45, 7.71),
    ("ucb-glm", "synthetic"): (7.74, 9.84, 9.71, 12.67),
    ("ucb-glm", "movielens"): (7.89, 9.64, 9.35, 13.05),
    ("glm-tsl", "synthetic"): (304.28, 306.98, 306.02, 309.54),
    ("glm-tsl", "movielens"): (294.17, 295.87, 294.83, 298.81),
    ("laplace-ts", "synthetic"): (523.62, 526.31, 526.24, 531.15),
    ("laplace-ts", "movielens"): (500.19, 503.45, 503.91, 509.65),
    ("gloc", "synthetic"): (486.58, 489.31, 490.24, 593.15),
    ("gloc", "movielens"): (474.87, 476.52, 477.16, 481.03),
    ("sgd-ts", "synthetic"): (67.42, 70.62, 69.42, 73.68),
    ("sgd-ts", "movielens"): (62.09, 66.48, 64.68, 67.31),
}
# Table 2 (paper Section 5): Yahoo R6A, cumulative reward over T = 2881 (higher is better), per tuner
# and bottom. The Theory row has 4 numbers for 5 columns; the gap is placed at GLOC here (the released
# code has no GLOC theoretical value). The alternative reading moves 217.38 from Laplace-TS to GLOC.
PAPER_TABLE2 = {
    "theory": {"ucb-glm": 221.51, "glm-tsl": 214.67, "laplace-ts": 217.38, "gloc": None, "sgd-ts": 206.73},
    "cdt": {"ucb-glm": 221.69, "glm-tsl": 218.27, "laplace-ts": 217.05, "gloc": 217.95, "sgd-ts": 218.35},
    "op": {"ucb-glm": 217.25, "glm-tsl": 217.08, "laplace-ts": 213.95, "gloc": 216.28, "sgd-ts": 215.58},
    "tl": {"ucb-glm": 218.95, "glm-tsl": 219.36, "laplace-ts": 214.42, "gloc": 218.19, "sgd-ts": 215.02},
}
PAPER_TABLE2_THEORY_ALT = {"ucb-glm": 221.51, "glm-tsl": 214.67, "laplace-ts": None, "gloc": 217.38, "sgd-ts": 206.73}
# Table 3 (paper Appendix A.1): best fixed exploration value by grid search, d = 10, T = 8000, per K.
PAPER_TABLE3 = {
    60: {"linucb": 2.5, "lints": 1.0, "ucb-glm": 1.5, "gloc": 4.5, "glm-tsl": 1.5},
    120: {"linucb": 3.0, "lints": 1.5, "ucb-glm": 2.5, "gloc": 5.0, "glm-tsl": 2.0},
}
TABLE3_BOTTOMS = ["linucb", "lints", "ucb-glm", "gloc", "glm-tsl"]
# The paper's claims (Section 5, Appendix A.4.1) as counts over its 14 settings; the script also
# recomputes them from the tables.
PAPER_CLAIM_CDT_LOWEST = (11, 14)
PAPER_CLAIM_TL_BEATS_OP = (13, 14)
PAPER_CLAIM_TL_WORSE_C2 = (12, 14)
PAPER_CLAIM_OP_WORSE_C2 = (11, 14)


def paper_final(bottom: str, env: str, tuner: str) -> float | None:
    """Figure 2's endpoint as published: Table 5 (T1 = T^{2/(p+3)}) for CDT, Table 4 C1 for TL/OP."""
    if (bottom, env) not in PAPER_TABLE4:
        return None
    return {
        "cdt": PAPER_TABLE56[(bottom, env)][1],
        "tl": PAPER_TABLE4[(bottom, env)][0],
        "op": PAPER_TABLE4[(bottom, env)][1],
    }.get(tuner)


# ---------------------------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------------------------


def num(x: float | None, digits: int = 2) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def ratio(ours: float | None, paper: float | None, digits: int = 3) -> str:
    """ours / paper with `digits` decimals, or 3 significant digits when that would print as 0.0..."""
    if ours is None or paper is None or paper == 0:
        return "-"
    r = ours / paper
    return f"{r:.{digits}f}" if abs(r) >= 10 ** (1 - digits) else f"{r:.3g}"


def mean_se(cell: dict | None, digits: int = 2) -> str:
    if cell is None:
        return "-"
    se = cell.get("se")
    return f"{cell['mean']:.{digits}f} ± {num(se, digits)}" if se is not None else f"{cell['mean']:.{digits}f}"


def yes_no(flag: bool | None) -> str:
    return "-" if flag is None else ("yes" if flag else "no")


def count(flags: list[bool | None]) -> tuple[int, int]:
    """(how many True, how many known) over a list of flags where None means the cell is missing."""
    known = [f for f in flags if f is not None]
    return sum(known), len(known)


def markdown(headers: list[str], rows: list[list[str]], left: int = 2) -> None:
    """Print a Markdown table; the first `left` columns are left-aligned, the rest right-aligned."""
    print("| " + " | ".join(headers) + " |")
    print("|" + "|".join("---" if i < left else "---:" for i in range(len(headers))) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()


def heading(text: str) -> None:
    print(f"\n## {text}\n")


class Tee(io.TextIOBase):
    """A text stream that writes to several others."""

    def __init__(self, *streams) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


@contextlib.contextmanager
def table_file(path: Path, written: list[Path]):
    """Everything printed inside the block is printed and also written to `path` (Markdown)."""
    copy = io.StringIO()
    with contextlib.redirect_stdout(Tee(sys.stdout, copy)):
        yield
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(copy.getvalue().lstrip("\n"), encoding="utf-8")
    written.append(path)


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------

CELL = ["family", "benchmark", "benchmark_params", "algorithm", "algorithm_params", "horizon"]
PARAMS = {
    "benchmark_params": ["bottom", "arms", "shape", "data"],
    "algorithm_params": ["candidates", "k", "warmup", "preset", "value", "constants"],
}


def param(column: str, name: str) -> pl.Expr:
    """One parameter's value (as text, quotes removed) out of canonical text like {arms=120,bottom="gloc"}."""
    return pl.col(column).str.extract(rf'[{{,]{name}="?([^,}}"]*)', 1).alias(name)


def with_params(df: pl.DataFrame | pl.LazyFrame):
    """Add one column per parameter the CDT tables key on, and the env label."""
    exprs = [param(col, name) for col, names in PARAMS.items() for name in names]
    return df.with_columns(exprs)


def shard_files(sweep: Path) -> list[Path]:
    return sorted((sweep / "trajectories").glob("*.parquet"))


def scan_shards(sweep: Path, columns: list[str]) -> pl.LazyFrame | None:
    """The trajectory shards, only `columns`; a column missing from an older shard comes back null
    (some early cdt-main shards lack reward_cum and expected_cum)."""
    frames = []
    for f in shard_files(sweep):
        lf = canonical_params(pl.scan_parquet(f))
        names = lf.collect_schema().names()
        frames.append(lf.select([pl.col(c) if c in names else pl.lit(None, pl.Float64).alias(c) for c in columns]))
    return pl.concat(frames, how="vertical_relaxed") if frames else None


def stats(value: pl.Expr) -> list[pl.Expr]:
    """n, mean, std (ddof 1), se over seeds, as summarize computes them (NaN counts as missing)."""
    v = value.fill_nan(None).drop_nulls()
    return [
        v.count().alias("n"),
        v.mean().alias("mean"),
        v.std(ddof=1).alias("std"),
        (v.std(ddof=1) / v.count().cast(pl.Float64).sqrt()).alias("se"),
    ]


def load_final(sweep: Path, metrics: list[str]) -> pl.DataFrame:
    """final.parquet restricted to `metrics`, or the same statistics from the shards if it is missing."""
    path = sweep / "final.parquet"
    if path.is_file():
        df = canonical_params(pl.read_parquet(path)).filter(pl.col("metric").is_in(metrics))
        return with_params(df.select(*CELL, "metric", "n", "mean", "std", "se"))
    shards = scan_shards(sweep, CELL + ["job_key", "step"] + metrics)
    if shards is None:
        return with_params(pl.DataFrame(schema={**{c: pl.String for c in CELL}, "horizon": pl.Int64}))
    last = shards.filter(pl.col("step") == pl.col("step").max().over("job_key"))
    long = last.unpivot(index=CELL + ["job_key"], on=metrics, variable_name="metric").with_columns(
        pl.col("value").cast(pl.Float64)
    )
    df = long.group_by(CELL + ["metric"]).agg(stats(pl.col("value"))).collect()
    print(f"(note: {path} is missing; statistics computed from {len(shard_files(sweep))} trajectory shards)")
    return with_params(df)


def load_curves(sweep: Path, metric: str, points: int = 900) -> pl.DataFrame:
    """Mean and std of `metric` per cell and step, on about `points` steps per cell (every
    horizon // points-th step, plus the last): summary.parquet, or the shards if it is missing."""
    stride = (pl.col("horizon") // points).clip(lower_bound=1)
    keep = ((pl.col("step") % stride) == 0) | (pl.col("step") == pl.col("horizon"))
    path = sweep / "summary.parquet"
    if path.is_file():
        lf = canonical_params(pl.scan_parquet(path)).filter((pl.col("metric") == metric) & keep)
        df = lf.select(*CELL, "step", "n", "mean", "std").collect()
    else:
        shards = scan_shards(sweep, CELL + ["step", metric])
        if shards is None:
            return with_params(pl.DataFrame(schema={**{c: pl.String for c in CELL}, "horizon": pl.Int64}))
        df = shards.filter(keep).group_by(CELL + ["step"]).agg(stats(pl.col(metric).cast(pl.Float64))).collect()
    return with_params(df)


def seconds_per_run(sweep: Path) -> pl.DataFrame:
    """Wall-clock seconds per job (sum of elapsed_ms / 1000), one row per job."""
    shards = scan_shards(sweep, CELL + ["job_key", "elapsed_ms"])
    if shards is None:
        return with_params(pl.DataFrame(schema={**{c: pl.String for c in CELL}, "seconds": pl.Float64}))
    per_job = shards.group_by(CELL + ["job_key"]).agg((pl.col("elapsed_ms").sum() / 1000).alias("seconds"))
    return with_params(per_job.collect())


# ---------------------------------------------------------------------------------------------
# Which rows belong to which experiment
# ---------------------------------------------------------------------------------------------

MAIN_ENV = pl.col("benchmark").is_in(ENVS)
IS_MAIN = (
    (pl.col("family") == "bandits")
    & MAIN_ENV
    & (
        (pl.col("algorithm") == "theory")
        | (pl.col("algorithm").is_in(["op", "tl"]) & pl.col("candidates").fill_null("c1").eq("c1"))
        | (
            (pl.col("algorithm") == "cdt")
            & pl.col("warmup").fill_null("preset").ne("none")
            & pl.col("preset").fill_null("paper").eq("paper")
            & pl.col("k").fill_null("3.0").cast(pl.Float64).eq(3.0)
        )
    )
)
IS_TABLE4 = MAIN_ENV & pl.col("algorithm").is_in(["op", "tl"]) & (pl.col("candidates") == "c2")
IS_ABLATION = MAIN_ENV & (pl.col("algorithm") == "cdt") & (pl.col("warmup") == "none")
IS_YAHOO = pl.col("benchmark") == "yahoo-standin"
IS_GRID = (pl.col("benchmark") == "unit-ball") & (pl.col("algorithm") == "fixed")
IS_SWITCHING = (pl.col("family") == "lipschitz") & (pl.col("benchmark") == "switching")
IS_LIPCHECK = pl.col("family") == "lipschitz-check"
REFCODE_PRESETS = ["refcode", "refcode-fixed", "refcode-map"]
IS_REFCODE = MAIN_ENV & (pl.col("algorithm") == "cdt") & pl.col("preset").is_in(REFCODE_PRESETS)
KINDS = {
    "main": IS_MAIN,
    "table4": IS_TABLE4,
    "ablation": IS_ABLATION,
    "yahoo": IS_YAHOO,
    "grid": IS_GRID,
    "switching": IS_SWITCHING,
    "lipcheck": IS_LIPCHECK,
    "refcode": IS_REFCODE,
}


def kinds_present(final: pl.DataFrame) -> list[str]:
    present = [k for k, expr in KINDS.items() if final.filter(expr).height > 0]
    unknown = final.filter(~pl.any_horizontal([e.fill_null(False) for e in KINDS.values()]))
    if unknown.height:
        cells = unknown.select("benchmark", "algorithm", "algorithm_params").unique().sort(pl.all())
        listed = ", ".join(f"{r[0]}/{r[1]}{r[2]}" for r in cells.iter_rows())
        print(f"(note: {cells.height} kinds of cell belong to no CDT table and are left out: {listed})")
    return present


def lookup(frames: list[pl.DataFrame], kind: str, metric: str, keys: list[str]) -> dict[tuple, dict]:
    """{key tuple: {n, mean, std, se, horizon}} for the rows of `kind`; later frames win."""
    out: dict[tuple, dict] = {}
    for df in frames:
        rows = df.filter(KINDS[kind] & (pl.col("metric") == metric))
        for r in rows.iter_rows(named=True):
            out[tuple(r[k] for k in keys)] = r
    return out


def comparable(*cells: dict | None) -> bool:
    """All cells present and at the same horizon; a count across sweeps run at different T (a quick
    sweep against a full cdt-main) would be meaningless, so such a setting counts as missing."""
    if not all(cells):
        return False
    if len({c["horizon"] for c in cells}) > 1:
        if not MISMATCH_WARNED:
            MISMATCH_WARNED.append(True)
            print("(note: cells at different horizons T are not compared; such settings count as missing)\n")
        return False
    return True


MISMATCH_WARNED: list[bool] = []


def resolution(pairs: list[tuple[dict | None, dict | None]], effect: float = 0.02, source: str = "") -> str:
    """Whether these runs can resolve a relative `effect` between the two cells of each pair (the
    paper's differences are about 2%; `source` says where another effect comes from): the median
    standard error of a difference of the two means,
    relative to the second, how many differences exceed two such errors, and the repetitions per
    cell at which `effect` would be two standard errors (the error falls as 1/sqrt(n))."""
    rel, beyond, above, ns_ = [], 0, 0, []
    for a, b in pairs:
        if not comparable(a, b) or a.get("se") is None or b.get("se") is None or not b["mean"]:
            continue
        se = (a["se"] ** 2 + b["se"] ** 2) ** 0.5
        rel.append(se / abs(b["mean"]))
        beyond += abs(a["mean"] - b["mean"]) > 2 * se
        above += a["mean"] - b["mean"] > 2 * se
        ns_.append(b["n"])
    if not rel:
        return "Noise: no pair of cells to weigh."
    med, n = sorted(rel)[len(rel) // 2], min(ns_)
    needed = math.ceil(n * (2 * med / effect) ** 2)
    verdict = "resolvable" if 2 * med <= effect else "not resolvable at this size"
    return (
        f"Noise: the difference of two cell means has a median standard error of {100 * med:.1f}% (n = {n}); "
        f"{beyond} of {len(rel)} differences exceed two standard errors ({above} with the first above the second). "
        f"A {100 * effect:.0f}% effect{source} is "
        f"two standard errors at about {needed} repetitions per cell: {verdict}."
    )


def horizons(cells: dict) -> str:
    hs = sorted({c["horizon"] for c in cells.values()})
    return ", ".join(f"{h:,}" for h in hs) if hs else "-"


def ns(cells: dict) -> str:
    values = sorted({c["n"] for c in cells.values()})
    return "-" if not values else (str(values[0]) if len(values) == 1 else f"{values[0]}-{values[-1]}")


# ---------------------------------------------------------------------------------------------
# cdt-main: final regret (Table 4 C1, Table 5 T1 column), ranking counts, Table 1, Figure 2
# ---------------------------------------------------------------------------------------------


def lowest(values: dict[str, float | None]) -> str | None:
    present = {k: v for k, v in values.items() if v is not None}
    return min(present, key=present.get) if present else None


def theory_cell(bottom: str, cell: dict | None) -> str:
    """A Theory cell, named a placeholder where the bottom has no Theory value."""
    text = mean_se(cell)
    return f"{text} ({THEORY_PLACEHOLDER[bottom]})" if bottom in THEORY_PLACEHOLDER and cell else text


def rankable(bottom: str, tuners: list[str]) -> list[str]:
    """The tuners a ranking of `bottom` compares: not a placeholder Theory."""
    return [t for t in tuners if not (t == "theory" and bottom in THEORY_PLACEHOLDER)]


def main_regret_table(main: dict) -> None:
    heading("Final cumulative regret at T: CDT vs the baselines (paper Section 5; Table 4 C1, Table 5, Figure 2 endpoints)")
    print(
        f"Ours: mean ± se over n = {ns(main)} repetitions at T = {horizons(main)}. Paper: T = 14,000, mean of 20; "
        "CDT = Table 5's T1 = T^{2/(p+3)} column, TL/OP = Table 4's C1 columns; no Theory endpoints are published. "
        "GLOC has no Theory value in the paper or the authors' code: its Theory column is a placeholder, not ranked.\n"
    )
    rows = []
    for b, e in SETTINGS:
        cells = {t: main.get((b, e, t)) for t in TUNERS}
        if not any(cells.values()):
            rows.append([BOTTOM_LABELS[b], ENV_LABELS[e]] + ["-"] * 13)
            continue
        mean = {t: (c["mean"] if c else None) for t, c in cells.items() if t in rankable(b, TUNERS)}
        row = [BOTTOM_LABELS[b], ENV_LABELS[e], ns({t: c for t, c in cells.items() if c}), theory_cell(b, cells["theory"])]
        for t in ("cdt", "tl", "op"):
            p = paper_final(b, e, t)
            row += [mean_se(cells[t]), num(p), ratio(mean[t], p)]
        ours_best = lowest(mean)
        paper_best = lowest({t: paper_final(b, e, t) for t in ("cdt", "tl", "op")})
        row += [TUNER_LABELS[ours_best] if ours_best else "-", TUNER_LABELS[paper_best]]
        rows.append(row)
    markdown(
        [
            "Algorithm",
            "Env",
            "n",
            "Theory",
            "CDT",
            "paper",
            "ratio",
            "TL/Synd.",
            "paper",
            "ratio",
            "OP",
            "paper",
            "ratio",
            "lowest (ours)",
            "lowest (paper)",
        ],
        rows,
    )


def main_claims(main: dict, title: str = "Ranking claims (paper Section 5)") -> None:
    heading(title)
    paper_cdt = {s: lowest({t: paper_final(*s, t) for t in ("cdt", "tl", "op")}) == "cdt" for s in SETTINGS}
    paper_tl = {s: paper_final(*s, "tl") < paper_final(*s, "op") for s in SETTINGS}
    assert (sum(paper_cdt.values()), len(SETTINGS)) == PAPER_CLAIM_CDT_LOWEST
    assert (sum(paper_tl.values()), len(SETTINGS)) == PAPER_CLAIM_TL_BEATS_OP

    def ours_cdt(s):
        cells = {t: main.get((*s, t)) for t in rankable(s[0], TUNERS)}
        if not all(cells[t] for t in ("cdt", "tl", "op")):
            return None
        return lowest({t: (c["mean"] if c else None) for t, c in cells.items()}) == "cdt"

    def ours_tl(s):
        tl, op = main.get((*s, "tl")), main.get((*s, "op"))
        return None if not (tl and op) else tl["mean"] < op["mean"]

    def ours_std(s):
        cells = {t: main.get((*s, t)) for t in rankable(s[0], TUNERS)}
        if not all(cells[t] and cells[t]["std"] is not None for t in ("cdt", "tl", "op")):
            return None
        return lowest({t: (c["std"] if c and c["std"] is not None else None) for t, c in cells.items()}) == "cdt"

    rows = []
    for label, ours, paper in (
        ("CDT has the lowest mean regret (among the tuners present, Theory included but GLOC's placeholder)", ours_cdt, paper_cdt),
        ("TL/Syndicated beats OP", ours_tl, paper_tl),
        ("CDT has the smallest std (paper: 'most settings', no count)", ours_std, None),
    ):
        for scope, envs in (("all", ENVS), ("Sim", ["synthetic"]), ("MovieLens", ["movielens"])):
            subset = [s for s in SETTINGS if s[1] in envs]
            flags = {s: ours(s) for s in subset}
            k, n = count(list(flags.values()))
            present = [s for s, f in flags.items() if f is not None]
            if paper is None:
                paper_all, paper_here = "-", "-"
            else:
                paper_all = f"{sum(paper[s] for s in subset)} of {len(subset)}"
                paper_here = f"{sum(paper[s] for s in present)} of {len(present)}"
            rows.append([label, scope, f"{k} of {n}", paper_all, paper_here])
    markdown(["claim", "settings", "ours (of settings present)", "paper", "paper, same settings"], rows)
    # Whether 20 repetitions can resolve each ranking: the effect is the paper's own median gap.
    best = {s: min(("tl", "op"), key=lambda t: paper_final(*s, t)) for s in SETTINGS}
    cdt_gaps = sorted(abs(paper_final(*s, "cdt") / paper_final(*s, best[s]) - 1) for s in SETTINGS)
    tl_gaps = sorted(abs(paper_final(*s, "tl") / paper_final(*s, "op") - 1) for s in SETTINGS)
    source = " (the paper's median gap between them)"
    cdt_pairs = [(main.get((*s, "cdt")), main.get((*s, best[s]))) for s in SETTINGS]
    tl_pairs = [(main.get((*s, "tl")), main.get((*s, "op"))) for s in SETTINGS]
    print("CDT against the paper's better of TL and OP in each setting. ", end="")
    print(resolution(cdt_pairs, cdt_gaps[len(cdt_gaps) // 2], source) + "\n")
    print("TL/Syndicated against OP. " + resolution(tl_pairs, tl_gaps[len(tl_gaps) // 2], source) + "\n")

    theory_rows = []
    for b, e in SETTINGS:
        th, cdt = main.get((b, e, "theory")), main.get((b, e, "cdt"))
        if b in ("linucb", "lints") and th and cdt:
            theory_rows.append(
                [BOTTOM_LABELS[b], ENV_LABELS[e], num(th["mean"]), num(cdt["mean"]), ratio(th["mean"], cdt["mean"], 2)]
            )
    if theory_rows:
        print("Theory is 'too conservative' on LinUCB and LinTS (Figure 2; the paper gives no number):\n")
        markdown(["Algorithm", "Env", "Theory", "CDT", "Theory / CDT"], theory_rows)


def table1(seconds: pl.DataFrame) -> None:
    heading("Table 1: seconds per run (paper Section 5)")
    main = seconds.filter(IS_MAIN)
    per_cell = main.group_by("bottom", "benchmark", "algorithm").agg(
        pl.col("seconds").mean().alias("s"), pl.len().alias("runs"), pl.col("horizon").first()
    )
    cells = {(r["bottom"], r["benchmark"], r["algorithm"]): r for r in per_cell.iter_rows(named=True)}
    hs = sorted({r["horizon"] for r in cells.values()})
    print(
        f"Ours: sum of elapsed_ms per job / 1000, mean over jobs (Rust, T = {', '.join(map(str, hs)) or '-'}). "
        "Paper: Python, T = 14,000, hardware not stated (the authors' code, timed on this "
        "machine class: LinUCB + CDT 2.6 s, UCB-GLM + CDT 31-34 s, GLM-TSL + CDT 466-530 s). "
        "Paper order of columns: Theory, TL, OP, CDT.\n"
    )
    rows, order_ok, overhead = [], [], []
    for b, e in SETTINGS:
        got = {t: cells.get((b, e, t)) for t in TUNERS}
        paper = dict(zip(("theory", "tl", "op", "cdt"), PAPER_TABLE1[(b, e)], strict=True))
        runs = sorted({c["runs"] for c in got.values() if c})
        row = [BOTTOM_LABELS[b], ENV_LABELS[e], "/".join(map(str, runs)) or "-"]
        for t in ("theory", "tl", "op", "cdt"):
            s = got[t]["s"] if got[t] else None
            row += [num(s, 3), num(paper[t]), ratio(s, paper[t])]
        s = {t: (c["s"] if c else None) for t, c in got.items()}
        d_ours = s["cdt"] - s["tl"] if s["cdt"] is not None and s["tl"] is not None else None
        row += [num(d_ours, 3), num(paper["cdt"] - paper["tl"])]
        rows.append(row)
        if all(v is not None for v in s.values()):
            order_ok.append(s["theory"] < min(s["op"], s["tl"]) and max(s["op"], s["tl"]) < s["cdt"])
        if d_ours is not None and s["tl"]:
            overhead.append(d_ours / s["tl"])
    markdown(
        [
            "Algorithm",
            "Env",
            "runs",
            "Theory s",
            "paper",
            "ratio",
            "TL s",
            "paper",
            "ratio",
            "OP s",
            "paper",
            "ratio",
            "CDT s",
            "paper",
            "ratio",
            "CDT−TL s",
            "paper CDT−TL",
        ],
        rows,
        left=3,
    )
    k, n = count(order_ok)
    paper_ok = sum(p[0] < min(p[1], p[2]) and max(p[1], p[2]) < p[3] for p in PAPER_TABLE1.values())
    print(
        f"Order Theory < OP, TL < CDT holds in {k} of {n} settings present "
        f"(the paper's Table 1: {paper_ok} of {len(PAPER_TABLE1)})."
    )
    if overhead:
        print(
            f"CDT's overhead over TL: median {100 * sorted(overhead)[len(overhead) // 2]:.1f}% of TL's time "
            "(paper: about +4 s on top of 4-530 s)."
        )


def figure2(curves: pl.DataFrame, out: Path) -> Path | None:
    curves = curves.filter(IS_MAIN)
    envs = [e for e in ENVS if curves.filter(pl.col("benchmark") == e).height]
    bottoms = [b for b in BOTTOMS if curves.filter(pl.col("bottom") == b).height]
    if not envs:
        return None
    fig, axes = plt.subplots(len(envs), len(bottoms), figsize=(3.3 * len(bottoms), 3.0 * len(envs)), squeeze=False)
    for i, e in enumerate(envs):
        for j, b in enumerate(bottoms):
            ax = axes[i][j]
            cell = curves.filter((pl.col("benchmark") == e) & (pl.col("bottom") == b))
            if cell.height == 0:
                ax.set_title(f"{BOTTOM_LABELS[b]} ({ENV_LABELS[e]}): not run yet", fontsize=9)
                ax.axis("off")
                continue
            n = set()
            for t in TUNERS:
                c = cell.filter(pl.col("algorithm") == t).sort("step")
                if c.height:
                    label = TUNER_LABELS[t]
                    if t == "theory" and b in THEORY_PLACEHOLDER:
                        label += f" ({THEORY_PLACEHOLDER[b]})"
                    plot_band(ax, c, COLORS[t], label)
                    n.add(c["n"].max())
            n_text = "-".join(str(v) for v in sorted({min(n), max(n)}))
            ax.set_title(f"{BOTTOM_LABELS[b]} ({ENV_LABELS[e]}), n = {n_text}", fontsize=10)
            ax.set_xlabel("round")
            if j == 0:
                ax.set_ylabel("cumulative regret")
            if (i == 0 and j == 0) or b in THEORY_PLACEHOLDER:
                ax.legend(fontsize=7)
    fig.suptitle("CDT paper, Figure 2: cumulative regret, mean ± one standard deviation over repetitions")
    return save(fig, out / "fig2.png")


def plot_band(ax, c: pl.DataFrame, color: str, label: str) -> None:
    x, m, s = c["step"].to_numpy(), c["mean"].to_numpy(), c["std"].fill_null(0).to_numpy()
    ax.plot(x, m, color=color, label=label, lw=1.2)
    ax.fill_between(x, m - s, m + s, color=color, alpha=0.15, lw=0)


def save(fig, path: Path) -> Path:
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ---------------------------------------------------------------------------------------------
# cdt-table4: Table 4
# ---------------------------------------------------------------------------------------------


def table4(c2: dict, c1: dict) -> None:
    heading("Table 4: candidate sets C1 vs C2 for TL/Syndicated and OP (paper Appendix A.4.1)")
    print(
        f"Ours: mean ± se at T = {horizons(c2)} (C2, n = {ns(c2)}) and "
        f"T = {horizons(c1)} (C1 from cdt-main, n = {ns(c1)}). "
        "Paper: T = 14,000, mean of 20. 'worse' = C2's mean regret above C1's.\n"
    )
    rows, flags = [], {"tl": {}, "op": {}}
    for b, e in SETTINGS:
        p = dict(zip(("tl_c1", "op_c1", "tl_c2", "op_c2"), PAPER_TABLE4[(b, e)], strict=True))
        row = [BOTTOM_LABELS[b], ENV_LABELS[e]]
        for t in ("tl", "op"):
            cell = c2.get((b, e, t))
            row += [mean_se(cell), num(p[f"{t}_c2"]), ratio(cell["mean"] if cell else None, p[f"{t}_c2"])]
        for t in ("tl", "op"):
            cell = c1.get((b, e, t))
            row += [mean_se(cell), num(p[f"{t}_c1"]), ratio(cell["mean"] if cell else None, p[f"{t}_c1"])]
        for t in ("tl", "op"):
            a, o = c1.get((b, e, t)), c2.get((b, e, t))
            flags[t][(b, e)] = o["mean"] > a["mean"] if comparable(a, o) else None
            row.append(f"{yes_no(flags[t][(b, e)])} / {yes_no(p[f'{t}_c2'] > p[f'{t}_c1'])}")
        rows.append(row)
    markdown(
        [
            "Algorithm",
            "Env",
            "TL C2",
            "paper",
            "ratio",
            "OP C2",
            "paper",
            "ratio",
            "TL C1",
            "paper",
            "ratio",
            "OP C1",
            "paper",
            "ratio",
            "TL worse with C2 (ours / paper)",
            "OP worse with C2 (ours / paper)",
        ],
        rows,
    )
    c2_present = sum(1 for s in SETTINGS if c2.get((*s, "tl")) or c2.get((*s, "op")))
    print(
        f"C2 cells present in {c2_present} of {len(SETTINGS)} settings; C1 (cdt-main) in "
        f"{sum(1 for s in SETTINGS if c1.get((*s, 'tl')) or c1.get((*s, 'op')))} of {len(SETTINGS)}."
    )
    if not c1:
        print("No C1 cells: pass --main DIR (a cdt-main directory) for the C1 columns and the counts below.")
    rows = []
    for t, claim in (("tl", PAPER_CLAIM_TL_WORSE_C2), ("op", PAPER_CLAIM_OP_WORSE_C2)):
        i = 0 if t == "tl" else 1
        paper = {s: PAPER_TABLE4[s][i + 2] > PAPER_TABLE4[s][i] for s in SETTINGS}
        assert (sum(paper.values()), len(SETTINGS)) == claim
        k, n = count(list(flags[t].values()))
        present = [s for s, f in flags[t].items() if f is not None]
        exceptions = ", ".join(f"{BOTTOM_LABELS[b]}-{ENV_LABELS[e]}" for (b, e), f in flags[t].items() if f is False)
        rows.append(
            [
                TUNER_LABELS[t],
                f"{k} of {n}",
                f"{claim[0]} of {claim[1]}",
                f"{sum(paper[s] for s in present)} of {len(present)}",
                exceptions or "-",
            ]
        )
    print()
    markdown(["tuner", "worse with C2 (ours)", "paper", "paper, same settings", "our exceptions"], rows, left=1)
    # The paper's own C2-against-C1 differences are the effect to resolve (their median, about 3%).
    paper_effects = sorted(abs(PAPER_TABLE4[s][i + 2] / PAPER_TABLE4[s][i] - 1) for s in SETTINGS for i in (0, 1))
    effect = paper_effects[len(paper_effects) // 2]
    pairs = [(c2.get((*s, t)), c1.get((*s, t))) for s in SETTINGS for t in ("tl", "op")]
    print(resolution(pairs, effect, " (the paper's median |C2 - C1| here)"))


# ---------------------------------------------------------------------------------------------
# cdt-ablation: Tables 5 and 6
# ---------------------------------------------------------------------------------------------


def table5(abl: dict, main: dict) -> None:
    """abl: {(bottom, env, k): cell} for CDT with warmup none; main: {(bottom, env, 'cdt'): cell}."""
    heading("Table 5: CDT with and without the random warm-up T1 (paper Appendix A.4.2)")
    print(
        f"Ours: mean ± se; T1 = 0 is CDT with warmup = none and k = 3 (T = {horizons(abl)}, n = {ns(abl)}); "
        f"T1 = T^{{2/(p+3)}} is cdt-main's CDT (T = {horizons(main)}, n = {ns(main)}). "
        "diff = (T1=0 − T1=T^...) / T1=T^... "
        "Paper: T = 14,000. Its T1 = 0 column equals its k = 2 column (not k = 3) for GLOC and SGD-TS (p = 2).\n"
    )
    if not main:
        print("No cdt-main cells: pass --main DIR (a cdt-main directory) for the T1 = T^{2/(p+3)} column.\n")
    rows, diffs, paper_diffs = [], {}, {}
    for b, e in SETTINGS:
        p = PAPER_TABLE56[(b, e)]
        zero, warm = abl.get((b, e, 3.0)), main.get((b, e, "cdt"))
        d = 100 * (zero["mean"] / warm["mean"] - 1) if comparable(zero, warm) else None
        diffs[(b, e)] = d
        paper_diffs[(b, e)] = 100 * (p[0] / p[1] - 1)
        rows.append(
            [
                BOTTOM_LABELS[b],
                ENV_LABELS[e],
                mean_se(zero),
                num(p[0]),
                ratio(zero["mean"] if zero else None, p[0]),
                mean_se(warm),
                num(p[1]),
                ratio(warm["mean"] if warm else None, p[1]),
                num(d, 1) + ("%" if d is not None else ""),
                f"{paper_diffs[(b, e)]:.1f}%",
            ]
        )
    markdown(
        [
            "Algorithm",
            "Env",
            "T1=0",
            "paper",
            "ratio",
            "T1=T^{2/(p+3)}",
            "paper",
            "ratio",
            "diff (ours)",
            "diff (paper)",
        ],
        rows,
    )
    present = [s for s, d in diffs.items() if d is not None]
    within = sum(abs(diffs[s]) <= 2 for s in present)
    print(
        f"Claim 'almost identical with and without warm-up (within about 2%)': ours within 2% in {within} of "
        f"{len(present)} settings present; paper {sum(abs(paper_diffs[s]) <= 2 for s in present)} of {len(present)} "
        f"on the same settings ({sum(abs(v) <= 2 for v in paper_diffs.values())} of 14 overall)."
    )
    if present:
        print(
            f"Largest |diff|: ours {max(abs(diffs[s]) for s in present):.1f}%, paper (same settings) "
            f"{max(abs(paper_diffs[s]) for s in present):.1f}%."
        )
    print(resolution([(abl.get((*s, 3.0)), main.get((*s, "cdt"))) for s in SETTINGS]))


def table6(abl: dict, main: dict) -> None:
    """abl: {(bottom, env, k): cell} for CDT with warmup none; main: {(bottom, env, 'tl' or 'op'): cell}."""
    heading("Table 6: CDT with restart epoch T2 = k T^{(p+2)/(p+3)}, no warm-up (paper Appendix A.4.2)")
    print(
        f"Ours: mean ± se, warmup = none (T = {horizons(abl)}, n = {ns(abl)}). "
        "Paper: T = 14,000, apparently also T1 = 0.\n"
    )
    rows = []
    for b, e in SETTINGS:
        p = dict(zip((1.0, 2.0, 3.0), PAPER_TABLE56[(b, e)][2:], strict=True))
        row = [BOTTOM_LABELS[b], ENV_LABELS[e]]
        for k in (1.0, 2.0, 3.0):
            c = abl.get((b, e, k))
            row += [mean_se(c), num(p[k]), ratio(c["mean"] if c else None, p[k])]
        ours_best = lowest({k: (abl[(b, e, k)]["mean"] if (b, e, k) in abl else None) for k in (1.0, 2.0, 3.0)})
        row += ["-" if ours_best is None else f"{ours_best:g}", f"{lowest(p):g}"]
        rows.append(row)
    markdown(
        [
            "Algorithm",
            "Env",
            "k=1",
            "paper",
            "ratio",
            "k=2",
            "paper",
            "ratio",
            "k=3",
            "paper",
            "ratio",
            "best k (ours)",
            "best k (paper)",
        ],
        rows,
    )
    ablation_claims(abl, main)


def ablation_claims(abl: dict, main: dict) -> None:
    def better(k):
        ours = {
            s: (abl[(*s, k)]["mean"] < abl[(*s, 1.0)]["mean"]) if (*s, k) in abl and (*s, 1.0) in abl else None
            for s in SETTINGS
        }
        paper = {s: PAPER_TABLE56[s][1 + int(k)] < PAPER_TABLE56[s][2] for s in SETTINGS}
        return ours, paper

    def k1_beats_baselines():
        ours = {}
        for s in SETTINGS:
            k1, tl, op = abl.get((*s, 1.0)), main.get((*s, "tl")), main.get((*s, "op"))
            ours[s] = k1["mean"] < min(tl["mean"], op["mean"]) if comparable(k1, tl, op) else None
        paper = {s: PAPER_TABLE56[s][2] < min(PAPER_TABLE4[s][0], PAPER_TABLE4[s][1]) for s in SETTINGS}
        return ours, paper

    rows = []
    for label, (ours, paper) in (
        ("k = 2 better than k = 1", better(2.0)),
        ("k = 3 better than k = 1", better(3.0)),
        ("k = 1 beats both TL and OP (C1, cdt-main)", k1_beats_baselines()),
    ):
        k, n = count(list(ours.values()))
        present = [s for s, f in ours.items() if f is not None]
        rows.append(
            [
                label,
                f"{k} of {n}",
                f"{sum(paper.values())} of 14",
                f"{sum(paper[s] for s in present)} of {len(present)}",
            ]
        )
    markdown(["claim (Table 6)", "ours (of settings present)", "paper", "paper, same settings"], rows, left=1)
    ratios = [
        abl[(*s, 2.0)]["mean"] / abl[(*s, 3.0)]["mean"] for s in SETTINGS if (*s, 2.0) in abl and (*s, 3.0) in abl
    ]
    paper_ratios = [v[3] / v[4] for v in PAPER_TABLE56.values()]
    if ratios:
        print(
            f"k = 2 vs k = 3 ('comparable'): ours regret ratio k2/k3 from {min(ratios):.3f} to {max(ratios):.3f} "
            f"over {len(ratios)} settings; paper from "
            f"{min(paper_ratios):.3f} to {max(paper_ratios):.3f}."
        )
    print(resolution([(abl.get((*s, k)), abl.get((*s, 1.0))) for s in SETTINGS for k in (2.0, 3.0)]))
    # The third claim weighed the same way: k = 1 against the better (lower regret) of TL and OP.
    better_baseline = {
        s: min((main[(*s, m)] for m in ("tl", "op") if (*s, m) in main), key=lambda c: c["mean"], default=None)
        for s in SETTINGS
    }
    if not any(better_baseline.values()):
        return  # no --main: nothing to weigh k = 1 against
    # The effect weighed is the paper's: the median gap between its k = 1 and its better of TL and OP.
    gaps = sorted(
        abs(PAPER_TABLE56[s][2] - min(PAPER_TABLE4[s][0], PAPER_TABLE4[s][1])) / min(PAPER_TABLE4[s][0], PAPER_TABLE4[s][1])
        for s in SETTINGS
    )
    print()
    print(
        "k = 1 against the better of TL and OP (C1, cdt-main), first k = 1: "
        + resolution(
            [(abl.get((*s, 1.0)), better_baseline[s]) for s in SETTINGS],
            effect=gaps[len(gaps) // 2],
            source=" (the paper's median gap)",
        )
    )


# ---------------------------------------------------------------------------------------------
# cdt-yahoo: Table 2
# ---------------------------------------------------------------------------------------------


def table2(reward: dict, ctr: dict, per_seed: pl.DataFrame | None = None) -> None:
    heading("Table 2: Yahoo stand-in (synthetic; comparable in scale and ranking only) — cumulative reward (paper Section 5)")
    print(
        f"Ours: reward_cum (realised clicks) mean ± se at T = {horizons(reward)}, n = {ns(reward)}; "
        "CTR sum = expected_cum. "
        "Paper: the real Yahoo R6A data, T = 2881; higher is better. Paper Theory/GLOC is missing; the alternative "
        "reading of the paper's Theory row puts 217.38 at GLOC instead of Laplace-TS (printed in brackets).\n"
    )
    rows = []
    for b in GLM_BOTTOMS:
        ours_rank = rank_desc({t: reward[(b, t)]["mean"] if (b, t) in reward else None for t in rankable(b, TUNERS)})
        paper_rank = rank_desc({t: PAPER_TABLE2[t][b] for t in TUNERS})
        for t in ("theory", "cdt", "op", "tl"):
            c = reward.get((b, t))
            paper = PAPER_TABLE2[t][b]
            paper_s = num(paper)
            if t == "theory" and PAPER_TABLE2_THEORY_ALT[b] != paper:
                paper_s += f" [{num(PAPER_TABLE2_THEORY_ALT[b])}]"
            rows.append(
                [
                    BOTTOM_LABELS[b],
                    TUNER_LABELS[t],
                    str(c["n"]) if c else "-",
                    theory_cell(b, c) if t == "theory" else mean_se(c),
                    paper_s,
                    ratio(c["mean"] if c else None, paper),
                    num(ctr[(b, t)]["mean"]) if (b, t) in ctr else "-",
                    num(c["std"]) if c else "-",
                    ours_rank.get(t, "-"),
                    paper_rank.get(t, "-"),
                ]
            )
    markdown(
        [
            "Algorithm",
            "Method",
            "n",
            "ours",
            "paper",
            "ratio",
            "ours CTR sum",
            "ours std",
            "rank (ours)",
            "rank (paper)",
        ],
        rows,
    )

    def best(table: dict[str, dict], tuners: list[str], b: str) -> str | None:
        return lowest({t: (-table[t][b] if table[t].get(b) is not None else None) for t in tuners})

    ours_table = {t: {b: reward[(b, t)]["mean"] for b in GLM_BOTTOMS if (b, t) in reward} for t in TUNERS}
    alt = {**PAPER_TABLE2, "theory": PAPER_TABLE2_THEORY_ALT}
    present = [b for b in GLM_BOTTOMS if all((b, t) in reward for t in ("cdt", "op", "tl"))]
    rows = []
    for label, tuners in (
        ("CDT best among the tuners (CDT, OP, TL)", ["cdt", "op", "tl"]),
        ("CDT best, Theory included (not GLOC's placeholder)", TUNERS),
    ):
        ours = sum(best(ours_table, rankable(b, tuners), b) == "cdt" for b in present)
        paper = sum(best(PAPER_TABLE2, tuners, b) == "cdt" for b in GLM_BOTTOMS)
        paper_alt = sum(best(alt, tuners, b) == "cdt" for b in GLM_BOTTOMS)
        rows.append([label, f"{ours} of {len(present)}", f"{paper} of 5", f"{paper_alt} of 5"])
    tl_ours = sum(ours_table["tl"][b] > ours_table["op"][b] for b in present)
    tl_paper = sum(PAPER_TABLE2["tl"][b] > PAPER_TABLE2["op"][b] for b in GLM_BOTTOMS)
    rows.append(["TL/Syndicated beats OP", f"{tl_ours} of {len(present)}", f"{tl_paper} of 5", f"{tl_paper} of 5"])
    markdown(
        [
            "claim (paper text: CDT best overall, best tuner on UCB-GLM, Laplace-TS, SGD-TS)",
            "ours (bottoms present)",
            "paper",
            "paper, Theory/GLOC alternative",
        ],
        rows,
        left=1,
    )
    stds = {
        t: [reward[(b, t)]["std"] for b in GLM_BOTTOMS if (b, t) in reward and reward[(b, t)]["std"] is not None]
        for t in TUNERS
    }
    if all(stds.values()):
        print(
            "'Theory is unstable': our mean std over bottoms: "
            + ", ".join(f"{TUNER_LABELS[t]} {sum(v) / len(v):.2f}" for t, v in stds.items())
            + "."
        )
    if per_seed is not None:
        table2_paired(per_seed)


def paired(per_seed: pl.DataFrame, bottom: str, a: str, b: str) -> str:
    """The difference a - b of each seed's final reward_cum on `bottom`, over the seeds both ran:
    mean ± se (z)."""
    rows = per_seed.filter(pl.col("bottom") == bottom)
    wide = rows.pivot(on="algorithm", index="seed", values="reward_cum")
    if a not in wide.columns or b not in wide.columns:
        return "-"
    d = (wide[a] - wide[b]).drop_nulls().drop_nans()
    if d.len() < 2:
        return "-"
    mean, se = d.mean(), d.std(ddof=1) / d.len() ** 0.5
    return f"{mean:+.2f} ± {se:.2f} (z {mean / se:.2f})" if se else f"{mean:+.2f}"


def table2_paired(per_seed: pl.DataFrame) -> None:
    """The comparisons of Table 2 paired by seed (common random numbers: a seed is the same stand-in
    data and noise for every method), from each job's final value."""
    print()
    print(
        f"Paired by seed (each job's final reward_cum, `{PER_SEED}`): the difference's mean ± se over "
        "the seeds (z); the runner-up is the better of OP and TL by mean.\n"
    )
    rows = []
    for b in GLM_BOTTOMS:
        means = {t: per_seed.filter((pl.col("bottom") == b) & (pl.col("algorithm") == t))["reward_cum"].mean() for t in ("op", "tl")}
        if any(m is None for m in means.values()):
            continue
        runner_up = max(("op", "tl"), key=lambda t: means[t])
        rows.append(
            [
                BOTTOM_LABELS[b],
                f"{paired(per_seed, b, 'cdt', runner_up)} ({TUNER_LABELS[runner_up]})",
                paired(per_seed, b, "cdt", "theory"),
                paired(per_seed, b, "tl", "op"),
            ]
        )
    markdown(["Algorithm", "CDT - runner-up", "CDT - Theory", "TL/Syndicated - OP"], rows)


PER_SEED = "per_seed.parquet"


def per_seed_finals(sweep: Path, out: Path) -> pl.DataFrame | None:
    """Each Yahoo stand-in job's final reward_cum by bottom, method and seed: from DIR/per_seed.parquet
    when it is there (committed beside final.parquet), else from the trajectory shards, and then
    written to OUT/per_seed.parquet, ready to commit."""
    path = sweep / PER_SEED
    if path.is_file():
        return pl.read_parquet(path)
    shards = scan_shards(sweep, CELL + ["job_key", "seed", "step", "reward_cum"])
    if shards is None:
        return None
    last = shards.filter(pl.col("step") == pl.col("step").max().over("job_key")).collect()
    df = with_params(last).filter(IS_YAHOO).select("bottom", "algorithm", "seed", "reward_cum").sort(pl.all())
    out.mkdir(parents=True, exist_ok=True)
    df.write_parquet(out / PER_SEED, compression="zstd", compression_level=19, statistics=False)
    return df


def rank_desc(values: dict[str, float | None]) -> dict[str, str]:
    present = sorted((v, t) for t, v in values.items() if v is not None)[::-1]
    return {t: str(i + 1) for i, (_, t) in enumerate(present)}


# ---------------------------------------------------------------------------------------------
# cdt-grid: Table 3
# ---------------------------------------------------------------------------------------------


def table3(grid: pl.DataFrame) -> None:
    heading("Table 3: best fixed exploration value by grid search (paper Appendix A.1)")
    g = grid.filter(IS_GRID & (pl.col("metric") == "regret")).with_columns(
        pl.col("value").cast(pl.Float64), pl.col("arms").cast(pl.Int64)
    )
    print(
        f"Ours: the grid value with the lowest mean final regret (mean ± se), T = "
        f"{', '.join(map(str, sorted(g['horizon'].unique().to_list()))) or '-'}, n = "
        f"{', '.join(map(str, sorted(g['n'].unique().to_list()))) or '-'}. Paper: d = 10, T = 8000, 5 repetitions. "
        "'at 1' = the regret at the value 1 (the theory-scale reference).\n"
    )
    rows, best_of = [], {}
    for K in (60, 120):
        for b in TABLE3_BOTTOMS:
            cell = g.filter((pl.col("bottom") == b) & (pl.col("arms") == K)).sort("value")
            paper = PAPER_TABLE3[K][b]
            if cell.height == 0:
                rows.append([BOTTOM_LABELS[b], str(K), "-", "-", f"{paper:g}", "-", "-", "-", "-"])
                continue
            by_value = {r["value"]: r for r in cell.iter_rows(named=True)}
            top = cell["mean"].min()
            ties = [v for v, r in by_value.items() if r["mean"] == top]
            best = ties[0]
            best_of[(b, K)] = best
            rows.append(
                [
                    BOTTOM_LABELS[b],
                    str(K),
                    f"{len(by_value)} of 21",
                    f"{best:g}" + (f" (ties {ties})" if len(ties) > 1 else ""),
                    f"{paper:g}",
                    mean_se(by_value[best]),
                    mean_se(by_value.get(paper)),
                    mean_se(by_value.get(1.0)),
                    ratio(by_value[best]["mean"], by_value[1.0]["mean"]) if 1.0 in by_value else "-",
                ]
            )
    markdown(
        [
            "Algorithm",
            "K",
            "values run",
            "best value (ours)",
            "paper",
            "regret at ours",
            "regret at paper's value",
            "regret at 1",
            "best / at 1",
        ],
        rows,
    )
    both = [b for b in TABLE3_BOTTOMS if (b, 60) in best_of and (b, 120) in best_of]
    differs = sum(best_of[(b, 60)] != best_of[(b, 120)] for b in both)
    paper_differs = sum(PAPER_TABLE3[60][b] != PAPER_TABLE3[120][b] for b in both)
    agree = sum(best_of[k] == PAPER_TABLE3[k[1]][k[0]] for k in best_of)
    larger = sum(best_of[(b, 120)] > best_of[(b, 60)] for b in both)
    not_one = sum(v != 1.0 for v in best_of.values())
    paper_not_one = sum(PAPER_TABLE3[K][b] != 1.0 for b, K in best_of)
    markdown(
        ["claim", "ours", "paper (same cells)"],
        [
            [
                "best value depends on K (differs between K = 60 and 120)",
                f"{differs} of {len(both)} algorithms",
                f"{paper_differs} of {len(both)}",
            ],
            [
                "best value larger at K = 120",
                f"{larger} of {len(both)}",
                f"{sum(PAPER_TABLE3[120][b] > PAPER_TABLE3[60][b] for b in both)} of {len(both)}",
            ],
            ["best value is not 1", f"{not_one} of {len(best_of)} cells", f"{paper_not_one} of {len(best_of)}"],
            ["our best value equals the paper's", f"{agree} of {len(best_of)} cells", "-"],
        ],
        left=1,
    )


# ---------------------------------------------------------------------------------------------
# cdt-switching: Figure 4 and its ranking claim
# ---------------------------------------------------------------------------------------------

SHAPES = ["triangle", "sine"]
CONSTANTS = ["paper", "code"]


def order_by_mean(got: dict) -> tuple[list[str] | None, bool | None]:
    """The algorithms of `got` ({algorithm: cell}) by mean final regret, and whether that is the
    claimed Oracle < Zooming TS-R < Zooming; (None, None) when a cell is missing."""
    if not all(got.values()):
        return None, None
    order = sorted(LIPSCHITZ_ALGOS, key=lambda a: got[a]["mean"])
    return order, order == LIPSCHITZ_ALGOS


def switching_table(final: pl.DataFrame) -> None:
    heading("Switching Lipschitz bandit (A.3, Figure 4): final cumulative regret")
    sw = final.filter(IS_SWITCHING & (pl.col("metric") == "regret"))
    cells = {(r["shape"], r["constants"], r["algorithm"]): r for r in sw.iter_rows(named=True)}
    print(
        f"Ours: mean ± std (se) over n = {ns(cells)} repetitions at T = {horizons(cells)}. "
        "The paper publishes no numbers, only Figure 4 (T = 90,000, 20 repetitions).\n"
    )
    rows = []
    for s in SHAPES:
        for k in CONSTANTS:
            for a in LIPSCHITZ_ALGOS:
                c = cells.get((s, k, a))
                rows.append(
                    [
                        s,
                        k,
                        LIPSCHITZ_LABELS[a],
                        str(c["n"]) if c else "-",
                        f"{num(c['mean'])} ± {num(c['std'])}" if c else "-",
                        num(c["se"]) if c else "-",
                    ]
                )
    markdown(["Shape", "Constants", "Algorithm", "n", "final regret (mean ± std)", "se"], rows, left=3)
    rows, ok = [], []
    for s in SHAPES:
        for k in CONSTANTS:
            got = {a: cells.get((s, k, a)) for a in LIPSCHITZ_ALGOS}
            order, holds = order_by_mean(got)
            if order is None:
                rows.append([s, k, "-", "-", "-"])
                continue
            widest = max(LIPSCHITZ_ALGOS, key=lambda a: got[a]["std"] if got[a]["std"] is not None else -1)
            ok.append(holds)
            rows.append(
                [s, k, " < ".join(LIPSCHITZ_LABELS[a] for a in order), yes_no(holds), yes_no(widest == "zooming")]
            )
    markdown(
        [
            "Shape",
            "Constants",
            "order by mean (ours)",
            "Oracle < Zooming TS-R < Zooming?",
            "Zooming has the largest std?",
        ],
        rows,
    )
    k, n = count(ok)
    print(
        f"Ranking Oracle < Zooming TS-R < Zooming holds in {k} of {n} (shape, constants) cells present "
        f"(of {len(SHAPES) * len(CONSTANTS)}); the paper claims it for both shapes."
    )


# cdt-switching-isolate: one constant at a time, beside cdt-switching's cells.
ISOLATE_CONSTANTS = ["paper", "paper-code-scale", "code-paper-scale", "code"]
ISOLATE_LABELS = {
    "paper": "paper",
    "paper-code-scale": "paper, the code's TS scale",
    "code-paper-scale": "code, the paper's TS scale",
    "code": "code",
}
# Stationary Zooming has no Thompson scale: its run with the same radius, removal and coverage.
RADIUS_OF = {"paper": "paper", "paper-code-scale": "paper", "code-paper-scale": "code", "code": "code"}


def is_isolation(final: pl.DataFrame) -> bool:
    sw = final.filter(IS_SWITCHING)
    return bool(sw.filter(~pl.col("constants").is_in(CONSTANTS) | (pl.col("algorithm") == "oracle-zooming")).height)


def thompson_scale(constants: str, horizon: int) -> float:
    """The Thompson index's scale at n = 1: the paper's s0 = sqrt(52 pi tau0^2 ln T) or the code's
    sqrt(pi tau0^2 ln T), tau0^2 = 0.1 (eq. 5 and the authors' code)."""
    factor = 52.0 if constants in ("paper", "code-paper-scale") else 1.0
    return math.sqrt(factor * math.pi * 0.1 * math.log(horizon))


def switching_isolation(final: pl.DataFrame, base: pl.DataFrame | None) -> None:
    """Figure 4's order with the Thompson scale changed alone, and with the Oracle's other reading;
    `base` (cdt-switching) supplies the paper's and the code's cells and stationary Zooming."""
    heading("Switching Lipschitz bandit (A.3, Figure 4): the Thompson scale alone, and the Oracle's two readings")
    frames = [f.filter(IS_SWITCHING & (pl.col("metric") == "regret")) for f in (base, final) if f is not None]
    cells = {(r["shape"], r["constants"], r["algorithm"]): r for f in frames for r in f.iter_rows(named=True)}
    horizon = max(c["horizon"] for c in cells.values())
    print(
        f"Final cumulative regret, mean (se) over n = {ns(cells)} repetitions at T = {horizons(cells)}; the "
        "isolating runs share cdt-switching's seeds and reward noise. Zooming TS-R and the Oracle with one "
        "group of constants changed: the Thompson scale (the index's spread at n = 1: the paper's "
        f"s0 = {thompson_scale('paper', horizon):.2f}, the code's {thompson_scale('code', horizon):.2f}), "
        "or the radius, removal and coverage rule with it. Stationary Zooming has no Thompson scale: its "
        "column is its run with the same radius.\n"
    )

    def cell(shape: str, constants: str, algorithm: str) -> str:
        c = cells.get((shape, constants, algorithm))
        return f"{num(c['mean'])} ({num(c['se'])})" if c else "-"

    rows, verdicts = [], []
    for s in SHAPES:
        for k in ISOLATE_CONSTANTS:
            got = {
                "oracle": cells.get((s, k, "oracle")),
                "zooming-tsr": cells.get((s, k, "zooming-tsr")),
                "zooming": cells.get((s, RADIUS_OF[k], "zooming")),
            }
            order, holds = order_by_mean(got)
            verdicts.append(holds)
            rows.append(
                [
                    s,
                    ISOLATE_LABELS[k],
                    num(thompson_scale(k, horizon)),
                    cell(s, k, "oracle"),
                    cell(s, k, "zooming-tsr"),
                    cell(s, RADIUS_OF[k], "zooming"),
                    " < ".join(LIPSCHITZ_LABELS[a] for a in order) if order else "-",
                    yes_no(holds),
                ]
            )
    markdown(
        ["Shape", "Constants", "TS scale", "Oracle", "Zooming TS-R", "Zooming", "order by mean", "claimed order?"],
        rows,
    )
    k, n = count(verdicts)
    print(f"The claimed order Oracle < Zooming TS-R < Zooming holds in {k} of {n} (shape, constants) cells.\n")
    rows = []
    for s in SHAPES:
        for k in CONSTANTS:
            ts, renewed = cells.get((s, k, "oracle")), cells.get((s, k, "oracle-zooming"))
            tsr, zoom = cells.get((s, k, "zooming-tsr")), cells.get((s, k, "zooming"))
            beats = None if not (renewed and tsr and zoom) else renewed["mean"] < tsr["mean"] < zoom["mean"]
            rows.append(
                [
                    s,
                    k,
                    cell(s, k, "oracle"),
                    cell(s, k, "oracle-zooming"),
                    cell(s, k, "zooming-tsr"),
                    cell(s, k, "zooming"),
                    num(renewed["mean"] - ts["mean"]) if renewed and ts else "-",
                    yes_no(beats),
                ]
            )
    markdown(
        [
            "Shape",
            "Constants",
            "Oracle: Zooming TS renewed",
            "Oracle: Zooming renewed",
            "Zooming TS-R",
            "Zooming",
            "Zooming renewed - Zooming TS renewed",
            "order with the Zooming Oracle?",
        ],
        rows,
    )


def figure4(curves: pl.DataFrame, out: Path) -> Path | None:
    curves = curves.filter(IS_SWITCHING)
    panels = [
        (s, k)
        for s in SHAPES
        for k in CONSTANTS
        if curves.filter((pl.col("shape") == s) & (pl.col("constants") == k)).height
    ]
    if not panels:
        return None
    cols = len({k for _, k in panels})
    shapes = [s for s in SHAPES if any(p[0] == s for p in panels)]
    consts = [k for k in CONSTANTS if any(p[1] == k for p in panels)]
    fig, axes = plt.subplots(len(shapes), cols, figsize=(5.5 * cols, 3.8 * len(shapes)), squeeze=False)
    for i, s in enumerate(shapes):
        for j, k in enumerate(consts):
            ax = axes[i][j]
            cell = curves.filter((pl.col("shape") == s) & (pl.col("constants") == k))
            if cell.height == 0:
                ax.axis("off")
                continue
            horizon = cell["horizon"].max()
            for c in SWITCHING_CHANGE_POINTS:
                ax.axvline(c * horizon // SWITCHING_PAPER_T, color="k", lw=0.6, ls=":")
            for a in LIPSCHITZ_ALGOS:
                c = cell.filter(pl.col("algorithm") == a).sort("step")
                if c.height:
                    plot_band(ax, c, LIPSCHITZ_COLORS[a], f"{LIPSCHITZ_LABELS[a]} (n={c['n'].max()})")
            ax.set_title(f"{s}, {k} constants", fontsize=10)
            ax.set_xlabel("round")
            ax.set_ylabel("cumulative regret")
            ax.legend(fontsize=7)
    fig.suptitle("CDT paper, Figure 4: switching Lipschitz bandit, mean ± one std (dotted: change points)")
    return save(fig, out / "fig4.png")


def refcode_table(cells: dict, main: dict) -> None:
    """CDT with the reference code's presets beside the paper's CDT value (Table 5, T1 = T^{2/(p+3)});
    with cdt-main's cells (`main`), the ranking claims again with each preset run in every setting
    as CDT."""
    heading(
        "CDT with the reference code's top layer (refcode: clipped draw; refcode-fixed: fhat + sqrt(13/n); "
        "refcode-map: refcode-fixed with the code's map)"
    )
    presets = [p for p in REFCODE_PRESETS if any(key[2] == p for key in cells)]
    rows = []
    for env in ENVS:
        for b in BOTTOMS:
            found = {p: cells.get((b, env, p)) for p in presets}
            if not any(found.values()):
                continue
            paper = paper_final(b, env, "cdt")
            row = [BOTTOM_LABELS[b], ENV_LABELS[env]]
            for p in presets:
                c = found[p]
                row += [mean_se(c), ratio(c["mean"] if c else None, paper)]
            rows.append(row + [num(paper)])
    headers = ["Algorithm", "Env"] + [h for p in presets for h in (preset_label(cells, p), "ratio")] + ["paper CDT"]
    markdown(headers, rows)
    if not main:
        return
    for p in presets:
        if not all(cells.get((*s, p)) for s in SETTINGS):
            continue
        with_preset = {**main, **{(*s, "cdt"): cells[(*s, p)] for s in SETTINGS}}
        main_claims(with_preset, f"Ranking claims (paper Section 5) with CDT = {preset_label(cells, p)}, the rest from cdt-main")


def preset_label(cells: dict, preset: str) -> str:
    """A preset's column name, with its restart constant k when its cells share one other than 3."""
    ks = {c.get("k") for (_, _, p), c in cells.items() if p == preset}
    k = ks.pop() if len(ks) == 1 else None
    return preset if k in (None, "3.0") else f"{preset} (k = {float(k):g})"


LIPCHECK_CURVE = "curve.parquet"


def lipcheck_curve(sweep: Path, out: Path, warmup: int, group: int) -> pl.DataFrame | None:
    """Figure 3's curve: per bottom and fixed alpha, the mean and std over groups of the centred
    group-mean reward, the groups and the runs. From DIR/curve.parquet when it is there (committed
    beside the other runs' finals), else from the trajectory shards, and then written to
    OUT/curve.parquet, ready to commit."""
    committed = sweep / LIPCHECK_CURVE
    if committed.is_file():
        return pl.read_parquet(committed)
    files = shard_files(sweep)
    if not files:
        return None
    shards = canonical_params(pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed"))
    shards = with_params(shards).filter(IS_LIPCHECK & (pl.col("step") > warmup))
    alphas = [c for c in shards.columns if c.startswith("exp_")]
    shards = shards.select("bottom", "job_key", "step", *alphas)
    long = shards.with_columns(((pl.col("step") - warmup - 1) // group).alias("group")).unpivot(
        index=["bottom", "job_key", "group"], on=alphas, variable_name="fixed"
    )
    per_group = long.group_by("bottom", "job_key", "group", "fixed").agg(pl.col("value").mean())
    centred = per_group.with_columns(
        (pl.col("value") - pl.col("value").mean().over("bottom", "job_key", "group")).alias("centred")
    )
    curve = (
        centred.group_by("bottom", "fixed")
        .agg(
            pl.col("centred").mean().alias("mean"),
            pl.col("centred").std().alias("std"),
            pl.len().alias("groups"),
            pl.col("job_key").n_unique().alias("runs"),
        )
        .with_columns(pl.col("fixed").str.slice(4).cast(pl.Float64).alias("a"))
        .sort("bottom", "a")
    )
    out.mkdir(parents=True, exist_ok=True)
    curve.write_parquet(out / LIPCHECK_CURVE, compression="zstd", compression_level=19, statistics=False)
    return curve


def lipcheck(sweep: Path, out: Path, warmup: int = 200, group: int = 20) -> Path | None:
    """Figure 3 (appendix A.2): drop the first `warmup` rounds, split the rest into groups of `group`
    rounds, average each alpha's counterfactual expected reward per group, centre across alphas within
    the group, then mean and std over all groups (of all runs) per alpha."""
    curve = lipcheck_curve(sweep, out, warmup, group)
    if curve is None:
        return None
    heading("Figure 3 (A.2): centred group-mean reward per fixed exploration value, along CDT runs")
    rows = []
    bottoms = [b for b in ("linucb", "lints") if curve.filter(pl.col("bottom") == b).height]
    for b in bottoms:
        c = curve.filter(pl.col("bottom") == b)
        m, a = c["mean"].to_list(), c["a"].to_list()
        best = a[max(range(len(m)), key=lambda i: m[i])]
        steepest = max(abs(m[i + 1] - m[i]) / (a[i + 1] - a[i]) for i in range(len(m) - 1))
        largest = max(abs(m[i + 1] - m[i]) for i in range(len(m) - 1))
        down = sum(m[i + 1] < m[i] for i in range(len(m) - 1))
        runs = c["runs"].max()
        rows.append([BOTTOM_LABELS[b], str(runs), str(c["groups"].max()), f"{best:.2f}", f"{steepest:.4f}",
                     f"{largest:.4f}", f"{down} of {len(m) - 1}", f"{min(m):.4f} .. {max(m):.4f}",
                     f"{c['std'].mean():.4f}"])
    markdown(["Algorithm", "runs", "groups", "best alpha", "max slope between neighbours (per unit alpha)",
              "largest difference between neighbours", "falls between neighbours", "range of means",
              "mean std"], rows)
    fig, axes = plt.subplots(1, len(bottoms), figsize=(5.5 * len(bottoms), 3.8), squeeze=False)
    for ax, b in zip(axes[0], bottoms):
        c = curve.filter(pl.col("bottom") == b)
        x, m, s = c["a"].to_numpy(), c["mean"].to_numpy(), c["std"].fill_null(0).to_numpy()
        ax.errorbar(x, m, yerr=s, fmt="o-", ms=3, lw=1, capsize=2)
        ax.set_title(f"CDT-{BOTTOM_LABELS[b]}")
        ax.set_xlabel("exploration value alpha")
        ax.set_ylabel("centred group-mean reward")
    fig.suptitle(f"CDT paper, Figure 3: rounds > {warmup} in groups of {group}, mean ± one std over groups")
    return save(fig, out / "fig3.png")


# ---------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Resolving sweeps (a [resolve] table): their comparisons, run until settled
# ---------------------------------------------------------------------------------------------

# A comparison's verdict, said of its first side against its second on regret (lower is better).
VERDICT_WORDS = {
    "a<b": "lower",
    "a>b": "higher",
    "equivalent": "equivalent",
    "open": "open",
    "unresolved": "unresolved",
}


def variant_label(algorithm: str, params: str) -> str:
    """A tuner with the parameters a resolving sweep varies: "OP C2", "CDT k=3, T1=0", "CDT k=3,
    warm-up T1" (the paper's random warm-up)."""
    values = json.loads(params)
    words = []
    if "candidates" in values:
        words.append(values["candidates"].upper())
    if "k" in values and values.get("warmup") == "none":
        words.append(f"k={values['k']:g}, T1=0")
    elif "k" in values and values.get("warmup") == "preset":
        words.append(f"k={values['k']:g}, warm-up T1")
    elif values.get("warmup") is not None:
        words.append(f"warm-up {values['warmup']}")
    return " ".join([TUNER_LABELS.get(algorithm, algorithm), ", ".join(words)]).strip()


RESOLVE_PER_SEED = "per_seed.parquet"


def resolve_per_seed(sweep: Path, out: Path) -> pl.DataFrame | None:
    """Each job's regret at its last step, by cell and seed (parameters as the sweep's JSON): from
    DIR/per_seed.parquet when it is there (committed beside comparisons.parquet), else from the
    trajectory shards, and then written to OUT/per_seed.parquet, ready to commit."""
    path = sweep / RESOLVE_PER_SEED
    if path.is_file():
        return pl.read_parquet(path)
    shards = shard_files(sweep)
    if not shards:
        return None
    keys = ["benchmark", "benchmark_params", "algorithm", "algorithm_params", "seed"]
    rows = pl.scan_parquet(shards).select("job_key", *keys, "step", "regret")
    last = rows.filter(pl.col("step") == pl.col("step").max().over("job_key")).collect()
    df = last.select(*keys, pl.col("regret").fill_nan(None)).sort(keys)
    out.mkdir(parents=True, exist_ok=True)
    df.write_parquet(out / RESOLVE_PER_SEED, compression="zstd", compression_level=19, statistics=False)
    return df


def cs_margin(n: float, rho2: float, alpha: float) -> float:
    """The margin of the asymptotic confidence sequence for unit variance after n pairs (one side
    at level alpha; mixture parameter rho2), as armada's rounds compute it."""
    v = n * rho2 + 1.0
    return math.sqrt(2.0 * v / (n * n * rho2) * math.log(math.sqrt(v) / alpha))


def cs_rho2(planned: float, alpha: float) -> float:
    """The mixture parameter that makes the margin tightest near `planned` pairs."""
    ell = -2.0 * math.log(alpha)
    return (ell + math.log(ell + 1.0)) / planned


def seeds_to_settle(mean: float, sd: float, tolerance: float, alpha: float, rho2: float, start: int) -> int | None:
    """The fewest pairs (from `start`) at which the sweep's interval would exclude zero, or fit
    within ± tolerance, if the mean difference and its sd stayed as they are; None past a million."""
    room = max(abs(mean), tolerance - abs(mean))
    n = start
    while n <= 1_000_000:
        if sd * cs_margin(n, rho2, alpha) < room:
            return n
        n = max(n + 1, math.ceil(n * 1.02))
    return None


def resolved_table(sweep: Path, out: Path) -> None:
    """The comparisons of a resolving sweep (comparisons.parquet), setting by setting, and the count
    of each verdict per comparison; the seeds each cell took against a fixed plan for the same
    verdicts. With each job's value (per_seed.parquet, or the trajectories), every comparison's
    mean difference is recomputed from its pairs and the seeds it would take to settle projected."""
    comparisons = pl.read_parquet(sweep / "comparisons.parquet")
    per_seed = resolve_per_seed(sweep, out)
    value: dict[tuple, float | None] = {}
    if per_seed is not None:
        for r in per_seed.iter_rows(named=True):
            value[(r["benchmark_params"], r["algorithm"], r["algorithm_params"], r["seed"])] = r["regret"]
    rows_of: dict[str, list[dict]] = {}
    seeds_of: dict[tuple, int] = {}
    # Per comparison: the still open ones' projections, (pairs to settle or None, sign of a - b).
    projected: dict[str, list[tuple[int | None, float]]] = {}
    for r in comparisons.iter_rows(named=True):
        label = (
            f"{variant_label(r['algorithm_a'], r['algorithm_params_a'])} - "
            f"{variant_label(r['algorithm_b'], r['algorithm_params_b'])}"
        )
        rows_of.setdefault(label, []).append(r)
        seeds_of[(r["benchmark_params"], r["algorithm_a"], r["algorithm_params_a"])] = r["seeds_a"]
        seeds_of[(r["benchmark_params"], r["algorithm_b"], r["algorithm_params_b"])] = r["seeds_b"]
    first = comparisons.row(0, named=True)

    def pairs_of(r: dict) -> list[tuple[float, float]] | None:
        """The (a, b) values of a comparison's pairs, the seeds both cells have a value for; None
        unless they are the rounds' n pairs (no per-seed values, or not this run's)."""
        side = {s: (r["benchmark_params"], r[f"algorithm_{s}"], r[f"algorithm_params_{s}"]) for s in "ab"}
        seeds = range(min(r["seeds_a"], r["seeds_b"]))
        both = [(value.get((*side["a"], s)), value.get((*side["b"], s))) for s in seeds]
        pairs = [(a, b) for a, b in both if a is not None and b is not None]
        return pairs if pairs and len(pairs) == r["n"] else None

    # A relative tolerance, as a fraction of b's mean over the pairs (the file holds the margin applied).
    fractions = set()
    for r in comparisons.iter_rows(named=True):
        if r["tolerance"] and (pairs := pairs_of(r)):
            fractions.add(round(r["tolerance"] / (sum(b for _, b in pairs) / len(pairs)), 9))
    if any(r["tolerance"] for r in comparisons.iter_rows(named=True)):
        margin = f" ({fractions.pop():.1%} of b's mean over the pairs)" if len(fractions) == 1 else " (relative)"
    else:
        margin = " (0)"
    heading(f"Comparisons run until settled: {sweep.name}")
    print(
        f"Regret at T = {first['horizon']:,}, paired by seed; a - b with its {100 * first['confidence']:g}% "
        "anytime-valid interval (an asymptotic confidence sequence, Waudby-Smith et al., Ann. Statist. 2024); "
        "'lower' / 'higher': a's regret below / above b's beyond the interval; 'equivalent': the interval inside "
        "± the tolerance" + margin + "; "
        "'unresolved': open at the seed limit or at the sweep's budget. % = a - b over b's mean over the "
        "pairs; sd = of the paired differences; 'to settle' = the pairs at which the sweep's interval would "
        "settle the comparison if its mean and sd stayed as they are. Every mean and interval here is "
        "recomputed from each job's final regret (per_seed.parquet) and checked against the rounds' own.\n"
    )
    for label, rows in rows_of.items():
        table = []
        for r in rows:
            bottom = json.loads(r["benchmark_params"])["bottom"]
            interval = "-" if r["lower"] is None else f"[{r['lower']:.1f}, {r['upper']:.1f}]"
            share, sd, settle = "-", "-", "-"
            pairs = pairs_of(r)
            if pairs and r["lower"] is not None:
                d = [a - b for a, b in pairs]
                mean = sum(d) / len(d)
                # The recomputed mean is the rounds' own: the same pairs, summed in seed order.
                assert abs(mean - r["mean_difference"]) <= 1e-9 * max(1.0, abs(mean)), (label, bottom, mean)
                b_mean = sum(b for _, b in pairs) / len(pairs)
                std = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1))
                share, sd = f"{100 * mean / b_mean:+.1f}%", f"{std:.1f}"
                # The interval again, from the pairs and the sweep's rule: the rounds' own bounds.
                alpha = (1.0 - r["confidence"]) / 2.0
                rho2 = cs_rho2(r["max_seeds"], alpha)
                half = std * cs_margin(r["n"], rho2, alpha)
                for got, want in ((mean - half, r["lower"]), (mean + half, r["upper"])):
                    assert abs(got - want) <= 1e-9 * max(1.0, abs(want)), (label, bottom, got, want)
                n = seeds_to_settle(mean, std, r["tolerance"], alpha, rho2, r["n"])
                past = f" (past {r['max_seeds']})" if n and n > r["max_seeds"] else ""
                settle = f"{n:,}{past}" if n else "> 10^6"
                settle = settle if r["verdict"] in ("open", "unresolved") else "-"
                if r["verdict"] in ("open", "unresolved"):
                    projected.setdefault(label, []).append((n, mean))
            table.append(
                [
                    BOTTOM_LABELS.get(bottom, bottom),
                    ENV_LABELS.get(r["benchmark"], r["benchmark"]),
                    str(r["n"]),
                    f"{r['mean_difference']:+.1f}",
                    share,
                    sd,
                    interval,
                    VERDICT_WORDS.get(r["verdict"], r["verdict"]),
                    settle,
                ]
            )
        print(f"### {label}\n")
        markdown(["Algorithm", "Env", "pairs", "a - b", "%", "sd", "interval", "verdict", "to settle"], table)
    counts = []
    for label, rows in rows_of.items():
        tally = {v: sum(r["verdict"] == v for r in rows) for v in VERDICT_WORDS}
        counts.append([label] + [str(tally[v]) for v in VERDICT_WORDS] + [str(len(rows))])
    markdown(["a - b", *VERDICT_WORDS.values(), "settings"], counts, left=1)
    for label, rows in rows_of.items():
        limit = rows[0]["max_seeds"]
        within = [m for n, m in projected.get(label, []) if n is not None and n <= limit]
        if projected.get(label):
            print(
                f"{label}: of the {len(projected[label])} not settled, {len(within)} would settle within "
                f"{limit} pairs at their current mean and sd ({sum(m > 0 for m in within)} with a above b), "
                f"{len(projected[label]) - len(within)} would need more."
            )
    print()
    run_jobs, cells = sum(seeds_of.values()), len(seeds_of)
    most, limit = max(seeds_of.values()), first["max_seeds"]
    print(
        f"Seeds a cell: {min(seeds_of.values())} to {most}; {run_jobs:,} jobs over {cells} cells. "
        f"A fixed number of seeds reaching the same verdicts gives every cell the most any took, {most}: "
        f"{most * cells:,} jobs ({run_jobs / (most * cells):.2f} of them run); every cell at the sweep's "
        f"max_seeds, {limit}: {limit * cells:,} jobs ({run_jobs / (limit * cells):.3f} of them run)."
    )


def check_dir(sweep: Path) -> bool:
    if (sweep / "final.parquet").is_file() or shard_files(sweep):
        return True
    print(f"error: {sweep} has neither final.parquet nor trajectories/*.parquet", file=sys.stderr)
    return False


def keyed(frames: list[pl.DataFrame], kind: str, metric: str, last: str) -> dict:
    """{(bottom, env, last): cell}; `last` is the column that tells the cells of one setting apart."""
    cells = lookup(frames, kind, metric, ["bottom", "benchmark", last])
    if last == "k":
        return {(b, e, float(k)): c for (b, e, k), c in cells.items()}
    return cells


def run(sweep: Path, main_dir: Path | None, out: Path) -> int:
    tables: list[Path] = []
    if (sweep / "comparisons.parquet").is_file():
        # A resolving sweep: its verdicts are its comparisons.
        print(f"# CDT comparisons from {sweep}")
        with table_file(out / "resolved.md", tables):
            resolved_table(sweep, out)
        print(f"\nwrote {tables[0]}")
        return 0
    metrics = ["regret", "reward_cum", "expected_cum"]
    final = load_final(sweep, metrics)
    main_final = load_final(main_dir, metrics) if main_dir else None
    kinds = kinds_present(final)
    print(f"# CDT paper tables from {sweep} ({', '.join(kinds) or 'nothing recognised'})")
    frames = [f for f in (main_final, final) if f is not None]  # the sweep itself wins over --main
    figures: list[Path | None] = []

    def table(name: str):
        return table_file(out / f"{name}.md", tables)

    if "main" in kinds:
        main = keyed([final], "main", "regret", "algorithm")
        with table("final_regret"):
            main_regret_table(main)
            main_claims(main)
        with table("table1"):
            table1(seconds_per_run(sweep))
        figures.append(figure2(load_curves(sweep, "regret"), out))
    if "table4" in kinds:
        with table("table4"):
            table4(keyed([final], "table4", "regret", "algorithm"), keyed(frames, "main", "regret", "algorithm"))
    if "ablation" in kinds:
        abl, main = keyed([final], "ablation", "regret", "k"), keyed(frames, "main", "regret", "algorithm")
        with table("table5"):
            table5(abl, main)
        with table("table6"):
            table6(abl, main)
    if "yahoo" in kinds:
        reward = lookup([final], "yahoo", "reward_cum", ["bottom", "algorithm"])
        ctr = lookup([final], "yahoo", "expected_cum", ["bottom", "algorithm"])
        per_seed = per_seed_finals(sweep, out)
        with table("table2"):
            table2(reward, ctr, per_seed)
    if "grid" in kinds:
        with table("table3"):
            table3(final)
    if "switching" in kinds and is_isolation(final):
        with table("switching-isolate"):
            switching_isolation(final, main_final)
    elif "switching" in kinds:
        with table("switching"):
            switching_table(final)
        figures.append(figure4(load_curves(sweep, "regret"), out))
    if "lipcheck" in kinds:
        with table("fig3"):
            figures.append(lipcheck(sweep, out))
    if "refcode" in kinds:
        with table("refcode"):
            main = keyed([main_final], "main", "regret", "algorithm") if main_final is not None else {}
            refcode_table(keyed([final], "refcode", "regret", "preset"), main)
    print()
    for path in tables + [f for f in figures if f]:
        print(f"wrote {path}")
    return 0 if kinds else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep", type=Path, help="a sweep directory, e.g. results/cdt-main")
    parser.add_argument(
        "--main",
        type=Path,
        default=None,
        help="a cdt-main directory for the C1 / T1 columns (for cdt-switching-isolate: the cdt-switching directory)",
    )
    parser.add_argument("--out", type=Path, default=None, help="where figures and tables go (default SWEEP/figures)")
    args = parser.parse_args()
    if not check_dir(args.sweep) or (args.main and not check_dir(args.main)):
        return 2
    return run(args.sweep, args.main, args.out or args.sweep / "figures")


if __name__ == "__main__":
    sys.exit(main())
